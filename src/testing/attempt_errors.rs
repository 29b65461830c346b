//! A handler's retry policy and the errors of an item's attempts: the policy's delays on
//! the store's clock, its cap written into the item, and the bounded list of attempt
//! errors — newest first, kept across a requeue and a reopen, a lapse recorded by its
//! takeover, removed by retention with the item.

use crate::clock::Millis;
use crate::model::attempt_error::{
    ATTEMPT_ERRORS_KEPT, LAPSED_CODE, MAX_ATTEMPT_ERROR_MESSAGE_BYTES,
};
use crate::model::work::NewWork;
use crate::model::{Failure, FailureClass, WorkState};
use crate::rules::retry::{Multiplier, Retry, RetryPolicy};
use crate::store::RetentionPolicy;

use super::work::{effect, item, retryable};
use super::{Harness, K, ok};

fn policy(initial: Millis, multiplier: f64, max: Millis, max_attempts: Option<u32>) -> Retry {
    RetryPolicy {
        max_attempts,
        initial_delay_ms: initial,
        multiplier: Multiplier::new(multiplier).unwrap(),
        max_delay_ms: max,
    }
    .retry(0)
}

fn with_attempts(id: &str, max_attempts: u32) -> NewWork {
    NewWork {
        max_attempts,
        ..effect(id)
    }
}

/// A handler retrying from 2 s, tripled, capped at 10 s: its retries are due 2, 6, 10 and
/// 10 s after each failure, on every provider and after a reopen.
pub fn a_handlers_policy_spaces_its_retries(h: &dyn Harness) {
    let s = h.store();
    ok("enqueue", s.enqueue(with_attempts("e", 9), K));
    let shape = policy(2_000, 3.0, 10_000, None);
    let mut waits = Vec::new();
    for _ in 0..4 {
        let held = ok("claim", h.store().claim("e", "a", K, 60_000));
        let failed = ok(
            "fail",
            s.fail_with_retry("e", "a", held.generation, retryable("E"), shape),
        );
        assert_eq!(failed.state, WorkState::Retry);
        waits.push(failed.next_eligible_at - s.now());
        assert_eq!(item(h, "e").next_eligible_at, failed.next_eligible_at);
        h.clock().set(failed.next_eligible_at);
    }
    assert_eq!(waits, [2_000, 6_000, 10_000, 10_000]);
    assert_eq!(h.reopen().work("e").unwrap().unwrap().attempt_number, 4);
}

/// A cap lowers an item's budget when a failure is recorded under it, and the item keeps
/// the budget that was applied; it never raises a smaller one.
pub fn a_handlers_cap_is_written_into_the_item(h: &dyn Harness) {
    let s = h.store();
    ok("enqueue", s.enqueue(with_attempts("wide", 5), K));
    ok("enqueue", s.enqueue(with_attempts("narrow", 1), K));
    let capped = policy(0, 1.0, 0, Some(2));
    for round in 1..=2 {
        let held = ok("claim", s.claim("wide", "a", K, 60_000));
        let failed = ok(
            "fail",
            s.fail_with_retry("wide", "a", held.generation, retryable("E"), capped),
        );
        let expected = if round == 1 {
            WorkState::Retry
        } else {
            WorkState::Failed
        };
        assert_eq!((failed.state, failed.max_attempts), (expected, 2));
    }
    let held = ok("claim", s.claim("narrow", "a", K, 60_000));
    let generous = policy(0, 1.0, 0, Some(9));
    let failed = ok(
        "fail",
        s.fail_with_retry("narrow", "a", held.generation, retryable("E"), generous),
    );
    assert_eq!((failed.state, failed.max_attempts), (WorkState::Failed, 1));
    assert_eq!(item(h, "wide").max_attempts, 2, "durable");
}

/// Every failed attempt leaves its error: at most [`ATTEMPT_ERRORS_KEPT`], newest first,
/// with its attempt, generation, owner, instant, class, code and a bounded message; a
/// requeue keeps them (they are history) and a reopen reads them back.
pub fn attempt_errors_are_bounded_newest_first_and_outlive_a_requeue(h: &dyn Harness) {
    let s = h.store();
    let total = ATTEMPT_ERRORS_KEPT as u32 + 5;
    ok("enqueue", s.enqueue(with_attempts("e", total), K));
    let now_shape = policy(0, 1.0, 0, None);
    let long = "x".repeat(MAX_ATTEMPT_ERROR_MESSAGE_BYTES * 2);
    for n in 1..=total {
        let held = ok("claim", s.claim("e", &format!("o{n}"), K, 60_000));
        let failure = Failure {
            class: if n == total {
                FailureClass::Terminal
            } else {
                FailureClass::Retryable
            },
            code: format!("E{n}"),
            message: if n == total {
                long.clone()
            } else {
                format!("attempt {n}")
            },
        };
        ok(
            "fail",
            s.fail_with_retry("e", &format!("o{n}"), held.generation, failure, now_shape),
        );
        h.clock().advance(1);
    }
    let errors = ok("errors", h.reopen().attempt_errors("e"));
    assert_eq!(errors.len(), ATTEMPT_ERRORS_KEPT);
    let attempts: Vec<u32> = errors.iter().map(|e| e.attempt).collect();
    let expected: Vec<u32> = (total - ATTEMPT_ERRORS_KEPT as u32 + 1..=total)
        .rev()
        .collect();
    assert_eq!(attempts, expected, "the newest, newest first");
    let newest = &errors[0];
    assert_eq!(
        (
            newest.work_id.as_str(),
            newest.generation,
            newest.owner_id.as_str(),
            newest.class,
            newest.code.as_str(),
        ),
        (
            "e",
            u64::from(total),
            format!("o{total}").as_str(),
            FailureClass::Terminal,
            format!("E{total}").as_str(),
        )
    );
    assert!(newest.message.len() <= MAX_ATTEMPT_ERROR_MESSAGE_BYTES);
    assert_eq!(errors[1].message, format!("attempt {}", total - 1));
    assert!(errors[0].at > errors[1].at);

    ok("requeue", s.requeue_work("e", "ops", "fixed"));
    assert_eq!(
        ok("errors", s.attempt_errors("e")),
        errors,
        "kept across requeue"
    );
    let held = ok("claim", s.claim("e", "again", K, 60_000));
    ok(
        "fail",
        s.fail_with_retry("e", "again", held.generation, retryable("AFTER"), now_shape),
    );
    let after = ok("errors", s.attempt_errors("e"));
    assert_eq!(after.len(), ATTEMPT_ERRORS_KEPT);
    assert_eq!(
        (
            after[0].attempt,
            after[0].code.as_str(),
            after[1].code.as_str()
        ),
        (1, "AFTER", format!("E{total}").as_str())
    );
    assert!(ok("none", s.attempt_errors("nope")).is_empty());
}

/// A claim that lapsed is recorded by the claim that takes it over: `LAPSED` under the
/// lapsed owner and generation, and the dead letter's own error when it was the last.
pub fn a_lapsed_attempt_is_recorded_by_its_takeover(h: &dyn Harness) {
    let s = h.store();
    ok("enqueue", s.enqueue(with_attempts("e", 2), K));
    let first = ok("claim", s.claim("e", "a", K, 1_000));
    h.clock().advance(60_000);
    let second = ok("take over", s.claim("e", "b", K, 1_000));
    let errors = ok("errors", s.attempt_errors("e"));
    assert_eq!(errors.len(), 1);
    assert_eq!(
        (
            errors[0].attempt,
            errors[0].generation,
            errors[0].owner_id.as_str(),
            errors[0].code.as_str(),
            errors[0].class
        ),
        (
            1,
            first.generation,
            "a",
            LAPSED_CODE,
            FailureClass::Retryable
        )
    );
    h.clock().advance(60_000);
    assert!(s.claim("e", "c", K, 1_000).is_err(), "a dead letter");
    let errors = ok("errors", s.attempt_errors("e"));
    assert_eq!(
        (
            errors[0].attempt,
            errors[0].generation,
            errors[0].owner_id.as_str()
        ),
        (2, second.generation, "b")
    );
    assert_eq!(errors[0].class, FailureClass::UncertainExhausted);
}

/// Retention removes an item's attempt errors with the item, and only then.
pub fn retention_removes_attempt_errors_with_their_item(h: &dyn Harness) {
    let s = h.store();
    ok("enqueue", s.enqueue(effect("done"), K));
    ok("enqueue", s.enqueue(effect("kept"), K));
    for id in ["done", "kept"] {
        let held = ok("claim", s.claim(id, "a", K, 60_000));
        let shape = policy(0, 1.0, 0, None);
        ok(
            "fail",
            s.fail_with_retry(id, "a", held.generation, retryable("E"), shape),
        );
    }
    let held = ok("claim", s.claim("done", "a", K, 60_000));
    ok("complete", s.complete("done", "a", held.generation, None));
    let policy = RetentionPolicy::default();
    h.clock().advance(policy.finished_ms + 1);
    while ok("trim", s.trim(&policy, 10)).total() > 0 {}
    assert!(ok("read", s.work("done")).is_none());
    assert!(ok("errors", s.attempt_errors("done")).is_empty());
    assert_eq!(ok("errors", s.attempt_errors("kept")).len(), 1);
}
