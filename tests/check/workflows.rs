//! Invariant 9: workflow histories, healthy and broken, planted entry by entry.

use leasehold::check::{codes, render_text};
use leasehold::model::workflow::ActionOutcome;
use leasehold::model::{HistoryRecord, InstanceRow};
use serde_json::{Value, json};

use super::{Fixture, T0, assert_reported, fixture, k1};

// --- 9. workflows

/// `(kind, activationId, instanceRevision, detail)`.
type Entry<'a> = (&'a str, Option<&'a str>, u64, Value);

fn plant_instance(f: &Fixture, id: &str, entries: &[Entry<'_>], outcomes: &[(&str, &str)]) {
    let revision = entries.iter().map(|e| e.2).max().unwrap_or(0);
    let status = entries
        .iter()
        .rev()
        .find_map(|e| {
            ["completed", "failed", "cancelled"]
                .contains(&e.0)
                .then_some(e.0)
        })
        .unwrap_or("running");
    f.plant(|tx, _| {
        tx.insert_instance(&InstanceRow {
            instance_id: id.into(),
            workflow_id: "order".into(),
            status: leasehold::model::InstanceStatus::parse(status).expect("a status"),
            compat: k1().into(),
            instance_revision: revision,
            next_eligible_at: None,
            waiting_event: None,
            principal: "alice".into(),
            start_key: None,
            state: "{}".into(),
            created_at: T0,
            updated_at: T0,
        })?;
        for (n, (kind, activation, instance_revision, detail)) in entries.iter().enumerate() {
            tx.add_history(&HistoryRecord {
                instance_id: id.into(),
                position: n as u64 + 1,
                instance_revision: *instance_revision,
                kind: (*kind).into(),
                at: T0,
                step_id: activation.map(|a| a.trim_end_matches("#0").to_owned()),
                activation_id: activation.map(Into::into),
                detail: detail.to_string(),
            })?;
        }
        for (invocation, outcome) in outcomes {
            tx.put_action_outcome(&ActionOutcome {
                invocation_id: (*invocation).into(),
                attempt: 1,
                outcome: (*outcome).into(),
                detail: "{}".into(),
                at: T0,
            })?;
        }
        Ok(())
    });
}

fn action(invocation: &str) -> Value {
    json!({"type": "action", "action": "charge", "invocationId": invocation, "attempt": 1})
}

/// A full, healthy history: retries (with a retryable step-failed), an event wait, completion.
fn clean_history(id: &str) -> (Vec<Entry<'static>>, String) {
    let invocation = format!("{id}/charge#0");
    let entries = vec![
        ("started", None, 1, json!({})),
        ("step-activated", Some("charge#0"), 1, action(&invocation)),
        (
            "step-failed",
            Some("charge#0"),
            2,
            json!({"retryable": true}),
        ),
        (
            "retry-scheduled",
            Some("charge#0"),
            2,
            json!({"attempt": 2}),
        ),
        (
            "retry-scheduled",
            Some("charge#0"),
            3,
            json!({"attempt": 3}),
        ),
        ("step-succeeded", Some("charge#0"), 4, json!({"attempt": 3})),
        (
            "step-activated",
            Some("wait#0"),
            4,
            json!({"type": "wait-event"}),
        ),
        ("event-matched", Some("wait#0"), 5, json!({"seq": 3})),
        (
            "step-activated",
            Some("done#0"),
            5,
            json!({"type": "complete"}),
        ),
        ("completed", Some("done#0"), 5, json!({})),
    ];
    (entries, invocation)
}

#[test]
fn a_healthy_workflow_history_is_clean() {
    let f = fixture();
    let (entries, invocation) = clean_history("wf-1");
    plant_instance(&f, "wf-1", &entries, &[(&invocation, "succeeded")]);
    let report = f.run();
    assert!(report.is_clean(), "{}", render_text(&report));
    assert_eq!(
        (report.checked.instances, report.checked.history_entries),
        (1, 10)
    );
}

#[test]
fn broken_workflow_histories_are_reported() {
    let f = fixture();
    plant_instance(
        &f,
        "wf-rev",
        &[
            ("started", None, 1, json!({})),
            ("step-activated", Some("t#0"), 2, json!({"type": "timer"})),
            ("timer-fired", Some("t#0"), 1, json!({})),
        ],
        &[],
    );
    plant_instance(
        &f,
        "wf-twice",
        &[
            ("started", None, 1, json!({})),
            (
                "step-activated",
                Some("wait#0"),
                1,
                json!({"type": "wait-event"}),
            ),
            ("event-matched", Some("wait#0"), 2, json!({})),
            ("timeout-fired", Some("wait#0"), 3, json!({})),
        ],
        &[],
    );
    plant_instance(
        &f,
        "wf-after",
        &[
            ("started", None, 1, json!({})),
            ("step-activated", Some("t#0"), 1, json!({"type": "timer"})),
            ("cancelled", Some("t#0"), 2, json!({})),
            ("timer-fired", Some("t#0"), 3, json!({})),
        ],
        &[],
    );
    plant_instance(
        &f,
        "wf-missing",
        &[
            ("started", None, 1, json!({})),
            (
                "step-activated",
                Some("charge#0"),
                1,
                action("wf-missing/charge#0"),
            ),
            ("step-succeeded", Some("charge#0"), 2, json!({})),
        ],
        &[],
    );
    plant_instance(
        &f,
        "wf-conflict",
        &[
            ("started", None, 1, json!({})),
            (
                "step-activated",
                Some("charge#0"),
                1,
                action("wf-conflict/charge#0"),
            ),
            ("step-succeeded", Some("charge#0"), 2, json!({})),
        ],
        &[("wf-conflict/charge#0", "failed")],
    );

    let report = f.run();
    assert_reported(&report, codes::INSTANCE_REVISION_NOT_MONOTONE, &["wf-rev"]);
    assert_reported(
        &report,
        codes::ACTIVATION_RESOLVED_TWICE,
        &["wf-twice", "wait#0"],
    );
    assert_reported(&report, codes::ENTRY_AFTER_TERMINAL, &["wf-after"]);
    assert_reported(
        &report,
        codes::ACTION_OUTCOME_MISSING,
        &["wf-missing", "wf-missing/charge#0"],
    );
    assert_reported(
        &report,
        codes::ACTION_OUTCOME_CONFLICT,
        &["wf-conflict", "wf-conflict/charge#0"],
    );
    assert_eq!(report.violations.len(), 5, "{}", render_text(&report));
}
