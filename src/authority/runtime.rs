//! The tokio driver of one authority process: polls on `pollIntervalMs`, runs up to
//! `workerConcurrency` handlers at once (async ones as tasks, blocking ones on the
//! blocking pool), renews every owned claim on its own cadence while they run,
//! heartbeats, and on the shutdown future (the binary passes SIGINT/SIGTERM) stops
//! claiming, lets running handlers finish within a grace period, abandons those that
//! outlive it (their claims lapse), tries once more the outcomes a store failure deferred
//! (those the store still refuses lapse too, counted uncertain by their reclaimer) and
//! releases whatever else it holds idle. Every decision is [`AuthorityCore`]'s; this file
//! only schedules it. Store calls are synchronous (SQLite), so they run on the blocking
//! pool too, never on the async workers.
//!
//! Log lines are `tracing` events: the core's per item (see [`super::log`]), this file's
//! for the authority as a whole. With [`RunOptions::log`] every one of them, from whichever
//! thread, goes to that subscriber, so several authorities in one process (tests,
//! benchmarks) each keep their own log.

use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio::task::JoinSet;
use tokio::time::{Instant, MissedTickBehavior};
use tracing::{Dispatch, info, warn};

use super::config::AuthorityConfig;
use super::core::{AuthorityCore, Exec, Executed, Job, Prepared};
use super::handlers::{Pace, Workload};
use super::health::Health;
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
    /// `cli/log.rs::dispatch`), for several authorities in one process; `None`
    /// leaves them to the default subscriber, which is what the binary installs. `tracing`
    /// caches per call site whether anyone listens: a scoped subscriber is reliable only if
    /// the process reaches these call sites under some subscriber everywhere.
    pub log: Option<Dispatch>,
    /// How long a shutdown waits for running handlers before abandoning their claims
    /// (default: the renew interval). Claims are renewed meanwhile.
    pub shutdown_grace_ms: Option<Millis>,
    /// Where the loop reports readiness and liveness (see [`Health`]).
    pub health: Health,
    /// Serve `/metrics` on this listener (see [`super::metrics`]).
    pub metrics: Option<Arc<std::net::TcpListener>>,
}

/// Runs one authority until `shutdown` completes, then stops as the module says and returns
/// its counters. Logs through the default `tracing` subscriber.
///
/// # Errors
/// `INVALID` for an unsafe config, no handler at all, a handler limit on a handler the
/// workload does not register, or an exec log that cannot be opened; a store failure
/// registering at start-up or recording the stop. Store failures while running are logged
/// and retried, except those retrying cannot help ([`Error::is_terminal_store_failure`]: a
/// store that refuses this process, `STORE_REFUSED`, or cannot be trusted, `STORE_CORRUPT`,
/// `STORE_REWOUND`): the authority stops claiming, logs it, stops as on shutdown and
/// returns that error.
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
    let core = start_core(store, config, workload, &options)?;
    let log = Logger { core: core.clone() };
    let cfg = core.config().clone();
    let health = options.health.clone();
    blocking(&core, "register", AuthorityCore::register).await??;
    // The loop turns at least every poll and every heartbeat; three quiet heartbeats (or
    // polls, if slower) mean it is stuck.
    let quiet_limit = Duration::from_millis(
        (cfg.heartbeat_interval_ms.max(cfg.poll_interval_ms) * 3).unsigned_abs(),
    );
    health.registered(quiet_limit);
    // Stopped before this function returns (and aborted if it returns early).
    let metrics = match &options.metrics {
        Some(listener) => Some(AbortOnDrop(tokio::spawn(super::metrics::serve(
            tokio_listener(listener)?,
            core.clone(),
            health.clone(),
        )))),
        None => None,
    };
    log_started(&log, &core, &options);

    let mut timers = Timers::new(&cfg);
    let mut running: JoinSet<Executed> = JoinSet::new();
    let mut store_down = false;
    let mut terminal = None;
    tokio::pin!(shutdown);

    loop {
        // A damaged, replaced or rewound store refuses every write from now on, and a store
        // that refuses this process (credentials, grants, a certificate) will go on refusing
        // it: retrying cannot help, so the authority stops and exits with the reason.
        let stop = (core.store().untrusted().map(|e| (e, "store-untrusted")))
            .or_else(|| core.store().refused().map(|e| (e, "store-refused")));
        if let Some((e, event)) = stop {
            log.scope(|| tracing::error!(instance = core.id(), error = %e, "{event}"));
            terminal = Some(e);
            break;
        }
        health.turned(quiet_limit);
        health.store(store_down);
        // Biased, in this order: a stop, then renewals and heartbeats, which keep what this
        // process holds and must never wait behind a stream of finished handlers (with fast
        // handlers a joined task is ready at every turn), then the work itself.
        tokio::select! {
            biased;
            () = &mut shutdown => break,
            _ = timers.renew.tick() => {
                // The core logs each lost claim with its item and generation.
                blocking(&core, "renew", AuthorityCore::renew).await?;
            }
            _ = timers.heartbeat.tick() => {
                let beat = blocking(&core, "heartbeat", AuthorityCore::heartbeat).await?;
                if let Err(lost @ (Error::Superseded { .. } | Error::NotFound { .. })) = &beat {
                    // The registration is no longer this process's: another start of its
                    // instance id owns it (two processes under one id would share claims),
                    // or an operator forgot it while it read as gone. It steps down rather
                    // than work unseen, and ends with that as its error.
                    let lost = match lost {
                        Error::NotFound { .. } => Error::RegistrationLost {
                            instance: core.id().to_owned(),
                        },
                        superseded => superseded.clone(),
                    };
                    log.scope(|| warn!(instance = core.id(), error = %lost, "registration-lost"));
                    terminal = Some(lost);
                    break;
                }
                note_store(&log, &mut store_down, beat.as_ref().err());
                if beat.is_ok() {
                    health.heartbeat_accepted();
                }
                let s = core.stats();
                log.scope(|| info!(instance = core.id(), inflight = core.inflight(), claims = s.claims, completions = s.completions, retries = s.retries, failures = s.failures, "fencedWritesRefused" = s.fenced_writes_refused, "leasesLost" = s.leases_lost, reclaims = s.reclaims, "inRecovery" = core.in_recovery().len(), "progress"));
            }
            Some(joined) = running.join_next(), if !running.is_empty() => {
                let batch = joined_batch(&log, &mut running, joined);
                // Keep the workers busy: claim again as soon as slots free up.
                finish_and_poll(&core, &log, &mut running, &mut store_down, batch).await?;
            }
            _ = timers.trim.tick() => blocking(&core, "trim", AuthorityCore::trim_when_due).await?,
            _ = timers.poll.tick() => {
                blocking(&core, "flush", AuthorityCore::flush).await?;
                poll_and_spawn(&core, &log, &mut running, &mut store_down).await?;
            }
        }
    }

    core.stop_claiming();
    health.stopping();
    let grace = options.shutdown_grace_ms.unwrap_or(cfg.renew_interval_ms);
    drain_running(&core, &log, &mut running, &mut timers.renew, grace).await?;
    let stats = blocking(&core, "shutdown", AuthorityCore::shutdown).await?;
    health.stopped();
    if let Some(metrics) = metrics {
        metrics.stop().await;
    }
    if let Some(e) = terminal {
        return Err(e);
    }
    let stats = stats?;
    log_stopped(&log, &core, &stats);
    Ok(stats)
}

/// The core as configured, before anything is written: an authority with nothing to run
/// does not register.
fn start_core(
    store: Store,
    config: AuthorityConfig,
    workload: Workload,
    options: &RunOptions,
) -> Result<Arc<AuthorityCore>> {
    workload.check_runs(&config)?;
    // Every worker, the poller and the renewer may call the store at once.
    store.fit_concurrency(config.worker_concurrency + 2);
    let mut core = AuthorityCore::new(store, config, workload, Pace::Real)?;
    if let Some(path) = &options.exec_log {
        core = core.with_exec_log(ExecLog::open(path)?);
    }
    if let Some(dispatch) = options.log.clone() {
        core = core.with_log(dispatch);
    }
    Ok(Arc::new(core))
}

/// The `started` line: who runs what on which store, with its timing and, as bound, where
/// `/metrics` listens (an address with port 0 gets one at bind).
fn log_started(log: &Logger, core: &AuthorityCore, options: &RunOptions) {
    let cfg = core.config();
    let metrics_at = options
        .metrics
        .as_ref()
        .and_then(|l| l.local_addr().ok())
        .map(|a| a.to_string());
    log.scope(|| {
        info!(
            instance = cfg.instance_id.as_str(),
            build = cfg.build.as_str(),
            store = %core.store().describe(),
            compat = core.compat(),
            // What it runs, so a demo set started by mistake is seen at once.
            workload = core.workload().demo_name(),
            handlers = core.workload().summary().as_str(),
            "leaseMs" = cfg.lease_duration_ms,
            "renewMs" = cfg.renew_interval_ms,
            "pollMs" = cfg.poll_interval_ms,
            concurrency = cfg.worker_concurrency,
            metrics = metrics_at.as_deref(),
            "started"
        );
    });
}

/// The loop's cadences; a late tick is delayed, not bunched.
struct Timers {
    poll: tokio::time::Interval,
    renew: tokio::time::Interval,
    heartbeat: tokio::time::Interval,
    trim: tokio::time::Interval,
}

impl Timers {
    /// Polls and trims start at once; renewals and heartbeats one period after start.
    fn new(cfg: &AuthorityConfig) -> Self {
        let mut timers = Self {
            poll: tokio::time::interval(period(cfg.poll_interval_ms)),
            renew: tokio::time::interval_at(
                Instant::now() + period(cfg.renew_interval_ms),
                period(cfg.renew_interval_ms),
            ),
            heartbeat: tokio::time::interval_at(
                Instant::now() + period(cfg.heartbeat_interval_ms),
                period(cfg.heartbeat_interval_ms),
            ),
            trim: tokio::time::interval(period(cfg.trim_interval_ms)),
        };
        for timer in [
            &mut timers.poll,
            &mut timers.renew,
            &mut timers.heartbeat,
            &mut timers.trim,
        ] {
            timer.set_missed_tick_behavior(MissedTickBehavior::Delay);
        }
        timers
    }
}

/// A period of `ms` milliseconds, at least one.
fn period(ms: Millis) -> Duration {
    Duration::from_millis(ms.max(1).unsigned_abs())
}

/// Lets running handlers finish within `grace_ms`, finishing their outcomes and renewing
/// their claims meanwhile; those still running then are detached and their claims
/// abandoned to lapse (see `AuthorityCore::shutdown`): their outcomes, if they ever come,
/// are dropped.
async fn drain_running(
    core: &Arc<AuthorityCore>,
    log: &Logger,
    running: &mut JoinSet<Executed>,
    renew: &mut tokio::time::Interval,
    grace_ms: Millis,
) -> Result<()> {
    log.scope(|| {
        info!(
            instance = core.id(),
            inflight = core.inflight(),
            running = running.len(),
            "stopping"
        );
    });
    let deadline = tokio::time::sleep(period(grace_ms));
    tokio::pin!(deadline);
    while !running.is_empty() {
        tokio::select! {
            biased;
            Some(joined) = running.join_next() => {
                let batch = joined_batch(log, running, joined);
                on_blocking_pool(core, move |c| finish_batch(c, batch)).await?;
            }
            _ = renew.tick() => { blocking(core, "renew", AuthorityCore::renew).await?; }
            () = &mut deadline => {
                log.scope(|| warn!(instance = core.id(), running = running.len(), "grace-expired"));
                break;
            }
        }
    }
    running.detach_all();
    Ok(())
}

/// The `stopped` line with the final counters.
fn log_stopped(log: &Logger, core: &AuthorityCore, stats: &Stats) {
    log.scope(|| {
        info!(
            instance = stats.instance_id.as_str(),
            build = stats.build.as_str(),
            store = %core.store().describe(),
            claims = stats.claims,
            completions = stats.completions,
            retries = stats.retries,
            failures = stats.failures,
            "fencedWritesRefused" = stats.fenced_writes_refused,
            "leasesLost" = stats.leases_lost,
            reclaims = stats.reclaims,
            released = stats.released_on_shutdown,
            abandoned = stats.abandoned_on_shutdown,
            "stopped"
        );
    });
}

/// A task aborted when this is dropped.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl AbortOnDrop {
    /// Aborts the task and waits until it is gone (and whatever it held is closed).
    async fn stop(mut self) {
        self.0.abort();
        let _ = (&mut self.0).await;
    }
}

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// The tokio side of a listener bound by the caller (so a bad address fails before start).
fn tokio_listener(listener: &std::net::TcpListener) -> Result<tokio::net::TcpListener> {
    let listener = listener
        .try_clone()
        .and_then(|l| l.set_nonblocking(true).map(|()| l))
        .and_then(tokio::net::TcpListener::from_std);
    listener.map_err(|e| Error::Local(format!("the metrics listener cannot be used: {e}")))
}

/// Runs `f` on the blocking pool (store calls are synchronous), under the core's log.
async fn on_blocking_pool<T: Send + 'static>(
    core: &Arc<AuthorityCore>,
    f: impl FnOnce(&AuthorityCore) -> T + Send + 'static,
) -> Result<T> {
    let core = core.clone();
    tokio::task::spawn_blocking(move || core.log_scope(|| f(&core)))
        .await
        .map_err(|e| Error::OutcomeUnknown(format!("an authority task did not finish: {e}")))
}

/// [`on_blocking_pool`] for one store call of `verb`.
async fn blocking<T: Send + 'static>(
    core: &Arc<AuthorityCore>,
    verb: &'static str,
    f: impl FnOnce(&AuthorityCore) -> T + Send + 'static,
) -> Result<T> {
    on_blocking_pool(core, move |c| timed(c, verb, || f(c))).await
}

/// Runs `f` and records how long it took as a store call of `verb` (the metrics' store
/// call latency).
fn timed<T>(core: &AuthorityCore, verb: &str, f: impl FnOnce() -> T) -> T {
    let started = std::time::Instant::now();
    let out = f();
    core.record_store_call(verb, started.elapsed());
    out
}

async fn poll_and_spawn(
    core: &Arc<AuthorityCore>,
    log: &Logger,
    running: &mut JoinSet<Executed>,
    store_down: &mut bool,
) -> Result<()> {
    let polled = blocking(core, "claim", AuthorityCore::poll).await?;
    spawn_polled(core, log, running, store_down, polled);
    Ok(())
}

/// Records `batch` and claims again in one trip to the blocking pool and one store
/// transaction (`complete-and-claim`): two trips would cost two more context switches per
/// batch, two transactions two commits, and a batch just finished is when slots are free.
async fn finish_and_poll(
    core: &Arc<AuthorityCore>,
    log: &Logger,
    running: &mut JoinSet<Executed>,
    store_down: &mut bool,
    batch: Vec<Executed>,
) -> Result<()> {
    let polled = on_blocking_pool(core, move |c| {
        timed(c, "complete-and-claim", || c.finish_all_and_poll(batch).1)
    })
    .await?;
    spawn_polled(core, log, running, store_down, polled);
    Ok(())
}

/// Records the outcomes of `batch`, if it holds any, as one store call (`complete`). The core
/// logs each outcome with its item and generation.
fn finish_batch(core: &AuthorityCore, batch: Vec<Executed>) {
    if !batch.is_empty() {
        timed(core, "complete", || core.finish_all(batch));
    }
}

/// Starts a task per claimed job.
fn spawn_polled(
    core: &Arc<AuthorityCore>,
    log: &Logger,
    running: &mut JoinSet<Executed>,
    store_down: &mut bool,
    polled: Result<Vec<Job>>,
) {
    note_store(log, store_down, polled.as_ref().err());
    for job in polled.unwrap_or_default() {
        let core = core.clone();
        running.spawn(async move {
            let job_id = job.id;
            // Reading a cursor's or an instance's input is a store call, on the blocking
            // pool; an effect's is in its claim, read here. Then the handler runs (a panic
            // in it is its attempt's retryable failure, see `Registered::call`).
            let prepared = if AuthorityCore::prepare_reads_store(&job) {
                blocking(&core, "prepare", move |c| c.prepare(&job)).await
            } else {
                Ok(core.log_scope(|| core.prepare(&job)))
            };
            match prepared {
                Ok(Prepared::Ready(executed)) => executed,
                Ok(Prepared::Call(call)) => call.call().await,
                Err(e) => Executed {
                    job_id,
                    exec: Exec::Aborted(e.to_string()),
                    spent_ms: 0,
                },
            }
        });
    }
}

/// The first joined task and every other one already done.
fn joined_batch(
    log: &Logger,
    running: &mut JoinSet<Executed>,
    first: std::result::Result<Executed, tokio::task::JoinError>,
) -> Vec<Executed> {
    let mut batch: Vec<Executed> = Vec::new();
    let mut push = |joined: std::result::Result<Executed, tokio::task::JoinError>| match joined {
        Ok(executed) => batch.push(executed),
        // Handler panics are caught where they run; a join error here means this task
        // was cancelled.
        Err(e) => log.scope(|| warn!(instance = log.core.id(), error = %e, "task-failed")),
    };
    push(first);
    while let Some(joined) = running.try_join_next() {
        push(joined);
    }
    batch
}

/// Logs the first store failure of a streak and the recovery, not every failed call. A
/// failure retrying cannot help is the loop's to log, as it stops.
fn note_store(log: &Logger, down: &mut bool, error: Option<&Error>) {
    match (error, *down) {
        (Some(e), false) if e.is_store_failure() && !e.is_terminal_store_failure() => {
            *down = true;
            log.scope(|| warn!(instance = log.core.id(), error = %e, "store-unavailable"));
        }
        (None, true) => {
            *down = false;
            log.scope(|| info!(instance = log.core.id(), "store-recovered"));
        }
        _ => {}
    }
}

/// The authority-wide lines, under the core's log.
struct Logger {
    core: Arc<AuthorityCore>,
}

impl Logger {
    fn scope(&self, f: impl FnOnce()) {
        self.core.log_scope(f);
    }
}
