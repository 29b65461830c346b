//! `leasehold authority forget ID`: the authority registry's operator commands.
//!
//! Forgetting removes a gone or stopped authority's registration (so its id no longer
//! shows, and can be reused at once), recorded in the audit log as the OS account running
//! the command. It is refused while the authority is live or silent: it may still be
//! working, and its claims are still fenced to it.

use std::io::Write;

use clap::{Args, Subcommand};

use super::output::cell;
use super::{CliResult, Failure, StoreArg};
use crate::error::Error;
use crate::ops::actor::operator;

/// `leasehold authority SUBCOMMAND`.
#[derive(Debug, Clone, Subcommand)]
pub enum AuthorityCommand {
    /// Remove a gone or stopped authority's registration (audited; refused while it is
    /// live or silent).
    Forget(ForgetArgs),
}

/// `leasehold authority forget`.
#[derive(Debug, Clone, Args)]
pub struct ForgetArgs {
    #[command(flatten)]
    pub store: StoreArg,
    /// The instance id to forget.
    pub id: String,
}

/// Runs an authority registry subcommand.
///
/// # Errors
/// An unknown id or a running authority (exit 1); an unreadable store (exit 2).
pub fn run(command: &AuthorityCommand, out: &mut dyn Write) -> CliResult {
    match command {
        AuthorityCommand::Forget(args) => forget(args, out),
    }
}

fn forget(args: &ForgetArgs, out: &mut dyn Write) -> CliResult {
    let store = args.store.open_writer()?;
    match store.forget_authority(&args.id, &operator()) {
        Ok((row, state)) => {
            writeln!(
                out,
                "forgot authority {} (was {}, pid {} on host {})",
                cell(&row.instance_id),
                state,
                row.pid,
                cell(&row.host)
            )?;
            Ok(())
        }
        Err(e) if e.is_store_failure() => Err(Failure::from(e)),
        Err(e @ Error::InstanceInUse { .. }) => Err(Failure::refused(format!(
            "{e}; it can be forgotten once it is gone or stopped"
        ))),
        Err(e) => Err(Failure::refused(e.to_string())),
    }
}
