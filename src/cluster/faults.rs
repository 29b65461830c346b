//! Fault injection for the embedded cluster: what can go wrong, and the handler wrapper
//! that makes handlers slow or failing on demand.
//!
//! Crash (the authority vanishes, nothing released: its claims lapse and are reclaimed),
//! pause past lease expiry then resume (its late writes must be refused), store outage
//! ([`crate::store::memory::MemoryBackend::set_outage`]), slow and failing handlers, clock
//! skew between authorities, rolling deploy to a new build (a new compatibility key), and
//! bringing an authority of some build back.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use rand::Rng;
use serde::Serialize;

use crate::authority::handlers::{AttemptContext, BlockingHandler, HandlerOutcome};
use crate::clock::{Millis, format_duration};

/// Which authority a fault hits, resolved when it fires.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// The authority at this position (in start order).
    Node(usize),
    /// The running authority that owns the most jobs (ties: the first).
    Busiest,
    /// A running authority chosen by the scenario's generator.
    Random,
    /// The running authority holding the most cursor and workflow claims (then the most
    /// jobs): a stall there is sure to meet a successor's newer generation, since those
    /// claims never become terminal under it.
    Stallable,
}

impl Target {
    fn describe(&self) -> String {
        match self {
            Self::Node(i) => format!("auth-{}", i + 1),
            Self::Busiest => "the busiest authority".into(),
            Self::Random => "a random authority".into(),
            Self::Stallable => "the authority holding the most cursor and workflow claims".into(),
        }
    }
}

/// One fault, scheduled by a scenario or applied by hand.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fault {
    /// Stop without releasing anything.
    Crash(Target),
    /// Freeze for `for_ms`, then resume.
    Pause { target: Target, for_ms: Millis },
    /// Every store call fails for `for_ms`.
    Outage { for_ms: Millis },
    /// Handlers take `factor_pct`% of their normal time for `for_ms`.
    SlowHandlers { factor_pct: u64, for_ms: Millis },
    /// Handlers fail retryably with probability `per_mille`‰ for `for_ms`.
    FailingHandlers { per_mille: u64, for_ms: Millis },
    /// Sets the target's clock offset.
    Skew { target: Target, offset_ms: Millis },
    /// Every authority's clock back to the shared time.
    ResetSkew,
    /// Rolling deploy: every authority of another build is replaced, one per `step_ms`,
    /// by one of `build`; the workload creates new work under `build` from now on.
    RollOut { build: String, step_ms: Millis },
    /// Starts one more authority (of `build`, or the current build).
    AddAuthority { build: Option<String> },
    /// Stops the target cleanly (finishes what runs within the grace, abandons what still
    /// runs, releases the rest).
    Stop(Target),
}

impl Fault {
    /// One line for the report's fault timeline.
    #[must_use]
    pub fn describe(&self) -> String {
        match self {
            Self::Crash(t) => format!("crash {}", t.describe()),
            Self::Pause { target, for_ms } => format!(
                "pause {} for {}",
                target.describe(),
                format_duration(*for_ms)
            ),
            Self::Outage { for_ms } => format!("store outage for {}", format_duration(*for_ms)),
            Self::SlowHandlers { factor_pct, for_ms } => format!(
                "handlers at {factor_pct}% time for {}",
                format_duration(*for_ms)
            ),
            Self::FailingHandlers { per_mille, for_ms } => format!(
                "handlers fail {per_mille}‰ for {}",
                format_duration(*for_ms)
            ),
            Self::Skew { target, offset_ms } => {
                format!("skew {} by {offset_ms:+}ms", target.describe())
            }
            Self::ResetSkew => "clocks back in sync".into(),
            Self::RollOut { build, step_ms } => format!(
                "roll out build {build} (one authority per {})",
                format_duration(*step_ms)
            ),
            Self::AddAuthority { build } => format!(
                "add an authority{}",
                build
                    .as_ref()
                    .map(|b| format!(" of build {b}"))
                    .unwrap_or_default()
            ),
            Self::Stop(t) => format!("stop {} cleanly", t.describe()),
        }
    }
}

/// One applied fault, for the report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FaultRecord {
    /// Offset from the start of the run.
    pub at_ms: Millis,
    pub what: String,
}

/// Cluster-wide handler fault knobs, shared by every [`FaultyHandler`].
#[derive(Debug)]
pub struct HandlerFaults {
    slow_pct: AtomicU64,
    fail_per_mille: AtomicU64,
}

impl Default for HandlerFaults {
    fn default() -> Self {
        Self {
            slow_pct: AtomicU64::new(100),
            fail_per_mille: AtomicU64::new(0),
        }
    }
}

impl HandlerFaults {
    pub fn set_slow(&self, pct: u64) {
        self.slow_pct.store(pct.max(1), Ordering::SeqCst);
    }

    pub fn set_failing(&self, per_mille: u64) {
        self.fail_per_mille
            .store(per_mille.min(1000), Ordering::SeqCst);
    }

    /// Back to normal.
    pub fn clear(&self) {
        self.set_slow(100);
        self.set_failing(0);
    }

    /// Wraps `inner` so it obeys these knobs.
    #[must_use]
    pub fn wrap(self: &Arc<Self>, inner: Arc<dyn BlockingHandler>) -> Arc<dyn BlockingHandler> {
        Arc::new(FaultyHandler {
            inner,
            faults: self.clone(),
        })
    }
}

/// A handler that runs its inner handler, then takes longer and/or fails as the shared
/// [`HandlerFaults`] say. An injected failure comes after the inner handler ran: like a
/// real timeout, the effect may have happened.
pub struct FaultyHandler {
    inner: Arc<dyn BlockingHandler>,
    faults: Arc<HandlerFaults>,
}

impl BlockingHandler for FaultyHandler {
    fn run(&self, attempt: &AttemptContext) -> HandlerOutcome {
        let before = attempt.spent();
        let outcome = self.inner.run(attempt);
        let pct = self.faults.slow_pct.load(Ordering::SeqCst);
        if pct > 100 {
            let taken = (attempt.spent() - before).max(10);
            attempt.spend(taken.saturating_mul(Millis::try_from(pct - 100).unwrap_or(0)) / 100);
        }
        let fail = self.faults.fail_per_mille.load(Ordering::SeqCst);
        if fail > 0
            && matches!(outcome, HandlerOutcome::Succeeded(_))
            && attempt.rng("fault").random_range(0..1000) < fail
        {
            return HandlerOutcome::retryable(
                "INJECTED_FAILURE",
                format!("{} failed by fault injection", attempt.handler),
            );
        }
        outcome
    }
}
