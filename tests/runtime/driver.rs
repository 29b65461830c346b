//! The tokio driver: one free worker serves every kind of work in turn, a seeded store
//! drains and the runtime stops cleanly, and handlers that outlive the shutdown grace are
//! abandoned for the next owner to count as uncertain.

use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use leasehold::authority::workload::{self};
use leasehold::authority::{
    AttemptContext, AuthorityConfig, HandlerOutcome, RunOptions, Workload, run_authority_with,
};
use leasehold::clock::{Clock, ManualClock};
use leasehold::model::handler_key;
use leasehold::model::work::NewWork;
use leasehold::model::{PageRequest, WorkState};
use leasehold::rules::work::Backoff;

use crate::support::wait::{wait_until_async, within};

use crate::support::runtime::{RUNNING, T0, compat, config, store, work_in};

use super::{drained, mixed_work};

/// An authority with one free worker serves cursor looks, workflow instances and work
/// items in turn: with all three waiting, its jobs rotate between them instead of the one
/// asked first (the held cursor's looks, then the instances) taking every free slot while
/// the effects wait behind it.
#[test]
fn one_free_worker_serves_instances_and_items_in_turn() {
    let clock = ManualClock::new(T0);
    let s = store(&clock);
    mixed_work(&s, &compat(), 20, 20);
    let a = crate::support::runtime::solo(&s, 1);
    let mut kinds = Vec::new();
    for _ in 0..9 {
        let jobs = a.poll().expect("polls");
        assert_eq!(jobs.len(), 1, "one free worker, one claim");
        kinds.push(match &jobs[0].task {
            leasehold::authority::core::Task::Workflow(_) => "instance",
            leasehold::authority::core::Task::Work(item) => item.kind.as_str(),
        });
        a.finish(a.execute(&jobs[0]));
        clock.advance(10);
    }
    for kind in ["cursor", "instance", "effect"] {
        let n = kinds.iter().filter(|k| **k == kind).count();
        assert!(n >= 2, "{kind} {n} times of 9: {kinds:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_runtime_drains_a_seeded_store_and_stops_cleanly() {
    // The clock never moves: no lease can lapse, so every completion must be the first owner's.
    let clock = ManualClock::new(T0);
    let s = store(&clock);
    let c = compat();
    let instances = mixed_work(&s, &c, 60, 4);

    let dir = tempfile::tempdir().expect("tempdir");
    let log_path = dir.path().join("exec.jsonl");
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let options = RunOptions {
        exec_log: Some(log_path.clone()),
        ..RunOptions::default()
    };
    let runtime = tokio::spawn(run_authority_with(
        s.clone(),
        config("solo"),
        workload::named("fast", 1).expect("fast"),
        options,
        async move {
            let _ = stop_rx.await;
        },
    ));

    let high_water = s.journal_high_water().expect("reads");
    wait_until_async("the store to drain", within(RUNNING), || {
        drained(&s, 60, &instances, high_water)
    })
    .await;
    let _ = stop_tx.send(());
    let stats = runtime.await.expect("joins").expect("runs");

    assert_eq!(stats.completions, 60 + 4, "{stats:?}");
    assert_eq!(
        (
            stats.fenced_writes_refused,
            stats.leases_lost,
            stats.reclaims
        ),
        (0, 0, 0)
    );
    assert!(
        work_in(&s, WorkState::Claimed).is_empty(),
        "nothing stays claimed after a clean stop"
    );
    let me = s
        .list_authorities(&PageRequest::first(10))
        .expect("lists")
        .rows;
    assert_eq!(me.len(), 1);
    assert_eq!(me[0].stopped_at, Some(clock.now()));
    let registered: serde_json::Value = serde_json::from_str(&me[0].config).expect("config json");
    assert_eq!(registered["leaseDurationMs"], 30_000);

    let log = std::fs::read_to_string(&log_path).expect("the exec log exists");
    let lines: Vec<serde_json::Value> = log
        .lines()
        .map(|l| serde_json::from_str(l).expect("one JSON object per line"))
        .collect();
    assert!(lines.len() >= 60 + 4, "{} lines", lines.len());
    for key in [
        "workId",
        "logicalEffectId",
        "idempotencyKey",
        "attempt",
        "ownerId",
        "generation",
        "outcome",
    ] {
        assert!(lines[0].get(key).is_some(), "missing {key}");
    }
    assert_eq!(
        lines
            .iter()
            .filter(|l| l["workId"].as_str().is_some_and(|w| w.starts_with('e'))
                && l["outcome"] == "succeeded")
            .count(),
        60
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_abandons_handlers_that_outlive_the_grace_and_the_next_owner_counts_them_uncertain()
 {
    let clock = ManualClock::new(T0);
    let s = store(&clock);
    for i in 0..3 {
        s.enqueue(NewWork::effect(format!("h{i}"), "hold", "{}"), &compat())
            .expect("enqueues");
    }
    // A handler that blocks until the test opens the gate.
    let gate = Arc::new((Mutex::new(false), Condvar::new()));
    let g = gate.clone();
    let holding = Workload::new("hold", 1).with("hold", move |_: &AttemptContext| {
        let (open, cv) = &*g;
        let guard = open.lock().expect("lock");
        let _unused = cv
            .wait_timeout_while(guard, Duration::from_secs(30), |open| !*open)
            .expect("wait");
        HandlerOutcome::Succeeded(None)
    });
    let cfg = AuthorityConfig {
        worker_concurrency: 2,
        ..config("holder")
    };
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let options = RunOptions {
        shutdown_grace_ms: Some(20),
        ..RunOptions::default()
    };
    let runtime = tokio::spawn(run_authority_with(
        s.clone(),
        cfg,
        holding,
        options,
        async move {
            let _ = stop_rx.await;
        },
    ));
    wait_until_async("two claims", within(RUNNING), || {
        work_in(&s, WorkState::Claimed).len() == 2
    })
    .await;
    let _ = stop_tx.send(());
    let stats = runtime.await.expect("joins").expect("runs");
    let held = work_in(&s, WorkState::Claimed);
    assert_eq!(
        (stats.released_on_shutdown, stats.abandoned_on_shutdown),
        (0, 2),
        "{stats:?}"
    );
    assert_eq!(held.len(), 2, "abandoned claims are left to lapse");
    assert_eq!(work_in(&s, WorkState::Pending).len(), 1);
    assert!(
        s.list_authorities(&PageRequest::first(10))
            .expect("lists")
            .rows[0]
            .stopped_at
            .is_some()
    );

    // The detached handlers finish later; their outcomes are dropped, nothing completes.
    {
        let (open, cv) = &*gate;
        *open.lock().expect("lock") = true;
        cv.notify_all();
    }
    // The handler closure holds the only other reference to the gate, and it goes away with
    // the authority's last task: once it has, every detached handler has returned and
    // whatever would ever follow its outcome has run.
    wait_until_async("the detached handlers to return", within(RUNNING), || {
        Arc::strong_count(&gate) == 1
    })
    .await;
    assert!(work_in(&s, WorkState::Succeeded).is_empty());
    assert_eq!(
        work_in(&s, WorkState::Claimed),
        held,
        "nothing was written for them"
    );

    // Nobody else may take them while their lease runs; once it lapsed, the next owner
    // reclaims each as an uncertain attempt under the same idempotency key.
    let lease = config("holder").lease_duration_ms;
    let pending = s
        .claim_batch("next", handler_key("hold", &compat()), 8, 10 * lease)
        .expect("claims");
    assert_eq!(pending.len(), 1, "only the never-claimed item: {pending:?}");
    // Past the lease and the retry backoff a lapsed attempt waits out before it is reclaimed.
    let attempt = held.iter().map(|h| h.attempt_number).max().unwrap_or(1);
    clock.advance(lease + Backoff::default().delay(attempt));
    let reclaimed = s
        .claim_batch("next", handler_key("hold", &compat()), 8, lease)
        .expect("claims");
    assert_eq!(reclaimed.len(), 2, "{reclaimed:?}");
    for item in &reclaimed {
        let before = held
            .iter()
            .find(|h| h.id == item.id)
            .expect("was abandoned");
        assert_eq!(
            item.uncertain_attempts,
            before.uncertain_attempts + 1,
            "{item:?}"
        );
        assert_eq!(item.attempt_number, before.attempt_number + 1);
        assert_eq!(item.idempotency_key, before.idempotency_key);
    }
}
