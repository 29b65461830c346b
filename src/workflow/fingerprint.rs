//! The semantic fingerprint of a workflow definition, and the canonical JSON it hashes.
//!
//! An in-flight instance records the fingerprint of the definition that created it; an
//! authority whose fingerprint differs must not advance it. So the fingerprint covers
//! *executable meaning only* (never names, descriptions or formatting): inputs, bindings, entry, and for every
//! step its kind, edges, targets (with the catalog's handler version for an action),
//! expressions, retry policy, timer and timeout. It excludes `name`, `description`, step
//! `label`s, step declaration order and JSON key order, so a presentation edit or a reorder
//! does not strand instances on a rolling deploy. The workflow `id` is identity, not meaning,
//! and is left out too.

use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

use super::def::{Seconds, StepKind, WorkflowDef};
use super::expr::Expr;
use super::validate::Catalog;

/// Bumped whenever the projection below changes shape, so old and new fingerprints never
/// collide by accident.
const FORMAT: &str = "leasehold.workflow.semantic.v1";

pub use crate::canonical::canonical_json;

/// Hex SHA-256 of the canonical JSON of a value.
#[must_use]
pub fn sha256_hex(value: &Value) -> String {
    hex::encode(Sha256::digest(canonical_json(value).as_bytes()))
}

/// Hex SHA-256 over the executable meaning of `def` (see the module docs). `catalog`
/// supplies each targeted action's handler semantic version, so upgrading a handler's
/// meaning strands instances just like editing the step.
#[must_use]
pub fn semantic_fingerprint(def: &WorkflowDef, catalog: &Catalog) -> String {
    sha256_hex(&semantic_projection(def, catalog))
}

/// The JSON that [`semantic_fingerprint`] hashes; public so tools can show *why* two
/// fingerprints differ.
#[must_use]
pub fn semantic_projection(def: &WorkflowDef, catalog: &Catalog) -> Value {
    let mut inputs: Vec<Value> = def
        .inputs
        .iter()
        .map(|i| json!({"id": i.id, "valueType": i.value_type, "required": i.required}))
        .collect();
    inputs.sort_by_key(canonical_json);
    let mut bindings: Vec<Value> = def
        .bindings
        .iter()
        .map(|b| json!({"id": b.id, "valueType": b.value_type, "producedBy": b.produced_by}))
        .collect();
    bindings.sort_by_key(canonical_json);
    let mut steps: Vec<(String, Value)> = def
        .steps
        .iter()
        .map(|s| {
            let mut body = step_semantics(&s.kind, catalog);
            body.insert("id".into(), Value::String(s.id.clone()));
            body.insert("type".into(), Value::String(s.kind.type_name().into()));
            (
                canonical_json(&Value::Object(body.clone())),
                Value::Object(body),
            )
        })
        .collect();
    // Sort by id, then by content, so even duplicate ids (an invalid definition) cannot make
    // the result depend on declaration order.
    steps.sort_by(|a, b| (a.1["id"].as_str(), &a.0).cmp(&(b.1["id"].as_str(), &b.0)));
    json!({
        "format": FORMAT,
        "inputs": inputs,
        "bindings": bindings,
        "entry": def.entry,
        "steps": steps.into_iter().map(|(_, v)| v).collect::<Vec<_>>(),
    })
}

fn step_semantics(kind: &StepKind, catalog: &Catalog) -> Map<String, Value> {
    let expr = |e: &Expr| e.to_json();
    let opt_expr = |e: &Option<Expr>| e.as_ref().map_or(Value::Null, Expr::to_json);
    let exprs = |m: &std::collections::BTreeMap<String, Expr>| {
        Value::Object(m.iter().map(|(k, e)| (k.clone(), e.to_json())).collect())
    };
    let secs = |s: &Option<Seconds>| s.map_or(Value::Null, |s| json!(s.seconds));
    let v = match kind {
        StepKind::Action(a) => json!({
            "action": a.action,
            "handlerVersion": catalog.actions.get(&a.action),
            "arguments": exprs(&a.arguments),
            "next": a.next,
            "onError": a.on_error,
            "retry": a.retry.as_ref().map(|r| json!({
                "maxAttempts": r.max_attempts,
                "initialDelaySeconds": r.initial_delay_seconds,
                "backoffMultiplier": r.backoff_multiplier,
                "maxDelaySeconds": r.max_delay_seconds,
            })),
        }),
        StepKind::WaitEvent(w) => json!({
            "event": w.event,
            "where": opt_expr(&w.where_),
            "bind": exprs(&w.bind),
            "next": w.next,
            "timeout": secs(&w.timeout),
            "onTimeout": w.on_timeout,
        }),
        StepKind::Timer(t) => {
            json!({"after": secs(&t.after), "at": opt_expr(&t.at), "next": t.next})
        }
        StepKind::Branch(b) => json!({"when": expr(&b.when), "then": b.then, "else": b.else_}),
        StepKind::Complete(c) => json!({"output": opt_expr(&c.output)}),
        StepKind::Fail(f) => json!({"error": opt_expr(&f.error)}),
    };
    match v {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::workflow::def::{SHIPPED_DEFINITIONS, parse_definition};

    fn base() -> Value {
        serde_json::from_str(SHIPPED_DEFINITIONS[0].1).unwrap()
    }

    fn fp(v: &Value) -> String {
        let def = WorkflowDef::from_value(v.clone()).unwrap();
        semantic_fingerprint(&def, &Catalog::demo())
    }

    fn step_index(v: &Value, id: &str) -> usize {
        v["steps"]
            .as_array()
            .unwrap()
            .iter()
            .position(|s| s["id"] == id)
            .unwrap()
    }

    /// Edits one field of one step of the shipped order workflow.
    fn edited(id: &str, field: &str, value: Value) -> Value {
        let mut v = base();
        let i = step_index(&v, id);
        v["steps"][i][field] = value;
        v
    }

    #[test]
    fn canonical_json_sorts_keys_and_strips_whitespace() {
        let v: Value =
            serde_json::from_str(r#"{ "b": [1, 2.0, -0.0], "a": {"z": "é\n", "y": null} }"#)
                .unwrap();
        assert_eq!(
            canonical_json(&v),
            r#"{"a":{"y":null,"z":"é\n"},"b":[1,2,0]}"#
        );
        assert_eq!(canonical_json(&json!(1.5)), "1.5");
    }

    #[test]
    fn fingerprint_is_stable_hex_sha256() {
        let a = fp(&base());
        assert_eq!(a.len(), 64);
        assert_eq!(a, fp(&base()));
    }

    #[test]
    fn presentation_edits_do_not_change_the_fingerprint() {
        let before = fp(&base());
        let mut v = base();
        v["name"] = json!("Renamed");
        v["description"] = json!("Another description");
        v["steps"][0]["label"] = json!("A new label");
        assert_eq!(fp(&v), before);
    }

    #[test]
    fn step_reordering_and_key_order_do_not_change_the_fingerprint() {
        let before = fp(&base());
        let mut v = base();
        v["steps"].as_array_mut().unwrap().reverse();
        assert_eq!(fp(&v), before);
        // The file's own key order and layout versus sorted keys, pretty-printed.
        let from_text = parse_definition(SHIPPED_DEFINITIONS[0].1).unwrap();
        let pretty = serde_json::to_string_pretty(&v).unwrap();
        assert_ne!(pretty, SHIPPED_DEFINITIONS[0].1);
        let reencoded = parse_definition(&pretty).unwrap();
        let catalog = Catalog::demo();
        assert_eq!(
            semantic_fingerprint(&from_text, &catalog),
            semantic_fingerprint(&reencoded, &catalog)
        );
    }

    #[test]
    fn workflow_id_is_not_semantic() {
        let before = fp(&base());
        let mut v = base();
        v["id"] = json!("order-fulfilment-v2");
        assert_eq!(fp(&v), before);
    }

    #[test]
    fn every_executable_change_changes_the_fingerprint() {
        let before = fp(&base());
        let mut variants: Vec<(&str, Value)> = vec![
            (
                "action target",
                edited("reserve", "action", json!("ship-order")),
            ),
            (
                "argument",
                edited("reserve", "arguments", json!({"orderId": "fixed"})),
            ),
            ("next edge", edited("reserve", "next", json!("release"))),
            (
                "onError edge",
                edited("reserve", "onError", json!("released")),
            ),
            (
                "retry policy",
                edited(
                    "ship",
                    "retry",
                    json!({"maxAttempts": 9, "initialDelaySeconds": 1, "backoffMultiplier": 2, "maxDelaySeconds": 30}),
                ),
            ),
            (
                "event target",
                edited("await-payment", "event", json!("other")),
            ),
            ("where", edited("await-payment", "where", json!(true))),
            (
                "bind",
                edited(
                    "await-payment",
                    "bind",
                    json!({"payment": {"ref": "EVENT", "path": ["x"]}}),
                ),
            ),
            (
                "timeout",
                edited("await-payment", "timeout", json!({"seconds": 1})),
            ),
            (
                "onTimeout edge",
                edited("await-payment", "onTimeout", json!("released")),
            ),
            (
                "branch predicate",
                edited("check-payment", "when", json!(true)),
            ),
            (
                "then edge",
                edited("check-payment", "then", json!("release")),
            ),
            ("else edge", edited("check-payment", "else", json!("ship"))),
            ("complete output", edited("shipped", "output", json!(1))),
            ("fail error", edited("released", "error", json!("x"))),
        ];
        let mut entry = base();
        entry["entry"] = json!("ship");
        variants.push(("entry", entry));
        let mut input = base();
        input["inputs"][0]["required"] = json!(false);
        variants.push(("input", input));
        let mut binding = base();
        binding["bindings"][0]["valueType"] = json!("string");
        variants.push(("binding", binding));
        let mut kind = base();
        let i = step_index(&kind, "shipped");
        kind["steps"][i] = json!({"id": "shipped", "type": "fail"});
        variants.push(("step kind", kind));
        for (what, v) in variants {
            assert_ne!(fp(&v), before, "{what} must change the fingerprint");
        }
    }

    #[test]
    fn timer_duration_and_handler_version_change_the_fingerprint() {
        let reminder: Value = serde_json::from_str(SHIPPED_DEFINITIONS[2].1).unwrap();
        let before = fp(&reminder);
        let mut longer = reminder.clone();
        let i = step_index(&longer, "wait");
        longer["steps"][i]["after"] = json!({"seconds": 7});
        assert_ne!(fp(&longer), before);
        let def = WorkflowDef::from_value(reminder).unwrap();
        let mut catalog = Catalog::demo();
        catalog.actions.insert("send-reminder".into(), "2".into());
        assert_ne!(semantic_fingerprint(&def, &catalog), before);
    }
}
