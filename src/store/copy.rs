//! Copying one store into another — `leasehold copy --from A --to B`, e.g. a SQLite store
//! that outgrew one host into PostgreSQL, and back. Written once over the [`Tx`] seam, so
//! every pair of providers copies the same way.
//!
//! ## What is copied
//! Every row of every table, with the keys the source gave it: the revision and the journal
//! high-water exactly, counters, leases (generation, token, expiry, checkpoint, release),
//! work items, dedup records, the journal under its own `seq`s, ingestions and audit
//! entries under their own ids, subscriptions, schedules, paused handlers, authorities,
//! keyed answers, every grant and fenced write (in order within each revision) with the
//! chain links over them (`chain.rs`), workflow
//! definitions (pinned `id@fingerprint` rows included), instances, their histories and
//! action outcomes. The copy answers `leasehold inspect` and `leasehold check` exactly as
//! the source did, and its next commit is the source's next revision. Only the handlers'
//! rate windows are not copied: they count the current interval alone, and start afresh.
//!
//! ## One snapshot of the source
//! The whole source is read inside one read transaction ([`Backend::read`]), so the copy
//! is the source as it stood at one revision even while its authorities keep running. The
//! price is a long reader: a SQLite source cannot checkpoint its WAL past that snapshot
//! until the copy ends, and a memory source is locked for the duration.
//!
//! ## The target ends complete or visibly unfinished
//! The target must be empty — no row in any table and revision 0 — which is checked inside
//! the first write transaction, so two copies into one target cannot both start. Rows are
//! written in batches of [`BATCH`], one write transaction each, none of which advances the
//! revision; the last transaction sets the revision and the journal high-water. No store
//! operation writes without advancing the revision, so a store holding rows at revision 0
//! is an unfinished copy, and it is refused both as a target
//! ([`Error::TargetNotEmpty`]) and as a source ([`Error::CopyIncomplete`]). A copy that
//! fails after its first batch reports [`Error::CopyIncomplete`] naming the target to
//! delete, and so does a copy whose target was written by anyone else meanwhile (each
//! batch checks that the revision is still 0). Start authorities on the new store once the
//! copy has reported.

use serde::Serialize;

use super::backend::Tx;
use super::{Backend, Store};
use crate::error::{Error, Result};
use crate::model::attempt_error::ATTEMPT_ERRORS_KEPT;
use crate::model::work::WorkFilter;
use crate::model::{HistoryRecord, InstanceRow, PageRequest};

/// Rows read per page and written per target transaction.
pub const BATCH: usize = 1_000;

/// How many rows of one table were copied.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TableCount {
    pub table: &'static str,
    pub rows: u64,
}

/// What a finished copy wrote.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CopySummary {
    /// The source's revision, now the target's.
    pub revision: u64,
    /// The source's journal high-water, now the target's.
    pub journal_high_water: i64,
    /// Rows per table, in the order they were copied.
    pub tables: Vec<TableCount>,
}

type Probe = fn(&mut dyn Tx) -> Result<bool>;

/// Every table with a probe for "holds a row" (history rows only exist with their
/// instance, so `instances` stands for both; attempt errors with their item, so `work`
/// stands for them).
const TABLES: [(&str, Probe); 19] = [
    ("counters", |tx| Ok(!tx.counters("")?.is_empty())),
    ("leases", |tx| Ok(!tx.list_leases(&one())?.is_empty())),
    ("work", |tx| {
        Ok(!tx.list_work(&WorkFilter::default(), &one())?.is_empty())
    }),
    ("dedup records", |tx| {
        Ok(!tx.list_dedup(None, 1)?.is_empty())
    }),
    ("journal", |tx| {
        Ok(!tx.journal_after(0, None, 1)?.is_empty())
    }),
    ("ingestions", |tx| {
        Ok(!tx.list_ingestions(&one())?.is_empty())
    }),
    ("subscriptions", |tx| {
        Ok(!tx.list_subscriptions(&one())?.is_empty())
    }),
    ("schedules", |tx| Ok(!tx.list_schedules(&one())?.is_empty())),
    ("paused handlers", |tx| Ok(!tx.handler_pauses()?.is_empty())),
    ("authorities", |tx| {
        Ok(!tx.list_authorities(&one())?.is_empty())
    }),
    ("keyed answers", |tx| {
        Ok(!tx.list_idempotent_answers(None, 1)?.is_empty())
    }),
    ("audit", |tx| Ok(!tx.list_audit(&one())?.is_empty())),
    ("grants", |tx| Ok(!tx.grants(None, 0, 1)?.is_empty())),
    ("writes", |tx| Ok(!tx.writes(None, 0, 1)?.is_empty())),
    ("chain links", |tx| Ok(!tx.links(0, 1)?.is_empty())),
    ("definitions", |tx| {
        Ok(!tx.list_definitions(&one())?.is_empty())
    }),
    ("instances", |tx| {
        Ok(!tx.list_instances(None, None, &one())?.is_empty())
    }),
    ("action outcomes", |tx| {
        Ok(!tx.list_action_outcomes(None, 1)?.is_empty())
    }),
    ("journal high-water", |tx| Ok(tx.journal_high_water()? > 0)),
];

fn one() -> PageRequest {
    PageRequest::first(1)
}

/// The first table that holds a row, if any.
fn first_with_rows(tx: &mut dyn Tx) -> Result<Option<&'static str>> {
    for (table, holds_rows) in TABLES {
        if holds_rows(tx)? {
            return Ok(Some(table));
        }
    }
    Ok(None)
}

/// Refuses a target that holds anything.
fn refuse_non_empty(tx: &mut dyn Tx, target: &str) -> Result<()> {
    let revision = tx.revision()?;
    let holds = match first_with_rows(tx)? {
        Some(table) if revision == 0 => {
            format!("{table} at revision 0 (an unfinished copy: delete it)")
        }
        Some(table) => format!("{table} (revision {revision})"),
        None if revision > 0 => format!("revision {revision}"),
        None => return Ok(()),
    };
    Err(Error::TargetNotEmpty {
        target: target.to_owned(),
        holds,
    })
}

/// Copies everything in `from` into the empty store `to` (see the module docs), calling
/// `progress` after every committed batch with the rows copied so far of the table at hand.
///
/// # Errors
/// `INVALID` when both are one store; `COPY_TARGET_NOT_EMPTY` (nothing written);
/// `COPY_INCOMPLETE` when the source is an unfinished copy, or when the copy failed after
/// writing part of the target; a store failure before anything was written.
pub fn copy_store(
    from: &Store,
    to: &Store,
    progress: &mut dyn FnMut(&TableCount),
) -> Result<CopySummary> {
    if from.backend.identity() == to.backend.identity() {
        return Err(Error::Invalid(format!(
            "{} is both the source and the target of the copy",
            from.describe()
        )));
    }
    let mut copier = Copier {
        target: to.backend.as_ref(),
        target_name: to.describe(),
        started: false,
        tables: Vec::new(),
        progress,
    };
    let mut summary = None;
    let read = from.backend.read(&mut |src| {
        if copier.started {
            // The provider re-ran the read after contention: the snapshot is a new one.
            return Err(Error::Unavailable(
                "the source's read snapshot was interrupted".into(),
            ));
        }
        summary = Some(copier.copy_all(src, &from.describe())?);
        Ok(())
    });
    match (read, summary) {
        (Ok(()), Some(summary)) => Ok(summary),
        (Err(e @ Error::CopyIncomplete { .. }), _) => Err(e),
        (Err(e), _) if copier.started => Err(Error::CopyIncomplete {
            store: copier.target_name,
            cause: e.to_string(),
        }),
        (Err(e), _) => Err(e),
        (Ok(()), None) => Err(Error::OutcomeUnknown(
            "the copy's read returned no answer".into(),
        )),
    }
}

/// The write side of one copy.
struct Copier<'a> {
    target: &'a dyn Backend,
    target_name: String,
    /// Whether a batch was committed: from then on a failure leaves a partial target.
    started: bool,
    tables: Vec<TableCount>,
    progress: &'a mut dyn FnMut(&TableCount),
}

impl Copier<'_> {
    /// Copies every table from the snapshot `src`, in dependency order, then sets the
    /// revision.
    fn copy_all(&mut self, src: &mut dyn Tx, source_name: &str) -> Result<CopySummary> {
        self.tables.clear();
        let revision = src.revision()?;
        let journal_high_water = src.journal_high_water()?;
        let history_from = src.meta_value(super::retention::HISTORY_FROM)?;
        if revision == 0
            && let Some(table) = first_with_rows(src)?
        {
            return Err(Error::CopyIncomplete {
                store: source_name.to_owned(),
                cause: format!("it holds {table} at revision 0, so it cannot be copied"),
            });
        }

        // Read by position, a history out of order would be copied short without a word.
        if let Some(disorder) = src.history_out_of_order()? {
            return Err(Error::Corrupt(format!(
                "{source_name}: {}; nothing was copied",
                disorder.sentence()
            )));
        }

        self.state_tables(src)?;
        self.paused_handlers(src)?;
        self.history_tables(src)?;
        self.workflow_tables(src)?;

        self.commit(|tx| {
            // Where the checker's history starts being whole travels with the history.
            if let Some(mark) = history_from {
                tx.set_meta_value(super::retention::HISTORY_FROM, mark)?;
            }
            tx.import_revision(revision, journal_high_water)
        })?;
        Ok(CopySummary {
            revision,
            journal_high_water,
            tables: self.tables.clone(),
        })
    }

    /// The coordination state: counters, leases, work and its attempt errors, dedup records, the journal and its
    /// ingestions, subscriptions, schedules, authorities and keyed answers.
    fn state_tables(&mut self, src: &mut dyn Tx) -> Result<()> {
        self.table(
            src,
            "counters",
            |tx, after: Option<&String>| {
                let mut all = tx.counters("")?;
                all.retain(|(name, _)| after.is_none_or(|a| name > a));
                all.truncate(BATCH);
                Ok(all)
            },
            |(name, _)| name.clone(),
            |tx, (name, value)| tx.adjust_counter(name, *value),
        )?;
        self.table(
            src,
            "leases",
            |tx, after: Option<&String>| tx.list_leases(&page(after)),
            |l| l.resource_id.clone(),
            |tx, l| tx.put_lease(l),
        )?;
        self.table(
            src,
            "work",
            |tx, after: Option<&String>| tx.list_work(&WorkFilter::default(), &page(after)),
            |w| w.id.clone(),
            |tx, w| {
                if tx.insert_work(w)? {
                    Ok(())
                } else {
                    Err(Error::Invalid(format!(
                        "work item {} appeared in the target during the copy",
                        w.id
                    )))
                }
            },
        )?;
        self.table(
            src,
            "attempt errors",
            |tx, after: Option<&(String, u64)>| {
                tx.list_attempt_errors(after.map(|(id, g)| (id.as_str(), *g)), BATCH)
            },
            |e| (e.work_id.clone(), e.generation),
            |tx, e| tx.add_attempt_error(e, ATTEMPT_ERRORS_KEPT),
        )?;
        self.table(
            src,
            "dedup records",
            |tx, after: Option<&(String, String)>| {
                tx.list_dedup(after.map(|(s, e)| (s.as_str(), e.as_str())), BATCH)
            },
            |d| (d.source.clone(), d.external_id.clone()),
            |tx, d| tx.put_dedup(d),
        )?;
        self.table(
            src,
            "journal",
            |tx, after: Option<&i64>| tx.journal_after(after.copied().unwrap_or(0), None, BATCH),
            |e| e.seq,
            |tx, e| tx.import_journal(e),
        )?;
        self.table(
            src,
            "ingestions",
            |tx, after: Option<&String>| tx.list_ingestions(&page(after)),
            |i| format!("{:020}", i.id),
            |tx, i| tx.import_ingestion(i),
        )?;
        self.table(
            src,
            "subscriptions",
            |tx, after: Option<&String>| tx.list_subscriptions(&page(after)),
            |s| s.subscription_id.clone(),
            |tx, s| tx.put_subscription(s),
        )?;
        self.table(
            src,
            "schedules",
            |tx, after: Option<&String>| tx.list_schedules(&page(after)),
            |s| s.schedule_id.clone(),
            |tx, s| tx.put_schedule(s),
        )?;
        self.table(
            src,
            "authorities",
            |tx, after: Option<&String>| tx.list_authorities(&page(after)),
            |a| a.instance_id.clone(),
            |tx, a| tx.put_authority(a),
        )?;
        self.table(
            src,
            "keyed answers",
            |tx, after: Option<&String>| {
                tx.list_idempotent_answers(after.map(String::as_str), BATCH)
            },
            |a| a.key.clone(),
            |tx, a| tx.put_idempotent_answer(&a.key, &a.answer, a.at),
        )?;
        Ok(())
    }

    /// The handlers an operator paused (a handful of rows, read whole).
    fn paused_handlers(&mut self, src: &mut dyn Tx) -> Result<()> {
        self.table(
            src,
            "paused handlers",
            |tx, after: Option<&String>| {
                let mut all = tx.handler_pauses()?;
                all.retain(|p| after.is_none_or(|a| p.handler > *a));
                all.truncate(BATCH);
                Ok(all)
            },
            |p| p.handler.clone(),
            |tx, p| tx.put_handler_pause(p),
        )?;
        Ok(())
    }

    /// The durable history the checker and the incident lists read.
    fn history_tables(&mut self, src: &mut dyn Tx) -> Result<()> {
        self.table(
            src,
            "audit",
            |tx, after: Option<&String>| tx.list_audit(&page(after)),
            |a| format!("{:020}", a.id),
            |tx, a| tx.import_audit(a),
        )?;
        self.table(
            src,
            "grants",
            |tx, after: Option<&u64>| tx.grants(None, after.copied().unwrap_or(0), BATCH),
            |g| g.revision,
            |tx, g| tx.add_grant(g.clone()),
        )?;
        self.table(
            src,
            "writes",
            |tx, after: Option<&u64>| tx.writes(None, after.copied().unwrap_or(0), BATCH),
            |w| w.revision,
            |tx, w| tx.add_write(w.clone()),
        )?;
        self.table(
            src,
            "chain links",
            |tx, after: Option<&u64>| tx.links(after.copied().unwrap_or(0), BATCH),
            |l| l.revision,
            |tx, l| tx.put_link(l),
        )?;
        Ok(())
    }

    /// Workflow definitions, instances with their histories, and action outcomes.
    fn workflow_tables(&mut self, src: &mut dyn Tx) -> Result<()> {
        self.table(
            src,
            "definitions",
            |tx, after: Option<&String>| tx.list_definitions(&page(after)),
            |d| d.workflow_id.clone(),
            |tx, d| tx.put_definition(d),
        )?;
        self.instances(src)?;
        self.table(
            src,
            "action outcomes",
            |tx, after: Option<&String>| tx.list_action_outcomes(after.map(String::as_str), BATCH),
            |o| o.invocation_id.clone(),
            |tx, o| tx.put_action_outcome(o),
        )?;
        Ok(())
    }

    /// Commits one batch in one target transaction. The first one also proves the target
    /// empty, so a refusal writes nothing; every later one proves that nobody else wrote to
    /// the target since (any other write would have advanced its revision).
    fn commit(&mut self, mut write: impl FnMut(&mut dyn Tx) -> Result<()>) -> Result<()> {
        let first = !self.started;
        let target = self.target_name.as_str();
        self.target.write(&mut |tx| {
            if first {
                refuse_non_empty(tx, target)?;
            } else if tx.revision()? != 0 {
                return Err(Error::CopyIncomplete {
                    store: target.to_owned(),
                    cause: "another process wrote to it during the copy".into(),
                });
            }
            write(tx)
        })?;
        self.started = true;
        Ok(())
    }

    /// Adds `rows` to the count of the table at hand and reports progress.
    fn count(&mut self, table: &'static str, rows: usize) {
        let entry = match self.tables.last_mut() {
            Some(entry) if entry.table == table => entry,
            _ => {
                self.tables.push(TableCount { table, rows: 0 });
                let last = self.tables.len() - 1;
                &mut self.tables[last]
            }
        };
        entry.rows += rows as u64;
        (self.progress)(entry);
    }

    /// Copies one table page by page: `read` returns the rows after a cursor, `cursor`
    /// gives a row's cursor, `put` writes one row into the target.
    fn table<T, K>(
        &mut self,
        src: &mut dyn Tx,
        name: &'static str,
        mut read: impl FnMut(&mut dyn Tx, Option<&K>) -> Result<Vec<T>>,
        cursor: impl Fn(&T) -> K,
        mut put: impl FnMut(&mut dyn Tx, &T) -> Result<()>,
    ) -> Result<()> {
        self.count(name, 0);
        let mut after = None;
        loop {
            let rows = read(src, after.as_ref())?;
            if rows.is_empty() {
                return Ok(());
            }
            self.commit(|tx| rows.iter().try_for_each(|row| put(tx, row)))?;
            self.count(name, rows.len());
            if rows.len() < BATCH {
                return Ok(());
            }
            after = rows.last().map(&cursor);
        }
    }

    /// Instances with their histories, a page of instances per transaction.
    fn instances(&mut self, src: &mut dyn Tx) -> Result<()> {
        self.count("instances", 0);
        let mut after: Option<String> = None;
        let mut history_rows = 0;
        loop {
            let rows = src.list_instances(None, None, &page(after.as_ref()))?;
            let mut pages: Vec<(InstanceRow, Vec<HistoryRecord>)> = Vec::new();
            for row in rows {
                let history = src.history(&row.instance_id)?;
                pages.push((row, history));
            }
            if !pages.is_empty() {
                self.commit(|tx| {
                    for (row, history) in &pages {
                        tx.insert_instance(row)?;
                        history.iter().try_for_each(|h| tx.add_history(h))?;
                    }
                    Ok(())
                })?;
                self.count("instances", pages.len());
                history_rows += pages.iter().map(|(_, h)| h.len()).sum::<usize>();
            }
            if pages.len() < BATCH {
                break;
            }
            after = pages.last().map(|(row, _)| row.instance_id.clone());
        }
        self.count("history", history_rows);
        Ok(())
    }
}

/// The page of [`BATCH`] rows after a text cursor.
fn page(after: Option<&String>) -> PageRequest {
    PageRequest::resume(after.map(String::as_str), BATCH)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    //! The refusals. Round trips through every provider are in the conformance suite
    //! (`tests/store/copy.rs`).

    use std::sync::Arc;

    use super::*;
    use crate::clock::ManualClock;
    use crate::ids::SeededIds;
    use crate::store::Keyed;
    use crate::store::memory::MemoryBackend;
    use crate::store::sqlite::SqliteBackend;
    use crate::store::url::OpenMode;

    const T0: i64 = 1_767_225_600_000;

    fn memory() -> (MemoryBackend, Store) {
        let backend = MemoryBackend::new();
        let store = Store::new(
            Arc::new(backend.clone()),
            Arc::new(ManualClock::new(T0)),
            Arc::new(SeededIds::new(3)),
        );
        (backend, store)
    }

    fn sqlite(path: &std::path::Path) -> Store {
        Store::new(
            Arc::new(SqliteBackend::open(path, OpenMode::ReadWrite).unwrap()),
            Arc::new(ManualClock::new(T0)),
            Arc::new(SeededIds::new(4)),
        )
    }

    /// A store with rows in several tables (so a copy of it takes several batches).
    fn some_store() -> Store {
        let (_, store) = memory();
        let key = Keyed { key: Some("k") };
        store.acquire("r", "op", 5_000.0, key).unwrap();
        store.audit("me@host", "a", "b", "c").unwrap();
        store
    }

    fn quiet(_: &TableCount) {}

    /// Revision and the first table holding rows.
    fn contents(store: &Store) -> (u64, Option<&'static str>) {
        store
            .read(|tx| Ok((tx.revision()?, first_with_rows(tx)?)))
            .unwrap()
    }

    #[test]
    fn a_non_empty_target_is_refused_and_left_unchanged() {
        let dir = tempfile::tempdir().unwrap();
        let target = sqlite(&dir.path().join("target.db"));
        target.audit("me@host", "x", "y", "z").unwrap();
        let audit = target.list_audit(&PageRequest::first(10)).unwrap();
        // Whether the source holds rows or not, nothing is written.
        for source in [some_store(), memory().1] {
            let err = copy_store(&source, &target, &mut quiet).unwrap_err();
            assert_eq!(err.code(), "COPY_TARGET_NOT_EMPTY", "{err}");
            assert!(err.to_string().contains("audit (revision 1)"), "{err}");
            assert_eq!(target.revision().unwrap(), 1);
            assert_eq!(target.list_audit(&PageRequest::first(10)).unwrap(), audit);
        }
    }

    #[test]
    fn a_store_is_never_copied_onto_itself() {
        let (backend, store) = memory();
        let other_handle = Store::new(
            Arc::new(backend),
            Arc::new(ManualClock::new(T0)),
            Arc::new(SeededIds::new(5)),
        );
        for target in [store.clone(), other_handle] {
            let err = copy_store(&store, &target, &mut quiet).unwrap_err();
            assert_eq!(err.code(), "INVALID");
        }
        let dir = tempfile::tempdir().unwrap();
        let (path, dotted) = (
            dir.path().join("one.db"),
            dir.path().join(".").join("one.db"),
        );
        let err = copy_store(&sqlite(&path), &sqlite(&dotted), &mut quiet).unwrap_err();
        assert_eq!(err.code(), "INVALID");
        assert!(
            err.to_string().contains("both the source and the target"),
            "{err}"
        );
    }

    #[test]
    fn a_copy_that_stops_part_way_is_refused_at_both_ends() {
        let source = some_store();
        let (backend, target) = memory();
        let down = backend.clone();
        let err = copy_store(&source, &target, &mut |c| {
            if c.rows > 0 {
                down.set_outage(true);
            }
        })
        .unwrap_err();
        backend.set_outage(false);
        assert_eq!(err.code(), "COPY_INCOMPLETE", "{err}");
        assert!(err.to_string().contains("delete it"), "{err}");
        let (revision, holds) = contents(&target);
        assert_eq!(revision, 0);
        assert!(holds.is_some());

        let err = copy_store(&source, &target, &mut quiet).unwrap_err();
        assert_eq!(err.code(), "COPY_TARGET_NOT_EMPTY", "{err}");
        assert!(err.to_string().contains("unfinished copy"), "{err}");
        let (_, elsewhere) = memory();
        let err = copy_store(&target, &elsewhere, &mut quiet).unwrap_err();
        assert_eq!(err.code(), "COPY_INCOMPLETE", "{err}");
        assert_eq!(contents(&elsewhere), (0, None));
    }

    #[test]
    fn a_target_written_during_the_copy_is_reported_unfinished() {
        let source = some_store();
        let (_, target) = memory();
        let meddler = target.clone();
        let err = copy_store(&source, &target, &mut |c| {
            if c.rows > 0 && meddler.revision().unwrap() == 0 {
                meddler.audit("someone@else", "x", "y", "z").unwrap();
            }
        })
        .unwrap_err();
        assert_eq!(err.code(), "COPY_INCOMPLETE", "{err}");
        assert!(err.to_string().contains("another process wrote"), "{err}");
    }
}
