//! The operator's incident lists: failovers and refused writes since an instant, newest
//! first, paged, with the count for the whole window — one read snapshot, through indexes
//! that hold only those rows (never a scan of the history).

use super::Store;
use super::backend::Tx;
use crate::clock::Millis;
use crate::error::Result;
use crate::model::work::WorkState;
use crate::model::{Ending, Grant, HistoryPosition, WriteRecord};

/// The refusal of a write to an item that had already reached its end.
const ALREADY_TERMINAL: &str = "already-terminal";

/// A refused write, with who had finished the item when the refusal was for that.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RefusedWrite {
    pub write: WriteRecord,
    /// For an `already-terminal` refusal: the owner whose own completion or failure ended
    /// the item, as its row still says (`None` when the row moved on since — requeued,
    /// claimed again, trimmed — or a person or a lapse ended it, not an owner).
    pub finished_by: Option<String>,
}

/// One page of an incident list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Incidents<T> {
    /// Newest first, each with its place in the list.
    pub rows: Vec<(HistoryPosition, T)>,
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
        Self { rows, total, next }
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
    ) -> Result<Incidents<RefusedWrite>> {
        let limit = limit.max(1);
        self.read(|tx| {
            let rows = tx.refused_writes(since, before, limit)?;
            let rows = with_finishers(tx, rows)?;
            Ok(Incidents::page(
                rows,
                tx.count_refused_writes(since)?,
                limit,
            ))
        })
    }
}

/// Each refused write with who had finished its item, for the `already-terminal` ones:
/// their items read in the list's own transaction, announced together so a provider that
/// can fetches them at once.
fn with_finishers(
    tx: &mut dyn Tx,
    rows: Vec<(HistoryPosition, WriteRecord)>,
) -> Result<Vec<(HistoryPosition, RefusedWrite)>> {
    let finished: Vec<&str> = rows
        .iter()
        .filter(|(_, w)| w.refusal.as_deref() == Some(ALREADY_TERMINAL))
        .map(|(_, w)| w.resource_id.as_str())
        .collect();
    tx.prefetch_work(&finished)?;
    let mut out = Vec::with_capacity(rows.len());
    for (position, write) in rows {
        let finished_by = if write.refusal.as_deref() == Some(ALREADY_TERMINAL) {
            finisher(tx, &write)?
        } else {
            None
        };
        out.push((position, RefusedWrite { write, finished_by }));
    }
    Ok(out)
}

/// The owner whose completion or failure ended the item `write` was refused on: the item's
/// owner while the item is still ended under the generation the refusal recorded (nothing
/// claimed it since) and its end was its owner's own outcome — not a discard, not a dead
/// letter settled by whoever took the lapsed claim over.
fn finisher(tx: &mut dyn Tx, write: &WriteRecord) -> Result<Option<String>> {
    let Some(generation) = write.holder.as_ref().map(|h| h.generation) else {
        return Ok(None);
    };
    let Some(item) = tx.work(&write.resource_id)? else {
        return Ok(None);
    };
    let owners_outcome = match item.state {
        WorkState::Succeeded => true,
        WorkState::Failed => matches!(
            item.ending(),
            Some(Ending::Terminal | Ending::RetriesExhausted)
        ),
        _ => false,
    };
    Ok(item
        .owner_id
        .filter(|_| owners_outcome && item.generation == generation))
}

#[cfg(test)]
mod tests {
    use crate::model::{Grant, GrantKind, Takeover, WriteRecord, WriteVerb};
    use crate::store::backend::{Backend, Tx};
    use crate::store::memory::MemoryBackend;
    use crate::store::sqlite::SqliteBackend;
    use crate::store::url::OpenMode;

    fn grant(revision: u64, at: i64, failover: bool) -> Grant {
        Grant {
            revision,
            resource_id: format!("r{revision}-{at}"),
            generation: 2,
            owner_id: "b".into(),
            how: GrantKind::Claim,
            owner_compat: None,
            item_compat: None,
            at,
            took_over: failover.then(|| Takeover {
                from_owner: "a".into(),
                from_generation: 1,
                lapsed_ms: 10,
            }),
        }
    }

    fn write(revision: u64, at: i64, accepted: bool) -> WriteRecord {
        WriteRecord {
            revision,
            resource_id: format!("r{revision}-{at}"),
            generation: 1,
            owner_id: "a".into(),
            verb: WriteVerb::Complete,
            accepted,
            refusal: (!accepted).then(|| "WORK_FENCED".into()),
            detail: "{}".into(),
            at,
            holder: None,
        }
    }

    /// Trimming by revision keeps the failovers and refused writes still inside the
    /// incident window, however old their revision: a busy store passes a million
    /// revisions long before the window closes.
    fn trimming_keeps_recent_incidents(backend: &dyn Backend) {
        backend
            .write(&mut |tx: &mut dyn Tx| {
                for (at, flag) in [(50, true), (150, true), (200, false)] {
                    tx.add_grant(grant(1, at, flag))?;
                    tx.add_write(write(1, at, !flag))?;
                }
                tx.add_grant(grant(10, 0, false))?;
                tx.add_write(write(10, 0, true))?;
                tx.trim_history(10, 100)
            })
            .expect("trim");
        backend
            .read(&mut |tx: &mut dyn Tx| {
                let grants: Vec<_> = tx
                    .grants(None, 0, 100)?
                    .into_iter()
                    .map(|g| (g.revision, g.at))
                    .collect();
                assert_eq!(grants, [(1, 150), (10, 0)]);
                let writes: Vec<_> = tx
                    .writes(None, 0, 100)?
                    .into_iter()
                    .map(|w| (w.revision, w.at))
                    .collect();
                assert_eq!(writes, [(1, 150), (10, 0)]);
                assert_eq!(tx.count_failovers(0)?, 1);
                assert_eq!(tx.count_refused_writes(0)?, 1);
                assert_eq!(tx.failovers(0, None, 10)?.len(), 1);
                Ok(())
            })
            .expect("read");
    }

    #[test]
    fn trimming_keeps_recent_incidents_in_memory() {
        trimming_keeps_recent_incidents(&MemoryBackend::new());
    }

    #[test]
    fn trimming_keeps_recent_incidents_in_sqlite() {
        let dir = tempfile::tempdir().expect("temp dir");
        let backend =
            SqliteBackend::open(dir.path().join("s.db"), OpenMode::ReadWrite).expect("open");
        trimming_keeps_recent_incidents(&backend);
    }
}
