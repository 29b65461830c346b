//! The machine's transitions, case by case.

#![allow(clippy::unwrap_used)]

use super::*;
use crate::workflow::def::{SHIPPED_DEFINITIONS, parse_definition};
use HistoryKind as H;

const T0: i64 = 1_700_000_000_000;

fn shipped(name: &str) -> WorkflowDef {
    let (_, text) = SHIPPED_DEFINITIONS
        .iter()
        .find(|(f, _)| f.starts_with(name))
        .unwrap();
    parse_definition(text).unwrap()
}

fn def(v: Value) -> WorkflowDef {
    WorkflowDef::from_value(v).unwrap()
}

fn map(v: Value) -> Map<String, Value> {
    v.as_object().unwrap().clone()
}

fn kinds(h: &[HistoryEntry]) -> Vec<HistoryKind> {
    h.iter().map(|e| e.kind).collect()
}

fn order() -> (WorkflowDef, InstanceState) {
    let d = shipped("order");
    let (s, _) = start(
        &d,
        "i-1",
        map(json!({"orderId": "o-1", "amount": 10})),
        "alice",
        T0,
        7,
    )
    .unwrap();
    (d, s)
}

fn ok(output: Value) -> Trigger {
    Trigger::ActionSucceeded { output }
}

fn failed(retryable: bool) -> Trigger {
    Trigger::ActionFailed {
        retryable,
        code: "E".into(),
        message: "boom".into(),
    }
}

fn payment(order: &str, ok: bool, seq: i64) -> Trigger {
    Trigger::EventMatched {
        event_type: "payment-received".into(),
        seq,
        payload: json!({"orderId": order, "ok": ok, "amount": 10}),
    }
}

/// Order instance waiting for payment (reservation succeeded at T0 + 1).
fn awaiting_payment() -> (WorkflowDef, InstanceState) {
    let (d, s) = order();
    let (s, _) = apply(&d, &s, ok(json!({"reservationId": "r-1"})), T0 + 1, 9).unwrap();
    (d, s)
}

#[test]
fn start_runs_to_the_first_action_with_stable_ids() {
    let d = shipped("order");
    let (s, h) = start(
        &d,
        "i-1",
        map(json!({"orderId": "o-1", "amount": 10})),
        "alice",
        T0,
        7,
    )
    .unwrap();
    assert_eq!(kinds(&h), [H::Started, H::StepActivated]);
    assert_eq!(s.status, InstanceStatus::Running);
    assert_eq!(s.activation_id.as_deref(), Some("reserve#0"));
    assert_eq!(
        s.waiting,
        Some(Waiting::Action {
            invocation_id: "i-1/reserve#0".into()
        })
    );
    assert_eq!((s.attempt, s.next_eligible_at), (1, Some(T0)));
    assert_eq!(s.waiting_reason().as_deref(), Some("action"));
    let req = action_request(&d, &s).unwrap();
    assert_eq!(req.action, "reserve-stock");
    assert_eq!(req.arguments["orderId"], json!("o-1"));
    assert_eq!(req.invocation_id, "i-1/reserve#0");
}

#[test]
fn start_checks_inputs() {
    let d = shipped("order");
    let err = |inputs: Value| start(&d, "i", map(inputs), "p", T0, 0).unwrap_err().code();
    assert_eq!(err(json!({"orderId": "o"})), "WORKFLOW_MISSING_INPUT");
    assert_eq!(
        err(json!({"orderId": "o", "amount": null})),
        "WORKFLOW_MISSING_INPUT"
    );
    assert_eq!(
        err(json!({"orderId": 5, "amount": 1})),
        "WORKFLOW_INVALID_INPUT"
    );
    assert_eq!(
        err(json!({"orderId": "o", "amount": 1, "extra": 1})),
        "WORKFLOW_INVALID_INPUT"
    );
}

#[test]
fn action_success_binds_output_and_registers_the_event_wait() {
    let (d, s) = awaiting_payment();
    assert_eq!(s.bindings["reservation"], json!({"reservationId": "r-1"}));
    assert_eq!(s.status, InstanceStatus::Waiting);
    let timeout_at = T0 + 1 + 900_000;
    let want = Waiting::Event {
        event: "payment-received".into(),
        since_event_seq: 9,
        timeout_at: Some(timeout_at),
    };
    assert_eq!(s.waiting, Some(want));
    assert_eq!(s.next_eligible_at, Some(timeout_at));
    assert_eq!(
        s.waiting_reason().as_deref(),
        Some("event:payment-received")
    );
    assert!(event_matches(
        &d,
        &s,
        "payment-received",
        &json!({"orderId": "o-1"})
    ));
}

#[test]
fn event_match_binds_and_branch_chooses_then() {
    let (d, s) = awaiting_payment();
    let (s, h) = apply(&d, &s, payment("o-1", true, 10), T0 + 2, 10).unwrap();
    assert_eq!(
        kinds(&h),
        [
            H::EventMatched,
            H::StepActivated,
            H::BranchChosen,
            H::StepActivated
        ]
    );
    assert_eq!(h[2].detail["edge"], json!("then"));
    assert_eq!(s.bindings["payment"]["ok"], json!(true));
    assert_eq!(s.current_step_id.as_deref(), Some("ship"));
    let (s, h) = apply(&d, &s, ok(json!({"trackingId": "t-9"})), T0 + 3, 10).unwrap();
    assert_eq!(
        kinds(&h),
        [H::StepSucceeded, H::StepActivated, H::Completed]
    );
    assert_eq!(s.status, InstanceStatus::Completed);
    assert_eq!(
        s.output.as_ref().unwrap()["shipment"]["trackingId"],
        json!("t-9")
    );
    assert_eq!(s.waiting_reason(), None);
}

#[test]
fn branch_else_when_payment_is_not_ok() {
    let (d, s) = awaiting_payment();
    let (s, h) = apply(&d, &s, payment("o-1", false, 10), T0 + 2, 10).unwrap();
    assert_eq!(h[2].detail["edge"], json!("else"));
    assert_eq!(s.current_step_id.as_deref(), Some("release"));
}

#[test]
fn where_false_old_seq_and_other_types_are_no_match() {
    let (d, s) = awaiting_payment();
    assert_eq!(
        apply(&d, &s, payment("o-2", true, 10), T0 + 2, 10).unwrap_err(),
        MachineError::NoMatch
    );
    assert_eq!(
        apply(&d, &s, payment("o-1", true, 9), T0 + 2, 10).unwrap_err(),
        MachineError::NoMatch
    );
    let other = Trigger::EventMatched {
        event_type: "other".into(),
        seq: 11,
        payload: json!({}),
    };
    assert_eq!(
        apply(&d, &s, other, T0 + 2, 11).unwrap_err(),
        MachineError::NoMatch
    );
    assert!(!event_matches(
        &d,
        &s,
        "payment-received",
        &json!({"orderId": "o-2"})
    ));
}

#[test]
fn timeout_first_wins_and_the_late_event_is_refused() {
    let (d, s) = awaiting_payment();
    let due = T0 + 1 + 900_000;
    assert_eq!(
        apply(&d, &s, Trigger::TimeoutFired, due - 1, 9).unwrap_err(),
        MachineError::NotYetEligible { at: due }
    );
    let (s, h) = apply(&d, &s, Trigger::TimeoutFired, due, 9).unwrap();
    assert_eq!(kinds(&h), [H::TimeoutFired, H::StepActivated]);
    assert_eq!(s.current_step_id.as_deref(), Some("release"));
    let err = apply(&d, &s, payment("o-1", true, 10), due + 1, 10).unwrap_err();
    assert_eq!(err.code(), "WORKFLOW_NOT_WAITING_FOR");
}

#[test]
fn event_first_wins_and_the_late_timeout_is_refused() {
    let (d, s) = awaiting_payment();
    let (s, _) = apply(&d, &s, payment("o-1", true, 10), T0 + 2, 10).unwrap();
    let late = apply(&d, &s, Trigger::TimeoutFired, T0 + 10_000_000, 10).unwrap_err();
    assert_eq!(late.code(), "WORKFLOW_NOT_WAITING_FOR");
}

#[test]
fn timeout_without_on_timeout_fails_the_instance() {
    let d = def(json!({"id": "w", "entry": "wait", "steps": [
        {"id": "wait", "type": "wait-event", "event": "e", "next": "done", "timeout": {"seconds": 1}},
        {"id": "done", "type": "complete"}
    ]}));
    let (s, _) = start(&d, "i", Map::new(), "p", T0, 0).unwrap();
    let (s, h) = apply(&d, &s, Trigger::TimeoutFired, T0 + 1000, 0).unwrap();
    assert_eq!(kinds(&h), [H::TimeoutFired, H::Failed]);
    assert_eq!(s.failure.unwrap().code, TIMED_OUT);
}

#[test]
fn retries_back_off_until_exhausted_then_follow_on_error() {
    let d = shipped("integration");
    let (mut s, _) = start(
        &d,
        "i",
        map(json!({"partner": "acme", "request": {}})),
        "p",
        T0,
        0,
    )
    .unwrap();
    let mut now = T0;
    for (attempt, delay) in [(2, 2_000), (3, 4_000), (4, 8_000), (5, 16_000)] {
        let (next, h) = apply(&d, &s, failed(true), now, 0).unwrap();
        assert_eq!(kinds(&h), [H::RetryScheduled]);
        assert_eq!(
            (next.attempt, next.next_eligible_at),
            (attempt, Some(now + delay))
        );
        assert_eq!(
            next.waiting, s.waiting,
            "the invocation id is stable across retries"
        );
        assert_eq!(next.waiting_reason().as_deref(), Some("retry-backoff"));
        let early = apply(&d, &next, failed(true), now + delay - 1, 0).unwrap_err();
        assert_eq!(early, MachineError::NotYetEligible { at: now + delay });
        now += delay;
        s = next;
    }
    let (s, h) = apply(&d, &s, failed(true), now, 0).unwrap();
    assert_eq!(kinds(&h), [H::StepFailed, H::StepActivated, H::Failed]);
    assert_eq!(s.current_step_id.as_deref(), Some("gave-up"));
    assert_eq!(s.failure.unwrap().code, "PARTNER_UNAVAILABLE");
}

#[test]
fn retry_delay_is_capped() {
    let policy = RetryPolicy {
        max_attempts: 10,
        initial_delay_seconds: 2.0,
        backoff_multiplier: 2.0,
        max_delay_seconds: 30.0,
    };
    assert_eq!(retry_delay_ms(&policy, 1), 2_000);
    assert_eq!(retry_delay_ms(&policy, 5), 30_000);
    assert_eq!(retry_delay_ms(&policy, u32::MAX), 30_000);
}

#[test]
fn non_retryable_failure_follows_on_error_at_once() {
    let (d, s) = order();
    let (s, h) = apply(&d, &s, failed(false), T0, 0).unwrap();
    assert_eq!(kinds(&h), [H::StepFailed, H::StepActivated, H::Failed]);
    assert_eq!(s.current_step_id.as_deref(), Some("out-of-stock"));
    assert_eq!(s.status, InstanceStatus::Failed);
}

#[test]
fn failure_without_on_error_fails_the_instance() {
    let d = shipped("reminder");
    let (s, _) = start(
        &d,
        "i",
        map(json!({"recipient": "bob", "message": "hi"})),
        "p",
        T0,
        0,
    )
    .unwrap();
    let (s, _) = apply(&d, &s, Trigger::TimerFired, T0 + 60_000, 0).unwrap();
    let (s, h) = apply(&d, &s, failed(false), T0 + 60_001, 0).unwrap();
    assert_eq!(kinds(&h), [H::StepFailed, H::Failed]);
    assert_eq!(
        s.failure,
        Some(Failure {
            code: "E".into(),
            message: "boom".into(),
            retryable: false
        })
    );
}

#[test]
fn timer_fires_once_at_its_stored_instant() {
    let d = shipped("reminder");
    let (s, h) = start(
        &d,
        "i",
        map(json!({"recipient": "bob", "message": "hi"})),
        "p",
        T0,
        0,
    )
    .unwrap();
    assert_eq!(h[1].detail["fireAt"], json!(T0 + 60_000));
    assert_eq!(
        s.waiting,
        Some(Waiting::Timer {
            fire_at: T0 + 60_000
        })
    );
    assert_eq!(s.waiting_reason().as_deref(), Some("timer"));
    let early = apply(&d, &s, Trigger::TimerFired, T0 + 59_999, 0).unwrap_err();
    assert_eq!(early.code(), "WORKFLOW_NOT_YET_ELIGIBLE");
    let (s, h) = apply(&d, &s, Trigger::TimerFired, T0 + 90_000, 0).unwrap();
    assert_eq!(kinds(&h), [H::TimerFired, H::StepActivated]);
    assert_eq!(
        action_request(&d, &s).unwrap().arguments["principal"],
        json!("p")
    );
    let (s, _) = apply(&d, &s, ok(json!({"sent": true})), T0 + 90_001, 0).unwrap();
    assert_eq!(s.status, InstanceStatus::Completed);
    let again = apply(&d, &s, Trigger::TimerFired, T0 + 90_002, 0).unwrap_err();
    assert_eq!(
        again,
        MachineError::Terminal {
            status: "completed"
        }
    );
}

#[test]
fn timer_at_accepts_epoch_millis_and_rfc3339() {
    let d = def(
        json!({"id": "t", "entry": "w", "inputs": [{"id": "when"}], "steps": [
            {"id": "w", "type": "timer", "at": {"ref": "when"}, "next": "done"},
            {"id": "done", "type": "complete"}
        ]}),
    );
    let fire = |when: Value| {
        start(&d, "i", map(json!({"when": when})), "p", T0, 0)
            .unwrap()
            .0
            .waiting
    };
    assert_eq!(
        fire(json!(T0 + 5)),
        Some(Waiting::Timer { fire_at: T0 + 5 })
    );
    assert_eq!(
        fire(json!("2023-11-14T22:13:20Z")),
        Some(Waiting::Timer { fire_at: T0 })
    );
    let (s, _) = start(&d, "i", map(json!({"when": "soon"})), "p", T0, 0).unwrap();
    assert_eq!(s.failure.unwrap().code, EVALUATION_FAILED);
}

#[test]
fn branch_on_a_non_boolean_fails_the_instance() {
    let d = def(json!({"id": "b", "entry": "br", "steps": [
        {"id": "br", "type": "branch", "when": "yes", "then": "done", "else": "done"},
        {"id": "done", "type": "complete"}
    ]}));
    let (s, h) = start(&d, "i", Map::new(), "p", T0, 0).unwrap();
    assert_eq!(kinds(&h), [H::Started, H::StepActivated, H::Failed]);
    assert_eq!(s.failure.unwrap().code, EVALUATION_FAILED);
}

#[test]
fn complete_and_fail_steps_evaluate_output_and_error() {
    let d = def(
        json!({"id": "c", "entry": "br", "inputs": [{"id": "go", "valueType": "boolean", "required": true}], "steps": [
            {"id": "br", "type": "branch", "when": {"ref": "go"}, "then": "done", "else": "stop"},
            {"id": "done", "type": "complete", "output": {"object": {"who": {"ref": "PRINCIPAL"}}}},
            {"id": "stop", "type": "fail", "error": {"lit": {"code": "NO_GO", "message": "stopped"}}}
        ]}),
    );
    let (s, h) = start(&d, "i", map(json!({"go": true})), "alice", T0, 0).unwrap();
    assert_eq!(
        kinds(&h),
        [
            H::Started,
            H::StepActivated,
            H::BranchChosen,
            H::StepActivated,
            H::Completed
        ]
    );
    assert_eq!(s.output, Some(json!({"who": "alice"})));
    let (s, _) = start(&d, "i", map(json!({"go": false})), "alice", T0, 0).unwrap();
    assert_eq!(
        s.failure,
        Some(Failure {
            code: "NO_GO".into(),
            message: "stopped".into(),
            retryable: false
        })
    );
}

#[test]
fn cancel_while_waiting_is_terminal_and_idempotent() {
    let (d, s) = awaiting_payment();
    let cancel = || Trigger::Cancel {
        by: "operator".into(),
        reason: "test".into(),
    };
    let (s, h) = apply(&d, &s, cancel(), T0 + 5, 9).unwrap();
    assert_eq!(kinds(&h), [H::Cancelled]);
    assert_eq!(h[0].step_id.as_deref(), Some("await-payment"));
    assert_eq!(
        (s.status, s.waiting.clone(), s.next_eligible_at),
        (InstanceStatus::Cancelled, None, None)
    );
    assert_eq!(
        apply(&d, &s, cancel(), T0 + 6, 9).unwrap_err(),
        MachineError::AlreadyCancelled
    );
    let late = apply(&d, &s, payment("o-1", true, 10), T0 + 7, 10).unwrap_err();
    assert_eq!(
        late,
        MachineError::Terminal {
            status: "cancelled"
        }
    );
    assert!(!event_matches(
        &d,
        &s,
        "payment-received",
        &json!({"orderId": "o-1"})
    ));
}

#[test]
fn late_event_to_a_failed_instance_is_refused() {
    let (d, s) = order();
    let (s, _) = apply(&d, &s, failed(false), T0, 0).unwrap();
    let err = apply(&d, &s, payment("o-1", true, 10), T0 + 1, 10).unwrap_err();
    assert_eq!(err.code(), "already-terminal");
    let cancel = Trigger::Cancel {
        by: "op".into(),
        reason: "r".into(),
    };
    assert_eq!(
        apply(&d, &s, cancel, T0 + 1, 10).unwrap_err(),
        MachineError::Terminal { status: "failed" }
    );
}

#[test]
fn triggers_that_do_not_fit_the_wait_are_refused() {
    let (d, s) = order();
    for t in [
        Trigger::TimerFired,
        Trigger::TimeoutFired,
        payment("o-1", true, 10),
    ] {
        let err = apply(&d, &s, t, T0 + 1, 10).unwrap_err();
        assert!(matches!(err, MachineError::NotWaitingFor { .. }), "{err}");
    }
    let (d, s) = awaiting_payment();
    assert_eq!(
        apply(&d, &s, ok(json!(1)), T0 + 2, 9).unwrap_err().code(),
        "WORKFLOW_NOT_WAITING_FOR"
    );
    assert_eq!(
        action_request(&d, &s).unwrap_err().code(),
        "WORKFLOW_NOT_WAITING_FOR"
    );
}

#[test]
fn argument_evaluation_failure_fails_the_step() {
    let d = def(json!({"id": "a", "entry": "act", "steps": [
        {"id": "act", "type": "action", "action": "x", "arguments": {"v": {"lt": ["a", 1]}}, "next": "done"},
        {"id": "done", "type": "complete"}
    ]}));
    let (s, h) = start(&d, "i", Map::new(), "p", T0, 0).unwrap();
    assert_eq!(
        kinds(&h),
        [H::Started, H::StepActivated, H::StepFailed, H::Failed]
    );
    assert_eq!(s.failure.unwrap().code, EVALUATION_FAILED);
}

#[test]
fn a_cyclic_definition_is_refused_not_looped() {
    let d = def(json!({"id": "c", "entry": "a", "steps": [
        {"id": "a", "type": "branch", "when": true, "then": "b", "else": "b"},
        {"id": "b", "type": "branch", "when": true, "then": "a", "else": "a"}
    ]}));
    let err = start(&d, "i", Map::new(), "p", T0, 0).unwrap_err();
    assert_eq!(err.code(), "WORKFLOW_INVALID_DEFINITION");
}

#[test]
fn state_and_history_serialize_with_seed_names() {
    let (_, s) = awaiting_payment();
    let v = serde_json::to_value(&s).unwrap();
    assert_eq!(v["status"], json!("waiting"));
    assert_eq!(v["waiting"]["kind"], json!("event"));
    assert_eq!(v["waiting"]["sinceEventSeq"], json!(9));
    assert_eq!(v["currentStepId"], json!("await-payment"));
    assert_eq!(serde_json::from_value::<InstanceState>(v).unwrap(), s);
    for k in [
        H::StepActivated,
        H::RetryScheduled,
        H::TimeoutFired,
        H::BranchChosen,
    ] {
        assert_eq!(serde_json::to_value(k).unwrap(), json!(k.as_str()));
    }
}
