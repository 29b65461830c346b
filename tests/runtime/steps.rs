//! The core's step functions on a manual clock: a stale owner's completion and renewal are
//! fenced, an uncertain attempt is reclaimed with its idempotency key, and a store outage
//! defers the outcome until the store is back.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use leasehold::Store;
use leasehold::authority::workload::{self};
use leasehold::authority::{
    AttemptContext, AuthorityConfig, AuthorityCore, Finished, HandlerOutcome, Pace, Workload,
};
use leasehold::clock::ManualClock;
use leasehold::ids::SeededIds;
use leasehold::model::WorkState;
use leasehold::model::work::NewWork;
use leasehold::rules::work::Backoff;
use leasehold::store::memory::MemoryBackend;
use serde_json::json;

use crate::support::runtime::{T0, compat, config, store};

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
