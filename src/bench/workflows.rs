//! `leasehold bench workflows`: start M instances of a workflow of three no-op action
//! steps and run them to completion with K authorities — every step through the real
//! engine: fenced claim, durable outcome record, then the transition.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::Map;

use super::work::{fleet_metrics, handler_knob, knobs, written_per};
use super::{FleetOptions, Report, StoreFacts, create, rate, run_fleet};
use crate::authority::workload::NOOP_HANDLER;
use crate::error::{Error, Result};
use crate::model::HandlerVersion;
use crate::model::PageRequest;
use crate::store::Store;
use crate::workflow::Catalog;
use crate::workflow::engine::NewInstance;

/// The benchmarked definition: three action steps, then complete.
pub const THREE_STEPS: &str = r#"{
  "id": "bench-three-steps",
  "name": "Three no-op steps",
  "description": "What leasehold bench workflows runs: three action steps, then complete.",
  "entry": "one",
  "steps": [
    { "id": "one", "type": "action", "action": "noop", "arguments": {}, "next": "two" },
    { "id": "two", "type": "action", "action": "noop", "arguments": {}, "next": "three" },
    { "id": "three", "type": "action", "action": "noop", "arguments": {}, "next": "done" },
    { "id": "done", "type": "complete" }
  ]
}"#;

/// Starts per transaction after the single ones.
const START_BATCH: u64 = 500;

/// What to run.
#[derive(Debug, Clone)]
pub struct WorkflowBench {
    pub instances: u64,
    /// Of the instances, how many are started one per transaction (the rest in batches).
    pub single: u64,
    pub fleet: FleetOptions,
    pub timeout: Duration,
    pub quiet: bool,
}

/// The catalog the bench definition is validated against: the `noop` action only.
#[must_use]
pub fn catalog() -> Catalog {
    Catalog {
        actions: BTreeMap::from([(NOOP_HANDLER.to_owned(), "1".to_owned())]),
        ..Catalog::default()
    }
}

/// Runs the benchmark on `store` (which must be empty).
///
/// # Errors
/// A non-empty store, unsafe knobs, a store failure, a run that does not finish.
pub fn run(store: &Store, bench: &WorkflowBench) -> Result<Report> {
    super::require_empty(store)?;
    let versions =
        || std::collections::BTreeMap::from([(NOOP_HANDLER.to_owned(), HandlerVersion::demo())]);
    let mut report = Report::new("workflows", StoreFacts::of(store));
    report.knob("instances", bench.instances);
    report.knob("singleStarts", bench.single.min(bench.instances));
    report.knob("steps", 3);
    knobs(&mut report, &bench.fleet);
    handler_knob(&mut report, &bench.fleet);

    let definition = store
        .deploy_workflow(THREE_STEPS, &catalog())?
        .map_err(|diags| {
            Error::Invalid(format!(
                "the bench workflow does not validate: {}",
                diags.first().map(ToString::to_string).unwrap_or_default()
            ))
        })?;
    let start = |_| NewInstance {
        workflow_id: &definition.workflow_id,
        args: Map::new(),
        principal: "bench",
        idempotency_key: None,
    };
    create(
        "start",
        bench.instances,
        bench.single,
        START_BATCH,
        bench.quiet,
        |i| store.start_workflows(&[start(i)], versions()).map(drop),
        |range| {
            let starts: Vec<NewInstance<'_>> = range.map(start).collect();
            store.start_workflows(&starts, versions()).map(drop)
        },
    )?
    .report(
        &mut report,
        ["startsPerSec", "workflow starts, one per commit"],
        ["startsBatchedPerSec", "workflow starts, batched"],
        "workflows/s",
    );

    let run = run_fleet(
        store,
        &bench.fleet,
        "run",
        bench.instances,
        bench.timeout,
        bench.quiet,
        ended_instances,
    )?;
    let transitions = transitions(store)?;
    report.metric(
        "workflowsPerSec",
        "three-step workflows",
        rate(bench.instances, run.elapsed),
        "workflows/s",
    );
    report.metric(
        "transitionsPerSec",
        "transitions",
        rate(transitions, run.elapsed),
        "transitions/s",
    );
    fleet_metrics(&mut report, &run);
    written_per(
        &mut report,
        &run,
        bench.instances,
        ["bytesWrittenPerWorkflow", "bytes written per workflow"],
    );
    super::check_after(store, &mut report)?;
    Ok(report)
}

/// Instances that reached a terminal status, from the incremental counters.
fn ended_instances(store: &Store) -> Result<u64> {
    Ok(store
        .overview()?
        .workflows
        .iter()
        .filter(|(status, _)| matches!(status.as_str(), "completed" | "failed" | "cancelled"))
        .map(|(_, n)| n)
        .sum())
}

/// Transitions committed: each instance's revision counts its start as 1, then one per
/// transition. Read page by page.
fn transitions(store: &Store) -> Result<u64> {
    let mut total = 0;
    let mut after = None;
    loop {
        let page = store.list_instances(
            None,
            &PageRequest {
                after: after.take(),
                limit: 1_000,
                backwards: false,
            },
        )?;
        total += page
            .rows
            .iter()
            .map(|row| row.instance_revision.saturating_sub(1))
            .sum::<u64>();
        match page.next {
            Some(next) => after = Some(next),
            None => return Ok(total),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::authority::workload::NOOP_HANDLER;
    use crate::store::url::{OpenMode, open};

    #[test]
    fn the_bench_definition_validates_against_its_catalog() {
        let store = open("memory", OpenMode::ReadWrite).expect("memory opens");
        assert!(
            store
                .deploy_workflow(THREE_STEPS, &catalog())
                .expect("deploys")
                .is_ok()
        );
    }

    #[test]
    fn a_small_run_on_memory_completes_every_instance() {
        let store = open("memory", OpenMode::ReadWrite).expect("memory opens");
        let bench = WorkflowBench {
            instances: 40,
            single: 10,
            fleet: FleetOptions::in_memory(2, NOOP_HANDLER, 8, 5),
            timeout: Duration::from_secs(120),
            quiet: true,
        };
        let report = run(&store, &bench).expect("the bench runs");
        assert!(report.value("workflowsPerSec").is_some_and(|r| r > 0.0));
        assert!(
            report.value("transitionsPerSec").is_some_and(|r| r > 0.0),
            "{}",
            report.to_text()
        );
        assert_eq!(report.value("fencedRejections"), Some(0.0));
        assert_eq!(report.value("checkViolations"), Some(0.0));
    }
}
