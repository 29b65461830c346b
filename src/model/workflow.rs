//! How workflow definitions and instances are stored. The instance's full machine state is
//! JSON (`state`); the columns beside it are what lists filter and sort on.

use serde::{Deserialize, Serialize};

use crate::clock::Millis;
use crate::model::vocab::vocabulary;

vocabulary! {
    /// An instance's lifecycle status. `running` means an action is (or, after a retry
    /// backoff, will be) executable; `waiting` means an event or a timer.
    pub enum InstanceStatus("workflow instance status") {
        Running = "running",
        Waiting = "waiting",
        Completed = "completed",
        Failed = "failed",
        Cancelled = "cancelled",
    }
}

impl InstanceStatus {
    /// Terminal statuses are durable and irreversible.
    #[must_use]
    pub fn is_terminal(self) -> bool {
        matches!(self, Self::Completed | Self::Failed | Self::Cancelled)
    }
}

/// A deployed definition.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkflowDefinitionRow {
    pub workflow_id: String,
    /// Semantic fingerprint of the definition.
    pub fingerprint: String,
    /// The definition JSON text as deployed.
    pub definition: String,
    pub deployed_at: Millis,
}

/// A workflow instance row.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InstanceRow {
    pub instance_id: String,
    pub workflow_id: String,
    pub status: InstanceStatus,
    pub compat: String,
    pub instance_revision: u64,
    /// When the instance next needs an authority (action due, retry due, timer, timeout).
    pub next_eligible_at: Option<Millis>,
    /// For event waits: the event type it waits for (indexed, for fanout matching).
    pub waiting_event: Option<String>,
    pub principal: String,
    /// `(workflowId, principal, idempotencyKey, compat)` joined; unique when set.
    pub start_key: Option<String>,
    /// The machine state, JSON text.
    pub state: String,
    pub created_at: Millis,
    pub updated_at: Millis,
}

/// One durable transition-log entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HistoryRecord {
    pub instance_id: String,
    /// Position in this instance's log, from 1.
    pub position: u64,
    /// The instance revision this entry's transition produced.
    pub instance_revision: u64,
    pub kind: String,
    pub at: Millis,
    pub step_id: Option<String>,
    pub activation_id: Option<String>,
    /// JSON text.
    pub detail: String,
}

/// The durable outcome of one action invocation (`"<instanceId>/<activationId>"`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ActionOutcome {
    pub invocation_id: String,
    pub attempt: u32,
    /// `succeeded` or `failed`.
    pub outcome: String,
    /// Output or failure, JSON text.
    pub detail: String,
    pub at: Millis,
}
