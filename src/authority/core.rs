//! The authority as step functions: no tokio, no sleeping, time from the store's clock.
//!
//! A driver calls, on its own cadence: [`AuthorityCore::poll`] (fire due schedules, claim
//! work and runnable workflow instances up to free concurrency), then for each [`Job`]
//! [`AuthorityCore::execute`] (run the handler — possibly on another thread) and
//! [`AuthorityCore::finish`] (record the outcome under the fence); [`AuthorityCore::renew`]
//! on the renew cadence, [`AuthorityCore::heartbeat`], [`AuthorityCore::flush`] (retry
//! outcomes a store failure deferred) and finally [`AuthorityCore::shutdown`]. The tokio
//! runtime ([`super::runtime`]) and the simulated cluster ([`crate::cluster`]) are two
//! drivers over this one implementation.
//!
//! Every write is fenced in the store; this file only decides what to present. A refusal
//! (`WORK_FENCED`, `already-terminal`, …) is counted and never retried as success — as a
//! fenced write and a lost lease when another claim had taken the item over (see
//! `fencing.rs`); a fenced renewal marks the job lost, and a lost job's outcome is
//! dropped. A subscription cursor is kept once claimed: after each look (deliver what is
//! new, or nothing) it stays owned and renewed, and a later poll looks again, so its
//! generation moves only when its ownership does. Each claim, outcome and lost lease is a
//! `tracing` event ([`super::log`]).

use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard};

use serde_json::Value;

use super::config::AuthorityConfig;
use super::handlers::{AttemptContext, AttemptKind, HandlerOutcome, Pace, Workload};
use super::stats::{ExecLog, ExecRecord, Stats};
use super::{fencing, log};
use crate::build_key::compatibility_key;
use crate::clock::Millis;
use crate::error::{Error, Result};
use crate::model::{
    Authority, FailureClass, Incarnation, InstanceRow, Subscription, WorkItem, WorkKind, WorkState,
};
use crate::ops::actor::host_name;
use crate::store::{Completion, Store};
use crate::workflow::engine::{Claimed, Engine, Next, Step, outcome_to_trigger};
use crate::workflow::machine::{self, ActionRequest, Trigger};

/// Schedules examined per poll.
const SCHEDULES_PER_POLL: usize = 64;
/// Journal events delivered per cursor attempt.
const CURSOR_BATCH: usize = 64;

/// What a job works on.
#[derive(Debug, Clone)]
pub enum Task {
    /// A claimed work item (effect, schedule firing, cursor).
    Work(Box<WorkItem>),
    /// A workflow instance whose lease this authority holds.
    Workflow(Box<Claimed>),
}

/// One claimed unit of work, owned until it is finished, lost or released.
#[derive(Debug, Clone)]
pub struct Job {
    /// Local id, unique per core.
    pub id: u64,
    pub task: Task,
    pub claimed_at: Millis,
}

impl Job {
    /// The fenced resource: the work item id, or `wf:<instanceId>`.
    #[must_use]
    pub fn resource(&self) -> String {
        match &self.task {
            Task::Work(item) => item.id.clone(),
            Task::Workflow(c) => format!("wf:{}", c.row.instance_id),
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
}

/// A job's execution result and the time it took.
#[derive(Debug, Clone)]
pub struct Executed {
    pub job_id: u64,
    pub exec: Exec,
    /// Time the handler spent ([`AttemptContext::spend`]): virtual latency in the cluster.
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
    /// A store failure: the outcome is kept and [`AuthorityCore::flush`] retries it.
    Deferred(String),
}

/// Renewal results.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Renewed {
    pub renewed: usize,
    pub lost: usize,
    pub failed: usize,
}

struct InFlight {
    job: Job,
    lost: bool,
    deferred: Option<Executed>,
    /// A held cursor between looks: owned, renewed, but not executing.
    held: bool,
    /// When a held cursor is due for its next look.
    look_at: Millis,
}

impl InFlight {
    fn new(job: Job) -> Self {
        Self {
            job,
            lost: false,
            deferred: None,
            held: false,
            look_at: 0,
        }
    }
}

#[derive(Default)]
struct CoreState {
    next_job: u64,
    inflight: BTreeMap<u64, InFlight>,
    stopping: bool,
    stats: Stats,
    /// When this process last registered: with the host and pid, the incarnation its
    /// heartbeats present.
    started_at: Millis,
}

/// One authority's logic over a store. All methods take `&self`; share it in an `Arc`.
pub struct AuthorityCore {
    store: Store,
    config: AuthorityConfig,
    compat: String,
    engine: Engine,
    workload: Workload,
    pace: Pace,
    exec_log: Option<ExecLog>,
    /// Where this authority's events go, when not to the default subscriber.
    log: Option<tracing::Dispatch>,
    host: String,
    state: Mutex<CoreState>,
}

fn classify(result: Result<WorkItem>) -> Result<Finished> {
    match result {
        Ok(item) => Ok(match item.state {
            WorkState::Succeeded => Finished::Completed,
            WorkState::Retry => Finished::RetryScheduled,
            WorkState::Failed => Finished::Failed,
            WorkState::Pending | WorkState::Claimed => Finished::Yielded,
        }),
        Err(e) if e.is_store_failure() => Err(e),
        Err(e) => Ok(Finished::Refused(e.code().to_owned())),
    }
}

/// An action's outcome as the engine records it; `None` when it is uncertain (nothing is
/// recorded, the claim lapses).
fn action_result(outcome: &HandlerOutcome) -> Option<std::result::Result<Value, machine::Failure>> {
    match outcome {
        HandlerOutcome::Succeeded(out) => Some(Ok(out.clone().unwrap_or(Value::Null))),
        HandlerOutcome::Failed(f) => Some(Err(machine::Failure {
            code: f.code.clone(),
            message: f.message.clone(),
            retryable: f.class == FailureClass::Retryable,
        })),
        HandlerOutcome::Uncertain => None,
    }
}

/// Turns a semantic refusal into `Ok(Some(Refused))`, passing store failures up.
fn refusal<T>(result: Result<T>) -> Result<std::result::Result<T, Finished>> {
    match result {
        Ok(v) => Ok(Ok(v)),
        Err(e) if e.is_store_failure() => Err(e),
        Err(e) => Ok(Err(Finished::Refused(e.code().to_owned()))),
    }
}

impl AuthorityCore {
    /// An authority over `store` (whose clock it reads) with `config`, running `workload`.
    ///
    /// # Errors
    /// `INVALID` for an unsafe config (see [`AuthorityConfig::validate`]).
    pub fn new(
        store: Store,
        config: AuthorityConfig,
        workload: Workload,
        pace: Pace,
    ) -> Result<Self> {
        config.validate()?;
        let compat = compatibility_key(&config.build).digest();
        let engine = Engine::new(store.clone(), &config.instance_id, &compat);
        let stats = Stats {
            instance_id: config.instance_id.clone(),
            build: config.build.clone(),
            ..Stats::default()
        };
        Ok(Self {
            store,
            compat,
            engine,
            workload,
            pace,
            exec_log: None,
            log: None,
            host: host_name(),
            config,
            state: Mutex::new(CoreState {
                stats,
                ..CoreState::default()
            }),
        })
    }

    /// Writes one JSON line per physical attempt to `log`.
    #[must_use]
    pub fn with_exec_log(mut self, log: ExecLog) -> Self {
        self.exec_log = Some(log);
        self
    }

    /// Sends this authority's events to `dispatch` (see [`Self::log_scope`]).
    #[must_use]
    pub fn with_log(mut self, dispatch: tracing::Dispatch) -> Self {
        self.log = Some(dispatch);
        self
    }

    /// Runs `f` with this authority's subscriber, if it has one, as the thread's default:
    /// a driver wraps every call into the core (on any thread) in it.
    pub fn log_scope<T>(&self, f: impl FnOnce() -> T) -> T {
        match &self.log {
            Some(dispatch) => tracing::dispatcher::with_default(dispatch, f),
            None => f(),
        }
    }

    /// Reports `host` in the registration instead of this machine's name.
    #[must_use]
    pub fn with_host(mut self, host: impl Into<String>) -> Self {
        self.host = host.into();
        self
    }

    fn state(&self) -> MutexGuard<'_, CoreState> {
        // The state is plain counters and maps; a panic elsewhere cannot leave it torn.
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    #[must_use]
    pub fn config(&self) -> &AuthorityConfig {
        &self.config
    }

    #[must_use]
    pub fn id(&self) -> &str {
        &self.config.instance_id
    }

    /// The compat digest this authority claims under.
    #[must_use]
    pub fn compat(&self) -> &str {
        &self.compat
    }

    #[must_use]
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// A snapshot of the counters.
    #[must_use]
    pub fn stats(&self) -> Stats {
        self.state().stats.clone()
    }

    /// Jobs owned right now (claimed and not yet finished, lost or released).
    #[must_use]
    pub fn inflight(&self) -> usize {
        self.state().inflight.len()
    }

    /// The jobs owned right now (claimed and not yet finished, lost or released).
    #[must_use]
    pub fn owned(&self) -> Vec<Job> {
        self.state()
            .inflight
            .values()
            .filter(|f| !f.lost)
            .map(|f| f.job.clone())
            .collect()
    }

    /// Whether [`Self::shutdown`] has begun.
    #[must_use]
    pub fn is_stopping(&self) -> bool {
        self.state().stopping
    }

    /// Stops claiming; owned jobs still finish. [`Self::shutdown`] implies it.
    pub fn stop_claiming(&self) {
        self.state().stopping = true;
    }

    /// Registers this authority (identity, compat, build, config, heartbeat) as a new
    /// incarnation of its instance id.
    ///
    /// # Errors
    /// `INSTANCE_IN_USE` while another start of the same instance id is running; a store
    /// failure.
    pub fn register(&self) -> Result<()> {
        let now = self.store.now();
        self.state().started_at = now;
        self.store.register_authority(&Authority {
            instance_id: self.config.instance_id.clone(),
            compat: self.compat.clone(),
            build: self.config.build.clone(),
            config: self.config.to_json(),
            started_at: now,
            heartbeat_at: now,
            stopped_at: None,
            host: self.host.clone(),
            pid: std::process::id(),
        })
    }

    /// This process's incarnation (as of its last [`Self::register`]).
    #[must_use]
    pub fn incarnation(&self) -> Incarnation {
        Incarnation {
            instance_id: self.config.instance_id.clone(),
            host: self.host.clone(),
            pid: std::process::id(),
            started_at: self.state().started_at,
        }
    }

    /// Refreshes the heartbeat.
    ///
    /// # Errors
    /// `INSTANCE_SUPERSEDED` once another start of this instance id owns the registration
    /// (the caller should stop); a store failure.
    pub fn heartbeat(&self) -> Result<()> {
        let out = self.store.heartbeat(&self.incarnation(), false);
        self.note_store_error(&out);
        out
    }

    fn note_store_error<T>(&self, result: &Result<T>) {
        if let Err(e) = result {
            if e.is_store_failure() {
                self.state().stats.store_errors += 1;
            }
        }
    }

    /// Fires due schedules and claims up to the free concurrency: workflow instances (up
    /// to half the free slots) and work items (the rest, at most `claimBatchSize`).
    ///
    /// # Errors
    /// A store failure (nothing half-claimed: each claim is one transaction).
    pub fn poll(&self) -> Result<Vec<Job>> {
        let out = self.poll_inner();
        self.note_store_error(&out);
        out
    }

    fn poll_inner(&self) -> Result<Vec<Job>> {
        let now = self.store.now();
        let (looks, free) = {
            let mut st = self.state();
            if st.stopping {
                return Ok(Vec::new());
            }
            let executing = st.inflight.values().filter(|f| !f.held).count();
            let free = self.config.worker_concurrency.saturating_sub(executing);
            // Held cursors due for a look take at most half the free slots.
            let looks = take_due_cursors(&mut st.inflight, now, free.div_ceil(2));
            (looks, free)
        };
        let free = free - looks.len();
        let fired = self.store.fire_due_schedules(SCHEDULES_PER_POLL)?;
        self.state().stats.schedules_fired += fired as u64;
        if free == 0 {
            return Ok(looks);
        }
        let lease = self.config.lease_duration_ms;
        let batch = self.config.claim_batch_size;

        // Workflow instances, then work items, each claim noting a takeover (failover).
        let wf_limit = free.div_ceil(2).min(batch);
        let instances = self.engine.claim_noting_takeovers(wf_limit, lease)?;
        let work_limit = free.saturating_sub(instances.len()).min(batch);
        let items = if work_limit > 0 {
            self.store
                .claim_work(&self.config.instance_id, &self.compat, work_limit, lease)?
        } else {
            Vec::new()
        };

        let mut st = self.state();
        let mut jobs = looks;
        jobs.reserve(instances.len() + items.len());
        let tasks = instances
            .into_iter()
            .map(|(c, expired)| (expired, Task::Workflow(Box::new(c))))
            .chain(
                items
                    .into_iter()
                    .map(|c| (c.took_over_expired_at, Task::Work(Box::new(c.item)))),
            );
        for (expired, task) in tasks {
            st.stats.claims += 1;
            if matches!(task, Task::Workflow(_)) {
                st.stats.workflow_claims += 1;
            }
            let lapsed = expired.map(|expired_at| (now - expired_at).max(0));
            if let Some(lapsed) = lapsed {
                st.stats.reclaims += 1;
                st.stats.reclaim_latencies_ms.push(lapsed);
            }
            st.next_job += 1;
            let job = Job {
                id: st.next_job,
                task,
                claimed_at: now,
            };
            log::claimed(self.id(), &job, lapsed);
            st.inflight.insert(job.id, InFlight::new(job.clone()));
            jobs.push(job);
        }
        Ok(jobs)
    }

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

    fn cursor_events(&self, sub_id: &str) -> Result<Option<Vec<crate::model::JournalEvent>>> {
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
    /// in one group commit ([`Store::complete_batch`]), each still fenced on its own.
    pub fn finish_all(&self, batch: Vec<Executed>) -> Vec<Finished> {
        let mut answers: Vec<Option<Finished>> = vec![None; batch.len()];
        let mut grouped: Vec<(usize, Job, Executed)> = Vec::new();
        let mut steps: Vec<(usize, Job, Executed)> = Vec::new();
        let mut single: Vec<(usize, Executed)> = Vec::new();
        {
            let st = self.state();
            for (i, executed) in batch.into_iter().enumerate() {
                // Plain effect / schedule outcomes go to one group commit, workflow steps
                // to another; everything else (cursors, releases, lost jobs) one by one.
                let route = match st.inflight.get(&executed.job_id) {
                    Some(f) if !f.lost => match (&f.job.task, &executed.exec) {
                        (
                            Task::Work(item),
                            Exec::Work {
                                outcome: HandlerOutcome::Succeeded(_) | HandlerOutcome::Failed(_),
                                advance_to: None,
                                ..
                            },
                        ) if item.kind != WorkKind::Cursor => Some((&mut grouped, f.job.clone())),
                        (
                            Task::Workflow(_),
                            Exec::WorkflowApply(_)
                            | Exec::WorkflowRan {
                                outcome: HandlerOutcome::Succeeded(_) | HandlerOutcome::Failed(_),
                                ..
                            },
                        ) => Some((&mut steps, f.job.clone())),
                        _ => None,
                    },
                    _ => None,
                };
                match route {
                    Some((group, job)) => group.push((i, job, executed)),
                    None => single.push((i, executed)),
                }
            }
        }
        if !grouped.is_empty() {
            let completions: Vec<Completion> = grouped
                .iter()
                .map(|(_, job, executed)| Completion {
                    id: job.resource(),
                    owner: self.config.instance_id.clone(),
                    generation: job.generation(),
                    outcome: match &executed.exec {
                        Exec::Work {
                            outcome: HandlerOutcome::Failed(f),
                            ..
                        } => Err(f.clone()),
                        Exec::Work {
                            outcome: HandlerOutcome::Succeeded(out),
                            ..
                        } => Ok(out.as_ref().map(Value::to_string)),
                        _ => Ok(None),
                    },
                })
                .collect();
            match self.store.complete_batch(&completions) {
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
        if !steps.is_empty() {
            self.commit_workflow_steps(steps, &mut answers);
        }
        for (i, executed) in single {
            answers[i] = Some(self.finish(executed));
        }
        answers
            .into_iter()
            .map(|a| a.unwrap_or(Finished::Abandoned("not-owned")))
            .collect()
    }

    /// Applies a commit result: removes the job (or keeps it deferred), counts, logs.
    fn settle(&self, job: &Job, executed: Executed, result: Result<Finished>) -> Finished {
        let finished = match result {
            Err(e) if e.is_store_failure() => {
                let mut st = self.state();
                st.stats.store_errors += 1;
                let deferred = Finished::Deferred(e.to_string());
                log::finished(self.id(), job, &executed, &deferred, None);
                if let Some(f) = st.inflight.get_mut(&job.id) {
                    f.deferred = Some(executed);
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
        let finished_at = self.store.now();
        {
            let mut st = self.state();
            if finished == Finished::Held {
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
            let action = match &executed.exec {
                Exec::WorkflowRan { outcome, .. } => Some(outcome),
                _ => None,
            };
            match &finished {
                Finished::Completed => s.completions += 1,
                Finished::RetryScheduled => s.retries += 1,
                Finished::Failed => s.failures += 1,
                Finished::Transitioned => match action {
                    Some(HandlerOutcome::Succeeded(_)) => s.completions += 1,
                    Some(HandlerOutcome::Failed(f)) if f.class == FailureClass::Retryable => {
                        s.retries += 1
                    }
                    Some(HandlerOutcome::Failed(_)) => s.failures += 1,
                    _ => {}
                },
                Finished::Refused(code) => s.refused(code, fenced.is_some()),
                Finished::Abandoned("uncertain") => s.uncertain += 1,
                Finished::Yielded
                | Finished::Held
                | Finished::Released
                | Finished::Abandoned(_)
                | Finished::Deferred(_) => {}
            }
        }
        let word = match (&finished, &executed.exec) {
            (Finished::Refused(code), _) => Some(code.clone()),
            (_, Exec::Work { outcome, .. } | Exec::WorkflowRan { outcome, .. }) => {
                Some(outcome.label().to_owned())
            }
            _ => None,
        };
        if let Some(word) = word {
            self.log_attempt(job, &executed, &word);
        }
        finished
    }

    fn log_attempt(&self, job: &Job, executed: &Executed, outcome: &str) {
        let Some(log) = &self.exec_log else { return };
        let (logical, key, attempt) = match (&job.task, &executed.exec) {
            (Task::Work(item), _) => (
                item.logical_effect_id.clone(),
                item.idempotency_key.clone(),
                item.attempt_number,
            ),
            (Task::Workflow(_), Exec::WorkflowRan { request, .. }) => (
                request.invocation_id.clone(),
                request.invocation_id.clone(),
                request.attempt,
            ),
            (Task::Workflow(_), _) => return,
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

    /// The store writes for one executed job. `executed` is updated as steps commit, so a
    /// deferred retry does not repeat a step that already took effect.
    fn commit(&self, job: &Job, executed: &mut Executed) -> Result<Finished> {
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
                    HandlerOutcome::Failed(f) => {
                        classify(self.store.fail(&item.id, owner, generation, f.clone()))
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
            (Task::Work(item), Exec::CursorIdle | Exec::Aborted(_)) => classify(
                self.store
                    .yield_back(&item.id, owner, item.generation, later),
            ),
            (Task::Workflow(claimed), exec) => self.commit_workflow(claimed, exec),
            (Task::Work(_), _) => Ok(Finished::Abandoned("not-owned")),
        }
    }

    fn commit_workflow(&self, claimed: &Claimed, exec: &mut Exec) -> Result<Finished> {
        let applied = match exec {
            Exec::WorkflowIdle | Exec::Aborted(_) => {
                return Ok(match refusal(self.engine.release(claimed))? {
                    Ok(()) => Finished::Released,
                    Err(refused) => refused,
                });
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
    fn after_transition(
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
    fn commit_workflow_steps(
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

    /// Retries outcomes a store failure deferred; drops lost ones.
    pub fn flush(&self) -> Vec<Finished> {
        let deferred: Vec<Executed> = {
            let mut st = self.state();
            st.inflight
                .values_mut()
                .filter_map(|f| f.deferred.take())
                .collect()
        };
        deferred.into_iter().map(|e| self.finish(e)).collect()
    }

    /// Renews every owned claim. A fenced (or otherwise refused) renewal marks the job lost:
    /// someone else owns the item now, and this job's outcome will be dropped.
    pub fn renew(&self) -> Renewed {
        let jobs: Vec<Job> = self
            .state()
            .inflight
            .values()
            .filter(|f| !f.lost)
            .map(|f| f.job.clone())
            .collect();
        let lease = self.config.lease_duration_ms;
        let mut report = Renewed::default();
        for job in jobs {
            let result = match &job.task {
                Task::Work(item) => self
                    .store
                    .renew_claim(&item.id, &self.config.instance_id, item.generation, lease)
                    .map(|_| ()),
                // Whole milliseconds, far inside f64's exact range.
                #[allow(clippy::cast_precision_loss)]
                Task::Workflow(c) => self
                    .store
                    .renew(
                        &job.resource(),
                        &c.lease.token,
                        c.lease.generation,
                        lease as f64,
                    )
                    .map(|_| ()),
            };
            let current = match &result {
                Err(Error::Fenced { current, .. }) => Some(*current),
                _ => None,
            };
            let mut st = self.state();
            match result {
                Ok(()) => report.renewed += 1,
                Err(e) if e.is_store_failure() => {
                    st.stats.store_errors += 1;
                    report.failed += 1;
                }
                Err(_) => {
                    if let Some(f) = st.inflight.get_mut(&job.id) {
                        f.lost = true;
                        // A held cursor runs nothing whose finish would drop it: forget it now.
                        if f.held {
                            st.inflight.remove(&job.id);
                        }
                        st.stats.leases_lost += 1;
                        report.lost += 1;
                        drop(st);
                        log::lease_lost(self.id(), &job, current);
                    }
                }
            }
        }
        report
    }

    /// Stops claiming, releases what it still owns (work items yielded back to pending,
    /// workflow leases released) and records the stop. Handlers still running afterwards
    /// find their jobs released: their outcomes are dropped.
    ///
    /// # Errors
    /// Never for a release that fails (counted; the claim then lapses on its own); a store
    /// failure recording the stop is returned after everything else was attempted.
    pub fn shutdown(&self) -> Result<Stats> {
        let owned: Vec<Job> = {
            let mut st = self.state();
            st.stopping = true;
            std::mem::take(&mut st.inflight)
                .into_values()
                .filter(|f| !f.lost)
                .map(|f| f.job)
                .collect()
        };
        for job in owned {
            let released = match &job.task {
                Task::Work(item) => self
                    .store
                    .yield_back(
                        &item.id,
                        &self.config.instance_id,
                        item.generation,
                        self.store.now(),
                    )
                    .map(|_| ()),
                Task::Workflow(c) => self.engine.release(c),
            };
            let fenced = match &released {
                Err(e) if !e.is_store_failure() => fencing::fenced(&self.store, &job, e.code()),
                _ => None,
            };
            let mut st = self.state();
            match released {
                Ok(()) => st.stats.released_on_shutdown += 1,
                Err(e) if e.is_store_failure() => st.stats.store_errors += 1,
                Err(e) => st.stats.refused(e.code(), fenced.is_some()),
            }
            drop(st);
            if let Task::Work(_) = &job.task {
                self.log_attempt(
                    &job,
                    &Executed {
                        job_id: job.id,
                        exec: Exec::CursorIdle,
                        spent_ms: 0,
                    },
                    "released",
                );
            }
        }
        let stopped = self.store.heartbeat(&self.incarnation(), true);
        self.note_store_error(&stopped);
        stopped.map(|()| self.stats())
    }

    /// Forgets every owned job without writing anything (a crash): the claims lapse.
    pub fn crash(&self) {
        let mut st = self.state();
        st.stopping = true;
        st.inflight.clear();
    }
}

impl std::fmt::Debug for AuthorityCore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuthorityCore")
            .field("instance", &self.config.instance_id)
            .field("build", &self.config.build)
            .field("compat", &self.compat)
            .finish_non_exhaustive()
    }
}

/// Marks up to `n` held cursors due by `now` (longest waiting first) as executing again and
/// returns their jobs: the same claim, the same generation.
fn take_due_cursors(inflight: &mut BTreeMap<u64, InFlight>, now: Millis, n: usize) -> Vec<Job> {
    let mut due: Vec<&mut InFlight> = inflight
        .values_mut()
        .filter(|f| f.held && !f.lost && f.look_at <= now)
        .collect();
    due.sort_by_key(|f| f.look_at);
    due.into_iter()
        .take(n)
        .map(|f| {
            f.held = false;
            f.job.clone()
        })
        .collect()
}

/// The subscription a cursor item carries: its payload's `subscription`, else its id
/// without the `cursor:` prefix.
fn subscription_id(item: &WorkItem) -> String {
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
