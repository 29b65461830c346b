//! `leasehold bench`: what a store drains and what the dashboard costs, measured through
//! the real code paths — the authority runtime, the store's fenced transactions, the
//! dashboard's read-and-render loop — never a shortcut around them.
//!
//! Every run ends in one [`Report`]: the store (kind, location without secrets, what is
//! durable when), the machine, the knobs and the measured figures, as a table for people
//! or one JSON object for machines, so figures from two runs can be compared.
//!
//! - [`work`]: enqueue no-op effects, drain them with K authorities;
//! - [`workflows`]: start three-step workflows, run them to completion;
//! - [`dashboard`]: first frame, refresh latency and memory of the dashboard.

pub mod dashboard;
mod fleet;
mod progress;
mod report;
pub mod work;
pub mod workflows;

pub use fleet::{Fleet, FleetOptions};
pub use progress::Progress;
pub use report::{Machine, Report, StoreFacts};

use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::store::Store;

/// The build tag bench items are stamped with: only bench authorities claim them, so a
/// benchmark never touches a store's own work.
pub const BENCH_BUILD: &str = "bench";

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

/// Calls `done` every 20 ms until it answers `Some`, reporting `progress`; fails after
/// `timeout`.
///
/// # Errors
/// `done`'s error, or `INVALID` after `timeout` naming `what`.
pub fn wait_for<T>(
    what: &str,
    timeout: Duration,
    progress: &mut Progress,
    mut done: impl FnMut(&mut Progress) -> Result<Option<T>>,
) -> Result<T> {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(value) = done(progress)? {
            progress.finish();
            return Ok(value);
        }
        if Instant::now() >= deadline {
            progress.finish();
            return Err(Error::Invalid(format!(
                "{what} did not finish within {} s (raise --timeout-s)",
                timeout.as_secs()
            )));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// `count / seconds`, or 0 for an empty interval.
#[must_use]
pub fn rate(count: u64, elapsed: Duration) -> f64 {
    let secs = elapsed.as_secs_f64();
    if secs > 0.0 { count as f64 / secs } else { 0.0 }
}
