//! The workflow machine's vocabulary: instance status and state, history kinds, triggers,
//! the machine's errors and the action request it hands the runtime. Plain data; the
//! transitions over it are in the parent module.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Failure code when an expression cannot be evaluated at run time.
pub const EVALUATION_FAILED: &str = "WORKFLOW_EVALUATION_FAILED";
/// Failure code when a wait-event times out with no `onTimeout` edge.
pub const TIMED_OUT: &str = "WORKFLOW_TIMEOUT";
/// Failure code of a `fail` step whose `error` carries no string `code`.
pub const FAILED: &str = "WORKFLOW_FAILED";

pub use crate::model::workflow::InstanceStatus;

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

/// The history kinds every engine writes, exactly (docs/ARCHITECTURE.md#workflows).
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
    pub(super) fn name(&self) -> &'static str {
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
