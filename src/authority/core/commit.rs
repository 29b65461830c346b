//! The store writes for one executed job, each under its fence: complete, fail, advance
//! a cursor, yield back; record a workflow action's outcome and apply its transition,
//! alone or as one group commit of steps. Kept apart from [`super::finish`], which
//! decides what to do with the answers.

use serde_json::Value;

use super::execute::subscription_id;
use super::finish::classify;
use super::{AuthorityCore, Exec, Executed, Finished, Job, Task};
use crate::authority::handlers::HandlerOutcome;
use crate::authority::log;
use crate::error::Result;
use crate::model::{FailureClass, InstanceRow, WorkKind};
use crate::workflow::engine::{Claimed, Step, outcome_to_trigger};
use crate::workflow::machine;

/// How long an item whose handler is not registered here waits before it is offered
/// again: long enough that an authority without the handler does not spin on it, short
/// enough that one deployed with it starts promptly.
pub(super) const NO_HANDLER_BACKOFF_MS: i64 = 5_000;

/// An action's outcome as the engine records it; `None` when it is uncertain (nothing is
/// recorded, the claim lapses).
pub(super) fn action_result(
    outcome: &HandlerOutcome,
) -> Option<std::result::Result<Value, machine::Failure>> {
    match outcome {
        HandlerOutcome::Succeeded(out) => Some(Ok(out.clone().unwrap_or(Value::Null))),
        HandlerOutcome::Failed(f) | HandlerOutcome::RetryAfter { failure: f, .. } => {
            Some(Err(machine::Failure {
                code: f.code.clone(),
                message: f.message.clone(),
                retryable: f.class == FailureClass::Retryable,
            }))
        }
        HandlerOutcome::Uncertain => None,
    }
}

/// Turns a semantic refusal into `Ok(Some(Refused))`, passing store failures up.
pub(super) fn refusal<T>(result: Result<T>) -> Result<std::result::Result<T, Finished>> {
    match result {
        Ok(v) => Ok(Ok(v)),
        Err(e) if e.is_store_failure() => Err(e),
        Err(e) => Ok(Err(Finished::Refused(e.code().to_owned()))),
    }
}

impl AuthorityCore {
    /// The store writes for one executed job. `executed` is updated as steps commit, so a
    /// deferred retry does not repeat a step that already took effect.
    pub(super) fn commit(&self, job: &Job, executed: &mut Executed) -> Result<Finished> {
        let owner = self.config.instance_id.as_str();
        let later = self.store.now() + self.config.poll_interval_ms;
        match (&job.task, &mut executed.exec) {
            (
                Task::Work(item),
                Exec::Work {
                    outcome,
                    advance_to,
                    delivered,
                },
            ) => {
                let generation = item.generation;
                match outcome {
                    HandlerOutcome::Uncertain => Ok(Finished::Abandoned("uncertain")),
                    HandlerOutcome::Failed(f) | HandlerOutcome::RetryAfter { failure: f, .. } => {
                        classify(
                            self.store.fail_with_retry(
                                &item.id,
                                owner,
                                generation,
                                f.clone(),
                                self.config
                                    .retry_for(&item.handler, outcome.retry_floor_ms()),
                            ),
                        )
                    }
                    HandlerOutcome::Succeeded(_) if item.kind == WorkKind::Cursor => {
                        if let Some(seq) = *advance_to {
                            let sub = subscription_id(item);
                            if let Err(refused) =
                                refusal(self.store.advance_cursor(&sub, owner, generation, seq))?
                            {
                                return Ok(refused);
                            }
                            *advance_to = None;
                            log::cursor_advanced(self.id(), job, seq, *delivered);
                            let mut st = self.state();
                            st.stats.cursor_advances += 1;
                            st.stats.events_delivered += *delivered;
                        }
                        // Keep the claim: more may be waiting, and the generation must
                        // not move while the ownership does not.
                        Ok(Finished::Held)
                    }
                    HandlerOutcome::Succeeded(out) => classify(self.store.complete(
                        &item.id,
                        owner,
                        generation,
                        out.as_ref().map(Value::to_string),
                    )),
                }
            }
            (Task::Work(item), Exec::CursorIdle | Exec::Aborted(_))
                if item.kind == WorkKind::Cursor =>
            {
                Ok(Finished::Held)
            }
            (Task::Work(item), Exec::NoHandler(_)) => classify(self.store.yield_back(
                &item.id,
                owner,
                item.generation,
                self.store.now() + NO_HANDLER_BACKOFF_MS,
            )),
            (Task::Work(item), Exec::CursorIdle | Exec::Aborted(_)) => classify(
                self.store
                    .yield_back(&item.id, owner, item.generation, later),
            ),
            (Task::Workflow(claimed), exec) => self.commit_workflow(claimed, exec),
            (Task::Work(_), _) => Ok(Finished::Abandoned("not-owned")),
        }
    }

    pub(super) fn commit_workflow(&self, claimed: &Claimed, exec: &mut Exec) -> Result<Finished> {
        let applied = match exec {
            Exec::WorkflowIdle | Exec::Aborted(_) | Exec::NoHandler(_) => {
                // An action nobody here can run waits for an authority that can.
                let not_before = matches!(exec, Exec::NoHandler(_))
                    .then(|| self.store.now() + NO_HANDLER_BACKOFF_MS);
                return Ok(
                    match refusal(self.engine.release_until(claimed, not_before))? {
                        Ok(()) => Finished::Released,
                        Err(refused) => refused,
                    },
                );
            }
            Exec::WorkflowApply(trigger) => self.engine.apply(claimed, trigger.clone()),
            Exec::WorkflowRan { request, outcome } => {
                let Some(result) = action_result(outcome) else {
                    return Ok(Finished::Abandoned("uncertain"));
                };
                if let Err(refused) =
                    refusal(self.engine.record_outcome(claimed, request, &result))?
                {
                    return Ok(refused);
                }
                self.engine.apply(claimed, outcome_to_trigger(&result))
            }
            Exec::Work { .. } | Exec::CursorIdle => return Ok(Finished::Abandoned("not-owned")),
        };
        self.after_transition(claimed, applied)
    }

    /// What a transition's answer means for the job.
    pub(super) fn after_transition(
        &self,
        claimed: &Claimed,
        applied: Result<InstanceRow>,
    ) -> Result<Finished> {
        match refusal(applied)? {
            Ok(_) => Ok(Finished::Transitioned),
            Err(refused) => {
                // A refusal other than the fence (a trigger that no longer fits, a cancelled
                // instance) leaves the lease ours: give it back rather than wait it out.
                if refused != Finished::Refused("WORK_FENCED".into()) {
                    let _ = self.engine.release(claimed);
                }
                Ok(refused)
            }
        }
    }

    /// Group commit of workflow steps ([`Engine::finish_steps`]): every transition of the
    /// batch, with its outcome record, in one transaction, each fenced on its own.
    pub(super) fn commit_workflow_steps(
        &self,
        grouped: Vec<(usize, Job, Executed)>,
        answers: &mut [Option<Finished>],
    ) {
        let results: Vec<Option<std::result::Result<Value, machine::Failure>>> = grouped
            .iter()
            .map(|(_, _, executed)| match &executed.exec {
                Exec::WorkflowRan { outcome, .. } => action_result(outcome),
                _ => None,
            })
            .collect();
        // Each entry keeps its place in `grouped`, so answers go back to the right job.
        let steps: Vec<(usize, &Claimed, Step<'_>)> = grouped
            .iter()
            .zip(&results)
            .enumerate()
            .filter_map(|(at, ((_, job, executed), result))| {
                let Task::Workflow(claimed) = &job.task else {
                    return None;
                };
                let step = match (&executed.exec, result) {
                    (Exec::WorkflowApply(trigger), _) => Step::Apply(trigger.clone()),
                    (Exec::WorkflowRan { request, .. }, Some(outcome)) => {
                        Step::Ran { request, outcome }
                    }
                    _ => return None,
                };
                Some((at, claimed.as_ref(), step))
            })
            .collect();
        let places: Vec<usize> = steps.iter().map(|(at, _, _)| *at).collect();
        let entries: Vec<(&Claimed, Step<'_>)> =
            steps.into_iter().map(|(_, c, step)| (c, step)).collect();
        let committed = self.engine.finish_steps(&entries);
        drop(entries);
        let applied: Vec<Option<Result<InstanceRow>>> = match committed {
            Ok(applied) => {
                let mut by_place = vec![None; grouped.len()];
                for (at, answer) in places.into_iter().zip(applied) {
                    by_place[at] = Some(answer);
                }
                by_place
            }
            Err(e) => vec![Some(Err(e)); grouped.len()],
        };
        for ((i, job, executed), applied) in grouped.into_iter().zip(applied) {
            // A store failure passes through `after_transition` and defers the outcome.
            let result = match (&job.task, applied) {
                (Task::Workflow(claimed), Some(answer)) => self.after_transition(claimed, answer),
                // Not a step after all: finish it on its own.
                _ => {
                    answers[i] = Some(self.finish(executed));
                    continue;
                }
            };
            answers[i] = Some(self.settle(&job, executed, result));
        }
    }
}
