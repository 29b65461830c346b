//! `leasehold bench`: what a store drains and what the dashboard costs, measured through
//! the real code paths — the authority runtime, the store's fenced transactions, the
//! dashboard's read-and-render loop — never a shortcut around them.
//!
//! Every run ends in one [`Report`]: the store (kind, location without secrets, what is
//! durable when), the machine, the knobs and the measured figures, as a table for people
//! or one JSON object for machines, so figures from two runs can be compared.
//!
//! - [`work`]: enqueue no-op effects, drain them with K authorities;
//! - [`enqueue`]: single-item enqueue by one and by many producers, beside the fsync rate;
//! - [`bulk`]: the command line's `work enqueue --from FILE` beside the library's batches;
//! - [`workflows`]: start three-step workflows, run them to completion;
//! - [`dashboard`]: first frame, refresh latency and memory of the dashboard;
//! - [`fairness`]: schedules, workflows and a second handler behind one handler's backlog;
//!   [`slow_fast`]: a fast handler's backlog due together with a slow handler's.

pub mod bulk;
pub mod dashboard;
pub mod enqueue;
pub mod fairness;
mod fleet;
mod report;
pub mod slow_fast;
mod verdict;
pub mod work;
pub mod workflows;
mod written;

pub use fleet::{Fleet, FleetOptions};
pub use report::{Machine, Report, StoreFacts};
pub use verdict::{broken, check_after};

use std::ops::Range;
use std::time::{Duration, Instant};

use crate::authority::stats::Stats;
use crate::error::{Error, Result};
use crate::foundation::progress::Progress;
use crate::store::Store;

/// The build tag bench items are stamped with: only bench authorities claim them, so a
/// benchmark never touches a store's own work.
pub const BENCH_BUILD: &str = "bench";

/// Set (to anything) in the environment of `leasehold bench`, its stores write no chain
/// link and check no rewind witness: the store as it was written before the chain, so a
/// run with and a run without it give the chain's cost (`docs/BENCHMARKS.md`). Authority
/// processes the bench starts (`--processes`) are unaffected.
pub const UNCHAINED: &str = "LEASEHOLD_BENCH_UNCHAINED";

/// Opens the store at `url` (creating it) for a bench's writers: checked against this
/// host's rewind witness like every other writer, unless [`UNCHAINED`] is set.
///
/// # Errors
/// As [`crate::store::url::open`], and [`Store::with_host_witness`].
pub fn open_writer(url: &str) -> Result<Store> {
    let store = crate::store::url::open(url, crate::store::url::OpenMode::ReadWrite)?;
    if std::env::var_os(UNCHAINED).is_some() {
        return Ok(store.without_chain());
    }
    store.with_host_witness()
}

/// Refuses a store that already holds work or workflows: a benchmark writes thousands of
/// items and measures a drain to zero, so it runs on a scratch store.
///
/// # Errors
/// `INVALID` naming what the store holds; a store failure.
pub fn require_empty(store: &Store) -> Result<()> {
    let overview = store.overview()?;
    let work: u64 = overview.work.iter().map(|c| c.count).sum();
    let workflows: u64 = overview.workflows.iter().map(|(_, n)| n).sum();
    if work + workflows > 0 {
        return Err(Error::Invalid(format!(
            "{} holds {work} work items and {workflows} workflow instances: benchmarks write and drain their own items, so point them at an empty scratch store",
            store.describe()
        )));
    }
    Ok(())
}

/// Calls `done` every 20 ms until it answers `Some`; fails after `timeout`.
///
/// # Errors
/// `done`'s error, or `INVALID` after `timeout` naming `what`.
pub fn wait_for<T>(
    what: &str,
    timeout: Duration,
    done: impl FnMut() -> Result<Option<T>>,
) -> Result<T> {
    wait_every(what, timeout, Duration::from_millis(20), done)
}

/// [`wait_for`], calling `done` every `every`.
///
/// # Errors
/// As [`wait_for`].
fn wait_every<T>(
    what: &str,
    timeout: Duration,
    every: Duration,
    mut done: impl FnMut() -> Result<Option<T>>,
) -> Result<T> {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(value) = done()? {
            return Ok(value);
        }
        if Instant::now() >= deadline {
            return Err(Error::Invalid(format!(
                "{what} did not finish within {} s (raise --timeout-s)",
                timeout.as_secs()
            )));
        }
        std::thread::sleep(every);
    }
}

/// `count / seconds`, or 0 for an empty interval.
#[must_use]
pub fn rate(count: u64, elapsed: Duration) -> f64 {
    let secs = elapsed.as_secs_f64();
    if secs > 0.0 { count as f64 / secs } else { 0.0 }
}

/// How a creation phase went: the first items one per transaction, the rest in batches.
pub struct Created {
    pub single: (u64, Duration),
    pub batched: (u64, Duration),
}

impl Created {
    /// Reports both rates (a part with no items is left out).
    pub fn report(
        &self,
        report: &mut Report,
        single: [&'static str; 2],
        batched: [&'static str; 2],
        unit: &'static str,
    ) {
        for ((n, elapsed), [key, label]) in [(self.single, single), (self.batched, batched)] {
            if n > 0 {
                report.metric(key, label, rate(n, elapsed), unit);
            }
        }
    }
}

/// Creates `total` items: `one(i)` for the first `single`, then `many(range)` per batch of
/// `batch`, reporting `label` progress.
///
/// # Errors
/// The first failing call's.
pub fn create(
    label: &str,
    total: u64,
    single: u64,
    batch: u64,
    quiet: bool,
    mut one: impl FnMut(u64) -> Result<()>,
    mut many: impl FnMut(Range<u64>) -> Result<()>,
) -> Result<Created> {
    let single = single.min(total);
    let mut progress = Progress::new(quiet);
    let started = Instant::now();
    for i in 0..single {
        one(i)?;
        progress.count(label, i + 1, total);
    }
    let single_elapsed = started.elapsed();
    let started = Instant::now();
    let mut next = single;
    while next < total {
        let end = (next + batch.max(1)).min(total);
        many(next..end)?;
        next = end;
        progress.count(label, next, total);
    }
    progress.finish();
    Ok(Created {
        single: (single, single_elapsed),
        batched: (total - single, started.elapsed()),
    })
}

/// A fleet's run: how long it took, what its authorities counted, what the store committed
/// and what that wrote to durable storage.
pub struct FleetRun {
    pub elapsed: Duration,
    pub stats: Vec<Stats>,
    pub commits: u64,
    /// Bytes written across the run (`written.rs`), where the store can tell.
    pub written: Option<u64>,
    /// How `written` was measured.
    pub written_source: Option<&'static str>,
}

/// Starts `fleet` on `store`, waits until `done` counts `total`, stops the fleet.
///
/// # Errors
/// A fleet that cannot start or stop, a store failure, `timeout` passing first.
pub fn run_fleet(
    store: &Store,
    fleet: &FleetOptions,
    label: &str,
    total: u64,
    timeout: Duration,
    quiet: bool,
    done: impl Fn(&Store) -> Result<u64>,
) -> Result<FleetRun> {
    let revision_before = store.revision()?;
    let meter = written::Meter::start(store);
    let started = Instant::now();
    let mut running = Fleet::start(fleet, store)?;
    let mut progress = Progress::new(quiet);
    // The end is looked for every 2 ms: a run of half a second would otherwise be timed up
    // to 20 ms (4 %) long.
    let finished = wait_every(label, timeout, Duration::from_millis(2), || {
        running.check_running()?;
        let n = done(store)?;
        progress.count(label, n, total);
        Ok((n >= total).then_some(()))
    });
    progress.finish();
    let elapsed = started.elapsed();
    let written = meter.since(store, &running);
    let stats = running.stop();
    finished?;
    Ok(FleetRun {
        elapsed,
        stats: stats?,
        commits: store.revision()?.saturating_sub(revision_before),
        written,
        written_source: meter.source(),
    })
}
