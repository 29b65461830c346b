//! A fault-injecting provider for tests: wraps any [`Backend`] and makes chosen write
//! transactions fail the ways a real store can — before the commit, after it (the commit
//! durable, the caller told it failed), with the answer lost (`OUTCOME_UNKNOWN` after a
//! durable commit), or slowly. The paths a real provider reaches only under a crash, a
//! network cut or a full disk then run in ordinary tests, on every provider.
//!
//! Faults are planned per write transaction, counted from the wrapper's creation:
//! [`FaultyBackend::plan`] sets a rule, [`FaultyBackend::injected`] counts what happened.
//! Read transactions fail only while [`FaultyBackend::cut_reads`] says so (a store that
//! cannot be read back after an unknown outcome).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use super::backend::{Backend, CommitFeed, ServerIdentity, StoreKind, Tx};
use super::capability::Capability;
use super::stall::ProcessStall;
use crate::error::{Error, Result};

/// One way a write transaction can fail.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// Nothing is committed and the caller is told the store is unavailable.
    FailBeforeCommit,
    /// The transaction commits, and the caller is told the store is unavailable.
    CommitThenReportFailure,
    /// The transaction commits, and the caller is told the outcome is unknown.
    CommitThenLoseAnswer,
    /// The transaction commits after holding its write lock this long.
    SlowCommit(Duration),
    /// Nothing is committed and the caller is told the store refuses this process for
    /// good (a revoked grant, a changed password): `STORE_REFUSED`.
    Refuse,
}

/// Which write transactions get which fault: write number `n` (from 1) gets the fault of
/// the first rule whose `every` divides it, once `n > after` and until `n > until`.
#[derive(Debug, Clone, Default)]
pub struct FaultPlan {
    /// Writes before any fault.
    pub after: u64,
    /// The last write that may get a fault (`None`: no end).
    pub until: Option<u64>,
    /// `(every, fault)` rules, the first match wins.
    pub rules: Vec<(u64, Fault)>,
}

impl FaultPlan {
    /// Write number `n` alone gets `fault`.
    #[must_use]
    pub fn once(n: u64, fault: Fault) -> Self {
        Self {
            after: n.saturating_sub(1),
            until: Some(n),
            rules: vec![(1, fault)],
        }
    }

    fn fault_for(&self, n: u64) -> Option<Fault> {
        if n <= self.after || self.until.is_some_and(|last| n > last) {
            return None;
        }
        self.rules
            .iter()
            .find(|(every, _)| *every > 0 && n.is_multiple_of(*every))
            .map(|(_, fault)| *fault)
    }
}

/// Counts of the faults injected so far, by kind.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Injected {
    pub failed_before_commit: u64,
    pub reported_failure_after_commit: u64,
    pub lost_answers: u64,
    pub slow_commits: u64,
    pub refusals: u64,
}

/// A [`Backend`] that injects faults into another's write transactions.
pub struct FaultyBackend {
    inner: Arc<dyn Backend>,
    plan: Mutex<FaultPlan>,
    writes: AtomicU64,
    injected: Mutex<Injected>,
    reads_cut: AtomicBool,
    /// Capabilities hidden from callers: a provider that lacks them, for the tests of
    /// what refuses to start without them.
    withheld: Mutex<Vec<Capability>>,
}

impl FaultyBackend {
    /// `inner` with no fault planned yet.
    #[must_use]
    pub fn new(inner: Arc<dyn Backend>) -> Self {
        Self {
            inner,
            plan: Mutex::new(FaultPlan::default()),
            writes: AtomicU64::new(0),
            injected: Mutex::new(Injected::default()),
            reads_cut: AtomicBool::new(false),
            withheld: Mutex::new(Vec::new()),
        }
    }

    /// From now on every read transaction fails as unavailable (`true`), or none (`false`).
    pub fn cut_reads(&self, cut: bool) {
        self.reads_cut.store(cut, Ordering::Relaxed);
    }

    /// Stops advertising `capability`.
    pub fn withhold(&self, capability: Capability) {
        self.withheld
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(capability);
    }

    /// Replaces the plan; write numbers keep counting from the wrapper's creation.
    pub fn plan(&self, plan: FaultPlan) {
        *self.plan.lock().unwrap_or_else(PoisonError::into_inner) = plan;
    }

    /// How many write transactions have been started.
    #[must_use]
    pub fn writes(&self) -> u64 {
        self.writes.load(Ordering::Relaxed)
    }

    /// What was injected so far.
    #[must_use]
    pub fn injected(&self) -> Injected {
        *self.injected.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn count(&self, bump: impl FnOnce(&mut Injected)) {
        bump(&mut self.injected.lock().unwrap_or_else(PoisonError::into_inner));
    }
}

impl Backend for FaultyBackend {
    fn kind(&self) -> StoreKind {
        self.inner.kind()
    }

    fn describe(&self) -> String {
        self.inner.describe()
    }

    fn identity(&self) -> String {
        self.inner.identity()
    }

    fn server_identity(&self) -> Option<ServerIdentity> {
        self.inner.server_identity()
    }

    fn wal_position(&self) -> Option<u64> {
        self.inner.wal_position()
    }

    fn write_round_trips(&self) -> Option<super::backend::RoundTrips> {
        self.inner.write_round_trips()
    }

    fn physical_durability(&self) -> bool {
        self.inner.physical_durability()
    }

    fn verify(&self) -> Result<String> {
        self.inner.verify()
    }

    fn capabilities(&self) -> Vec<Capability> {
        let withheld = self.withheld.lock().unwrap_or_else(PoisonError::into_inner);
        let mut all = self.inner.capabilities();
        all.retain(|c| !withheld.contains(c));
        all
    }

    fn write(&self, f: &mut dyn FnMut(&mut dyn Tx) -> Result<()>) -> Result<()> {
        let n = self.writes.fetch_add(1, Ordering::Relaxed) + 1;
        let fault = self
            .plan
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .fault_for(n);
        let injected = |what: &str| format!("{}: injected fault: {what}", self.describe());
        match fault {
            None => self.inner.write(f),
            Some(Fault::FailBeforeCommit) => {
                let failure = Error::Unavailable(injected("failed before the commit"));
                let result = self.inner.write(&mut |tx| {
                    f(tx)?;
                    Err(failure.clone())
                });
                if result.as_ref().err() == Some(&failure) {
                    self.count(|i| i.failed_before_commit += 1);
                }
                result
            }
            Some(Fault::CommitThenReportFailure) => {
                self.inner.write(f)?;
                self.count(|i| i.reported_failure_after_commit += 1);
                Err(Error::Unavailable(injected(
                    "the commit was reported failed",
                )))
            }
            Some(Fault::CommitThenLoseAnswer) => {
                self.inner.write(f)?;
                self.count(|i| i.lost_answers += 1);
                Err(Error::OutcomeUnknown(injected(
                    "the commit's answer was lost",
                )))
            }
            Some(Fault::SlowCommit(pause)) => {
                self.inner.write(&mut |tx| {
                    f(tx)?;
                    std::thread::sleep(pause);
                    Ok(())
                })?;
                self.count(|i| i.slow_commits += 1);
                Ok(())
            }
            Some(Fault::Refuse) => {
                self.count(|i| i.refusals += 1);
                Err(Error::Refused(injected("the store refuses this process")))
            }
        }
    }

    fn read(&self, f: &mut dyn FnMut(&mut dyn Tx) -> Result<()>) -> Result<()> {
        if self.reads_cut.load(Ordering::Relaxed) {
            return Err(Error::Unavailable(format!(
                "{}: injected fault: reads are cut",
                self.describe()
            )));
        }
        self.inner.read(f)
    }

    fn write_stalls(&self) -> Result<Vec<ProcessStall>> {
        self.inner.write_stalls()
    }

    fn fit_concurrency(&self, callers: usize) {
        self.inner.fit_concurrency(callers);
    }

    fn change_token(&self) -> Result<u64> {
        self.inner.change_token()
    }

    fn commit_feed(&self) -> Result<Option<Box<dyn CommitFeed>>> {
        self.inner.commit_feed()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::clock::ManualClock;
    use crate::ids::SeededIds;
    use crate::store::memory::MemoryBackend;
    use crate::store::{Keyed, Store};

    fn faulty() -> (Arc<FaultyBackend>, Store) {
        let backend = Arc::new(FaultyBackend::new(Arc::new(MemoryBackend::new())));
        let store = Store::new(
            backend.clone(),
            Arc::new(ManualClock::new(1_000)),
            Arc::new(SeededIds::new(7)),
        );
        (backend, store)
    }

    fn always(fault: Fault) -> FaultPlan {
        FaultPlan {
            rules: vec![(1, fault)],
            ..FaultPlan::default()
        }
    }

    #[test]
    fn each_fault_commits_or_not_as_it_says() {
        let key = Keyed { key: None };
        for (fault, committed, code) in [
            (Fault::FailBeforeCommit, false, Some("STORE_UNAVAILABLE")),
            (
                Fault::CommitThenReportFailure,
                true,
                Some("STORE_UNAVAILABLE"),
            ),
            (Fault::CommitThenLoseAnswer, true, Some("OUTCOME_UNKNOWN")),
            (Fault::SlowCommit(Duration::from_millis(1)), true, None),
            (Fault::Refuse, false, Some("STORE_REFUSED")),
        ] {
            let (backend, store) = faulty();
            backend.plan(always(fault));
            let answer = store.acquire("r", "a", 1_000.0, key);
            assert_eq!(answer.as_ref().err().map(Error::code), code, "{fault:?}");
            let lease = store.lease("r").unwrap();
            assert_eq!(lease.is_some(), committed, "{fault:?}");
            assert_eq!(backend.writes(), 1);
        }
    }

    #[test]
    fn the_plan_counts_writes_and_the_first_matching_rule_wins() {
        let plan = FaultPlan {
            after: 2,
            until: None,
            rules: vec![
                (3, Fault::CommitThenLoseAnswer),
                (2, Fault::FailBeforeCommit),
            ],
        };
        let faults: Vec<_> = (1..=7).map(|n| plan.fault_for(n)).collect();
        assert_eq!(
            faults,
            [
                None,
                None,
                Some(Fault::CommitThenLoseAnswer),
                Some(Fault::FailBeforeCommit),
                None,
                Some(Fault::CommitThenLoseAnswer),
                None,
            ]
        );
        let once = FaultPlan::once(4, Fault::FailBeforeCommit);
        let faults: Vec<_> = (1..=6).map(|n| once.fault_for(n).is_some()).collect();
        assert_eq!(faults, [false, false, false, true, false, false]);
    }
}
