//! The finish step: route executed jobs (one group commit for plain completions, one for
//! workflow steps, the rest one by one), then settle each answer: drop or defer the job,
//! count it, log it. A refusal is final and counted; a store failure defers the outcome
//! to [`AuthorityCore::flush`]; a lost job's outcome is dropped.

use std::borrow::Borrow;

use serde_json::Value;

use super::poll::Finishing;
use super::{AuthorityCore, Exec, Executed, Finished, Job, Task};
use crate::authority::handlers::HandlerOutcome;
use crate::authority::readback::{self, ReadBack};
use crate::authority::stats::Stats;
use crate::authority::{fencing, log};
use crate::error::{Error, Result};
use crate::model::ExecRecord;
use crate::model::{FailureClass, Recovering, WorkItem, WorkKind, WorkState};
use crate::rules::work::may_have_acted;
use crate::store::Completion;
use crate::workflow::machine::ActionRequest;

/// What a fenced write's answer (the item as written, owned or shared) means for its job.
pub(super) fn classify(result: Result<impl Borrow<WorkItem>>) -> Result<Finished> {
    match result {
        Ok(item) => Ok(match item.borrow().state {
            WorkState::Succeeded => Finished::Completed,
            WorkState::Retry => Finished::RetryScheduled,
            WorkState::Failed => Finished::Failed,
            WorkState::Pending | WorkState::Claimed => Finished::Yielded,
        }),
        Err(e) if e.is_store_failure() => Err(e),
        Err(e) => Ok(Finished::Refused(e.code().to_owned())),
    }
}

impl AuthorityCore {
    /// Records a job's outcome under its fence: complete / fail (durable retry) / cursor
    /// advance + yield / workflow outcome record + transition. A refusal is counted
    /// (`fenced_writes_refused` for `WORK_FENCED`) and final; a store failure defers the
    /// outcome to [`Self::flush`]; a lost job's outcome is dropped.
    pub fn finish(&self, executed: Executed) -> Finished {
        let job = {
            let mut st = self.state();
            match st.inflight.get(&executed.job_id) {
                None => return Finished::Abandoned("not-owned"),
                Some(f) if f.lost => {
                    let job = f.job.clone();
                    st.inflight.remove(&executed.job_id);
                    drop(st);
                    self.log_attempt(&job, &executed, "lost");
                    let lost = Finished::Abandoned("lost");
                    log::finished(self.id(), &job, &executed, &lost, None);
                    return lost;
                }
                Some(f) => f.job.clone(),
            }
        };
        let mut executed = executed;
        let result = self.commit(&job, &mut executed);
        self.settle(&job, executed, result)
    }

    /// Finishes many jobs; plain effect and schedule completions / failures go to the store
    /// in one group commit ([`crate::Store::complete_batch`]), each still fenced on its own.
    pub fn finish_all(&self, batch: Vec<Executed>) -> Vec<Finished> {
        let mut answers: Vec<Option<Finished>> = vec![None; batch.len()];
        let routed = self.route(batch);
        if !routed.grouped.is_empty() {
            let completions = self.completions(&routed.grouped);
            let results = self.store.complete_batch(&completions);
            self.settle_grouped(routed.grouped, results, &mut answers);
        }
        self.finish_one_by_one(routed.steps, routed.single, &mut answers);
        answered(answers)
    }

    /// [`Self::finish_all`], then [`Self::poll`], with the group commit and the claims in one
    /// transaction: an authority that has just finished a batch fills its slots again at
    /// the cost of one commit, not two. A store failure defers the batch's plain outcomes
    /// and claims nothing.
    ///
    /// # Errors
    /// The claims' store failure (the outcomes are answered either way).
    pub fn finish_all_and_poll(&self, batch: Vec<Executed>) -> (Vec<Finished>, Result<Vec<Job>>) {
        let mut answers: Vec<Option<Finished>> = vec![None; batch.len()];
        let routed = self.route(batch);
        // Workflow steps and single outcomes first: their slots are free for the claims too.
        self.finish_one_by_one(routed.steps, routed.single, &mut answers);
        let finishing = Finishing {
            job_ids: routed.grouped.iter().map(|(_, job, _)| job.id).collect(),
            completions: self.completions(&routed.grouped),
        };
        let polled = self.poll_inner(&finishing);
        self.note_store_error(&polled);
        let (results, jobs) = match polled {
            Ok(polled) => (Ok(polled.completed), Ok(polled.jobs)),
            Err(e) => (Err(e.clone()), Err(e)),
        };
        self.settle_grouped(routed.grouped, results, &mut answers);
        (answered(answers), jobs)
    }

    /// Sorts a batch: plain effect / schedule outcomes go to one group commit, workflow
    /// steps to another; everything else (cursors, releases, lost jobs) one by one.
    fn route(&self, batch: Vec<Executed>) -> Routed {
        let mut routed = Routed {
            grouped: Vec::with_capacity(batch.len()),
            steps: Vec::new(),
            single: Vec::new(),
        };
        let st = self.state();
        for (i, executed) in batch.into_iter().enumerate() {
            let route = match st.inflight.get(&executed.job_id) {
                Some(f) if !f.lost => match (&f.job.task, &executed.exec) {
                    (
                        Task::Work(item),
                        Exec::Work {
                            outcome:
                                HandlerOutcome::Succeeded(_)
                                | HandlerOutcome::Failed(_)
                                | HandlerOutcome::RetryAfter { .. },
                            advance_to: None,
                            ..
                        },
                    ) if item.kind != WorkKind::Cursor => {
                        Some((&mut routed.grouped, f.job.clone()))
                    }
                    (
                        Task::Workflow(_),
                        Exec::WorkflowApply(_)
                        | Exec::WorkflowRan {
                            outcome:
                                HandlerOutcome::Succeeded(_)
                                | HandlerOutcome::Failed(_)
                                | HandlerOutcome::RetryAfter { .. },
                            ..
                        },
                    ) => Some((&mut routed.steps, f.job.clone())),
                    _ => None,
                },
                _ => None,
            };
            match route {
                Some((group, job)) => group.push((i, job, executed)),
                None => routed.single.push((i, executed)),
            }
        }
        routed
    }

    /// The fenced completion (or failure) each plain outcome asks the store for.
    fn completions(&self, grouped: &[(usize, Job, Executed)]) -> Vec<Completion> {
        grouped
            .iter()
            .map(|(_, job, executed)| {
                let (outcome, floor_ms) = match &executed.exec {
                    Exec::Work { outcome, .. } => (
                        match (outcome, outcome.failure()) {
                            (_, Some(f)) => Err(f.clone()),
                            (HandlerOutcome::Succeeded(out), _) => {
                                Ok(out.as_ref().map(Value::to_string))
                            }
                            _ => Ok(None),
                        },
                        outcome.retry_floor_ms(),
                    ),
                    _ => (Ok(None), 0),
                };
                Completion {
                    id: job.resource(),
                    owner: self.config.instance_id.clone(),
                    generation: job.generation(),
                    outcome,
                    // Only plain work items are grouped: a workflow has no handler policy.
                    retry: match &job.task {
                        Task::Work(item) => self.config.retry_for(&item.handler, floor_ms),
                        Task::Workflow(_) => crate::rules::retry::Retry::with_floor(floor_ms),
                    },
                }
            })
            .collect()
    }

    /// Settles each plain outcome with its answer from the group commit (or the commit's
    /// failure).
    fn settle_grouped(
        &self,
        grouped: Vec<(usize, Job, Executed)>,
        results: Result<Vec<Result<impl Borrow<WorkItem>>>>,
        answers: &mut [Option<Finished>],
    ) {
        match results {
            Ok(results) => {
                for ((i, job, executed), result) in grouped.into_iter().zip(results) {
                    answers[i] = Some(self.settle(&job, executed, classify(result)));
                }
            }
            Err(e) => {
                for (i, job, executed) in grouped {
                    answers[i] = Some(self.settle(&job, executed, Err(e.clone())));
                }
            }
        }
    }

    /// Commits the workflow steps together, then every other outcome on its own.
    fn finish_one_by_one(
        &self,
        steps: Vec<(usize, Job, Executed)>,
        single: Vec<(usize, Executed)>,
        answers: &mut [Option<Finished>],
    ) {
        if !steps.is_empty() {
            self.commit_workflow_steps(steps, answers);
        }
        for (i, executed) in single {
            answers[i] = Some(self.finish(executed));
        }
    }

    /// Applies a commit result: removes the job (or keeps it deferred), counts, logs.
    pub(super) fn settle(
        &self,
        job: &Job,
        executed: Executed,
        result: Result<Finished>,
    ) -> Finished {
        let result = match result {
            Err(Error::OutcomeUnknown(_)) => {
                let owner = self.config.instance_id.as_str();
                match readback::read_back(&self.store, owner, job, &executed.exec) {
                    ReadBack::Done(finished) => Ok(finished),
                    ReadBack::Resubmit => result,
                    ReadBack::Recovery(why) => return self.hold_in_recovery(job, executed, why),
                }
            }
            other => other,
        };
        let finished = match result {
            Err(e) if e.is_store_failure() => {
                let mut st = self.state();
                st.stats.store_errors += 1;
                let deferred = Finished::Deferred(e.to_string());
                log::finished(self.id(), job, &executed, &deferred, None);
                if let Some(f) = st.inflight.get_mut(&job.id) {
                    f.deferred = Some(executed);
                    f.recovery = None;
                }
                return deferred;
            }
            Err(e) => Finished::Refused(e.code().to_owned()),
            Ok(finished) => finished,
        };
        let fenced = match &finished {
            Finished::Refused(code) => fencing::fenced(&self.store, job, code),
            _ => None,
        };
        log::finished(self.id(), job, &executed, &finished, fenced);
        self.account(job, &executed, &finished, fenced.is_some());
        self.log_settled(job, &executed, &finished);
        finished
    }

    /// Drops the settled job, or keeps a held cursor for its next look, and counts the
    /// outcome: finish latency, the handler's time, the outcome's counter.
    fn account(&self, job: &Job, executed: &Executed, finished: &Finished, fenced: bool) {
        let finished_at = self.store.now();
        let mut st = self.state();
        if *finished == Finished::Held {
            // A cursor that delivered may have more waiting; an idle one looks again
            // after a poll interval.
            let look_at = match &executed.exec {
                Exec::Work { .. } => finished_at,
                _ => finished_at + self.config.poll_interval_ms,
            };
            if let Some(f) = st.inflight.get_mut(&job.id) {
                f.held = true;
                f.look_at = look_at;
            }
        } else {
            st.inflight.remove(&job.id);
        }
        let s = &mut st.stats;
        if matches!(
            finished,
            Finished::Completed
                | Finished::RetryScheduled
                | Finished::Failed
                | Finished::Transitioned
        ) {
            s.finish_latency_ms.record(finished_at - job.claimed_at);
        }
        record_handler_time(s, job, executed);
        count_for_handler(s, job, executed, finished);
        count_outcome(s, executed, finished, fenced);
    }

    /// Logs the settled attempt with its word: the refusal's code, else the handler's
    /// outcome; an outcome without either (a decision, an idle cursor) is not logged.
    fn log_settled(&self, job: &Job, executed: &Executed, finished: &Finished) {
        let word = match (finished, &executed.exec) {
            (Finished::Refused(code), _) => Some(code.clone()),
            (_, Exec::Work { outcome, .. } | Exec::WorkflowRan { outcome, .. }) => {
                Some(outcome.label().to_owned())
            }
            _ => None,
        };
        if let Some(word) = word {
            self.log_attempt(job, executed, &word);
        }
    }

    pub(super) fn log_attempt(&self, job: &Job, executed: &Executed, outcome: &str) {
        let request = match &executed.exec {
            Exec::WorkflowRan { request, .. } => Some(request),
            _ => None,
        };
        self.log_exec(job, request, outcome);
    }

    /// Appends one execution-log line for `job`'s attempt (a workflow's only when an
    /// action runs: `request`).
    pub(super) fn log_exec(&self, job: &Job, request: Option<&ActionRequest>, outcome: &str) {
        let Some(log) = &self.exec_log else { return };
        let (logical, key, attempt) = match (&job.task, request) {
            (Task::Work(item), _) => (
                item.logical_effect_id.clone(),
                item.idempotency_key.clone(),
                item.attempt_number,
            ),
            (Task::Workflow(_), Some(request)) => (
                request.invocation_id.clone(),
                request.invocation_id.clone(),
                request.attempt,
            ),
            (Task::Workflow(_), None) => return,
        };
        let record = ExecRecord {
            work_id: job.resource(),
            logical_effect_id: logical,
            idempotency_key: key,
            attempt,
            owner_id: self.config.instance_id.clone(),
            generation: job.generation(),
            outcome: outcome.to_owned(),
            at: self.store.now(),
        };
        // The log is diagnostics: a failed line must not fail the attempt it describes.
        let _ = log.append(&record);
    }

    /// Keeps a job whose outcome nobody can yet say committed: not run again, not
    /// written again, its claim kept, until a later read-back ([`Self::flush`]) decides.
    fn hold_in_recovery(&self, job: &Job, executed: Executed, why: String) -> Finished {
        let held = Finished::Deferred(why.clone());
        log::finished(self.id(), job, &executed, &held, None);
        let now = self.store.now();
        let mut st = self.state();
        let st = &mut *st;
        st.stats.store_errors += 1;
        if let Some(f) = st.inflight.get_mut(&job.id) {
            let since = match &f.recovery {
                Some(held) => held.since,
                None => {
                    st.stats.recovery_required += 1;
                    now
                }
            };
            f.recovery = Some(Recovering {
                resource_id: job.resource(),
                kind: job.kind().to_owned(),
                generation: job.generation(),
                why,
                since,
            });
            f.deferred = Some(executed);
        }
        held
    }

    /// Retries outcomes a store failure deferred — together, as [`Self::finish_all`] does a
    /// fresh batch (one group commit for the plain ones) — and reads back again those held in
    /// recovery (never resubmitting them blind); drops lost ones. Answers in the order the
    /// jobs were claimed.
    pub fn flush(&self) -> Vec<Finished> {
        let deferred: Vec<(Executed, Option<Job>)> = {
            let mut st = self.state();
            st.inflight
                .values_mut()
                .filter_map(|f| {
                    let recovering = f.recovery.is_some().then(|| f.job.clone());
                    f.deferred.take().map(|e| (e, recovering))
                })
                .collect()
        };
        let mut answers: Vec<Option<Finished>> = vec![None; deferred.len()];
        let mut places = Vec::new();
        let mut retried = Vec::new();
        for (at, (executed, recovering)) in deferred.into_iter().enumerate() {
            match recovering {
                Some(job) => {
                    let unknown = Error::OutcomeUnknown("held in recovery".into());
                    answers[at] = Some(self.settle(&job, executed, Err(unknown)));
                }
                None => {
                    places.push(at);
                    retried.push(executed);
                }
            }
        }
        if !retried.is_empty() {
            for (at, finished) in places.into_iter().zip(self.finish_all(retried)) {
                answers[at] = Some(finished);
            }
        }
        answered(answers)
    }

    /// How many jobs are held in recovery now, each with why.
    #[must_use]
    pub fn in_recovery(&self) -> Vec<(String, String)> {
        self.held_in_recovery()
            .into_iter()
            .map(|r| (r.resource_id, r.why))
            .collect()
    }

    /// The jobs held in recovery now, as the registration row publishes them.
    #[must_use]
    pub fn held_in_recovery(&self) -> Vec<Recovering> {
        self.state()
            .inflight
            .values()
            .filter_map(|f| f.recovery.clone())
            .collect()
    }
}

/// A finished batch sorted by how its outcomes are committed; each entry keeps its place in
/// the batch.
struct Routed {
    /// Plain effect and schedule outcomes: one group commit.
    grouped: Vec<(usize, Job, Executed)>,
    /// Workflow steps: one commit of their own.
    steps: Vec<(usize, Job, Executed)>,
    /// Everything else, one by one.
    single: Vec<(usize, Executed)>,
}

/// Each job's answer in batch order; a job nobody answered was not this authority's.
fn answered(answers: Vec<Option<Finished>>) -> Vec<Finished> {
    answers
        .into_iter()
        .map(|a| a.unwrap_or(Finished::Abandoned("not-owned")))
        .collect()
}

/// The handler an attempt ran (a work item's handler, a workflow's action) and what it
/// answered; `None` when no handler ran.
fn attempt_of<'a>(job: &'a Job, executed: &'a Executed) -> Option<(&'a str, &'a HandlerOutcome)> {
    match (&job.task, &executed.exec) {
        (Task::Work(item), Exec::Work { outcome, .. }) => Some((item.handler.as_str(), outcome)),
        (_, Exec::WorkflowRan { request, outcome }) => Some((request.action.as_str(), outcome)),
        _ => None,
    }
}

/// Adds the attempt's time to its handler's.
fn record_handler_time(s: &mut Stats, job: &Job, executed: &Executed) {
    if let Some((handler, _)) = attempt_of(job, executed) {
        // Looked up before it is added: a name is copied once, not per outcome.
        match s.handler_ms.get_mut(handler) {
            Some(spent) => spent.record(executed.spent_ms),
            None => {
                let spent = s.handler_ms.entry(handler.to_owned()).or_default();
                spent.record(executed.spent_ms);
            }
        }
    }
}

/// Counts an outcome the store accepted for the handler that answered it: a success, or a
/// failure by the class the handler gave, with the durable retry the store scheduled for it
/// and the uncertain attempt the store counted when it may have acted. A refused, deferred
/// or abandoned outcome counts nothing here.
fn count_for_handler(s: &mut Stats, job: &Job, executed: &Executed, finished: &Finished) {
    let accepted = matches!(
        finished,
        Finished::Completed | Finished::RetryScheduled | Finished::Failed | Finished::Transitioned
    );
    let Some((handler, outcome)) = attempt_of(job, executed).filter(|_| accepted) else {
        return;
    };
    let Some(counts) = s.handler(handler) else {
        return;
    };
    match outcome.failure() {
        Some(failure) => {
            counts.failed(failure.class);
            if *finished == Finished::RetryScheduled {
                counts.retries_scheduled += 1;
            }
            if matches!(job.task, Task::Work(_)) && may_have_acted(failure) {
                counts.uncertain_attempts += 1;
            }
        }
        None if matches!(outcome, HandlerOutcome::Succeeded(_)) => counts.completions += 1,
        None => {}
    }
}

/// Counts the outcome: a workflow transition by the outcome of the action it ran, a
/// refusal by its code and whether it was fenced.
fn count_outcome(s: &mut Stats, executed: &Executed, finished: &Finished, fenced: bool) {
    let action = match &executed.exec {
        Exec::WorkflowRan { outcome, .. } => Some(outcome),
        _ => None,
    };
    match finished {
        Finished::Completed => s.completions += 1,
        Finished::RetryScheduled => s.retries += 1,
        Finished::Failed => s.failures += 1,
        Finished::Transitioned => match action.map(|a| (a, a.failure())) {
            Some((HandlerOutcome::Succeeded(_), _)) => s.completions += 1,
            Some((_, Some(f))) if f.class == FailureClass::Retryable => s.retries += 1,
            Some((_, Some(_))) => s.failures += 1,
            _ => {}
        },
        Finished::Refused(code) => s.refused(code, fenced),
        Finished::Abandoned("uncertain") => s.uncertain += 1,
        Finished::Yielded
        | Finished::Held
        | Finished::Released
        | Finished::Abandoned(_)
        | Finished::Deferred(_) => {}
    }
}
