//! `leasehold store …`: administering the store itself.
//!
//! `store verify STORE [--json]` checks the whole store for damage (`Store::verify`: on
//! SQLite, `quick_check` of every page). Commands that write open a store in constant time
//! and leave the pages they do not read to SQLite's own checks, so this is where a whole
//! file is read end to end: on demand (it opens the store read-only and can run beside a
//! live fleet), as `init` does on an existing store and `copy` on its source. One line:
//! what was checked (exit 0), or the `STORE_CORRUPT` error (exit 2).
//!
//! `store accept-rewind --store STORE [--reason TEXT] [--dry-run] [--json]` accepts a store
//! that went back in time (`STORE_REWOUND`) as it is now. It first says what that gives
//! up: the store's revision against the one this host's witness saw, so how many
//! acknowledged commits are lost (what each held is not recorded, so the completions and
//! grants among them are not counted); `--dry-run` stops there. It then starts a new store
//! epoch — every generation minted afterwards is ordered after every generation of the
//! earlier epochs, so one handed out before the rewind is never handed out again — records
//! the acceptance in the audit log, and brings this host's witness to the store. Witnesses
//! on other hosts adopt the store when they see its epoch went up. A store this host's
//! writers already take (a rewind accepted before, the witness moved with it) is left as
//! it is, and the command says so: accepting twice does not start another epoch.
//!
//! `store acknowledge-server-change --store STORE [--reason TEXT] [--json]` acknowledges
//! the change of database server a PostgreSQL store shows (`store/server_record.rs`): once
//! an operator has made sure no commit was lost in a failover or a restore (or accepted the
//! loss), `check`, `inspect overview` and the dashboard stop warning of it and mark it
//! acknowledged. Audited (`server-change-acknowledged`); a later change is warned of again.
//! A store that shows no change, or one already acknowledged, is left as it is, and the
//! command says so (exit 0).

use std::io::Write;

use clap::{Args, Subcommand};

use super::output::json_line;
use super::witness::StateDirArg;
use super::{CliResult, StoreArg};
use crate::foundation::actor::operator;
use crate::foundation::text_cell::cell;
use crate::store::rewind::{AcceptedRewind, RewindCost};
use crate::store::server_record::{Acknowledgement, ServerChange};
use crate::store::url::{OpenMode, open};

/// `leasehold store …`: administering the store itself.
#[derive(Debug, Clone, Subcommand)]
pub enum StoreCommand {
    /// Check the whole store for damage (reads every page of a SQLite file; writes nothing).
    Verify(VerifyArgs),
    /// Accept a rewound store as it is now: start a new store epoch (audited).
    AcceptRewind(AcceptRewindArgs),
    /// Acknowledge the change of database server the store shows: stop warning of it
    /// (audited).
    AcknowledgeServerChange(AcknowledgeArgs),
}

/// Arguments of `leasehold store verify`.
#[derive(Debug, Clone, Args)]
pub struct VerifyArgs {
    /// The store to check: a SQLite file path or sqlite:PATH, or postgres://….
    #[arg(env = "LEASEHOLD_STORE", hide_env_values = true, value_name = "STORE")]
    pub store: String,
    /// Print the outcome as one JSON object.
    #[arg(long)]
    pub json: bool,
}

/// `--json` of `store verify`: the store and what was found sound.
#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct Verified {
    store: String,
    ok: bool,
    checked: String,
}

/// Arguments of `leasehold store accept-rewind`.
#[derive(Debug, Clone, Args)]
pub struct AcceptRewindArgs {
    #[command(flatten)]
    pub store: StoreArg,
    #[command(flatten)]
    pub state: StateDirArg,
    /// Why the rewind is accepted (kept in the audit log).
    #[arg(long)]
    pub reason: Option<String>,
    /// Print what accepting would give up, and accept nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Print the outcome as one JSON object.
    #[arg(long)]
    pub json: bool,
}

/// `--json` of `store accept-rewind`: what accepting gives up, and what was done.
#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct AcceptOutcome {
    store: String,
    cost: RewindCost,
    /// `None`: nothing was accepted (a dry run, or nothing to accept).
    accepted: Option<AcceptedRewind>,
    dry_run: bool,
}

/// Arguments of `leasehold store acknowledge-server-change`.
#[derive(Debug, Clone, Args)]
pub struct AcknowledgeArgs {
    #[command(flatten)]
    pub store: StoreArg,
    /// Why the change is acknowledged, e.g. what was checked (kept in the audit log).
    #[arg(long)]
    pub reason: Option<String>,
    /// Print the outcome as one JSON object.
    #[arg(long)]
    pub json: bool,
}

/// `--json` of `store acknowledge-server-change`.
#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct AcknowledgeOutcome {
    store: String,
    /// `acknowledged` (now), `already` (before: nothing written), `nothing` (no change).
    outcome: &'static str,
    change: Option<ServerChange>,
}

/// Runs a `leasehold store` subcommand.
///
/// # Errors
/// An unreadable or damaged store, or an unusable state directory (exit 2).
pub fn run(command: &StoreCommand, out: &mut dyn Write) -> CliResult {
    match command {
        StoreCommand::Verify(args) => verify(args, out),
        StoreCommand::AcceptRewind(args) => accept_rewind(args, out),
        StoreCommand::AcknowledgeServerChange(args) => acknowledge(args, out),
    }
}

fn verify(args: &VerifyArgs, out: &mut dyn Write) -> CliResult {
    super::refuse_memory(&args.store, "verify")?;
    let store = open(&args.store, OpenMode::ReadOnly)?;
    let verified = Verified {
        store: store.describe(),
        ok: true,
        checked: store.verify()?,
    };
    if args.json {
        json_line(out, &verified)?;
    } else {
        writeln!(out, "ok: {}: {}", cell(&verified.store), verified.checked)?;
    }
    Ok(())
}

fn accept_rewind(args: &AcceptRewindArgs, out: &mut dyn Write) -> CliResult {
    // The witnesses are opened without judging the store: it is behind them by definition.
    let store = crate::store::url::open_to_accept(&args.store.store)?;
    let store = args.state.witnessed_unjudged(store)?;
    let cost = store.rewind_cost()?;
    let accepted = if cost.rewound && !args.dry_run {
        Some(store.accept_rewind(&operator(), args.reason.as_deref())?)
    } else {
        None
    };
    if args.json {
        return Ok(json_line(
            out,
            &AcceptOutcome {
                store: store.describe(),
                cost,
                accepted,
                dry_run: args.dry_run,
            },
        )?);
    }
    if let Some(seen) = cost.witnessed.filter(|_| !cost.rewound) {
        writeln!(
            out,
            "nothing to accept: {} is at revision {} (epoch {}) and this host saw revision {} (epoch {}): its writers take it as it is, so no new epoch was started",
            cell(&store.describe()),
            cost.store.revision,
            cost.store.epoch,
            seen.revision,
            seen.epoch
        )?;
        return Ok(());
    }
    writeln!(out, "{}", cost.line())?;
    if let Some(accepted) = accepted {
        writeln!(
            out,
            "accepted {} as it is: store epoch {}, every generation minted from now on is above {} ({} leases and work items raised)",
            cell(&store.describe()),
            accepted.epoch,
            accepted.generation_floor,
            accepted.raised
        )?;
    }
    Ok(())
}

fn acknowledge(args: &AcknowledgeArgs, out: &mut dyn Write) -> CliResult {
    super::refuse_memory(&args.store.store, "acknowledge")?;
    let store = args.store.open_writer()?;
    let acknowledged = store.acknowledge_server_change(&operator(), args.reason.as_deref())?;
    if args.json {
        let (outcome, change) = match acknowledged {
            Acknowledgement::Acknowledged(c) => ("acknowledged", Some(c)),
            Acknowledgement::Already(c) => ("already", Some(c)),
            Acknowledgement::Nothing => ("nothing", None),
        };
        let store = store.describe();
        return Ok(json_line(
            out,
            &AcknowledgeOutcome {
                store,
                outcome,
                change,
            },
        )?);
    }
    let line = match acknowledged {
        Acknowledgement::Acknowledged(c) => format!(
            "acknowledged: {}; check, inspect overview and the dashboard no longer warn of it (audited as server-change-acknowledged)",
            c.sentence()
        ),
        Acknowledgement::Already(c) => format!(
            "nothing to acknowledge: this change was acknowledged before: {}",
            c.sentence()
        ),
        Acknowledgement::Nothing => format!(
            "nothing to acknowledge: {} shows no change of database server",
            cell(&store.describe())
        ),
    };
    Ok(writeln!(out, "{line}")?)
}
