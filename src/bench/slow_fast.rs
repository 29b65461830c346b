//! `leasehold bench fairness --case slow-fast`: whether a fast handler's backlog drains at
//! its own pace beside a slow handler's. One authority drains `fast_items` effects of a
//! handler that takes `fast_ms` alone, then the same number again due together with
//! `slow_items` effects of a handler that takes `slow_ms`. The report gives the time from
//! the instant the fast backlog fell due to its last success, alone and together, and
//! their ratio: slots shared by claim count would leave the slow attempts holding nearly
//! every slot and the ratio near the slow handler's pace; shared by occupancy
//! (`store/fair_share.rs`) the fast handler keeps its half of the slots, about 2×.
//!
//! Both backlogs are enqueued ahead of their due instant (a producer's wait for the store's
//! write lock is not the claimer's), and the finish is read back from the items' rows: the
//! latest success of the run's fast items. The slow backlog may outlast the run: the fleet
//! stops once the fast one is done, and what is left of the slow one stays pending.

use std::sync::Arc;
use std::time::Duration;

use super::work::knobs;
use super::{Fleet, FleetOptions, Report, StoreFacts, wait_for};
use crate::authority::handlers::{Attempt, HandlerOutcome, Workload};
use crate::clock::Millis;
use crate::error::{Error, Result};
use crate::model::work::{NewWork, WorkFilter};
use crate::model::{HandlerVersion, PageRequest, WorkState};
use crate::store::Store;

/// The slow handler.
pub const SLOW_HANDLER: &str = "bench-slow";
/// The fast handler.
pub const FAST_HANDLER: &str = "bench-fast";
/// How long before their due instant the backlogs are enqueued.
const LEAD_MS: Millis = 1_000;

/// What to run.
#[derive(Debug, Clone)]
pub struct SlowFastBench {
    pub slow_items: u64,
    pub fast_items: u64,
    /// How long one slow attempt takes.
    pub slow: Duration,
    /// How long one fast attempt takes.
    pub fast: Duration,
    /// One authority (`authorities` is forced to 1).
    pub fleet: FleetOptions,
    pub timeout: Duration,
}

/// The two handlers: each sleeps its attempt's time and succeeds.
fn workload(bench: &SlowFastBench) -> Workload {
    let mut work = Workload::new("bench-slow-fast", 0);
    for (name, takes) in [(SLOW_HANDLER, bench.slow), (FAST_HANDLER, bench.fast)] {
        work.register_async(
            name,
            HandlerVersion::demo(),
            Arc::new(move |_: Attempt| async move {
                tokio::time::sleep(takes).await;
                HandlerOutcome::Succeeded(None)
            }),
        );
    }
    work
}

/// Runs the benchmark on `store` (which must be empty).
///
/// # Errors
/// A non-empty store, no fast items, unsafe knobs, a store failure, a fast backlog that
/// does not drain within the timeout.
pub fn run(store: &Store, bench: &SlowFastBench) -> Result<Report> {
    super::require_empty(store)?;
    if bench.fast_items == 0 {
        return Err(Error::Invalid("--fast-items must be positive".into()));
    }
    let fleet = FleetOptions {
        authorities: 1,
        ..bench.fleet.clone()
    };
    let work = workload(bench);
    let mut report = Report::new("fairness", StoreFacts::of(store));
    report.knob("case", "slow-fast");
    report.knob("slowItems", bench.slow_items);
    report.knob("fastItems", bench.fast_items);
    report.knob("slowMs", bench.slow.as_secs_f64() * 1e3);
    report.knob("fastMs", bench.fast.as_secs_f64() * 1e3);
    knobs(&mut report, &fleet);

    let running = Fleet::start_with(&fleet, store, work.clone())?;
    let outcome = measure(store, bench, &work, &mut report);
    let stopped = running.stop();
    outcome?;
    stopped?;
    super::check_after(store, &mut report)?;
    Ok(report)
}

/// Both runs, then the report's figures.
fn measure(
    store: &Store,
    bench: &SlowFastBench,
    work: &Workload,
    report: &mut Report,
) -> Result<()> {
    let alone = drain(store, bench, work, "alone", 0)?;
    let together = drain(store, bench, work, "together", bench.slow_items)?;
    report.metric(
        "fastAloneMs",
        "fast backlog alone: due to last success",
        alone.fast_ms as f64,
        "ms",
    );
    report.metric(
        "fastTogetherMs",
        "fast backlog beside the slow one: due to last success",
        together.fast_ms as f64,
        "ms",
    );
    let ratio = if alone.fast_ms > 0 {
        together.fast_ms as f64 / alone.fast_ms as f64
    } else {
        0.0
    };
    report.metric(
        "fastTogetherRatio",
        "together / alone (the target: within 3)",
        ratio,
        "x",
    );
    report.metric(
        "slowDoneMeanwhile",
        "slow items finished while the fast backlog drained",
        together.slow_done as f64,
        "",
    );
    Ok(())
}

/// What one run measured.
struct Drained {
    fast_ms: Millis,
    slow_done: u64,
}

/// Enqueues `slow` slow items and the fast backlog, all due together `LEAD_MS` from now
/// (ids prefixed by `prefix`), and waits for the fast backlog to succeed.
fn drain(
    store: &Store,
    bench: &SlowFastBench,
    work: &Workload,
    prefix: &str,
    slow: u64,
) -> Result<Drained> {
    let due = store.now() + LEAD_MS;
    let spec = |handler: &str, i: u64| NewWork {
        not_before: Some(due),
        ..NewWork::effect(format!("{prefix}-{handler}-{i:09}"), handler, "{}")
    };
    let fast_before = succeeded(store, work, FAST_HANDLER)?;
    let slow_before = succeeded(store, work, SLOW_HANDLER)?;
    let specs: Vec<NewWork> = (0..slow)
        .map(|i| spec(SLOW_HANDLER, i))
        .chain((0..bench.fast_items).map(|i| spec(FAST_HANDLER, i)))
        .collect();
    store.enqueue_batch(specs, work)?;
    let target = fast_before + bench.fast_items;
    let slow_done = wait_for(&format!("the {prefix} fast backlog"), bench.timeout, || {
        if succeeded(store, work, FAST_HANDLER)? < target {
            return Ok(None);
        }
        Ok(Some(succeeded(store, work, SLOW_HANDLER)? - slow_before))
    })?;
    let last = last_success(store, &format!("{prefix}-{FAST_HANDLER}-"))?;
    Ok(Drained {
        fast_ms: (last - due).max(0),
        slow_done,
    })
}

/// How many of `handler`'s effects have succeeded, from the store's counters.
fn succeeded(store: &Store, work: &Workload, handler: &str) -> Result<u64> {
    let key = work.key_for(handler).unwrap_or_default();
    Ok(store
        .overview()?
        .work
        .iter()
        .filter(|c| c.compat == key && c.state == WorkState::Succeeded)
        .map(|c| c.count)
        .sum())
}

/// The latest success among the items whose ids start with `prefix`.
fn last_success(store: &Store, prefix: &str) -> Result<Millis> {
    let filter = WorkFilter {
        states: vec![WorkState::Succeeded],
        id_prefix: Some(prefix.to_owned()),
        ..WorkFilter::default()
    };
    let mut last = 0;
    let mut page = PageRequest::first(1_000);
    loop {
        let rows = store.list_work(&filter, &page)?;
        last = rows
            .rows
            .iter()
            .map(|w| w.updated_at)
            .fold(last, Millis::max);
        match rows.next {
            Some(next) => page = PageRequest::resume(Some(&next), 1_000),
            None => return Ok(last),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::url::{OpenMode, open};

    #[test]
    fn a_small_run_on_memory_reports_both_finishes() {
        let store = open("memory", OpenMode::ReadWrite).expect("memory opens");
        let bench = SlowFastBench {
            slow_items: 40,
            fast_items: 200,
            slow: Duration::from_millis(50),
            fast: Duration::from_millis(1),
            fleet: FleetOptions::in_memory(1, FAST_HANDLER, 8, 10),
            timeout: Duration::from_secs(120),
        };
        let report = run(&store, &bench).expect("the bench runs");
        for key in ["fastAloneMs", "fastTogetherMs", "fastTogetherRatio"] {
            assert!(
                report.value(key).is_some_and(|v| v > 0.0),
                "{key}: {}",
                report.to_text()
            );
        }
    }
}
