//! The tokio driver of one authority process: polls on `pollIntervalMs`, runs up to
//! `workerConcurrency` handlers at once on the blocking pool, renews on its own cadence,
//! heartbeats, and on the shutdown future (the binary passes SIGINT/SIGTERM) stops
//! claiming, lets running handlers finish within a grace period and releases whatever it
//! still owns. Every decision is [`AuthorityCore`]'s; this file only schedules it. Store
//! calls are synchronous (SQLite), so they run on the blocking pool too, never on the
//! async workers.

use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::task::JoinSet;
use tokio::time::{Instant, MissedTickBehavior};

use super::config::AuthorityConfig;
use super::core::{AuthorityCore, Exec, Executed, Finished, Job, Task};
use super::handlers::{HandlerOutcome, Pace, Workload};
use super::stats::{ExecLog, Stats};
use crate::clock::{Millis, format_instant};
use crate::error::{Error, Result};
use crate::store::Store;

/// How the runtime writes its log lines on stderr.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum LogFormat {
    /// `2026-01-01T00:00:00.000Z a1 started build=v1 …`, for people.
    #[default]
    Text,
    /// One JSON object per line: `{"at":…,"instance":…,"event":…,…}`.
    Json,
    /// Nothing (benchmarks, which report on their own).
    Off,
}

impl std::str::FromStr for LogFormat {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        match s {
            "text" => Ok(Self::Text),
            "json" => Ok(Self::Json),
            "off" => Ok(Self::Off),
            other => Err(Error::Invalid(format!(
                "unknown log format {other:?}; use text, json or off"
            ))),
        }
    }
}

/// Options of [`run_authority_with`].
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// Append one JSON line per physical attempt here.
    pub exec_log: Option<PathBuf>,
    pub log_format: LogFormat,
    /// How long a shutdown waits for running handlers before releasing their items
    /// (default: the renew interval, so no claim can lapse meanwhile).
    pub shutdown_grace_ms: Option<Millis>,
}

/// Runs one authority until `shutdown` completes, then releases what it owns and returns
/// its counters. Logs human lines on stderr.
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
    let log = Logger {
        format: options.log_format,
        core: core.clone(),
    };
    let cfg = core.config().clone();
    blocking(&core, AuthorityCore::register).await??;
    log.line("started", json!({ "build": cfg.build, "compat": core.compat(), "store": core.store().describe(), "config": serde_json::to_value(&cfg).unwrap_or(Value::Null) }));

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
                finish_joined(&core, &log, &mut running, joined).await?;
                // Keep the workers busy: claim again as soon as a slot frees up.
                poll_and_spawn(&core, &log, &mut running, &mut store_down).await?;
            }
            _ = renew.tick() => {
                let renewed = blocking(&core, AuthorityCore::renew).await?;
                if renewed.lost > 0 {
                    log.line("leases-lost", json!({ "lost": renewed.lost, "renewed": renewed.renewed }));
                }
            }
            _ = heartbeat.tick() => {
                let beat = blocking(&core, AuthorityCore::heartbeat).await?;
                if let Err(lost @ (Error::Superseded { .. } | Error::NotFound { .. })) = &beat {
                    // The registration is no longer this process's: another start of its
                    // instance id owns it (two processes under one id would share claims),
                    // or an operator forgot it while it read as gone. It steps down rather
                    // than work unseen.
                    log.line("registration-lost", json!({ "error": lost.to_string() }));
                    break;
                }
                note_store(&log, &mut store_down, beat.as_ref().err());
                let s = core.stats();
                log.line("progress", json!({ "inflight": core.inflight(), "claims": s.claims, "completions": s.completions, "retries": s.retries, "failures": s.failures, "fencedWritesRefused": s.fenced_writes_refused, "leasesLost": s.leases_lost, "reclaims": s.reclaims }));
            }
            _ = poll.tick() => {
                for finished in blocking(&core, AuthorityCore::flush).await? {
                    log_finished(&log, &finished);
                }
                poll_and_spawn(&core, &log, &mut running, &mut store_down).await?;
            }
        }
    }

    core.stop_claiming();
    log.line(
        "stopping",
        json!({ "inflight": core.inflight(), "running": running.len() }),
    );
    let grace = options.shutdown_grace_ms.unwrap_or(cfg.renew_interval_ms);
    let deadline = tokio::time::sleep(period(grace));
    tokio::pin!(deadline);
    while !running.is_empty() {
        tokio::select! {
            biased;
            Some(joined) = running.join_next() => finish_joined(&core, &log, &mut running, joined).await?,
            _ = renew.tick() => { blocking(&core, AuthorityCore::renew).await?; }
            () = &mut deadline => {
                log.line("grace-expired", json!({ "running": running.len() }));
                break;
            }
        }
    }
    // Handlers still running are detached; their items are released below and their
    // outcomes, if they ever come, are dropped.
    running.detach_all();
    let stats = blocking(&core, AuthorityCore::shutdown).await??;
    log.line("stopped", json!({ "claims": stats.claims, "completions": stats.completions, "fencedWritesRefused": stats.fenced_writes_refused, "leasesLost": stats.leases_lost, "released": stats.released_on_shutdown }));
    Ok(stats)
}

/// Runs `f` on the blocking pool (store calls are synchronous).
async fn blocking<T: Send + 'static>(
    core: &Arc<AuthorityCore>,
    f: impl FnOnce(&AuthorityCore) -> T + Send + 'static,
) -> Result<T> {
    let core = core.clone();
    tokio::task::spawn_blocking(move || f(&core))
        .await
        .map_err(|e| Error::OutcomeUnknown(format!("an authority task did not finish: {e}")))
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

async fn poll_and_spawn(
    core: &Arc<AuthorityCore>,
    log: &Logger,
    running: &mut JoinSet<Executed>,
    store_down: &mut bool,
) -> Result<()> {
    let polled = blocking(core, AuthorityCore::poll).await?;
    note_store(log, store_down, polled.as_ref().err());
    for job in polled.unwrap_or_default() {
        let core = core.clone();
        running.spawn_blocking(move || execute_caught(&core, &job));
    }
    Ok(())
}

async fn finish_joined(
    core: &Arc<AuthorityCore>,
    log: &Logger,
    running: &mut JoinSet<Executed>,
    first: std::result::Result<Executed, tokio::task::JoinError>,
) -> Result<()> {
    let mut batch: Vec<Executed> = Vec::new();
    let mut push = |joined: std::result::Result<Executed, tokio::task::JoinError>| match joined {
        Ok(executed) => batch.push(executed),
        // Panics are caught in the task; a join error here means the task was cancelled.
        Err(e) => log.line("task-failed", json!({ "error": e.to_string() })),
    };
    push(first);
    while let Some(joined) = running.try_join_next() {
        push(joined);
    }
    if batch.is_empty() {
        return Ok(());
    }
    for finished in blocking(core, move |c| c.finish_all(batch)).await? {
        log_finished(log, &finished);
    }
    Ok(())
}

fn log_finished(log: &Logger, finished: &Finished) {
    match finished {
        Finished::Refused(code) => log.line("write-refused", json!({ "code": code })),
        Finished::Deferred(why) => log.line("outcome-deferred", json!({ "error": why })),
        Finished::Abandoned(reason @ ("lost" | "uncertain")) => {
            log.line("attempt-abandoned", json!({ "reason": reason }))
        }
        _ => {}
    }
}

/// Logs the first store failure of a streak and the recovery, not every failed call.
fn note_store(log: &Logger, down: &mut bool, error: Option<&Error>) {
    match (error, *down) {
        (Some(e), false) if e.is_store_failure() => {
            *down = true;
            log.line("store-unavailable", json!({ "error": e.to_string() }));
        }
        (None, true) => {
            *down = false;
            log.line("store-recovered", json!({}));
        }
        _ => {}
    }
}

struct Logger {
    format: LogFormat,
    core: Arc<AuthorityCore>,
}

impl Logger {
    fn line(&self, event: &str, fields: Value) {
        let at = format_instant(self.core.store().now());
        let instance = self.core.id();
        match self.format {
            LogFormat::Off => {}
            LogFormat::Json => {
                let mut obj = serde_json::Map::new();
                obj.insert("at".into(), Value::String(at));
                obj.insert("instance".into(), Value::String(instance.to_owned()));
                obj.insert("event".into(), Value::String(event.to_owned()));
                if let Value::Object(extra) = fields {
                    obj.extend(extra);
                }
                eprintln!("{}", Value::Object(obj));
            }
            LogFormat::Text => {
                let mut line = format!("{at} {instance} {event}");
                if let Value::Object(extra) = fields {
                    for (k, v) in extra {
                        match v {
                            Value::String(s) => line.push_str(&format!(" {k}={s}")),
                            other => line.push_str(&format!(" {k}={other}")),
                        }
                    }
                }
                eprintln!("{line}");
            }
        }
    }
}
