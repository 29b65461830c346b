//! Tests of the parent module.
#![allow(clippy::unwrap_used)]

use super::*;
use serde_json::json;

fn parse(v: Value) -> Expr {
    Expr::from_json(&v)
}

fn run(v: Value, event: Option<&Value>) -> Result<Value, EvalError> {
    let inputs = json!({"orderId": "o-1", "amount": 10, "items": [{"sku": "a"}]});
    let bindings = json!({"payment": {"ok": true, "amount": 10.0}});
    let scope = Scope {
        inputs: inputs.as_object().unwrap(),
        bindings: bindings.as_object().unwrap(),
        principal: "alice",
        event,
    };
    eval(&parse(v), &scope)
}

#[test]
fn bare_scalars_and_lit_are_literals() {
    assert_eq!(parse(json!(3)), Expr::Lit(json!(3)));
    assert_eq!(parse(json!({"lit": {"a": 1}})), Expr::Lit(json!({"a": 1})));
    assert_eq!(run(json!("x"), None), Ok(json!("x")));
}

#[test]
fn refs_resolve_inputs_bindings_principal_and_event() {
    assert_eq!(run(json!({"ref": "orderId"}), None), Ok(json!("o-1")));
    assert_eq!(
        run(json!({"ref": "payment", "path": ["ok"]}), None),
        Ok(json!(true))
    );
    assert_eq!(run(json!({"ref": "PRINCIPAL"}), None), Ok(json!("alice")));
    let ev = json!({"orderId": "o-1"});
    assert_eq!(
        run(json!({"ref": "EVENT", "path": ["orderId"]}), Some(&ev)),
        Ok(json!("o-1"))
    );
    assert_eq!(
        run(json!({"ref": "EVENT"}), None),
        Err(EvalError::EventOutOfScope)
    );
    assert!(matches!(
        run(json!({"ref": "nope"}), None),
        Err(EvalError::UnknownRef { .. })
    ));
}

#[test]
fn path_through_missing_or_scalar_is_null() {
    assert_eq!(
        run(json!({"ref": "items", "path": [0, "sku"]}), None),
        Ok(json!("a"))
    );
    assert_eq!(
        run(json!({"ref": "items", "path": [5]}), None),
        Ok(Value::Null)
    );
    assert_eq!(
        run(json!({"ref": "orderId", "path": ["x", 1]}), None),
        Ok(Value::Null)
    );
}

#[test]
fn equality_is_numeric_and_never_errors() {
    assert_eq!(
        run(json!({"eq": [{"ref": "amount"}, 10.0]}), None),
        Ok(json!(true))
    );
    assert_eq!(run(json!({"eq": ["10", 10]}), None), Ok(json!(false)));
    assert_eq!(run(json!({"ne": [null, false]}), None), Ok(json!(true)));
}

#[test]
fn ordering_mismatched_types_is_an_error() {
    assert_eq!(
        run(json!({"ge": [{"ref": "amount"}, 9.5]}), None),
        Ok(json!(true))
    );
    assert_eq!(run(json!({"lt": ["a", "b"]}), None), Ok(json!(true)));
    assert!(matches!(
        run(json!({"lt": ["a", 1]}), None),
        Err(EvalError::TypeMismatch { .. })
    ));
    assert!(matches!(
        run(json!({"gt": [null, 1]}), None),
        Err(EvalError::TypeMismatch { .. })
    ));
}

#[test]
fn boolean_operators_need_booleans_and_short_circuit() {
    assert_eq!(
        run(json!({"and": [true, {"not": false}]}), None),
        Ok(json!(true))
    );
    assert_eq!(
        run(json!({"or": [true, {"lt": ["a", 1]}]}), None),
        Ok(json!(true))
    );
    assert!(matches!(
        run(json!({"not": 1}), None),
        Err(EvalError::TypeMismatch { .. })
    ));
}

#[test]
fn object_builds_from_expressions() {
    let v = json!({"object": {"id": {"ref": "orderId"}, "who": {"ref": "PRINCIPAL"}}});
    assert_eq!(run(v, None), Ok(json!({"id": "o-1", "who": "alice"})));
    assert!(matches!(
        parse(json!({"object": 1})),
        Expr::Malformed { .. }
    ));
}

#[test]
fn nondeterministic_forms_parse_and_refuse_to_evaluate() {
    for v in [
        json!({"now": {}}),
        json!({"call": "uuid"}),
        json!({"random": [1, 6]}),
    ] {
        assert!(
            matches!(parse(v.clone()), Expr::Nondeterministic { .. }),
            "{v}"
        );
        assert!(matches!(run(v, None), Err(EvalError::NotEvaluable { .. })));
    }
}

#[test]
fn out_of_scope_and_malformed_forms_parse() {
    assert!(matches!(
        parse(json!({"state": "cart"})),
        Expr::OutOfScope { .. }
    ));
    assert!(matches!(
        parse(json!({"query": "orders"})),
        Expr::OutOfScope { .. }
    ));
    for v in [
        json!([1]),
        json!({"eq": [1]}),
        json!({"bogus": 1}),
        json!({"ref": 7}),
        json!({"ref": "a", "path": [-1]}),
        json!({"a": 1, "b": 2}),
    ] {
        assert!(matches!(parse(v.clone()), Expr::Malformed { .. }), "{v}");
    }
}

#[test]
fn to_json_round_trips_and_normalizes() {
    let v =
        json!({"and": [{"eq": [{"ref": "EVENT", "path": ["a", 0]}, {"lit": "x"}]}, {"now": 1}]});
    let e = parse(v);
    let back = e.to_json();
    assert_eq!(back["and"][0]["eq"][1], json!("x"));
    assert_eq!(parse(back), e);
}

#[test]
fn negative_zero_equals_zero_as_in_canonical_json() {
    assert!(json_eq(&json!(-0.0), &json!(0)));
    assert!(json_eq(&json!({"a": [-0.0]}), &json!({"a": [0.0]})));
    assert_eq!(run(json!({"eq": [-0.0, 0]}), None), Ok(json!(true)));
    assert_eq!(run(json!({"lt": [-0.0, 0]}), None), Ok(json!(false)));
    assert_eq!(run(json!({"lt": [-0.5, 0]}), None), Ok(json!(true)));
}
