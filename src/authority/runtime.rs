//! The tokio driver of one authority process: polls on `pollIntervalMs`, runs up to
//! `workerConcurrency` handlers at once on the blocking pool, renews on its own cadence,
//! heartbeats, and on the shutdown future (the binary passes SIGINT/SIGTERM) stops
//! claiming, lets running handlers finish within a grace period and releases whatever it
//! still owns. Every decision is [`AuthorityCore`]'s; this file only schedules it. Store
//! calls are synchronous (SQLite), so they run on the blocking pool too, never on the
//! async workers.
//!
//! Log lines are `tracing` events (see [`super::log`]); [`RunOptions::log`] routes every
//! event of this authority — from whichever thread — to one subscriber, so several
//! authorities in one process (tests, benchmarks) each keep their own log.

use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio::task::JoinSet;
use tokio::time::{Instant, MissedTickBehavior};
use tracing::{Dispatch, info, warn};

use super::config::AuthorityConfig;
use super::core::{AuthorityCore, Exec, Executed, Job, Task};
use super::handlers::{HandlerOutcome, Pace, Workload};
use super::stats::{ExecLog, Stats};
use crate::clock::Millis;
use crate::error::{Error, Result};
use crate::store::Store;

/// Options of [`run_authority_with`].
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// Append one JSON line per physical attempt here.
    pub exec_log: Option<PathBuf>,
    /// A subscriber for this authority's events alone (e.g. one built with
    /// [`crate::cli::log::dispatch`]), for several authorities in one process; `None`
    /// leaves them to the default subscriber, which is what the binary installs. `tracing`
    /// caches per call site whether anyone listens: a scoped subscriber is reliable only if
    /// the process reaches these call sites under some subscriber everywhere.
    pub log: Option<Dispatch>,
    /// How long a shutdown waits for running handlers before releasing their items
    /// (default: the renew interval, so no claim can lapse meanwhile).
    pub shutdown_grace_ms: Option<Millis>,
}

/// Runs one authority until `shutdown` completes, then releases what it owns and returns
/// its counters. Logs through the caller's default `tracing` subscriber.
///
/// # Errors
/// `INVALID` for an unsafe config or an exec log that cannot be opened; a store failure
/// registering at start-up or recording the stop. Store failures while running are logged
/// and retried, never fatal.
pub async fn run_authority(
    store: Store,
    config: AuthorityConfig,
    workload: Workload,
    exec_log: Option<PathBuf>,
    shutdown: impl Future<Output = ()>,
) -> Result<Stats> {
    run_authority_with(
        store,
        config,
        workload,
        RunOptions {
            exec_log,
            ..RunOptions::default()
        },
        shutdown,
    )
    .await
}

/// [`run_authority`] with every option.
///
/// # Errors
/// As [`run_authority`].
pub async fn run_authority_with(
    store: Store,
    config: AuthorityConfig,
    workload: Workload,
    options: RunOptions,
    shutdown: impl Future<Output = ()>,
) -> Result<Stats> {
    // Every worker, the poller and the renewer may call the store at once.
    store.fit_concurrency(config.worker_concurrency + 2);
    let mut core = AuthorityCore::new(store, config, workload, Pace::Real)?;
    if let Some(path) = &options.exec_log {
        core = core.with_exec_log(ExecLog::open(path)?);
    }
    let core = Arc::new(core);
    let cx = Cx {
        core,
        log: Logs(options.log.clone()),
    };
    let cfg = cx.core.config().clone();
    cx.blocking(AuthorityCore::register).await??;
    cx.log.scope(|| {
        info!(
            instance = cfg.instance_id.as_str(),
            build = cfg.build.as_str(),
            store = %cx.core.store().describe(),
            compat = cx.core.compat(),
            "leaseMs" = cfg.lease_duration_ms,
            "renewMs" = cfg.renew_interval_ms,
            "pollMs" = cfg.poll_interval_ms,
            concurrency = cfg.worker_concurrency,
            "started"
        );
    });

    let period = |ms: Millis| Duration::from_millis(ms.max(1).unsigned_abs());
    let mut poll = tokio::time::interval(period(cfg.poll_interval_ms));
    let mut renew = tokio::time::interval_at(
        Instant::now() + period(cfg.renew_interval_ms),
        period(cfg.renew_interval_ms),
    );
    let mut heartbeat = tokio::time::interval_at(
        Instant::now() + period(cfg.heartbeat_interval_ms),
        period(cfg.heartbeat_interval_ms),
    );
    for timer in [&mut poll, &mut renew, &mut heartbeat] {
        timer.set_missed_tick_behavior(MissedTickBehavior::Delay);
    }
    let mut running: JoinSet<Executed> = JoinSet::new();
    let mut store_down = false;
    tokio::pin!(shutdown);

    loop {
        tokio::select! {
            biased;
            () = &mut shutdown => break,
            Some(joined) = running.join_next(), if !running.is_empty() => {
                cx.finish_joined(&mut running, joined).await?;
                // Keep the workers busy: claim again as soon as a slot frees up.
                cx.poll_and_spawn(&mut running, &mut store_down).await?;
            }
            _ = renew.tick() => {
                // Each lost claim is logged by the core, with its item and generation.
                cx.blocking(AuthorityCore::renew).await?;
            }
            _ = heartbeat.tick() => {
                let beat = cx.blocking(AuthorityCore::heartbeat).await?;
                cx.note_store(&mut store_down, beat.as_ref().err());
                let s = cx.core.stats();
                cx.log.scope(|| info!(
                    instance = cx.core.id(),
                    inflight = cx.core.inflight(),
                    claims = s.claims,
                    completions = s.completions,
                    retries = s.retries,
                    failures = s.failures,
                    "fencedWritesRefused" = s.fenced_writes_refused,
                    "leasesLost" = s.leases_lost,
                    reclaims = s.reclaims,
                    "progress"
                ));
            }
            _ = poll.tick() => {
                cx.blocking(AuthorityCore::flush).await?;
                cx.poll_and_spawn(&mut running, &mut store_down).await?;
            }
        }
    }

    cx.core.stop_claiming();
    cx.log.scope(|| {
        info!(
            instance = cx.core.id(),
            inflight = cx.core.inflight(),
            running = running.len(),
            "stopping"
        );
    });
    let grace = options.shutdown_grace_ms.unwrap_or(cfg.renew_interval_ms);
    let deadline = tokio::time::sleep(period(grace));
    tokio::pin!(deadline);
    while !running.is_empty() {
        tokio::select! {
            biased;
            Some(joined) = running.join_next() => cx.finish_joined(&mut running, joined).await?,
            _ = renew.tick() => { cx.blocking(AuthorityCore::renew).await?; }
            () = &mut deadline => {
                cx.log.scope(|| warn!(instance = cx.core.id(), running = running.len(), "grace-expired"));
                break;
            }
        }
    }
    // Handlers still running are detached; their items are released below and their
    // outcomes, if they ever come, are dropped.
    running.detach_all();
    let stats = cx.blocking(AuthorityCore::shutdown).await??;
    cx.log.scope(|| {
        info!(
            instance = stats.instance_id.as_str(),
            build = stats.build.as_str(),
            store = %cx.core.store().describe(),
            claims = stats.claims,
            completions = stats.completions,
            retries = stats.retries,
            failures = stats.failures,
            "fencedWritesRefused" = stats.fenced_writes_refused,
            "leasesLost" = stats.leases_lost,
            reclaims = stats.reclaims,
            released = stats.released_on_shutdown,
            "stopped"
        );
    });
    Ok(stats)
}

/// Where this authority's events go: its own subscriber, or the caller's default.
#[derive(Clone)]
struct Logs(Option<Dispatch>);

impl Logs {
    /// Runs `f` with this authority's subscriber as the thread's default.
    fn scope<T>(&self, f: impl FnOnce() -> T) -> T {
        match &self.0 {
            Some(dispatch) => tracing::dispatcher::with_default(dispatch, f),
            None => f(),
        }
    }
}

/// The core and its log, shared by every task of the driver.
struct Cx {
    core: Arc<AuthorityCore>,
    log: Logs,
}

impl Cx {
    /// Runs `f` on the blocking pool (store calls are synchronous), logging to this
    /// authority's subscriber.
    async fn blocking<T: Send + 'static>(
        &self,
        f: impl FnOnce(&AuthorityCore) -> T + Send + 'static,
    ) -> Result<T> {
        let (core, log) = (self.core.clone(), self.log.clone());
        tokio::task::spawn_blocking(move || log.scope(|| f(&core)))
            .await
            .map_err(|e| Error::OutcomeUnknown(format!("an authority task did not finish: {e}")))
    }

    async fn poll_and_spawn(
        &self,
        running: &mut JoinSet<Executed>,
        store_down: &mut bool,
    ) -> Result<()> {
        let polled = self.blocking(AuthorityCore::poll).await?;
        self.note_store(store_down, polled.as_ref().err());
        for job in polled.unwrap_or_default() {
            let (core, log) = (self.core.clone(), self.log.clone());
            running.spawn_blocking(move || log.scope(|| execute_caught(&core, &job)));
        }
        Ok(())
    }

    async fn finish_joined(
        &self,
        running: &mut JoinSet<Executed>,
        first: std::result::Result<Executed, tokio::task::JoinError>,
    ) -> Result<()> {
        let mut batch: Vec<Executed> = Vec::new();
        let mut push = |joined: std::result::Result<Executed, tokio::task::JoinError>| match joined
        {
            Ok(executed) => batch.push(executed),
            // Panics are caught in the task; a join error here means the task was cancelled.
            Err(e) => self.log.scope(|| {
                warn!(instance = self.core.id(), error = %e, "task-failed");
            }),
        };
        push(first);
        while let Some(joined) = running.try_join_next() {
            push(joined);
        }
        if !batch.is_empty() {
            // Each outcome is logged by the core, with its item and generation.
            self.blocking(move |c| c.finish_all(batch)).await?;
        }
        Ok(())
    }

    /// Logs the first store failure of a streak and the recovery, not every failed call.
    fn note_store(&self, down: &mut bool, error: Option<&Error>) {
        match (error, *down) {
            (Some(e), false) if e.is_store_failure() => {
                *down = true;
                self.log.scope(|| {
                    warn!(instance = self.core.id(), error = %e, "store-unavailable");
                });
            }
            (None, true) => {
                *down = false;
                self.log
                    .scope(|| info!(instance = self.core.id(), "store-recovered"));
            }
            _ => {}
        }
    }
}

/// Executes one job, turning a handler panic into an uncertain outcome (nothing recorded).
fn execute_caught(core: &AuthorityCore, job: &Job) -> Executed {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| core.execute(job))).unwrap_or_else(
        |_| Executed {
            job_id: job.id,
            exec: match job.task {
                Task::Work(_) => Exec::Work {
                    outcome: HandlerOutcome::Uncertain,
                    advance_to: None,
                    delivered: 0,
                },
                Task::Workflow(_) => Exec::Aborted("the handler panicked".into()),
            },
            spent_ms: 0,
        },
    )
}
