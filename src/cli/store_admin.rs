//! `leasehold store accept-rewind --store STORE [--reason TEXT] [--json]`: accepts a store
//! that went back in time (`STORE_REWOUND`) as it is now.
//!
//! It starts a new store epoch — every generation minted afterwards is ordered after every
//! generation of the earlier epochs, so one handed out before the rewind is never handed
//! out again — records the acceptance in the audit log, and brings this host's witness to
//! the store. Witnesses on other hosts adopt the store when they see its epoch went up.

use std::io::Write;

use clap::{Args, Subcommand};

use super::output::json_line;
use super::witness::StateDirArg;
use super::{CliResult, StoreArg};
use crate::foundation::actor::operator;
use crate::store::url::OpenMode;

/// `leasehold store …`: administering the store itself.
#[derive(Debug, Clone, Subcommand)]
pub enum StoreCommand {
    /// Accept a rewound store as it is now: start a new store epoch (audited).
    AcceptRewind(AcceptRewindArgs),
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
    /// Print the outcome as one JSON object.
    #[arg(long)]
    pub json: bool,
}

/// Runs a `leasehold store` subcommand.
///
/// # Errors
/// An unreadable or damaged store, or an unusable state directory (exit 2).
pub fn run(command: &StoreCommand, out: &mut dyn Write) -> CliResult {
    match command {
        StoreCommand::AcceptRewind(args) => accept_rewind(args, out),
    }
}

fn accept_rewind(args: &AcceptRewindArgs, out: &mut dyn Write) -> CliResult {
    let store = args.store.open(OpenMode::Existing)?;
    // The witness is opened without judging the store: it is behind it by definition.
    let store = args.state.witnessed_unjudged(store)?;
    let accepted = store.accept_rewind(&operator(), args.reason.as_deref())?;
    if args.json {
        json_line(out, &accepted)?;
    } else {
        writeln!(
            out,
            "accepted {} as it is: store epoch {}, every generation minted from now on is above {} ({} leases and work items raised)",
            store.describe(),
            accepted.epoch,
            accepted.generation_floor,
            accepted.raised
        )?;
    }
    Ok(())
}
