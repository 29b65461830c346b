//! The long-running subcommands: `authority` (one real authority process), `demo` (the
//! embedded cluster, headless or with the dashboard), `attach` (the dashboard over a store)
//! and `check` (the invariant checker).

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use clap::Args;

use super::log::{LogFormat, dispatch};
use super::{CliResult, Failure, StoreArg};
use crate::authority::config::{AuthorityConfig, generated_instance_id};
use crate::authority::runtime::{RunOptions, run_authority_with};
use crate::authority::workload;
use crate::check::{CheckOptions, check};
use crate::cluster::{Cluster, ClusterOptions, run_headless};
use crate::ops::actor::operator;
use crate::store::url::OpenMode;
use crate::tui::TuiOptions;

/// `leasehold demo`.
#[derive(Debug, Clone, Args)]
pub struct DemoArgs {
    /// How many authorities the embedded cluster runs.
    #[arg(long, default_value_t = 3)]
    pub authorities: u32,
    /// A named fault scenario.
    #[arg(long)]
    pub scenario: Option<String>,
    /// The RNG seed (printed when not given).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Run without the dashboard and print the checker's report.
    #[arg(long, requires = "duration")]
    pub headless: bool,
    /// How long a headless run lasts (e.g. `30s`, `5m`).
    #[arg(long)]
    pub duration: Option<String>,
    /// Print the headless report as one JSON object.
    #[arg(long)]
    pub json: bool,
    /// The dashboard theme.
    #[arg(long)]
    pub theme: Option<String>,
}

/// `leasehold attach`.
#[derive(Debug, Clone, Args)]
pub struct AttachArgs {
    /// The work store: a SQLite file path or sqlite:PATH, postgres://…, or memory.
    #[arg(env = "LEASEHOLD_STORE", hide_env_values = true, value_name = "STORE")]
    pub store: String,
    /// Disable operator actions (cancel).
    #[arg(long)]
    pub read_only: bool,
    /// A theme from `themes/` or a theme file.
    #[arg(long)]
    pub theme: Option<String>,
}

/// `leasehold authority`: runs one authority, or with a subcommand administers the
/// registry (`leasehold authority forget ID`).
#[derive(Debug, Clone, Args)]
#[command(subcommand_negates_reqs = true, args_conflicts_with_subcommands = true)]
pub struct AuthorityArgs {
    #[command(subcommand)]
    pub command: Option<super::registry::AuthorityCommand>,
    /// The work store: a SQLite file path or sqlite:PATH, postgres://…, or memory.
    #[arg(
        long,
        env = "LEASEHOLD_STORE",
        hide_env_values = true,
        value_name = "STORE",
        required = true
    )]
    pub store: Option<String>,
    /// This authority's instance id (generated when not given).
    #[arg(long)]
    pub instance: Option<String>,
    /// The build tag whose compatibility key this authority runs under.
    #[arg(long, default_value = crate::build_key::DEFAULT_BUILD_TAG)]
    pub build: String,
    /// The handler set to register.
    #[arg(long, default_value = "default")]
    pub workload: String,
    /// Lease window in ms (renewal runs at a third of it unless `--renew-ms` is given; the
    /// heartbeat at a third of it, at most every 10 s, so liveness follows the lease).
    #[arg(long, default_value_t = crate::authority::config::DEFAULT_LEASE_DURATION_MS)]
    pub lease_ms: i64,
    /// Renew cadence in ms; must be below the lease window.
    #[arg(long)]
    pub renew_ms: Option<i64>,
    /// Poll cadence in ms.
    #[arg(long, default_value_t = crate::authority::config::DEFAULT_POLL_INTERVAL_MS)]
    pub poll_ms: i64,
    /// Items in flight at once (work items and workflow steps together).
    #[arg(long, default_value_t = crate::authority::config::DEFAULT_WORKER_CONCURRENCY)]
    pub concurrency: usize,
    /// Items claimed per poll, in one transaction.
    #[arg(long, default_value_t = crate::authority::config::DEFAULT_CLAIM_BATCH_SIZE)]
    pub batch: usize,
    /// Append one JSON line per physical attempt to this file.
    #[arg(long, value_name = "FILE")]
    pub exec_log: Option<PathBuf>,
    /// The log lines on stderr: for people (every value escaped), one JSON object per
    /// line, or none.
    #[arg(long, value_enum, default_value_t = LogFormat::Human)]
    pub log_format: LogFormat,
    /// Seed of the workload's simulated latency and failures.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
}

/// `leasehold check`.
#[derive(Debug, Clone, Args)]
pub struct CheckArgs {
    #[command(flatten)]
    pub store: StoreArg,
    /// One JSON object per line.
    #[arg(long)]
    pub json: bool,
    /// Compatible work due for longer than this many ms counts as stranded.
    #[arg(long, default_value_t = 60_000)]
    pub stranded_after_ms: i64,
}

fn tokio_runtime() -> Result<tokio::runtime::Runtime, Failure> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| Failure::usage(format!("cannot start the async runtime: {e}")))
}

/// Resolves on SIGINT or SIGTERM.
async fn shutdown_signal() {
    let interrupt = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut term =
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(term) => term,
                Err(_) => {
                    let _ = interrupt.await;
                    return;
                }
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

/// Runs `leasehold authority` until SIGINT / SIGTERM, then releases what it owns.
///
/// # Errors
/// Unsafe knobs, an unknown workload, an unreadable store or an instance id another
/// running authority holds (exit 2).
pub fn authority(args: &AuthorityArgs, out: &mut dyn Write) -> CliResult {
    let instance = args.instance.clone().unwrap_or_else(generated_instance_id);
    let renew = args.renew_ms.unwrap_or(args.lease_ms / 3);
    let mut config =
        AuthorityConfig::new(instance, args.build.clone()).with_timing(args.lease_ms, renew);
    config.poll_interval_ms = args.poll_ms;
    config.worker_concurrency = args.concurrency;
    config.claim_batch_size = args.batch;
    config.validate()?;
    let store = StoreArg {
        store: args
            .store
            .clone()
            .ok_or_else(|| Failure::usage("--store is required"))?,
    }
    .open(OpenMode::ReadWrite)?;
    let workload = workload::named(&args.workload, args.seed)?;
    // The process's one subscriber, for every thread: `tracing` remembers per call site
    // whether anyone listens, so a subscriber scoped to some threads could miss lines.
    let log = dispatch(args.log_format, store.clock().clone(), std::io::stderr);
    let _ = tracing::dispatcher::set_global_default(log);
    let options = RunOptions {
        exec_log: args.exec_log.clone(),
        log: None,
        shutdown_grace_ms: None,
    };
    let stats = tokio_runtime()?.block_on(run_authority_with(
        store,
        config,
        workload,
        options,
        shutdown_signal(),
    ))?;
    writeln!(out, "{}", serde_json::to_string(&stats).unwrap_or_default())?;
    Ok(())
}

/// Runs `leasehold check`: exit 1 on any violation.
///
/// # Errors
/// Violations (exit 1), an unreadable store (exit 2).
pub fn run_check(args: &CheckArgs, out: &mut dyn Write) -> CliResult {
    let store = args.store.open(OpenMode::ReadOnly)?;
    let options = CheckOptions {
        stranded_after_ms: args.stranded_after_ms,
        ..CheckOptions::at(store.now())
    };
    let report = check(&store, &options)?;
    if args.json {
        write!(out, "{}", crate::check::render_json_lines(&report))?;
    } else {
        write!(out, "{}", crate::check::render_text(&report))?;
    }
    if report.is_clean() {
        Ok(())
    } else {
        Err(Failure::refused(format!(
            "{} invariant violation(s)",
            report.violations.len()
        )))
    }
}

/// Parses `30s`, `5m`, `1500ms`, `2h` or plain seconds.
fn parse_duration(text: &str) -> Result<i64, Failure> {
    crate::clock::parse_duration(text).ok_or_else(|| {
        Failure::usage(format!(
            "cannot read duration {:?}: use e.g. 30s, 5m, 1500ms",
            text.trim()
        ))
    })
}

/// Runs `leasehold demo`: headless prints the report (exit 1 on a violation); otherwise
/// the dashboard drives a live cluster.
///
/// # Errors
/// Unknown scenario (exit 2); a violation in a headless run (exit 1).
pub fn demo(args: &DemoArgs, out: &mut dyn Write) -> CliResult {
    let scenario = args.scenario.clone().unwrap_or_else(|| {
        if args.headless {
            "chaos".into()
        } else {
            "steady".into()
        }
    });
    let seed = args.seed.unwrap_or_else(|| u64::from(std::process::id()));
    let authorities = usize::try_from(args.authorities).unwrap_or(3).max(1);
    if args.headless {
        let duration = parse_duration(args.duration.as_deref().unwrap_or("60s"))?;
        let report = run_headless(&scenario, seed, duration, authorities)?;
        if args.json {
            writeln!(
                out,
                "{}",
                serde_json::to_string(&report).unwrap_or_default()
            )?;
        } else {
            write!(out, "{}", crate::cluster::render_text(&report))?;
        }
        return if report.checker.violations == 0 {
            Ok(())
        } else {
            Err(Failure::refused(format!(
                "{} invariant violation(s)",
                report.checker.violations
            )))
        };
    }
    need_terminal()?;
    let options = ClusterOptions::live(
        &scenario,
        seed,
        authorities,
        crate::clock::Clock::now(&crate::clock::SystemClock),
    );
    let cluster = Arc::new(Cluster::new(options)?);
    let live = cluster.spawn_live(1.0, Duration::from_millis(50));
    let store = cluster.store();
    let tui = TuiOptions {
        refresh_ms: 250,
        read_only: false,
        theme: args.theme.clone().unwrap_or_else(|| "dark".into()),
        demo: Some(cluster.clone()),
        actor: operator(),
        writer: None,
    };
    let result = tokio_runtime()?.block_on(crate::tui::run(store, tui));
    drop(live);
    result.map_err(Failure::from)
}

/// Runs `leasehold attach`: the dashboard over a store, opened read-only. A write handle
/// is opened only for an operator action (never with `--read-only`), and never creates a
/// store: a missing, empty or foreign one is refused before the terminal is touched.
///
/// # Errors
/// An unreadable store or no terminal (exit 2).
pub fn attach(args: &AttachArgs) -> CliResult {
    let store = crate::store::url::open(&args.store, OpenMode::ReadOnly).map_err(Failure::from)?;
    need_terminal()?;
    let url = args.store.clone();
    let tui = TuiOptions {
        refresh_ms: 250,
        read_only: args.read_only,
        theme: args.theme.clone().unwrap_or_else(|| "dark".into()),
        demo: None,
        actor: operator(),
        writer: (!args.read_only).then(|| {
            let open: crate::tui::writer::OpenWriter =
                Arc::new(move || crate::store::url::open(&url, OpenMode::Existing));
            open
        }),
    };
    tokio_runtime()?
        .block_on(crate::tui::run(store, tui))
        .map_err(Failure::from)
}

/// The dashboard draws on a terminal: without one (output piped, no tty, CI) say so and
/// point at the command that prints the same facts as text.
fn need_terminal() -> CliResult {
    use std::io::IsTerminal;
    if std::io::stdout().is_terminal() && std::io::stdin().is_terminal() {
        Ok(())
    } else {
        Err(Failure::usage(
            "the dashboard needs a terminal (stdin and stdout are not both one); \
             for plain text use `leasehold inspect --store STORE overview`",
        ))
    }
}
