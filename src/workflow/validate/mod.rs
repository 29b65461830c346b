//! Static validation of a [`WorkflowDef`] against a [`Catalog`] of registered handlers.
//!
//! Validation is authoring-time checking: it returns every problem it finds as a structured
//! [`Diagnostic`] with one of the fifteen `WORKFLOW_*` codes, and never panics, so an
//! operator sees the whole list at once. An engine should refuse to start a definition with
//! any diagnostic.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use serde::Serialize;

use super::def::{StepKind, WorkflowDef, parse_definition};
use super::expr::{EVENT, Expr, PRINCIPAL, is_nondeterministic_name};

pub mod codes;
pub mod handlers;

/// One problem in a definition. `path` locates it (`steps[2].next`,
/// `steps[0].arguments.orderId.eq[1]`, `entry`, `bindings[1].producedBy`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Diagnostic {
    pub code: &'static str,
    pub message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub step_id: Option<String>,
    pub path: String,
}

impl Diagnostic {
    #[must_use]
    pub fn new(code: &'static str, path: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            step_id: None,
            path: path.into(),
        }
    }

    #[must_use]
    pub fn at_step(mut self, step_id: &str) -> Self {
        self.step_id = Some(step_id.to_string());
        self
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} at {}: {}", self.code, self.path, self.message)
    }
}

/// What the runtime can execute: registered action handlers (name → handler semantic
/// version, which the fingerprint covers) and known event types. An application's is
/// built from its handler set ([`handlers::HandlerSet::catalog`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Catalog {
    pub actions: BTreeMap<String, String>,
    pub events: BTreeSet<String>,
    /// Accept any event type: nothing registers the types an application publishes, so
    /// a catalog built from its handlers cannot check them.
    pub any_event: bool,
    /// Accept any action / event name (validating a file with no runtime at hand).
    pub accept_unknown: bool,
}

impl Catalog {
    /// Accepts every action and event name.
    #[must_use]
    pub fn permissive() -> Self {
        Self {
            accept_unknown: true,
            ..Self::default()
        }
    }

    /// Exactly what the shipped definitions in `workflows/` use, each action at version "1";
    /// the demo runtime registers matching handlers.
    #[must_use]
    pub fn demo() -> Self {
        let actions = [
            "reserve-stock",
            "ship-order",
            "release-stock",
            "call-partner-api",
            "send-reminder",
        ];
        Self {
            actions: actions
                .iter()
                .map(|a| ((*a).to_string(), "1".to_string()))
                .collect(),
            events: std::iter::once("payment-received".to_string()).collect(),
            any_event: false,
            accept_unknown: false,
        }
    }

    #[must_use]
    pub fn has_action(&self, name: &str) -> bool {
        self.accept_unknown || self.actions.contains_key(name)
    }

    #[must_use]
    pub fn has_event(&self, name: &str) -> bool {
        self.accept_unknown || self.any_event || self.events.contains(name)
    }
}

/// Parses and validates in one go: parse diagnostics if the text does not parse, else the
/// validation diagnostics.
#[must_use]
pub fn validate_text(text: &str, catalog: &Catalog) -> Vec<Diagnostic> {
    match parse_definition(text) {
        Ok(def) => validate(&def, catalog),
        Err(diags) => diags,
    }
}

/// Every problem in `def`, in a deterministic order (per-step checks in declaration order,
/// then graph checks). Empty means the definition is executable.
#[must_use]
pub fn validate(def: &WorkflowDef, catalog: &Catalog) -> Vec<Diagnostic> {
    let mut v = Validator {
        def,
        out: Vec::new(),
        steps: BTreeMap::new(),
    };
    v.check_ids();
    v.index_steps();
    v.check_entry();
    v.check_names();
    for (i, step) in def.steps.iter().enumerate() {
        v.check_step(i, &step.id, &step.kind, catalog);
    }
    v.check_graph();
    v.out
}

struct Validator<'a> {
    def: &'a WorkflowDef,
    out: Vec<Diagnostic>,
    /// First declaration of each step id → its index.
    steps: BTreeMap<&'a str, usize>,
}

impl<'a> Validator<'a> {
    fn push(&mut self, code: &'static str, path: String, step: Option<&str>, msg: String) {
        let d = Diagnostic::new(code, path, msg);
        self.out.push(match step {
            Some(id) => d.at_step(id),
            None => d,
        });
    }

    fn kind_of(&self, id: &str) -> Option<&'a StepKind> {
        self.steps.get(id).map(|i| &self.def.steps[*i].kind)
    }

    /// Duplicate ids, and ids that would make `<stepId>#0` / `<instanceId>/<activationId>`
    /// ambiguous.
    fn index_steps(&mut self) {
        let def = self.def;
        for (i, step) in def.steps.iter().enumerate() {
            let path = format!("steps[{i}].id");
            if step.id.contains(['#', '/']) {
                self.push(
                    codes::WORKFLOW_INVALID_STEP,
                    path.clone(),
                    Some(&step.id),
                    format!(
                        "step id `{}` contains `#` or `/`, which activation ids reserve",
                        step.id
                    ),
                );
            }
            if let Some(first) = self.steps.get(step.id.as_str()) {
                let msg = format!(
                    "step id `{}` is already declared by steps[{first}]",
                    step.id
                );
                self.push(codes::WORKFLOW_DUPLICATE_STEP_ID, path, Some(&step.id), msg);
            } else {
                self.steps.insert(&step.id, i);
            }
        }
    }

    fn check_entry(&mut self) {
        if !self.steps.contains_key(self.def.entry.as_str()) {
            let msg = if self.def.entry.is_empty() {
                "the workflow declares no `entry` step".to_string()
            } else {
                format!("entry `{}` is not a step of this workflow", self.def.entry)
            };
            self.push(codes::WORKFLOW_ENTRY_NOT_FOUND, "entry".into(), None, msg);
        }
    }

    /// Inputs and bindings share one namespace with `EVENT` and `PRINCIPAL`; each binding
    /// has exactly one producing step that actually assigns it.
    /// The workflow id and step ids end up in tables, logs and terminals: they follow the
    /// rule for every identifier from outside ([`crate::ids::check_id`]).
    fn check_ids(&mut self) {
        let def = self.def;
        let ids = std::iter::once(("id".to_owned(), "workflow id", def.id.as_str())).chain(
            def.steps
                .iter()
                .enumerate()
                .map(|(i, s)| (format!("steps[{i}].id"), "step id", s.id.as_str())),
        );
        for (path, field, id) in ids {
            if let Err(e) = crate::ids::check_id(field, id) {
                let text = e.to_string();
                let rule = text.strip_prefix("INVALID: ").unwrap_or(&text).to_owned();
                self.push(codes::WORKFLOW_INVALID_DEFINITION, path, None, rule);
            }
        }
    }

    fn check_names(&mut self) {
        let def = self.def;
        let mut seen: BTreeSet<&str> = [EVENT, PRINCIPAL].into_iter().collect();
        let declared = def.inputs.iter().map(|i| ("inputs", i.id.as_str()));
        let declared = declared.chain(def.bindings.iter().map(|b| ("bindings", b.id.as_str())));
        for (i, (list, id)) in declared.enumerate() {
            let index = if list == "inputs" {
                i
            } else {
                i - def.inputs.len()
            };
            if !seen.insert(id) {
                self.push(
                    codes::WORKFLOW_DUPLICATE_BINDING,
                    format!("{list}[{index}].id"),
                    None,
                    format!("`{id}` is already declared (inputs, bindings, EVENT and PRINCIPAL share one namespace)"),
                );
            }
        }
        for (i, b) in def.bindings.iter().enumerate() {
            let path = format!("bindings[{i}].producedBy");
            let problem = match self.kind_of(&b.produced_by) {
                None => {
                    let msg = format!(
                        "binding `{}` is produced by `{}`, which is not a step",
                        b.id, b.produced_by
                    );
                    self.push(codes::WORKFLOW_STEP_NOT_FOUND, path, None, msg);
                    continue;
                }
                Some(StepKind::Action(_)) => None,
                Some(StepKind::WaitEvent(w)) if w.bind.contains_key(&b.id) => None,
                Some(StepKind::WaitEvent(_)) => Some("a wait-event that does not `bind` it"),
                Some(_) => Some("a step that produces no value"),
            };
            if let Some(why) = problem {
                let msg = format!(
                    "binding `{}` names producer `{}`, {why}",
                    b.id, b.produced_by
                );
                self.push(codes::WORKFLOW_BINDING_NOT_FOUND, path, None, msg);
            }
        }
    }

    #[expect(clippy::too_many_lines, reason = "one check per step kind and field")]
    fn check_step(&mut self, i: usize, id: &str, kind: &'a StepKind, catalog: &Catalog) {
        let at = |field: &str| format!("steps[{i}].{field}");
        for (field, target) in kind.edges() {
            if !self.steps.contains_key(target) {
                let msg = format!("`{field}` of step `{id}` names `{target}`, which is not a step");
                self.push(codes::WORKFLOW_STEP_NOT_FOUND, at(field), Some(id), msg);
            }
        }
        match kind {
            StepKind::Action(a) => {
                if !catalog.has_action(&a.action) {
                    let near = crate::foundation::toml_file::nearest(
                        &a.action,
                        catalog.actions.keys().map(String::as_str),
                    );
                    let msg = match near {
                        Some(near) => format!(
                            "no handler `{}` in the handler set (did you mean `{near}`?)",
                            a.action
                        ),
                        None => format!("no handler `{}` in the handler set", a.action),
                    };
                    self.push(
                        codes::WORKFLOW_ACTION_NOT_FOUND,
                        at("action"),
                        Some(id),
                        msg,
                    );
                }
                if let Some(r) = &a.retry {
                    let bad = if r.max_attempts < 1 {
                        Some("maxAttempts must be at least 1")
                    } else if !(r.initial_delay_seconds.is_finite()
                        && r.initial_delay_seconds > 0.0)
                    {
                        Some("initialDelaySeconds must be positive and finite")
                    } else if !(r.backoff_multiplier.is_finite() && r.backoff_multiplier >= 1.0) {
                        Some("backoffMultiplier must be finite and at least 1")
                    } else if !(r.max_delay_seconds.is_finite()
                        && r.max_delay_seconds >= r.initial_delay_seconds)
                    {
                        Some("maxDelaySeconds must be finite and at least initialDelaySeconds")
                    } else {
                        None
                    };
                    if let Some(why) = bad {
                        self.push(
                            codes::WORKFLOW_INVALID_RETRY_POLICY,
                            at("retry"),
                            Some(id),
                            why.into(),
                        );
                    }
                }
            }
            StepKind::WaitEvent(w) => {
                if !catalog.has_event(&w.event) {
                    let msg = format!("no event type `{}` is known", w.event);
                    self.push(codes::WORKFLOW_EVENT_NOT_FOUND, at("event"), Some(id), msg);
                }
                match (&w.timeout, &w.on_timeout) {
                    (Some(t), _) if !positive(t.seconds) => {
                        let msg = "timeout.seconds must be positive and finite".to_string();
                        self.push(codes::WORKFLOW_INVALID_TIMER, at("timeout"), Some(id), msg);
                    }
                    (None, Some(_)) => {
                        let msg = "onTimeout without a timeout can never be taken".to_string();
                        self.push(
                            codes::WORKFLOW_INVALID_TIMER,
                            at("onTimeout"),
                            Some(id),
                            msg,
                        );
                    }
                    _ => {}
                }
                self.check_bind_targets(i, id);
            }
            StepKind::Timer(t) => {
                let bad = match (&t.after, &t.at) {
                    (None, None) => Some("a timer needs one of `after` or `at`"),
                    (Some(_), Some(_)) => Some("a timer takes `after` or `at`, not both"),
                    (Some(a), None) if !positive(a.seconds) => {
                        Some("after.seconds must be positive and finite")
                    }
                    _ => None,
                };
                if let Some(why) = bad {
                    self.push(
                        codes::WORKFLOW_INVALID_TIMER,
                        format!("steps[{i}]"),
                        Some(id),
                        why.into(),
                    );
                }
            }
            StepKind::Branch(_) | StepKind::Complete(_) | StepKind::Fail(_) => {}
        }
        for e in kind.expressions() {
            let mut path = at(e.field);
            if let Some(k) = e.key {
                path = format!("{path}.{k}");
            }
            self.check_expr(e.expr, path, id, e.event_in_scope);
        }
    }

    /// Single assignment: a `bind` may only target a declared binding produced by this step.
    fn check_bind_targets(&mut self, i: usize, id: &str) {
        let Some(StepKind::WaitEvent(w)) = self.def.steps.get(i).map(|s| &s.kind) else {
            return;
        };
        for target in w.bind.keys() {
            let path = format!("steps[{i}].bind.{target}");
            match self.def.bindings.iter().find(|b| &b.id == target) {
                None => {
                    let msg = format!("`bind` targets `{target}`, which is not a declared binding");
                    self.push(codes::WORKFLOW_BINDING_NOT_FOUND, path, Some(id), msg);
                }
                Some(b) if b.produced_by != id => {
                    let msg = format!(
                        "binding `{target}` is produced by `{}`; it can be assigned only once",
                        b.produced_by
                    );
                    self.push(codes::WORKFLOW_DUPLICATE_BINDING, path, Some(id), msg);
                }
                Some(_) => {}
            }
        }
    }

    fn check_expr(&mut self, expr: &Expr, path: String, step: &str, event_ok: bool) {
        match expr {
            Expr::Ref { name, .. } => self.check_ref(name, path, step, event_ok),
            Expr::Nondeterministic { source, .. } => {
                let msg = format!(
                    "`{source}` is nondeterministic; time enters a workflow only through a timer step"
                );
                self.push(codes::WORKFLOW_NONDETERMINISTIC, path, Some(step), msg);
            }
            Expr::OutOfScope { scope, .. } => {
                let msg = format!(
                    "`{scope}` reads outside the workflow scope; model it as an action step before the branch"
                );
                self.push(codes::WORKFLOW_EXPRESSION_SCOPE, path, Some(step), msg);
            }
            Expr::Malformed { reason, .. } => {
                self.push(
                    codes::WORKFLOW_INVALID_STEP,
                    path,
                    Some(step),
                    format!("malformed expression: {reason}"),
                );
            }
            _ => {
                for (suffix, child) in expr.children() {
                    self.check_expr(child, format!("{path}{suffix}"), step, event_ok);
                }
            }
        }
    }

    fn check_ref(&mut self, name: &str, path: String, step: &str, event_ok: bool) {
        let def = self.def;
        let (code, msg) = if name == EVENT {
            if event_ok {
                return;
            }
            (
                codes::WORKFLOW_EXPRESSION_SCOPE,
                "EVENT is only in scope inside a wait-event `where` or `bind`".to_string(),
            )
        } else if name == PRINCIPAL || def.inputs.iter().any(|i| i.id == name) {
            return;
        } else if let Some(b) = def.bindings.iter().find(|b| b.id == name) {
            if b.produced_by != step {
                return;
            }
            (
                codes::WORKFLOW_BINDING_NOT_FOUND,
                format!(
                    "binding `{name}` is assigned by this very step, so it is not yet available"
                ),
            )
        } else if name.contains(':') {
            (
                codes::WORKFLOW_EXPRESSION_SCOPE,
                format!(
                    "`{name}` is outside the workflow scope (inputs, bindings, PRINCIPAL, EVENT)"
                ),
            )
        } else if is_nondeterministic_name(name) {
            (
                codes::WORKFLOW_NONDETERMINISTIC,
                format!("`{name}` is nondeterministic and not a declared input or binding"),
            )
        } else {
            (
                codes::WORKFLOW_BINDING_NOT_FOUND,
                format!("`{name}` is not a declared input or binding"),
            )
        };
        self.push(code, path, Some(step), msg);
    }

    /// Cycles, reachability from `entry`, and whether every reachable step can finish.
    fn check_graph(&mut self) {
        let def = self.def;
        let succ: BTreeMap<&str, Vec<&str>> = self
            .steps
            .iter()
            .map(|(id, i)| {
                let targets = def.steps[*i].kind.edges().into_iter().map(|(_, t)| t);
                (
                    *id,
                    targets.filter(|t| self.steps.contains_key(t)).collect(),
                )
            })
            .collect();
        for (id, cycle) in find_cycles(&succ) {
            let i = self.steps[id];
            let msg = format!(
                "control flow cycles through {}; retries are policy, not edges",
                cycle.join(" → ")
            );
            self.push(
                codes::WORKFLOW_CYCLE_NOT_ALLOWED,
                format!("steps[{i}]"),
                Some(id),
                msg,
            );
        }
        if !self.steps.contains_key(def.entry.as_str()) {
            return;
        }
        let reachable = closure([def.entry.as_str()], &succ);
        let mut pred: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
        for (from, tos) in &succ {
            for to in tos {
                pred.entry(to).or_default().push(from);
            }
        }
        let terminals = self
            .steps
            .iter()
            .filter(|(_, i)| def.steps[**i].kind.is_terminal())
            .map(|(id, _)| *id);
        let finishing = closure(terminals, &pred);
        for (i, step) in def.steps.iter().enumerate() {
            if self.steps.get(step.id.as_str()) != Some(&i) {
                continue; // a duplicate, already reported
            }
            if !reachable.contains(step.id.as_str()) {
                let msg = format!(
                    "step `{}` is not reachable from entry `{}`",
                    step.id, def.entry
                );
                self.push(
                    codes::WORKFLOW_UNREACHABLE_STEP,
                    format!("steps[{i}]"),
                    Some(&step.id),
                    msg,
                );
            } else if !finishing.contains(step.id.as_str()) {
                let msg = format!(
                    "no path from step `{}` reaches a complete or fail step",
                    step.id
                );
                self.push(
                    codes::WORKFLOW_NO_TERMINAL,
                    format!("steps[{i}]"),
                    Some(&step.id),
                    msg,
                );
            }
        }
    }
}

fn positive(seconds: f64) -> bool {
    seconds.is_finite() && seconds > 0.0
}

/// Everything reachable from `start` along `edges` (including `start`).
fn closure<'a>(
    start: impl IntoIterator<Item = &'a str>,
    edges: &BTreeMap<&'a str, Vec<&'a str>>,
) -> BTreeSet<&'a str> {
    let mut seen = BTreeSet::new();
    let mut stack: Vec<&str> = start.into_iter().collect();
    while let Some(n) = stack.pop() {
        if seen.insert(n) {
            stack.extend(edges.get(n).into_iter().flatten().copied());
        }
    }
    seen
}

/// One entry per back edge found by a depth-first search in id order: the step the back edge
/// returns to, and the cycle it closes. Iterative, so deep graphs cannot overflow the stack.
fn find_cycles<'a>(succ: &BTreeMap<&'a str, Vec<&'a str>>) -> Vec<(&'a str, Vec<&'a str>)> {
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        Open,
        Done,
    }
    let mut mark: BTreeMap<&str, Mark> = BTreeMap::new();
    let mut found: Vec<(&str, Vec<&str>)> = Vec::new();
    for root in succ.keys() {
        if mark.contains_key(root) {
            continue;
        }
        let mut stack: Vec<(&str, usize)> = vec![(root, 0)];
        mark.insert(root, Mark::Open);
        while let Some((node, next)) = stack.last().copied() {
            let targets = succ.get(node).map_or(&[][..], Vec::as_slice);
            if let Some(t) = targets.get(next).copied() {
                if let Some(top) = stack.last_mut() {
                    top.1 += 1;
                }
                match mark.get(t) {
                    None => {
                        mark.insert(t, Mark::Open);
                        stack.push((t, 0));
                    }
                    Some(Mark::Open) if !found.iter().any(|(s, _)| *s == t) => {
                        let from = stack.iter().position(|(n, _)| *n == t).unwrap_or(0);
                        let mut cycle: Vec<&str> = stack[from..].iter().map(|(n, _)| *n).collect();
                        cycle.push(t);
                        found.push((t, cycle));
                    }
                    _ => {}
                }
            } else {
                mark.insert(node, Mark::Done);
                stack.pop();
            }
        }
    }
    found
}

#[cfg(test)]
mod tests;
