//! What a store handle remembers per claimer: where each owner's claim rotation stands
//! (which lane its next batch serves first, `fair_share.rs`) and the last start handed
//! out for each instance id. Both are kept per owner, not per handle or per process: authorities that
//! share one handle (an application embedding several, the embedded cluster) each rotate
//! through every lane, and one cluster's history never depends on what else the process
//! ran.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

/// One value per owner, shared by a handle's clones.
#[derive(Debug)]
pub(crate) struct PerOwner<T>(Arc<Mutex<HashMap<String, T>>>);

impl<T> Default for PerOwner<T> {
    fn default() -> Self {
        Self(Arc::default())
    }
}

impl<T> Clone for PerOwner<T> {
    fn clone(&self) -> Self {
        Self(Arc::clone(&self.0))
    }
}

impl<T: Clone> PerOwner<T> {
    /// Replaces `owner`'s value with `next(its value, if any)` and returns the new one.
    pub(crate) fn advance(&self, owner: &str, next: impl FnOnce(Option<&T>) -> T) -> T {
        let mut values = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let value = next(values.get(owner));
        values.insert(owner.to_owned(), value.clone());
        value
    }

    /// `owner`'s value, if it has one.
    pub(crate) fn get(&self, owner: &str) -> Option<T> {
        let values = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        values.get(owner).cloned()
    }

    /// Sets `owner`'s value.
    pub(crate) fn set(&self, owner: &str, value: T) {
        let mut values = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        values.insert(owner.to_owned(), value);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_owner_counts_alone_and_clones_share() {
        let turns = PerOwner::<i64>::default();
        let step = |t: Option<&i64>| t.map_or(0, |t| t + 1);
        assert_eq!(turns.advance("a", step), 0);
        assert_eq!(turns.advance("b", step), 0);
        assert_eq!(turns.clone().advance("a", step), 1);
        assert_eq!(turns.advance("b", step), 1);
        turns.set("a", 7);
        assert_eq!(turns.get("a"), Some(7));
        assert_eq!(turns.get("c"), None);
    }
}
