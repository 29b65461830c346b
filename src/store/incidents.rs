//! The operator's incident lists: failovers and refused writes since an instant, newest
//! first, paged, with the count for the whole window — one read snapshot, through indexes
//! that hold only those rows (never a scan of the history).

use super::Store;
use crate::clock::Millis;
use crate::error::Result;
use crate::model::{Grant, HistoryPosition, WriteRecord};

/// One page of an incident list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Incidents<T> {
    /// Newest first.
    pub rows: Vec<T>,
    /// How many rows the whole window holds.
    pub total: u64,
    /// Where the next (older) page starts, when this one was full.
    pub next: Option<HistoryPosition>,
}

impl<T> Incidents<T> {
    fn page(rows: Vec<(HistoryPosition, T)>, total: u64, limit: usize) -> Self {
        let next = (rows.len() >= limit.max(1))
            .then(|| rows.last().map(|(p, _)| *p))
            .flatten();
        Self {
            rows: rows.into_iter().map(|(_, row)| row).collect(),
            total,
            next,
        }
    }
}

impl Store {
    /// Failovers (grants that took a resource from a holder that had not released it)
    /// made at or after `since`, newest first, strictly older than `before`.
    ///
    /// # Errors
    /// A store failure.
    pub fn failovers(
        &self,
        since: Millis,
        before: Option<HistoryPosition>,
        limit: usize,
    ) -> Result<Incidents<Grant>> {
        let limit = limit.max(1);
        self.read(|tx| {
            let rows = tx.failovers(since, before, limit)?;
            Ok(Incidents::page(rows, tx.count_failovers(since)?, limit))
        })
    }

    /// Refused (fenced) writes made at or after `since`, newest first, strictly older than
    /// `before`.
    ///
    /// # Errors
    /// A store failure.
    pub fn refused_writes(
        &self,
        since: Millis,
        before: Option<HistoryPosition>,
        limit: usize,
    ) -> Result<Incidents<WriteRecord>> {
        let limit = limit.max(1);
        self.read(|tx| {
            let rows = tx.refused_writes(since, before, limit)?;
            Ok(Incidents::page(rows, tx.count_refused_writes(since)?, limit))
        })
    }
}
