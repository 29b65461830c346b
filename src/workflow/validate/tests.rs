//! Tests of the parent module.
#![allow(clippy::unwrap_used)]

use super::*;
use crate::workflow::def::{SHIPPED_DEFINITIONS, WorkflowDef};
use serde_json::{Value, json};

/// A valid baseline: action → wait-event → branch → complete / fail.
fn base() -> Value {
    json!({
        "id": "wf", "entry": "act",
        "inputs": [{"id": "orderId", "valueType": "string", "required": true}],
        "bindings": [{"id": "res", "producedBy": "act"}, {"id": "pay", "producedBy": "wait"}],
        "steps": [
            {"id": "act", "type": "action", "action": "reserve-stock",
             "arguments": {"orderId": {"ref": "orderId"}}, "next": "wait", "onError": "bad",
             "retry": {"maxAttempts": 3, "initialDelaySeconds": 1, "backoffMultiplier": 2, "maxDelaySeconds": 8}},
            {"id": "wait", "type": "wait-event", "event": "payment-received",
             "where": {"eq": [{"ref": "EVENT", "path": ["orderId"]}, {"ref": "orderId"}]},
             "bind": {"pay": {"ref": "EVENT"}}, "next": "check",
             "timeout": {"seconds": 60}, "onTimeout": "bad"},
            {"id": "check", "type": "branch", "when": {"ref": "pay", "path": ["ok"]}, "then": "done", "else": "bad"},
            {"id": "done", "type": "complete", "output": {"ref": "res"}},
            {"id": "bad", "type": "fail", "error": {"lit": {"code": "NOPE"}}}
        ]
    })
}

/// Applies `edit` to the baseline and returns the diagnostic codes.
fn codes_after(edit: impl FnOnce(&mut Value)) -> Vec<&'static str> {
    let mut v = base();
    edit(&mut v);
    let def = WorkflowDef::from_value(v).unwrap();
    validate(&def, &Catalog::demo())
        .into_iter()
        .map(|d| d.code)
        .collect()
}

#[test]
fn baseline_is_valid() {
    assert_eq!(codes_after(|_| {}), Vec::<&str>::new());
}

#[test]
fn shipped_definitions_validate_with_the_demo_catalog() {
    for (file, text) in SHIPPED_DEFINITIONS {
        let diags = validate_text(text, &Catalog::demo());
        assert!(diags.is_empty(), "{file}: {diags:?}");
    }
}

#[test]
fn broken_definition_yields_expected_diagnostics() {
    let text = r#"{"id": "broken", "entry": "start", "steps": [
            {"id": "start", "type": "action", "action": "launch-rocket", "next": "gone"},
            {"id": "orphan", "type": "complete"},
            null
        ]}"#;
    let diags = validate_text(text, &Catalog::demo());
    assert_eq!(diags.len(), 1, "parse errors come first: {diags:?}");
    assert_eq!(diags[0].code, codes::WORKFLOW_INVALID_STEP);
    let fixed = text.replace(",\n            null", "");
    let got: Vec<_> = validate_text(&fixed, &Catalog::demo())
        .into_iter()
        .map(|d| d.code)
        .collect();
    assert_eq!(
        got,
        [
            codes::WORKFLOW_STEP_NOT_FOUND,
            codes::WORKFLOW_ACTION_NOT_FOUND,
            codes::WORKFLOW_NO_TERMINAL,
            codes::WORKFLOW_UNREACHABLE_STEP,
        ]
    );
}

#[test]
fn workflow_entry_not_found() {
    assert_eq!(
        codes_after(|v| v["entry"] = json!("nowhere")),
        [codes::WORKFLOW_ENTRY_NOT_FOUND]
    );
}

#[test]
fn workflow_step_not_found() {
    assert_eq!(
        codes_after(|v| v["steps"][2]["else"] = json!("ghost")),
        [codes::WORKFLOW_STEP_NOT_FOUND]
    );
    assert_eq!(
        codes_after(|v| v["bindings"][0]["producedBy"] = json!("ghost")),
        [codes::WORKFLOW_STEP_NOT_FOUND]
    );
}

#[test]
fn workflow_duplicate_step_id() {
    let got = codes_after(|v| {
        let dup = json!({"id": "done", "type": "fail"});
        v["steps"].as_array_mut().unwrap().push(dup);
    });
    assert_eq!(got, [codes::WORKFLOW_DUPLICATE_STEP_ID]);
}

#[test]
fn workflow_invalid_step() {
    assert_eq!(
        codes_after(|v| v["steps"][3]["id"] = json!("do/ne")).first(),
        Some(&codes::WORKFLOW_INVALID_STEP)
    );
    let got = codes_after(|v| v["steps"][3]["output"] = json!({"frobnicate": 1}));
    assert_eq!(got, [codes::WORKFLOW_INVALID_STEP]);
    let diags = validate_text(
        r#"{"id": "x", "entry": "a", "steps": ["a"]}"#,
        &Catalog::permissive(),
    );
    assert_eq!(diags[0].code, codes::WORKFLOW_INVALID_STEP);
}

#[test]
fn workflow_cycle_not_allowed() {
    let got = codes_after(|v| v["steps"][2]["else"] = json!("act"));
    assert_eq!(got, [codes::WORKFLOW_CYCLE_NOT_ALLOWED]);
}

#[test]
fn workflow_action_not_found() {
    assert_eq!(
        codes_after(|v| v["steps"][0]["action"] = json!("nope")),
        [codes::WORKFLOW_ACTION_NOT_FOUND]
    );
    let mut v = base();
    v["steps"][0]["action"] = json!("anything");
    let def = WorkflowDef::from_value(v).unwrap();
    assert!(validate(&def, &Catalog::permissive()).is_empty());
}

/// A misspelt action names the nearest handler of the set it was judged against; one
/// nothing resembles names none.
#[test]
fn a_missing_action_names_the_nearest_handler() {
    let set = handlers::HandlerSet::default().with(
        handlers::Source::Config("handlers.toml".into()),
        ["resize-image", "send-email"]
            .map(|name| (name.to_owned(), crate::model::HandlerVersion::demo())),
    );
    let message = |action: &str| {
        let mut v = base();
        v["steps"][0]["action"] = json!(action);
        let def = WorkflowDef::from_value(v).unwrap();
        let diags = validate(&def, &set.catalog());
        assert_eq!(diags.len(), 1, "{diags:?}");
        assert_eq!(diags[0].code, codes::WORKFLOW_ACTION_NOT_FOUND);
        diags[0].message.clone()
    };
    assert_eq!(
        message("resize-images"),
        "no handler `resize-images` in the handler set (did you mean `resize-image`?)"
    );
    assert_eq!(
        message("charge-card"),
        "no handler `charge-card` in the handler set"
    );
}

#[test]
fn workflow_event_not_found() {
    assert_eq!(
        codes_after(|v| v["steps"][1]["event"] = json!("nope")),
        [codes::WORKFLOW_EVENT_NOT_FOUND]
    );
}

#[test]
fn workflow_binding_not_found() {
    assert_eq!(
        codes_after(|v| v["steps"][2]["when"] = json!({"ref": "typo"})),
        [codes::WORKFLOW_BINDING_NOT_FOUND]
    );
    let undeclared_bind = codes_after(|v| v["steps"][1]["bind"]["other"] = json!({"ref": "EVENT"}));
    assert_eq!(undeclared_bind, [codes::WORKFLOW_BINDING_NOT_FOUND]);
    let producer_mismatch = codes_after(|v| v["bindings"][1]["producedBy"] = json!("check"));
    assert!(
        producer_mismatch.contains(&codes::WORKFLOW_BINDING_NOT_FOUND),
        "{producer_mismatch:?}"
    );
    let self_ref = codes_after(|v| v["steps"][0]["arguments"]["x"] = json!({"ref": "res"}));
    assert_eq!(self_ref, [codes::WORKFLOW_BINDING_NOT_FOUND]);
}

#[test]
fn workflow_duplicate_binding() {
    let declared_twice = codes_after(|v| {
        v["bindings"]
            .as_array_mut()
            .unwrap()
            .push(json!({"id": "res", "producedBy": "act"}));
    });
    assert_eq!(declared_twice, [codes::WORKFLOW_DUPLICATE_BINDING]);
    let shadows_input = codes_after(|v| v["bindings"][0]["id"] = json!("orderId"));
    assert!(
        shadows_input.contains(&codes::WORKFLOW_DUPLICATE_BINDING),
        "{shadows_input:?}"
    );
    let assigned_twice = codes_after(|v| v["steps"][1]["bind"]["res"] = json!({"ref": "EVENT"}));
    assert_eq!(assigned_twice, [codes::WORKFLOW_DUPLICATE_BINDING]);
}

#[test]
fn workflow_invalid_retry_policy() {
    for (field, value) in [
        ("maxAttempts", json!(0)),
        ("initialDelaySeconds", json!(-1)),
        ("backoffMultiplier", json!(0.5)),
        ("maxDelaySeconds", json!(0.5)),
    ] {
        let got = codes_after(|v| v["steps"][0]["retry"][field] = value);
        assert_eq!(got, [codes::WORKFLOW_INVALID_RETRY_POLICY], "{field}");
    }
}

#[test]
fn workflow_invalid_timer() {
    let timer = |t: Value| {
        codes_after(move |v| {
            v["steps"][2] = t;
        })
    };
    let next = json!("done");
    for t in [
        json!({"id": "check", "type": "timer", "next": next}),
        json!({"id": "check", "type": "timer", "after": {"seconds": 1}, "at": 5, "next": next}),
        json!({"id": "check", "type": "timer", "after": {"seconds": 0}, "next": next}),
    ] {
        let got = timer(t.clone());
        assert!(got.contains(&codes::WORKFLOW_INVALID_TIMER), "{t}: {got:?}");
    }
    assert_eq!(
        codes_after(|v| v["steps"][1]["timeout"]["seconds"] = json!(-5)),
        [codes::WORKFLOW_INVALID_TIMER]
    );
    let orphan_on_timeout = codes_after(|v| {
        v["steps"][1].as_object_mut().unwrap().remove("timeout");
    });
    assert_eq!(orphan_on_timeout, [codes::WORKFLOW_INVALID_TIMER]);
}

#[test]
fn workflow_invalid_timer_rejects_non_finite_seconds() {
    // JSON cannot spell NaN or infinity, but a definition built in code (or a future
    // format) can; validation must not accept it.
    let mut def = WorkflowDef::from_value(base()).unwrap();
    if let StepKind::WaitEvent(w) = &mut def.steps[1].kind {
        w.timeout = Some(crate::workflow::def::Seconds {
            seconds: f64::INFINITY,
        });
    }
    let got: Vec<_> = validate(&def, &Catalog::demo())
        .into_iter()
        .map(|d| d.code)
        .collect();
    assert_eq!(got, [codes::WORKFLOW_INVALID_TIMER]);
    if let StepKind::Action(a) = &mut def.steps[0].kind {
        a.retry.as_mut().unwrap().max_delay_seconds = f64::NAN;
    }
    let got: Vec<_> = validate(&def, &Catalog::demo())
        .into_iter()
        .map(|d| d.code)
        .collect();
    assert!(
        got.contains(&codes::WORKFLOW_INVALID_RETRY_POLICY),
        "{got:?}"
    );
}

#[test]
fn workflow_unreachable_step() {
    let got = codes_after(|v| {
        v["steps"]
            .as_array_mut()
            .unwrap()
            .push(json!({"id": "island", "type": "complete"}));
    });
    assert_eq!(got, [codes::WORKFLOW_UNREACHABLE_STEP]);
}

#[test]
fn workflow_no_terminal() {
    let def = WorkflowDef::from_value(json!({"id": "loop", "entry": "a", "steps": [
        {"id": "a", "type": "timer", "after": {"seconds": 1}, "next": "b"},
        {"id": "b", "type": "timer", "after": {"seconds": 1}, "next": "a"}
    ]}))
    .unwrap();
    let got: Vec<_> = validate(&def, &Catalog::demo())
        .into_iter()
        .map(|d| d.code)
        .collect();
    assert_eq!(
        got,
        [
            codes::WORKFLOW_CYCLE_NOT_ALLOWED,
            codes::WORKFLOW_NO_TERMINAL,
            codes::WORKFLOW_NO_TERMINAL
        ]
    );
    let dangling = codes_after(|v| {
        v["steps"][2] =
            json!({"id": "check", "type": "timer", "after": {"seconds": 1}, "next": "ghost"});
    });
    assert_eq!(
        dangling,
        [
            codes::WORKFLOW_STEP_NOT_FOUND,
            codes::WORKFLOW_NO_TERMINAL,
            codes::WORKFLOW_UNREACHABLE_STEP,
        ],
        "`done` loses its only predecessor"
    );
}

#[test]
fn workflow_expression_scope() {
    let event_in_branch =
        codes_after(|v| v["steps"][2]["when"] = json!({"ref": "EVENT", "path": ["ok"]}));
    assert_eq!(event_in_branch, [codes::WORKFLOW_EXPRESSION_SCOPE]);
    let state_ref = codes_after(|v| v["steps"][2]["when"] = json!({"ref": "STATE:cart"}));
    assert_eq!(state_ref, [codes::WORKFLOW_EXPRESSION_SCOPE]);
    let query = codes_after(|v| v["steps"][3]["output"] = json!({"query": "orders"}));
    assert_eq!(query, [codes::WORKFLOW_EXPRESSION_SCOPE]);
}

#[test]
fn workflow_nondeterministic() {
    for e in [
        json!({"now": {}}),
        json!({"call": "uuid"}),
        json!({"random": [1, 2]}),
        json!({"ref": "now"}),
    ] {
        let nested = json!({"and": [true, {"eq": [e.clone(), 1]}]});
        let got = codes_after(|v| v["steps"][2]["when"] = nested);
        assert_eq!(got, [codes::WORKFLOW_NONDETERMINISTIC], "{e}");
    }
    let mut v = base();
    v["steps"][0]["arguments"]["at"] = json!({"now": {}});
    let def = WorkflowDef::from_value(v).unwrap();
    let d = &validate(&def, &Catalog::demo())[0];
    assert_eq!(d.path, "steps[0].arguments.at");
    assert_eq!(d.step_id.as_deref(), Some("act"));
}

#[test]
fn diagnostic_display_is_code_at_path_message() {
    let d = Diagnostic::new(codes::WORKFLOW_ENTRY_NOT_FOUND, "entry", "missing");
    assert_eq!(d.to_string(), "WORKFLOW_ENTRY_NOT_FOUND at entry: missing");
}

#[test]
fn every_code_is_distinct() {
    let set: BTreeSet<_> = codes::ALL.into_iter().collect();
    assert_eq!(set.len(), 15);
}
