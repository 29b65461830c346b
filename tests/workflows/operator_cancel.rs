//! An operator's cancel (`Store::cancel_workflow_audited`, what `leasehold cancel` and the
//! dashboard call): the cancel and its audit entry commit in one transaction, so a store
//! failure can never leave a cancelled instance without its entry; and a dry run, judging
//! the row a list returned with the engine's verdict function, says what the cancel then
//! does, for every verdict.

use leasehold::Store;
use leasehold::model::{CompatSet, PageRequest};
use leasehold::store::faults::{Fault, FaultPlan};
use leasehold::workflow::engine::cancel::{AUDIT_ACTION, Verdict, judge};
use serde_json::{Value, json};

use crate::definitions::{args, deploy};
use crate::support::Harness;
use crate::support::faults::{FaultyStore, faulty_stores};

const MINE: &str = "build-a";
const THEIRS: &str = "build-b";
const ACTOR: &str = "ops@host";

/// One event wait: an instance that stays `waiting`.
fn waits() -> Value {
    json!({
        "id": "oc-wait",
        "entry": "wait",
        "steps": [
            { "id": "wait", "type": "wait-event", "event": "signal", "next": "done" },
            { "id": "done", "type": "complete", "output": { "lit": { "ok": true } } }
        ]
    })
}

/// Completes as it starts.
fn completes() -> Value {
    json!({
        "id": "oc-complete",
        "entry": "done",
        "steps": [{ "id": "done", "type": "complete", "output": { "lit": { "ok": true } } }]
    })
}

/// Fails as it starts.
fn fails() -> Value {
    json!({
        "id": "oc-fail",
        "entry": "bad",
        "steps": [{ "id": "bad", "type": "fail", "error": { "lit": { "code": "NO" } } }]
    })
}

fn start(store: &Store, def: &Value, compat: &str) -> String {
    let workflow = deploy(store, def);
    store
        .start_workflow(&workflow, args(json!({})), "alice", None, compat)
        .expect("start")
        .instance_id
}

/// Whether the audit log holds an entry for `instance` saying it was cancelled.
fn audited_as_cancelled(store: &Store, instance: &str) -> bool {
    store
        .list_audit(&PageRequest::first(100))
        .expect("audit")
        .rows
        .iter()
        .any(|a| {
            a.action == AUDIT_ACTION && a.target == instance && a.outcome.starts_with("cancelled")
        })
}

fn status(store: &Store, instance: &str) -> String {
    store
        .instance(instance)
        .expect("read")
        .expect("exists")
        .status
        .as_str()
        .to_owned()
}

/// Whichever of the next writes fails, and however (nothing committed, or committed and
/// reported failed), a cancelled instance has its audit entry and an audited cancel its
/// cancelled instance: two transactions would leave the first committed and the second
/// lost.
#[test]
fn a_committed_cancel_always_has_its_audit_entry() {
    for fault in [Fault::FailBeforeCommit, Fault::CommitThenReportFailure] {
        for nth in 1..=2 {
            for FaultyStore {
                faults: faulty,
                store,
                ..
            } in faulty_stores(5)
            {
                let provider = store.kind().as_str();
                let id = start(&store, &waits(), MINE);
                faulty.plan(FaultPlan::once(faulty.writes() + nth, fault));
                let answer = store.cancel_workflow_audited(&id, None, ACTOR, "stop");
                let cancelled = status(&store, &id) == "cancelled";
                assert_eq!(
                    cancelled,
                    audited_as_cancelled(&store, &id),
                    "{provider}: {fault:?} on write {nth} after the cancel began: {answer:?}"
                );
                if let Ok(verdict) = answer {
                    assert_eq!(verdict, Verdict::Cancelled, "{provider}");
                    assert!(cancelled, "{provider}: an answered cancel is committed");
                }
            }
        }
    }
}

/// Each verdict, judged as a dry run does (the listed row, the caller's keys) and then
/// given by the cancel itself: the same, and audited in the same words.
pub fn dry_run_and_cancel_agree_on_every_verdict(h: &dyn Harness) {
    let store = h.store();
    let keys = CompatSet::from(MINE);
    let running = start(&store, &waits(), MINE);
    let cancelled = start(&store, &waits(), MINE);
    let completed = start(&store, &completes(), MINE);
    let failed = start(&store, &fails(), MINE);
    let theirs = start(&store, &waits(), THEIRS);
    let theirs_cancelled = start(&store, &waits(), THEIRS);
    for id in [&cancelled, &theirs_cancelled] {
        store
            .cancel_workflow(id, None, ACTOR, "setup")
            .expect("cancel");
    }
    assert_eq!(status(&store, &completed), "completed");
    assert_eq!(status(&store, &failed), "failed");
    let cases = [
        (running.as_str(), Verdict::Cancelled),
        (cancelled.as_str(), Verdict::AlreadyCancelled),
        (completed.as_str(), Verdict::Finished("completed".into())),
        (failed.as_str(), Verdict::Finished("failed".into())),
        (theirs.as_str(), Verdict::Incompatible),
        (theirs_cancelled.as_str(), Verdict::Incompatible),
        ("wf-nobody-started", Verdict::Unknown),
    ];
    for (id, expected) in cases {
        let row = store.instance(id).expect("read");
        let dry = Verdict::of(&judge(id, row.as_ref(), Some(&keys)));
        let real = store
            .cancel_workflow_audited(id, Some(&keys), ACTOR, "")
            .expect("answered");
        assert_eq!((&dry, &real), (&expected, &expected), "{id}");
        let entry = store
            .list_audit(&PageRequest::first(100))
            .expect("audit")
            .rows
            .into_iter()
            .filter(|a| a.target == id)
            .max_by_key(|a| a.id)
            .expect("audited");
        assert_eq!(entry.outcome, real.words(), "{id}");
    }
}

per_provider! {
    dry_run_and_cancel_agree_on_every_verdict,
}
