//! `leasehold bench work`: enqueue N no-op effects — the first ones one per transaction,
//! the rest in batches — then drain them with K authorities through the real runtime
//! (batched claims, handlers on the worker pool, group-committed fenced completions).

use std::time::Duration;

use super::{FleetOptions, FleetRun, Report, StoreFacts, create, rate, run_fleet};
use crate::authority::stats::{Histogram, Stats};
use crate::authority::workload::{NOOP_BLOCKING_WORKLOAD, NOOP_HANDLER};
use crate::error::Result;
use crate::model::HandlerVersion;
use crate::model::WorkKind;
use crate::model::handler_key;
use crate::model::work::NewWork;
use crate::store::{Counter, RoundTrips, Store};

/// What to run.
#[derive(Debug, Clone)]
pub struct WorkBench {
    pub items: u64,
    /// Of the items, how many are enqueued one per transaction.
    pub single: u64,
    /// Items per transaction for the rest.
    pub enqueue_batch: usize,
    pub fleet: FleetOptions,
    pub timeout: Duration,
    pub quiet: bool,
}

/// Runs the benchmark on `store` (which must be empty).
///
/// # Errors
/// A non-empty store, unsafe knobs, a store failure, a drain that does not finish.
pub fn run(store: &Store, bench: &WorkBench) -> Result<Report> {
    super::require_empty(store)?;
    let compat = handler_key(NOOP_HANDLER, &HandlerVersion::demo());
    let mut report = Report::new("work", StoreFacts::of(store));
    report.knob("items", bench.items);
    report.knob("singleEnqueues", bench.single.min(bench.items));
    report.knob("enqueueBatch", bench.enqueue_batch);
    knobs(&mut report, &bench.fleet);
    handler_knob(&mut report, &bench.fleet);

    let spec = |i: u64| NewWork::effect(format!("bench-{i:09}"), NOOP_HANDLER, "{}");
    create(
        "enqueue",
        bench.items,
        bench.single,
        bench.enqueue_batch as u64,
        bench.quiet,
        |i| store.enqueue(spec(i), &compat).map(drop),
        |range| {
            store
                .enqueue_batch(range.map(spec).collect(), &compat)
                .map(drop)
        },
    )?
    .report(
        &mut report,
        ["enqueueSinglePerSec", "enqueue, one item per commit"],
        ["enqueueBatchedPerSec", "enqueue, batched"],
        "items/s",
    );

    let run = run_fleet(
        store,
        &bench.fleet,
        "drain",
        bench.items,
        bench.timeout,
        bench.quiet,
        |store| terminal_effects(store, &compat),
    )?;
    report.metric(
        "drainPerSec",
        "drain (claim + fenced complete)",
        rate(bench.items, run.elapsed),
        "items/s",
    );
    fleet_metrics(&mut report, &run);
    written_per(
        &mut report,
        &run,
        bench.items,
        ["bytesWrittenPerItem", "bytes written per drained item"],
    );
    super::check_after(store, &mut report)?;
    Ok(report)
}

/// The fleet's knobs, shared by the work and workflow benches.
pub(super) fn knobs(report: &mut Report, fleet: &FleetOptions) {
    report.knob("authorities", fleet.authorities);
    report.knob(
        "mode",
        if fleet.processes {
            "processes"
        } else {
            "in-process"
        },
    );
    report.knob("concurrency", fleet.concurrency);
    report.knob("claimBatch", fleet.batch);
    report.knob("leaseMs", fleet.lease_ms);
    report.knob("pollMs", fleet.poll_ms);
    report.knob("stepAside", fleet.step_aside.as_str());
}

/// Whether the no-op handler the fleet runs is async or blocking (`--blocking-handler`).
pub(super) fn handler_knob(report: &mut Report, fleet: &FleetOptions) {
    let kind = if fleet.workload == NOOP_BLOCKING_WORKLOAD {
        "blocking"
    } else {
        "async"
    };
    report.knob("handler", kind);
}

/// What the authorities did while they ran, from their own counters, and what it cost
/// the store.
pub(super) fn fleet_metrics(report: &mut Report, run: &FleetRun) {
    let (elapsed, stats, commits) = (run.elapsed, &run.stats, run.commits);
    let mut latency = Histogram::default();
    let mut renew = Histogram::default();
    for s in stats {
        latency.merge(&s.finish_latency_ms);
        if let Some(calls) = s.store_call_ms.get("renew") {
            renew.merge(calls);
        }
    }
    let sum = |f: fn(&Stats) -> u64| stats.iter().map(f).sum::<u64>();
    let trips: RoundTrips = stats.iter().filter_map(|s| s.write_round_trips).sum();
    if let Some(per_write) = trips.per_write() {
        report.metric(
            "roundTripsPerWrite",
            "round trips per authority write (the write lock held across them)",
            (per_write * 10.0).round() / 10.0,
            "",
        );
    }
    if let Some(held) = trips.held_ms_per_write() {
        report.metric(
            "lockHeldMsPerWrite",
            "write lock held per authority write, as the authority sees it",
            (held * 100.0).round() / 100.0,
            "ms",
        );
    }
    report.metric("elapsedSeconds", "run time", elapsed.as_secs_f64(), "s");
    // The tail with N claimers is what the fleet is tuned for: the median, the p99 and the
    // worst item, and how long a renewal (which keeps every claim alive) took meanwhile.
    for (key, label, histogram, p) in [
        (
            "claimToCompleteP50Ms",
            "claim to complete, p50",
            &latency,
            50,
        ),
        (
            "claimToCompleteP99Ms",
            "claim to complete, p99",
            &latency,
            99,
        ),
        (
            "claimToCompleteMaxMs",
            "claim to complete, max",
            &latency,
            100,
        ),
        ("renewP50Ms", "renew call, p50", &renew, 50),
        ("renewP99Ms", "renew call, p99", &renew, 99),
        ("renewMaxMs", "renew call, max", &renew, 100),
    ] {
        report.metric(
            key,
            label,
            histogram.percentile(p).unwrap_or(0) as f64,
            "ms",
        );
    }
    report.metric("claims", "claims", sum(|s| s.claims) as f64, "");
    report.metric(
        "completions",
        "completions accepted",
        sum(|s| s.completions) as f64,
        "",
    );
    report.metric(
        "fencedRejections",
        "fenced writes refused",
        sum(|s| s.fenced_writes_refused) as f64,
        "",
    );
    report.metric(
        "lockStepAsides",
        "polls that stepped aside from a long write-lock queue",
        sum(|s| s.lock_step_asides) as f64,
        "",
    );
    report.metric("storeCommits", "store commits", commits as f64, "");
    report.metric(
        "commitsPerSec",
        "store commit rate",
        rate(commits, elapsed),
        "commits/s",
    );
}

/// What the run wrote per unit of work (`written.rs`), and how that was measured.
pub(super) fn written_per(
    report: &mut Report,
    run: &FleetRun,
    units: u64,
    [key, label]: [&'static str; 2],
) {
    let Some(bytes) = run.written else { return };
    report.metric("bytesWritten", "bytes written", bytes as f64, "B");
    if units > 0 {
        report.metric(key, label, (bytes as f64 / units as f64).round(), "B");
    }
    if run.commits > 0 {
        report.metric(
            "bytesWrittenPerCommit",
            "bytes written per commit",
            (bytes as f64 / run.commits as f64).round(),
            "B",
        );
    }
    if let Some(source) = run.written_source {
        report.note(source);
    }
}

/// Effects of `compat` that reached a terminal state, from the incremental counters.
fn terminal_effects(store: &Store, compat: &str) -> Result<u64> {
    store.read(|tx| {
        let mut terminal = 0;
        for (name, n) in tx.counters(&Counter::work_prefix(WorkKind::Effect))? {
            if let Counter::Work {
                state, compat: c, ..
            } = Counter::parse(&name)?
                && state.is_terminal()
                && c == compat
            {
                terminal += u64::try_from(n).unwrap_or(0);
            }
        }
        Ok(terminal)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::url::{OpenMode, open};

    fn small(workload: &str) -> WorkBench {
        WorkBench {
            items: 300,
            single: 50,
            enqueue_batch: 100,
            fleet: FleetOptions::in_memory(2, workload, 16, 5),
            timeout: Duration::from_secs(120),
            quiet: true,
        }
    }

    #[test]
    fn a_small_drain_on_memory_reports_every_item_once() {
        let store = open("memory", OpenMode::ReadWrite).expect("memory opens");
        let bench = small(NOOP_HANDLER);
        let report = run(&store, &bench).expect("the bench runs");
        assert_eq!(report.knob_value("handler"), Some("async"));
        assert_eq!(report.value("completions"), Some(300.0));
        assert_eq!(report.value("fencedRejections"), Some(0.0));
        assert!(report.value("drainPerSec").is_some_and(|r| r > 0.0));
        assert!(report.value("storeCommits").is_some_and(|c| c > 0.0));
        assert!(report.value("enqueueSinglePerSec").is_some());
        assert_eq!(report.value("checkViolations"), Some(0.0));
        assert_eq!(report.value("checkHistoryGaps"), Some(0.0));
        // Nothing durable under a memory store, so no bytes-written figure.
        assert_eq!(report.value("bytesWrittenPerItem"), None);
        // A second run refuses: the store is no longer empty.
        let err = run(&store, &bench).expect_err("refused");
        assert!(err.to_string().contains("scratch store"), "{err}");
    }

    #[test]
    fn the_blocking_no_op_drains_every_item_once_too() {
        let store = open("memory", OpenMode::ReadWrite).expect("memory opens");
        let report = run(&store, &small(NOOP_BLOCKING_WORKLOAD)).expect("the bench runs");
        assert_eq!(report.knob_value("handler"), Some("blocking"));
        assert_eq!(report.value("completions"), Some(300.0));
        assert_eq!(report.value("checkViolations"), Some(0.0));
    }
}
