//! An outcome held in recovery is published: the authority's registration row lists it
//! (resource, kind, generation, why, since) while the read-back cannot decide, `inspect
//! triage --json` counts it from a separate process, and once the reads are back and the
//! read-back decides, the next heartbeat clears it.

use std::sync::Arc;

use leasehold::Store;
use leasehold::authority::workload::{self, EFFECT_HANDLERS};
use leasehold::authority::{AuthorityCore, Finished, Pace};
use leasehold::clock::{Clock, ManualClock, SystemClock};
use leasehold::ids::SeededIds;
use leasehold::model::work::NewWork;
use leasehold::model::{PageRequest, Published};
use leasehold::store::faults::{Fault, FaultPlan, FaultyBackend};
use leasehold::store::sqlite::SqliteBackend;
use leasehold::store::url::OpenMode;
use serde_json::Value;

use crate::support::inspect;
use crate::support::runtime::{compat, config};

/// What `solo`'s registration row publishes, read through a plain handle on the file.
fn published(reader: &Store) -> Published {
    reader
        .list_authorities(&PageRequest::first(10))
        .expect("lists")
        .rows
        .into_iter()
        .find(|a| a.instance_id == "solo")
        .expect("registered")
        .published
}

/// The triage group of held outcomes, as `inspect triage --json` prints it.
fn triage_group(path: &str) -> Option<Value> {
    inspect("triage", path)
        .into_iter()
        .find(|g| g["reason"] == "outcomes-in-recovery")
}

#[test]
fn an_undecidable_outcome_is_published_counted_by_triage_and_cleared_once_decided() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("store.db").display().to_string();
    let clock = ManualClock::new(SystemClock.now() - 60_000);
    let sqlite =
        SqliteBackend::open(std::path::Path::new(&path), OpenMode::ReadWrite).expect("opens");
    let backend = Arc::new(FaultyBackend::new(Arc::new(sqlite)));
    let s = Store::new(
        backend.clone(),
        Arc::new(clock.clone()),
        Arc::new(SeededIds::new(11)),
    );
    let reader = leasehold::store::url::open(&path, OpenMode::ReadOnly).expect("opens");
    s.enqueue(NewWork::effect("e1", EFFECT_HANDLERS[0], "{}"), &compat())
        .expect("enqueues");
    let core = AuthorityCore::new(
        s.clone(),
        config("solo"),
        workload::named("fast", 1).expect("fast"),
        Pace::Virtual,
    )
    .expect("valid");
    core.register().expect("registers");
    let jobs = core.poll().expect("polls");
    assert_eq!(jobs.len(), 1);
    let generation = jobs[0].generation();
    let executed = core.execute(&jobs[0]);

    // The completion commits, its answer is lost, and the store cannot be read back.
    backend.plan(FaultPlan::once(
        backend.writes() + 1,
        Fault::CommitThenLoseAnswer,
    ));
    backend.cut_reads(true);
    let held_at = clock.now();
    let held = core.finish_all(vec![executed]);
    assert!(matches!(held[..], [Finished::Deferred(_)]), "{held:?}");
    assert!(
        published(&reader).is_empty(),
        "nothing published before a heartbeat"
    );

    clock.advance(500);
    core.heartbeat()
        .expect("the heartbeat writes while reads are cut");
    let listed = published(&reader);
    assert_eq!(listed.in_recovery, 1, "{listed:?}");
    let entry = &listed.recovery[0];
    assert_eq!(
        (entry.resource_id.as_str(), entry.kind.as_str()),
        ("e1", "effect")
    );
    assert_eq!((entry.generation, entry.since), (generation, held_at));
    assert!(entry.why.contains("read-back failed"), "{entry:?}");
    assert_eq!(
        core.in_recovery(),
        vec![(entry.resource_id.clone(), entry.why.clone())],
        "the row says what the authority holds"
    );

    let group = triage_group(&path).expect("triage lists the held outcome");
    assert_eq!(group["count"].as_u64(), Some(1));
    assert_eq!(group["first"], serde_json::json!(["e1"]));
    assert_eq!(group["oldestAt"].as_i64(), Some(held_at));
    let overview = inspect("overview", &path).remove(0);
    assert_eq!(overview["inRecovery"].as_u64(), Some(1), "{overview}");
    let solo = inspect("authorities", &path)
        .into_iter()
        .find(|a| a["instanceId"] == "solo")
        .expect("listed");
    assert_eq!(solo["published"]["recovery"][0]["resourceId"], "e1");

    // A heartbeat while it is still undecided keeps it, since when it was first held.
    clock.advance(500);
    assert!(matches!(core.flush()[..], [Finished::Deferred(_)]));
    core.heartbeat().expect("beats");
    assert_eq!(published(&reader), listed);

    backend.cut_reads(false);
    assert_eq!(core.flush(), vec![Finished::Completed]);
    core.heartbeat().expect("beats");
    assert!(published(&reader).is_empty(), "decided: cleared");
    assert!(triage_group(&path).is_none(), "triage no longer lists it");
    assert_eq!(
        inspect("overview", &path)[0]["inRecovery"].as_u64(),
        Some(0)
    );
}
