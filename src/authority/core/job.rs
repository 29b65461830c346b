//! What passes between the steps: a claimed [`Job`] and its [`Task`], what executing it
//! produced ([`Exec`], [`Executed`]), how finishing it ended ([`Finished`]) and what a
//! renewal round did ([`Renewed`]). Kept apart because every driver (the runtime, the
//! simulated cluster) speaks in these types, not in the core's internals.

use std::sync::Arc;

use super::super::handlers::{HandlerOutcome, LeaseSignal};
use crate::clock::Millis;
use crate::model::WorkItem;
use crate::workflow::engine::{Claimed, instance_resource};
use crate::workflow::machine::{ActionRequest, Trigger};

/// What a job works on. Shared, not boxed: the core keeps a job while its handler runs
/// with another, and a copy of the whole claim per step would cost allocations per item.
#[derive(Debug, Clone)]
pub enum Task {
    /// A claimed work item (effect, schedule firing, cursor).
    Work(Arc<WorkItem>),
    /// A workflow instance whose lease this authority holds.
    Workflow(Arc<Claimed>),
}

/// One claimed unit of work, owned until it is finished, lost or released.
#[derive(Debug, Clone)]
pub struct Job {
    /// Local id, unique per core.
    pub id: u64,
    pub task: Task,
    pub claimed_at: Millis,
    /// Raised when the core learns the claim is gone; the handler's attempt watches it.
    pub lease: LeaseSignal,
}

impl Job {
    /// The fenced resource: the work item id, or `wf:<instanceId>`.
    #[must_use]
    pub fn resource(&self) -> String {
        match &self.task {
            Task::Work(item) => item.id.clone(),
            Task::Workflow(c) => instance_resource(&c.row.instance_id),
        }
    }

    /// The generation this job holds.
    #[must_use]
    pub fn generation(&self) -> u64 {
        match &self.task {
            Task::Work(item) => item.generation,
            Task::Workflow(c) => c.lease.generation,
        }
    }

    /// `effect`, `schedule`, `cursor` or `workflow`.
    #[must_use]
    pub fn kind(&self) -> &'static str {
        match &self.task {
            Task::Work(item) => item.kind.as_str(),
            Task::Workflow(_) => "workflow",
        }
    }
}

/// What executing a job produced, before it is recorded.
#[derive(Debug, Clone)]
pub enum Exec {
    /// A work item's handler ran. For a cursor, `advance_to` is the journal seq to move
    /// the cursor to (set while the advance is still to be written).
    Work {
        outcome: HandlerOutcome,
        advance_to: Option<u64>,
        delivered: u64,
    },
    /// A cursor with nothing new to deliver: hand it back for a later look.
    CursorIdle,
    /// A workflow instance with nothing due.
    WorkflowIdle,
    /// A workflow trigger to apply (recorded outcome, timer, matched event, timeout).
    WorkflowApply(Trigger),
    /// A workflow action ran.
    WorkflowRan {
        request: ActionRequest,
        outcome: HandlerOutcome,
    },
    /// The attempt could not start (a store failure reading its input): hand it back.
    Aborted(String),
    /// No handler of that name is registered here: hand the item back untouched (no
    /// attempt counted) for an authority that has one, and say so.
    NoHandler(String),
}

/// A job's execution result and the time it took.
#[derive(Debug, Clone)]
pub struct Executed {
    pub job_id: u64,
    pub exec: Exec,
    /// Time the handler spent ([`crate::authority::handlers::AttemptContext::spend`]): virtual latency in the cluster.
    pub spent_ms: Millis,
}

/// How finishing a job ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Finished {
    Completed,
    RetryScheduled,
    Failed,
    /// An item handed back to pending (a cursor only at shutdown: it is otherwise held).
    Yielded,
    /// A cursor kept: still claimed and renewed, looked at again on a later poll. Its
    /// generation moves only when its ownership does.
    Held,
    /// A workflow transition committed.
    Transitioned,
    /// A workflow instance lease given back with nothing due.
    Released,
    /// The store refused the write; the code says why (`WORK_FENCED`, …).
    Refused(String),
    /// Nothing was written: `uncertain` (the attempt's outcome is unknown), `lost` (the
    /// claim was taken over), `not-owned` (already released or finished).
    Abandoned(&'static str),
    /// A store failure: the outcome is kept and [`super::AuthorityCore::flush`] retries it.
    Deferred(String),
}

/// Renewal results.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Renewed {
    pub renewed: usize,
    pub lost: usize,
    pub failed: usize,
}
