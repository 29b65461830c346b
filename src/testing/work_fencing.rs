//! Fencing of work owners: expiry alone fences nothing, a claimer's reclaim backoff sets the
//! grace, a reclaim fences the old owner, and an unrecorded attempt is uncertain and keeps its
//! keys.

use crate::model::WorkState;
use crate::model::work::NewWork;
use crate::rules::work::Backoff;
use crate::store::ClaimBudget;

use super::work::{effect, item, retryable};
use super::{Harness, K, ok, refused};

/// Expiry alone fences nothing for work either: the owner's renew / complete / fail /
/// yield still apply when nobody reclaimed the item.
pub fn expiry_without_reclaim_does_not_fence_work(h: &dyn Harness) {
    let s = h.store();
    for id in ["e1", "e2", "e3"] {
        ok("enqueue", s.enqueue(effect(id), K));
    }
    let claimed = ok("claim", s.claim_batch("a", K, 3, 1_000));
    assert_eq!(claimed.len(), 3);
    h.clock().advance(10_000);
    let s = h.reopen();
    let renewed = ok("renew after expiry", s.renew_claim("e1", "a", 1, 1_000));
    assert_eq!(renewed.lease_expires_at, Some(s.now() + 1_000));
    h.clock().advance(10_000);
    let done = ok(
        "complete after expiry",
        s.complete("e1", "a", 1, Some("{\"ok\":true}".into())),
    );
    assert_eq!(
        (done.state, done.result.as_deref(), done.generation),
        (WorkState::Succeeded, Some("{\"ok\":true}"), 1)
    );
    assert_eq!(
        ok("fail after expiry", s.fail("e2", "a", 1, retryable("E"))).state,
        WorkState::Retry
    );
    let yielded = ok(
        "yield after expiry",
        s.yield_back("e3", "a", 1, s.now() + 5),
    );
    assert_eq!(
        (yielded.state, yielded.next_eligible_at),
        (WorkState::Pending, s.now() + 5)
    );
}

/// Expiry alone fences nothing while others poll either: a claimer that finds a lapse
/// before a retry's backoff after its expiry writes nothing, so the owner nobody replaced
/// renews and records its outcome at its own generation — on its first attempt and on its
/// last alike (no dead letter) — and the history holds one grant per item and no refused
/// write.
pub fn a_lapse_others_see_is_still_its_owners(h: &dyn Harness) {
    let s = h.store();
    ok("enqueue", s.enqueue(effect("first"), K));
    let last = NewWork {
        max_attempts: 1,
        ..effect("last")
    };
    ok("enqueue last", s.enqueue(last, K));
    let held = ok("a claims", s.claim_batch("a", K, 2, 1_000));
    assert_eq!(held.len(), 2);
    h.clock().advance(1_000 + Backoff::default().delay(1) - 1);
    for claimer in ["b", "c"] {
        assert!(ok("others poll", h.reopen().claim_batch(claimer, K, 10, 1_000)).is_empty());
        assert_eq!(
            refused("a named claim", s.claim("last", claimer, K, 1_000)),
            "WORK_IN_PROGRESS"
        );
    }
    for it in &held {
        assert_eq!(
            &item(h, &it.id),
            it,
            "a lapse nobody took over is untouched"
        );
    }
    let s = h.reopen();
    ok("a renews late", s.renew_claim("first", "a", 1, 1_000));
    let done = ok(
        "a completes its last attempt late",
        s.complete("last", "a", 1, Some("{\"ok\":true}".into())),
    );
    assert_eq!(
        (done.state, done.result.as_deref(), done.uncertain_attempts),
        (WorkState::Succeeded, Some("{\"ok\":true}"), 0)
    );
    assert!(!done.is_dead_letter());
    ok("a completes the other", s.complete("first", "a", 1, None));
    let (grants, writes) = ok("history", s.ownership_history(None, 0, 1_000));
    assert_eq!(grants.len(), 2, "one grant per item: nobody took over");
    assert!(
        writes.iter().all(|w| w.accepted),
        "nothing fenced: {writes:?}"
    );
}

/// The claimer's reclaim backoff (an authority's `reclaim_after`) sets how long a lapsed
/// claim's owner may still finish: a patient claimer leaves it alone through its whole
/// backoff, then takes it over like any reclaim.
pub fn the_claimers_reclaim_backoff_sets_the_grace(h: &dyn Harness) {
    let s = h.store();
    ok("enqueue", s.enqueue(effect("e"), K));
    let held = ok("a claims", s.claim("e", "a", K, 1_000));
    let expiry = held.lease_expires_at.expect("claimed");
    let patient = ClaimBudget::new(10).with_reclaim(Backoff {
        initial_ms: 60_000,
        max_ms: 60_000,
        ..Backoff::default()
    });
    h.clock().set(expiry + 59_999);
    assert!(
        ok(
            "patient claimer",
            s.claim_work_within("b", K, &patient, 1_000)
        )
        .is_empty()
    );
    assert_eq!(item(h, "e"), held, "untouched");
    h.clock().advance(1);
    let taken = ok(
        "patience over",
        s.claim_work_within("b", K, &patient, 1_000),
    );
    let [claim] = taken.as_slice() else {
        panic!("one takeover: {taken:?}");
    };
    assert_eq!(
        (
            claim.item.generation,
            claim.item.uncertain_attempts,
            claim.took_over_expired_at
        ),
        (2, 1, Some(expiry))
    );
    assert_eq!(
        refused("the owner, now replaced", s.complete("e", "a", 1, None)),
        "WORK_FENCED"
    );
}

/// A reclaim mints generation + 1 and fences the prior owner: its complete / fail / renew /
/// yield are `WORK_FENCED` (and recorded as refused); a write naming the right generation
/// but another owner is fenced too.
pub fn reclaim_fences_the_old_work_owner(h: &dyn Harness) {
    let s = h.store();
    ok("enqueue", s.enqueue(effect("e"), K));
    let a = ok("a claims", s.claim("e", "a", K, 1_000));
    h.clock().advance(999);
    assert_eq!(
        refused("b while a's claim is live", s.claim("e", "b", K, 1_000)),
        "WORK_IN_PROGRESS"
    );
    assert!(ok("batch while live", s.claim_batch("b", K, 10, 1_000)).is_empty());
    h.clock().advance(1);
    assert!(
        ok(
            "batch at expiry: the lapse counts, the reclaim backs off",
            h.reopen().claim_batch("b", K, 10, 1_000)
        )
        .is_empty()
    );
    h.clock().advance(Backoff::default().delay(1));
    let b = ok(
        "b reclaims once the backoff passed",
        h.reopen().claim_batch("b", K, 10, 1_000),
    )
    .pop()
    .expect("reclaimed");
    assert_eq!(
        (b.generation, b.owner_id.as_deref()),
        (a.generation + 1, Some("b"))
    );

    assert_eq!(
        refused("stale complete", s.complete("e", "a", a.generation, None)),
        "WORK_FENCED"
    );
    assert_eq!(
        refused("stale fail", s.fail("e", "a", a.generation, retryable("E"))),
        "WORK_FENCED"
    );
    assert_eq!(
        refused("stale renew", s.renew_claim("e", "a", a.generation, 1_000)),
        "WORK_FENCED"
    );
    assert_eq!(
        refused("stale yield", s.yield_back("e", "a", a.generation, s.now())),
        "WORK_FENCED"
    );
    assert_eq!(
        refused(
            "right generation, wrong owner",
            s.complete("e", "a", b.generation, None)
        ),
        "WORK_FENCED"
    );
    assert_eq!(item(h, "e"), b, "the stale owner changed nothing");
    ok("b completes", s.complete("e", "b", b.generation, None));
    assert_eq!(
        refused(
            "stale owner after the end",
            s.complete("e", "a", a.generation, None)
        ),
        "already-terminal"
    );

    let (_, writes) = ok("history", s.ownership_history(Some("e"), 0, 1_000));
    let by_a: Vec<_> = writes.iter().filter(|w| w.owner_id == "a").collect();
    assert_eq!(by_a.len(), 6);
    assert!(by_a.iter().all(|w| !w.accepted), "{by_a:?}");
    assert_eq!(
        by_a.iter()
            .filter(|w| w.refusal.as_deref() == Some("WORK_FENCED"))
            .count(),
        5
    );
    assert_eq!(
        writes.iter().filter(|w| w.accepted).count(),
        1,
        "only b's completion applied"
    );
}

/// Reclaiming an attempt whose outcome was never recorded counts an uncertain attempt and
/// keeps the idempotency key and logical effect id, so the retry dedups downstream.
pub fn unrecorded_attempt_is_uncertain_and_keeps_its_keys(h: &dyn Harness) {
    let store = h.store();
    let spec = NewWork {
        logical_effect_id: Some("intent-1".into()),
        idempotency_key: Some("idem-1".into()),
        ..effect("e")
    };
    ok("enqueue", store.enqueue(spec, K));
    ok("enqueue default keys", store.enqueue(effect("plain"), K));
    let plain = item(h, "plain");
    assert_eq!(
        (
            plain.logical_effect_id.as_str(),
            plain.idempotency_key.as_str()
        ),
        ("plain", "plain"),
        "key defaults to the intent id"
    );

    let by_a = ok("a claims", store.claim("e", "a", K, 1_000));
    assert_eq!((by_a.attempt_number, by_a.uncertain_attempts), (1, 0));
    h.clock().advance(1_000 + Backoff::default().delay(1));
    // The owner died: a new process picks the item up.
    let store = h.reopen();
    let by_b = ok("b reclaims", store.claim_batch("b", K, 10, 1_000))
        .into_iter()
        .find(|i| i.id == "e")
        .expect("e reclaimed");
    assert_eq!(
        (
            by_b.generation,
            by_b.attempt_number,
            by_b.uncertain_attempts
        ),
        (2, 2, 1)
    );
    assert_eq!(
        (
            by_b.logical_effect_id.as_str(),
            by_b.idempotency_key.as_str()
        ),
        ("intent-1", "idem-1")
    );
    h.clock().advance(1_000 + Backoff::default().delay(2));
    let by_c = ok("c reclaims directly", h.reopen().claim("e", "c", K, 1_000));
    assert_eq!(
        (
            by_c.generation,
            by_c.attempt_number,
            by_c.uncertain_attempts
        ),
        (3, 3, 2)
    );
    assert_eq!(by_c.idempotency_key, "idem-1");

    // A recorded outcome is not uncertain: the next claim after a recorded retry adds none.
    ok(
        "c records a retryable failure",
        store.fail("e", "c", by_c.generation, retryable("E_503")),
    );
    h.clock().advance(Backoff::default().delay(3));
    let by_d = ok("d claims the retry", store.claim("e", "d", K, 1_000));
    assert_eq!(
        (
            by_d.generation,
            by_d.attempt_number,
            by_d.uncertain_attempts
        ),
        (4, 4, 2)
    );
    assert_eq!(item(h, "e").idempotency_key, "idem-1");
}
