//! The pure workflow state machine: `(definition, state, trigger, now) → (state', history)`.
//!
//! No I/O and no clock reads: `now` (epoch millis) and the event journal's high-water mark
//! are passed in, so memory, `SQLite` and Postgres engines — and tests — get identical results.
//! The store wraps each call in one fenced CAS transaction (`instanceRevision R → R+1`) and
//! appends the returned history entries; a call that returns an error changes nothing.
//!
//! One call runs the instance forward through every non-blocking step (`branch`, `complete`,
//! `fail`) until it reaches something it must wait for: an action to execute (`running`), an
//! event or a timer (`waiting`), or a terminal status. Targets are computed once here —
//! a timer's `fireAt` and a wait's `timeoutAt` are stored, never recomputed on recovery.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use super::def::{ActionStep, RetryPolicy, Step, StepKind, TimerStep, WorkflowDef};
use super::expr::{EvalError, Scope, eval, eval_bool};

/// Failure code when an expression cannot be evaluated at run time.
pub const EVALUATION_FAILED: &str = "WORKFLOW_EVALUATION_FAILED";
/// Failure code when a wait-event times out with no `onTimeout` edge.
pub const TIMED_OUT: &str = "WORKFLOW_TIMEOUT";
/// Failure code of a `fail` step whose `error` carries no string `code`.
pub const FAILED: &str = "WORKFLOW_FAILED";

/// Lifecycle status. `running` means an action is (or, after a retry backoff, will be)
/// executable; `waiting` means an event or a timer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum InstanceStatus {
    Running,
    Waiting,
    Completed,
    Failed,
    Cancelled,
}

impl InstanceStatus {
    /// Terminal statuses are durable and irreversible.
    #[must_use]
    pub fn is_terminal(self) -> bool {
        matches!(self, Self::Completed | Self::Failed | Self::Cancelled)
    }

    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Running => "running",
            Self::Waiting => "waiting",
            Self::Completed => "completed",
            Self::Failed => "failed",
            Self::Cancelled => "cancelled",
        }
    }
}

/// What a non-terminal instance is blocked on. Stored with the instance: the waiting row
/// *is* the timer and the event registration.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(
    tag = "kind",
    rename_all = "kebab-case",
    rename_all_fields = "camelCase"
)]
pub enum Waiting {
    /// An action invocation to execute at `next_eligible_at`; the id is stable across
    /// retries and failover.
    Action {
        invocation_id: String,
    },
    /// Journal events with `seq > since_event_seq` may match.
    Event {
        event: String,
        since_event_seq: i64,
        timeout_at: Option<i64>,
    },
    Timer {
        fire_at: i64,
    },
}

/// Why an instance (or a step, in history) failed. `retryable` is structured, never parsed
/// from `message`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Failure {
    pub code: String,
    pub message: String,
    pub retryable: bool,
}

/// The durable control position of one instance.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InstanceState {
    pub instance_id: String,
    pub status: InstanceStatus,
    pub current_step_id: Option<String>,
    pub activation_id: Option<String>,
    /// 1-based attempt of the current action step; 0 on other steps.
    pub attempt: u32,
    pub waiting: Option<Waiting>,
    /// When an authority should next look at this instance: the action's eligibility (now,
    /// or the retry backoff), the timer's fire instant or the wait's timeout.
    pub next_eligible_at: Option<i64>,
    pub inputs: Map<String, Value>,
    pub bindings: Map<String, Value>,
    pub principal: String,
    pub output: Option<Value>,
    pub failure: Option<Failure>,
}

impl InstanceState {
    /// The inspection `waitingReason`: `action`, `retry-backoff`, `event:<type>`, `timer`;
    /// `None` once terminal.
    #[must_use]
    pub fn waiting_reason(&self) -> Option<String> {
        match self.waiting.as_ref()? {
            Waiting::Action { .. } if self.attempt > 1 => Some("retry-backoff".into()),
            Waiting::Action { .. } => Some("action".into()),
            Waiting::Event { event, .. } => Some(format!("event:{event}")),
            Waiting::Timer { .. } => Some("timer".into()),
        }
    }
}

/// The seed's history kinds, exactly.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum HistoryKind {
    Started,
    StepActivated,
    StepSucceeded,
    StepFailed,
    RetryScheduled,
    EventMatched,
    TimerFired,
    TimeoutFired,
    BranchChosen,
    Completed,
    Failed,
    Cancelled,
}

impl HistoryKind {
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Started => "started",
            Self::StepActivated => "step-activated",
            Self::StepSucceeded => "step-succeeded",
            Self::StepFailed => "step-failed",
            Self::RetryScheduled => "retry-scheduled",
            Self::EventMatched => "event-matched",
            Self::TimerFired => "timer-fired",
            Self::TimeoutFired => "timeout-fired",
            Self::BranchChosen => "branch-chosen",
            Self::Completed => "completed",
            Self::Failed => "failed",
            Self::Cancelled => "cancelled",
        }
    }
}

/// One logical transition record (the store adds revision numbers).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HistoryEntry {
    pub kind: HistoryKind,
    pub at: i64,
    pub step_id: Option<String>,
    pub activation_id: Option<String>,
    pub detail: Value,
}

/// Something that happened to an instance.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(
    tag = "trigger",
    rename_all = "kebab-case",
    rename_all_fields = "camelCase"
)]
pub enum Trigger {
    ActionSucceeded {
        output: Value,
    },
    ActionFailed {
        retryable: bool,
        code: String,
        message: String,
    },
    /// A journal event offered to the instance; `seq` is its journal sequence.
    EventMatched {
        event_type: String,
        seq: i64,
        payload: Value,
    },
    TimerFired,
    TimeoutFired,
    Cancel {
        by: String,
        reason: String,
    },
}

impl Trigger {
    fn name(&self) -> &'static str {
        match self {
            Self::ActionSucceeded { .. } => "action-succeeded",
            Self::ActionFailed { .. } => "action-failed",
            Self::EventMatched { .. } => "event-matched",
            Self::TimerFired => "timer-fired",
            Self::TimeoutFired => "timeout-fired",
            Self::Cancel { .. } => "cancel",
        }
    }
}

/// Why a start or a trigger was refused. A refusal changes nothing.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MachineError {
    #[error("required input `{input}` is missing")]
    MissingInput { input: String },
    #[error("input `{input}` is invalid: {reason}")]
    InvalidInput { input: String, reason: String },
    #[error("the instance is already {status}")]
    Terminal { status: &'static str },
    #[error("the instance is already cancelled")]
    AlreadyCancelled,
    #[error("a {trigger} trigger does not fit the instance, which waits for {waiting}")]
    NotWaitingFor {
        waiting: String,
        trigger: &'static str,
    },
    #[error("the event does not match the wait")]
    NoMatch,
    #[error("not eligible before {at}")]
    NotYetEligible { at: i64 },
    #[error("the definition cannot run this instance: {reason}")]
    InvalidDefinition { reason: String },
}

impl MachineError {
    /// A stable code for tests and operators.
    #[must_use]
    pub fn code(&self) -> &'static str {
        match self {
            Self::MissingInput { .. } => "WORKFLOW_MISSING_INPUT",
            Self::InvalidInput { .. } => "WORKFLOW_INVALID_INPUT",
            Self::Terminal { .. } => "already-terminal",
            Self::AlreadyCancelled => "already-cancelled",
            Self::NotWaitingFor { .. } => "WORKFLOW_NOT_WAITING_FOR",
            Self::NoMatch => "WORKFLOW_NO_MATCH",
            Self::NotYetEligible { .. } => "WORKFLOW_NOT_YET_ELIGIBLE",
            Self::InvalidDefinition { .. } => "WORKFLOW_INVALID_DEFINITION",
        }
    }
}

/// The new state and the history entries to append, in order.
pub type Transition = (InstanceState, Vec<HistoryEntry>);

/// What the runtime needs to execute the current action attempt.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ActionRequest {
    /// `"<instanceId>/<activationId>"`: the handler's idempotency key, stable across retries.
    pub invocation_id: String,
    pub action: String,
    pub arguments: Map<String, Value>,
    pub attempt: u32,
    pub principal: String,
}

/// Starts an instance: checks inputs against the declarations, records `started`, and runs
/// from `entry` to the first blocking step. The caller stores the result atomically, with
/// any event-wait registration it contains.
///
/// # Errors
/// `MissingInput` / `InvalidInput`, or `InvalidDefinition` when `def` cannot be run.
pub fn start(
    def: &WorkflowDef,
    instance_id: &str,
    inputs: Map<String, Value>,
    principal: &str,
    now: i64,
    journal_high_water: i64,
) -> Result<Transition, MachineError> {
    let inputs = check_inputs(def, inputs)?;
    let state = InstanceState {
        instance_id: instance_id.to_string(),
        status: InstanceStatus::Running,
        current_step_id: None,
        activation_id: None,
        attempt: 0,
        waiting: None,
        next_eligible_at: None,
        inputs,
        bindings: Map::new(),
        principal: principal.to_string(),
        output: None,
        failure: None,
    };
    let mut run = Run::new(def, state, now, journal_high_water);
    run.record(HistoryKind::Started, json!({"workflowId": def.id}));
    run.enter(def.entry.clone())?;
    Ok(run.finish())
}

/// Applies one trigger. See the module docs; the rules are:
/// - a terminal instance refuses everything (`Terminal`, or `AlreadyCancelled` for a repeat
///   cancel, so cancel is idempotent for the caller);
/// - a trigger that does not fit the current wait is `NotWaitingFor`; one that arrives before
///   its instant (timer, timeout, retry backoff) is `NotYetEligible`;
/// - an event of another type, at or before `sinceEventSeq`, or whose `where` is not true
///   (or whose `bind` cannot be evaluated) is `NoMatch` — the caller skips it.
///
/// # Errors
/// As listed above, plus `InvalidDefinition` when `def` does not fit `state`.
pub fn apply(
    def: &WorkflowDef,
    state: &InstanceState,
    trigger: Trigger,
    now: i64,
    journal_high_water: i64,
) -> Result<Transition, MachineError> {
    if state.status.is_terminal() {
        return Err(match (state.status, &trigger) {
            (InstanceStatus::Cancelled, Trigger::Cancel { .. }) => MachineError::AlreadyCancelled,
            (status, _) => MachineError::Terminal {
                status: status.as_str(),
            },
        });
    }
    let mut run = Run::new(def, state.clone(), now, journal_high_water);
    let not_waiting = || MachineError::NotWaitingFor {
        waiting: state.waiting_reason().unwrap_or_default(),
        trigger: trigger.name(),
    };
    match &trigger {
        Trigger::Cancel { by, reason } => run.cancel(by, reason),
        Trigger::ActionSucceeded { output } => {
            let (step, action) = run.current_action().ok_or_else(not_waiting)?;
            run.check_eligible()?;
            run.action_succeeded(step, action, output)?;
        }
        Trigger::ActionFailed {
            retryable,
            code,
            message,
        } => {
            let (_, action) = run.current_action().ok_or_else(not_waiting)?;
            run.check_eligible()?;
            let failure = Failure {
                code: code.clone(),
                message: message.clone(),
                retryable: *retryable,
            };
            run.action_failed(action, failure)?;
        }
        Trigger::EventMatched {
            event_type,
            seq,
            payload,
        } => {
            let Some(Waiting::Event { event, .. }) = &state.waiting else {
                return Err(not_waiting());
            };
            let bound = match_event(def, state, event_type, Some(*seq), payload)?;
            let bound_ids: Vec<&String> = bound.keys().collect();
            let detail = json!({"event": event, "seq": seq, "bound": bound_ids});
            run.state.bindings.extend(bound.clone());
            run.record(HistoryKind::EventMatched, detail);
            let next = match run.current_kind() {
                Some(StepKind::WaitEvent(w)) => w.next.clone(),
                _ => return Err(mismatch(state)),
            };
            run.enter(next)?;
        }
        Trigger::TimerFired => {
            let Some(Waiting::Timer { fire_at }) = state.waiting else {
                return Err(not_waiting());
            };
            if now < fire_at {
                return Err(MachineError::NotYetEligible { at: fire_at });
            }
            let next = match run.current_kind() {
                Some(StepKind::Timer(t)) => t.next.clone(),
                _ => return Err(mismatch(state)),
            };
            run.record(HistoryKind::TimerFired, json!({"fireAt": fire_at}));
            run.enter(next)?;
        }
        Trigger::TimeoutFired => {
            let Some(Waiting::Event {
                timeout_at: Some(timeout_at),
                ..
            }) = state.waiting
            else {
                return Err(not_waiting());
            };
            if now < timeout_at {
                return Err(MachineError::NotYetEligible { at: timeout_at });
            }
            let on_timeout = match run.current_kind() {
                Some(StepKind::WaitEvent(w)) => w.on_timeout.clone(),
                _ => return Err(mismatch(state)),
            };
            run.record(
                HistoryKind::TimeoutFired,
                json!({"timeoutAt": timeout_at, "onTimeout": on_timeout}),
            );
            match on_timeout {
                Some(target) => run.enter(target)?,
                None => run.fail_instance(Failure {
                    code: TIMED_OUT.into(),
                    message: "the event wait timed out and the step has no onTimeout edge".into(),
                    retryable: false,
                }),
            }
        }
    }
    Ok(run.finish())
}

/// Whether an event of `event_type` with `payload` would move this instance (fanout: every
/// waiting instance is asked independently; an event is never consumed). The caller also
/// filters journal entries to `seq > sinceEventSeq`.
#[must_use]
pub fn event_matches(
    def: &WorkflowDef,
    state: &InstanceState,
    event_type: &str,
    payload: &Value,
) -> bool {
    !state.status.is_terminal() && match_event(def, state, event_type, None, payload).is_ok()
}

/// The request for the current action attempt, with arguments evaluated (deterministically,
/// so every authority computes the same request).
///
/// # Errors
/// `NotWaitingFor` unless the instance waits for an action; `InvalidDefinition` if `def`
/// does not fit the state.
pub fn action_request(
    def: &WorkflowDef,
    state: &InstanceState,
) -> Result<ActionRequest, MachineError> {
    let Some(Waiting::Action { invocation_id }) = &state.waiting else {
        return Err(MachineError::NotWaitingFor {
            waiting: state.waiting_reason().unwrap_or_default(),
            trigger: "action-request",
        });
    };
    let step = current_step(def, state).ok_or_else(|| mismatch(state))?;
    let StepKind::Action(action) = &step.kind else {
        return Err(mismatch(state));
    };
    let arguments = eval_arguments(action, &scope(state, None)).map_err(|e| {
        MachineError::InvalidDefinition {
            reason: format!("arguments of `{}` no longer evaluate: {e}", step.id),
        }
    })?;
    Ok(ActionRequest {
        invocation_id: invocation_id.clone(),
        action: action.action.clone(),
        arguments,
        attempt: state.attempt,
        principal: state.principal.clone(),
    })
}

/// The delay before retry number `attempt + 1`, after attempt `attempt` (1-based) failed:
/// `min(initial * multiplier^(attempt-1), max)` seconds, in milliseconds.
#[must_use]
pub fn retry_delay_ms(policy: &RetryPolicy, attempt: u32) -> i64 {
    let exponent = i32::try_from(attempt.saturating_sub(1)).unwrap_or(i32::MAX);
    let seconds = (policy.initial_delay_seconds * policy.backoff_multiplier.powi(exponent))
        .min(policy.max_delay_seconds);
    seconds_to_ms(seconds)
}

/// Saturating, total conversion (NaN becomes 0); validation rejects such values anyway.
#[allow(clippy::cast_possible_truncation)]
fn seconds_to_ms(seconds: f64) -> i64 {
    (seconds * 1000.0).round() as i64
}

fn check_inputs(
    def: &WorkflowDef,
    mut given: Map<String, Value>,
) -> Result<Map<String, Value>, MachineError> {
    if let Some(extra) = given
        .keys()
        .find(|k| !def.inputs.iter().any(|i| &i.id == *k))
    {
        return Err(MachineError::InvalidInput {
            input: extra.clone(),
            reason: "the workflow declares no such input".into(),
        });
    }
    let mut out = Map::new();
    for input in &def.inputs {
        match given.remove(&input.id) {
            Some(v) if !v.is_null() => {
                if !input.value_type.admits(&v) {
                    return Err(MachineError::InvalidInput {
                        input: input.id.clone(),
                        reason: format!("expected {:?}", input.value_type).to_lowercase(),
                    });
                }
                out.insert(input.id.clone(), v);
            }
            _ if input.required => {
                return Err(MachineError::MissingInput {
                    input: input.id.clone(),
                });
            }
            _ => {
                out.insert(input.id.clone(), Value::Null);
            }
        }
    }
    Ok(out)
}

fn current_step<'d>(def: &'d WorkflowDef, state: &InstanceState) -> Option<&'d Step> {
    state.current_step_id.as_deref().and_then(|id| def.step(id))
}

fn mismatch(state: &InstanceState) -> MachineError {
    MachineError::InvalidDefinition {
        reason: format!(
            "current step `{}` is missing or of another kind",
            state.current_step_id.as_deref().unwrap_or("")
        ),
    }
}

fn scope<'s>(state: &'s InstanceState, event: Option<&'s Value>) -> Scope<'s> {
    Scope {
        inputs: &state.inputs,
        bindings: &state.bindings,
        principal: &state.principal,
        event,
    }
}

fn eval_arguments(action: &ActionStep, scope: &Scope<'_>) -> Result<Map<String, Value>, EvalError> {
    action
        .arguments
        .iter()
        .map(|(k, e)| Ok((k.clone(), eval(e, scope)?)))
        .collect()
}

/// Matches an event against the current wait and returns the bindings it assigns.
fn match_event(
    def: &WorkflowDef,
    state: &InstanceState,
    event_type: &str,
    seq: Option<i64>,
    payload: &Value,
) -> Result<Map<String, Value>, MachineError> {
    let Some(Waiting::Event {
        event,
        since_event_seq,
        ..
    }) = &state.waiting
    else {
        return Err(MachineError::NoMatch);
    };
    if event != event_type || seq.is_some_and(|s| s <= *since_event_seq) {
        return Err(MachineError::NoMatch);
    }
    let Some(StepKind::WaitEvent(w)) = current_step(def, state).map(|s| &s.kind) else {
        return Err(mismatch(state));
    };
    let scope = scope(state, Some(payload));
    if let Some(predicate) = &w.where_
        && eval_bool(predicate, &scope) != Ok(true)
    {
        return Err(MachineError::NoMatch);
    }
    w.bind
        .iter()
        .map(|(k, e)| eval(e, &scope).map(|v| (k.clone(), v)))
        .collect::<Result<_, _>>()
        .map_err(|_| MachineError::NoMatch)
}

/// One transition in progress.
struct Run<'d> {
    def: &'d WorkflowDef,
    state: InstanceState,
    history: Vec<HistoryEntry>,
    now: i64,
    high_water: i64,
    /// Steps activated in this call; more than the step count means a cycle.
    activations: usize,
}

impl<'d> Run<'d> {
    fn new(def: &'d WorkflowDef, state: InstanceState, now: i64, high_water: i64) -> Self {
        Self {
            def,
            state,
            history: Vec::new(),
            now,
            high_water,
            activations: 0,
        }
    }

    fn finish(self) -> Transition {
        (self.state, self.history)
    }

    fn record(&mut self, kind: HistoryKind, detail: Value) {
        self.history.push(HistoryEntry {
            kind,
            at: self.now,
            step_id: self.state.current_step_id.clone(),
            activation_id: self.state.activation_id.clone(),
            detail,
        });
    }

    fn current_kind(&self) -> Option<&'d StepKind> {
        current_step(self.def, &self.state).map(|s| &s.kind)
    }

    fn current_action(&self) -> Option<(&'d Step, &'d ActionStep)> {
        if !matches!(self.state.waiting, Some(Waiting::Action { .. })) {
            return None;
        }
        let step = current_step(self.def, &self.state)?;
        match &step.kind {
            StepKind::Action(a) => Some((step, a)),
            _ => None,
        }
    }

    fn check_eligible(&self) -> Result<(), MachineError> {
        match self.state.next_eligible_at {
            Some(at) if at > self.now => Err(MachineError::NotYetEligible { at }),
            _ => Ok(()),
        }
    }

    fn settle(
        &mut self,
        status: InstanceStatus,
        waiting: Option<Waiting>,
        next_eligible_at: Option<i64>,
    ) {
        self.state.status = status;
        self.state.waiting = waiting;
        self.state.next_eligible_at = next_eligible_at;
    }

    fn cancel(&mut self, by: &str, reason: &str) {
        self.settle(InstanceStatus::Cancelled, None, None);
        self.record(HistoryKind::Cancelled, json!({"by": by, "reason": reason}));
    }

    fn fail_instance(&mut self, failure: Failure) {
        self.settle(InstanceStatus::Failed, None, None);
        let detail = json!({"code": failure.code, "message": failure.message});
        self.state.failure = Some(failure);
        self.record(HistoryKind::Failed, detail);
    }

    fn action_succeeded(
        &mut self,
        step: &Step,
        action: &ActionStep,
        output: &Value,
    ) -> Result<(), MachineError> {
        let produced: Vec<&String> = self
            .def
            .bindings
            .iter()
            .filter(|b| b.produced_by == step.id)
            .map(|b| &b.id)
            .collect();
        for id in &produced {
            self.state.bindings.insert((*id).clone(), output.clone());
        }
        self.record(
            HistoryKind::StepSucceeded,
            json!({"attempt": self.state.attempt, "bound": produced}),
        );
        self.enter(action.next.clone())
    }

    fn action_failed(&mut self, action: &ActionStep, failure: Failure) -> Result<(), MachineError> {
        let attempt = self.state.attempt;
        let retry = action
            .retry
            .as_ref()
            .filter(|p| failure.retryable && i64::from(attempt) < p.max_attempts);
        if let Some(policy) = retry {
            let delay = retry_delay_ms(policy, attempt);
            let at = self.now.saturating_add(delay);
            self.state.attempt = attempt.saturating_add(1);
            self.state.next_eligible_at = Some(at);
            let detail = json!({
                "attempt": self.state.attempt, "nextEligibleAt": at, "delayMs": delay,
                "code": failure.code, "message": failure.message,
            });
            self.record(HistoryKind::RetryScheduled, detail);
            return Ok(());
        }
        match self.step_failed(failure, action.on_error.clone()) {
            Some(target) => self.enter(target),
            None => Ok(()),
        }
    }

    /// Records `step-failed`; returns the `onError` target, or fails the instance.
    fn step_failed(&mut self, failure: Failure, on_error: Option<String>) -> Option<String> {
        let detail = json!({
            "code": failure.code, "message": failure.message,
            "retryable": failure.retryable, "attempt": self.state.attempt, "onError": on_error,
        });
        self.record(HistoryKind::StepFailed, detail);
        if on_error.is_none() {
            self.fail_instance(failure);
        }
        on_error
    }

    /// Activates `target` and keeps going through non-blocking steps.
    fn enter(&mut self, mut target: String) -> Result<(), MachineError> {
        loop {
            self.activations += 1;
            if self.activations > self.def.steps.len() {
                return Err(MachineError::InvalidDefinition {
                    reason: "control flow revisits a step (cycle)".into(),
                });
            }
            match self.activate(&target)? {
                Some(next) => target = next,
                None => return Ok(()),
            }
        }
    }

    /// Activates one step; returns the next step to activate if this one does not block.
    fn activate(&mut self, id: &str) -> Result<Option<String>, MachineError> {
        let def = self.def;
        let step = def
            .step(id)
            .ok_or_else(|| MachineError::InvalidDefinition {
                reason: format!("step `{id}` does not exist"),
            })?;
        self.state.current_step_id = Some(id.to_string());
        self.state.activation_id = Some(format!("{id}#0"));
        self.state.attempt = 0;
        self.settle(InstanceStatus::Running, None, None);
        match &step.kind {
            StepKind::Action(a) => Ok(self.activate_action(a)),
            StepKind::WaitEvent(w) => {
                let timeout_at = w
                    .timeout
                    .map(|t| self.now.saturating_add(seconds_to_ms(t.seconds)));
                let detail = json!({"type": "wait-event", "event": w.event,
                    "sinceEventSeq": self.high_water, "timeoutAt": timeout_at});
                self.record(HistoryKind::StepActivated, detail);
                let waiting = Waiting::Event {
                    event: w.event.clone(),
                    since_event_seq: self.high_water,
                    timeout_at,
                };
                self.settle(InstanceStatus::Waiting, Some(waiting), timeout_at);
                Ok(None)
            }
            StepKind::Timer(t) => self.activate_timer(id, t),
            StepKind::Branch(b) => {
                self.record(HistoryKind::StepActivated, json!({"type": "branch"}));
                match eval_bool(&b.when, &scope(&self.state, None)) {
                    Ok(taken) => {
                        let (edge, target) = if taken {
                            ("then", &b.then)
                        } else {
                            ("else", &b.else_)
                        };
                        self.record(
                            HistoryKind::BranchChosen,
                            json!({"edge": edge, "target": target}),
                        );
                        Ok(Some(target.clone()))
                    }
                    Err(e) => {
                        self.fail_instance(eval_failure(&e));
                        Ok(None)
                    }
                }
            }
            StepKind::Complete(c) => {
                self.record(HistoryKind::StepActivated, json!({"type": "complete"}));
                let output = c
                    .output
                    .as_ref()
                    .map(|e| eval(e, &scope(&self.state, None)));
                match output.transpose() {
                    Ok(output) => {
                        self.settle(InstanceStatus::Completed, None, None);
                        self.record(HistoryKind::Completed, json!({"output": output}));
                        self.state.output = output;
                    }
                    Err(e) => self.fail_instance(eval_failure(&e)),
                }
                Ok(None)
            }
            StepKind::Fail(f) => {
                self.record(HistoryKind::StepActivated, json!({"type": "fail"}));
                let error = f
                    .error
                    .as_ref()
                    .map_or(Ok(Value::Null), |e| eval(e, &scope(&self.state, None)));
                let failure = match error {
                    Ok(value) => failure_from_error(&value),
                    Err(e) => eval_failure(&e),
                };
                self.fail_instance(failure);
                Ok(None)
            }
        }
    }

    /// The action becomes runnable now. Its arguments are evaluated once here so a bad
    /// expression fails the step deterministically instead of every handler call.
    fn activate_action(&mut self, a: &ActionStep) -> Option<String> {
        let activation = self.state.activation_id.clone().unwrap_or_default();
        let invocation_id = format!("{}/{activation}", self.state.instance_id);
        self.state.attempt = 1;
        let detail = json!({"type": "action", "action": a.action, "invocationId": invocation_id, "attempt": 1});
        self.record(HistoryKind::StepActivated, detail);
        if let Err(e) = eval_arguments(a, &scope(&self.state, None)) {
            return self.step_failed(eval_failure(&e), a.on_error.clone());
        }
        let waiting = Waiting::Action { invocation_id };
        self.settle(InstanceStatus::Running, Some(waiting), Some(self.now));
        None
    }

    /// The fire instant is computed once, here, and stored.
    fn activate_timer(&mut self, id: &str, t: &TimerStep) -> Result<Option<String>, MachineError> {
        let fire_at = match (&t.after, &t.at) {
            (Some(after), None) => Ok(self.now.saturating_add(seconds_to_ms(after.seconds))),
            (None, Some(at)) => eval(at, &scope(&self.state, None)).and_then(|v| instant(&v)),
            _ => {
                return Err(MachineError::InvalidDefinition {
                    reason: format!("timer `{id}` needs exactly one of after / at"),
                });
            }
        };
        match fire_at {
            Ok(fire_at) => {
                self.record(
                    HistoryKind::StepActivated,
                    json!({"type": "timer", "fireAt": fire_at}),
                );
                self.settle(
                    InstanceStatus::Waiting,
                    Some(Waiting::Timer { fire_at }),
                    Some(fire_at),
                );
            }
            Err(e) => {
                self.record(HistoryKind::StepActivated, json!({"type": "timer"}));
                self.fail_instance(eval_failure(&e));
            }
        }
        Ok(None)
    }
}

fn eval_failure(e: &EvalError) -> Failure {
    Failure {
        code: EVALUATION_FAILED.into(),
        message: e.to_string(),
        retryable: false,
    }
}

/// A `fail` step's error value: `{code, message}` fields are used when they are strings; a
/// bare string is the message; anything else is kept as canonical JSON in the message.
fn failure_from_error(value: &Value) -> Failure {
    let field = |k: &str| value.get(k).and_then(Value::as_str).map(str::to_string);
    let message = match value {
        Value::String(s) => s.clone(),
        Value::Null => "the workflow reached a fail step".into(),
        _ => field("message").unwrap_or_else(|| super::fingerprint::canonical_json(value)),
    };
    Failure {
        code: field("code").unwrap_or_else(|| FAILED.into()),
        message,
        retryable: false,
    }
}

/// A timer `at` value: epoch milliseconds, or an RFC 3339 timestamp.
fn instant(value: &Value) -> Result<i64, EvalError> {
    let bad = || EvalError::TypeMismatch {
        op: "timer.at",
        expected: "epoch milliseconds or an RFC 3339 timestamp",
        found: value.to_string(),
    };
    match value {
        Value::Number(n) => n.as_i64().ok_or_else(bad),
        Value::String(s) => chrono::DateTime::parse_from_rfc3339(s)
            .map(|t| t.timestamp_millis())
            .map_err(|_| bad()),
        _ => Err(bad()),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
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
}
