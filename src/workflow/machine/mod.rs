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
//!
//! Here: the entry points and the helpers they share; `run.rs`: that run forward;
//! `types.rs`: the machine's vocabulary.

mod run;
mod types;

pub use types::*;

use run::Run;

use serde_json::{Map, Value, json};

use super::def::{ActionStep, RetryPolicy, Step, StepKind, WorkflowDef};
use super::expr::{EvalError, Scope, eval, eval_bool};

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

#[cfg(test)]
mod tests;
