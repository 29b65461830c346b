//! Fenced writes: a stale revision or a superseded lease holder is refused and writes nothing
//! but the refused-write record, expiry alone fences nothing, racing claimers get one
//! instance, and every refused write is recorded with its verb.

use leasehold::workflow::Trigger;
use leasehold::workflow::engine::{CancelOutcome, Claimed, Engine, Next, decode_state};
use serde_json::json;

use crate::support::Harness;

use super::{
    COMPAT, LEASE_MS, claim_one, code, engine, last_write, ok, snapshot, start, taken_directly,
    two_actions,
};

/// A Claimed whose lease is current but whose revision moved on (the owner applied a
/// transition and claimed again) is refused by the CAS, and writes nothing.
pub(super) fn stale_revision_is_fenced_and_writes_nothing(h: &dyn Harness) {
    let id = start(&h.store(), &two_actions(), json!({ "n": 1 }));
    let a = engine(h, "a");
    let first = claim_one(&a);
    assert_eq!(first.row.instance_revision, 1);
    a.advance(&first, ok(json!(1))).expect("first step");
    let second = claim_one(&a);
    assert_eq!(second.row.instance_revision, 2);

    // The fence (lease) is right, the revision is not.
    let stale = Claimed {
        lease: second.lease.clone(),
        ..first.clone()
    };
    let before = snapshot(&h.store(), &id);
    let refused = a.apply(
        &stale,
        Trigger::ActionSucceeded {
            output: json!("stale"),
        },
    );
    assert_eq!(code(refused), "WORK_FENCED");
    assert_eq!(
        snapshot(&h.store(), &id),
        before,
        "a refused CAS wrote instance state"
    );
    let w = last_write(&h.store(), &id);
    assert!(!w.accepted && w.refusal.as_deref() == Some("WORK_FENCED") && w.verb == "transition");

    // The current claim still works, and the stale value never surfaces.
    let row = a
        .advance(&second, ok(json!(2)))
        .expect("second step")
        .expect("row");
    assert_eq!(row.status, "completed");
    let (_, state) = decode_state(&row).expect("state");
    assert_eq!(state.output, Some(json!({ "first": 1, "second": 2 })));
}

/// A cancel moves the revision under a live claim: the holder's transition is refused.
pub(super) fn cancel_fences_the_holder(h: &dyn Harness) {
    let id = start(&h.store(), &two_actions(), json!({ "n": 1 }));
    let a = engine(h, "a");
    let held = claim_one(&a);
    assert_eq!(
        h.store()
            .cancel_workflow(&id, Some(&COMPAT.into()), "ops", "stop")
            .expect("cancel"),
        CancelOutcome::Cancelled
    );
    let before = snapshot(&h.store(), &id);
    let refused = a.apply(&held, Trigger::ActionSucceeded { output: json!(1) });
    assert_eq!(code(refused), "WORK_FENCED");
    assert_eq!(snapshot(&h.store(), &id), before);
    assert_eq!(before.0.status, "cancelled");
}

/// An instance whose action `a` was about to run when its lease lapsed and `b` reclaimed
/// it: `a` holds the `old` claim, `b` the `new` one.
struct Superseded {
    id: String,
    a: Engine,
    b: Engine,
    old: Claimed,
    request: leasehold::workflow::machine::ActionRequest,
    new: Claimed,
}

fn superseded(h: &dyn Harness) -> Superseded {
    let id = start(&h.store(), &two_actions(), json!({ "n": 1 }));
    let (a, b) = (engine(h, "a"), engine(h, "b"));
    let old = claim_one(&a);
    let Next::Run(request) = a.next(&old).expect("next") else {
        panic!("an action is due")
    };
    h.clock().advance(LEASE_MS);
    let new = claim_one(&b);
    Superseded {
        id,
        a,
        b,
        old,
        request,
        new,
    }
}

/// A holder whose lease was reclaimed by another authority is fenced on every write: the
/// outcome record, the transition and the release. The new holder proceeds.
pub(super) fn stale_lease_holder_is_fenced(h: &dyn Harness) {
    let Superseded {
        id,
        a,
        b,
        old,
        request,
        new,
    } = superseded(h);
    assert!(
        new.lease.generation > old.lease.generation,
        "a reclaim mints a higher generation"
    );

    let before = snapshot(&h.store(), &id);
    assert_eq!(
        code(a.record_outcome(&old, &request, &Ok(json!("stale")))),
        "WORK_FENCED"
    );
    assert_eq!(
        h.store()
            .action_outcome(&request.invocation_id)
            .expect("read"),
        None,
        "a fenced outcome was recorded"
    );
    assert_eq!(
        code(a.apply(
            &old,
            Trigger::ActionSucceeded {
                output: json!("stale")
            }
        )),
        "WORK_FENCED"
    );
    assert_eq!(code(a.release(&old)), "WORK_FENCED");
    assert_eq!(
        snapshot(&h.store(), &id),
        before,
        "the stale holder changed the instance"
    );

    let row = b
        .advance(&new, ok(json!("fresh")))
        .expect("new holder")
        .expect("row");
    assert_eq!(row.instance_revision, 2);
    let outcome = h
        .store()
        .action_outcome(&request.invocation_id)
        .expect("read")
        .expect("recorded");
    assert_eq!(outcome.detail, json!("fresh").to_string());
}

/// Expiry alone fences nothing: if nobody reclaimed, the late holder's transition applies.
pub(super) fn expiry_alone_does_not_fence(h: &dyn Harness) {
    start(&h.store(), &two_actions(), json!({ "n": 1 }));
    let a = engine(h, "a");
    let held = claim_one(&a);
    h.clock().advance(LEASE_MS * 5);
    let row = a
        .advance(&held, ok(json!(1)))
        .expect("late but unchallenged")
        .expect("row");
    assert_eq!(row.instance_revision, 2);
}

/// Two authorities claiming at the same instant: exactly one gets the instance.
pub(super) fn racing_claimers_one_wins(h: &dyn Harness) {
    start(&h.store(), &two_actions(), json!({ "n": 1 }));
    let (a, b) = (engine(h, "a"), engine(h, "b"));
    let got_a = a.claim(10, LEASE_MS).expect("claim a");
    let got_b = b.claim(10, LEASE_MS).expect("claim b");
    assert_eq!(got_a.len() + got_b.len(), 1);
}

/// Every refused workflow write is recorded with its verb and refusal: a superseded
/// holder's outcome record, transition and release, and a current holder's transition
/// that the state machine refuses (the instance already finished) — so the store's
/// history counts every refusal an authority was answered.
pub(super) fn every_refused_workflow_write_is_recorded(h: &dyn Harness) {
    let Superseded {
        id,
        a,
        b,
        old,
        request,
        new,
    } = superseded(h);
    let since = h.store().now();
    assert_eq!(
        code(a.record_outcome(&old, &request, &Ok(json!("stale")))),
        "WORK_FENCED"
    );
    assert_eq!(code(a.apply(&old, Trigger::TimeoutFired)), "WORK_FENCED");
    assert_eq!(code(a.release(&old)), "WORK_FENCED");
    b.advance(&new, ok(json!(1))).expect("b steps");
    let again = claim_one(&b);
    b.advance(&again, ok(json!(2))).expect("b finishes");
    let current = taken_directly(h, &id, "b");
    assert_eq!(
        code(b.apply(&current, Trigger::TimeoutFired)),
        "already-terminal"
    );

    let refused = h.store().refused_writes(since, None, 100).expect("refused");
    let seen: Vec<(String, String, Option<String>)> = refused
        .rows
        .iter()
        .rev()
        .map(|(_, r)| {
            let w = &r.write;
            (
                w.verb.as_str().to_owned(),
                w.owner_id.clone(),
                w.refusal.clone(),
            )
        })
        .collect();
    let row = |verb: &str, owner: &str, code: &str| {
        (verb.to_owned(), owner.to_owned(), Some(code.to_owned()))
    };
    assert_eq!(
        seen,
        [
            row("action-outcome", "a", "WORK_FENCED"),
            row("transition", "a", "WORK_FENCED"),
            row("release", "a", "WORK_FENCED"),
            row("transition", "b", "already-terminal"),
        ]
    );
}
