//! A handler's retry policy as an authority applies it: each failed attempt of that handler
//! is retried after the policy's delay, one by one or in a group commit, its cap ends the
//! item, and another handler keeps the default backoff; a retry a handler asks to wait for
//! is held back at most a day.

use leasehold::authority::handlers::MAX_RETRY_AFTER_MS;
use leasehold::authority::{AuthorityCore, Finished, HandlerOutcome, Pace, Workload};
use leasehold::clock::ManualClock;
use leasehold::model::work::NewWork;
use leasehold::model::{Failure, FailureClass, WorkState};
use leasehold::rules::retry::{Multiplier, RetryPolicy};
use leasehold::rules::work::Backoff;

use crate::support::runtime::{T0, compat, config, store};

fn failing() -> HandlerOutcome {
    HandlerOutcome::Failed(Failure {
        class: FailureClass::Retryable,
        code: "E_DOWN".into(),
        message: "partner down".into(),
    })
}

#[test]
fn a_handlers_policy_spaces_and_caps_its_retries() {
    let clock = ManualClock::new(T0);
    let s = store(&clock);
    let c = compat();
    let spec = |id: &str, handler: &str| NewWork {
        max_attempts: 10,
        ..NewWork::effect(id, handler, "{}")
    };
    s.enqueue_batch(vec![spec("fx", "flaky"), spec("plain", "other")], &c)
        .expect("enqueues");
    let handlers = Workload::new("retry", 1)
        .with("flaky", |_: &_| failing())
        .with("other", |_: &_| failing());
    let policy = RetryPolicy {
        max_attempts: Some(4),
        initial_delay_ms: 2_000,
        multiplier: Multiplier::new(3.0).expect("valid"),
        max_delay_ms: 10_000,
    };
    let cfg = config("a").with_retry("flaky", policy);
    let a = AuthorityCore::new(s.clone(), cfg, handlers, Pace::Virtual).expect("a");
    let mut waits = Vec::new();
    for round in 0..4 {
        let jobs = a.poll().expect("polls");
        let executed = jobs.iter().map(|j| a.execute(j)).collect::<Vec<_>>();
        // One by one on even rounds, as one group commit on odd ones.
        let answers = if round % 2 == 0 {
            executed.into_iter().map(|e| a.finish(e)).collect()
        } else {
            a.finish_all(executed)
        };
        let fx = s.work("fx").expect("read").expect("fx");
        if round < 3 {
            assert!(answers.contains(&Finished::RetryScheduled), "{answers:?}");
            waits.push(fx.next_eligible_at - s.now());
            assert_eq!(fx.max_attempts, 4, "the cap is written into the item");
            let plain = s.work("plain").expect("read").expect("plain");
            assert_eq!(
                plain.next_eligible_at - s.now(),
                Backoff::default().delay(plain.attempt_number)
            );
            clock.set(fx.next_eligible_at.max(plain.next_eligible_at));
        } else {
            assert_eq!((fx.state, fx.attempt_number), (WorkState::Failed, 4));
        }
    }
    assert_eq!(waits, [2_000, 6_000, 10_000]);
    assert_eq!(s.attempt_errors("fx").expect("errors").len(), 4);
}

/// A handler asking for a retry no sooner than `i64::MAX` ms from now — through
/// `retry_after` or by building the outcome itself — has its item retried a day later,
/// the longest a handler may ask for, as an `exec` or `http` handler's `delayMs` is: never
/// parked past the end of time.
#[test]
fn a_retry_a_handler_asks_for_waits_at_most_a_day() {
    let clock = ManualClock::new(T0);
    let s = store(&clock);
    s.enqueue_batch(
        vec![
            NewWork::effect("asked", "asks", "{}"),
            NewWork::effect("built", "builds", "{}"),
        ],
        &compat(),
    )
    .expect("enqueues");
    let handlers = Workload::new("later", 1)
        .with("asks", |_: &_| {
            HandlerOutcome::retry_after("LATER", "come back much later", i64::MAX)
        })
        .with("builds", |_: &_| HandlerOutcome::RetryAfter {
            failure: Failure {
                class: FailureClass::Retryable,
                code: "LATER".into(),
                message: "come back much later".into(),
            },
            delay_ms: i64::MAX,
        });
    let a = AuthorityCore::new(s.clone(), config("a"), handlers, Pace::Virtual).expect("a");
    let jobs = a.poll().expect("polls");
    assert_eq!(jobs.len(), 2);
    let executed = jobs.iter().map(|j| a.execute(j)).collect::<Vec<_>>();
    assert_eq!(
        a.finish_all(executed),
        [Finished::RetryScheduled, Finished::RetryScheduled]
    );
    for id in ["asked", "built"] {
        let item = s.work(id).expect("reads").expect("exists");
        assert_eq!(item.state, WorkState::Retry, "{id}");
        assert_eq!(item.next_eligible_at - s.now(), MAX_RETRY_AFTER_MS, "{id}");
    }
}
