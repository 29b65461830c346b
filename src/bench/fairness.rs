//! `leasehold bench fairness`: what a deep backlog of one handler does to everything else.
//! One authority runs a schedule, a stream of three-step workflows and a stream of a second
//! handler's effects twice for the same window: first on an idle store, then behind a
//! backlog of `items` effects of one handler. The report puts the two runs side by side:
//! the p99 lateness of the schedule's firings, the p99 latency of a workflow step and the
//! p99 wait of the second handler's effects, and how fast the backlog drained meanwhile.
//!
//! Every figure is read back from the store's own rows after the run, never from the
//! authority's counters: a firing's lateness is its claim instant − its due instant (now −
//! due if it was never claimed), an effect's wait is its claim instant − its due instant, a
//! step's latency is the time from the previous step's success to its own, as the
//! instance's history records them. The first step of each instance is left out: its start
//! is stamped when the producer began its write, before it waited for the store's write
//! lock — a producer's wait, not the claimer's (the second handler's effects are enqueued
//! ahead of their due instants for the same reason).

use std::time::{Duration, Instant};

use serde_json::Map;

use super::work::knobs;
use super::workflows::{THREE_STEPS, catalog};
use super::{Fleet, FleetOptions, Report, StoreFacts, create, rate, wait_for};
use crate::authority::handlers::{AttemptContext, HandlerOutcome, Workload};
use crate::authority::stats::percentile;
use crate::authority::workload::NOOP_HANDLER;
use crate::clock::Millis;
use crate::error::{Error, Result};
use crate::model::schedule::{CatchUp, Trigger};
use crate::model::work::{NewWork, WorkFilter};
use crate::model::{PageRequest, WorkItem, WorkKind, WorkState};
use crate::store::Store;
use crate::workflow::engine::NewInstance;
use crate::workflow::machine::HistoryKind;

/// The backlog's handler: the flood every other lane must not wait behind.
pub const BACKLOG_HANDLER: &str = NOOP_HANDLER;
/// The second handler, whose effects arrive while the backlog drains.
pub const SECOND_HANDLER: &str = "bench-second";
/// The schedule's handler.
pub const SCHEDULE_HANDLER: &str = "bench-tick";
/// The schedule.
const SCHEDULE_ID: &str = "bench-fairness";
/// Backlog effects enqueued per transaction.
const ENQUEUE_BATCH: u64 = 1_000;

/// What to run.
#[derive(Debug, Clone)]
pub struct FairnessBench {
    /// Effects of [`BACKLOG_HANDLER`] enqueued before the second run.
    pub items: u64,
    /// The schedule's interval.
    pub schedule_ms: Millis,
    /// How long each run lasts.
    pub window: Duration,
    /// Workflows started, and second-handler effects enqueued, per second (each).
    pub per_second: u64,
    /// One authority (`authorities` is forced to 1).
    pub fleet: FleetOptions,
    pub timeout: Duration,
    pub quiet: bool,
}

/// The figures of one run.
struct Figures {
    schedule_late: Vec<Millis>,
    step_latency: Vec<Millis>,
    second_wait: Vec<Millis>,
}

/// The handlers the bench's one authority runs: all no-ops.
fn workload() -> Workload {
    let ok = |_: &AttemptContext| HandlerOutcome::Succeeded(None);
    Workload::new("bench-fairness", 0)
        .with(NOOP_HANDLER, ok)
        .with(SECOND_HANDLER, ok)
        .with(SCHEDULE_HANDLER, ok)
}

/// Runs the benchmark on `store` (which must be empty).
///
/// # Errors
/// A non-empty store, unsafe knobs, a store failure, a run whose work does not finish
/// within the timeout.
pub fn run(store: &Store, bench: &FairnessBench) -> Result<Report> {
    super::require_empty(store)?;
    if bench.per_second == 0 || bench.window.is_zero() || bench.schedule_ms <= 0 {
        return Err(Error::Invalid(
            "--per-second, --window-s and --schedule-ms must be positive".into(),
        ));
    }
    let fleet = FleetOptions {
        authorities: 1,
        ..bench.fleet.clone()
    };
    let work = workload();
    let mut report = Report::new("fairness", StoreFacts::of(store));
    report.knob("items", bench.items);
    report.knob("scheduleMs", bench.schedule_ms);
    report.knob("windowSeconds", bench.window.as_secs_f64());
    report.knob("perSecond", bench.per_second);
    knobs(&mut report, &fleet);

    let definition = store
        .deploy_workflow(THREE_STEPS, &catalog())?
        .map_err(|d| {
            Error::Invalid(format!(
                "the bench workflow does not validate: {}",
                d.first().map(ToString::to_string).unwrap_or_default()
            ))
        })?;
    store.create_schedule(
        SCHEDULE_ID,
        Trigger::Interval {
            every_ms: bench.schedule_ms,
        },
        CatchUp::All,
        SCHEDULE_HANDLER,
        "{}",
        &work.key_for(SCHEDULE_HANDLER).unwrap_or_default(),
    )?;
    let running = Fleet::start_with(&fleet, store, work.clone())?;
    let outcome = measure(store, bench, &work, &definition.workflow_id, &mut report);
    let stopped = running.stop();
    outcome?;
    stopped?;
    super::check_after(store, &mut report)?;
    Ok(report)
}

/// Both runs, then the report's figures.
fn measure(
    store: &Store,
    bench: &FairnessBench,
    work: &Workload,
    workflow_id: &str,
    report: &mut Report,
) -> Result<()> {
    let idle = stream(store, bench, work, workflow_id, "idle")?;
    settle(store, bench, "idle")?;

    create(
        "backlog",
        bench.items,
        0,
        ENQUEUE_BATCH,
        bench.quiet,
        |_| Ok(()),
        |range| {
            let specs = range
                .map(|i| NewWork::effect(format!("bench-backlog-{i:09}"), BACKLOG_HANDLER, "{}"))
                .collect();
            store.enqueue_batch(specs, work).map(drop)
        },
    )?;
    let drained_before = backlog_done(store)?;
    let loaded = stream(store, bench, work, workflow_id, "backlog")?;
    let drained = backlog_done(store)?.saturating_sub(drained_before);
    settle(store, bench, "backlog")?;

    let idle = figures(store, &idle)?;
    let loaded = figures(store, &loaded)?;
    let p99 = |v: &[Millis]| percentile(v, 99).unwrap_or(0) as f64;
    report.metric(
        "idleScheduleLatenessP99Ms",
        "idle: schedule firing lateness, p99",
        p99(&idle.schedule_late),
        "ms",
    );
    report.metric(
        "backlogScheduleLatenessP99Ms",
        "backlog: schedule firing lateness, p99",
        p99(&loaded.schedule_late),
        "ms",
    );
    report.metric(
        "idleStepLatencyP99Ms",
        "idle: workflow step latency, p99",
        p99(&idle.step_latency),
        "ms",
    );
    report.metric(
        "backlogStepLatencyP99Ms",
        "backlog: workflow step latency, p99",
        p99(&loaded.step_latency),
        "ms",
    );
    report.metric(
        "idleSecondHandlerWaitP99Ms",
        "idle: second handler's wait, p99",
        p99(&idle.second_wait),
        "ms",
    );
    report.metric(
        "backlogSecondHandlerWaitP99Ms",
        "backlog: second handler's wait, p99",
        p99(&loaded.second_wait),
        "ms",
    );
    for (key, label, n) in [
        (
            "firingsMeasured",
            "schedule firings measured (idle + backlog)",
            idle.schedule_late.len() + loaded.schedule_late.len(),
        ),
        (
            "stepsMeasured",
            "workflow steps measured (idle + backlog)",
            idle.step_latency.len() + loaded.step_latency.len(),
        ),
        (
            "secondHandlerMeasured",
            "second handler's effects measured (idle + backlog)",
            idle.second_wait.len() + loaded.second_wait.len(),
        ),
    ] {
        report.metric(key, label, n as f64, "");
    }
    report.metric(
        "backlogDrainPerSec",
        "backlog drained during the window",
        rate(drained, bench.window),
        "items/s",
    );
    Ok(())
}

/// One run: what it started and when (store time).
struct Run {
    prefix: &'static str,
    from: Millis,
    to: Millis,
}

/// For `bench.window`, starts `per_second` workflows a second, spread evenly, and has as
/// many second-handler effects a second fall due. The effects are enqueued up front, each
/// not before its instant: their wait is then measured from an instant they were surely
/// visible at (a producer's own wait for the store's write lock is not the claimer's).
/// Ids are prefixed by `prefix`.
fn stream(
    store: &Store,
    bench: &FairnessBench,
    work: &Workload,
    workflow_id: &str,
    prefix: &'static str,
) -> Result<Run> {
    let gap = Duration::from_secs(1) / u32::try_from(bench.per_second).unwrap_or(u32::MAX);
    let gap_ms = Millis::try_from(gap.as_millis()).unwrap_or(Millis::MAX);
    let lead: Millis = 1_000;
    let due_from = store.now() + lead;
    let effects = bench.window.as_millis() / gap.as_millis().max(1);
    let specs: Vec<NewWork> = (0..u64::try_from(effects).unwrap_or(0))
        .map(|i| NewWork {
            not_before: Some(due_from + gap_ms * Millis::try_from(i).unwrap_or(0)),
            ..NewWork::effect(format!("{prefix}-second-{i:07}"), SECOND_HANDLER, "{}")
        })
        .collect();
    store.enqueue_batch(specs, work)?;
    while store.now() < due_from {
        std::thread::sleep(Duration::from_millis(10));
    }
    let from = store.now();
    let started = Instant::now();
    let mut n: u32 = 0;
    while started.elapsed() < bench.window {
        store.start_workflows(
            &[NewInstance {
                workflow_id,
                args: Map::new(),
                principal: "bench",
                idempotency_key: Some(&format!("{prefix}-wf-{n:07}")),
            }],
            work.handler_versions(),
        )?;
        n += 1;
        let next = gap * n;
        if let Some(rest) = next.checked_sub(started.elapsed()) {
            std::thread::sleep(rest);
        }
    }
    Ok(Run {
        prefix,
        from,
        to: store.now(),
    })
}

/// Waits until the run's second-handler effects and workflows have all finished (the
/// backlog itself may still be draining).
fn settle(store: &Store, bench: &FairnessBench, label: &str) -> Result<()> {
    wait_for(&format!("the {label} run's work"), bench.timeout, || {
        let second = list(store, WorkKind::Effect, |w| w.handler == SECOND_HANDLER)?;
        let open_work = second.iter().any(|w| !w.state.is_terminal());
        let open_flows = store.overview()?.workflows.iter().any(|(status, n)| {
            *n > 0 && !matches!(status.as_str(), "completed" | "failed" | "cancelled")
        });
        Ok((!open_work && !open_flows).then_some(()))
    })
}

/// Backlog effects that reached a terminal state, from the incremental counters.
fn backlog_done(store: &Store) -> Result<u64> {
    Ok(store
        .overview()?
        .work
        .iter()
        .filter(|c| c.kind == WorkKind::Effect && c.state.is_terminal())
        .map(|c| c.count)
        .sum::<u64>()
        .saturating_sub(
            list(store, WorkKind::Effect, |w| {
                w.handler == SECOND_HANDLER && w.state.is_terminal()
            })?
            .len() as u64,
        ))
}

/// Every item of `kind` passing `keep`, page by page.
fn list(store: &Store, kind: WorkKind, keep: impl Fn(&WorkItem) -> bool) -> Result<Vec<WorkItem>> {
    let filter = WorkFilter {
        kind: Some(kind),
        ..WorkFilter::default()
    };
    let mut out = Vec::new();
    let mut page = PageRequest::first(1_000);
    loop {
        let rows = store.list_work(&filter, &page)?;
        out.extend(rows.rows.into_iter().filter(&keep));
        match rows.next {
            Some(next) => page = PageRequest::resume(Some(&next), 1_000),
            None => return Ok(out),
        }
    }
}

/// The run's figures, from the store's rows.
fn figures(store: &Store, run: &Run) -> Result<Figures> {
    let now = store.now();
    let claimed = |w: &WorkItem| match (w.state, w.claimed_at) {
        (WorkState::Pending, _) | (_, None) => now,
        (_, Some(at)) => at,
    };
    let schedule_late = list(store, WorkKind::Schedule, |w| {
        (run.from..run.to).contains(&w.created_at)
    })?
    .iter()
    .map(|w| claimed(w) - w.next_eligible_at)
    .collect();
    let second_wait = list(store, WorkKind::Effect, |w| {
        w.handler == SECOND_HANDLER && w.id.starts_with(run.prefix)
    })?
    .iter()
    .map(|w| claimed(w) - w.next_eligible_at)
    .collect();
    let succeeded = HistoryKind::StepSucceeded.as_str();
    let mut step_latency = Vec::new();
    let mut page = PageRequest::first(1_000);
    loop {
        let instances = store.list_instances(None, &page)?;
        for row in &instances.rows {
            if !(run.from..run.to).contains(&row.created_at) {
                continue;
            }
            let history = store.read(|tx| tx.history(&row.instance_id))?;
            let mut previous: Option<Millis> = None;
            for record in history.iter().filter(|r| r.kind == succeeded) {
                if let Some(at) = previous {
                    step_latency.push(record.at - at);
                }
                previous = Some(record.at);
            }
        }
        match instances.next {
            Some(next) => page = PageRequest::resume(Some(&next), 1_000),
            None => break,
        }
    }
    Ok(Figures {
        schedule_late,
        step_latency,
        second_wait,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::url::{OpenMode, open};

    #[test]
    fn a_small_run_on_memory_reports_both_runs() {
        let store = open("memory", OpenMode::ReadWrite).expect("memory opens");
        let bench = FairnessBench {
            items: 2_000,
            schedule_ms: 100,
            window: Duration::from_millis(600),
            per_second: 20,
            fleet: FleetOptions::in_memory(1, NOOP_HANDLER, 8, 10),
            timeout: Duration::from_secs(120),
            quiet: true,
        };
        let report = run(&store, &bench).expect("the bench runs");
        for measured in ["firingsMeasured", "stepsMeasured", "secondHandlerMeasured"] {
            assert!(
                report.value(measured).is_some_and(|n| n > 0.0),
                "{measured}: {}",
                report.to_text()
            );
        }
        for key in [
            "idleStepLatencyP99Ms",
            "backlogSecondHandlerWaitP99Ms",
            "backlogScheduleLatenessP99Ms",
        ] {
            assert!(report.value(key).is_some(), "{key}");
        }
    }
}
