//! Workflow definitions as data (`WorkflowDef`), and total parsing from JSON or TOML.
//!
//! Parsing never panics and never stops at the first bad step: the steps are read as
//! `serde_json::Value`s first and converted one by one, so a `null`, a string, an unknown
//! `type` or a mistyped field becomes a `WORKFLOW_INVALID_STEP` diagnostic that names the
//! step's index and id. Everything else that is not a workflow (bad JSON, a wrong top-level
//! field) is one `WORKFLOW_INVALID_DEFINITION` diagnostic.
//!
//! Parsing checks shape only; references, graph structure and policies are checked by
//! [`mod@crate::workflow::validate`].

use std::collections::BTreeMap;

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

use super::expr::Expr;
use super::validate::{Diagnostic, codes};

/// A durable workflow definition: a closed step vocabulary plus expressions over inputs and
/// single-assignment bindings. `name`, `description` and step `label`s are presentation only.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkflowDef {
    pub id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    pub inputs: Vec<WorkflowInput>,
    pub bindings: Vec<WorkflowBinding>,
    pub entry: String,
    pub steps: Vec<Step>,
}

/// A start argument. Immutable for the life of the instance.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WorkflowInput {
    pub id: String,
    #[serde(default)]
    pub value_type: ValueType,
    /// Absent means optional: a missing optional input evaluates to `null`.
    #[serde(default)]
    pub required: bool,
}

/// A single-assignment value produced by one step: an action's output, or a wait-event's
/// `bind` entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WorkflowBinding {
    pub id: String,
    #[serde(default)]
    pub value_type: ValueType,
    pub produced_by: String,
}

/// Portable JSON value types for inputs and bindings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ValueType {
    String,
    Number,
    Integer,
    Boolean,
    Object,
    Array,
    #[default]
    Any,
}

impl ValueType {
    /// Whether `value` has this type (`null` has none but `any`).
    #[must_use]
    pub fn admits(self, value: &Value) -> bool {
        match self {
            Self::Any => true,
            Self::String => value.is_string(),
            Self::Number => value.is_number(),
            Self::Integer => value.is_i64() || value.is_u64(),
            Self::Boolean => value.is_boolean(),
            Self::Object => value.is_object(),
            Self::Array => value.is_array(),
        }
    }
}

/// One step: an id, an optional presentation label, and what it does.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Step {
    pub id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    #[serde(flatten)]
    pub kind: StepKind,
}

/// The six step kinds, tagged by `type`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "kebab-case")]
pub enum StepKind {
    Action(ActionStep),
    WaitEvent(WaitEventStep),
    Timer(TimerStep),
    Branch(BranchStep),
    Complete(CompleteStep),
    Fail(FailStep),
}

/// The six `type` strings, in their documented order.
pub const STEP_TYPES: [&str; 6] = [
    "action",
    "wait-event",
    "timer",
    "branch",
    "complete",
    "fail",
];

/// Invoke a named action handler under the workflow principal.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ActionStep {
    pub action: String,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub arguments: BTreeMap<String, Expr>,
    pub next: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_error: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry: Option<RetryPolicy>,
}

/// Automatic retries of runtime-classified retryable failures. `max_attempts` counts the
/// first attempt. Fields are wide numeric types so out-of-range values reach validation
/// (`WORKFLOW_INVALID_RETRY_POLICY`) instead of failing to parse.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RetryPolicy {
    pub max_attempts: i64,
    pub initial_delay_seconds: f64,
    pub backoff_multiplier: f64,
    pub max_delay_seconds: f64,
}

/// Wait for a matching event; `bind` assigns bindings from `EVENT`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WaitEventStep {
    pub event: String,
    #[serde(rename = "where", default, skip_serializing_if = "Option::is_none")]
    pub where_: Option<Expr>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub bind: BTreeMap<String, Expr>,
    pub next: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<Seconds>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_timeout: Option<String>,
}

/// Wait until a durable instant: exactly one of `after` / `at` (checked by validation).
/// `at` evaluates to epoch milliseconds (a number) or an RFC 3339 string.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TimerStep {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<Seconds>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at: Option<Expr>,
    pub next: String,
}

/// A duration in (possibly fractional) seconds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Seconds {
    pub seconds: f64,
}

/// Deterministic edge choice.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BranchStep {
    pub when: Expr,
    pub then: String,
    #[serde(rename = "else")]
    pub else_: String,
}

/// Terminal: `completed`, with an optional output.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CompleteStep {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<Expr>,
}

/// Terminal: `failed`, with an optional error value.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FailStep {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<Expr>,
}

/// A step expression with where it lives and whether `EVENT` is in scope there.
#[derive(Debug, Clone, Copy)]
pub struct StepExpr<'a> {
    /// Path below the step, e.g. `arguments.orderId` or `where`.
    pub field: &'a str,
    pub key: Option<&'a str>,
    pub expr: &'a Expr,
    pub event_in_scope: bool,
}

impl StepKind {
    /// The `type` string.
    #[must_use]
    pub fn type_name(&self) -> &'static str {
        match self {
            Self::Action(_) => "action",
            Self::WaitEvent(_) => "wait-event",
            Self::Timer(_) => "timer",
            Self::Branch(_) => "branch",
            Self::Complete(_) => "complete",
            Self::Fail(_) => "fail",
        }
    }

    /// `complete` and `fail` end an instance.
    #[must_use]
    pub fn is_terminal(&self) -> bool {
        matches!(self, Self::Complete(_) | Self::Fail(_))
    }

    /// Control-flow edges as `(field, target)`, in a fixed order.
    #[must_use]
    pub fn edges(&self) -> Vec<(&'static str, &str)> {
        let mut out = Vec::new();
        match self {
            Self::Action(a) => {
                out.push(("next", a.next.as_str()));
                if let Some(t) = &a.on_error {
                    out.push(("onError", t.as_str()));
                }
            }
            Self::WaitEvent(w) => {
                out.push(("next", w.next.as_str()));
                if let Some(t) = &w.on_timeout {
                    out.push(("onTimeout", t.as_str()));
                }
            }
            Self::Timer(t) => out.push(("next", t.next.as_str())),
            Self::Branch(b) => {
                out.push(("then", b.then.as_str()));
                out.push(("else", b.else_.as_str()));
            }
            Self::Complete(_) | Self::Fail(_) => {}
        }
        out
    }

    /// Every expression in the step, in a fixed order.
    #[must_use]
    pub fn expressions(&self) -> Vec<StepExpr<'_>> {
        let plain = |field, key, expr, event_in_scope| StepExpr {
            field,
            key,
            expr,
            event_in_scope,
        };
        let mut out = Vec::new();
        match self {
            Self::Action(a) => {
                for (k, e) in &a.arguments {
                    out.push(plain("arguments", Some(k.as_str()), e, false));
                }
            }
            Self::WaitEvent(w) => {
                if let Some(e) = &w.where_ {
                    out.push(plain("where", None, e, true));
                }
                for (k, e) in &w.bind {
                    out.push(plain("bind", Some(k.as_str()), e, true));
                }
            }
            Self::Timer(t) => {
                if let Some(e) = &t.at {
                    out.push(plain("at", None, e, false));
                }
            }
            Self::Branch(b) => out.push(plain("when", None, &b.when, false)),
            Self::Complete(c) => {
                if let Some(e) = &c.output {
                    out.push(plain("output", None, e, false));
                }
            }
            Self::Fail(f) => {
                if let Some(e) = &f.error {
                    out.push(plain("error", None, e, false));
                }
            }
        }
        out
    }
}

impl WorkflowDef {
    /// The first step with this id.
    #[must_use]
    pub fn step(&self, id: &str) -> Option<&Step> {
        self.steps.iter().find(|s| s.id == id)
    }

    /// Converts an already-parsed JSON (or TOML-as-JSON) document. Total.
    ///
    /// # Errors
    /// Every shape problem found, as diagnostics (see the module docs).
    pub fn from_value(value: Value) -> Result<Self, Vec<Diagnostic>> {
        let Value::Object(mut map) = value else {
            return Err(vec![Diagnostic::new(
                codes::WORKFLOW_INVALID_DEFINITION,
                "$",
                "a workflow definition is an object",
            )]);
        };
        let mut diags = Vec::new();
        let raw_steps = match map.remove("steps") {
            None => Vec::new(),
            Some(Value::Array(steps)) => steps,
            Some(_) => {
                diags.push(Diagnostic::new(
                    codes::WORKFLOW_INVALID_DEFINITION,
                    "steps",
                    "`steps` must be an array",
                ));
                Vec::new()
            }
        };
        let header = serde_json::from_value::<Header>(Value::Object(map))
            .map_err(|e| Diagnostic::new(codes::WORKFLOW_INVALID_DEFINITION, "$", e.to_string()));
        let mut steps = Vec::with_capacity(raw_steps.len());
        for (index, raw) in raw_steps.into_iter().enumerate() {
            match Step::from_value(index, raw) {
                Ok(step) => steps.push(step),
                Err(d) => diags.push(d),
            }
        }
        match header {
            Ok(h) if diags.is_empty() => Ok(Self {
                id: h.id,
                name: h.name,
                description: h.description,
                inputs: h.inputs,
                bindings: h.bindings,
                entry: h.entry,
                steps,
            }),
            Ok(_) => Err(diags),
            Err(d) => {
                diags.insert(0, d);
                Err(diags)
            }
        }
    }
}

/// Everything but `steps`. `entry` defaults to empty so a missing entry is reported as
/// `WORKFLOW_ENTRY_NOT_FOUND` by validation rather than as a shape error.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Header {
    id: String,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    inputs: Vec<WorkflowInput>,
    #[serde(default)]
    bindings: Vec<WorkflowBinding>,
    #[serde(default)]
    entry: String,
}

impl Step {
    /// Converts one raw step. Total: any malformed shape is a `WORKFLOW_INVALID_STEP`.
    ///
    /// # Errors
    /// The single diagnostic describing what is wrong with the step.
    pub fn from_value(index: usize, raw: Value) -> Result<Self, Diagnostic> {
        let path = format!("steps[{index}]");
        let invalid = |id: Option<&str>, msg: String| {
            let d = Diagnostic::new(codes::WORKFLOW_INVALID_STEP, path.clone(), msg);
            match id {
                Some(id) => d.at_step(id),
                None => d,
            }
        };
        let mut map: Map<String, Value> = match raw {
            Value::Object(m) => m,
            other => {
                return Err(invalid(
                    None,
                    format!("step {index} is {}, not an object", describe(&other)),
                ));
            }
        };
        let id = match map.remove("id") {
            Some(Value::String(id)) if !id.is_empty() => id,
            Some(Value::String(_)) => {
                return Err(invalid(None, format!("step {index} has an empty `id`")));
            }
            Some(other) => {
                return Err(invalid(
                    None,
                    format!(
                        "step {index} has an `id` that is {}, not a string",
                        describe(&other)
                    ),
                ));
            }
            None => return Err(invalid(None, format!("step {index} has no `id`"))),
        };
        let label = match map.remove("label") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(s),
            Some(other) => {
                return Err(invalid(
                    Some(&id),
                    format!(
                        "step `{id}` has a `label` that is {}, not a string",
                        describe(&other)
                    ),
                ));
            }
        };
        match map.get("type") {
            Some(Value::String(t)) if STEP_TYPES.contains(&t.as_str()) => {}
            Some(Value::String(t)) => {
                return Err(invalid(
                    Some(&id),
                    format!(
                        "step `{id}` has unknown type `{t}`; expected one of {}",
                        STEP_TYPES.join(", ")
                    ),
                ));
            }
            Some(other) => {
                return Err(invalid(
                    Some(&id),
                    format!(
                        "step `{id}` has a `type` that is {}, not a string",
                        describe(other)
                    ),
                ));
            }
            None => return Err(invalid(Some(&id), format!("step `{id}` has no `type`"))),
        }
        let kind = serde_json::from_value::<StepKind>(Value::Object(map))
            .map_err(|e| invalid(Some(&id), format!("step `{id}`: {e}")))?;
        Ok(Self { id, label, kind })
    }
}

impl<'de> Deserialize<'de> for Step {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let raw = Value::deserialize(deserializer)?;
        Self::from_value(0, raw).map_err(|d| D::Error::custom(d.message))
    }
}

impl<'de> Deserialize<'de> for WorkflowDef {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let raw = Value::deserialize(deserializer)?;
        Self::from_value(raw).map_err(|diags| {
            let text: Vec<String> = diags.iter().map(ToString::to_string).collect();
            D::Error::custom(text.join("; "))
        })
    }
}

fn describe(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Parses a JSON workflow definition.
///
/// # Errors
/// Invalid JSON is one `WORKFLOW_INVALID_DEFINITION` with serde's line and column; shape
/// problems are as in [`WorkflowDef::from_value`].
pub fn parse_definition(text: &str) -> Result<WorkflowDef, Vec<Diagnostic>> {
    let value: Value = serde_json::from_str(text).map_err(|e| {
        vec![Diagnostic::new(
            codes::WORKFLOW_INVALID_DEFINITION,
            format!("line {} column {}", e.line(), e.column()),
            format!("invalid JSON: {e}"),
        )]
    })?;
    WorkflowDef::from_value(value)
}

/// Parses a TOML workflow definition (same field names; steps as `[[steps]]`).
///
/// # Errors
/// As [`parse_definition`].
pub fn parse_definition_toml(text: &str) -> Result<WorkflowDef, Vec<Diagnostic>> {
    let value: Value = toml::from_str(text).map_err(|e| {
        let offset = e.span().map_or(0, |span| span.start);
        let before = text.get(..offset).unwrap_or(text);
        let line = before.matches('\n').count() + 1;
        let column = before.len() - before.rfind('\n').map_or(0, |i| i + 1) + 1;
        vec![Diagnostic::new(
            codes::WORKFLOW_INVALID_DEFINITION,
            format!("line {line} column {column}"),
            format!("invalid TOML: {}", e.message()),
        )]
    })?;
    WorkflowDef::from_value(value)
}

/// The definitions shipped in `workflows/`, embedded so the binary works from any directory:
/// `(file name, JSON text)`.
pub const SHIPPED_DEFINITIONS: [(&str, &str); 3] = [
    (
        "order-fulfilment.json",
        include_str!("../../../workflows/order-fulfilment.json"),
    ),
    (
        "integration-call.json",
        include_str!("../../../workflows/integration-call.json"),
    ),
    (
        "reminder.json",
        include_str!("../../../workflows/reminder.json"),
    ),
];

#[cfg(test)]
mod tests;
