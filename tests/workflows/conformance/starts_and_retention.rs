//! A start key reused with other arguments is a conflict, and retention trims finished
//! instances only.

use serde_json::json;

use crate::definitions::{args, deploy};
use crate::support::Harness;

use super::{COMPAT, claim_one, code, engine, ok, snapshot, start, two_actions, wait_with_timeout};

/// A start under a known idempotency key with the same arguments is the first instance; with
/// other arguments it is `IDEMPOTENCY_CONFLICT`, and nothing is started or changed.
pub(super) fn a_reused_start_key_with_other_arguments_is_a_conflict(h: &dyn Harness) {
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

/// Retention trims a finished instance (completed or cancelled) with its history and its
/// outcome records once it is older than the policy, and nothing of a waiting instance,
/// however old: its row, history and wait stay; the status counts equal the rows.
pub(super) fn retention_trims_finished_instances_only(h: &dyn Harness) {
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
