//! Durable work items and compatibility: batched atomic claims, fenced completion,
//! durable retry state, uncertain attempts, group commit, incompatible items.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Barrier;
use std::sync::atomic::AtomicU64;

use crate::model::work::{NewWork, WorkFilter};
use crate::model::{Failure, FailureClass, PageRequest, WorkItem, WorkKind, WorkState};
use crate::rules::lease::{MAX_LEASE_MS, MIN_LEASE_MS};
use crate::rules::work::Backoff;
use crate::store::{ClaimBudget, Completion};

use super::{Harness, K, K_OTHER, ok, refused, retry_contention};

pub fn effect(id: &str) -> NewWork {
    NewWork::effect(id, "send-email", format!("{{\"to\":\"{id}@example.com\"}}"))
}

pub fn retryable(code: &str) -> Failure {
    Failure {
        class: FailureClass::Retryable,
        code: code.into(),
        message: format!("{code} happened"),
    }
}

pub fn terminal(code: &str) -> Failure {
    Failure {
        class: FailureClass::Terminal,
        code: code.into(),
        message: format!("{code} happened"),
    }
}

/// How many items the counts say are pending, read through a fresh handle.
fn pending_items(h: &dyn Harness) -> u64 {
    ok("overview", h.reopen().overview())
        .work
        .iter()
        .filter(|c| c.state == WorkState::Pending)
        .map(|c| c.count)
        .sum()
}

pub fn item(h: &dyn Harness, id: &str) -> WorkItem {
    ok("read item", h.store().work(id)).unwrap_or_else(|| panic!("no work item {id}"))
}

fn ids(items: &[WorkItem]) -> BTreeSet<String> {
    items.iter().map(|i| i.id.clone()).collect()
}

/// Racing claimers on separate handles: every item goes to exactly one of them, under
/// generation 1, and a direct-claim race on one item has exactly one winner.
pub fn racing_claimers_exactly_one_wins(h: &dyn Harness) {
    const ITEMS: usize = 120;
    const RACERS: usize = 6;
    let s = h.store();
    let specs: Vec<NewWork> = (0..ITEMS).map(|i| effect(&format!("e-{i:03}"))).collect();
    assert_eq!(ok("enqueue", s.enqueue_batch(specs, K)), ITEMS);
    ok("enqueue solo", s.enqueue(effect("solo"), K));

    let contention = AtomicU64::new(0);
    let barrier = Barrier::new(RACERS);
    let handles: Vec<_> = (0..RACERS).map(|_| h.reopen()).collect();
    let per_racer: Vec<(String, Vec<WorkItem>, Result<WorkItem, &'static str>)> =
        std::thread::scope(|scope| {
            let joins: Vec<_> = handles
                .into_iter()
                .enumerate()
                .map(|(i, store)| {
                    let (barrier, contention) = (&barrier, &contention);
                    scope.spawn(move || {
                        let owner = format!("racer-{i}");
                        barrier.wait();
                        let solo =
                            retry_contention(contention, || store.claim("solo", &owner, K, 60_000))
                                .map_err(|e| e.code());
                        let mut mine = Vec::new();
                        loop {
                            let batch = retry_contention(contention, || {
                                store.claim_batch(&owner, K, 5, 60_000)
                            })
                            .expect("claim_batch");
                            if batch.is_empty() {
                                break;
                            }
                            assert!(batch.len() <= 5, "limit respected");
                            mine.extend(batch);
                            // A claim that does not stick would hand the same items out
                            // forever: fail instead of looping.
                            assert!(
                                mine.len() <= ITEMS,
                                "{owner} claimed {} of {ITEMS} items",
                                mine.len()
                            );
                        }
                        (owner, mine, solo)
                    })
                })
                .collect();
            joins
                .into_iter()
                .map(|j| j.join().expect("racer"))
                .collect()
        });

    let solo_winners: Vec<_> = per_racer
        .iter()
        .filter(|(_, _, solo)| solo.is_ok())
        .collect();
    assert_eq!(solo_winners.len(), 1, "exactly one direct claim wins");
    assert!(
        per_racer
            .iter()
            .filter_map(|(_, _, s)| s.as_ref().err())
            .all(|c| *c == "WORK_IN_PROGRESS")
    );

    let mut owner_of = BTreeMap::new();
    for (owner, items, _) in &per_racer {
        for it in items {
            assert_eq!(
                (it.generation, it.attempt_number, it.owner_id.as_deref()),
                (1, 1, Some(owner.as_str()))
            );
            if let Some(other) = owner_of.insert(it.id.clone(), owner.clone()) {
                panic!("{} was claimed by both {other} and {owner}", it.id);
            }
        }
    }
    assert_eq!(owner_of.len(), ITEMS, "every item claimed exactly once");
    for (id, owner) in &owner_of {
        let stored = item(h, id);
        assert_eq!(
            (stored.state, stored.owner_id.as_deref(), stored.generation),
            (WorkState::Claimed, Some(owner.as_str()), 1)
        );
    }
    let (grants, _) = ok("history", s.ownership_history(None, 0, 10_000));
    assert_eq!(
        grants.iter().filter(|g| g.how == "claim").count(),
        ITEMS + 1,
        "one grant per claim"
    );
}

/// A claim whose lease lapsed (its owner died or stopped) is reclaimed ahead of a backlog
/// of pending work that fell due long before — also after it waited out its backoff in
/// `retry` — otherwise a dead owner's items would wait behind the whole backlog, however
/// short the lease.
pub fn lapsed_claims_are_reclaimed_before_the_backlog(h: &dyn Harness) {
    let s = h.store();
    let backlog: Vec<NewWork> = (0..20).map(|i| effect(&format!("b{i:02}"))).collect();
    ok("backlog", s.enqueue_batch(backlog, K));
    h.clock().advance(1_000);
    ok("enqueue d1", s.enqueue(effect("d1"), K));
    ok("enqueue d2", s.enqueue(effect("d2"), K));
    ok("dead claims d1", s.claim("d1", "dead", K, 2_000));
    ok("dead claims d2", s.claim("d2", "dead", K, 3_000));
    h.clock().advance(5_000);
    let first = ok("claim 3", s.claim_batch("heir", K, 3, 10_000));
    let got: Vec<&str> = first.iter().map(|w| w.id.as_str()).collect();
    assert_eq!(
        got,
        ["d1", "d2", "b00"],
        "lapsed claims first (earliest lapse first), then the oldest due"
    );
    assert!(
        first[..2]
            .iter()
            .all(|w| w.generation == 2 && w.uncertain_attempts == 1)
    );
    // A claim that has not lapsed is not a candidate; the backlog continues in order.
    let next = ok("claim 2", s.claim_batch("other", K, 2, 10_000));
    let got: Vec<&str> = next.iter().map(|w| w.id.as_str()).collect();
    assert_eq!(got, ["b01", "b02"]);

    // A lapse seen inside its backoff is left to its owner (nothing written, no room
    // taken): the claimer takes the backlog meanwhile; once the backoff has passed, the
    // reclaim comes first.
    ok("dead claims b10", s.claim("b10", "dead", K, 1_000));
    h.clock().advance(1_000);
    let meanwhile = ok("claim 2", s.claim_batch("heir", K, 2, 10_000));
    let got: Vec<&str> = meanwhile.iter().map(|w| w.id.as_str()).collect();
    assert_eq!(got, ["b03", "b04"], "b10 is still its owner's");
    assert_eq!(lease_state(&s, "b10"), WorkState::Claimed);
    // Past the backoff (500 ms after a first attempt), inside every other claim's lease.
    h.clock().advance(1_000);
    let after = ok("claim 2", s.claim_batch("heir", K, 2, 10_000));
    let got: Vec<&str> = after.iter().map(|w| w.id.as_str()).collect();
    assert_eq!(got, ["b10", "b05"], "the reclaim before the backlog");
}

fn lease_state(s: &crate::Store, id: &str) -> WorkState {
    ok("read", s.work(id)).expect("exists").state
}

/// `claim_batch` takes at most `limit` items, earliest due first, and only eligible ones:
/// never before `notBefore` / `nextEligibleAt`, never a live claim, a terminal item or
/// another build's item.
/// A caller may ask for any number of items: the claim takes what is there, and makes no
/// room for the number asked.
pub fn a_claim_of_any_size_takes_what_is_there(h: &dyn Harness) {
    let s = h.store();
    for id in ["u1", "u2"] {
        ok("enqueue", s.enqueue(effect(id), K));
    }
    let claimed = ok(
        "claim usize::MAX",
        s.claim_batch("w", K, usize::MAX, 10_000),
    );
    let ids: BTreeSet<String> = claimed.into_iter().map(|w| w.id).collect();
    assert_eq!(ids, ["u1", "u2"].map(String::from).into());
}

pub fn claim_batch_respects_limit_and_eligibility(h: &dyn Harness) {
    let s = h.store();
    let start = s.now();
    for id in ["t1", "c1", "r1"] {
        ok("enqueue", s.enqueue(effect(id), K));
    }
    let t1 = ok("claim t1", s.claim("t1", "z", K, 60_000));
    ok("complete t1", s.complete("t1", "z", t1.generation, None));
    ok("claim c1", s.claim("c1", "z", K, 60_000));
    let r1 = ok("claim r1", s.claim("r1", "z", K, 60_000));
    ok(
        "fail r1",
        s.fail("r1", "z", r1.generation, retryable("E_TIMEOUT")),
    );
    let pending: BTreeSet<String> = (0..5).map(|i| format!("p{i}")).collect();
    for id in &pending {
        ok("enqueue", s.enqueue(effect(id), K));
    }
    ok(
        "enqueue f1",
        s.enqueue(
            NewWork {
                not_before: Some(start + 1_000),
                ..effect("f1")
            },
            K,
        ),
    );
    ok("enqueue inc", s.enqueue(effect("inc"), K_OTHER));

    assert!(ok("limit 0", s.claim_batch("w", K, 0, 10_000)).is_empty());
    let first = ok("limit 3", s.claim_batch("w", K, 3, 10_000));
    assert_eq!(first.len(), 3);
    assert!(ids(&first).is_subset(&pending), "{:?}", ids(&first));
    for it in &first {
        assert_eq!(
            (it.state, it.owner_id.as_deref(), it.generation),
            (WorkState::Claimed, Some("w"), 1)
        );
        assert_eq!(it.lease_expires_at, Some(s.now() + 10_000));
    }
    let second = ok("limit 10", s.claim_batch("w", K, 10, 10_000));
    assert_eq!(
        ids(&first)
            .union(&ids(&second))
            .cloned()
            .collect::<BTreeSet<_>>(),
        pending,
        "the rest of the due items"
    );
    assert!(ok("nothing else is due", s.claim_batch("w", K, 10, 10_000)).is_empty());

    h.clock().advance(Backoff::default().delay(1));
    let retried = ok("retry due", s.claim_batch("w", K, 10, 10_000));
    assert_eq!(ids(&retried), BTreeSet::from(["r1".to_owned()]));
    assert_eq!((retried[0].attempt_number, retried[0].generation), (2, 2));
    h.clock().set(start + 1_000);
    let later = ok("notBefore reached", s.claim_batch("w", K, 10, 10_000));
    assert_eq!(ids(&later), BTreeSet::from(["f1".to_owned()]));

    // Earliest due first.
    let now = s.now();
    ok(
        "enqueue late",
        s.enqueue(
            NewWork {
                not_before: Some(now + 200),
                ..effect("late")
            },
            K,
        ),
    );
    ok(
        "enqueue early",
        s.enqueue(
            NewWork {
                not_before: Some(now + 100),
                ..effect("early")
            },
            K,
        ),
    );
    h.clock().advance(300);
    assert_eq!(
        ids(&ok("one", s.claim_batch("w", K, 1, 10_000))),
        BTreeSet::from(["early".to_owned()])
    );
    assert_eq!(
        ids(&ok("one", s.claim_batch("w", K, 1, 10_000))),
        BTreeSet::from(["late".to_owned()])
    );

    assert!(ok("never inc, t1, live c1", s.claim_batch("w", K, 100, 10_000)).is_empty());
    assert_eq!(item(h, "t1").state, WorkState::Succeeded);
    assert_eq!(item(h, "c1").owner_id.as_deref(), Some("z"));
    assert_eq!(item(h, "inc").state, WorkState::Pending);
}

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
        floor_ms: 0,
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

/// Durable retry state — attempt number, last attempt time, nextEligibleAt, the last
/// failure's class — survives a reopen, and the item is not claimable before it is due.
pub fn retry_state_survives_reopen(h: &dyn Harness) {
    let s = h.store();
    ok(
        "enqueue",
        s.enqueue(
            NewWork {
                max_attempts: 3,
                ..effect("e")
            },
            K,
        ),
    );
    let claimed = ok("claim", s.claim("e", "a", K, 5_000));
    h.clock().advance(40);
    let failed = ok(
        "fail",
        s.fail("e", "a", claimed.generation, retryable("E_TIMEOUT")),
    );
    assert_eq!(failed.state, WorkState::Retry);
    assert_eq!(failed.attempt_number, 1);
    assert_eq!(failed.last_attempt_at, claimed.claimed_at);
    assert_eq!(
        failed.next_eligible_at,
        s.now() + Backoff::default().delay(1)
    );
    assert_eq!(
        failed
            .last_failure
            .as_ref()
            .map(|f| (f.class, f.code.as_str())),
        Some((FailureClass::Retryable, "E_TIMEOUT"))
    );

    let s = h.reopen();
    assert_eq!(item(h, "e"), failed, "the whole retry state is durable");
    assert_eq!(
        refused("claim before nextEligibleAt", s.claim("e", "b", K, 5_000)),
        "WORK_NOT_CLAIMABLE"
    );
    assert!(
        ok(
            "batch before nextEligibleAt",
            s.claim_batch("b", K, 10, 5_000)
        )
        .is_empty()
    );
    h.clock().set(failed.next_eligible_at);
    let second = ok("claim when due", s.claim("e", "b", K, 5_000));
    assert_eq!((second.attempt_number, second.generation), (2, 2));
    let failed2 = ok("fail again", s.fail("e", "b", 2, retryable("E_TIMEOUT")));
    assert_eq!(
        failed2.next_eligible_at,
        s.now() + Backoff::default().delay(2),
        "backoff grows"
    );

    let s = h.reopen();
    h.clock().set(failed2.next_eligible_at);
    let third = ok("third attempt", s.claim_batch("c", K, 10, 5_000))
        .pop()
        .expect("due");
    assert_eq!(third.attempt_number, 3);
    let exhausted = ok(
        "fail the last attempt",
        s.fail("e", "c", third.generation, retryable("E_TIMEOUT")),
    );
    assert_eq!(
        exhausted.state,
        WorkState::Failed,
        "the retry budget is spent"
    );
    assert_eq!(h.reopen().work("e").expect("read").expect("row"), exhausted);

    // A terminal classification ends it at once, attempts left or not.
    ok("enqueue", s.enqueue(effect("bad-input"), K));
    let x = ok("claim", s.claim("bad-input", "a", K, 5_000));
    let dead = ok(
        "terminal failure",
        s.fail("bad-input", "a", x.generation, terminal("E_INVALID")),
    );
    assert_eq!(dead.state, WorkState::Failed);
    assert_eq!(
        dead.last_failure.map(|f| f.class),
        Some(FailureClass::Terminal)
    );
}

/// A terminal item answers `already-terminal` to every later write and claim, forever.
pub fn terminal_items_answer_already_terminal(h: &dyn Harness) {
    let s = h.store();
    ok("enqueue", s.enqueue(effect("ok"), K));
    ok("enqueue", s.enqueue(effect("dead"), K));
    let a = ok("claim", s.claim("ok", "a", K, 1_000));
    let done = ok(
        "complete",
        s.complete("ok", "a", a.generation, Some("1".into())),
    );
    let d = ok("claim", s.claim("dead", "a", K, 1_000));
    let dead = ok(
        "fail terminally",
        s.fail("dead", "a", d.generation, terminal("E_BAD")),
    );
    h.clock().advance(100_000);
    let s = h.reopen();
    for (id, generation, expected) in [("ok", a.generation, &done), ("dead", d.generation, &dead)] {
        assert_eq!(
            refused("complete again", s.complete(id, "a", generation, None)),
            "already-terminal"
        );
        assert_eq!(
            refused("fail again", s.fail(id, "a", generation, retryable("E"))),
            "already-terminal"
        );
        assert_eq!(
            refused("renew", s.renew_claim(id, "a", generation, 1_000)),
            "already-terminal"
        );
        assert_eq!(
            refused("yield", s.yield_back(id, "a", generation, s.now())),
            "already-terminal"
        );
        assert_eq!(
            refused("claim", s.claim(id, "b", K, 1_000)),
            "already-terminal"
        );
        assert_eq!(
            refused("other owner", s.complete(id, "b", generation + 1, None)),
            "already-terminal"
        );
        assert_eq!(&item(h, id), expected, "nothing changed");
    }
    assert!(ok("batch", s.claim_batch("b", K, 10, 1_000)).is_empty());
    let results = ok(
        "group commit",
        s.complete_batch(&[Completion {
            id: "ok".into(),
            owner: "a".into(),
            generation: 1,
            outcome: Ok(None),
            retry_floor_ms: 0,
        }]),
    );
    assert_eq!(results.len(), 1);
    assert_eq!(
        results[0].as_ref().err().map(crate::Error::code),
        Some("already-terminal")
    );
}

/// Group commit: one transaction, each entry fenced on its own; a stale generation refuses
/// only its own entry, and the whole batch is one revision.
pub fn group_commit_refuses_only_the_stale_entry(h: &dyn Harness) {
    let s = h.store();
    for id in ["g1", "g2", "g3"] {
        ok("enqueue", s.enqueue(effect(id), K));
    }
    let claimed = ok("a claims all", s.claim_batch("a", K, 3, 1_000));
    assert_eq!(claimed.len(), 3);
    h.clock().advance(1_000 + Backoff::default().delay(1));
    let b = ok("b reclaims g2", h.reopen().claim("g2", "b", K, 1_000));
    let before = ok("revision", s.revision());
    let batch = [
        Completion {
            id: "g1".into(),
            owner: "a".into(),
            generation: 1,
            outcome: Ok(Some("\"r1\"".into())),
            retry_floor_ms: 0,
        },
        Completion {
            id: "g2".into(),
            owner: "a".into(),
            generation: 1,
            outcome: Ok(None),
            retry_floor_ms: 0,
        },
        Completion {
            id: "g3".into(),
            owner: "a".into(),
            generation: 1,
            outcome: Err(retryable("E_429")),
            retry_floor_ms: 0,
        },
    ];
    let results: Vec<Result<WorkState, &str>> = ok("group commit", s.complete_batch(&batch))
        .into_iter()
        .map(|r| r.map(|i| i.state).map_err(|e| e.code()))
        .collect();
    assert_eq!(
        results,
        vec![
            Ok(WorkState::Succeeded),
            Err("WORK_FENCED"),
            Ok(WorkState::Retry)
        ]
    );
    let after = ok("revision", s.revision());
    assert_eq!(after, before + 1, "one commit for the whole batch");
    assert_eq!(item(h, "g2"), b, "the stale entry changed nothing");
    assert_eq!(item(h, "g1").result.as_deref(), Some("\"r1\""));

    let (_, writes) = ok("history", s.ownership_history(None, before, 100));
    let logged: Vec<(&str, &str, bool)> = writes
        .iter()
        .map(|w| (w.resource_id.as_str(), w.verb.as_str(), w.accepted))
        .collect();
    assert_eq!(
        logged,
        vec![
            ("g1", "complete", true),
            ("g2", "complete", false),
            ("g3", "fail", true)
        ]
    );
    assert!(writes.iter().all(|w| w.revision == after));

    let mixed = ok(
        "unknown entry",
        s.complete_batch(&[
            Completion {
                id: "missing".into(),
                owner: "b".into(),
                generation: 1,
                outcome: Ok(None),
                retry_floor_ms: 0,
            },
            Completion {
                id: "g2".into(),
                owner: "b".into(),
                generation: b.generation,
                outcome: Ok(None),
                retry_floor_ms: 0,
            },
        ]),
    );
    let codes: Vec<Result<WorkState, &str>> = mixed
        .into_iter()
        .map(|r| r.map(|i| i.state).map_err(|e| e.code()))
        .collect();
    assert_eq!(codes, vec![Err("NOT_FOUND"), Ok(WorkState::Succeeded)]);
    assert!(ok("empty batch", s.complete_batch(&[])).is_empty());
}

/// Work leases are bounded like every other lease: an absurd request never yields a claim
/// that outlives `MAX_LEASE_MS`, nor one that is dead on arrival.
pub fn claim_leases_are_clamped_into_a_bounded_window(h: &dyn Harness) {
    let s = h.store();
    for id in ["huge", "negative", "zero"] {
        ok("enqueue", s.enqueue(effect(id), K));
    }
    let window = |it: &WorkItem| it.lease_expires_at.expect("claimed") - s.now();
    let huge = ok("huge lease", s.claim("huge", "a", K, i64::MAX));
    assert!(
        (MIN_LEASE_MS..=MAX_LEASE_MS).contains(&window(&huge)),
        "claim(i64::MAX) window {}",
        window(&huge)
    );
    let negative = ok("negative lease", s.claim("negative", "a", K, -5));
    assert!(
        (MIN_LEASE_MS..=MAX_LEASE_MS).contains(&window(&negative)),
        "claim(-5) window {}",
        window(&negative)
    );
    let zero = ok("zero lease", s.claim_batch("a", K, 1, 0))
        .pop()
        .expect("zero");
    assert!(
        (MIN_LEASE_MS..=MAX_LEASE_MS).contains(&window(&zero)),
        "claim_batch(0) window {}",
        window(&zero)
    );
    let renewed = ok(
        "huge renew",
        s.renew_claim("huge", "a", huge.generation, i64::MAX),
    );
    assert!(
        (MIN_LEASE_MS..=MAX_LEASE_MS).contains(&window(&renewed)),
        "renew(i64::MAX) window {}",
        window(&renewed)
    );
    assert_eq!(
        refused("still held", s.claim("negative", "b", K, 1_000)),
        "WORK_IN_PROGRESS"
    );
}

/// Enqueue is idempotent per id: one logical effect however often it is offered, the first
/// offer's content kept, counted once; another effect under the id is refused.
pub fn enqueue_is_idempotent_per_id(h: &dyn Harness) {
    let s = h.store();
    assert!(ok("first", s.enqueue(effect("e"), K)));
    let first = item(h, "e");
    assert_eq!(
        refused(
            "again, other handler and payload",
            s.enqueue(NewWork::effect("e", "other", "{}"), K)
        ),
        "IDEMPOTENCY_CONFLICT"
    );
    assert!(!ok(
        "again, other build",
        h.reopen().enqueue(effect("e"), K_OTHER)
    ));
    assert_eq!(item(h, "e"), first);
    assert_eq!(
        ok(
            "batch with repeats",
            s.enqueue_batch(vec![effect("e"), effect("f"), effect("f")], K)
        ),
        1
    );
    let counts = ok("overview", s.overview()).work;
    let pending: u64 = counts
        .iter()
        .filter(|c| c.state == WorkState::Pending && c.kind == WorkKind::Effect)
        .map(|c| c.count)
        .sum();
    assert_eq!(pending, 2);
}

/// A batch with stored ids among its new ones — larger than a commit carries as text on
/// PostgreSQL — writes only the new ones, counts them once, and leaves the stored items
/// as they were.
pub fn a_large_batch_with_stored_ids_writes_only_the_new_ones(h: &dyn Harness) {
    let s = h.store();
    for id in ["b-007", "b-070", "b-149"] {
        assert!(ok("first", s.enqueue(effect(id), K)));
    }
    let before = item(h, "b-070");
    let batch = (0..150)
        .map(|i| NewWork::effect(format!("b-{i:03}"), "h", "{\"second\":true}"))
        .map(|spec| match spec.id.as_str() {
            "b-007" | "b-070" | "b-149" => effect(&spec.id),
            _ => spec,
        })
        .collect();
    assert_eq!(ok("batch", s.enqueue_batch(batch, K)), 147);
    assert_eq!(item(h, "b-070"), before);
    assert_eq!(item(h, "b-071").payload, "{\"second\":true}");
    assert_eq!(pending_items(h), 150);
}

/// Texts are stored as given, whatever they hold: quotes, backslashes, dollar signs,
/// comment and statement separators and non-ASCII characters in an item's id, handler,
/// keys, payload and result read back exactly, alone and in a batch (PostgreSQL sends a
/// small commit's rows as SQL text).
pub fn texts_are_stored_exactly_as_given(h: &dyn Harness) {
    let s = h.store();
    let odd = r#"o'brien\'; DROP TABLE work; -- $$ E'\x00' "q" é 🦀"#;
    let spec = |id: &str| NewWork {
        logical_effect_id: Some(format!("{id}{odd}")),
        idempotency_key: Some(format!("{id}key{odd}")),
        ..NewWork::effect(format!("{id}{odd}"), format!("h{odd}"), odd)
    };
    assert!(ok("alone", s.enqueue(spec("one"), K)));
    assert_eq!(
        ok(
            "batch",
            s.enqueue_batch(vec![spec("two"), spec("three")], K)
        ),
        2
    );
    for id in ["one", "two", "three"] {
        let stored = item(h, &format!("{id}{odd}"));
        assert_eq!(stored.payload, odd);
        assert_eq!(stored.handler, format!("h{odd}"));
        assert_eq!(stored.logical_effect_id, format!("{id}{odd}"));
        assert_eq!(stored.idempotency_key, format!("{id}key{odd}"));
    }
    let again = NewWork {
        idempotency_key: Some(format!("onekey{odd}")),
        ..spec("four")
    };
    assert!(!ok("the first key again", s.enqueue(again, K)));
    assert!(ok("read", s.work(&format!("four{odd}"))).is_none());
    let id = format!("one{odd}");
    let claimed = ok("claim", s.claim(&id, "a", K, 30_000));
    let done = ok(
        "complete",
        s.complete(&id, "a", claimed.generation, Some(odd.to_owned())),
    );
    assert_eq!(done.result.as_deref(), Some(odd));
    assert_eq!(item(h, &id).result.as_deref(), Some(odd));
}

/// Numbers at the ends of their ranges are stored exactly (PostgreSQL writes a small
/// commit's values as SQL text, where the most negative 64-bit integer needs care).
pub fn extreme_numbers_are_stored_exactly(h: &dyn Harness) {
    let s = h.store();
    let low = NewWork {
        not_before: Some(i64::MIN),
        priority: i32::MIN,
        max_attempts: 1,
        ..effect("low")
    };
    let high = NewWork {
        not_before: Some(i64::MAX),
        priority: i32::MAX,
        max_attempts: u32::MAX,
        ..effect("high")
    };
    assert!(ok("low", s.enqueue(low, K)));
    assert!(ok("high", s.enqueue(high, K)));
    for (id, priority, max_attempts) in [("low", i32::MIN, 1), ("high", i32::MAX, u32::MAX)] {
        let stored = item(h, id);
        assert_eq!(
            (stored.priority, stored.max_attempts),
            (priority, max_attempts)
        );
        assert_eq!(
            ok("read back", h.reopen().work(id)),
            Some(stored),
            "{id}: another handle reads the same"
        );
    }
    assert_eq!(item(h, "high").next_eligible_at, i64::MAX);
}

/// Single-item enqueues from many threads at once (group commit): every call gets its own
/// answer — of two calls with one id exactly one is new — and each item is visible to
/// another handle as soon as its call returns, so no call is answered before the commit
/// holding its item.
pub fn concurrent_enqueues_are_each_committed_before_they_return(h: &dyn Harness) {
    const THREADS: usize = 16;
    const EACH: usize = 25;
    let s = h.store();
    let reader = h.reopen();
    let start = Barrier::new(THREADS);
    let contention = AtomicU64::new(0);
    let answers: Vec<Vec<(String, bool)>> = std::thread::scope(|scope| {
        let calls: Vec<_> = (0..THREADS)
            .map(|t| {
                let (s, reader, start, contention) = (s.clone(), &reader, &start, &contention);
                scope.spawn(move || {
                    start.wait();
                    (0..EACH)
                        .map(|i| {
                            // Pairs of threads offer the same ids: each id twice.
                            let id = format!("c{:02}-{i:02}", t / 2);
                            let new = retry_contention(contention, || s.enqueue(effect(&id), K))
                                .unwrap_or_else(|e| panic!("enqueue {id}: {e}"));
                            assert!(
                                ok("read back", reader.work(&id)).is_some(),
                                "{id} was answered before its commit"
                            );
                            (id, new)
                        })
                        .collect()
                })
            })
            .collect();
        calls.into_iter().map(|c| c.join().unwrap()).collect()
    });
    let mut new_per_id: BTreeMap<String, usize> = BTreeMap::new();
    for (id, new) in answers.into_iter().flatten() {
        *new_per_id.entry(id).or_default() += usize::from(new);
    }
    assert_eq!(new_per_id.len(), THREADS / 2 * EACH);
    assert!(
        new_per_id.values().all(|n| *n == 1),
        "each id new exactly once: {new_per_id:?}"
    );
    assert_eq!(pending_items(h), (THREADS / 2 * EACH) as u64);
}

/// An item made by another build is never claimed by this one — `claim_batch` skips it, a
/// direct claim is `INCOMPATIBLE_AUTHORITY` — and it stays visible, pending, never
/// auto-failed, in the counts and through the compat filter, until a compatible
/// authority takes it.
pub fn incompatible_items_are_never_claimed_and_stay_visible(h: &dyn Harness) {
    let s = h.store();
    ok("enqueue old", s.enqueue(effect("old-1"), K_OTHER));
    ok("enqueue old", s.enqueue(effect("old-2"), K_OTHER));
    ok("enqueue mine", s.enqueue(effect("mine"), K));
    for _ in 0..3 {
        h.clock().advance(3_600_000);
        let got = ok("batch", s.claim_batch("new-build", K, 100, 1_000));
        assert_eq!(
            ids(&got)
                .into_iter()
                .filter(|i| i.starts_with("old"))
                .count(),
            0,
            "never another build's items"
        );
    }
    assert_eq!(
        refused("direct claim", s.claim("old-1", "new-build", K, 1_000)),
        "INCOMPATIBLE_AUTHORITY"
    );
    let old = item(h, "old-1");
    assert_eq!(
        (old.state, old.attempt_number, old.generation),
        (WorkState::Pending, 0, 0),
        "never auto-failed"
    );

    let overview = ok("overview", h.reopen().overview());
    let cell = overview.work.iter().find(|c| {
        c.compat == K_OTHER && c.state == WorkState::Pending && c.kind == WorkKind::Effect
    });
    assert_eq!(
        cell.map(|c| c.count),
        Some(2),
        "visible in the counts: {:?}",
        overview.work
    );
    let filter = WorkFilter {
        compats: vec![K_OTHER.into()],
        ..WorkFilter::default()
    };
    let listed = ok(
        "list by compat",
        s.list_work(&filter, &PageRequest::first(10)),
    );
    assert_eq!(
        listed
            .rows
            .iter()
            .map(|w| w.id.as_str())
            .collect::<Vec<_>>(),
        vec!["old-1", "old-2"]
    );
    let filter = WorkFilter {
        compats: vec![K.into()],
        ..WorkFilter::default()
    };
    let listed = ok(
        "list by compat",
        s.list_work(&filter, &PageRequest::first(10)),
    );
    assert_eq!(
        listed
            .rows
            .iter()
            .map(|w| w.id.as_str())
            .collect::<Vec<_>>(),
        vec!["mine"]
    );

    let taken = ok(
        "a compatible authority",
        s.claim_batch("old-build", K_OTHER, 10, 1_000),
    );
    assert_eq!(
        ids(&taken),
        BTreeSet::from(["old-1".to_owned(), "old-2".to_owned()])
    );
    let (grants, _) = ok("history", s.ownership_history(None, 0, 1_000));
    assert!(
        grants
            .iter()
            .filter(|g| g.how == "claim")
            .all(|g| g.owner_compat == g.item_compat),
        "claims only by matching builds"
    );
}

/// A retry floor the handler asked for holds the retry back until `now + floor` when that
/// is later than the backoff, alone or in a group commit; a shorter floor changes nothing.
pub fn a_retry_floor_holds_the_retry_back(h: &dyn Harness) {
    let s = h.store();
    for id in ["solo", "grouped", "short"] {
        ok("enqueue", s.enqueue(effect(id), K));
    }
    let solo = ok("claim", s.claim("solo", "a", K, 5_000));
    let floored = ok(
        "fail with a floor",
        s.fail_with_floor("solo", "a", solo.generation, retryable("E_429"), 7_000),
    );
    assert_eq!(
        (floored.state, floored.next_eligible_at),
        (WorkState::Retry, s.now() + 7_000)
    );
    let grouped = ok("claim", s.claim("grouped", "a", K, 5_000));
    let short = ok("claim", s.claim("short", "a", K, 5_000));
    let answers = ok(
        "group commit",
        s.complete_batch(&[
            Completion {
                id: "grouped".into(),
                owner: "a".into(),
                generation: grouped.generation,
                outcome: Err(retryable("E_429")),
                retry_floor_ms: 9_000,
            },
            Completion {
                id: "short".into(),
                owner: "a".into(),
                generation: short.generation,
                outcome: Err(retryable("E_429")),
                retry_floor_ms: 1,
            },
        ]),
    );
    let eligible: Vec<_> = answers
        .into_iter()
        .map(|a| ok("fenced on its own", a).next_eligible_at)
        .collect();
    assert_eq!(
        eligible,
        [s.now() + 9_000, s.now() + Backoff::default().delay(1)]
    );
    let s = h.reopen();
    assert_eq!(item(h, "solo"), floored, "the floor is durable");
    h.clock().set(floored.next_eligible_at - 1);
    assert_eq!(
        refused("claim before the floor", s.claim("solo", "b", K, 5_000)),
        "WORK_NOT_CLAIMABLE"
    );
    h.clock().set(floored.next_eligible_at);
    ok("claim at the floor", s.claim("solo", "b", K, 5_000));
}
