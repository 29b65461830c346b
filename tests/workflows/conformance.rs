//! The workflow part of the store conformance suite: the same cases, unchanged, on every
//! provider (`conformance::memory::*`, `conformance::sqlite::*`, `conformance::postgres::*`).
//!
//! Each case pins one workflow rule (logical identity and exactly-once, cancellation, crash
//! recovery: docs/ARCHITECTURE.md#workflows) as the store enforces it inside its write
//! transaction:
//! every transition is a CAS on `instanceRevision` plus the lease fence, a refused write
//! changes nothing but the refused-write record, terminal statuses are irreversible,
//! history revisions are monotone and there is one outcome record per invocation id.

use std::collections::BTreeSet;

use leasehold::Store;
use leasehold::model::HistoryRecord;
use leasehold::model::event::NewEvent;
use leasehold::store::Keyed;
use leasehold::workflow::Trigger;
use leasehold::workflow::engine::{
    CancelOutcome, Claimed, Engine, Next, Step, decode_state, instance_resource,
};
use leasehold::workflow::machine::Failure;
use serde_json::{Value, json};

use crate::definitions::{args, deploy};
use crate::support::Harness;

const COMPAT: &str = "build-a";
const LEASE_MS: i64 = 1_000;

/// Two actions in a row, the first with retries, then `complete`.
fn two_actions() -> Value {
    json!({
        "id": "cf-two-actions",
        "inputs": [{ "id": "n", "valueType": "integer", "required": true }],
        "bindings": [
            { "id": "first", "producedBy": "one" },
            { "id": "second", "producedBy": "two" }
        ],
        "entry": "one",
        "steps": [
            { "id": "one", "type": "action", "action": "step-one", "arguments": { "n": { "ref": "n" } },
              "retry": { "maxAttempts": 4, "initialDelaySeconds": 1, "backoffMultiplier": 2, "maxDelaySeconds": 10 },
              "next": "two" },
            { "id": "two", "type": "action", "action": "step-two", "arguments": { "n": { "ref": "n" } }, "next": "done" },
            { "id": "done", "type": "complete", "output": { "object": { "first": { "ref": "first" }, "second": { "ref": "second" } } } }
        ]
    })
}

/// One event wait with a one-minute timeout.
fn wait_with_timeout() -> Value {
    json!({
        "id": "cf-wait",
        "inputs": [{ "id": "key", "valueType": "string", "required": true }],
        "bindings": [{ "id": "signal", "producedBy": "wait" }],
        "entry": "wait",
        "steps": [
            { "id": "wait", "type": "wait-event", "event": "signal",
              "where": { "eq": [{ "ref": "EVENT", "path": ["key"] }, { "ref": "key" }] },
              "bind": { "signal": { "ref": "EVENT" } },
              "next": "done", "timeout": { "seconds": 60 }, "onTimeout": "late" },
            { "id": "done", "type": "complete", "output": { "ref": "signal" } },
            { "id": "late", "type": "fail", "error": { "lit": { "code": "LATE" } } }
        ]
    })
}

fn start(store: &Store, def: &Value, arguments: Value) -> String {
    let workflow = deploy(store, def);
    store
        .start_workflow(&workflow, args(arguments), "alice", None, COMPAT)
        .expect("start")
        .instance_id
}

fn engine(h: &dyn Harness, owner: &str) -> Engine {
    Engine::new(h.store(), owner, COMPAT)
}

fn claim_one(engine: &Engine) -> Claimed {
    let mut claimed = engine.claim(10, LEASE_MS).expect("claim");
    assert_eq!(claimed.len(), 1, "exactly one runnable instance");
    claimed.remove(0)
}

fn ok(
    v: Value,
) -> impl FnOnce(&leasehold::workflow::machine::ActionRequest) -> Result<Value, Failure> {
    move |_| Ok(v)
}

fn never(req: &leasehold::workflow::machine::ActionRequest) -> Result<Value, Failure> {
    panic!(
        "no handler may run here, but {} was invoked",
        req.invocation_id
    )
}

/// Row, history and (when an action is due) its outcome record.
fn snapshot(store: &Store, id: &str) -> (leasehold::model::InstanceRow, Vec<HistoryRecord>) {
    (
        store.instance(id).expect("instance").expect("exists"),
        store.workflow_history(id).expect("history"),
    )
}

fn last_write(store: &Store, id: &str) -> leasehold::model::WriteRecord {
    let (_, writes) = store
        .ownership_history(Some(&instance_resource(id)), 0, 10_000)
        .expect("ownership history");
    writes.last().cloned().expect("a write record")
}

/// The instance's lease taken directly by `owner` (not through a claim) with its current
/// row: a current revision and a current lease, whatever the instance's status.
fn taken_directly(h: &dyn Harness, id: &str, owner: &str) -> Claimed {
    let lease = h
        .store()
        .acquire(&instance_resource(id), owner, 1_000.0, Keyed { key: None })
        .expect("lease");
    let row = h.store().instance(id).expect("read").expect("exists");
    let (_, state) = decode_state(&row).expect("state");
    Claimed { row, state, lease }
}

fn code<T: std::fmt::Debug>(r: leasehold::Result<T>) -> &'static str {
    r.expect_err("must be refused").code()
}

/// A Claimed whose lease is current but whose revision moved on (the owner applied a
/// transition and claimed again) is refused by the CAS, and writes nothing.
fn stale_revision_is_fenced_and_writes_nothing(h: &dyn Harness) {
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
fn cancel_fences_the_holder(h: &dyn Harness) {
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
fn stale_lease_holder_is_fenced(h: &dyn Harness) {
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
fn expiry_alone_does_not_fence(h: &dyn Harness) {
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
fn racing_claimers_one_wins(h: &dyn Harness) {
    start(&h.store(), &two_actions(), json!({ "n": 1 }));
    let (a, b) = (engine(h, "a"), engine(h, "b"));
    let got_a = a.claim(10, LEASE_MS).expect("claim a");
    let got_b = b.claim(10, LEASE_MS).expect("claim b");
    assert_eq!(got_a.len() + got_b.len(), 1);
}

/// Terminal statuses are irreversible: no cancel, no stale transition, no event or timer,
/// and even a current, fenced transition attempt is refused as `already-terminal`.
fn terminal_is_irreversible(h: &dyn Harness) {
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
fn history_revisions_are_monotone(h: &dyn Harness) {
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
fn one_outcome_record_per_invocation(h: &dyn Harness) {
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

/// Event and timeout due together, read by two authorities: whichever CAS commits first
/// wins; the other is fenced; the history holds exactly one of them.
fn event_versus_timeout_linearizes(h: &dyn Harness) {
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

/// One event wait with no timeout.
fn wait_forever() -> Value {
    json!({
        "id": "cf-wait-forever",
        "inputs": [{ "id": "key", "valueType": "string", "required": true }],
        "bindings": [{ "id": "signal", "producedBy": "wait" }],
        "entry": "wait",
        "steps": [
            { "id": "wait", "type": "wait-event", "event": "signal",
              "where": { "eq": [{ "ref": "EVENT", "path": ["key"] }, { "ref": "key" }] },
              "bind": { "signal": { "ref": "EVENT" } }, "next": "done" },
            { "id": "done", "type": "complete", "output": { "ref": "signal" } }
        ]
    })
}

fn signal(store: &Store, id: &str, key: &str) {
    store
        .ingest(&NewEvent {
            event_type: "signal".into(),
            source: Some("s".into()),
            external_id: Some(id.into()),
            payload: json!({ "key": key }),
        })
        .expect("ingest");
}

/// No event is lost in the handoff: a matching event that commits while an authority is
/// looking at the instance for an earlier, non-matching event (it has read the journal and
/// found nothing, and is about to give the instance back) must still move the instance.
fn event_during_an_idle_check_is_not_lost(h: &dyn Harness) {
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

/// Leaderless progress: while one authority holds some runnable instances, another one's
/// claim gets the others (a claim window is not spent on instances someone else holds).
fn claim_skips_instances_leased_by_others(h: &dyn Harness) {
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
fn instance_leases_are_clamped(h: &dyn Harness) {
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
fn an_owner_at_its_lease_cap_claims_no_instance(h: &dyn Harness) {
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
fn finished_steps_commit_together_and_a_stale_entry_refuses_alone(h: &dyn Harness) {
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
fn long_actions_do_not_starve_short_instances(h: &dyn Harness) {
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
fn renewal_keeps_a_release_and_a_wake_up_prompt(h: &dyn Harness) {
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

/// A start under a known idempotency key with the same arguments is the first instance; with
/// other arguments it is `IDEMPOTENCY_CONFLICT`, and nothing is started or changed.
fn a_reused_start_key_with_other_arguments_is_a_conflict(h: &dyn Harness) {
    let store = h.store();
    let workflow = deploy(&store, &wait_with_timeout());
    let first = store
        .start_workflow(
            &workflow,
            args(json!({ "key": "k1" })),
            "alice",
            Some("order-7"),
            COMPAT,
        )
        .expect("starts");
    let again = store
        .start_workflow(
            &workflow,
            args(json!({ "key": "k1" })),
            "alice",
            Some("order-7"),
            COMPAT,
        )
        .expect("a repeat");
    assert_eq!(
        (again.instance_id.as_str(), again.created),
        (first.instance_id.as_str(), false)
    );
    let revision = store.revision().expect("reads");
    let other = store.start_workflow(
        &workflow,
        args(json!({ "key": "k2" })),
        "alice",
        Some("order-7"),
        COMPAT,
    );
    assert_eq!(code(other), "IDEMPOTENCY_CONFLICT");
    assert_eq!(
        store.revision().expect("reads"),
        revision,
        "nothing written"
    );
}

/// Every refused workflow write is recorded with its verb and refusal: a superseded
/// holder's outcome record, transition and release, and a current holder's transition
/// that the state machine refuses (the instance already finished) — so the store's
/// history counts every refusal an authority was answered.
fn every_refused_workflow_write_is_recorded(h: &dyn Harness) {
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
        .map(|(_, w)| {
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

/// Retention trims a finished instance (completed or cancelled) with its history and its
/// outcome records once it is older than the policy, and nothing of a waiting instance,
/// however old: its row, history and wait stay; the status counts equal the rows.
fn retention_trims_finished_instances_only(h: &dyn Harness) {
    let store = h.store();
    let done = start(&store, &two_actions(), json!({ "n": 1 }));
    let a = engine(h, "a");
    for output in [json!(1), json!(2)] {
        a.advance(&claim_one(&a), ok(output)).expect("step");
    }
    assert_eq!(snapshot(&store, &done).0.status, "completed");
    let invocations = [format!("{done}/one#0"), format!("{done}/two#0")];
    for invocation in &invocations {
        assert!(store.action_outcome(invocation).expect("read").is_some());
    }
    let cancelled = start(&store, &two_actions(), json!({ "n": 2 }));
    store
        .cancel_workflow(&cancelled, None, "alice", "not needed")
        .expect("cancel");
    let waiting = start(&store, &wait_with_timeout(), json!({ "key": "k" }));
    let parked = snapshot(&store, &waiting);
    assert_eq!(parked.0.status, "waiting");

    h.clock().advance(8 * 24 * 3_600_000);
    let policy = leasehold::store::RetentionPolicy::default();
    let trimmed = store.trim(&policy, 1).expect("trim");
    assert_eq!(trimmed.instances, 1, "one per batch");
    let trimmed = store.trim(&policy, 10).expect("trim");
    assert_eq!(trimmed.instances, 1);
    for id in [&done, &cancelled] {
        assert!(store.instance(id).expect("read").is_none(), "{id} kept");
        assert!(store.workflow_history(id).expect("read").is_empty());
    }
    for invocation in &invocations {
        assert!(store.action_outcome(invocation).expect("read").is_none());
    }
    assert_eq!(
        snapshot(&store, &waiting),
        parked,
        "the waiting instance is untouched"
    );
    assert_eq!(store.trim(&policy, 10).expect("trim").instances, 0);
    let overview = store.overview().expect("overview");
    let counted: Vec<(String, u64)> = overview
        .workflows
        .into_iter()
        .filter(|(_, n)| *n > 0)
        .collect();
    assert_eq!(counted, [("waiting".to_owned(), 1)]);
}

per_provider! {
    every_refused_workflow_write_is_recorded,
    a_reused_start_key_with_other_arguments_is_a_conflict,
    renewal_keeps_a_release_and_a_wake_up_prompt,
    long_actions_do_not_starve_short_instances,
    finished_steps_commit_together_and_a_stale_entry_refuses_alone,
    event_during_an_idle_check_is_not_lost,
    claim_skips_instances_leased_by_others,
    instance_leases_are_clamped,
    an_owner_at_its_lease_cap_claims_no_instance,
    stale_revision_is_fenced_and_writes_nothing,
    cancel_fences_the_holder,
    stale_lease_holder_is_fenced,
    expiry_alone_does_not_fence,
    racing_claimers_one_wins,
    terminal_is_irreversible,
    history_revisions_are_monotone,
    one_outcome_record_per_invocation,
    event_versus_timeout_linearizes,
    retention_trims_finished_instances_only,
}
