//! The embedding API, on every store provider: an application's async handlers run every
//! kind of work (effects, schedule firings, subscription deliveries, workflow actions); a
//! handler longer than three lease windows keeps its claim and completes once; a handler
//! told its lease was lost stops and its late answer changes nothing; a panicking handler's
//! attempt is a recorded retryable failure, retried under the same idempotency key; a
//! checkpoint saved by
//! one attempt is what the next one resumes from, and a lost claim cannot write one; an
//! item with no
//! registered handler stays pending; readiness, liveness and a graceful shutdown; an
//! authority an operator forgot stops, and its host learns it and why; the `/metrics` page
//! agrees with the store.
//!
//! The authorities run on a real tokio runtime; the store reads the harness's manual clock,
//! which a test advances when it needs a lease to lapse or a schedule to come due.

#[path = "support/mod.rs"]
#[macro_use]
mod support;

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use leasehold::Store;
use leasehold::authority::{Attempt, Authority, AuthorityConfig, Handler, HandlerOutcome};
use leasehold::clock::ManualClock;
use leasehold::model::HandlerVersion;
use leasehold::model::event::NewEvent;
use leasehold::model::schedule::{CatchUp, Trigger};
use leasehold::model::work::NewWork;
use leasehold::model::{FailureClass, InstanceStatus, PageRequest, WorkState};
use leasehold::ops::live_builds::LiveBuilds;
use leasehold::workflow::Catalog;
use leasehold::workflow::runnable::Standing;
use serde_json::{Map, Value, json};
use tokio::sync::Notify;

use support::Harness;
use support::runtime::RUNNING;
use support::wait::{wait_until, within};

per_provider! {
    async_handlers_run_every_kind_of_work,
    a_handler_outliving_three_lease_windows_keeps_its_claim,
    a_handler_told_its_lease_is_lost_stops_and_changes_nothing,
    a_panicking_handler_fails_retryably_and_is_retried_with_the_same_key,
    a_checkpoint_carries_to_the_next_attempt_and_is_fenced_after_a_loss,
    an_item_without_a_handler_stays_pending,
    a_workflow_is_claimed_only_with_every_action_handler,
    shutdown_tells_a_handler_past_its_grace_and_health_follows,
    an_authority_forgotten_while_it_read_as_gone_stops_and_says_why,
    the_metrics_page_states_what_the_store_recorded,
}

/// A lease short enough to lapse in a test, renewed fast.
const LEASE_MS: i64 = 1_000;

fn compat() -> HandlerVersion {
    HandlerVersion::demo()
}

fn config(id: &str) -> AuthorityConfig {
    AuthorityConfig {
        poll_interval_ms: 10,
        heartbeat_interval_ms: 100,
        ..AuthorityConfig::new(id, "v1").with_timing(LEASE_MS, 100)
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime")
}

/// Starts authority `id` on `rt` with the one async `handler` for `name`.
fn start(
    rt: &tokio::runtime::Runtime,
    store: &Store,
    id: &str,
    name: &str,
    handler: impl Handler,
) -> Authority {
    rt.block_on(
        Authority::builder(store.clone(), config(id))
            .handler(name, "1.0.0", handler)
            .start(),
    )
    .expect("starts")
}

fn enqueue(store: &Store, id: &str, handler: &str, payload: Value) {
    let created = store
        .enqueue(NewWork::effect(id, handler, payload.to_string()), &compat())
        .expect("enqueues");
    assert!(created);
}

fn state_of(store: &Store, id: &str) -> Option<WorkState> {
    store.work(id).expect("reads").map(|w| w.state)
}

/// A workflow that runs one action, then waits for an event and completes with it.
const APPROVAL: &str = r#"{
  "id": "approval",
  "name": "Approval",
  "inputs": [{ "id": "orderId", "valueType": "string", "required": true }],
  "bindings": [
    { "id": "quote", "valueType": "object", "producedBy": "quote" },
    { "id": "decision", "valueType": "object", "producedBy": "await" }
  ],
  "entry": "quote",
  "steps": [
    { "id": "quote", "type": "action", "action": "quote-order",
      "arguments": { "orderId": { "ref": "orderId" } }, "next": "await" },
    { "id": "await", "type": "wait-event", "event": "order-approved",
      "where": { "eq": [{ "ref": "EVENT", "path": ["orderId"] }, { "ref": "orderId" }] },
      "bind": { "decision": { "ref": "EVENT" } }, "next": "done" },
    { "id": "done", "type": "complete", "output": { "ref": "decision" } }
  ]
}"#;

#[expect(
    clippy::too_many_lines,
    reason = "a scripted scenario: its steps in the order they happen"
)]
fn async_handlers_run_every_kind_of_work(h: &dyn Harness) {
    let store = h.store();
    let seen = Arc::new(Mutex::new(Vec::<String>::new()));
    let record = |seen: &Arc<Mutex<Vec<String>>>| {
        let seen = seen.clone();
        move |attempt: Attempt| {
            let seen = seen.clone();
            async move {
                // Real async work: yield to the runtime before answering.
                tokio::task::yield_now().await;
                let line = format!("{}:{}", attempt.handler, attempt.events.len());
                seen.lock().expect("lock").push(line);
                HandlerOutcome::Succeeded(Some(json!({ "key": attempt.idempotency_key })))
            }
        }
    };
    enqueue(&store, "e1", "charge", json!({ "amount": 12 }));
    store
        .create_schedule(
            "nightly",
            Trigger::Interval { every_ms: 60_000 },
            CatchUp::Latest,
            "tick",
            "{}",
            &support::key("tick"),
        )
        .expect("creates");
    store
        .create_subscription(
            "audit",
            "order-approved",
            "deliver",
            // Made for 2.0.0 of its handler: the authority's 2.1.0 (a minor release) runs it.
            &leasehold::model::handler_key(
                "deliver",
                &HandlerVersion::parse("2.0.0").expect("a version"),
            ),
        )
        .expect("subscribes");
    let deployed = store
        .deploy_workflow(APPROVAL, &Catalog::permissive())
        .expect("deploys")
        .expect("valid");
    let mut args = Map::new();
    args.insert("orderId".into(), json!("o-7"));
    let started = store
        .start_workflow(
            &deployed.workflow_id,
            args,
            "app",
            Some("o-7"),
            support::actions_at_demo(&store, &deployed.workflow_id),
        )
        .expect("starts");

    let rt = runtime();
    {
        let authority = rt
            .block_on(
                Authority::builder(store.clone(), config("app-1"))
                    .handler("charge", "1.0.0", record(&seen))
                    .handler("tick", "1.0.0", record(&seen))
                    .handler("deliver", "2.1.0", record(&seen))
                    .handler("quote-order", "1.0.0", record(&seen))
                    .start(),
            )
            .expect("starts");
        wait_until("the effect to succeed", within(RUNNING), || {
            state_of(&store, "e1") == Some(WorkState::Succeeded)
        });
        // The schedule's first boundary comes due.
        h.clock().advance(60_000);
        wait_until("a schedule firing to succeed", within(RUNNING), || {
            seen.lock()
                .expect("lock")
                .iter()
                .any(|s| s.starts_with("tick:"))
        });
        wait_until(
            "the workflow to wait for its event",
            within(RUNNING),
            || {
                store
                    .instance(&started.instance_id)
                    .expect("reads")
                    .is_some_and(|i| i.waiting_event.as_deref() == Some("order-approved"))
            },
        );
        store
            .ingest(&NewEvent {
                event_type: "order-approved".into(),
                source: Some("crm".into()),
                external_id: Some("ap-1".into()),
                payload: json!({ "orderId": "o-7", "by": "ana" }),
            })
            .expect("ingests");
        wait_until("the workflow to complete", within(RUNNING), || {
            store
                .instance(&started.instance_id)
                .expect("reads")
                .is_some_and(|i| i.status == InstanceStatus::Completed)
        });
        // A held cursor looks again a poll interval later, by the store's clock.
        wait_until(
            "the subscription to deliver the event",
            within(RUNNING),
            || {
                h.clock().advance(100);
                store
                    .subscription("audit")
                    .expect("reads")
                    .is_some_and(|s| s.sequence >= 1)
            },
        );
        let stats = rt.block_on(authority.shutdown()).expect("stops");
        assert_eq!(stats.failures, 0);
    }
    let item = store.work("e1").expect("reads").expect("exists");
    assert_eq!(item.result.as_deref(), Some(r#"{"key":"e1"}"#));
    let seen = seen.lock().expect("lock").clone();
    for expected in ["charge:0", "quote-order:0", "deliver:1"] {
        assert!(
            seen.contains(&expected.to_owned()),
            "{expected} in {seen:?}"
        );
    }
    // The registration names every handler with its version.
    let registered = registration(&store, "app-1");
    let config: Value = serde_json::from_str(&registered.config).expect("json");
    assert_eq!(config["handlers"]["deliver"], "2.1.0");
}

fn a_handler_outliving_three_lease_windows_keeps_its_claim(h: &dyn Harness) {
    let store = h.store();
    let clock = h.clock().clone();
    enqueue(&store, "long", "export", json!({}));
    let calls = Arc::new(AtomicU32::new(0));
    let release = Arc::new(Notify::new());
    let handler = {
        let (calls, release) = (calls.clone(), release.clone());
        move |_: Attempt| {
            let (calls, release) = (calls.clone(), release.clone());
            async move {
                calls.fetch_add(1, Ordering::SeqCst);
                release.notified().await;
                HandlerOutcome::Succeeded(None)
            }
        }
    };
    let rt = runtime();
    {
        let authority = start(&rt, &store, "a", "export", handler);
        wait_until("the claim", within(RUNNING), || {
            calls.load(Ordering::SeqCst) == 1
        });
        let claimed = store.work("long").expect("reads").expect("exists");
        // Three lease windows pass, half a window at a time; after each step the claim
        // must have been renewed at the new "now" before the next (so it never lapses).
        for _ in 0..6 {
            clock.advance(LEASE_MS / 2);
            let now = clock_now(&clock);
            wait_until("a renewal past now", within(RUNNING), || {
                store
                    .work("long")
                    .expect("reads")
                    .and_then(|w| w.lease_expires_at)
                    .is_some_and(|expires| expires >= now + LEASE_MS)
            });
        }
        release.notify_one();
        wait_until("the completion", within(RUNNING), || {
            state_of(&store, "long") == Some(WorkState::Succeeded)
        });
        let done = store.work("long").expect("reads").expect("exists");
        assert_eq!(done.generation, claimed.generation, "never reclaimed");
        assert_eq!(done.attempt_number, 1);
        assert_eq!(calls.load(Ordering::SeqCst), 1, "ran once");
        let stats = rt.block_on(authority.shutdown()).expect("stops");
        assert_eq!((stats.leases_lost, stats.completions), (0, 1));
    }
}

fn registration(store: &Store, id: &str) -> leasehold::model::Authority {
    store
        .list_authorities(&PageRequest::first(100))
        .expect("lists")
        .rows
        .into_iter()
        .find(|a| a.instance_id == id)
        .expect("registered")
}

fn clock_now(clock: &ManualClock) -> i64 {
    leasehold::clock::Clock::now(clock)
}

fn a_handler_told_its_lease_is_lost_stops_and_changes_nothing(h: &dyn Harness) {
    let store = h.store();
    enqueue(&store, "slow", "export", json!({}));
    let stopped_early = Arc::new(AtomicU32::new(0));
    let handler = {
        let stopped_early = stopped_early.clone();
        move |attempt: Attempt| {
            let stopped_early = stopped_early.clone();
            async move {
                attempt.lease_lost().await;
                stopped_early.fetch_add(1, Ordering::SeqCst);
                // A late answer: the fence must keep it out of the store.
                HandlerOutcome::Succeeded(Some(json!("late")))
            }
        }
    };
    let rt = runtime();
    {
        let authority = start(&rt, &store, "a", "export", handler);
        wait_until("a's claim", within(RUNNING), || {
            state_of(&store, "slow") == Some(WorkState::Claimed)
        });
        // Another authority, whose clock is past a's lease, takes the item over.
        let later = ManualClock::new(clock_now(h.clock()) + 60_000);
        let other = h.reopen().with_clock(Arc::new(later));
        let taken = other
            .claim("slow", "b", support::key("export"), LEASE_MS * 100)
            .expect("b reclaims a lapsed claim");
        wait_until("the handler to learn it", within(RUNNING), || {
            stopped_early.load(Ordering::SeqCst) == 1
        });
        let stats = rt.block_on(authority.shutdown()).expect("stops");
        assert_eq!(stats.leases_lost, 1);
        assert_eq!(stats.completions, 0);
        let item = store.work("slow").expect("reads").expect("exists");
        assert_eq!(item.state, WorkState::Claimed);
        assert_eq!(item.owner_id.as_deref(), Some("b"));
        assert_eq!(item.generation, taken.generation);
        assert_eq!(item.result, None, "the late answer never landed");
    }
}

fn a_panicking_handler_fails_retryably_and_is_retried_with_the_same_key(h: &dyn Harness) {
    let store = h.store();
    enqueue(&store, "p1", "flaky", json!({}));
    let keys = Arc::new(Mutex::new(Vec::<(u32, String)>::new()));
    let handler = {
        let keys = keys.clone();
        move |attempt: Attempt| {
            let keys = keys.clone();
            async move {
                keys.lock()
                    .expect("lock")
                    .push((attempt.attempt, attempt.idempotency_key.clone()));
                assert!(attempt.attempt > 1, "the first attempt crashes mid-call");
                HandlerOutcome::Succeeded(None)
            }
        }
    };
    let rt = runtime();
    {
        let authority = start(&rt, &store, "a", "flaky", handler);
        wait_until("the first attempt's failure", within(RUNNING), || {
            state_of(&store, "p1") == Some(WorkState::Retry)
        });
        assert!(
            authority.health().live,
            "a panic never takes the authority down"
        );
        // Recorded at once, with the panic's message: no lapse to wait for.
        let item = store.work("p1").expect("reads").expect("exists");
        let failure = item.last_failure.expect("a failure");
        assert_eq!(
            (failure.class, failure.code.as_str()),
            (FailureClass::Retryable, "HANDLER_PANICKED")
        );
        assert_eq!(failure.message, "the first attempt crashes mid-call");
        h.clock().set(item.next_eligible_at);
        wait_until("the retry to succeed", within(RUNNING), || {
            state_of(&store, "p1") == Some(WorkState::Succeeded)
        });
        rt.block_on(authority.shutdown()).expect("stops");
    }
    let item = store.work("p1").expect("reads").expect("exists");
    assert_eq!(item.uncertain_attempts, 0);
    let keys = keys.lock().expect("lock").clone();
    assert_eq!(
        keys,
        vec![
            (1, item.idempotency_key.clone()),
            (2, item.idempotency_key.clone())
        ]
    );
}

fn a_checkpoint_carries_to_the_next_attempt_and_is_fenced_after_a_loss(h: &dyn Harness) {
    let store = h.store();
    enqueue(&store, "export", "export", json!({ "pages": 5 }));
    let resumed_from = Arc::new(Mutex::new(Vec::<Option<String>>::new()));
    let stale_save = Arc::new(Mutex::new(None::<String>));
    let handler = {
        let (resumed_from, stale_save) = (resumed_from.clone(), stale_save.clone());
        move |attempt: Attempt| {
            let (resumed_from, stale_save) = (resumed_from.clone(), stale_save.clone());
            async move {
                resumed_from
                    .lock()
                    .expect("lock")
                    .push(attempt.checkpoint.clone());
                if attempt.attempt > 1 {
                    return HandlerOutcome::Succeeded(None);
                }
                attempt
                    .save_checkpoint("page=3")
                    .await
                    .expect("saves under its claim");
                // Crash after page 3: nothing recorded, the claim lapses. Before answering,
                // wait to be told the claim is gone, then try to write anyway.
                attempt.lease_lost().await;
                let refused = attempt.save_checkpoint("page=4").await.expect_err("fenced");
                *stale_save.lock().expect("lock") = Some(refused.code().to_owned());
                HandlerOutcome::Uncertain
            }
        }
    };
    let rt = runtime();
    let authority = start(&rt, &store, "a", "export", handler);
    wait_until("the checkpoint", within(RUNNING), || {
        store
            .work("export")
            .expect("reads")
            .is_some_and(|w| w.checkpoint.as_deref() == Some("page=3"))
    });
    // Another authority reclaims the lapsed claim, so a's renewal is refused.
    let later = ManualClock::new(clock_now(h.clock()) + 60_000);
    let other = h.reopen().with_clock(Arc::new(later.clone()));
    let taken = other
        .claim("export", "b", support::key("export"), LEASE_MS * 100)
        .expect("b reclaims");
    assert_eq!(
        taken.checkpoint.as_deref(),
        Some("page=3"),
        "b resumes from it"
    );
    wait_until("a's stale save to be refused", within(RUNNING), || {
        stale_save.lock().expect("lock").is_some()
    });
    assert_eq!(
        stale_save.lock().expect("lock").as_deref(),
        Some("WORK_FENCED")
    );
    // b gives the item back (as a crash would, after its lease), and a runs it again.
    other
        .yield_back("export", "b", taken.generation, clock_now(h.clock()))
        .expect("b yields");
    wait_until("the resumed attempt", within(RUNNING), || {
        state_of(&store, "export") == Some(WorkState::Succeeded)
    });
    rt.block_on(authority.shutdown()).expect("stops");
    let resumed_from = resumed_from.lock().expect("lock").clone();
    assert_eq!(resumed_from.first(), Some(&None), "{resumed_from:?}");
    assert_eq!(
        resumed_from.last(),
        Some(&Some("page=3".to_owned())),
        "{resumed_from:?}"
    );
    let done = store.work("export").expect("reads").expect("exists");
    assert_eq!(done.checkpoint, None, "an ended item drops its checkpoint");
}

fn an_item_without_a_handler_stays_pending(h: &dyn Harness) {
    let store = h.store();
    enqueue(&store, "orphan", "not-deployed-yet", json!({}));
    enqueue(&store, "known", "known", json!({}));
    let rt = runtime();
    {
        let authority = rt
            .block_on(
                Authority::builder(store.clone(), config("a"))
                    .handler("known", "1.0.0", |_: Attempt| async {
                        HandlerOutcome::Succeeded(None)
                    })
                    .start(),
            )
            .expect("starts");
        wait_until("the known item", within(RUNNING), || {
            state_of(&store, "known") == Some(WorkState::Succeeded)
        });
        // Operators see why it waits: no running authority has its handler.
        let live = LiveBuilds::load(&store, clock_now(h.clock())).expect("reads");
        assert_eq!(
            live.standing(&support::key("not-deployed-yet"), "not-deployed-yet"),
            Standing::NoHandler
        );
        assert_eq!(
            live.standing(&support::key("known"), "known"),
            Standing::Runnable
        );
        let stats = rt.block_on(authority.shutdown()).expect("stops");
        assert_eq!(stats.failures, 0);
    }
    // Its key is its handler's: an authority without the handler never claims it.
    let orphan = store.work("orphan").expect("reads").expect("exists");
    assert_eq!(orphan.state, WorkState::Pending);
    assert_eq!(orphan.generation, 0, "never claimed: {orphan:?}");
    assert!(orphan.last_failure.is_none(), "{orphan:?}");
}

/// An embedded authority runs only the handlers the application registers: with none it
/// refuses to start (it never falls back on the built-in demo handlers), as it does with
/// a handler limit on a handler it does not register, naming the nearest one; either
/// way nothing is registered in the store. The runtime entry refuses the same.
#[test]
fn an_embedded_authority_without_handlers_refuses_to_start() {
    let h = support::memory();
    let store = h.store();
    enqueue(&store, "e1", "send-email", json!({}));
    let rt = runtime();
    let bare = rt
        .block_on(Authority::builder(store.clone(), config("bare")).start())
        .expect_err("no handler");
    assert_eq!(bare.code(), "INVALID");
    assert!(
        bare.to_string().contains("bare has no handler registered"),
        "{bare}"
    );
    let limited = rt
        .block_on(
            Authority::builder(
                store.clone(),
                config("limited").with_handler_limit("chrage", 1),
            )
            .handler("charge", "1.0.0", |_: Attempt| async {
                HandlerOutcome::Succeeded(None)
            })
            .start(),
        )
        .expect_err("a limit on no handler");
    assert!(
        limited.to_string().contains(
            "handlerLimits.chrage: no handler \"chrage\" runs here (did you mean \"charge\"?)"
        ),
        "{limited}"
    );
    let empty = leasehold::authority::handlers::Workload::new("empty", 0);
    let direct = rt
        .block_on(leasehold::authority::run_authority(
            store.clone(),
            config("direct"),
            empty,
            None,
            async {},
        ))
        .expect_err("no handler");
    assert_eq!(direct.code(), "INVALID");
    let registered = store
        .list_authorities(&PageRequest::first(100))
        .expect("reads")
        .rows;
    assert!(registered.is_empty(), "{registered:?}");
    let e1 = store.work("e1").expect("reads").expect("exists");
    assert_eq!((e1.state, e1.generation), (WorkState::Pending, 0));
}

/// An instance whose action no authority here has a handler for is never claimed by one
/// that lacks it (its key needs every action's handler), however often it polls, and an
/// authority with the handler then runs it.
fn a_workflow_is_claimed_only_with_every_action_handler(h: &dyn Harness) {
    let store = h.store();
    let deployed = store
        .deploy_workflow(APPROVAL, &Catalog::permissive())
        .expect("deploys")
        .expect("valid");
    let mut args = Map::new();
    args.insert("orderId".into(), json!("o-9"));
    let started = store
        .start_workflow(
            &deployed.workflow_id,
            args,
            "app",
            None,
            support::actions_at_demo(&store, &deployed.workflow_id),
        )
        .expect("starts");
    let rt = runtime();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("binds");
    let addr = listener.local_addr().expect("an address");
    let without = rt
        .block_on(
            Authority::builder(store.clone(), config("without"))
                .handler("other", "1.0.0", |_: Attempt| async {
                    HandlerOutcome::Succeeded(None)
                })
                .metrics(listener)
                .start(),
        )
        .expect("starts");
    let grants = |store: &Store| {
        store
            .ownership_history(
                Some(&leasehold::workflow::engine::instance_resource(
                    &started.instance_id,
                )),
                0,
                1_000,
            )
            .expect("history")
            .0
            .len()
    };
    // Twenty more polls (the clock stands still, so the wait is not over), as the
    // authority's own metrics count them.
    let polls = || {
        let (_, page) = http_get(addr, "/metrics");
        sample(&page, "leasehold_store_call_seconds_count{verb=\"claim\"}").unwrap_or(0.0)
    };
    let before = polls();
    wait_until("twenty more polls", within(RUNNING), || {
        polls() >= before + 20.0
    });
    assert_eq!(grants(&store), 0, "never claimed without its handler");
    rt.block_on(without.shutdown()).expect("stops");
    // An authority with the handler runs it.
    let with = start(&rt, &store, "with", "quote-order", |_: Attempt| async {
        HandlerOutcome::Succeeded(Some(json!({ "quote": 1 })))
    });
    wait_until("the action to run", within(RUNNING), || {
        store
            .instance(&started.instance_id)
            .expect("reads")
            .is_some_and(|i| i.waiting_event.as_deref() == Some("order-approved"))
    });
    rt.block_on(with.shutdown()).expect("stops");
}

/// An operator forgets an embedded authority that read as gone to them (their clock past
/// its heartbeats, as a paused process would read): the authority's next heartbeat finds no
/// registration, it stops, `stopped()` resolves for its host, health says it is not live,
/// and `shutdown()` answers `REGISTRATION_LOST` naming it.
fn an_authority_forgotten_while_it_read_as_gone_stops_and_says_why(h: &dyn Harness) {
    let store = h.store();
    let rt = runtime();
    let authority = start(&rt, &store, "a", "export", |_: Attempt| async {
        HandlerOutcome::Succeeded(None)
    });
    let later = ManualClock::new(clock_now(h.clock()) + 600_000);
    let operator = h.reopen().with_clock(Arc::new(later));
    operator
        .forget_authority("a", "al@host", "it looked gone")
        .expect("an authority gone to the operator is forgotten");
    rt.block_on(async { tokio::time::timeout(RUNNING, authority.stopped()).await })
        .expect("the authority stops of its own accord");
    assert!(!authority.health().live, "{:?}", authority.health());
    let why = rt
        .block_on(authority.shutdown())
        .expect_err("the stop says why");
    assert_eq!(why.code(), "REGISTRATION_LOST", "{why}");
    assert!(
        why.to_string()
            .contains("instance a was forgotten by an operator"),
        "{why}"
    );
}

fn shutdown_tells_a_handler_past_its_grace_and_health_follows(h: &dyn Harness) {
    let store = h.store();
    enqueue(&store, "stuck", "export", json!({}));
    let told = Arc::new(AtomicU32::new(0));
    let handler = {
        let told = told.clone();
        move |attempt: Attempt| {
            let told = told.clone();
            async move {
                attempt.lease_lost().await;
                told.fetch_add(1, Ordering::SeqCst);
                HandlerOutcome::Uncertain
            }
        }
    };
    let rt = runtime();
    {
        let refused = rt
            .block_on(
                Authority::builder(store.clone(), config("a"))
                    .handler("export", "one", handler.clone())
                    .start(),
            )
            .expect_err("a bad version");
        assert_eq!(refused.code(), "INVALID");
        assert!(refused.to_string().contains("\"export\""), "{refused}");
        let authority = rt
            .block_on(
                Authority::builder(store.clone(), config("a"))
                    .handler("export", "1.0.0", handler)
                    .shutdown_grace_ms(50)
                    .start(),
            )
            .expect("starts");
        let health = authority.health();
        assert!(
            health.ready && health.live && health.registered,
            "{health:?}"
        );
        let twin = rt
            .block_on(
                Authority::builder(store.clone(), config("a"))
                    .handler("export", "1.0.0", |_: Attempt| async {
                        HandlerOutcome::Uncertain
                    })
                    .start(),
            )
            .expect_err("one instance id, one process");
        assert_eq!(twin.code(), "INSTANCE_IN_USE");
        wait_until("the claim", within(RUNNING), || {
            state_of(&store, "stuck") == Some(WorkState::Claimed)
        });
        let stats = rt.block_on(authority.shutdown()).expect("stops");
        assert_eq!(stats.abandoned_on_shutdown, 1);
        wait_until("the handler told", within(RUNNING), || {
            told.load(Ordering::SeqCst) == 1
        });
    }
    let registered = registration(&store, "a");
    assert!(registered.stopped_at.is_some());
}

/// `GET path` on `addr`: the status line and the body.
fn http_get(addr: std::net::SocketAddr, path: &str) -> (String, String) {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(addr).expect("connects");
    // In two pieces, as clients may: the server reads the whole head.
    stream
        .write_all(format!("GET {path} HTTP/1.1\r\n").as_bytes())
        .expect("writes");
    stream.write_all(b"Host: x\r\n\r\n").expect("writes");
    let mut response = String::new();
    stream.read_to_string(&mut response).expect("reads");
    let (head, body) = response.split_once("\r\n\r\n").expect("a response");
    (
        head.lines().next().unwrap_or_default().to_owned(),
        body.to_owned(),
    )
}

/// The value of the sample whose line starts with `series ` (name and labels).
fn sample(page: &str, series: &str) -> Option<f64> {
    page.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
}

fn the_metrics_page_states_what_the_store_recorded(h: &dyn Harness) {
    let store = h.store();
    for i in 0..5 {
        enqueue(&store, &format!("m{i}"), "charge", json!({}));
    }
    enqueue(&store, "bad", "charge", json!({ "fail": true }));
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("binds");
    let addr = listener.local_addr().expect("an address");
    let rt = runtime();
    let authority = rt
        .block_on(
            Authority::builder(store.clone(), config("metered"))
                .handler("charge", "1.0.0", |attempt: Attempt| async move {
                    if attempt.payload["fail"] == true {
                        HandlerOutcome::terminal("DECLINED", "no")
                    } else {
                        HandlerOutcome::Succeeded(None)
                    }
                })
                .metrics(listener)
                .start(),
        )
        .expect("starts");
    wait_until("every item to end", within(RUNNING), || {
        (0..5).all(|i| state_of(&store, &format!("m{i}")) == Some(WorkState::Succeeded))
            && state_of(&store, "bad") == Some(WorkState::Failed)
    });
    let (status, page) = http_get(addr, "/metrics");
    assert!(status.contains("200"), "{status}");
    assert_eq!(
        sample(&page, "leasehold_completions_total"),
        Some(5.0),
        "{page}"
    );
    assert_eq!(
        sample(
            &page,
            "leasehold_attempt_failures_total{class=\"terminal\"}"
        ),
        Some(1.0)
    );
    assert_eq!(
        sample(
            &page,
            "leasehold_handler_duration_seconds_count{handler=\"charge\"}"
        ),
        Some(6.0)
    );
    assert_eq!(sample(&page, "leasehold_inflight"), Some(0.0));
    assert_eq!(sample(&page, "leasehold_ready"), Some(1.0));
    let info = format!(
        "leasehold_build_info{{instance=\"metered\",build=\"v1\",compat=\"{}\"}}",
        leasehold::model::CompatSet::new([support::key("charge")]).digest()
    );
    assert_eq!(sample(&page, &info), Some(1.0), "{page}");
    assert!(page.trim_end().ends_with("# EOF"));
    assert!(http_get(addr, "/").0.contains("404"));
    rt.block_on(authority.shutdown()).expect("stops");
    assert!(
        std::net::TcpStream::connect(addr).is_err(),
        "the endpoint stops with the authority"
    );
}
