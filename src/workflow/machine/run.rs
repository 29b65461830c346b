//! One transition in progress: the interpreter that runs an instance forward through every
//! step it can take without waiting, recording history as it goes.

use serde_json::{Value, json};

use super::{
    EVALUATION_FAILED, FAILED, Failure, HistoryEntry, HistoryKind, InstanceState, InstanceStatus,
    MachineError, Transition, Waiting, current_step, eval_arguments, retry_delay_ms, scope,
    seconds_to_ms,
};
use crate::workflow::def::{ActionStep, Step, StepKind, TimerStep, WorkflowDef};
use crate::workflow::expr::{EvalError, eval, eval_bool};

/// One transition in progress.
pub(super) struct Run<'d> {
    def: &'d WorkflowDef,
    pub(super) state: InstanceState,
    history: Vec<HistoryEntry>,
    now: i64,
    high_water: i64,
    /// Steps activated in this call; more than the step count means a cycle.
    activations: usize,
}

impl<'d> Run<'d> {
    pub(super) fn new(
        def: &'d WorkflowDef,
        state: InstanceState,
        now: i64,
        high_water: i64,
    ) -> Self {
        Self {
            def,
            state,
            history: Vec::new(),
            now,
            high_water,
            activations: 0,
        }
    }

    pub(super) fn finish(self) -> Transition {
        (self.state, self.history)
    }

    pub(super) fn record(&mut self, kind: HistoryKind, detail: Value) {
        self.history.push(HistoryEntry {
            kind,
            at: self.now,
            step_id: self.state.current_step_id.clone(),
            activation_id: self.state.activation_id.clone(),
            detail,
        });
    }

    pub(super) fn current_kind(&self) -> Option<&'d StepKind> {
        current_step(self.def, &self.state).map(|s| &s.kind)
    }

    pub(super) fn current_action(&self) -> Option<(&'d Step, &'d ActionStep)> {
        if !matches!(self.state.waiting, Some(Waiting::Action { .. })) {
            return None;
        }
        let step = current_step(self.def, &self.state)?;
        match &step.kind {
            StepKind::Action(a) => Some((step, a)),
            _ => None,
        }
    }

    pub(super) fn check_eligible(&self) -> Result<(), MachineError> {
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

    pub(super) fn cancel(&mut self, by: &str, reason: &str) {
        self.settle(InstanceStatus::Cancelled, None, None);
        self.record(HistoryKind::Cancelled, json!({"by": by, "reason": reason}));
    }

    pub(super) fn fail_instance(&mut self, failure: Failure) {
        self.settle(InstanceStatus::Failed, None, None);
        let detail = json!({"code": failure.code, "message": failure.message});
        self.state.failure = Some(failure);
        self.record(HistoryKind::Failed, detail);
    }

    pub(super) fn action_succeeded(
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

    pub(super) fn action_failed(
        &mut self,
        action: &ActionStep,
        failure: Failure,
    ) -> Result<(), MachineError> {
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
    pub(super) fn enter(&mut self, mut target: String) -> Result<(), MachineError> {
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
        _ => {
            field("message").unwrap_or_else(|| crate::workflow::fingerprint::canonical_json(value))
        }
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
