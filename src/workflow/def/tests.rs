//! Tests of the parent module.
#![allow(clippy::unwrap_used)]

use super::*;
use serde_json::json;

fn def_with_steps(steps: Value) -> Value {
    json!({"id": "wf", "entry": "a", "steps": steps})
}

fn step_errors(steps: Value) -> Vec<Diagnostic> {
    WorkflowDef::from_value(def_with_steps(steps)).unwrap_err()
}

#[test]
fn parses_every_step_kind() {
    let def = WorkflowDef::from_value(def_with_steps(json!([
            {"id": "a", "type": "action", "action": "x", "arguments": {"k": {"ref": "i"}}, "next": "w",
             "onError": "f", "retry": {"maxAttempts": 3, "initialDelaySeconds": 1, "backoffMultiplier": 2, "maxDelaySeconds": 10}},
            {"id": "w", "type": "wait-event", "event": "e", "where": true, "bind": {"b": {"ref": "EVENT"}},
             "next": "t", "timeout": {"seconds": 5}, "onTimeout": "f"},
            {"id": "t", "type": "timer", "after": {"seconds": 1.5}, "next": "br", "label": "pause"},
            {"id": "br", "type": "branch", "when": {"eq": [1, 1]}, "then": "c", "else": "f"},
            {"id": "c", "type": "complete", "output": {"lit": {"ok": true}}},
            {"id": "f", "type": "fail"}
        ])))
        .unwrap();
    let kinds: Vec<_> = def.steps.iter().map(|s| s.kind.type_name()).collect();
    assert_eq!(kinds, STEP_TYPES);
    assert_eq!(def.steps[2].label.as_deref(), Some("pause"));
}

#[test]
fn serializes_back_to_the_same_shape() {
    let text = SHIPPED_DEFINITIONS[0].1;
    let def = parse_definition(text).unwrap();
    let again = serde_json::to_string(&def).unwrap();
    assert_eq!(parse_definition(&again).unwrap(), def);
    let via_serde: WorkflowDef = serde_json::from_str(text).unwrap();
    assert_eq!(via_serde, def);
}

#[test]
fn invalid_json_is_one_invalid_definition_with_location() {
    let diags = parse_definition("{\n  \"id\": ").unwrap_err();
    assert_eq!(diags.len(), 1);
    assert_eq!(diags[0].code, codes::WORKFLOW_INVALID_DEFINITION);
    assert!(diags[0].path.starts_with("line 2"), "{}", diags[0]);
}

#[test]
fn non_object_steps_are_invalid_step() {
    let diags = step_errors(json!([null, "a", [1], 7]));
    assert_eq!(diags.len(), 4);
    for (i, d) in diags.iter().enumerate() {
        assert_eq!(d.code, codes::WORKFLOW_INVALID_STEP);
        assert_eq!(d.path, format!("steps[{i}]"));
    }
}

#[test]
fn unknown_type_missing_and_mistyped_fields_are_invalid_step() {
    let diags = step_errors(json!([
        {"id": "a", "type": "parallel"},
        {"id": "b", "type": "action", "action": "x"},
        {"id": "c", "type": "timer", "after": {"seconds": "soon"}, "next": "d"},
        {"type": "complete"},
        {"id": "e", "type": "fail", "eror": 1},
        {"id": "f"},
        {"id": "g", "type": "branch", "when": true, "then": 1, "else": "x"}
    ]));
    assert_eq!(diags.len(), 7);
    assert!(diags.iter().all(|d| d.code == codes::WORKFLOW_INVALID_STEP));
    assert_eq!(diags[0].step_id.as_deref(), Some("a"));
    assert!(diags[1].message.contains("next"), "{}", diags[1]);
    assert_eq!(diags[3].step_id, None);
}

#[test]
fn bad_header_and_bad_steps_are_reported_together() {
    let diags =
        WorkflowDef::from_value(json!({"id": 3, "entry": "a", "steps": [null], "extra": 1}))
            .unwrap_err();
    assert_eq!(diags[0].code, codes::WORKFLOW_INVALID_DEFINITION);
    assert_eq!(diags[1].code, codes::WORKFLOW_INVALID_STEP);
    let diags = WorkflowDef::from_value(json!([])).unwrap_err();
    assert_eq!(diags[0].code, codes::WORKFLOW_INVALID_DEFINITION);
}

#[test]
fn toml_definitions_parse() {
    let text = r#"
            id = "t"
            entry = "wait"
            [[steps]]
            id = "wait"
            type = "timer"
            after = { seconds = 5 }
            next = "done"
            [[steps]]
            id = "done"
            type = "complete"
        "#;
    let def = parse_definition_toml(text).unwrap();
    assert_eq!(def.steps.len(), 2);
    let diags = parse_definition_toml("id = \"t\"\nentry = ").unwrap_err();
    assert_eq!(diags[0].path, "line 2 column 9", "{}", diags[0]);
}

#[test]
fn value_types_admit_matching_json() {
    assert!(ValueType::Integer.admits(&json!(3)));
    assert!(!ValueType::Integer.admits(&json!(3.5)));
    assert!(ValueType::Any.admits(&Value::Null));
    assert!(!ValueType::String.admits(&Value::Null));
}
