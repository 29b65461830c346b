//! The workflow part of the store conformance suite: the same cases, unchanged, on every
//! provider (`conformance::memory::*`, `conformance::sqlite::*`, `conformance::postgres::*`).
//!
//! Each case pins one workflow rule (logical identity and exactly-once, cancellation, crash
//! recovery: docs/ARCHITECTURE.md#workflows) as the store enforces it inside its write
//! transaction:
//! every transition is a CAS on `instanceRevision` plus the lease fence, a refused write
//! changes nothing but the refused-write record, terminal statuses are irreversible,
//! history revisions are monotone and there is one outcome record per invocation id.

#[path = "conformance/claims.rs"]
mod claims;
#[path = "conformance/events.rs"]
mod events;
#[path = "conformance/fencing.rs"]
mod fencing;
#[path = "conformance/history.rs"]
mod history;
#[path = "conformance/starts_and_retention.rs"]
mod starts_and_retention;

use leasehold::Store;
use leasehold::model::HistoryRecord;
use leasehold::model::event::NewEvent;
use leasehold::store::Keyed;
use leasehold::workflow::engine::{Claimed, Engine, decode_state, instance_resource};
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

per_provider! {
    fencing::every_refused_workflow_write_is_recorded,
    starts_and_retention::a_reused_start_key_with_other_arguments_is_a_conflict,
    claims::renewal_keeps_a_release_and_a_wake_up_prompt,
    claims::long_actions_do_not_starve_short_instances,
    claims::finished_steps_commit_together_and_a_stale_entry_refuses_alone,
    events::event_during_an_idle_check_is_not_lost,
    claims::claim_skips_instances_leased_by_others,
    claims::instance_leases_are_clamped,
    claims::an_owner_at_its_lease_cap_claims_no_instance,
    fencing::stale_revision_is_fenced_and_writes_nothing,
    fencing::cancel_fences_the_holder,
    fencing::stale_lease_holder_is_fenced,
    fencing::expiry_alone_does_not_fence,
    fencing::racing_claimers_one_wins,
    history::terminal_is_irreversible,
    history::history_revisions_are_monotone,
    history::one_outcome_record_per_invocation,
    events::event_versus_timeout_linearizes,
    starts_and_retention::retention_trims_finished_instances_only,
}
