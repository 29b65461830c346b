//! `leasehold authority`: one real authority process over a store, until SIGINT or
//! SIGTERM (`leasehold authority forget ID` administers the registry, in `registry.rs`).
//! It never creates a store unless told to with `--create`.

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use clap::Args;

use super::log::{LogFormat, dispatch};
use super::settings::{AuthorityKnobs, Settings};
use super::{CliResult, Failure, tokio_runtime};
use crate::authority::config::{AuthorityConfig, StepAside, generated_instance_id};
use crate::authority::handlers::Workload;
use crate::authority::runtime::{RunOptions, run_authority_with};
use crate::authority::workload;
use crate::clock::Millis;
use crate::error::Error;
use crate::foundation::text_cell::cell_max;
use crate::model::HandlerVersion;
use crate::store::Capability;
use crate::store::create::create;
use crate::store::url::{OpenMode, open};

/// `leasehold authority`: runs one authority, or with a subcommand administers the
/// registry (`leasehold authority forget ID`).
#[derive(Debug, Clone, Args)]
#[command(subcommand_negates_reqs = true, args_conflicts_with_subcommands = true)]
pub struct AuthorityArgs {
    #[command(subcommand)]
    pub command: Option<super::registry::AuthorityCommand>,
    /// The work store: a SQLite file path or sqlite:PATH, postgres://…, or memory (or
    /// `store` in the config file).
    #[arg(
        long,
        env = "LEASEHOLD_STORE",
        hide_env_values = true,
        value_name = "STORE"
    )]
    pub store: Option<String>,
    /// Create the store first if it does not exist yet, as `leasehold init` does. Without
    /// it a missing path, an empty file or a database without the schema is refused, so a
    /// mistyped `--store` never starts an authority over a new store nobody else uses.
    #[arg(long)]
    pub create: bool,
    #[command(flatten)]
    pub state: super::witness::StateDirArg,
    /// This authority's instance id (generated when not given).
    #[arg(long, env = "LEASEHOLD_INSTANCE")]
    pub instance: Option<String>,
    /// The build label shown to people (registration, dashboard, logs; default `v1`). It
    /// decides nothing: which work this authority claims follows its handlers' versions.
    #[arg(long, env = "LEASEHOLD_BUILD")]
    pub build: Option<String>,
    /// Run a built-in demo handler set (`default`, `fast`, `slow`, `chaos`, `noop`): only
    /// when named here or as `workload` in the config file, never by default, never from
    /// the environment (an inherited variable would add the demo's handlers unseen), and
    /// never beside a config file's own handlers.
    #[arg(long)]
    pub workload: Option<String>,
    /// Run every built-in demo handler at this semantic version (default 1.0.0): a new
    /// major version is code that does not run the old work (an incompatible build), a
    /// minor or patch release runs it. A config file's handlers carry their own.
    #[arg(
        long = "handler-version",
        env = "LEASEHOLD_HANDLER_VERSION",
        value_name = "V"
    )]
    pub handler_version: Option<String>,
    /// A `leasehold.toml`: the store, `[authority]` knobs and `[handlers.*]`, the handlers
    /// as commands (`exec`) or HTTP endpoints (`http`), see docs/HANDLERS.md. Flags and
    /// `LEASEHOLD_*` variables win over the file. A file that names handlers runs them
    /// alone: a demo workload beside them is refused.
    #[arg(long, env = "LEASEHOLD_CONFIG", value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Lease window in ms (default 30000; renewal runs at a third of it unless `--renew-ms`
    /// is given; the heartbeat at a third of it, at most every 10 s, so liveness follows
    /// the lease).
    #[arg(long, env = "LEASEHOLD_LEASE_MS")]
    pub lease_ms: Option<i64>,
    /// Renew cadence in ms; must be below the lease window.
    #[arg(long, env = "LEASEHOLD_RENEW_MS")]
    pub renew_ms: Option<i64>,
    /// Poll cadence in ms (default 1000).
    #[arg(long, env = "LEASEHOLD_POLL_MS")]
    pub poll_ms: Option<i64>,
    /// Items in flight at once, work items and workflow steps together (default 4).
    #[arg(long, env = "LEASEHOLD_CONCURRENCY")]
    pub concurrency: Option<usize>,
    /// Items claimed per poll, in one transaction (default 32).
    #[arg(long, env = "LEASEHOLD_BATCH")]
    pub batch: Option<usize>,
    /// Run at most N items of handler NAME at once (repeatable, one per handler; over the
    /// config file's `handler_limits`).
    #[arg(long = "handler-limit", value_name = "NAME=N", value_parser = handler_limit)]
    pub handler_limits: Vec<(String, usize)>,
    /// Append one JSON line per physical attempt to this file.
    #[arg(long, env = "LEASEHOLD_EXEC_LOG", value_name = "FILE")]
    pub exec_log: Option<PathBuf>,
    /// The log lines on stderr: for people (every value escaped, the default), one JSON
    /// object per line, or none.
    #[arg(long, value_enum, env = "LEASEHOLD_LOG_FORMAT")]
    pub log_format: Option<LogFormat>,
    /// Seed of the workload's simulated latency and failures.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Serve Prometheus / OpenMetrics text on `GET /metrics` at this address (e.g.
    /// `127.0.0.1:9464`; off unless given, and only where it says: give a non-loopback
    /// address to be scraped from elsewhere).
    #[arg(long, env = "LEASEHOLD_METRICS_ADDR", value_name = "ADDR")]
    pub metrics_addr: Option<String>,
    /// Keep succeeded work items and finished workflow instances (with their history and outcome
    /// records), keyed answers and ingestions this long (default 7d; 1m to 3650d).
    #[arg(long, env = "LEASEHOLD_KEEP_FINISHED", value_name = "DURATION", value_parser = duration)]
    pub keep_finished: Option<Millis>,
    /// Keep audit entries this long (default 30d).
    #[arg(long, env = "LEASEHOLD_KEEP_AUDIT", value_name = "DURATION", value_parser = duration)]
    pub keep_audit: Option<Millis>,
    /// Dedup window of every event source: an event id first seen longer ago than this is
    /// accepted again (default 7d).
    #[arg(long, env = "LEASEHOLD_DEDUP_WINDOW", value_name = "DURATION", value_parser = duration)]
    pub dedup_window: Option<Millis>,
    /// Dedup window of one event source (repeatable; over the config file's
    /// `dedup_windows`).
    #[arg(long = "dedup-window-for", value_name = "SOURCE=DURATION", value_parser = source_window)]
    pub dedup_windows: Vec<(String, Millis)>,
    /// How often this authority trims one batch of each table (default 5s).
    #[arg(long, env = "LEASEHOLD_TRIM_EVERY", value_name = "DURATION", value_parser = duration)]
    pub trim_every: Option<Millis>,
    /// How long after a claim's lease ran out its owner may still renew and finish it
    /// before this authority takes it over, after a first attempt; doubled per attempt, up
    /// to 30s (default 500ms; 0 to 1d).
    #[arg(long, env = "LEASEHOLD_RECLAIM_AFTER", value_name = "DURATION", value_parser = duration)]
    pub reclaim_after: Option<Millis>,
    /// Step aside from a crowded write lock: auto (on SQLite only), on, or off. On
    /// PostgreSQL `on` shortens the claim → complete tail of a fleet whose machines (the
    /// server's too) have cores to spare, and loses most of the drain on busy ones
    /// (docs/SCALING.md).
    #[arg(long, env = "LEASEHOLD_STEP_ASIDE", value_name = "WHEN", value_parser = StepAside::parse)]
    pub step_aside: Option<StepAside>,
    /// How long to wait at start for a store that does not answer (a PostgreSQL server
    /// restarting, a network not up yet), trying again with a growing pause and logging
    /// each wait (default 60s; 0s exits at once). A store that answers and refuses is
    /// never waited for.
    #[arg(long, env = "LEASEHOLD_START_WAIT", value_name = "DURATION", value_parser = wait_duration)]
    pub start_wait: Option<Millis>,
}

/// How long an authority waits at start for a store that does not answer, by default.
const DEFAULT_START_WAIT: Duration = Duration::from_secs(60);
/// The first pause between tries of a store that does not answer; doubled up to the last.
const FIRST_START_NAP: Duration = Duration::from_millis(500);
const LAST_START_NAP: Duration = Duration::from_secs(5);

/// Parses `--start-wait`: a duration, `0s` included.
fn wait_duration(arg: &str) -> Result<Millis, String> {
    crate::clock::parse_duration(arg)
        .filter(|ms| *ms >= 0)
        .ok_or_else(|| format!("expected a duration (0s, 30s, 5m), got {arg:?}"))
}

/// Calls `open` until it answers anything but `STORE_UNAVAILABLE` — the store did not
/// answer — or the pauses between tries (`FIRST_START_NAP` doubling to `LAST_START_NAP`)
/// would pass `bound` in all; `note` hears each failure with the pause that follows it.
/// A store that answers and refuses (`STORE_REFUSED`, a damaged or rewound store) is
/// answered at once: waiting cannot change it.
fn wait_for_store<T>(
    bound: Duration,
    mut open: impl FnMut() -> crate::Result<T>,
    mut note: impl FnMut(&crate::Error, Duration),
    mut nap: impl FnMut(Duration),
) -> crate::Result<T> {
    let mut waited = Duration::ZERO;
    let mut next = FIRST_START_NAP;
    loop {
        match open() {
            Err(e @ crate::Error::Unavailable(_)) if waited < bound => {
                let pause = next.min(bound.saturating_sub(waited));
                note(&e, pause);
                nap(pause);
                waited += pause;
                next = (next * 2).min(LAST_START_NAP);
            }
            answered => return answered,
        }
    }
}

/// Parses a duration flag: `90s`, `12h`, `7d`, `1500ms`.
fn duration(arg: &str) -> Result<Millis, String> {
    crate::clock::parse_duration(arg)
        .filter(|ms| *ms > 0)
        .ok_or_else(|| format!("expected a positive duration (30s, 12h, 7d), got {arg:?}"))
}

/// Parses `--dedup-window-for SOURCE=DURATION`.
fn source_window(arg: &str) -> Result<(String, Millis), String> {
    let (source, window) = arg
        .split_once('=')
        .ok_or_else(|| format!("expected SOURCE=DURATION, got {arg:?}"))?;
    Ok((source.to_owned(), duration(window)?))
}

/// Parses `--handler-limit NAME=N`.
fn handler_limit(arg: &str) -> Result<(String, usize), String> {
    let (name, n) = arg
        .split_once('=')
        .ok_or_else(|| format!("expected NAME=N, got {arg:?}"))?;
    let n: usize = n
        .parse()
        .map_err(|_| format!("expected a whole number of items after '=', got {n:?}"))?;
    Ok((name.to_owned(), n))
}

/// What a stop may take past the grace its running handlers get: the outcomes, the
/// releases and the stop's record are a few store calls.
const STOP_MARGIN: Duration = Duration::from_secs(2);

/// Resolves on SIGINT or SIGTERM, and from then on bounds the stop. A stop still running
/// `bound` later has store calls queued behind a writer that holds the store's write lock
/// and does not let go (a process stopped inside its transaction, a stalled disk): each
/// call would wait out its whole retry budget, minutes, and the operator's SIGTERM would
/// look ignored. So the process ends then, with one logged line and exit 1, the way a
/// crash ends it: what it still owned is released by nobody, and its claims lapse and are
/// reclaimed under higher generations, which fencing makes safe.
async fn shutdown_within(instance: String, bound: Duration) {
    // Listened for on a task of its own: the run polls its shutdown future only between
    // store calls, and the calls this bound is for are the ones that do not return.
    let (heard, stop) = tokio::sync::oneshot::channel();
    tokio::spawn(async move {
        shutdown_signal().await;
        start_stop_deadline(instance, bound);
        let _ = heard.send(());
    });
    let _ = stop.await;
}

/// Ends the process `bound` from now, with one logged line and exit 1, unless it has ended.
fn start_stop_deadline(instance: String, bound: Duration) {
    let watchdog = std::thread::Builder::new()
        .name("stop-deadline".into())
        .spawn(move || {
            std::thread::sleep(bound);
            tracing::error!(
                instance = instance.as_str(),
                "boundMs" = u64::try_from(bound.as_millis()).unwrap_or(u64::MAX),
                why = "the store did not answer within the stop's bound; exiting without releasing (the claims lapse and are reclaimed)",
                "stop-timed-out"
            );
            std::process::exit(i32::from(super::EXIT_REFUSED));
        });
    // Without the thread the stop is unbounded, as before; nothing else depends on it.
    drop(watchdog);
}

/// Resolves on SIGINT or SIGTERM.
async fn shutdown_signal() {
    let interrupt = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let Ok(mut term) =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        else {
            let _ = interrupt.await;
            return;
        };
        tokio::select! {
            _ = interrupt => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    {
        let _ = interrupt.await;
    }
}

/// The handlers to register: the demo set `--workload` names, then the config file's over
/// it.
fn handlers(args: &AuthorityArgs, settings: Option<&Settings>) -> Result<Workload, Failure> {
    let version = args
        .handler_version
        .as_deref()
        .map(HandlerVersion::parse)
        .transpose()?
        .unwrap_or_else(HandlerVersion::demo);
    handler_set(args.workload.as_deref(), &version, args.seed, settings)
}

/// The handlers an authority runs: the config file's, or the built-in demo set
/// `demo_set` names (else the one the file's `[authority]` names) at `version` — one or
/// the other. The demo set runs only when named: an application's authority never runs
/// handlers it was not given, so no handler at all is refused, saying how to give them.
/// Nor does it run beside the file's handlers: the demo's `charge-card` would then run
/// the application's `charge-card` items, and complete them with made-up results.
///
/// # Errors
/// No handler, a demo set beside the file's handlers (`INVALID`, exit 2); an unknown demo
/// set.
pub(super) fn handler_set(
    demo_set: Option<&str>,
    version: &HandlerVersion,
    seed: u64,
    settings: Option<&Settings>,
) -> Result<Workload, Failure> {
    if let Some(file) = settings {
        one_handler_set(file, demo_set)?;
    }
    let from_file = settings.and_then(|s| s.authority.workload.as_deref());
    let configured = settings
        .map(|s| s.handlers.workload())
        .filter(|handlers| handlers.names().next().is_some());
    match (configured, demo_set.or(from_file)) {
        (Some(handlers), _) => Ok(handlers),
        (None, Some(name)) => Ok(workload::named(name, seed)?.at_version(version)),
        (None, None) => Err(no_handler(settings)),
    }
}

/// Refuses a built-in demo workload named (by `demo_set`, the `--workload` flag, else by
/// the file) beside the handlers the file `s` names: the demo's `charge-card` would run
/// the application's `charge-card` items and complete them with made-up results. The one
/// judgement for the authority, `config check` and `workflow validate|deploy`, whose
/// handler sets are an authority's.
///
/// # Errors
/// `INVALID` (exit 2): which handlers the file runs, where the demo was named, and the two
/// ways to run one set alone.
pub(super) fn one_handler_set(s: &Settings, demo_set: Option<&str>) -> Result<(), Failure> {
    let from_file = s.authority.workload.as_deref();
    let Some(name) = demo_set.or(from_file) else {
        return Ok(());
    };
    let configured = s.handlers.workload();
    let handlers: Vec<&str> = configured.names().collect();
    if handlers.is_empty() {
        return Ok(());
    }
    let named = if demo_set.is_some() {
        format!("--workload {name}")
    } else {
        format!("workload = \"{name}\" under [authority]")
    };
    Err(Error::Invalid(format!(
        "{}: names handlers of its own ({}), and {named} names a built-in demo workload too: an authority runs one or the other, never both (the demo's handlers would run the store's items of their names); run the file's handlers alone, or the demo workload without them (on a store of its own)",
        s.path.display(),
        cell_max(&handlers.join(", "), 200)
    ))
    .into())
}

/// The refusal of an authority given no handler: the two ways to give it some.
fn no_handler(settings: Option<&Settings>) -> Failure {
    let why = match settings {
        Some(s) => format!(
            "{}: names no handler: add [handlers.NAME] tables (see docs/HANDLERS.md), or run the built-in demo handlers with workload = \"default\" under [authority] (or --workload default)",
            s.path.display()
        ),
        None => "no handler to run: name your handlers in a config file (--config FILE with [handlers.NAME] tables, see docs/HANDLERS.md), or run the built-in demo handlers (--workload default)".to_owned(),
    };
    // A unit file from before may still set the variable that once named the demo set.
    let unread = std::env::var_os("LEASEHOLD_WORKLOAD")
        .map_or("", |_| " (LEASEHOLD_WORKLOAD is set but not read: the demo runs only when --workload or the file names it)");
    Error::Invalid(format!("{why}{unread}")).into()
}

/// The authority's knobs: each from its flag (or `LEASEHOLD_*` variable), else the config
/// file, else the default.
fn knobs(args: &AuthorityArgs, settings: Option<&Settings>) -> Result<AuthorityConfig, Failure> {
    let file = settings.map(|s| s.authority.clone()).unwrap_or_default();
    let instance = args
        .instance
        .clone()
        .or_else(|| file.instance.clone())
        .unwrap_or_else(generated_instance_id);
    let build = args
        .build
        .clone()
        .or_else(|| file.build.clone())
        .unwrap_or_else(|| crate::authority::config::DEFAULT_BUILD_TAG.to_owned());
    // The flags are one more layer of knobs over the file's, merged by the one function
    // `config check` reports with (every key, the handlers' retry policies included). A
    // lease given alone keeps the file's renew interval, else takes a third of the lease.
    let flags = AuthorityKnobs {
        lease_ms: args.lease_ms.or(file.lease_ms),
        renew_ms: args.renew_ms.or(file.renew_ms),
        poll_ms: args.poll_ms,
        concurrency: args.concurrency,
        batch: args.batch,
        handler_limits: args.handler_limits.iter().cloned().collect(),
        keep_finished_ms: args.keep_finished,
        keep_audit_ms: args.keep_audit,
        dedup_window_ms: args.dedup_window,
        dedup_windows: args.dedup_windows.iter().cloned().collect(),
        trim_every_ms: args.trim_every,
        reclaim_after_ms: args.reclaim_after,
        step_aside: args.step_aside,
        ..AuthorityKnobs::default()
    };
    let config = flags.apply(file.apply(AuthorityConfig::new(instance, build)));
    config.validate()?;
    Ok(config)
}

/// Runs `leasehold authority` until SIGINT / SIGTERM, then releases what it owns.
///
/// # Errors
/// Unsafe knobs, no handler (neither a config file naming handlers nor a workload), an
/// unknown workload, a handler limit on a handler it does not run, a bad handler config
/// file, an unreadable store or an instance id another running authority holds (exit 2).
pub fn run(args: &AuthorityArgs, out: &mut dyn Write) -> CliResult {
    // Before the store is opened (or created): a bad file or knob starts and writes nothing.
    let settings = args.config.as_deref().map(Settings::load).transpose()?;
    let config = knobs(args, settings.as_ref())?;
    let workload = handlers(args, settings.as_ref())?;
    Settings::check_handler_limits(settings.as_ref(), &args.handler_limits, &workload)?;
    let file = settings
        .as_ref()
        .map(|s| s.authority.clone())
        .unwrap_or_default();
    let url = args
        .store
        .clone()
        .or_else(|| settings.as_ref().and_then(|s| s.store.clone()))
        .ok_or_else(|| Failure::usage("--store is required (or `store = …` in --config)"))?;
    // The process's one subscriber, for every thread, set before the store is opened so
    // the waits for a store that does not answer are logged like everything else:
    // `tracing` remembers per call site whether anyone listens, so a subscriber scoped to
    // some threads could miss lines.
    let format = args.log_format.or(file.log_format).unwrap_or_default();
    let clock: Arc<dyn crate::clock::Clock> = Arc::new(crate::clock::SystemClock);
    let _ = tracing::dispatcher::set_global_default(dispatch(format, clock, std::io::stderr));
    let bound = args.start_wait.map_or(DEFAULT_START_WAIT, |ms| {
        Duration::from_millis(ms.unsigned_abs())
    });
    let store = wait_for_store(
        bound,
        || {
            if args.create {
                create(&url).map(|(store, _)| store)
            } else {
                open(&url, OpenMode::Existing)
            }
        },
        |e, pause| {
            tracing::warn!(
                error = %e,
                "retryInMs" = u64::try_from(pause.as_millis()).unwrap_or(u64::MAX),
                "store-unavailable-at-start"
            );
        },
        std::thread::sleep,
    )
    .map_err(Failure::from)?;
    // An authority process over a store no other process can reach would run alone,
    // with nobody able to give it work or watch it.
    store.require(&[Capability::SharedAcrossProcesses])?;
    let store = args.state.witnessed(store)?;
    let metrics = match args.metrics_addr.as_ref().or(file.metrics_addr.as_ref()) {
        Some(addr) => Some(Arc::new(std::net::TcpListener::bind(addr).map_err(
            |e| Failure::usage(format!("--metrics-addr {addr}: cannot listen there: {e}")),
        )?)),
        None => None,
    };
    verify_beside(&url, &store);
    let options = RunOptions {
        exec_log: args.exec_log.clone().or(file.exec_log),
        metrics,
        ..RunOptions::default()
    };
    // The runtime's grace for running handlers (the renew interval), then the margin.
    let grace = Duration::from_millis(config.renew_interval_ms.unsigned_abs());
    let stopping = shutdown_within(config.instance_id.clone(), grace + STOP_MARGIN);
    let stats = tokio_runtime()?.block_on(run_authority_with(
        store, config, workload, options, stopping,
    ))?;
    writeln!(out, "{}", serde_json::to_string(&stats).unwrap_or_default())?;
    Ok(())
}

/// The whole-store check (`Store::verify`), run beside the authority rather than before it.
///
/// Opening checked only what is cheap (the header, the schema, each table's root page),
/// so claiming starts at once, however big the store. The whole-file check (seconds on a
/// store of a million items) runs on a thread of its own, through a read-only handle of
/// its own: a SQLite handle serves one call at a time, and a read in WAL mode holds up no
/// writer. Damage it finds is kept as the authority's store's `untrusted` reason, so the
/// runtime stops at its next turn and the process exits with that one line (exit 2), as
/// it does when one of its own reads meets a damaged page. Authorities started together on
/// one host check the store once between them (`Store::verify_once_per_host`).
fn verify_beside(url: &str, store: &crate::store::Store) {
    let label = store.describe();
    let url = url.to_owned();
    let store = store.clone();
    let started = std::time::Instant::now();
    // Asked before anything is logged: a check another process finishes from now on
    // covers this one.
    let asked = store.host_check();
    let spawned = std::thread::Builder::new()
        .name("store-verify".into())
        .spawn(move || {
            let verdict = store.verify_once_per_host(asked, || open(&url, OpenMode::ReadOnly));
            let ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
            match verdict {
                Ok(checked) => {
                    tracing::info!(store = %store.describe(), checked = checked.as_str(), ms, "store-verified");
                }
                // The runtime logs it as `store-untrusted` and stops.
                Err(e) if e.is_untrusted_store() => {}
                Err(e) => {
                    tracing::warn!(store = %store.describe(), error = %e, ms, "store-verify-skipped");
                }
            }
        });
    if let Err(e) = spawned {
        tracing::warn!(store = %label, error = %e, "store-verify-skipped");
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// Runs [`wait_for_store`] over `answers` (then `Ok`), napping on paper: the pauses
    /// it took and what it answered.
    fn waits(bound_s: u64, answers: Vec<crate::Error>) -> (Vec<u64>, crate::Result<u32>) {
        let mut answers = answers.into_iter();
        let mut tries = 0;
        let mut naps = Vec::new();
        let mut noted = 0;
        let out = wait_for_store(
            Duration::from_secs(bound_s),
            || {
                tries += 1;
                answers.next().map_or(Ok(tries), Err)
            },
            |_, _| noted += 1,
            |d| naps.push(u64::try_from(d.as_millis()).unwrap()),
        );
        assert_eq!(noted, naps.len(), "every wait is logged");
        (naps, out)
    }

    fn down() -> crate::Error {
        crate::Error::Unavailable("connection refused".into())
    }

    #[test]
    fn a_store_that_does_not_answer_at_start_is_waited_for_with_growing_pauses() {
        let (naps, out) = waits(60, vec![down(), down(), down(), down(), down(), down()]);
        assert_eq!(naps, [500, 1_000, 2_000, 4_000, 5_000, 5_000]);
        assert_eq!(out.unwrap(), 7, "the seventh try answered");
    }

    #[test]
    fn the_wait_at_start_is_bounded_and_a_refusal_is_not_waited_for() {
        let (naps, out) = waits(4, (0..10).map(|_| down()).collect());
        assert_eq!(naps, [500, 1_000, 2_000, 500], "4 s in all");
        assert_eq!(out.unwrap_err().code(), "STORE_UNAVAILABLE");
        let (naps, out) = waits(0, vec![down()]);
        assert!(naps.is_empty(), "0s exits at once");
        assert_eq!(out.unwrap_err().code(), "STORE_UNAVAILABLE");
        let refused = crate::Error::Refused("password authentication failed".into());
        let (naps, out) = waits(60, vec![refused]);
        assert!(naps.is_empty());
        assert_eq!(out.unwrap_err().code(), "STORE_REFUSED");
    }

    fn args(workload: Option<&str>, config: Option<PathBuf>) -> AuthorityArgs {
        AuthorityArgs {
            command: None,
            store: Some("memory".into()),
            create: false,
            instance: None,
            build: None,
            handler_version: None,
            workload: workload.map(str::to_owned),
            config,
            lease_ms: Some(3_000),
            renew_ms: None,
            poll_ms: Some(100),
            concurrency: Some(1),
            batch: Some(1),
            exec_log: None,
            log_format: Some(LogFormat::Off),
            metrics_addr: None,
            handler_limits: Vec::new(),
            keep_finished: None,
            keep_audit: None,
            dedup_window: None,
            dedup_windows: Vec::new(),
            trim_every: None,
            reclaim_after: None,
            step_aside: None,
            start_wait: None,
            state: crate::cli::witness::StateDirArg { state_dir: None },
            seed: 0,
        }
    }

    /// A config file's handlers run alone, a named demo set alone; the two together,
    /// or neither, are refused (`INVALID`), saying why.
    #[test]
    fn an_authority_runs_the_file_s_handlers_or_a_demo_set_never_both() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("handlers.toml");
        std::fs::write(
            &path,
            "[handlers.send-email]\nversion = \"3.0.0\"\nexec = [\"sh\", \"-c\", \"exit 0\"]\n",
        )
        .unwrap();
        let load = |a: &AuthorityArgs| a.config.as_deref().map(|p| Settings::load(p).unwrap());
        let with = |a: AuthorityArgs| handlers(&a, load(&a).as_ref());
        let alone = with(args(None, Some(path.clone()))).unwrap();
        assert_eq!(alone.names().collect::<Vec<_>>(), ["send-email"]);
        assert_eq!(alone.demo_name(), None);
        let demo = with(args(Some("default"), None)).unwrap();
        assert_eq!(demo.demo_name(), Some("default"));
        assert!(demo.get("charge-card").is_some());
        let both = with(args(Some("fast"), Some(path))).expect_err("both");
        assert_eq!(both.exit, 2);
        assert!(
            both.message.starts_with("INVALID: ")
                && both
                    .message
                    .contains("(send-email), and --workload fast names"),
            "{}",
            both.message
        );
        let none = handlers(&args(None, None), None).expect_err("no handler");
        assert_eq!(none.exit, 2);
        assert!(
            none.message.starts_with("INVALID: ")
                && none.message.contains("--config FILE")
                && none.message.contains("--workload default"),
            "{}",
            none.message
        );
    }
}
