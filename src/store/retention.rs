//! Retention of the durable tables: what the store forgets, and when. Succeeded work items
//! and finished workflow instances (with their history and action outcome records), keyed
//! answers, ingestions, the audit log and the dedup window are trimmed by age against the
//! store's own clock; grants and writes (the checker's history) are trimmed by revision
//! when fenced writes are recorded (`record_write`), which leaves a `history_from` mark in
//! `meta` so the checker can say which revisions it saw.
//!
//! [`Store::trim`] removes at most `batch` rows per table, each table in its own short write
//! transaction: authorities call it every few seconds, so a large backlog drains over many
//! calls and never holds a long transaction. Deletes are idempotent, so several authorities
//! trimming the same rows is harmless. Nothing still needed is touched: only succeeded items
//! and finished instances go (a failed item waits for a person), and a waiting instance keeps its history, outcomes and the journal
//! events after its `sinceEventSeq` (the journal is bounded by count, not here).

use std::collections::BTreeMap;

use super::{Counter, Store, Tx};
use crate::clock::Millis;
use crate::error::{Error, Result};
use crate::model::{AuditEntry, Authority, Ingestion, PageRequest};

const DAY_MS: Millis = 24 * 60 * 60 * 1_000;

/// How long each kind of durable row is kept once nothing needs it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RetentionPolicy {
    /// Succeeded work items and finished instances with their history and outcome
    /// records, counted from their last update; also keyed answers and ingestions, counted
    /// from when they were recorded. Failed items (dead letters among them) are kept until
    /// a person requeues or discards them.
    pub finished_ms: Millis,
    /// Audit entries.
    pub audit_ms: Millis,
    /// The dedup window of every event source without one of its own: an event id first
    /// seen longer ago than this is forgotten, and the same id is `accepted` again.
    pub dedup_ms: Millis,
    /// Dedup windows of particular sources.
    pub dedup_by_source: BTreeMap<String, Millis>,
}

impl Default for RetentionPolicy {
    fn default() -> Self {
        Self {
            finished_ms: Self::DEFAULT_FINISHED_MS,
            audit_ms: Self::DEFAULT_AUDIT_MS,
            dedup_ms: Self::DEFAULT_DEDUP_MS,
            dedup_by_source: BTreeMap::new(),
        }
    }
}

/// The part of a registered config that retention reads.
#[derive(serde::Deserialize)]
struct Registered {
    #[serde(default)]
    retention: RetentionPolicy,
}

impl RetentionPolicy {
    /// The policy `authority` trims by: the `retention` of its registered config; the
    /// defaults when it registered none or one this build cannot read. The checker and the
    /// operator's retention line read it alike.
    #[must_use]
    pub fn registered_by(authority: &Authority) -> Self {
        serde_json::from_str::<Registered>(&authority.config)
            .map(|r| r.retention)
            .unwrap_or_default()
    }

    pub const DEFAULT_FINISHED_MS: Millis = 7 * DAY_MS;
    pub const DEFAULT_AUDIT_MS: Millis = 30 * DAY_MS;
    pub const DEFAULT_DEDUP_MS: Millis = 7 * DAY_MS;
    /// The shortest period accepted: one minute, so a finished row outlives the renewals,
    /// retries and checks that may still read it right after it finished.
    pub const MIN_MS: Millis = 60 * 1_000;
    /// The longest period accepted: ten years (longer is "forever", which is what this
    /// bound exists to prevent).
    pub const MAX_MS: Millis = 3_650 * DAY_MS;

    /// Refuses a period outside [`Self::MIN_MS`, `Self::MAX_MS`]: never silently capped.
    ///
    /// # Errors
    /// `INVALID` naming the knob and the accepted range.
    pub fn validate(&self) -> Result<()> {
        let named = [
            ("finished retention".to_owned(), self.finished_ms),
            ("audit retention".to_owned(), self.audit_ms),
            ("dedup window".to_owned(), self.dedup_ms),
        ];
        let sources = self
            .dedup_by_source
            .iter()
            .map(|(s, ms)| (format!("dedup window of source {s:?}"), *ms));
        for (what, ms) in named.into_iter().chain(sources) {
            if !(Self::MIN_MS..=Self::MAX_MS).contains(&ms) {
                return Err(Error::Invalid(format!(
                    "{what} must be between {}s and {}d, got {ms}ms",
                    Self::MIN_MS / 1_000,
                    Self::MAX_MS / DAY_MS
                )));
            }
        }
        Ok(())
    }

    /// The dedup window of `source`.
    #[must_use]
    pub fn dedup_window(&self, source: &str) -> Millis {
        self.dedup_by_source
            .get(source)
            .copied()
            .unwrap_or(self.dedup_ms)
    }

    /// One line for people: `finished 7d, audit 30d, dedup 7d (orders 1d)`.
    #[must_use]
    pub fn summary(&self) -> String {
        let mut line = format!(
            "finished {}, audit {}, dedup {}",
            span(self.finished_ms),
            span(self.audit_ms),
            span(self.dedup_ms)
        );
        if !self.dedup_by_source.is_empty() {
            let each: Vec<String> = self
                .dedup_by_source
                .iter()
                .map(|(s, ms)| format!("{s} {}", span(*ms)))
                .collect();
            line.push_str(&format!(" ({})", each.join(", ")));
        }
        line
    }
}

/// A period in the largest whole unit that divides it (`7d`, `90m`, `45s`, `1500ms`).
fn span(ms: Millis) -> String {
    for (unit, size) in [("d", DAY_MS), ("h", 3_600_000), ("m", 60_000), ("s", 1_000)] {
        if ms % size == 0 {
            return format!("{}{unit}", ms / size);
        }
    }
    format!("{ms}ms")
}

/// How many rows one [`Store::trim`] call removed, per table.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TrimReport {
    pub work: u64,
    /// Instances (their history and outcome records go with them).
    pub instances: u64,
    pub dedup: u64,
    pub idempotency: u64,
    pub ingestions: u64,
    pub audit: u64,
}

impl TrimReport {
    /// Rows removed in all.
    #[must_use]
    pub fn total(&self) -> u64 {
        self.work + self.instances + self.dedup + self.idempotency + self.ingestions + self.audit
    }
}

/// The oldest id of an id-ordered table to keep: the rows from the oldest `batch` recorded
/// before `before`, never the newest row, whose id the next insert counts on.
fn numbered_through<T>(
    rows: &[T],
    newest: Option<i64>,
    at: impl Fn(&T) -> (i64, Millis),
    before: Millis,
) -> Option<i64> {
    let newest = newest?;
    rows.iter()
        .map(at)
        .take_while(|(id, t)| *t < before && *id < newest)
        .map(|(id, _)| id)
        .last()
}

impl Store {
    /// Removes at most `batch` rows per table that `policy` no longer keeps, each table in
    /// its own write transaction, at the store's clock.
    ///
    /// # Errors
    /// `INVALID` for a policy outside its bounds (nothing is removed); a store failure
    /// (tables trimmed before it stay trimmed).
    pub fn trim(&self, policy: &RetentionPolicy, batch: usize) -> Result<TrimReport> {
        policy.validate()?;
        let batch = batch.max(1);
        let mut report = TrimReport {
            work: self.write(|tx, now| trim_work(tx, now - policy.finished_ms, batch))?,
            instances: self.write(|tx, now| trim_instances(tx, now - policy.finished_ms, batch))?,
            ..TrimReport::default()
        };
        let overridden: Vec<String> = policy.dedup_by_source.keys().cloned().collect();
        report.dedup = self.write(|tx, now| {
            let mut n = tx.trim_dedup(None, &overridden, now - policy.dedup_ms, batch)?;
            for (source, window) in &policy.dedup_by_source {
                n += tx.trim_dedup(Some(source), &[], now - window, batch)?;
            }
            Ok(n)
        })?;
        report.idempotency =
            self.write(|tx, now| tx.trim_idempotent_answers(now - policy.finished_ms, batch))?;
        report.ingestions =
            self.write(|tx, now| trim_ingestions(tx, now - policy.finished_ms, batch))?;
        report.audit = self.write(|tx, now| {
            let rows = tx.list_audit(&PageRequest::first(batch))?;
            let newest = tx.list_audit(&PageRequest::last(1))?.first().map(|a| a.id);
            let at = |a: &AuditEntry| (a.id, a.at);
            match numbered_through(&rows, newest, at, now - policy.audit_ms) {
                Some(through) => tx.delete_audit_through(through),
                None => Ok(0),
            }
        })?;
        Ok(report)
    }

    /// The first revision whose grants and writes are all kept (0: nothing was ever
    /// trimmed), from the `history_from` mark trimming leaves.
    ///
    /// # Errors
    /// A store failure.
    pub fn history_retained_from(&self) -> Result<u64> {
        self.read(history_from)
    }
}

/// The `meta` key of the first revision whose grants and writes are all kept.
pub(crate) const HISTORY_FROM: &str = "history_from";

/// Reads the [`HISTORY_FROM`] mark inside a transaction.
pub(crate) fn history_from(tx: &mut dyn Tx) -> Result<u64> {
    Ok(tx
        .meta_value(HISTORY_FROM)?
        .map_or(0, |v| u64::try_from(v).unwrap_or(0)))
}

fn trim_work(tx: &mut dyn Tx, before: Millis, batch: usize) -> Result<u64> {
    let rows = tx.finished_work(before, batch)?;
    remove_each(tx, &rows, |tx, item| {
        tx.delete_work(&item.id)?;
        Counter::work(item).adjust(tx, -1)
    })
}

fn trim_instances(tx: &mut dyn Tx, before: Millis, batch: usize) -> Result<u64> {
    let rows = tx.finished_instances(before, batch)?;
    remove_each(tx, &rows, |tx, row| {
        tx.delete_instance(&row.instance_id)?;
        let status = row.status;
        let compat = row.compat.clone();
        Counter::Workflows { status, compat }.adjust(tx, -1)
    })
}

/// Removes each of `rows` with `remove`, as one revision when there are any (readers
/// polling the revision see the lists change).
fn remove_each<T>(
    tx: &mut dyn Tx,
    rows: &[T],
    mut remove: impl FnMut(&mut dyn Tx, &T) -> Result<()>,
) -> Result<u64> {
    if !rows.is_empty() {
        tx.commit_revision()?;
    }
    for row in rows {
        remove(tx, row)?;
    }
    Ok(rows.len() as u64)
}

/// Ingestions are counted by outcome: the counts go down with the rows they count.
fn trim_ingestions(tx: &mut dyn Tx, before: Millis, batch: usize) -> Result<u64> {
    let rows = tx.list_ingestions(&PageRequest::first(batch))?;
    let newest = tx
        .list_ingestions(&PageRequest::last(1))?
        .first()
        .map(|i| i.id);
    let at = |i: &Ingestion| (i.id, i.at);
    let Some(through) = numbered_through(&rows, newest, at, before) else {
        return Ok(0);
    };
    for row in rows.iter().take_while(|i| i.id <= through) {
        Counter::Events(row.outcome).adjust(tx, -1)?;
    }
    tx.delete_ingestions_through(through)
}
