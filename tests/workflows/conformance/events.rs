//! Events and timeouts: due together they linearize, and an event that commits during an
//! idle check is not lost.

use leasehold::model::event::NewEvent;
use leasehold::workflow::Trigger;
use leasehold::workflow::engine::Next;
use serde_json::json;

use crate::support::Harness;

use super::{
    LEASE_MS, claim_one, code, engine, never, signal, start, wait_forever, wait_with_timeout,
};

/// Event and timeout due together, read by two authorities: whichever CAS commits first
/// wins; the other is fenced; the history holds exactly one of them.
pub(super) fn event_versus_timeout_linearizes(h: &dyn Harness) {
    let id = start(&h.store(), &wait_with_timeout(), json!({ "key": "k" }));
    let (a, b) = (engine(h, "a"), engine(h, "b"));
    h.clock().advance(60_000);
    h.store()
        .ingest(&NewEvent {
            event_type: "signal".into(),
            source: Some("s".into()),
            external_id: Some("e1".into()),
            payload: json!({ "key": "k" }),
        })
        .expect("ingest");
    let slow = claim_one(&a);
    let Next::Apply(event @ Trigger::EventMatched { .. }) = a.next(&slow).expect("next") else {
        panic!("the event at timeoutAt is due")
    };
    h.clock().advance(LEASE_MS);
    let fast = claim_one(&b);
    b.apply(&fast, Trigger::TimeoutFired)
        .expect("timeout first");
    assert_eq!(code(a.apply(&slow, event)), "WORK_FENCED");
    let kinds: Vec<String> = h
        .store()
        .workflow_history(&id)
        .expect("h")
        .iter()
        .map(crate::definitions::line)
        .collect();
    assert_eq!(
        kinds,
        [
            "started",
            "step-activated:wait",
            "timeout-fired:wait",
            "step-activated:late",
            "failed:late"
        ]
    );
}

/// No event is lost in the handoff: a matching event that commits while an authority is
/// looking at the instance for an earlier, non-matching event (it has read the journal and
/// found nothing, and is about to give the instance back) must still move the instance.
pub(super) fn event_during_an_idle_check_is_not_lost(h: &dyn Harness) {
    let id = start(&h.store(), &wait_forever(), json!({ "key": "k" }));
    let (a, b) = (engine(h, "a"), engine(h, "b"));
    signal(&h.store(), "e1", "other");
    let looking = claim_one(&a);
    assert_eq!(
        a.next(&looking).expect("next"),
        Next::Idle,
        "e1 does not match"
    );
    h.clock().advance(10);
    signal(&h.store(), "e2", "k");
    a.release(&looking).expect("release");

    h.clock().advance(10);
    for c in b.claim(10, LEASE_MS).expect("claim") {
        b.advance(&c, never).expect("advance");
    }
    let row = h.store().instance(&id).expect("read").expect("exists");
    assert_eq!(
        row.status, "completed",
        "the matching event e2 was journalled before the release, yet the instance is no longer eligible (next_eligible_at {:?})",
        row.next_eligible_at
    );
}
