//! Per-authority counters and the execution log.

use std::collections::BTreeMap;
use std::io::{LineWriter, Write};
use std::path::Path;
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};

use crate::clock::Millis;
use crate::error::{Error, Result};
use crate::model::{ExecRecord, FailureClass, WorkItem};
use crate::store::{Claim, RoundTrips};

/// What one authority did, from its own point of view.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Stats {
    pub instance_id: String,
    pub build: String,
    /// Work items and workflow instances claimed.
    pub claims: u64,
    /// Of which workflow instances.
    pub workflow_claims: u64,
    /// Claims that took over an expired claim nobody released (failover): the previous
    /// owner died, stalled or lost its lease.
    pub reclaims: u64,
    /// For each reclaim: claim time − previous lease expiry (ms).
    pub reclaim_latencies_ms: Vec<Millis>,
    /// Accepted successful completions (work items and workflow steps).
    pub completions: u64,
    /// Accepted failures that scheduled a durable retry.
    pub retries: u64,
    /// Accepted terminal failures.
    pub failures: u64,
    /// Cursor advances accepted, and events delivered through them.
    pub cursor_advances: u64,
    pub events_delivered: u64,
    /// Schedule firings this authority enqueued.
    pub schedules_fired: u64,
    /// Outcome writes (completions, failures, cursor advances, transitions, releases) the
    /// store refused because this authority had been superseded: another claim had taken
    /// the item over. The store says `WORK_FENCED`, or `already-terminal` once the
    /// successor has finished the item; both count here.
    pub fenced_writes_refused: u64,
    /// Other refused writes by code (`already-terminal` of our own repeated write,
    /// `stale-sequence`, a cancelled workflow, …).
    pub other_refusals: BTreeMap<String, u64>,
    /// Claims taken over by someone else, found at renewal or by a fenced write.
    pub leases_lost: u64,
    /// Attempts that ended uncertain (nothing recorded, the claim left to lapse).
    pub uncertain: u64,
    /// Store calls that failed (outage, contention budget spent, unknown outcome).
    pub store_errors: u64,
    /// Jobs whose outcome was unknown and whose read-back could not decide whether it
    /// committed: held (fail closed) until a later read-back did.
    pub recovery_required: u64,
    /// Claims released (yielded back) by a clean shutdown.
    pub released_on_shutdown: u64,
    /// Claims a shutdown left to lapse, so the next owner counts an uncertain attempt: a
    /// handler still running when the grace period ran out, or an outcome the store would
    /// not take even at the shutdown's last try.
    pub abandoned_on_shutdown: u64,
    /// Rows this authority's trims removed (`store/retention.rs`).
    pub trimmed_rows: u64,
    /// When (store clock) this authority last trimmed.
    pub last_trim_at: Option<Millis>,
    /// Claim-to-finish time (ms, store clock) of every accepted outcome: what
    /// `leasehold bench` reports as claim-to-complete latency.
    pub finish_latency_ms: Histogram,
    /// How long each handler ran (ms: real time in a process, virtual in the cluster), by
    /// handler name.
    pub handler_ms: BTreeMap<String, Histogram>,
    /// How long the runtime's store calls took (ms, real time), by verb (`claim`,
    /// `renew`, `complete`, `heartbeat`, …).
    pub store_call_ms: BTreeMap<String, Histogram>,
    /// What each registered handler's attempts came to, counted once the store accepted
    /// the write that says so. Keyed by the registered handlers only, each from the start:
    /// every handler's series exist before its first outcome, and item data never adds
    /// a key (an item whose handler is not registered here is never run here).
    pub handlers: BTreeMap<String, HandlerCounts>,
    /// The round trips this authority's committed writes took, on a store where each
    /// statement is one (PostgreSQL): the write lock is held across them.
    pub write_round_trips: Option<RoundTrips>,
    /// Polls that claimed nothing because the write lock's queue was long: this authority
    /// stepped aside and left full batches to those ahead of it (`core/turns.rs`).
    pub lock_step_asides: u64,
}

/// One handler's outcomes, as the store recorded them through this authority's writes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct HandlerCounts {
    /// Successful outcomes (a work item completed, a workflow action's success recorded).
    pub completions: u64,
    /// Failures by [`FailureClass`] name: the class the handler answered for a failure
    /// the store accepted, and `uncertain-exhausted` for each dead letter this authority's
    /// claims wrote (a lapse that spent the last attempt).
    pub failures: BTreeMap<String, u64>,
    /// Work item failures the store turned into a durable retry.
    pub retries_scheduled: u64,
    /// Attempts the store counted as uncertain through this authority's writes: lapsed
    /// claims its claims took over (dead letters included), and accepted failures that may
    /// have acted (`TIMEOUT`). The same count the items' `uncertain_attempts` keep.
    pub uncertain_attempts: u64,
}

impl Default for HandlerCounts {
    fn default() -> Self {
        Self {
            completions: 0,
            failures: FailureClass::ALL
                .iter()
                .map(|c| (c.as_str().to_owned(), 0))
                .collect(),
            retries_scheduled: 0,
            uncertain_attempts: 0,
        }
    }
}

impl HandlerCounts {
    /// Counts a failure of `class`.
    pub fn failed(&mut self, class: FailureClass) {
        *self.failures.entry(class.as_str().to_owned()).or_default() += 1;
    }
}

impl Stats {
    /// Counters for an authority running `handlers`, each handler's at zero.
    pub fn for_handlers<'a>(
        instance_id: &str,
        build: &str,
        handlers: impl IntoIterator<Item = &'a str>,
    ) -> Self {
        Self {
            instance_id: instance_id.to_owned(),
            build: build.to_owned(),
            handlers: handlers
                .into_iter()
                .map(|h| (h.to_owned(), HandlerCounts::default()))
                .collect(),
            ..Self::default()
        }
    }

    /// The counts of `handler`, when it is registered here.
    pub fn handler(&mut self, handler: &str) -> Option<&mut HandlerCounts> {
        self.handlers.get_mut(handler)
    }

    /// Counts what a committed claim batch settled: each lapse a claim took over is one
    /// uncertain attempt of its handler, and each dead letter one more and a failure of
    /// class `uncertain-exhausted`.
    pub fn settled(&mut self, claims: &[Claim], dead_letters: &[Arc<WorkItem>]) {
        for claim in claims.iter().filter(|c| c.settled_lapse) {
            if let Some(counts) = self.handler(&claim.item.handler) {
                counts.uncertain_attempts += 1;
            }
        }
        for dead in dead_letters {
            if let Some(counts) = self.handler(&dead.handler) {
                counts.uncertain_attempts += 1;
                counts.failed(FailureClass::UncertainExhausted);
            }
        }
    }

    /// Counts a refused write: a fenced one (see [`Self::fenced_writes_refused`]) is also a
    /// lost claim; any other is counted by its code.
    pub fn refused(&mut self, code: &str, fenced: bool) {
        if fenced {
            self.fenced_writes_refused += 1;
            self.leases_lost += 1;
        } else {
            *self.other_refusals.entry(code.to_owned()).or_default() += 1;
        }
    }
}

/// A latency distribution at millisecond resolution: one counter per distinct value, so it
/// stays small however many samples a long-running authority adds.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Histogram(BTreeMap<Millis, u64>);

impl Histogram {
    /// Counts one sample (negative values count as 0).
    pub fn record(&mut self, ms: Millis) {
        *self.0.entry(ms.max(0)).or_default() += 1;
    }

    /// Adds every sample of `other`.
    pub fn merge(&mut self, other: &Self) {
        for (ms, n) in &other.0 {
            *self.0.entry(*ms).or_default() += n;
        }
    }

    /// Each distinct value with how many samples had it, ascending.
    pub fn samples(&self) -> impl Iterator<Item = (Millis, u64)> + '_ {
        self.0.iter().map(|(ms, n)| (*ms, *n))
    }

    /// How many samples were recorded.
    #[must_use]
    pub fn count(&self) -> u64 {
        self.0.values().sum()
    }

    /// The `p`-th percentile (0–100, nearest rank), or `None` without samples.
    #[must_use]
    pub fn percentile(&self, p: u32) -> Option<Millis> {
        let total = self.count();
        let rank = (total * u64::from(p.min(100))).div_ceil(100).max(1);
        let mut seen = 0;
        for (ms, n) in &self.0 {
            seen += n;
            if seen >= rank {
                return Some(*ms);
            }
        }
        None
    }
}

/// The `p`-th percentile (0–100, nearest rank) of `values` (milliseconds, or any unit).
#[must_use]
pub fn percentile(values: &[Millis], p: u32) -> Option<Millis> {
    if values.is_empty() {
        return None;
    }
    let mut sorted = values.to_vec();
    sorted.sort_unstable();
    let rank = (sorted.len() * p.min(100) as usize).div_ceil(100).max(1);
    sorted.get(rank - 1).copied()
}

/// An append-only JSON-lines file of [`ExecRecord`]s (`--exec-log FILE`), one line per
/// physical attempt, flushed per line so another process can read it while we run.
pub struct ExecLog(Mutex<LineWriter<std::fs::File>>);

impl ExecLog {
    /// Opens (creating or appending to) `path`.
    ///
    /// # Errors
    /// `INVALID` when the file cannot be opened.
    pub fn open(path: &Path) -> Result<Self> {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(|e| {
                Error::Invalid(format!(
                    "cannot open the execution log {}: {e}",
                    path.display()
                ))
            })?;
        Ok(Self(Mutex::new(LineWriter::new(file))))
    }

    /// Appends one record; a write failure is reported, never a panic.
    ///
    /// # Errors
    /// `LOCAL_FAILURE` when the line cannot be written.
    pub fn append(&self, record: &ExecRecord) -> Result<()> {
        let line = serde_json::to_string(record).map_err(|e| Error::Invalid(e.to_string()))?;
        let mut w = self
            .0
            .lock()
            .map_err(|_| Error::Local("execution log lock poisoned".into()))?;
        writeln!(w, "{line}")
            .map_err(|e| Error::Local(format!("cannot write the execution log: {e}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_use_nearest_rank() {
        assert_eq!(percentile(&[], 50), None);
        assert_eq!(percentile(&[5], 99), Some(5));
        let v: Vec<Millis> = (1..=100).collect();
        assert_eq!(percentile(&v, 50), Some(50));
        assert_eq!(percentile(&v, 99), Some(99));
    }

    #[test]
    fn histogram_percentiles_match_the_sorted_samples() {
        let mut h = Histogram::default();
        assert_eq!(h.percentile(50), None);
        let v: Vec<Millis> = (1..=100).rev().collect();
        for ms in &v[..50] {
            h.record(*ms);
        }
        let mut rest = Histogram::default();
        for ms in &v[50..] {
            rest.record(*ms);
        }
        h.merge(&rest);
        assert_eq!(h.count(), 100);
        for p in [1, 50, 99, 100] {
            assert_eq!(h.percentile(p), percentile(&v, p), "p{p}");
        }
    }
}
