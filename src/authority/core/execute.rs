//! The execute step, in two halves. [`AuthorityCore::prepare`] reads what a job needs (a
//! cursor's journal events after its durable position, the workflow engine's decision)
//! and either settles it at once or hands back a [`HandlerCall`]: the attempt and the
//! handler to run it. The driver runs that call its own way — the tokio runtime as a task
//! ([`HandlerCall::call`]), the simulated cluster on its own thread
//! ([`HandlerCall::run_here`]) — and gets the [`Executed`] to finish. Nothing here writes
//! except a handler's own checkpoint; recording the outcome is [`super::finish`]'s job.

use std::ops::ControlFlow;
use std::sync::Arc;

use serde_json::Value;

use super::{AuthorityCore, Exec, Executed, Job, Task};
use crate::authority::handlers::{
    Attempt, AttemptContext, AttemptKind, CheckpointWriter, HandlerOutcome, Registered,
};
use crate::clock::Millis;
use crate::error::Result;
use crate::model::ExecRecord;
use crate::model::{Subscription, WorkItem, WorkKind};
use crate::store::Keyed;
use crate::workflow::engine::{Claimed, Next, instance_resource};
use crate::workflow::machine::ActionRequest;

/// Journal events delivered per cursor attempt.
const CURSOR_BATCH: usize = 64;

/// What a job needs after [`AuthorityCore::prepare`].
pub enum Prepared {
    /// Nothing for a handler to do (an idle cursor, a workflow decision, no handler, an
    /// input that could not be read): ready to finish.
    Ready(Executed),
    /// A handler attempt to run.
    Call(HandlerCall),
}

/// One handler attempt, ready to run.
pub struct HandlerCall {
    job_id: u64,
    attempt: Attempt,
    handler: Registered,
    then: Then,
}

/// What the outcome becomes once the handler answers.
enum Then {
    Work {
        last_seq: Option<u64>,
        delivered: u64,
    },
    Action(ActionRequest),
}

impl HandlerCall {
    /// The attempt the handler will see.
    #[must_use]
    pub fn attempt(&self) -> &Attempt {
        &self.attempt
    }

    /// Runs the handler in the tokio runtime (see [`Registered::call`]). The time it took
    /// is the real time the call ran.
    pub async fn call(self) -> Executed {
        let started = std::time::Instant::now();
        let outcome = self.handler.call(self.attempt.clone()).await;
        let took = Millis::try_from(started.elapsed().as_millis()).unwrap_or(Millis::MAX);
        let mut executed = self.executed(outcome);
        executed.spent_ms = executed.spent_ms.max(took);
        executed
    }

    /// Runs the handler on the calling thread (see [`Registered::run_here`]).
    #[must_use]
    pub fn run_here(self) -> Executed {
        let outcome = self.handler.run_here(&self.attempt);
        self.executed(outcome)
    }

    fn executed(self, outcome: HandlerOutcome) -> Executed {
        let exec = match self.then {
            Then::Work {
                last_seq,
                delivered,
            } => Exec::Work {
                // A cursor moves only past a batch its handler accepted.
                advance_to: last_seq.filter(|_| matches!(outcome, HandlerOutcome::Succeeded(_))),
                outcome,
                delivered,
            },
            Then::Action(request) => Exec::WorkflowRan { request, outcome },
        };
        Executed {
            job_id: self.job_id,
            exec,
            spent_ms: self.attempt.spent(),
        }
    }
}

impl AuthorityCore {
    /// Runs a job to its [`Executed`] on the calling thread: [`Self::prepare`], then the
    /// handler, if any, through [`HandlerCall::run_here`]. What the simulated cluster does.
    #[must_use]
    pub fn execute(&self, job: &Job) -> Executed {
        match self.prepare(job) {
            Prepared::Ready(executed) => executed,
            Prepared::Call(call) => call.run_here(),
        }
    }

    /// Whether [`Self::prepare`] reads the store for `job`: a cursor reads its journal
    /// events, a workflow instance its history. An effect or a schedule firing carries all
    /// it needs in its claim, so a driver can prepare it where it stands instead of moving
    /// to a thread that may block (each such move is two context switches per item).
    #[must_use]
    pub fn prepare_reads_store(job: &Job) -> bool {
        match &job.task {
            Task::Work(item) => item.kind == WorkKind::Cursor,
            Task::Workflow(_) => true,
        }
    }

    /// Reads what `job` needs and says whether a handler must run. Writes nothing.
    #[must_use]
    pub fn prepare(&self, job: &Job) -> Prepared {
        match &job.task {
            Task::Work(item) => self.prepare_work(job, item),
            Task::Workflow(claimed) => match self.engine.next(claimed) {
                Err(e) => ready(job, Exec::Aborted(e.to_string())),
                Ok(Next::Idle) => ready(job, Exec::WorkflowIdle),
                Ok(Next::Apply(trigger)) => ready(job, Exec::WorkflowApply(trigger)),
                Ok(Next::Run(request)) => self.prepare_action(job, claimed, request),
            },
        }
    }

    /// A work item's handler call, with a cursor's next events read into its context.
    fn prepare_work(&self, job: &Job, item: &WorkItem) -> Prepared {
        let kind = match item.kind {
            WorkKind::Effect => AttemptKind::Effect,
            WorkKind::Schedule => AttemptKind::Schedule,
            WorkKind::Cursor => AttemptKind::Cursor,
        };
        let Some(handler) = self.workload.get(&item.handler) else {
            return ready(job, Exec::NoHandler(item.handler.clone()));
        };
        let payload: Value = serde_json::from_str(&item.payload)
            .unwrap_or_else(|_| Value::String(item.payload.clone()));
        let mut ctx = AttemptContext::new(
            &item.id,
            kind,
            &item.handler,
            payload,
            &item.logical_effect_id,
            &item.idempotency_key,
            item.attempt_number,
            self.id(),
            item.generation,
            self.workload.seed(),
            self.pace,
        )
        .with_lease(job.lease.watch())
        .with_checkpoint(item.checkpoint.clone())
        .with_checkpoint_writer(self.work_checkpoints(item));
        let then = if kind == AttemptKind::Cursor {
            match self.cursor_delivery(item, &mut ctx) {
                ControlFlow::Continue(then) => then,
                ControlFlow::Break(exec) => return ready(job, exec),
            }
        } else {
            Then::Work {
                last_seq: None,
                delivered: 0,
            }
        };
        self.log_exec(job, None, ExecRecord::STARTED);
        Prepared::Call(HandlerCall {
            job_id: job.id,
            attempt: Attempt::new(ctx),
            handler: handler.clone(),
            then,
        })
    }

    /// Reads a cursor item's next events into `ctx` and says what the cursor advances to
    /// once they are delivered; breaks with the outcome when no call is needed (no such
    /// subscription, nothing to deliver) or the read failed.
    fn cursor_delivery(
        &self,
        item: &WorkItem,
        ctx: &mut AttemptContext,
    ) -> ControlFlow<Exec, Then> {
        let sub_id = subscription_id(item);
        match self.cursor_events(&sub_id) {
            Err(e) => ControlFlow::Break(Exec::Aborted(e.to_string())),
            Ok(None) => ControlFlow::Break(Exec::Work {
                outcome: HandlerOutcome::terminal(
                    "NO_SUBSCRIPTION",
                    format!("subscription {sub_id} does not exist"),
                ),
                advance_to: None,
                delivered: 0,
            }),
            Ok(Some(events)) if events.is_empty() => ControlFlow::Break(Exec::CursorIdle),
            Ok(Some(events)) => {
                let then = Then::Work {
                    last_seq: events.last().map(|e| u64::try_from(e.seq).unwrap_or(0)),
                    delivered: events.len() as u64,
                };
                ctx.events = events;
                ControlFlow::Continue(then)
            }
        }
    }

    /// The handler call of the action a workflow instance runs next.
    fn prepare_action(&self, job: &Job, claimed: &Claimed, request: ActionRequest) -> Prepared {
        let Some(handler) = self.workload.get(&request.action) else {
            return ready(job, Exec::NoHandler(request.action.clone()));
        };
        let ctx = AttemptContext::new(
            instance_resource(&claimed.row.instance_id),
            AttemptKind::Action,
            &request.action,
            Value::Object(request.arguments.clone()),
            &request.invocation_id,
            &request.invocation_id,
            request.attempt,
            self.id(),
            claimed.lease.generation,
            self.workload.seed(),
            self.pace,
        )
        .with_lease(job.lease.watch())
        .with_checkpoint(claimed.lease.checkpoint.as_ref().map(|c| c.data.clone()))
        .with_checkpoint_writer(self.action_checkpoints(claimed));
        self.log_exec(job, Some(&request), ExecRecord::STARTED);
        Prepared::Call(HandlerCall {
            job_id: job.id,
            attempt: Attempt::new(ctx),
            handler: handler.clone(),
            then: Then::Action(request),
        })
    }

    /// Saves a work item's checkpoint on its row, under the claim.
    fn work_checkpoints(&self, item: &WorkItem) -> CheckpointWriter {
        let store = self.store.clone();
        let owner = self.id().to_owned();
        let (id, generation) = (item.id.clone(), item.generation);
        Arc::new(move |data: &str| {
            store
                .save_work_checkpoint(&id, &owner, generation, data)
                .map(|_| ())
        })
    }

    /// Saves a workflow action's checkpoint on its instance's lease, under the claim.
    fn action_checkpoints(&self, claimed: &Claimed) -> CheckpointWriter {
        let store = self.store.clone();
        let owner = self.id().to_owned();
        let lease = claimed.lease.clone();
        Arc::new(move |data: &str| {
            store
                .save_checkpoint(
                    &lease.resource_id,
                    &owner,
                    &lease.token,
                    lease.generation,
                    data,
                    Keyed { key: None },
                )
                .map(|_| ())
        })
    }

    pub(super) fn cursor_events(
        &self,
        sub_id: &str,
    ) -> Result<Option<Vec<crate::model::JournalEvent>>> {
        let Some(sub) = self.store.subscription(sub_id)? else {
            return Ok(None);
        };
        let after = i64::try_from(sub.sequence).unwrap_or(i64::MAX);
        Ok(Some(self.store.journal_after(
            after,
            Some(&sub.event_type),
            CURSOR_BATCH,
        )?))
    }
}

/// An outcome `job` reaches without a handler call.
fn ready(job: &Job, exec: Exec) -> Prepared {
    Prepared::Ready(Executed {
        job_id: job.id,
        exec,
        spent_ms: 0,
    })
}

/// The subscription a cursor item carries: its payload's `subscription`, else its id
/// without the `cursor:` prefix.
pub(super) fn subscription_id(item: &WorkItem) -> String {
    serde_json::from_str::<Value>(&item.payload)
        .ok()
        .and_then(|p| {
            p.get("subscription")
                .and_then(Value::as_str)
                .map(str::to_owned)
        })
        .unwrap_or_else(|| {
            item.id
                .strip_prefix(&Subscription::work_id(""))
                .unwrap_or(&item.id)
                .to_owned()
        })
}
