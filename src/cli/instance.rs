//! `leasehold history` and `leasehold cancel`: one workflow instance, read or cancelled.
//!
//! `cancel` exits 0 when it cancelled the instance, 1 when refused (already completed,
//! failed or cancelled, or the instance belongs to another build), 2 for an unknown
//! instance or an unreadable store. Every attempt is recorded in the audit log through
//! [`crate::ops::cancel`] — the same entry the dashboard writes — with who (the OS account
//! `name@host`), when, the outcome and the reason; the instance's own history records a
//! cancel too.

use std::io::Write;

use clap::Args;

use super::output::{cell, cell_max, json_line};
use super::{CliResult, Failure, StoreArg};
use crate::authority::handlers::HandlerVersion;
use crate::clock::format_instant;
use crate::error::Error;
use crate::ids::check_id;
use crate::ops::actor::operator;
use crate::ops::cancel::{self as ops, Verdict};
use crate::store::url::OpenMode;

/// `leasehold history`.
#[derive(Debug, Clone, Args)]
pub struct HistoryArgs {
    #[command(flatten)]
    pub store: StoreArg,
    /// The workflow instance.
    #[arg(value_name = "INSTANCE_ID")]
    pub instance: String,
    /// One JSON object per line.
    #[arg(long)]
    pub json: bool,
}

/// `leasehold cancel`.
#[derive(Debug, Clone, Args)]
pub struct CancelArgs {
    #[command(flatten)]
    pub store: StoreArg,
    /// The workflow instance.
    #[arg(value_name = "INSTANCE_ID")]
    pub instance: String,
    /// Why, for the audit log and the instance's history.
    #[arg(long)]
    pub reason: Option<String>,
    /// The version of the built-in handlers the cancelling operator runs (default 1.0.0):
    /// an instance only such code may run is cancelled, another is refused.
    #[command(flatten)]
    pub version: super::handler_version::HandlerVersionArg,
}

/// Runs `leasehold history`.
///
/// # Errors
/// An unknown instance or unreadable store (exit 2).
pub fn history(args: &HistoryArgs, out: &mut dyn Write) -> CliResult {
    check_id("instance id", &args.instance)?;
    let store = args.store.open(OpenMode::ReadOnly)?;
    if store.instance(&args.instance)?.is_none() {
        return Err(Error::NotFound {
            what: "workflow instance".into(),
            id: args.instance.clone(),
        }
        .into());
    }
    for record in store.workflow_history(&args.instance)? {
        if args.json {
            json_line(out, &record)?;
        } else {
            writeln!(
                out,
                "{:>3}  rev {:<4} {}  {:<16} {:<24} {}",
                record.position,
                record.instance_revision,
                format_instant(record.at),
                record.kind,
                cell(
                    record
                        .activation_id
                        .as_deref()
                        .or(record.step_id.as_deref())
                        .unwrap_or("-")
                ),
                cell_max(&record.detail, 120)
            )?;
        }
    }
    Ok(())
}

/// Runs `leasehold cancel`.
///
/// # Errors
/// A refusal (exit 1), an unknown instance or unreadable store (exit 2).
pub fn cancel(args: &CancelArgs, out: &mut dyn Write) -> CliResult {
    check_id("instance id", &args.instance)?;
    let store = args.store.open_writer()?;
    let reason = args.reason.clone().unwrap_or_default();
    let keys = args.version.caller_keys(&store)?;
    let verdict = ops::cancel(&store, &args.instance, Some(&keys), &operator(), &reason)?;
    let id = cell(&args.instance);
    match verdict {
        Verdict::Cancelled => {
            writeln!(
                out,
                "{id} cancelled: no further steps will run (committed actions and dispatched effects stand)"
            )?;
            Ok(())
        }
        Verdict::Finished(status) => Err(Failure::refused(format!(
            "{id} is already {status}: nothing to cancel"
        ))),
        Verdict::Unknown => Err(Error::NotFound {
            what: "workflow instance".into(),
            id: args.instance.clone(),
        }
        .into()),
        Verdict::Incompatible => Err(Failure::refused(format!(
            "{id} belongs to another build: handlers at {} may not run it, so may not cancel it",
            cell(
                args.version
                    .handler_version
                    .as_deref()
                    .unwrap_or(HandlerVersion::DEMO)
            )
        ))),
        Verdict::Failed(code) => Err(Failure::refused(format!("{id}: cancel failed: {code}"))),
    }
}
