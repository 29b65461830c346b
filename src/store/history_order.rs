//! A history stored out of order: a grant or a write record whose position (`seq`) is
//! after a record of a higher revision. A writer stamps its records under the write lock
//! with the revision it advanced, in the order it inserts them, so in a sound store
//! positions rise with revisions — and SQLite, which keeps no index on the history's
//! revisions, finds a range of revisions by position. A record edited or inserted by hand
//! out of that order would make such a range skip or repeat records, so `leasehold check`
//! looks for one before it reads the history, and names it as damage.

/// The first record found out of order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Disorder {
    /// `grants` or `writes`.
    pub table: &'static str,
    /// The record's position (`seq`).
    pub position: i64,
    /// Its revision.
    pub revision: u64,
    /// The revision of the record just before it, which is higher.
    pub previous: u64,
}

impl Disorder {
    /// The one sentence naming the record.
    #[must_use]
    pub fn sentence(&self) -> String {
        format!(
            "the {} record at position {} carries revision {}, below revision {} of the record before it: the history is out of order (edited or inserted by hand), so its revisions cannot be read in order",
            self.table, self.position, self.revision, self.previous
        )
    }
}
