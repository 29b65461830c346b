//! Claims of durable work: racing claimers, batches that respect their limit and each item's
//! eligibility, lapsed claims reclaimed before the backlog, and claim leases clamped into a
//! bounded window.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Barrier;
use std::sync::atomic::AtomicU64;

use crate::model::work::NewWork;
use crate::model::{WorkItem, WorkState};
use crate::rules::lease::{MAX_LEASE_MS, MIN_LEASE_MS};
use crate::rules::work::Backoff;

use super::work::{effect, ids, item, retryable};
use super::{Harness, K, K_OTHER, ok, refused, retry_contention};

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
