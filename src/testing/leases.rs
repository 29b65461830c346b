//! Leases and fencing: acquire / renew / release / handoff / checkpoint, TTL clamping,
//! the per-owner cap, idempotency keys.

use std::collections::BTreeSet;
use std::sync::Barrier;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use crate::model::Lease;
use crate::rules::lease::{DEFAULT_LEASE_MS, MAX_LEASE_MS, MIN_LEASE_MS};
use crate::store::Keyed;

use super::{Harness, ok, refused, retry_contention};

const NO_KEY: Keyed<'static> = Keyed { key: None };

fn key(k: &str) -> Keyed<'_> {
    Keyed { key: Some(k) }
}

fn lease_of(h: &dyn Harness, resource: &str) -> Lease {
    ok("read lease", h.store().lease(resource))
        .unwrap_or_else(|| panic!("no lease row for {resource}"))
}

/// `acquire` succeeds only when the resource is unclaimed or its window has closed
/// (`expiresAt <= now`); never over a live lease, not even the holder's own.
pub fn acquire_never_grants_over_a_live_lease(h: &dyn Harness) {
    let store = h.store();
    let a = ok("a acquires", store.acquire("r", "a", 1_000.0, NO_KEY));
    assert_eq!((a.owner_id.as_str(), a.generation), ("a", 1));
    assert_eq!(a.expires_at, a.acquired_at + 1_000);

    assert_eq!(
        refused(
            "b over a's live lease",
            store.acquire("r", "b", 1_000.0, NO_KEY)
        ),
        "WORK_IN_PROGRESS"
    );
    assert_eq!(
        refused(
            "a over its own live lease",
            store.acquire("r", "a", 1_000.0, NO_KEY)
        ),
        "WORK_IN_PROGRESS"
    );
    h.clock().advance(999);
    assert_eq!(
        refused(
            "b one ms before expiry",
            store.acquire("r", "b", 1_000.0, NO_KEY)
        ),
        "WORK_IN_PROGRESS"
    );
    assert_eq!(
        lease_of(h, "r"),
        a,
        "a refused acquire leaves the incumbent untouched"
    );

    h.clock().advance(1);
    let b = ok(
        "b at expiresAt (not live)",
        store.acquire("r", "b", 1_000.0, NO_KEY),
    );
    assert_eq!((b.owner_id.as_str(), b.generation), ("b", 2));

    let released = ok(
        "b releases",
        store.release("r", "b", &b.token, b.generation, NO_KEY),
    );
    assert!(released.released_at.is_some());
    let c = ok(
        "c right after a release",
        store.acquire("r", "c", 1_000.0, NO_KEY),
    );
    assert_eq!((c.owner_id.as_str(), c.generation), ("c", 3));
}

/// N racing acquirers on separate handles: exactly one wins, the rest see `WORK_IN_PROGRESS`.
pub fn racing_acquirers_exactly_one_wins(h: &dyn Harness) {
    const RACERS: usize = 8;
    let contention = AtomicU64::new(0);
    for round in 0..5 {
        let resource = format!("race-{round}");
        let barrier = Barrier::new(RACERS);
        let handles: Vec<_> = (0..RACERS).map(|_| h.reopen()).collect();
        let outcomes: Vec<Result<Lease, &'static str>> = std::thread::scope(|scope| {
            let joins: Vec<_> = handles
                .into_iter()
                .enumerate()
                .map(|(i, store)| {
                    let (barrier, resource, contention) = (&barrier, &resource, &contention);
                    scope.spawn(move || {
                        barrier.wait();
                        retry_contention(contention, || {
                            store.acquire(resource, &format!("racer-{i}"), 60_000.0, NO_KEY)
                        })
                        .map_err(|e| e.code())
                    })
                })
                .collect();
            joins
                .into_iter()
                .map(|j| j.join().expect("racer thread"))
                .collect()
        });
        let winners: Vec<&Lease> = outcomes.iter().filter_map(|o| o.as_ref().ok()).collect();
        assert_eq!(
            winners.len(),
            1,
            "round {round}: exactly one winner, got {outcomes:?}"
        );
        assert!(
            outcomes
                .iter()
                .filter_map(|o| o.as_ref().err())
                .all(|c| *c == "WORK_IN_PROGRESS"),
            "{outcomes:?}"
        );
        let stored = lease_of(h, &resource);
        assert_eq!(
            (&stored.owner_id, stored.generation),
            (&winners[0].owner_id, 1)
        );
    }
}

/// Every successful acquire (and handoff) mints a generation strictly greater than every
/// earlier one for that resource, across release, expiry-reclaim and reopening.
pub fn generations_strictly_increase_across_release_expiry_and_reopen(h: &dyn Harness) {
    let store = h.store();
    let mut seen = Vec::new();
    let by_a = ok("a acquires", store.acquire("r", "a", 1_000.0, NO_KEY));
    seen.push(by_a.generation);
    ok(
        "a releases",
        store.release("r", "a", &by_a.token, by_a.generation, NO_KEY),
    );
    let by_b = ok(
        "b acquires after release",
        store.acquire("r", "b", 1_000.0, NO_KEY),
    );
    seen.push(by_b.generation);
    h.clock().advance(1_000);
    let by_c = ok(
        "c reclaims after expiry",
        store.acquire("r", "c", 1_000.0, NO_KEY),
    );
    seen.push(by_c.generation);

    let store = h.reopen();
    assert_eq!(
        ok("read after reopen", store.lease("r")).map(|l| l.generation),
        Some(by_c.generation),
        "the generation is durable"
    );
    ok(
        "c releases after reopen",
        store.release("r", "c", &by_c.token, by_c.generation, NO_KEY),
    );
    let store = h.reopen();
    let a2 = ok(
        "a acquires again after another reopen",
        store.acquire("r", "a", 1_000.0, NO_KEY),
    );
    seen.push(a2.generation);
    let by_d = ok(
        "a hands off to d",
        store.handoff("r", "a", &a2.token, a2.generation, "d", 1_000.0, NO_KEY),
    );
    seen.push(by_d.generation);
    h.clock().advance(5_000);
    let by_e = ok("e reclaims", h.reopen().acquire("r", "e", 1_000.0, NO_KEY));
    seen.push(by_e.generation);

    assert!(
        seen.windows(2).all(|w| w[0] < w[1]),
        "generations must strictly increase: {seen:?}"
    );
    assert_eq!(seen, vec![1, 2, 3, 4, 5, 6]);

    // The checker's history agrees: grants in revision order, generations strictly rising.
    let (grants, _) = ok("history", h.store().ownership_history(Some("r"), 0, 1_000));
    let generations: Vec<u64> = grants.iter().map(|g| g.generation).collect();
    assert_eq!(
        generations, seen,
        "one grant per acquisition / handoff, in order"
    );
    assert!(grants.windows(2).all(|w| w[0].revision < w[1].revision));
}

/// `renew` / `release` (and handoff / checkpoint) require the acquisition's token and
/// generation: a wrong token, a wrong generation or a released lease is `WORK_FENCED`.
#[expect(
    clippy::too_many_lines,
    reason = "a scripted scenario: its steps in the order they happen"
)]
pub fn wrong_token_cannot_renew_or_release(h: &dyn Harness) {
    let s = h.store();
    let a = ok("a acquires", s.acquire("r", "a", 1_000.0, NO_KEY));
    let generation = a.generation;
    assert_eq!(
        refused(
            "renew, forged token",
            s.renew("r", "forged", generation, 5_000.0)
        ),
        "WORK_FENCED"
    );
    assert_eq!(
        refused(
            "release, forged token",
            s.release("r", "a", "forged", generation, NO_KEY)
        ),
        "WORK_FENCED"
    );
    assert_eq!(
        refused(
            "renew, next generation",
            s.renew("r", &a.token, generation + 1, 5_000.0)
        ),
        "WORK_FENCED"
    );
    assert_eq!(
        refused("renew, generation 0", s.renew("r", &a.token, 0, 5_000.0)),
        "WORK_FENCED"
    );
    assert_eq!(
        refused(
            "handoff, forged token",
            s.handoff("r", "a", "forged", generation, "b", 1_000.0, NO_KEY)
        ),
        "WORK_FENCED"
    );
    assert_eq!(
        refused(
            "checkpoint, forged token",
            s.save_checkpoint("r", "a", "forged", generation, "x", NO_KEY)
        ),
        "WORK_FENCED"
    );
    assert_eq!(
        refused(
            "ownership, forged token",
            s.check_ownership("r", "forged", generation)
        ),
        "WORK_FENCED"
    );
    assert_eq!(lease_of(h, "r"), a, "refused writes change nothing");
    ok(
        "ownership, right token",
        s.check_ownership("r", &a.token, generation),
    );

    ok(
        "a releases",
        s.release("r", "a", &a.token, generation, NO_KEY),
    );
    assert_eq!(
        refused(
            "renew after release",
            s.renew("r", &a.token, generation, 1_000.0)
        ),
        "WORK_FENCED"
    );
    assert_eq!(
        refused(
            "release twice",
            s.release("r", "a", &a.token, generation, NO_KEY)
        ),
        "WORK_FENCED"
    );
    assert_eq!(
        refused(
            "ownership after release",
            s.check_ownership("r", &a.token, generation)
        ),
        "WORK_FENCED"
    );

    assert_eq!(
        refused("renew unknown", s.renew("nope", "t", 1, 1_000.0)),
        "NOT_FOUND"
    );
    assert_eq!(
        refused("release unknown", s.release("nope", "a", "t", 1, NO_KEY)),
        "NOT_FOUND"
    );

    // Refused fenced writes are recorded for the checker, with their code.
    let (_, writes) = ok("history", s.ownership_history(Some("r"), 0, 1_000));
    let refusals: Vec<(&str, Option<&str>)> = writes
        .iter()
        .filter(|w| !w.accepted)
        .map(|w| (w.verb.as_str(), w.refusal.as_deref()))
        .collect();
    assert!(
        refusals.contains(&("renew", Some("WORK_FENCED"))),
        "{refusals:?}"
    );
    assert!(
        refusals.contains(&("release", Some("WORK_FENCED"))),
        "{refusals:?}"
    );
}

/// Expiry alone fences nothing: if nobody reclaimed, the old owner's renew / checkpoint /
/// release still apply under the same generation.
pub fn expiry_without_reclaim_does_not_fence(h: &dyn Harness) {
    let s = h.store();
    let a = ok("a acquires", s.acquire("r", "a", 1_000.0, NO_KEY));
    h.clock().advance(10_000);
    let s = h.reopen();
    let stale = lease_of(h, "r");
    assert_eq!(stale.status(s.now()), "expired");
    ok(
        "ownership after expiry",
        s.check_ownership("r", &a.token, a.generation),
    );
    let renewed = ok(
        "renew after expiry",
        s.renew("r", &a.token, a.generation, 2_000.0),
    );
    assert_eq!(
        (renewed.generation, renewed.expires_at),
        (a.generation, s.now() + 2_000)
    );
    assert!(renewed.is_live(s.now()));
    h.clock().advance(60_000);
    ok(
        "checkpoint after expiry",
        s.save_checkpoint("r", "a", &a.token, a.generation, "cp", NO_KEY),
    );
    ok(
        "release after expiry",
        s.release("r", "a", &a.token, a.generation, NO_KEY),
    );
    assert_eq!(
        lease_of(h, "r").generation,
        1,
        "no reclaim, no new generation"
    );
}

/// A reclaim advances the generation and fences the prior owner: every holder-only write it
/// attempts afterwards is `WORK_FENCED` and recorded as refused.
pub fn reclaim_fences_the_old_owner(h: &dyn Harness) {
    let s = h.store();
    let a = ok("a acquires", s.acquire("r", "a", 1_000.0, NO_KEY));
    h.clock().advance(1_500);
    let b = ok("b reclaims", h.reopen().acquire("r", "b", 1_000.0, NO_KEY));
    assert_eq!(b.generation, a.generation + 1);
    assert_eq!(
        refused("stale renew", s.renew("r", &a.token, a.generation, 1_000.0)),
        "WORK_FENCED"
    );
    assert_eq!(
        refused(
            "stale checkpoint",
            s.save_checkpoint("r", "a", &a.token, a.generation, "x", NO_KEY)
        ),
        "WORK_FENCED"
    );
    assert_eq!(
        refused(
            "stale handoff",
            s.handoff("r", "a", &a.token, a.generation, "c", 1_000.0, NO_KEY)
        ),
        "WORK_FENCED"
    );
    assert_eq!(
        refused(
            "stale release",
            s.release("r", "a", &a.token, a.generation, NO_KEY)
        ),
        "WORK_FENCED"
    );
    assert_eq!(
        refused(
            "stale ownership",
            s.check_ownership("r", &a.token, a.generation)
        ),
        "WORK_FENCED"
    );
    assert_eq!(
        lease_of(h, "r"),
        b,
        "b's lease is untouched by the stale owner"
    );
    ok("b renews", s.renew("r", &b.token, b.generation, 1_000.0));

    let (_, writes) = ok("history", s.ownership_history(Some("r"), 0, 1_000));
    let stale: Vec<_> = writes
        .iter()
        .filter(|w| w.generation == a.generation)
        .collect();
    assert_eq!(stale.len(), 4);
    assert!(
        stale
            .iter()
            .all(|w| !w.accepted && w.refusal.as_deref() == Some("WORK_FENCED")),
        "{stale:?}"
    );
}

/// Requested durations are clamped into `[MIN_LEASE_MS, MAX_LEASE_MS]`; non-finite, zero and
/// negative requests get the default instead of an unbounded (or instantly dead) lease.
pub fn ttl_is_clamped_into_a_bounded_window(h: &dyn Harness) {
    let s = h.store();
    let cases: [(f64, i64); 11] = [
        (f64::NAN, DEFAULT_LEASE_MS),
        (f64::INFINITY, DEFAULT_LEASE_MS),
        (f64::NEG_INFINITY, DEFAULT_LEASE_MS),
        (-5.0, DEFAULT_LEASE_MS),
        (0.0, DEFAULT_LEASE_MS),
        (1.0, MIN_LEASE_MS),
        (1e300, MAX_LEASE_MS),
        (f64::MAX, MAX_LEASE_MS),
        (MAX_LEASE_MS as f64 * 2.0, MAX_LEASE_MS),
        (5_000.7, 5_000),
        (MIN_LEASE_MS as f64, MIN_LEASE_MS),
    ];
    for (i, (requested, expected)) in cases.into_iter().enumerate() {
        let resource = format!("ttl-{i}");
        let lease = ok("acquire", s.acquire(&resource, "a", requested, NO_KEY));
        assert_eq!(
            lease.expires_at - lease.acquired_at,
            expected,
            "acquire({requested}) window"
        );
        let renewed = ok(
            "renew",
            s.renew(&resource, &lease.token, lease.generation, requested),
        );
        assert_eq!(
            renewed.expires_at - s.now(),
            expected,
            "renew({requested}) window"
        );
        let moved = ok(
            "handoff",
            s.handoff(
                &resource,
                "a",
                &lease.token,
                lease.generation,
                "b",
                requested,
                NO_KEY,
            ),
        );
        assert_eq!(
            moved.expires_at - s.now(),
            expected,
            "handoff({requested}) window"
        );
    }
}

/// An owner may hold at most `cap` live leases through acquire (and through handoff onto
/// it); renewing one it holds is exempt, and expired or released leases do not count.
pub fn owner_cap_is_enforced_and_renewal_is_exempt(h: &dyn Harness) {
    let s = h.store().with_owner_cap(2);
    let r1 = ok("r1", s.acquire("r1", "a", 1_000.0, NO_KEY));
    let r2 = ok("r2", s.acquire("r2", "a", 5_000.0, NO_KEY));
    assert_eq!(
        refused("third live lease", s.acquire("r3", "a", 1_000.0, NO_KEY)),
        "LEASE_CAP_REACHED"
    );
    assert!(
        ok("r3 row", s.lease("r3")).is_none(),
        "a capped acquire creates nothing"
    );
    ok(
        "renew at the cap",
        s.renew("r1", &r1.token, r1.generation, 1_000.0),
    );
    ok(
        "renew at the cap",
        s.renew("r2", &r2.token, r2.generation, 5_000.0),
    );
    ok(
        "another owner is not charged",
        s.acquire("r3", "b", 1_000.0, NO_KEY),
    );

    // Handoff onto a capped recipient is refused and the giver keeps the lease.
    let b4 = ok("b takes r4", s.acquire("r4", "b", 1_000.0, NO_KEY));
    assert_eq!(
        refused(
            "handoff onto capped a",
            s.handoff("r4", "b", &b4.token, b4.generation, "a", 1_000.0, NO_KEY)
        ),
        "LEASE_CAP_REACHED"
    );
    assert_eq!(lease_of(h, "r4"), b4);

    ok(
        "release frees a slot",
        s.release("r1", "a", &r1.token, r1.generation, NO_KEY),
    );
    ok("a takes r5", s.acquire("r5", "a", 1_000.0, NO_KEY));
    assert_eq!(
        refused("cap again", s.acquire("r6", "a", 1_000.0, NO_KEY)),
        "LEASE_CAP_REACHED"
    );
    h.clock().advance(1_000);
    ok(
        "an expired lease frees a slot",
        s.acquire("r6", "a", 1_000.0, NO_KEY),
    );
}

/// Renewing a lease that lapsed without being reclaimed is a new live hold: it counts
/// against the cap like an acquire. Without that, an owner at a cap of 1 could hold any
/// number of live leases by letting each lapse and renewing it.
pub fn lapsed_renewal_counts_against_the_owner_cap(h: &dyn Harness) {
    let s = h.store().with_owner_cap(1);
    let mut held = Vec::new();
    for resource in ["r1", "r2", "r3", "r4"] {
        held.push(ok(resource, s.acquire(resource, "a", 1_000.0, NO_KEY)));
        h.clock().advance(1_000);
    }
    // Every lease lapsed, none reclaimed; a renews them one by one.
    let first = &held[0];
    ok(
        "the first lapsed renewal fits under the cap",
        s.renew("r1", &first.token, first.generation, 10_000.0),
    );
    for lease in &held[1..] {
        assert_eq!(
            refused(
                "a lapsed renewal over the cap",
                s.renew(&lease.resource_id, &lease.token, lease.generation, 10_000.0)
            ),
            "LEASE_CAP_REACHED"
        );
        assert_eq!(
            lease_of(h, &lease.resource_id),
            *lease,
            "a refused renewal changes nothing"
        );
    }
    ok(
        "renewing the live one stays exempt at the cap",
        s.renew("r1", &first.token, first.generation, 10_000.0),
    );
    let live = s.now();
    let live_count = ["r1", "r2", "r3", "r4"]
        .iter()
        .filter(|r| lease_of(h, r).is_live(live))
        .count();
    assert_eq!(live_count, 1, "a holds exactly its cap of live leases");
    // A lapsed lease is still its holder's (expiry fences nothing): once a slot is free the
    // holder may renew it.
    ok(
        "release frees the slot",
        s.release("r1", "a", &first.token, first.generation, NO_KEY),
    );
    let second = &held[1];
    ok(
        "a lapsed renewal under the cap",
        s.renew("r2", &second.token, second.generation, 1_000.0),
    );
}

/// Handing a lease to its own holder is refused with its own reason: no generation is
/// minted, the holder's token stays valid, no grant is recorded.
pub fn self_handoff_is_refused(h: &dyn Harness) {
    let s = h.store();
    let a = ok("a acquires", s.acquire("r", "a", 5_000.0, NO_KEY));
    assert_eq!(
        refused(
            "handoff to itself",
            s.handoff("r", "a", &a.token, a.generation, "a", 5_000.0, NO_KEY)
        ),
        "LEASE_SELF_HANDOFF"
    );
    assert_eq!(lease_of(h, "r"), a, "nothing changed hands");
    ok(
        "the holder still renews with its token",
        s.renew("r", &a.token, a.generation, 5_000.0),
    );
    let (grants, _) = ok("history", s.ownership_history(Some("r"), 0, 100));
    assert_eq!(grants.len(), 1, "only the acquire is a grant: {grants:?}");
    // A stale token is fenced first: the refusal never reveals who holds the lease.
    assert_eq!(
        refused(
            "a stale self-handoff",
            s.handoff(
                "r",
                "a",
                "not-the-token",
                a.generation,
                "a",
                5_000.0,
                NO_KEY
            )
        ),
        "WORK_FENCED"
    );
}

/// Sets its flag when dropped, on a panic too.
struct SetOnDrop<'a>(&'a AtomicBool);

impl Drop for SetOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

/// Handoff moves the lease to the recipient in one transaction under generation + 1: the
/// giver is fenced, the checkpoint travels, and a third party never sees the lease free.
#[expect(
    clippy::too_many_lines,
    reason = "a scripted scenario: its steps in the order they happen"
)]
pub fn handoff_is_atomic_and_fences_the_giver(h: &dyn Harness) {
    let store = h.store();
    let a = ok("a acquires", store.acquire("r", "a", 60_000.0, NO_KEY));
    ok(
        "a checkpoints",
        store.save_checkpoint("r", "a", &a.token, a.generation, "step=7", NO_KEY),
    );

    let done = AtomicBool::new(false);
    let (thief, watcher) = (h.reopen(), h.reopen());
    let barrier = Barrier::new(3);
    let (attempts, observations) = std::thread::scope(|scope| {
        let thief = scope.spawn(|| {
            barrier.wait();
            let mut attempts = 0u32;
            while !done.load(Ordering::SeqCst) || attempts < 20 {
                attempts += 1;
                match thief.acquire("r", "c", 1_000.0, NO_KEY) {
                    Err(e) if matches!(e.code(), "WORK_IN_PROGRESS" | "STORE_CONTENTION") => {}
                    other => panic!("a third party got {other:?} during a handoff"),
                }
            }
            attempts
        });
        let watcher = scope.spawn(|| {
            barrier.wait();
            let mut seen = BTreeSet::new();
            loop {
                // Read once more after the handoff returned, then stop.
                let finished = done.load(Ordering::SeqCst);
                let lease = watcher.lease("r").expect("read").expect("row");
                assert!(
                    lease.is_live(watcher.now()),
                    "the lease was observed free: {lease:?}"
                );
                assert!(lease.owner_id == "a" || lease.owner_id == "b", "{lease:?}");
                seen.insert((lease.owner_id.clone(), lease.generation));
                if finished {
                    break;
                }
            }
            seen
        });
        barrier.wait();
        // Stops both threads however this closure ends: were the handoff refused, its
        // panic would otherwise wait for a thief that never stops.
        let stop = SetOnDrop(&done);
        let moved = ok(
            "a hands off to b",
            store.handoff("r", "a", &a.token, a.generation, "b", 2_000.0, NO_KEY),
        );
        assert_eq!(
            (moved.owner_id.as_str(), moved.generation),
            ("b", a.generation + 1)
        );
        assert_ne!(moved.token, a.token, "the recipient gets a fresh token");
        assert_eq!(moved.expires_at, store.now() + 2_000);
        assert_eq!(
            moved.checkpoint.as_ref().map(|c| c.data.as_str()),
            Some("step=7"),
            "the checkpoint travels"
        );
        drop(stop);
        (
            thief.join().expect("thief"),
            watcher.join().expect("watcher"),
        )
    });
    assert!(attempts >= 20);
    assert!(
        observations
            .iter()
            .all(|(owner, generation)| (owner == "a" && *generation == 1)
                || (owner == "b" && *generation == 2)),
        "{observations:?}"
    );

    let b = lease_of(h, "r");
    assert_eq!(
        refused(
            "giver renews",
            store.renew("r", &a.token, a.generation, 1_000.0)
        ),
        "WORK_FENCED"
    );
    assert_eq!(
        refused(
            "giver releases",
            store.release("r", "a", &a.token, a.generation, NO_KEY)
        ),
        "WORK_FENCED"
    );
    assert_eq!(
        refused(
            "giver hands off again",
            store.handoff("r", "a", &a.token, a.generation, "c", 1_000.0, NO_KEY)
        ),
        "WORK_FENCED"
    );
    ok(
        "recipient renews",
        store.renew("r", &b.token, b.generation, 1_000.0),
    );

    let (grants, _) = ok("history", store.ownership_history(Some("r"), 0, 1_000));
    let grants: Vec<(&str, u64, &str)> = grants
        .iter()
        .map(|g| (g.owner_id.as_str(), g.generation, g.how.as_str()))
        .collect();
    assert_eq!(grants, vec![("a", 1, "acquire"), ("b", 2, "handoff")]);

    // An expired-but-unreclaimed lease can still be handed off (expiry fences nothing).
    h.clock().advance(5_000);
    let c = ok(
        "b hands off after expiry",
        store.handoff("r", "b", &b.token, b.generation, "c", 1_000.0, NO_KEY),
    );
    assert_eq!((c.owner_id.as_str(), c.generation), ("c", 3));
}

/// A checkpoint saved under the current generation survives expiry for the next owner (and
/// a reopen), and a normal release drops it.
pub fn checkpoint_survives_expiry_and_is_dropped_on_release(h: &dyn Harness) {
    let store = h.store();
    let a = ok("a acquires", store.acquire("r", "a", 1_000.0, NO_KEY));
    let saved = ok(
        "a checkpoints",
        store.save_checkpoint("r", "a", &a.token, a.generation, "page=3", NO_KEY),
    );
    let cp = saved.checkpoint.clone().expect("checkpoint");
    assert_eq!(
        (cp.generation, cp.data.as_str(), cp.saved_at),
        (1, "page=3", store.now())
    );
    h.clock().advance(2_000);

    let store = h.reopen();
    let b = ok("b reclaims", store.acquire("r", "b", 1_000.0, NO_KEY));
    assert_eq!(
        b.checkpoint,
        Some(cp),
        "the next owner resumes from the checkpoint"
    );
    assert_eq!(
        refused(
            "stale checkpoint",
            store.save_checkpoint("r", "a", &a.token, a.generation, "page=99", NO_KEY)
        ),
        "WORK_FENCED"
    );
    let b2 = ok(
        "b checkpoints",
        store.save_checkpoint("r", "b", &b.token, b.generation, "page=4", NO_KEY),
    );
    assert_eq!(
        b2.checkpoint
            .as_ref()
            .map(|c| (c.generation, c.data.as_str())),
        Some((2, "page=4"))
    );
    let released = ok(
        "b releases",
        store.release("r", "b", &b.token, b.generation, NO_KEY),
    );
    assert_eq!(
        released.checkpoint, None,
        "a normal release drops the checkpoint"
    );

    let c = ok("c acquires", h.reopen().acquire("r", "c", 1_000.0, NO_KEY));
    assert_eq!(
        c.checkpoint, None,
        "nothing stale is resurrected after a release"
    );
}

/// A keyed lease-family mutation applies once and replays its first answer — success or
/// refusal — on retry, also after a reopen, without committing anything new.
#[expect(
    clippy::too_many_lines,
    reason = "a scripted scenario: its steps in the order they happen"
)]
pub fn keyed_mutation_applies_once_and_replays_across_reopen(h: &dyn Harness) {
    let s = h.store();
    let first = ok("keyed acquire", s.acquire("r", "a", 1_000.0, key("k1")));
    let revision = ok("revision", s.revision());
    assert_eq!(
        ok("retry", s.acquire("r", "a", 1_000.0, key("k1"))),
        first,
        "a retry replays the first answer"
    );
    assert_eq!(
        ok("revision", s.revision()),
        revision,
        "a replay commits nothing"
    );
    h.clock().advance(5_000);
    assert_eq!(
        ok(
            "retry after expiry",
            s.acquire("r", "a", 1_000.0, key("k1"))
        ),
        first,
        "not a second acquire"
    );
    let s = h.reopen();
    assert_eq!(
        ok(
            "retry after reopen",
            s.acquire("r", "a", 1_000.0, key("k1"))
        ),
        first,
        "replay survives restart"
    );
    let (grants, _) = ok("history", s.ownership_history(Some("r"), 0, 1_000));
    assert_eq!(grants.len(), 1, "applied once");

    // A keyed handoff applies once: the generation moves once however often it is retried.
    let moved = ok(
        "keyed handoff",
        s.handoff(
            "r",
            "a",
            &first.token,
            first.generation,
            "b",
            1_000.0,
            key("h1"),
        ),
    );
    assert_eq!(moved.generation, 2);
    assert_eq!(
        ok(
            "retry handoff",
            h.reopen().handoff(
                "r",
                "a",
                &first.token,
                first.generation,
                "b",
                1_000.0,
                key("h1")
            )
        ),
        moved
    );
    assert_eq!(lease_of(h, "r").generation, 2);

    // A keyed release replays its success rather than answering WORK_FENCED.
    let released = ok(
        "keyed release",
        s.release("r", "b", &moved.token, moved.generation, key("rel")),
    );
    assert_eq!(
        ok(
            "retry release",
            h.reopen()
                .release("r", "b", &moved.token, moved.generation, key("rel"))
        ),
        released
    );

    // A keyed refusal replays too, even once the mutation would now succeed.
    let d = ok("d acquires", s.acquire("r", "d", 1_000.0, NO_KEY));
    assert_eq!(
        refused("c keyed, over d", s.acquire("r", "c", 1_000.0, key("kc"))),
        "WORK_IN_PROGRESS"
    );
    ok(
        "d releases",
        s.release("r", "d", &d.token, d.generation, NO_KEY),
    );
    assert_eq!(
        refused(
            "c retries the same key",
            h.reopen().acquire("r", "c", 1_000.0, key("kc"))
        ),
        "WORK_IN_PROGRESS"
    );
    let c = ok("c with a new key", s.acquire("r", "c", 1_000.0, key("kc2")));
    assert_eq!(c.generation, d.generation + 1);

    // A keyed checkpoint replays its first answer.
    let cp = ok(
        "keyed checkpoint",
        s.save_checkpoint("r", "c", &c.token, c.generation, "v1", key("cp")),
    );
    assert_eq!(
        ok(
            "retry checkpoint",
            s.save_checkpoint("r", "c", &c.token, c.generation, "v2", key("cp"))
        ),
        cp
    );
    assert_eq!(
        lease_of(h, "r").checkpoint.map(|c| c.data),
        Some("v1".into())
    );
}

/// Idempotency keys are namespaced by owner and verb: the same key text never suppresses or
/// leaks another owner's mutation or another verb.
pub fn idempotency_keys_are_namespaced_by_owner_and_verb(h: &dyn Harness) {
    let s = h.store();
    let a1 = ok(
        "a acquires r1 with k",
        s.acquire("r1", "a", 1_000.0, key("k")),
    );
    let b2 = ok(
        "b acquires r2 with the same key",
        s.acquire("r2", "b", 1_000.0, key("k")),
    );
    assert_eq!(
        (b2.resource_id.as_str(), b2.owner_id.as_str()),
        ("r2", "b"),
        "another owner's key is its own"
    );
    let released = ok(
        "a releases r1 with the same key",
        s.release("r1", "a", &a1.token, a1.generation, key("k")),
    );
    assert!(
        released.released_at.is_some(),
        "another verb's key is its own"
    );
    assert!(lease_of(h, "r1").released_at.is_some());
    let cp = ok(
        "b checkpoints with the same key",
        s.save_checkpoint("r2", "b", &b2.token, b2.generation, "x", key("k")),
    );
    assert_eq!(cp.checkpoint.map(|c| c.data), Some("x".into()));
    // Within one (owner, verb) the key names the mutation: a reuse replays it.
    assert_eq!(
        ok(
            "a reuses k for acquire",
            s.acquire("r9", "a", 1_000.0, key("k"))
        ),
        a1
    );
    assert!(
        ok("r9", s.lease("r9")).is_none(),
        "the replay applied nothing"
    );
}
