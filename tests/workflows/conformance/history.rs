//! What a finished transition leaves: terminal statuses are irreversible, history revisions
//! are monotone, and there is one outcome record per invocation id.

use leasehold::model::event::NewEvent;
use leasehold::workflow::Trigger;
use leasehold::workflow::engine::{CancelOutcome, Next, decode_state};
use leasehold::workflow::machine::Failure;
use serde_json::json;

use crate::support::Harness;

use super::{
    COMPAT, LEASE_MS, claim_one, code, engine, never, ok, snapshot, start, taken_directly,
    two_actions, wait_with_timeout,
};

/// Terminal statuses are irreversible: no cancel, no stale transition, no event or timer,
/// and even a current, fenced transition attempt is refused as `already-terminal`.
pub(super) fn terminal_is_irreversible(h: &dyn Harness) {
    let id = start(&h.store(), &wait_with_timeout(), json!({ "key": "k" }));
    let a = engine(h, "a");
    h.store()
        .ingest(&NewEvent {
            event_type: "signal".into(),
            source: Some("s".into()),
            external_id: Some("e1".into()),
            payload: json!({ "key": "k" }),
        })
        .expect("ingest");
    let stale = claim_one(&a);
    a.advance(&stale, never).expect("advance");
    let done = snapshot(&h.store(), &id);
    assert_eq!(done.0.status, "completed");

    assert_eq!(
        code(
            h.store()
                .cancel_workflow(&id, Some(&COMPAT.into()), "ops", "late")
        ),
        "already-terminal"
    );
    assert_eq!(code(a.apply(&stale, Trigger::TimeoutFired)), "WORK_FENCED");
    h.store()
        .ingest(&NewEvent {
            event_type: "signal".into(),
            source: Some("s".into()),
            external_id: Some("e2".into()),
            payload: json!({ "key": "k" }),
        })
        .expect("ingest");
    h.clock().advance(3_600_000);
    assert!(
        a.claim(10, LEASE_MS).expect("claim").is_empty(),
        "a terminal instance was claimable"
    );

    // Current revision, current lease (taken directly): the state machine itself refuses.
    let current = taken_directly(h, &id, "a");
    assert_eq!(
        code(a.apply(&current, Trigger::TimeoutFired)),
        "already-terminal"
    );
    assert_eq!(
        code(a.apply(
            &current,
            Trigger::Cancel {
                by: "ops".into(),
                reason: "x".into()
            }
        )),
        "already-terminal"
    );
    assert!(matches!(a.next(&current).expect("next"), Next::Idle));
    assert_eq!(
        snapshot(&h.store(), &id),
        done,
        "a terminal instance changed"
    );

    // Cancelled is terminal too, and a repeated cancel is idempotent.
    let other = start(&h.store(), &wait_with_timeout(), json!({ "key": "z" }));
    assert_eq!(
        h.store()
            .cancel_workflow(&other, Some(&COMPAT.into()), "ops", "x")
            .expect("cancel"),
        CancelOutcome::Cancelled
    );
    let cancelled = snapshot(&h.store(), &other);
    assert_eq!(
        h.store()
            .cancel_workflow(&other, Some(&COMPAT.into()), "ops", "x")
            .expect("cancel"),
        CancelOutcome::AlreadyCancelled
    );
    h.store()
        .ingest(&NewEvent {
            event_type: "signal".into(),
            source: Some("s".into()),
            external_id: Some("e3".into()),
            payload: json!({ "key": "z" }),
        })
        .expect("ingest");
    h.clock().advance(3_600_000);
    assert!(a.claim(10, LEASE_MS).expect("claim").is_empty());
    assert_eq!(snapshot(&h.store(), &other), cancelled);
}

/// History positions are dense, each transition's entries carry the revision it produced,
/// revisions go up by exactly one per committed transition, and the last one is the row's.
pub(super) fn history_revisions_are_monotone(h: &dyn Harness) {
    let id = start(&h.store(), &two_actions(), json!({ "n": 3 }));
    let a = engine(h, "a");
    let mut revisions = vec![
        h.store()
            .instance(&id)
            .expect("r")
            .expect("e")
            .instance_revision,
    ];
    let fail = || {
        Err(Failure {
            code: "BUSY".into(),
            message: "try later".into(),
            retryable: true,
        })
    };
    for (wait, outcome) in [
        (0, fail()),
        (1_000, fail()),
        (2_000, Ok(json!("a"))),
        (0, Ok(json!("b"))),
    ] {
        h.clock().advance(wait);
        let c = claim_one(&a);
        let row = a.advance(&c, |_| outcome).expect("advance").expect("row");
        revisions.push(row.instance_revision);
    }
    assert_eq!(
        revisions,
        vec![1, 2, 3, 4, 5],
        "one revision per transition"
    );

    let history = h.store().workflow_history(&id).expect("history");
    let kinds: Vec<String> = history.iter().map(crate::definitions::line).collect();
    assert_eq!(
        kinds,
        [
            "started",
            "step-activated:one",
            "retry-scheduled:one",
            "retry-scheduled:one",
            "step-succeeded:one",
            "step-activated:two",
            "step-succeeded:two",
            "step-activated:done",
            "completed:done"
        ]
    );
    let by_entry: Vec<u64> = history.iter().map(|h| h.instance_revision).collect();
    assert_eq!(by_entry, vec![1, 1, 2, 3, 4, 4, 5, 5, 5]);
    for (i, h) in history.iter().enumerate() {
        assert_eq!(h.position, i as u64 + 1);
        assert!(
            h.at >= history[i.saturating_sub(1)].at,
            "history instants go forward"
        );
    }
}

/// One outcome record per invocation id: retries reuse the id (the record follows the
/// latest attempt), and a second record for the same attempt never replaces the first.
pub(super) fn one_outcome_record_per_invocation(h: &dyn Harness) {
    let id = start(&h.store(), &two_actions(), json!({ "n": 1 }));
    let (a, b) = (engine(h, "a"), engine(h, "b"));
    let invocation = format!("{id}/one#0");

    let c = claim_one(&a);
    a.advance(&c, |req| {
        assert_eq!(req.invocation_id, invocation);
        assert_eq!(req.attempt, 1);
        Err(Failure {
            code: "BUSY".into(),
            message: "later".into(),
            retryable: true,
        })
    })
    .expect("attempt 1");
    let first = h
        .store()
        .action_outcome(&invocation)
        .expect("read")
        .expect("recorded");
    assert_eq!((first.attempt, first.outcome.as_str()), (1, "failed"));

    // Attempt 2: a records and dies before the transition.
    h.clock().advance(1_000);
    let c = claim_one(&a);
    let Next::Run(request) = a.next(&c).expect("next") else {
        panic!("attempt 2 is due")
    };
    assert_eq!(
        (request.invocation_id.as_str(), request.attempt),
        (invocation.as_str(), 2)
    );
    a.record_outcome(&c, &request, &Ok(json!("committed")))
        .expect("record");

    // b takes over; a duplicate record for the same attempt does not replace the first.
    h.clock().advance(LEASE_MS);
    let c = claim_one(&b);
    b.record_outcome(&c, &request, &Ok(json!("duplicate")))
        .expect("idempotent record");
    let recorded = h
        .store()
        .action_outcome(&invocation)
        .expect("read")
        .expect("recorded");
    assert_eq!(
        (recorded.attempt, recorded.detail.as_str()),
        (2, "\"committed\"")
    );
    assert_eq!(
        b.next(&c).expect("next"),
        Next::Apply(Trigger::ActionSucceeded {
            output: json!("committed")
        })
    );
    b.advance(&c, never).expect("reconcile");

    let c = claim_one(&b);
    b.advance(&c, ok(json!("two"))).expect("step two");
    let row = h.store().instance(&id).expect("read").expect("exists");
    let (_, state) = decode_state(&row).expect("state");
    assert_eq!(
        state.output,
        Some(json!({ "first": "committed", "second": "two" }))
    );
    let succeeded: Vec<_> = h
        .store()
        .workflow_history(&id)
        .expect("history")
        .into_iter()
        .filter(|h| h.kind == "step-succeeded")
        .map(|h| h.activation_id)
        .collect();
    assert_eq!(
        succeeded,
        vec![Some("one#0".to_string()), Some("two#0".to_string())]
    );
    assert!(
        h.store()
            .action_outcome(&format!("{id}/two#0"))
            .expect("read")
            .is_some()
    );
}
