//! `leasehold authority`: one real authority process over a store, until SIGINT or
//! SIGTERM (`leasehold authority forget ID` administers the registry, in `registry.rs`).
//! It never creates a store unless told to with `--create`.

use std::io::Write;
use std::path::PathBuf;

use clap::Args;

use super::log::{LogFormat, dispatch};
use super::{CliResult, Failure, StoreArg, tokio_runtime};
use crate::authority::config::{AuthorityConfig, generated_instance_id};
use crate::authority::runtime::{RunOptions, run_authority_with};
use crate::authority::workload;
use crate::store::create::create;
use crate::store::url::OpenMode;

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
    /// Create the store first if it does not exist yet, as `leasehold init` does. Without
    /// it a missing path, an empty file or a database without the schema is refused, so a
    /// mistyped `--store` never starts an authority over a new store nobody else uses.
    #[arg(long)]
    pub create: bool,
    #[command(flatten)]
    pub state: super::witness::StateDirArg,
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

/// Runs `leasehold authority` until SIGINT / SIGTERM, then releases what it owns.
///
/// # Errors
/// Unsafe knobs, an unknown workload, an unreadable store or an instance id another
/// running authority holds (exit 2).
pub fn run(args: &AuthorityArgs, out: &mut dyn Write) -> CliResult {
    let instance = args.instance.clone().unwrap_or_else(generated_instance_id);
    let renew = args.renew_ms.unwrap_or(args.lease_ms / 3);
    let mut config =
        AuthorityConfig::new(instance, args.build.clone()).with_timing(args.lease_ms, renew);
    config.poll_interval_ms = args.poll_ms;
    config.worker_concurrency = args.concurrency;
    config.claim_batch_size = args.batch;
    config.validate()?;
    let url = args
        .store
        .clone()
        .ok_or_else(|| Failure::usage("--store is required"))?;
    let store = if args.create {
        create(&url)?.0
    } else {
        StoreArg { store: url }.open(OpenMode::Existing)?
    };
    let store = args.state.witnessed(store)?;
    let workload = workload::named(&args.workload, args.seed)?;
    // The process's one subscriber, for every thread: `tracing` remembers per call site
    // whether anyone listens, so a subscriber scoped to some threads could miss lines.
    let log = dispatch(args.log_format, store.clock().clone(), std::io::stderr);
    let _ = tracing::dispatcher::set_global_default(log);
    let options = RunOptions {
        exec_log: args.exec_log.clone(),
        ..RunOptions::default()
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
