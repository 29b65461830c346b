//! The execute step: run a job's handler (a cursor with the journal events after its
//! durable position) or the workflow engine's decision. It writes nothing, so a driver
//! may run it on any thread; recording the outcome is [`super::finish`]'s job.

use serde_json::Value;

use super::{AuthorityCore, Exec, Executed, Job, Task};
use crate::authority::handlers::{AttemptContext, AttemptKind, HandlerOutcome};
use crate::error::Result;
use crate::model::{Subscription, WorkItem, WorkKind};
use crate::workflow::engine::Next;

/// Journal events delivered per cursor attempt.
const CURSOR_BATCH: usize = 64;

impl AuthorityCore {
    /// Runs a job: the handler for a work item (for a cursor, with the journal events
    /// after the durable cursor), or the workflow engine's decision and, when an action is
    /// due, its handler. Writes nothing; safe to call on a worker thread.
    #[must_use]
    pub fn execute(&self, job: &Job) -> Executed {
        let owner = &self.config.instance_id;
        let seed = self.workload.seed();
        let (exec, spent_ms) = match &job.task {
            Task::Work(item) => {
                let payload: Value = serde_json::from_str(&item.payload)
                    .unwrap_or_else(|_| Value::String(item.payload.clone()));
                let kind = match item.kind {
                    WorkKind::Effect => AttemptKind::Effect,
                    WorkKind::Schedule => AttemptKind::Schedule,
                    WorkKind::Cursor => AttemptKind::Cursor,
                };
                let mut ctx = AttemptContext::new(
                    &item.id,
                    kind,
                    &item.handler,
                    payload,
                    &item.logical_effect_id,
                    &item.idempotency_key,
                    item.attempt_number,
                    owner,
                    item.generation,
                    seed,
                    self.pace,
                );
                if kind == AttemptKind::Cursor {
                    let sub_id = subscription_id(item);
                    match self.cursor_events(&sub_id) {
                        Err(e) => (Exec::Aborted(e.to_string()), 0),
                        Ok(None) => (
                            Exec::Work {
                                outcome: HandlerOutcome::terminal(
                                    "NO_SUBSCRIPTION",
                                    format!("subscription {sub_id} does not exist"),
                                ),
                                advance_to: None,
                                delivered: 0,
                            },
                            0,
                        ),
                        Ok(Some(events)) if events.is_empty() => (Exec::CursorIdle, 0),
                        Ok(Some(events)) => {
                            let last = events
                                .last()
                                .map_or(0, |e| u64::try_from(e.seq).unwrap_or(0));
                            let delivered = events.len() as u64;
                            ctx.events = events;
                            let outcome = self.workload.run(&ctx);
                            let advance_to =
                                matches!(outcome, HandlerOutcome::Succeeded(_)).then_some(last);
                            (
                                Exec::Work {
                                    outcome,
                                    advance_to,
                                    delivered,
                                },
                                ctx.spent(),
                            )
                        }
                    }
                } else {
                    let outcome = self.workload.run(&ctx);
                    (
                        Exec::Work {
                            outcome,
                            advance_to: None,
                            delivered: 0,
                        },
                        ctx.spent(),
                    )
                }
            }
            Task::Workflow(claimed) => match self.engine.next(claimed) {
                Err(e) => (Exec::Aborted(e.to_string()), 0),
                Ok(Next::Idle) => (Exec::WorkflowIdle, 0),
                Ok(Next::Apply(trigger)) => (Exec::WorkflowApply(trigger), 0),
                Ok(Next::Run(request)) => {
                    let ctx = AttemptContext::new(
                        format!("wf:{}", claimed.row.instance_id),
                        AttemptKind::Action,
                        &request.action,
                        Value::Object(request.arguments.clone()),
                        &request.invocation_id,
                        &request.invocation_id,
                        request.attempt,
                        owner,
                        claimed.lease.generation,
                        seed,
                        self.pace,
                    );
                    let outcome = self.workload.run(&ctx);
                    (Exec::WorkflowRan { request, outcome }, ctx.spent())
                }
            },
        };
        Executed {
            job_id: job.id,
            exec,
            spent_ms,
        }
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
