//! `leasehold bench work|enqueue|bulk|workflows|dashboard|fairness --store STORE [knobs] [--json]`
//! (`fairness --case backlog|slow-fast`).
//!
//! `--store` may come before or after the mode (`leasehold bench --store S work` as in
//! the command line contract, or `leasehold bench work --store S`). The report goes to stdout (a table, or one
//! JSON object with `--json`); progress goes to stderr.

use std::io::Write;
use std::time::Duration;

use clap::{Args, Subcommand, ValueEnum};

use super::{CliResult, Failure};
use crate::authority::config::StepAside;
use crate::authority::workload::{NOOP_BLOCKING_WORKLOAD, NOOP_HANDLER};
use crate::bench::bulk::{self, BulkBench};
use crate::bench::dashboard::{self, DashboardBench, default_writers};
use crate::bench::enqueue::{self, EnqueueBench};
use crate::bench::fairness::{self, FairnessBench};
use crate::bench::slow_fast::{self, SlowFastBench};
use crate::bench::work::{self, WorkBench};
use crate::bench::workflows::{self, WorkflowBench};
use crate::bench::{BENCH_BUILD, FleetOptions, Report};
use crate::store::url::StoreUrl;

/// `leasehold bench`.
#[derive(Debug, Clone, Args)]
pub struct BenchArgs {
    /// The store to measure (a scratch store for `work` and `workflows`: they write, and
    /// create it if it does not exist).
    #[arg(
        long,
        global = true,
        env = "LEASEHOLD_STORE",
        hide_env_values = true,
        value_name = "STORE"
    )]
    pub store: Option<String>,
    /// Print the report as one JSON object.
    #[arg(long, global = true)]
    pub json: bool,
    /// Give up after this many seconds.
    #[arg(long, global = true, default_value_t = 600)]
    pub timeout_s: u64,
    #[command(subcommand)]
    pub mode: BenchMode,
}

/// What to measure.
#[derive(Debug, Clone, Subcommand)]
pub enum BenchMode {
    /// Enqueue N no-op effects, then drain them with K authorities.
    Work(WorkArgs),
    /// Single-item enqueue by one producer, then by many at once, beside the disk's
    /// fsync rate measured in the same run.
    Enqueue(EnqueueArgs),
    /// `leasehold work enqueue --from FILE` (one process) beside the library's batched
    /// enqueue in the same run, and beside one process per item.
    Bulk(BulkArgs),
    /// Run M three-step workflows to completion with K authorities.
    Workflows(WorkflowArgs),
    /// The dashboard's read-and-render path, off-screen, while authorities write.
    Dashboard(DashboardArgs),
    /// Schedules, workflows and a second handler's effects behind one handler's backlog,
    /// next to the same on an idle store; or (`--case slow-fast`) a fast handler's backlog
    /// beside a slow handler's, next to the same alone.
    Fairness(FairnessArgs),
}

/// The authorities that drain.
#[derive(Debug, Clone, Args)]
pub struct FleetArgs {
    /// How many authorities drain.
    #[arg(long, default_value_t = 2)]
    pub authorities: usize,
    /// Run them as `leasehold authority` OS processes instead of in this process.
    #[arg(long)]
    pub processes: bool,
    /// Items in flight per authority.
    #[arg(long, default_value_t = 256)]
    pub concurrency: usize,
    /// Items claimed per transaction (default: the concurrency).
    #[arg(long)]
    pub batch: Option<usize>,
    /// Lease window in ms.
    #[arg(long, default_value_t = 30_000)]
    pub lease_ms: i64,
    /// Poll cadence in ms when idle (a finished batch re-polls at once).
    #[arg(long, default_value_t = 10)]
    pub poll_ms: i64,
    /// Register the no-op handler as a blocking handler (run on the blocking pool, as an
    /// application's synchronous handlers are) instead of an async one.
    #[arg(long)]
    pub blocking_handler: bool,
    /// Whether the authorities step aside from a crowded write lock: auto (on SQLite
    /// only), on or off, as `leasehold authority --step-aside`.
    #[arg(long, value_name = "WHEN", default_value = "auto", value_parser = StepAside::parse)]
    pub step_aside: StepAside,
}

impl FleetArgs {
    fn options(&self, url: &str) -> FleetOptions {
        FleetOptions {
            url: url.to_owned(),
            authorities: self.authorities,
            build: BENCH_BUILD.into(),
            workload: if self.blocking_handler {
                NOOP_BLOCKING_WORKLOAD
            } else {
                NOOP_HANDLER
            }
            .into(),
            concurrency: self.concurrency,
            batch: self.batch.unwrap_or(self.concurrency),
            lease_ms: self.lease_ms,
            poll_ms: self.poll_ms,
            processes: self.processes,
            step_aside: self.step_aside,
        }
    }
}

/// `leasehold bench work`.
#[derive(Debug, Clone, Args)]
pub struct WorkArgs {
    /// How many no-op effects to enqueue and drain.
    #[arg(long, default_value_t = 20_000)]
    pub items: u64,
    /// Of those, how many are enqueued one per transaction (the rest in batches).
    #[arg(long, default_value_t = 2_000)]
    pub single: u64,
    /// Items per enqueue transaction after the single ones.
    #[arg(long, default_value_t = 500)]
    pub enqueue_batch: usize,
    #[command(flatten)]
    pub fleet: FleetArgs,
}

/// `leasehold bench enqueue`.
#[derive(Debug, Clone, Args)]
pub struct EnqueueArgs {
    /// Items the lone producer enqueues, and the concurrent producers again together.
    #[arg(long, default_value_t = 2_000)]
    pub items: u64,
    /// Producer threads of the concurrent run.
    #[arg(long, default_value_t = 16)]
    pub producers: usize,
    /// How long the fsync probe runs, in ms.
    #[arg(long, default_value_t = 2_000)]
    pub probe_ms: u64,
}

/// `leasehold bench bulk`.
#[derive(Debug, Clone, Args)]
pub struct BulkArgs {
    /// Items the library enqueues, and the command line's bulk enqueue again from a file.
    #[arg(long, default_value_t = 100_000)]
    pub items: u64,
    /// Items per library transaction (the bulk command's own batch by default).
    #[arg(long, default_value_t = super::enqueue_from::BATCH)]
    pub batch: usize,
    /// `work enqueue` processes run one after another, one item each.
    #[arg(long, default_value_t = 20)]
    pub single: u64,
}

/// `leasehold bench workflows`.
#[derive(Debug, Clone, Args)]
pub struct WorkflowArgs {
    /// How many instances to start and run.
    #[arg(long, default_value_t = 2_000)]
    pub instances: u64,
    /// Of those, how many are started one per transaction (the rest in batches).
    #[arg(long, default_value_t = 200)]
    pub single: u64,
    #[command(flatten)]
    pub fleet: FleetArgs,
}

/// `leasehold bench dashboard`.
#[derive(Debug, Clone, Args)]
pub struct DashboardArgs {
    /// Timed refreshes per view.
    #[arg(long, default_value_t = 200)]
    pub refreshes: usize,
    /// Off-screen terminal width.
    #[arg(long, default_value_t = 160)]
    pub width: u16,
    /// Off-screen terminal height.
    #[arg(long, default_value_t = 48)]
    pub height: u16,
    /// Authority processes (build v1, `fast` workload) working the store's own items
    /// during the refreshes; 0 for none.
    #[arg(long, default_value_t = 2)]
    pub writers: usize,
}

/// Which fairness to measure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum FairnessCase {
    /// Schedules, workflows and a second handler behind one handler's backlog.
    Backlog,
    /// A fast handler's backlog due together with a slow handler's, and alone.
    SlowFast,
}

/// `leasehold bench fairness`: one in-process authority.
#[derive(Debug, Clone, Args)]
pub struct FairnessArgs {
    /// What to measure.
    #[arg(long, value_enum, default_value_t = FairnessCase::Backlog)]
    pub case: FairnessCase,
    /// Effects of one handler enqueued as the backlog before the second run (backlog).
    #[arg(long, default_value_t = 1_000_000)]
    pub items: u64,
    /// The schedule's interval in ms (backlog).
    #[arg(long, default_value_t = 5_000)]
    pub schedule_ms: i64,
    /// How long each run (idle, then behind the backlog) lasts, in seconds (backlog).
    #[arg(long, default_value_t = 30)]
    pub window_s: u64,
    /// Workflows started, and second-handler effects enqueued, per second, each (backlog).
    #[arg(long, default_value_t = 10)]
    pub per_second: u64,
    /// The slow handler's effects (slow-fast).
    #[arg(long, default_value_t = 1_000)]
    pub slow_items: u64,
    /// The fast handler's effects, in each run (slow-fast).
    #[arg(long, default_value_t = 5_000)]
    pub fast_items: u64,
    /// How long one slow attempt takes, in ms (slow-fast).
    #[arg(long, default_value_t = 500)]
    pub slow_ms: u64,
    /// How long one fast attempt takes, in ms (slow-fast).
    #[arg(long, default_value_t = 3)]
    pub fast_ms: u64,
    /// Items in flight at once.
    #[arg(long, default_value_t = 32)]
    pub concurrency: usize,
    /// Items claimed per transaction (default: the concurrency).
    #[arg(long)]
    pub batch: Option<usize>,
    /// Lease window in ms.
    #[arg(long, default_value_t = 30_000)]
    pub lease_ms: i64,
    /// Poll cadence in ms when idle (a finished batch re-polls at once).
    #[arg(long, default_value_t = 100)]
    pub poll_ms: i64,
}

/// Runs `leasehold bench`.
///
/// # Errors
/// A missing or unreadable store, a non-empty store for `work` / `workflows`, unsafe knobs.
pub fn run(args: &BenchArgs, out: &mut dyn Write) -> CliResult {
    let Some(url) = args.store.as_deref() else {
        return Err(Failure::usage(
            "bench needs --store STORE (or LEASEHOLD_STORE)",
        ));
    };
    let timeout = Duration::from_secs(args.timeout_s);
    let quiet = args.json;
    let report: Report = match &args.mode {
        BenchMode::Work(w) => work::run(
            &crate::bench::open_writer(url)?,
            &WorkBench {
                items: w.items,
                single: w.single,
                enqueue_batch: w.enqueue_batch,
                fleet: w.fleet.options(url),
                timeout,
                quiet,
            },
        )?,
        BenchMode::Enqueue(e) => enqueue::run(
            &crate::bench::open_writer(url)?,
            &EnqueueBench {
                items: e.items,
                producers: e.producers,
                probe: Duration::from_millis(e.probe_ms),
                probe_dir: enqueue::probe_dir(&StoreUrl::parse(url)?),
            },
        )?,
        BenchMode::Bulk(b) => bulk::run(
            &crate::bench::open_writer(url)?,
            &BulkBench {
                items: b.items,
                batch: b.batch,
                single: b.single,
                url: url.to_owned(),
            },
        )?,
        BenchMode::Workflows(w) => workflows::run(
            &crate::bench::open_writer(url)?,
            &WorkflowBench {
                instances: w.instances,
                single: w.single,
                fleet: w.fleet.options(url),
                timeout,
                quiet,
            },
        )?,
        BenchMode::Fairness(f) => fairness_case(url, f, timeout, quiet)?,
        BenchMode::Dashboard(d) => dashboard::run(&DashboardBench {
            url: url.to_owned(),
            refreshes: d.refreshes,
            width: d.width,
            height: d.height,
            writers: default_writers(url, d.writers, 30_000),
            timeout,
        })?,
    };
    if args.json {
        writeln!(out, "{}", report.to_json())?;
    } else {
        write!(out, "{}", report.to_text())?;
    }
    match crate::bench::broken(&report) {
        Some(broken) => Err(Failure::refused(broken)),
        None => Ok(()),
    }
}

/// `bench fairness`: the case asked for, on one authority at the given knobs.
fn fairness_case(
    url: &str,
    f: &FairnessArgs,
    timeout: Duration,
    quiet: bool,
) -> Result<Report, Failure> {
    let fleet = FleetArgs {
        authorities: 1,
        processes: false,
        concurrency: f.concurrency,
        batch: f.batch,
        lease_ms: f.lease_ms,
        poll_ms: f.poll_ms,
        // Its handlers are its own (`bench::fairness`, `bench::slow_fast`).
        blocking_handler: false,
        step_aside: StepAside::Auto,
    }
    .options(url);
    let store = crate::bench::open_writer(url)?;
    Ok(match f.case {
        FairnessCase::Backlog => fairness::run(
            &store,
            &FairnessBench {
                items: f.items,
                schedule_ms: f.schedule_ms,
                window: Duration::from_secs(f.window_s),
                per_second: f.per_second,
                fleet,
                timeout,
                quiet,
            },
        )?,
        FairnessCase::SlowFast => slow_fast::run(
            &store,
            &SlowFastBench {
                slow_items: f.slow_items,
                fast_items: f.fast_items,
                slow: Duration::from_millis(f.slow_ms),
                fast: Duration::from_millis(f.fast_ms),
                fleet,
                timeout,
            },
        )?,
    })
}
