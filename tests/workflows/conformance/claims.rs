//! Claims of instances: other holders' instances are skipped, lease windows are clamped and
//! capped, finished steps commit together, long actions do not starve short instances, and
//! renewals keep a release and a wake-up prompt.

use std::collections::BTreeSet;

use leasehold::store::Keyed;
use leasehold::workflow::engine::{Claimed, Engine, Next, Step};
use serde_json::json;

use crate::support::Harness;

use super::{
    COMPAT, LEASE_MS, claim_one, code, engine, last_write, never, ok, signal, snapshot, start,
    two_actions, wait_forever,
};

/// Leaderless progress: while one authority holds some runnable instances, another one's
/// claim gets the others (a claim window is not spent on instances someone else holds).
pub(super) fn claim_skips_instances_leased_by_others(h: &dyn Harness) {
    for n in 0..3 {
        start(&h.store(), &two_actions(), json!({ "n": n }));
    }
    let (a, b) = (engine(h, "a"), engine(h, "b"));
    let held = a.claim(1, LEASE_MS).expect("claim a");
    assert_eq!(held.len(), 1);
    let got = b.claim(1, LEASE_MS).expect("claim b");
    assert_eq!(
        got.len(),
        1,
        "two instances are runnable and free, but b's claim of one got none"
    );
    assert_ne!(got[0].row.instance_id, held[0].row.instance_id);
}

/// An instance's lease window is clamped as every lease's is: a claim asking for no time,
/// less than none or more than the longest lease gets the clamped window, and the instance
/// is parked until that window ends. (`Engine::claim` takes whole milliseconds, so a NaN
/// cannot reach it; `Store::acquire`'s tests cover that.)
pub(super) fn instance_leases_are_clamped(h: &dyn Harness) {
    use leasehold::clock::Clock;
    use leasehold::rules::lease::{DEFAULT_LEASE_MS, MAX_LEASE_MS, MIN_LEASE_MS};

    let asked_and_granted = [
        (0, DEFAULT_LEASE_MS),
        (-5, DEFAULT_LEASE_MS),
        (i64::MAX, MAX_LEASE_MS),
        (1, MIN_LEASE_MS),
    ];
    for (n, (asked, granted)) in asked_and_granted.into_iter().enumerate() {
        let id = start(&h.store(), &two_actions(), json!({ "n": n }));
        let now = h.clock().now();
        let claimed = engine(h, &format!("o{n}")).claim(10, asked).expect("claim");
        assert_eq!(claimed.len(), 1, "asked {asked} ms");
        assert_eq!(claimed[0].row.instance_id, id);
        assert_eq!(
            claimed[0].lease.expires_at,
            now + granted,
            "asked {asked} ms"
        );
        let parked = h.store().instance(&id).expect("read").expect("exists");
        assert_eq!(parked.next_eligible_at, Some(now + granted));
    }
}

/// An owner holding its cap of live leases is granted no instance's lease either, while
/// another owner is.
pub(super) fn an_owner_at_its_lease_cap_claims_no_instance(h: &dyn Harness) {
    let capped = h.store().with_owner_cap(1);
    capped
        .acquire("busy-resource", "busy", 60_000.0, Keyed { key: None })
        .expect("busy's one lease");
    let id = start(&h.store(), &two_actions(), json!({ "n": 9 }));
    let busy = Engine::new(capped.clone(), "busy", COMPAT);
    assert!(
        busy.claim(10, LEASE_MS).expect("claim").is_empty(),
        "an owner at its cap was granted an instance's lease"
    );
    let free = Engine::new(capped, "free", COMPAT);
    let claimed = free.claim(10, LEASE_MS).expect("claim");
    assert_eq!(claimed.len(), 1);
    assert_eq!(claimed[0].row.instance_id, id);
}

/// Group commit of workflow steps: a batch in which one entry is stale (its lease was
/// taken over) refuses only that entry; the others record their outcome and transition in
/// the same single commit.
pub(super) fn finished_steps_commit_together_and_a_stale_entry_refuses_alone(h: &dyn Harness) {
    for n in 1..=3 {
        start(&h.store(), &two_actions(), json!({ "n": n }));
    }
    let a = engine(h, "a");
    let mut claimed = a.claim(10, LEASE_MS).expect("claim");
    assert_eq!(claimed.len(), 3);
    claimed.sort_by(|x, y| x.row.instance_id.cmp(&y.row.instance_id));

    // The lease of the middle instance expires and b takes it over.
    h.clock().advance(LEASE_MS + 1);
    let b = engine(h, "b");
    let taken = b.claim(10, LEASE_MS).expect("b claims");
    assert_eq!(taken.len(), 3, "every lease lapsed");
    let stale_id = claimed[1].row.instance_id.clone();
    for other in taken.iter().filter(|c| c.row.instance_id != stale_id) {
        b.release(other).expect("b gives the others back");
    }
    // a renews the two it still wants (its old claims lapsed too): claim again.
    let mut mine = a.claim(10, LEASE_MS).expect("a claims again");
    mine.sort_by(|x, y| x.row.instance_id.cmp(&y.row.instance_id));
    assert_eq!(mine.len(), 2);
    let revision = h.store().revision().expect("revision");

    let requests: Vec<_> = mine
        .iter()
        .chain(std::iter::once(&claimed[1]))
        .map(|c| match a.next(c).expect("next") {
            Next::Run(request) => request,
            other => panic!("an action is due, not {other:?}"),
        })
        .collect();
    let outcome = Ok(json!("done"));
    let entries: Vec<(&Claimed, Step<'_>)> = mine
        .iter()
        .chain(std::iter::once(&claimed[1]))
        .zip(&requests)
        .map(|(c, request)| {
            (
                c,
                Step::Ran {
                    request,
                    outcome: &outcome,
                },
            )
        })
        .collect();
    let answers = a.finish_steps(&entries).expect("one commit");
    assert_eq!(
        h.store().revision().expect("revision"),
        revision + 1,
        "one commit"
    );
    assert!(answers[0].is_ok() && answers[1].is_ok(), "{answers:?}");
    assert_eq!(code(answers[2].clone()), "WORK_FENCED");
    for c in &mine {
        assert_eq!(
            h.store()
                .instance(&c.row.instance_id)
                .expect("read")
                .expect("exists")
                .instance_revision,
            2,
            "the fresh entries transitioned"
        );
    }
    let stale_row = h
        .store()
        .instance(&stale_id)
        .expect("read")
        .expect("exists");
    assert_eq!(
        stale_row.instance_revision, 1,
        "the stale entry changed nothing"
    );
    assert!(
        h.store()
            .action_outcome(&requests[2].invocation_id)
            .expect("read")
            .is_none(),
        "no outcome recorded under a stale lease"
    );
    assert!(!last_write(&h.store(), &stale_id).accepted);
}

/// An action that outlives its lease window, renewed by its owner, keeps its instance out
/// of discovery: with as many long actions as another authority's claim limit, that
/// authority's claims still get every short instance, which all finish while the long
/// actions run for four lease windows.
pub(super) fn long_actions_do_not_starve_short_instances(h: &dyn Harness) {
    let store = h.store();
    let long: BTreeSet<String> = (0..2)
        .map(|n| start(&store, &two_actions(), json!({ "n": n })))
        .collect();
    let slow = engine(h, "slow");
    let mut held = slow.claim(2, LEASE_MS).expect("claim the long ones");
    assert_eq!(held.len(), 2);
    let fast = engine(h, "fast");
    let mut short = BTreeSet::new();
    let mut finished = BTreeSet::new();
    // Quarter-window ticks: the slow owner renews at every tick; the short instances start
    // once the long ones' first lease window is over, so they queue behind its instant.
    for tick in 1..=16 {
        h.clock().advance(LEASE_MS / 4);
        for c in &mut held {
            c.lease = slow.renew(c, LEASE_MS).expect("renew");
        }
        if tick == 6 {
            short = (10..15)
                .map(|n| start(&store, &two_actions(), json!({ "n": n })))
                .collect();
        }
        for c in fast.claim(long.len(), LEASE_MS).expect("claim") {
            assert!(
                !long.contains(&c.row.instance_id),
                "a held instance was claimed"
            );
            let row = fast
                .advance(&c, ok(json!(1)))
                .expect("advance")
                .expect("a step");
            if row.status == "completed" {
                finished.insert(row.instance_id);
            }
        }
    }
    assert_eq!(finished, short, "every short instance finished meanwhile");
    for c in &held {
        let (row, history) = snapshot(&store, &c.row.instance_id);
        assert_eq!((row.status.as_str(), row.instance_revision), ("running", 1));
        assert_eq!(
            row.next_eligible_at,
            Some(c.lease.expires_at),
            "parked with its lease"
        );
        assert!(
            history.iter().all(|r| r.instance_revision == 1),
            "nothing past the start: {history:?}"
        );
        let after = slow
            .advance(c, ok(json!(2)))
            .expect("the owner still holds it");
        assert_eq!(after.map(|r| r.instance_revision), Some(2));
    }
}

/// The park follows renewals both ways: a renewed instance given back is runnable again at
/// once (not at its renewed expiry), and a wake-up an event fanout wrote while it was held
/// survives a renewal, so the event is not lost in the handoff.
pub(super) fn renewal_keeps_a_release_and_a_wake_up_prompt(h: &dyn Harness) {
    let id = start(&h.store(), &wait_forever(), json!({ "key": "k" }));
    let (a, b) = (engine(h, "a"), engine(h, "b"));
    signal(&h.store(), "e0", "other");
    // As an authority does, each claim is kept as taken: renewals present its token.
    let held = claim_one(&a);
    assert_eq!(
        a.next(&held).expect("next"),
        Next::Idle,
        "e0 does not match"
    );
    h.clock().advance(LEASE_MS / 2);
    a.renew(&held, LEASE_MS).expect("renew");
    signal(&h.store(), "e1", "k");
    h.clock().advance(LEASE_MS / 2);
    let renewed = a.renew(&held, LEASE_MS).expect("renew after the wake-up");
    let row = h.store().instance(&id).expect("read").expect("exists");
    assert!(
        row.next_eligible_at.is_some_and(|t| t < renewed.expires_at),
        "the renewal overwrote the fanout's wake-up: {:?}",
        row.next_eligible_at
    );
    a.release(&held).expect("release");
    let woken = claim_one(&b);
    b.advance(&woken, never).expect("advance");
    let row = h.store().instance(&id).expect("read").expect("exists");
    assert_eq!(row.status, "completed");

    // Renewed, then given back with nothing due: runnable again at once.
    let other = start(&h.store(), &two_actions(), json!({ "n": 7 }));
    let held = claim_one(&a);
    assert_eq!(held.row.instance_id, other);
    h.clock().advance(LEASE_MS / 2);
    let renewed = a.renew(&held, LEASE_MS).expect("renew");
    let parked = h.store().instance(&other).expect("read").expect("exists");
    assert_eq!(
        parked.next_eligible_at,
        Some(renewed.expires_at),
        "parked with the lease"
    );
    a.release(&held).expect("release");
    assert_eq!(
        claim_one(&b).row.instance_id,
        other,
        "a released instance waits for no renewed expiry"
    );
}
