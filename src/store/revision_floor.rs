//! A store whose revision went below its own history: the `revision` meta row lowered
//! (edited by hand, a partial restore) while the grants and writes it stamped are still
//! there. Every write would then commit under a revision its history already holds, and
//! the checker would read the history only up to the lowered revision and report what it
//! cut off as violations. Writers refuse such a store at open, and `leasehold check` names
//! the damage instead of checking.

use super::{Store, Tx};
use crate::error::{Error, Result};

/// The store's revision below the highest revision its history carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lowered {
    /// The `revision` meta row.
    pub revision: u64,
    /// The highest revision a grant or a write record carries.
    pub history: u64,
}

impl Lowered {
    /// What this transaction shows: `Some` when the revision is below the history's. Two
    /// index seeks.
    ///
    /// # Errors
    /// A store failure.
    pub fn read(tx: &mut dyn Tx) -> Result<Option<Self>> {
        let revision = tx.revision()?;
        let history = tx.history_high_revision()?;
        Ok((history > revision).then_some(Self { revision, history }))
    }

    /// The one sentence naming both numbers.
    #[must_use]
    pub fn sentence(&self) -> String {
        format!(
            "the store's revision is {}, below revision {} its own history records: its revision was lowered, so it would commit under revisions already used",
            self.revision, self.history
        )
    }
}

impl Store {
    /// Refuses a store whose revision is below its own history (see the module's doc);
    /// run where a writer opens a store.
    ///
    /// # Errors
    /// `STORE_CORRUPT` naming both revisions, or a store failure.
    pub fn confirm_revision(&self) -> Result<()> {
        match self.read(Lowered::read)? {
            None => Ok(()),
            Some(lowered) => Err(Error::Corrupt(lowered.sentence())),
        }
    }
}
