//! The closed workflow expression language.
//!
//! Workflow decisions must replay identically on any authority, so expressions are plain
//! JSON data over a closed scope, never source text or callbacks. The forms are:
//!
//! | JSON | meaning |
//! | --- | --- |
//! | `"text"`, `42`, `true`, `null` | a literal scalar |
//! | `{"lit": <any JSON>}` | a literal (the only way to write a literal object or array) |
//! | `{"ref": "orderId"}` | an input id, a binding id, `"PRINCIPAL"`, or `"EVENT"` (only inside a wait-event `where` / `bind`) |
//! | `{"ref": "payment", "path": ["lines", 0, "sku"]}` | field access: object keys (strings) and array indexes (integers) |
//! | `{"eq": [a, b]}` (also `ne` `lt` `le` `gt` `ge`) | comparison |
//! | `{"and": [a, b, …]}`, `{"or": [a, b, …]}`, `{"not": a}` | boolean logic |
//! | `{"object": {"k": a, …}}` | builds an object from expressions (for `output` / `error`) |
//!
//! Field access is the `ref` + `path` form only: every value in scope is reached through a
//! `ref`, so a separate `get` operator would add a second spelling for the same thing.
//!
//! Parsing is total: anything outside these forms still parses, into
//! [`Expr::Nondeterministic`] (`now`, `uuid`, `random`, …, including `{"call": "uuid"}`),
//! [`Expr::OutOfScope`] (`state`, `query`, `env`) or [`Expr::Malformed`], so validation can
//! report `WORKFLOW_NONDETERMINISTIC`, `WORKFLOW_EXPRESSION_SCOPE` or `WORKFLOW_INVALID_STEP`
//! with a path instead of a parse failure.
//!
//! # Evaluation semantics
//! - A `path` through a missing key, an out-of-range index or a non-container yields `null`
//!   (payloads are open JSON; absence is data, not a crash).
//! - `eq` / `ne` accept any two values: JSON equality, numbers compared numerically (`1` equals
//!   `1.0`). Values of different types are simply unequal.
//! - `lt` `le` `gt` `ge` order two numbers or two strings (by code point). Any other pair is an
//!   [`EvalError::TypeMismatch`], never a silent `false`, so a typo'd field is loud.
//! - `and` / `or` / `not` need booleans (else `TypeMismatch`); `and` / `or` short-circuit left
//!   to right, which is deterministic.

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Number, Value};

/// The reserved name of the matched event payload (only in a wait-event `where` / `bind`).
pub const EVENT: &str = "EVENT";
/// The reserved name of the principal the instance was started under.
pub const PRINCIPAL: &str = "PRINCIPAL";

/// A parsed workflow expression. See the module docs for the JSON forms.
#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    /// A literal value.
    Lit(Value),
    /// A name in scope, optionally followed by field / index access.
    Ref { name: String, path: Vec<PathSeg> },
    /// A binary comparison.
    Compare {
        op: CmpOp,
        lhs: Box<Expr>,
        rhs: Box<Expr>,
    },
    /// Conjunction (short-circuit, left to right).
    And(Vec<Expr>),
    /// Disjunction (short-circuit, left to right).
    Or(Vec<Expr>),
    /// Negation.
    Not(Box<Expr>),
    /// An object built from expressions.
    Object(BTreeMap<String, Expr>),
    /// A time or randomness source (`now`, `uuid`, `random`, …): never evaluable.
    Nondeterministic { source: String, raw: Value },
    /// A read of application state or a query: outside the closed workflow scope.
    OutOfScope { scope: String, raw: Value },
    /// Any other shape; `raw` keeps the original JSON so it round-trips.
    Malformed { reason: String, raw: Value },
}

/// One step of a `ref` path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PathSeg {
    Field(String),
    Index(usize),
}

/// A comparison operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CmpOp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

impl CmpOp {
    /// The JSON operator key.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Eq => "eq",
            Self::Ne => "ne",
            Self::Lt => "lt",
            Self::Le => "le",
            Self::Gt => "gt",
            Self::Ge => "ge",
        }
    }

    fn from_key(key: &str) -> Option<Self> {
        Some(match key {
            "eq" => Self::Eq,
            "ne" => Self::Ne,
            "lt" => Self::Lt,
            "le" => Self::Le,
            "gt" => Self::Gt,
            "ge" => Self::Ge,
            _ => return None,
        })
    }
}

/// Whether an operator, function or name reads time or randomness. Matching is on the name
/// with case, `-` and `_` ignored, so `currentTime`, `current_time` and `NOW` all count.
#[must_use]
pub fn is_nondeterministic_name(name: &str) -> bool {
    let norm: String = name
        .chars()
        .filter(|c| *c != '-' && *c != '_')
        .collect::<String>()
        .to_ascii_lowercase();
    matches!(
        norm.as_str(),
        "now"
            | "today"
            | "time"
            | "timestamp"
            | "currenttime"
            | "clock"
            | "date"
            | "datetime"
            | "uuid"
            | "uuidv4"
            | "guid"
            | "random"
            | "rand"
            | "randomint"
            | "nonce"
    )
}

/// Operators that read something other than inputs, bindings, the principal or the event.
fn is_out_of_scope_op(op: &str) -> bool {
    matches!(op.to_ascii_lowercase().as_str(), "state" | "query" | "env")
}

impl Expr {
    /// Parses an expression. Total: never fails, see the module docs.
    #[must_use]
    pub fn from_json(value: &Value) -> Self {
        match value {
            Value::Null | Value::Bool(_) | Value::Number(_) | Value::String(_) => {
                Self::Lit(value.clone())
            }
            Value::Array(_) => Self::malformed(
                value,
                "a bare array is not an expression; write a literal array as {\"lit\": [...]}",
            ),
            Value::Object(map) if map.contains_key("ref") => Self::parse_ref(map, value),
            Value::Object(map) => match single_entry(map) {
                Some((op, arg)) => Self::parse_op(op, arg, value),
                None => Self::malformed(
                    value,
                    "an operator object has exactly one key (or is a `ref` with an optional `path`)",
                ),
            },
        }
    }

    /// The normalized JSON form: literal scalars are bare, a `ref` without a path has no
    /// `path` key, and unparsed shapes keep their original JSON.
    #[must_use]
    pub fn to_json(&self) -> Value {
        match self {
            Self::Lit(v @ (Value::Object(_) | Value::Array(_))) => one("lit", v.clone()),
            Self::Lit(v) => v.clone(),
            Self::Ref { name, path } => {
                let mut map = Map::new();
                map.insert("ref".into(), Value::String(name.clone()));
                if !path.is_empty() {
                    let segs = path.iter().map(|s| match s {
                        PathSeg::Field(f) => Value::String(f.clone()),
                        PathSeg::Index(i) => Value::from(*i),
                    });
                    map.insert("path".into(), Value::Array(segs.collect()));
                }
                Value::Object(map)
            }
            Self::Compare { op, lhs, rhs } => one(
                op.as_str(),
                Value::Array(vec![lhs.to_json(), rhs.to_json()]),
            ),
            Self::And(items) => one(
                "and",
                Value::Array(items.iter().map(Self::to_json).collect()),
            ),
            Self::Or(items) => one(
                "or",
                Value::Array(items.iter().map(Self::to_json).collect()),
            ),
            Self::Not(inner) => one("not", inner.to_json()),
            Self::Object(fields) => one(
                "object",
                Value::Object(
                    fields
                        .iter()
                        .map(|(k, e)| (k.clone(), e.to_json()))
                        .collect(),
                ),
            ),
            Self::Nondeterministic { raw, .. }
            | Self::OutOfScope { raw, .. }
            | Self::Malformed { raw, .. } => raw.clone(),
        }
    }

    /// Direct sub-expressions, each with the path suffix that reaches it.
    #[must_use]
    pub fn children(&self) -> Vec<(String, &Expr)> {
        match self {
            Self::Compare { op, lhs, rhs } => vec![
                (format!(".{}[0]", op.as_str()), lhs.as_ref()),
                (format!(".{}[1]", op.as_str()), rhs.as_ref()),
            ],
            Self::And(items) => items
                .iter()
                .enumerate()
                .map(|(i, e)| (format!(".and[{i}]"), e))
                .collect(),
            Self::Or(items) => items
                .iter()
                .enumerate()
                .map(|(i, e)| (format!(".or[{i}]"), e))
                .collect(),
            Self::Not(inner) => vec![(".not".to_string(), inner.as_ref())],
            Self::Object(fields) => fields
                .iter()
                .map(|(k, e)| (format!(".object.{k}"), e))
                .collect(),
            _ => Vec::new(),
        }
    }

    fn malformed(raw: &Value, reason: &str) -> Self {
        Self::Malformed {
            reason: reason.to_string(),
            raw: raw.clone(),
        }
    }

    fn parse_ref(map: &Map<String, Value>, raw: &Value) -> Self {
        if let Some(extra) = map.keys().find(|k| *k != "ref" && *k != "path") {
            return Self::malformed(raw, &format!("unexpected key `{extra}` beside `ref`"));
        }
        let Some(Value::String(name)) = map.get("ref") else {
            return Self::malformed(raw, "`ref` must name a string");
        };
        let mut path = Vec::new();
        match map.get("path") {
            None => {}
            Some(Value::Array(segs)) => {
                for seg in segs {
                    match seg {
                        Value::String(s) => path.push(PathSeg::Field(s.clone())),
                        Value::Number(n) => {
                            match n.as_u64().and_then(|i| usize::try_from(i).ok()) {
                                Some(i) => path.push(PathSeg::Index(i)),
                                None => {
                                    return Self::malformed(
                                        raw,
                                        "a path index is a non-negative integer",
                                    );
                                }
                            }
                        }
                        _ => return Self::malformed(raw, "a path segment is a string or an index"),
                    }
                }
            }
            Some(_) => return Self::malformed(raw, "`path` must be an array"),
        }
        Self::Ref {
            name: name.clone(),
            path,
        }
    }

    fn parse_op(op: &str, arg: &Value, raw: &Value) -> Self {
        if op == "lit" {
            return Self::Lit(arg.clone());
        }
        if let Some(cmp) = CmpOp::from_key(op) {
            return match arg.as_array().map(Vec::as_slice) {
                Some([lhs, rhs]) => Self::Compare {
                    op: cmp,
                    lhs: Box::new(Self::from_json(lhs)),
                    rhs: Box::new(Self::from_json(rhs)),
                },
                _ => Self::malformed(raw, &format!("`{op}` takes an array of two operands")),
            };
        }
        match op {
            "and" | "or" => match arg.as_array() {
                Some(items) if !items.is_empty() => {
                    let items = items.iter().map(Self::from_json).collect();
                    if op == "and" {
                        Self::And(items)
                    } else {
                        Self::Or(items)
                    }
                }
                _ => Self::malformed(raw, &format!("`{op}` takes a non-empty array")),
            },
            "not" => Self::Not(Box::new(Self::from_json(arg))),
            "object" => match arg {
                Value::Object(fields) => Self::Object(
                    fields
                        .iter()
                        .map(|(k, v)| (k.clone(), Self::from_json(v)))
                        .collect(),
                ),
                _ => Self::malformed(raw, "`object` takes an object of expressions"),
            },
            "call" | "fn" | "function" => {
                let name = match arg {
                    Value::String(s) => s.as_str(),
                    Value::Object(m) => m.get("name").and_then(Value::as_str).unwrap_or(""),
                    _ => "",
                };
                if is_nondeterministic_name(name) {
                    Self::Nondeterministic {
                        source: name.to_string(),
                        raw: raw.clone(),
                    }
                } else {
                    Self::malformed(
                        raw,
                        &format!(
                            "unknown function `{name}`: the workflow expression language has no calls"
                        ),
                    )
                }
            }
            _ if is_nondeterministic_name(op) => Self::Nondeterministic {
                source: op.to_string(),
                raw: raw.clone(),
            },
            _ if is_out_of_scope_op(op) => Self::OutOfScope {
                scope: op.to_string(),
                raw: raw.clone(),
            },
            _ => Self::malformed(raw, &format!("unknown operator `{op}`")),
        }
    }
}

fn single_entry(map: &Map<String, Value>) -> Option<(&str, &Value)> {
    let mut it = map.iter();
    match (it.next(), it.next()) {
        (Some((k, v)), None) => Some((k.as_str(), v)),
        _ => None,
    }
}

fn one(key: &str, value: Value) -> Value {
    let mut map = Map::new();
    map.insert(key.to_string(), value);
    Value::Object(map)
}

impl Serialize for Expr {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.to_json().serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Expr {
    /// Never fails on well-formed JSON: see [`Expr::from_json`].
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Value::deserialize(deserializer).map(|v| Self::from_json(&v))
    }
}

impl fmt::Display for Expr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.to_json())
    }
}

/// What an expression can see. `event` is `Some` only while matching a wait-event.
#[derive(Debug, Clone, Copy)]
pub struct Scope<'a> {
    pub inputs: &'a Map<String, Value>,
    pub bindings: &'a Map<String, Value>,
    pub principal: &'a str,
    pub event: Option<&'a Value>,
}

/// Why an expression could not be evaluated. Deterministic: the same expression over the
/// same scope always fails the same way.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EvalError {
    #[error("`{name}` is not an input, an assigned binding or PRINCIPAL")]
    UnknownRef { name: String },
    #[error("EVENT is only in scope inside a wait-event `where` or `bind`")]
    EventOutOfScope,
    #[error("`{op}` needs {expected}, got {found}")]
    TypeMismatch {
        op: &'static str,
        expected: &'static str,
        found: String,
    },
    #[error("not evaluable: {reason}")]
    NotEvaluable { reason: String },
}

/// Evaluates an expression. Pure and deterministic; never panics.
///
/// # Errors
/// See [`EvalError`] and the module docs for which type combinations are errors.
pub fn eval(expr: &Expr, scope: &Scope<'_>) -> Result<Value, EvalError> {
    match expr {
        Expr::Lit(v) => Ok(v.clone()),
        Expr::Ref { name, path } => Ok(walk(lookup(name, scope)?, path)),
        Expr::Compare { op, lhs, rhs } => {
            let (a, b) = (eval(lhs, scope)?, eval(rhs, scope)?);
            compare(*op, &a, &b).map(Value::Bool)
        }
        Expr::And(items) => {
            for item in items {
                if !eval_bool_op("and", item, scope)? {
                    return Ok(Value::Bool(false));
                }
            }
            Ok(Value::Bool(true))
        }
        Expr::Or(items) => {
            for item in items {
                if eval_bool_op("or", item, scope)? {
                    return Ok(Value::Bool(true));
                }
            }
            Ok(Value::Bool(false))
        }
        Expr::Not(inner) => Ok(Value::Bool(!eval_bool_op("not", inner, scope)?)),
        Expr::Object(fields) => {
            let mut out = Map::new();
            for (k, e) in fields {
                out.insert(k.clone(), eval(e, scope)?);
            }
            Ok(Value::Object(out))
        }
        Expr::Nondeterministic { source, .. } => Err(EvalError::NotEvaluable {
            reason: format!("`{source}` is nondeterministic"),
        }),
        Expr::OutOfScope { scope: s, .. } => Err(EvalError::NotEvaluable {
            reason: format!("`{s}` is outside the workflow scope"),
        }),
        Expr::Malformed { reason, .. } => Err(EvalError::NotEvaluable {
            reason: reason.clone(),
        }),
    }
}

/// Evaluates a predicate (`where`, `when`): the result must be a boolean.
///
/// # Errors
/// Any [`EvalError`] from [`eval`], or `TypeMismatch` when the result is not a boolean.
pub fn eval_bool(expr: &Expr, scope: &Scope<'_>) -> Result<bool, EvalError> {
    eval_bool_op("predicate", expr, scope)
}

fn eval_bool_op(op: &'static str, expr: &Expr, scope: &Scope<'_>) -> Result<bool, EvalError> {
    match eval(expr, scope)? {
        Value::Bool(b) => Ok(b),
        other => Err(mismatch(op, "a boolean", &other)),
    }
}

fn lookup(name: &str, scope: &Scope<'_>) -> Result<Value, EvalError> {
    if name == EVENT {
        return scope.event.cloned().ok_or(EvalError::EventOutOfScope);
    }
    if name == PRINCIPAL {
        return Ok(Value::String(scope.principal.to_string()));
    }
    scope
        .inputs
        .get(name)
        .or_else(|| scope.bindings.get(name))
        .cloned()
        .ok_or_else(|| EvalError::UnknownRef {
            name: name.to_string(),
        })
}

fn walk(mut value: Value, path: &[PathSeg]) -> Value {
    for seg in path {
        value = match (seg, value) {
            (PathSeg::Field(k), Value::Object(mut m)) => m.remove(k).unwrap_or(Value::Null),
            (PathSeg::Index(i), Value::Array(mut a)) if *i < a.len() => a.swap_remove(*i),
            _ => Value::Null,
        };
    }
    value
}

fn compare(op: CmpOp, a: &Value, b: &Value) -> Result<bool, EvalError> {
    let ord = match op {
        CmpOp::Eq => return Ok(json_eq(a, b)),
        CmpOp::Ne => return Ok(!json_eq(a, b)),
        _ => match (a, b) {
            (Value::Number(x), Value::Number(y)) => num_cmp(x, y),
            (Value::String(x), Value::String(y)) => x.cmp(y),
            (Value::Number(_) | Value::String(_), _) => {
                return Err(mismatch(op.as_str(), "two numbers or two strings", b));
            }
            _ => return Err(mismatch(op.as_str(), "two numbers or two strings", a)),
        },
    };
    Ok(match op {
        CmpOp::Lt => ord.is_lt(),
        CmpOp::Le => ord.is_le(),
        CmpOp::Gt => ord.is_gt(),
        _ => ord.is_ge(),
    })
}

/// JSON equality with numbers compared by value, so `1 == 1.0`.
#[must_use]
pub fn json_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => num_cmp(x, y).is_eq(),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| json_eq(p, q))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| json_eq(v, w)))
        }
        _ => a == b,
    }
}

fn num_cmp(x: &Number, y: &Number) -> Ordering {
    let int = |n: &Number| {
        n.as_i64()
            .map(i128::from)
            .or_else(|| n.as_u64().map(i128::from))
    };
    if let (Some(p), Some(q)) = (int(x), int(y)) {
        return p.cmp(&q);
    }
    // The numeric order, where `-0.0` and `0` are one number as in canonical JSON (the
    // total order would split them); JSON has no NaN, the only value it leaves unordered.
    let (p, q) = (x.as_f64().unwrap_or(0.0), y.as_f64().unwrap_or(0.0));
    p.partial_cmp(&q).unwrap_or_else(|| p.total_cmp(&q))
}

fn mismatch(op: &'static str, expected: &'static str, found: &Value) -> EvalError {
    let found = match found {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    };
    EvalError::TypeMismatch {
        op,
        expected,
        found: found.to_string(),
    }
}

#[cfg(test)]
mod tests;
