//! Keyset paging: every list the dashboard reads is a page after an exclusive cursor, so a
//! table of a million rows costs one index seek per page, never a scan.

use serde::{Deserialize, Serialize};

/// Which page to read: rows strictly after `after` (a sort key), at most `limit` of them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PageRequest {
    pub after: Option<String>,
    pub limit: usize,
    /// Read backwards: rows strictly before `after`, nearest first, for PageUp and End.
    pub backwards: bool,
}

impl PageRequest {
    /// The first page of `limit` rows.
    #[must_use]
    pub fn first(limit: usize) -> Self {
        Self {
            after: None,
            limit,
            backwards: false,
        }
    }

    /// The page after the row whose key is `key`.
    #[must_use]
    pub fn after(key: impl Into<String>, limit: usize) -> Self {
        Self {
            after: Some(key.into()),
            limit,
            backwards: false,
        }
    }

    /// The page after `key`, or the first page when there is none: the form of the
    /// store's forward-only lists that take `after: Option<&str>`.
    #[must_use]
    pub fn resume(key: Option<&str>, limit: usize) -> Self {
        Self {
            after: key.map(str::to_owned),
            limit,
            backwards: false,
        }
    }

    /// The last page of `limit` rows (for End), nearest-to-end first.
    #[must_use]
    pub fn last(limit: usize) -> Self {
        Self {
            after: None,
            limit,
            backwards: true,
        }
    }

    /// The page before the row whose key is `key` (for PageUp).
    #[must_use]
    pub fn before(key: impl Into<String>, limit: usize) -> Self {
        Self {
            after: Some(key.into()),
            limit,
            backwards: true,
        }
    }
}

/// One page of rows in ascending key order, with the cursor to continue from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Page<T> {
    pub rows: Vec<T>,
    /// The key to pass as `after` for the next page; `None` when this was the last.
    pub next: Option<String>,
}
