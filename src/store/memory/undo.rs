//! What a failed write transaction puts back. The memory store changes its state in place
//! while a write runs, so every change leaves a way back: the row a work write replaced
//! (its index entries move back with it), the key of each history record added, and a
//! closure for everything else. An `Err` from the transaction applies them; a commit
//! drops them after the store is unlocked.

use super::State;
use super::ownership_history::Added;
use crate::store::work_table::Replaced;

/// One change to put back on rollback.
pub(super) type Undo = Box<dyn FnOnce(&mut State) + Send>;

/// The undo logs of one write transaction. Work rows are undone on a log of their own:
/// their index entries move back with them, so no index change needs an undo step, and
/// nothing else depends on the order of work rows and other changes.
#[derive(Default)]
pub(super) struct UndoLogs {
    pub(super) steps: Vec<Undo>,
    pub(super) work: Vec<Replaced>,
    /// History records added (each with its incident index entry, if it has one): taken
    /// out again on rollback. Keys, not closures: a claim or completion adds one per item.
    pub(super) history: Vec<Added>,
}

impl UndoLogs {
    /// Puts `state` back as it was before the transaction: the closures and the work rows
    /// newest first, then the added history records taken out.
    pub(super) fn roll_back(self, state: &mut State) {
        for step in self.steps.into_iter().rev() {
            step(state);
        }
        for replaced in self.work.into_iter().rev() {
            state.work.restore(replaced);
        }
        for added in self.history {
            state.ownership.forget(added);
        }
    }
}

/// Puts `value` under `key` in the map chosen by `field`, remembering how to undo it.
macro_rules! put {
    ($tx:expr, $field:ident, $key:expr, $value:expr) => {{
        let key = $key;
        let old = $tx.state.$field.insert(key.clone(), $value);
        $tx.undo.steps.push(Box::new(move |s: &mut State| {
            match old {
                Some(old) => s.$field.insert(key, old),
                None => s.$field.remove(&key),
            };
        }));
    }};
}

/// Removes `key` from `field`, undone on rollback; returns the removed value.
macro_rules! take {
    ($tx:expr, $field:ident, $key:expr) => {{
        let key = $key;
        let old = $tx.state.$field.remove(&key);
        if let Some(value) = old.clone() {
            $tx.undo.steps.push(Box::new(move |s: &mut State| {
                s.$field.insert(key, value);
            }));
        }
        old
    }};
}

/// Removes every key of `keys` from `field` (see `take!`); returns how many keys.
macro_rules! take_all {
    ($tx:expr, $field:ident, $keys:expr) => {{
        let keys = $keys;
        let n = keys.len() as u64;
        for key in keys {
            take!($tx, $field, key);
        }
        n
    }};
}
