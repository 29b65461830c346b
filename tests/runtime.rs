//! The authority runtime: unsafe knobs are refused at construction; the core's step
//! functions fence, count and reclaim correctly on a manual clock; an idle cursor keeps its
//! claim, so its generation moves only with its ownership; the tokio driver
//! drains a seeded memory store and shuts down cleanly, releasing what it still owns; and
//! (`runtime/uncertain.rs`) no attempt goes uncounted at shutdown or on a timeout.

#[path = "runtime/claim_keys.rs"]
mod claim_keys;
#[path = "runtime/complete_and_claim.rs"]
mod complete_and_claim;
#[path = "runtime/recovery.rs"]
mod recovery;
#[path = "runtime/refused.rs"]
mod refused;
#[path = "runtime/schedules.rs"]
mod schedules;
#[path = "runtime/stall.rs"]
mod stall;
#[path = "support/mod.rs"]
mod support;
#[path = "runtime/uncertain.rs"]
mod uncertain;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use leasehold::Store;
use leasehold::authority::workload::{self, EFFECT_HANDLERS};
use leasehold::authority::{
    AttemptContext, AuthorityConfig, AuthorityCore, Finished, HandlerOutcome, Pace, RunOptions,
    Workload, run_authority, run_authority_with,
};
use leasehold::clock::{Clock, ManualClock};
use leasehold::ids::SeededIds;
use leasehold::model::HandlerVersion;
use leasehold::model::event::NewEvent;
use leasehold::model::handler_key;
use leasehold::model::work::NewWork;
use leasehold::model::{PageRequest, WorkState};
use leasehold::rules::work::Backoff;
use leasehold::store::memory::MemoryBackend;
use leasehold::workflow::{Catalog, SHIPPED_DEFINITIONS};
use serde_json::json;

use support::wait::{wait_until_async, within};

use support::runtime::{
    RUNNING, T0, compat, config, faulty_store, store, two_short_lease_cores, work_in,
};

#[test]
fn unsafe_knobs_are_refused_at_construction() {
    let clock = ManualClock::new(T0);
    let cases = [
        AuthorityConfig::new("a", "v1").with_timing(10_000, 10_000),
        AuthorityConfig::new("a", "v1").with_timing(10_000, 20_000),
        AuthorityConfig {
            renew_interval_ms: 0,
            ..AuthorityConfig::new("a", "v1")
        },
        AuthorityConfig {
            poll_interval_ms: 0,
            ..AuthorityConfig::new("a", "v1")
        },
        AuthorityConfig {
            worker_concurrency: 0,
            ..AuthorityConfig::new("a", "v1")
        },
        AuthorityConfig {
            claim_batch_size: 0,
            ..AuthorityConfig::new("a", "v1")
        },
        AuthorityConfig {
            lease_duration_ms: 0,
            ..AuthorityConfig::new("a", "v1")
        },
        AuthorityConfig::new("", "v1"),
        // Above the longest lease: refused, never cut to 30 days behind the caller's back.
        AuthorityConfig::new("a", "v1")
            .with_timing(leasehold::rules::lease::MAX_LEASE_MS + 1, 10_000),
    ];
    for config in cases {
        let err = AuthorityCore::new(
            store(&clock),
            config.clone(),
            workload::default_workload(1),
            Pace::Virtual,
        )
        .expect_err("refused");
        assert_eq!(err.code(), "INVALID", "{config:?}");
    }
    let err = AuthorityConfig::new("a", "v1")
        .with_timing(1_000, 1_000)
        .validate()
        .expect_err("refused");
    assert!(
        err.to_string()
            .contains("renewIntervalMs (1000) must be less than leaseDurationMs (1000)"),
        "{err}"
    );
    assert!(AuthorityConfig::new("a", "v1").validate().is_ok());
}

#[tokio::test]
async fn the_runtime_refuses_an_unsafe_config_before_touching_the_store() {
    let clock = ManualClock::new(T0);
    let s = store(&clock);
    let bad = AuthorityConfig::new("a", "v1").with_timing(5_000, 5_000);
    let err = run_authority(
        s.clone(),
        bad,
        workload::default_workload(1),
        None,
        std::future::pending(),
    )
    .await
    .expect_err("refused");
    assert_eq!(err.code(), "INVALID");
    assert!(
        s.list_authorities(&PageRequest::first(10))
            .expect("lists")
            .rows
            .is_empty()
    );
}

#[test]
fn a_stale_owners_completion_is_fenced_and_its_renewal_marks_the_job_lost() {
    let clock = ManualClock::new(T0);
    let s = store(&clock);
    s.enqueue(NewWork::effect("e1", "send-email", "{}"), &compat())
        .expect("enqueues");
    let (a, b) = two_short_lease_cores(&s);

    let jobs = a.poll().expect("polls");
    assert_eq!(jobs.len(), 1);
    let executed = a.execute(&jobs[0]);
    // a stalls past its lease; b reclaims (a new generation) and is still working.
    clock.advance(1_500);
    let taken = b.poll().expect("polls");
    assert_eq!(taken.len(), 1);
    assert_eq!(taken[0].generation(), 2);
    assert_eq!(b.stats().reclaims, 1);
    assert_eq!(b.stats().reclaim_latencies_ms, vec![500]);

    // a wakes: its completion is refused, counted, never retried as success.
    assert_eq!(a.finish(executed), Finished::Refused("WORK_FENCED".into()));
    assert_eq!(a.stats().fenced_writes_refused, 1);
    assert_eq!(a.stats().completions, 0);
    assert_eq!(
        s.work("e1").expect("reads").expect("exists").state,
        WorkState::Claimed
    );

    // b finishes; a later renewal by a would be fenced too (nothing of a's is left).
    assert_eq!(b.finish(b.execute(&taken[0])), Finished::Completed);
    assert_eq!(a.renew().lost, 0);
    assert_eq!(
        s.work("e1").expect("reads").expect("exists").state,
        WorkState::Succeeded
    );
}

#[test]
fn a_fenced_renewal_marks_the_job_lost_and_drops_its_outcome() {
    let clock = ManualClock::new(T0);
    let s = store(&clock);
    s.enqueue(NewWork::effect("e1", "send-email", "{}"), &compat())
        .expect("enqueues");
    let fast = workload::named("fast", 1).expect("fast");
    let short = |id: &str| AuthorityConfig {
        lease_duration_ms: 1_000,
        renew_interval_ms: 300,
        ..AuthorityConfig::new(id, "v1")
    };
    let a = AuthorityCore::new(s.clone(), short("a"), fast.clone(), Pace::Virtual).expect("a");
    let b = AuthorityCore::new(s.clone(), short("b"), fast, Pace::Virtual).expect("b");
    let jobs = a.poll().expect("polls");
    let executed = a.execute(&jobs[0]);
    clock.advance(1_001 + Backoff::default().delay(1));
    assert_eq!(b.poll().expect("polls").len(), 1);
    let renewed = a.renew();
    assert_eq!((renewed.lost, a.stats().leases_lost), (1, 1));
    assert_eq!(a.finish(executed), Finished::Abandoned("lost"));
    assert_eq!(a.stats().fenced_writes_refused, 0);
}

#[test]
fn an_uncertain_attempt_is_reclaimed_with_the_same_idempotency_key() {
    let clock = ManualClock::new(T0);
    let s = store(&clock);
    s.enqueue(
        NewWork {
            idempotency_key: Some("charge-1".into()),
            ..NewWork::effect("e1", "charge", "{}")
        },
        &compat(),
    )
    .expect("enqueues");
    let calls = Arc::new(AtomicUsize::new(0));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let (c, k) = (calls.clone(), seen.clone());
    let crashy = Workload::new("crashy", 1).with("charge", move |ctx: &AttemptContext| {
        k.lock().expect("lock").push(ctx.idempotency_key.clone());
        if c.fetch_add(1, Ordering::SeqCst) == 0 {
            HandlerOutcome::Uncertain
        } else {
            HandlerOutcome::Succeeded(Some(json!({ "ok": true })))
        }
    });
    let cfg = AuthorityConfig {
        lease_duration_ms: 1_000,
        renew_interval_ms: 300,
        ..AuthorityConfig::new("a", "v1")
    };
    let a = AuthorityCore::new(s.clone(), cfg, crashy, Pace::Virtual).expect("a");
    let job = a.poll().expect("polls").remove(0);
    assert_eq!(a.finish(a.execute(&job)), Finished::Abandoned("uncertain"));
    assert_eq!(a.inflight(), 0, "an uncertain attempt is no longer renewed");
    assert!(
        a.poll().expect("polls").is_empty(),
        "the claim stands until it lapses"
    );
    clock.advance(1_000);
    assert!(
        a.poll().expect("polls").is_empty(),
        "the lapse counts, and the reclaim backs off like a retry"
    );
    clock.advance(Backoff::default().delay(1));
    let again = a.poll().expect("polls").remove(0);
    assert_eq!(a.finish(a.execute(&again)), Finished::Completed);
    let item = s.work("e1").expect("reads").expect("exists");
    assert_eq!(
        (item.attempt_number, item.uncertain_attempts, item.state),
        (2, 1, WorkState::Succeeded)
    );
    assert_eq!(
        *seen.lock().expect("lock"),
        vec!["charge-1".to_owned(), "charge-1".to_owned()]
    );
    assert_eq!(a.stats().uncertain, 1);
}

#[test]
fn a_store_outage_defers_the_outcome_until_the_store_is_back() {
    let clock = ManualClock::new(T0);
    let backend = MemoryBackend::new();
    let s = Store::new(
        Arc::new(backend.clone()),
        Arc::new(clock.clone()),
        Arc::new(SeededIds::new(3)),
    );
    s.enqueue(NewWork::effect("e1", "send-email", "{}"), &compat())
        .expect("enqueues");
    let a = AuthorityCore::new(
        s.clone(),
        config("a"),
        workload::named("fast", 1).expect("fast"),
        Pace::Virtual,
    )
    .expect("a");
    let job = a.poll().expect("polls").remove(0);
    let executed = a.execute(&job);
    backend.set_outage(true);
    assert!(matches!(a.finish(executed), Finished::Deferred(_)));
    assert!(a.poll().is_err());
    backend.set_outage(false);
    assert_eq!(a.flush(), vec![Finished::Completed]);
    assert_eq!(
        s.work("e1").expect("reads").expect("exists").state,
        WorkState::Succeeded
    );
    assert!(a.stats().store_errors >= 2);
}

/// An authority with one free worker serves cursor looks, workflow instances and work
/// items in turn: with all three waiting, its jobs rotate between them instead of the one
/// asked first (the held cursor's looks, then the instances) taking every free slot while
/// the effects wait behind it.
#[test]
fn one_free_worker_serves_instances_and_items_in_turn() {
    let clock = ManualClock::new(T0);
    let s = store(&clock);
    mixed_work(&s, &compat(), 20, 20);
    let a = support::runtime::solo(&s, 1);
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

/// `effects` effects over the demo handlers, a subscription with five events for it, and
/// `workflows` instances of the shipped integration-call workflow: every kind of work one
/// authority runs. Answers the instances.
fn mixed_work(s: &Store, c: &HandlerVersion, effects: usize, workflows: usize) -> Vec<String> {
    let items: Vec<NewWork> = (0..effects)
        .map(|i| {
            NewWork::effect(
                format!("e{i:03}"),
                EFFECT_HANDLERS[i % EFFECT_HANDLERS.len()],
                json!({ "n": i }).to_string(),
            )
        })
        .collect();
    s.enqueue_batch(items, c).expect("enqueues");
    s.create_subscription(
        "orders",
        "order-placed",
        workload::CURSOR_HANDLER,
        &handler_key(workload::CURSOR_HANDLER, c),
    )
    .expect("subscribes");
    for i in 0..5 {
        let event = NewEvent {
            event_type: "order-placed".into(),
            source: Some("shop".into()),
            external_id: Some(format!("o{i}")),
            payload: json!({ "i": i }),
        };
        s.ingest(&event).expect("ingests");
    }
    let (_, text) = SHIPPED_DEFINITIONS
        .iter()
        .find(|(name, _)| name.starts_with("integration-call"))
        .expect("shipped");
    s.deploy_workflow(text, &Catalog::demo())
        .expect("deploys")
        .expect("valid");
    (0..workflows)
        .map(|i| {
            let args = json!({ "partner": "p", "request": { "i": i } });
            s.start_workflow(
                "integration-call",
                args.as_object().cloned().unwrap_or_default(),
                "test",
                None,
                support::actions_at_demo(s, "integration-call"),
            )
            .expect("starts")
            .instance_id
        })
        .collect()
}

/// Whether the work of [`mixed_work`] is all done: `effects` succeeded, every instance
/// completed, and the subscription delivered through `high_water`.
fn drained(s: &Store, effects: usize, instances: &[String], high_water: i64) -> bool {
    work_in(s, WorkState::Succeeded).len() == effects
        && instances.iter().all(|id| {
            s.instance(id)
                .ok()
                .flatten()
                .is_some_and(|r| r.status == "completed")
        })
        && s.subscription("orders")
            .ok()
            .flatten()
            .is_some_and(|sub| i64::try_from(sub.sequence).unwrap_or(0) == high_water)
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

/// Runs one authority on `s` until it stops by itself, after `meanwhile` acted on its
/// registration (passed in) while it read as gone; returns how it ended.
async fn run_until_it_steps_down(
    clock: &ManualClock,
    s: &Store,
    mut meanwhile: impl FnMut(&leasehold::model::Authority) -> leasehold::Result<()>,
) -> leasehold::Result<leasehold::authority::Stats> {
    let cfg = config("a-dup");
    let lease = cfg.lease_duration_ms;
    let run = tokio::spawn(run_authority_with(
        s.clone(),
        cfg,
        workload::named("fast", 1).expect("fast"),
        RunOptions::default(),
        std::future::pending::<()>(),
    ));
    wait_until_async("the registration", within(RUNNING), || {
        registration(s).is_some()
    })
    .await;
    // Past its lease on the store's clock it reads as gone (as if it had been paused). A
    // heartbeat landing in between makes it live again: then move on another lease.
    loop {
        clock.advance(lease + 1);
        match meanwhile(&registration(s).expect("registered")) {
            Err(e) if e.code() == "INSTANCE_IN_USE" => {}
            done => break done.expect("acts on a gone registration"),
        }
    }
    tokio::time::timeout(Duration::from_secs(60), run)
        .await
        .expect("the authority stops by itself")
        .expect("joins")
}

fn registration(s: &Store) -> Option<leasehold::model::Authority> {
    s.list_authorities(&PageRequest::first(10))
        .expect("lists")
        .rows
        .into_iter()
        .find(|a| a.instance_id == "a-dup")
}

/// An authority whose registration another start of its instance id took over stops at
/// its next heartbeat instead of overwriting the new holder's row.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_authority_whose_id_was_taken_over_stops() {
    let clock = ManualClock::new(T0);
    let s = store(&clock);
    let mut second = None;
    let outcome = run_until_it_steps_down(&clock, &s, |first| {
        let takeover = leasehold::model::Authority {
            pid: first.pid.wrapping_add(1),
            started_at: clock.now(),
            heartbeat_at: clock.now(),
            ..first.clone()
        };
        s.register_authority(&takeover)?;
        second = Some(takeover);
        Ok(())
    })
    .await;
    assert_eq!(
        outcome.expect_err("superseded").code(),
        "INSTANCE_SUPERSEDED"
    );
    assert_eq!(
        registration(&s),
        second,
        "the new holder's row is untouched"
    );
}

/// An authority an operator forgot while it read as gone stops instead of working unseen.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forgotten_authority_stops() {
    let clock = ManualClock::new(T0);
    let s = store(&clock);
    let outcome = run_until_it_steps_down(&clock, &s, |_| {
        s.forget_authority("a-dup", "ops@box", "").map(|_| ())
    })
    .await;
    assert_eq!(outcome.expect_err("forgotten").code(), "NOT_FOUND");
    assert_eq!(registration(&s), None, "not registered again");
}

/// An idle cursor is kept (renewed), not handed back and re-claimed every poll: its
/// generation holds while its owner lives, through deliveries too, and moves once when the
/// owner dies and another authority reclaims it.
#[test]
fn an_idle_cursor_keeps_its_generation_until_its_owner_dies() {
    let clock = ManualClock::new(T0);
    let s = store(&clock);
    let c = compat();
    s.create_subscription(
        "orders",
        "order-placed",
        workload::CURSOR_HANDLER,
        &handler_key(workload::CURSOR_HANDLER, &c),
    )
    .expect("subscribes");
    let fast = workload::named("fast", 1).expect("fast");
    let cfg = |id: &str| AuthorityConfig {
        poll_interval_ms: 100,
        lease_duration_ms: 3_000,
        renew_interval_ms: 1_000,
        ..AuthorityConfig::new(id, "v1")
    };
    let a = AuthorityCore::new(s.clone(), cfg("a"), fast.clone(), Pace::Virtual).expect("a");
    let b = AuthorityCore::new(s.clone(), cfg("b"), fast, Pace::Virtual).expect("b");
    let cursor = |s: &Store| {
        let sub = s.subscription("orders").expect("reads").expect("exists");
        leasehold::ops::cursors::status(s, &sub, s.now()).expect("reads")
    };
    // One tick of each living authority: renew on its cadence, poll, run, record.
    let tick = |cores: &[&AuthorityCore], n: i64| {
        for core in cores {
            if n % 10 == 0 {
                core.renew();
            }
            for job in core.poll().expect("polls") {
                core.finish(core.execute(&job));
            }
        }
        clock.advance(100);
    };

    for n in 0..200 {
        tick(&[&a, &b], n);
        if n == 100 {
            for i in 0..3 {
                let event = NewEvent {
                    event_type: "order-placed".into(),
                    source: Some("shop".into()),
                    external_id: Some(format!("o{i}")),
                    payload: json!({ "i": i }),
                };
                s.ingest(&event).expect("ingests");
            }
        }
    }
    let held = cursor(&s);
    let owner = held.owner_id.clone().expect("held");
    assert_eq!(held.generation, 1, "{held:?}");
    assert_eq!((held.position, held.high_water, held.lag), (3, 3, 0));
    let (dead, heir) = if owner == "a" { (&a, &b) } else { (&b, &a) };
    assert_eq!(dead.stats().claims, 1, "one claim in 200 polls");
    assert_eq!(dead.stats().events_delivered, 3);
    assert!(held.claims_per_sec < 0.02, "{held:?}");

    // Its owner is killed: the claim lapses and the other authority takes it, once.
    dead.crash();
    for n in 0..200 {
        tick(&[heir], n);
    }
    let moved = cursor(&s);
    assert_eq!(moved.owner_id.as_deref(), Some(heir.id()));
    assert_eq!(moved.generation, 2, "{moved:?}");
    assert_eq!(heir.stats().claims, 1);
    assert_eq!(heir.stats().reclaims, 1);
    let (grants, _) = s
        .ownership_history(Some("cursor:orders"), 0, 1_000)
        .expect("history");
    assert_eq!(grants.len(), 2, "{grants:?}");
}

/// An authority with a handler limit never claims that handler past its free slots: the
/// other handlers' items take the rest of the workers, and a finished item frees exactly
/// one slot.
#[test]
fn a_handler_limit_caps_what_one_poll_claims_of_that_handler() {
    let clock = ManualClock::new(T0);
    let s = store(&clock);
    let c = compat();
    let items: Vec<NewWork> = (0..4)
        .flat_map(|i| {
            [
                NewWork::effect(format!("slow-{i}"), "slow", "{}"),
                NewWork::effect(format!("fast-{i}"), "fast", "{}"),
            ]
        })
        .collect();
    s.enqueue_batch(items, &c).expect("enqueues");
    let ok = |_: &AttemptContext| HandlerOutcome::Succeeded(None);
    let handlers = Workload::new("limited", 1)
        .with("slow", ok)
        .with("fast", ok);
    let cfg = AuthorityConfig {
        worker_concurrency: 4,
        ..config("a").with_handler_limit("slow", 1)
    };
    let a = AuthorityCore::new(s.clone(), cfg, handlers, Pace::Virtual).expect("a");
    let handler_of = |job: &leasehold::authority::Job| match &job.task {
        leasehold::authority::Task::Work(item) => item.handler.clone(),
        leasehold::authority::Task::Workflow(_) => "workflow".into(),
    };
    let first = a.poll().expect("polls");
    let slow: Vec<_> = first.iter().filter(|j| handler_of(j) == "slow").collect();
    assert_eq!((first.len(), slow.len()), (4, 1), "one slow, three fast");
    for job in first.iter().filter(|j| handler_of(j) == "fast") {
        assert_eq!(a.finish(a.execute(job)), Finished::Completed);
    }
    let second = a.poll().expect("polls");
    assert!(
        second.iter().all(|j| handler_of(j) == "fast"),
        "the slow slot is still taken"
    );
    assert_eq!(second.len(), 1, "the last fast item");
    assert_eq!(a.finish(a.execute(slow[0])), Finished::Completed);
    let third = a.poll().expect("polls");
    assert_eq!(
        third.iter().filter(|j| handler_of(j) == "slow").count(),
        1,
        "a finished slow item frees one slot"
    );
}

/// A running authority never runs more items of a limited handler at once than its limit,
/// on every provider, while the rest of its workers drain the other handler. The store is
/// opened and watched outside the authority's runtime (a blocking client cannot be driven
/// from inside one).
fn a_running_authority_respects_its_handler_limit(harness: &dyn support::Harness) {
    const EACH: usize = 24;
    let s = harness.store();
    let digest = compat();
    let items: Vec<NewWork> = (0..EACH)
        .flat_map(|i| {
            [
                NewWork::effect(format!("slow-{i:02}"), "slow", "{}"),
                NewWork::effect(format!("fast-{i:02}"), "fast", "{}"),
            ]
        })
        .collect();
    s.enqueue_batch(items, &digest).expect("enqueues");
    let running = Arc::new(AtomicUsize::new(0));
    let most = Arc::new(AtomicUsize::new(0));
    let (now_running, high_water) = (running.clone(), most.clone());
    let handlers = Workload::new("limited", 1)
        .with("slow", move |_: &AttemptContext| {
            let now = now_running.fetch_add(1, Ordering::SeqCst) + 1;
            high_water.fetch_max(now, Ordering::SeqCst);
            // Long enough that the workers overlap if the limit let them.
            std::thread::sleep(Duration::from_millis(5));
            now_running.fetch_sub(1, Ordering::SeqCst);
            HandlerOutcome::Succeeded(None)
        })
        .with("fast", |_: &AttemptContext| HandlerOutcome::Succeeded(None));
    let cfg = AuthorityConfig {
        worker_concurrency: 8,
        ..config("limited").with_handler_limit("slow", 2)
    };
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let store = s.clone();
    let authority = std::thread::spawn(move || {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("a runtime")
            .block_on(run_authority(store, cfg, handlers, None, async move {
                let _ = stop_rx.await;
            }))
    });
    support::wait::wait_until("every item to succeed", within(RUNNING), || {
        work_in(&s, WorkState::Succeeded).len() == 2 * EACH
    });
    let _ = stop_tx.send(());
    authority.join().expect("joins").expect("runs");
    let most = most.load(Ordering::SeqCst);
    assert!((1..=2).contains(&most), "{most} slow items ran at once");
}

#[test]
fn a_running_authority_respects_its_handler_limit_on_memory() {
    a_running_authority_respects_its_handler_limit(&*support::memory());
}

#[test]
fn a_running_authority_respects_its_handler_limit_on_sqlite() {
    a_running_authority_respects_its_handler_limit(&*support::sqlite());
}

#[cfg(feature = "postgres")]
#[test]
fn a_running_authority_respects_its_handler_limit_on_postgres() {
    a_running_authority_respects_its_handler_limit(&*support::postgres());
}

/// A store that cannot be trusted stops the authority: once a write finds the store damaged
/// (here a table dropped under it), the runtime stops claiming, logs it and returns that
/// error (the binary exits non-zero), and no write goes through its handle afterwards.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_untrusted_store_stops_the_authority_with_the_reason() {
    let clock = ManualClock::new(T0);
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("s.db");
    let s = support::open_sqlite(&path, &clock, leasehold::store::url::OpenMode::ReadWrite)
        .expect("creates");
    let c = compat();
    let effects = |from: usize| {
        (from..from + 10)
            .map(|i| NewWork::effect(format!("fx-{i}"), EFFECT_HANDLERS[0], "{}"))
            .collect::<Vec<_>>()
    };
    s.enqueue_batch(effects(0), &c).expect("enqueues");
    let runtime = tokio::spawn(run_authority_with(
        s.clone(),
        config("solo"),
        workload::named("fast", 1).expect("fast"),
        RunOptions::default(),
        std::future::pending::<()>(),
    ));
    wait_until_async("the first items to finish", within(RUNNING), || {
        work_in(&s, WorkState::Succeeded).len() == 10
    })
    .await;
    rusqlite::Connection::open(&path)
        .expect("opens")
        .execute_batch("DROP TABLE grants")
        .expect("drops");
    s.enqueue_batch(effects(10), &c).expect("enqueues");

    let stopped = tokio::time::timeout(RUNNING, runtime)
        .await
        .expect("the authority stops by itself")
        .expect("joins");
    let err = stopped.expect_err("an untrusted store is an error");
    assert_eq!(err.code(), "STORE_CORRUPT", "{err}");
    assert!(err.to_string().contains("grants"), "{err}");
    assert!(
        work_in(&s, WorkState::Claimed).is_empty(),
        "nothing was claimed"
    );
}

/// Unknown outcomes, exercised: the store fails every few write transactions — before the
/// commit, after it with a failure reported, after it with the answer lost — while an
/// authority drains effects, a subscription cursor and workflows. Everything still
/// finishes, each exactly once, and the checker finds nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_outcomes_on_every_kind_of_write_end_clean() {
    use leasehold::store::faults::{Fault, FaultPlan};

    let clock = ManualClock::new(T0);
    let (faulty, s) = faulty_store(&clock);
    let c = compat();
    let instances = mixed_work(&s, &c, 30, 3);
    // From the authority's registration on, every few writes fail one way or another.
    faulty.plan(FaultPlan {
        after: faulty.writes() + 1,
        until: None,
        rules: vec![
            (17, Fault::CommitThenLoseAnswer),
            (13, Fault::CommitThenReportFailure),
            (11, Fault::FailBeforeCommit),
        ],
    });
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let runtime = tokio::spawn(run_authority_with(
        s.clone(),
        config("solo"),
        workload::named("fast", 1).expect("fast"),
        RunOptions::default(),
        async move {
            let _ = stop_rx.await;
        },
    ));
    let high_water = s.journal_high_water().expect("reads");
    wait_until_async(
        "the store to drain despite the faults",
        within(RUNNING),
        || {
            // Claims whose answer was lost lapse in store time: let it pass (far slower than
            // the renewals, so only a claim nobody holds lapses).
            clock.advance(20);
            drained(&s, 30, &instances, high_water)
        },
    )
    .await;
    faulty.plan(FaultPlan::default());
    let _ = stop_tx.send(());
    runtime.await.expect("joins").expect("runs");

    let injected = faulty.injected();
    assert!(
        injected.failed_before_commit > 0
            && injected.reported_failure_after_commit > 0
            && injected.lost_answers > 0,
        "{injected:?}"
    );
    let report = leasehold::check::check(&s, &leasehold::check::CheckOptions::at(clock.now()))
        .expect("checks");
    assert!(report.violations.is_empty(), "{:?}", report.violations);
    assert!(work_in(&s, WorkState::Failed).is_empty(), "nothing failed");
}

/// One authority `solo` running the `fast` workload on `s`, stepped by hand.
fn fast_core(s: &Store) -> AuthorityCore {
    AuthorityCore::new(
        s.clone(),
        config("solo"),
        workload::named("fast", 1).expect("fast"),
        Pace::Virtual,
    )
    .expect("valid")
}

/// Commits whose answer is lost (`OUTCOME_UNKNOWN` after a durable commit) on every fifth
/// write — claims, completions, cursor advances, workflow transitions alike: the authority
/// reads back what it meant to write instead of resubmitting blind, so the store drains
/// with every handler run exactly once, no refusal of its own repeated writes, and a clean
/// checker.
#[test]
fn lost_answers_are_read_back_and_nothing_is_done_twice() {
    lost_answers_drain(|core, executed| {
        core.finish_all(executed);
        core.poll().unwrap_or_default()
    });
}

/// The same, with each finished batch committed in the transaction that claims the next
/// (what the tokio driver does): a lost answer there is a batch's outcomes read back and
/// claims nobody knows of, which lapse and are taken again.
#[test]
fn lost_answers_of_a_complete_and_claim_are_read_back_and_nothing_is_done_twice() {
    lost_answers_drain(|core, executed| core.finish_all_and_poll(executed).1.unwrap_or_default());
}

/// Drains mixed work through `step` (which records a finished batch and answers the next
/// jobs) while every fifth write loses its answer, and checks that nothing ran twice.
fn lost_answers_drain(
    step: impl Fn(&AuthorityCore, Vec<leasehold::authority::Executed>) -> Vec<leasehold::authority::Job>,
) {
    use leasehold::authority::ExecLog;
    use leasehold::store::faults::{Fault, FaultPlan};

    let clock = ManualClock::new(T0);
    let (backend, s) = faulty_store(&clock);
    let c = compat();
    let instances = mixed_work(&s, &c, 30, 3);
    let high_water = s.journal_high_water().expect("reads");
    let dir = tempfile::tempdir().expect("tempdir");
    let log_path = dir.path().join("exec.jsonl");
    let core = fast_core(&s).with_exec_log(ExecLog::open(&log_path).expect("opens"));
    core.register().expect("registers");
    backend.plan(FaultPlan {
        after: backend.writes(),
        until: None,
        rules: vec![(5, Fault::CommitThenLoseAnswer)],
    });

    let mut rounds = 0;
    let mut jobs = Vec::new();
    while !drained(&s, 30, &instances, high_water) {
        rounds += 1;
        assert!(
            rounds < 5_000,
            "the store never drained: {:?}",
            core.stats()
        );
        // A claim whose answer was lost claimed nothing this authority knows of.
        let executed = jobs.iter().map(|job| core.execute(job)).collect();
        jobs = step(&core, executed);
        core.flush();
        let _ = core.renew();
        // Claims whose answer was lost lapse and are taken again.
        clock.advance(1_000);
    }
    backend.plan(FaultPlan::default());

    let stats = core.stats();
    assert!(
        backend.injected().lost_answers > 10,
        "{:?}",
        backend.injected()
    );
    assert!(
        stats.store_errors > 0,
        "no write of the authority lost its answer"
    );
    assert_eq!(
        (stats.fenced_writes_refused, stats.other_refusals.clone()),
        (0, std::collections::BTreeMap::new()),
        "a blind resubmission was refused: {stats:?}"
    );
    assert_eq!(stats.recovery_required, 0, "every read-back could read");
    // Every attempt started once per item and attempt: nothing ran twice.
    let log = std::fs::read_to_string(&log_path).expect("the exec log exists");
    let mut starts = std::collections::BTreeMap::<String, usize>::new();
    for line in log.lines() {
        let l: serde_json::Value = serde_json::from_str(line).expect("a JSON line");
        if l["outcome"] == "started" && l["workId"].as_str().is_some_and(|w| w.starts_with('e')) {
            *starts
                .entry(l["workId"].as_str().unwrap_or("").to_owned())
                .or_default() += 1;
        }
    }
    assert_eq!(starts.len(), 30);
    assert!(
        starts.values().all(|n| *n == 1),
        "an effect ran twice: {starts:?}"
    );
    let report =
        leasehold::check::check(&s, &leasehold::check::CheckOptions::at(s.now())).expect("checks");
    assert!(
        report.is_clean(),
        "{}",
        leasehold::check::render_text(&report)
    );
}

/// A completion whose answer was lost while the store cannot be read back: nobody can say
/// whether it committed, so the job is held in recovery — listed, its handler not run
/// again, its outcome not written again — until a read-back can decide; then it is settled
/// as recorded, once.
#[test]
fn an_undecidable_outcome_is_held_in_recovery_until_a_read_back_decides() {
    use leasehold::store::faults::{Fault, FaultPlan};

    let clock = ManualClock::new(T0);
    let (backend, s) = faulty_store(&clock);
    s.enqueue(NewWork::effect("e1", EFFECT_HANDLERS[0], "{}"), &compat())
        .expect("enqueues");
    let core = fast_core(&s);
    core.register().expect("registers");
    let jobs = core.poll().expect("polls");
    assert_eq!(jobs.len(), 1);
    let executed = core.execute(&jobs[0]);

    backend.plan(FaultPlan::once(
        backend.writes() + 1,
        Fault::CommitThenLoseAnswer,
    ));
    backend.cut_reads(true);
    let held = core.finish_all(vec![executed]);
    assert!(matches!(held[..], [Finished::Deferred(_)]), "{held:?}");
    assert_eq!(core.stats().recovery_required, 1);
    let listed = core.in_recovery();
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!(listed[0].0, "e1");
    assert!(listed[0].1.contains("read-back failed"), "{listed:?}");

    // Fail closed: flushing while the store cannot be read writes nothing.
    let writes = backend.writes();
    let still = core.flush();
    assert!(matches!(still[..], [Finished::Deferred(_)]), "{still:?}");
    assert_eq!(
        backend.writes(),
        writes,
        "an undecided outcome was written again"
    );
    assert!(core.poll().expect("polls").is_empty(), "e1 was run again");

    backend.cut_reads(false);
    assert_eq!(core.flush(), vec![Finished::Completed]);
    assert!(core.in_recovery().is_empty());
    let stats = core.stats();
    assert_eq!(
        (stats.completions, stats.other_refusals.len()),
        (1, 0),
        "{stats:?}"
    );
    let (_, writes) = s
        .ownership_history(Some("e1"), 0, 100)
        .expect("the history reads");
    assert_eq!(
        writes.iter().filter(|w| w.verb == "complete").count(),
        1,
        "{writes:?}"
    );
}
