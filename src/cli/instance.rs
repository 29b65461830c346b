//! `leasehold history` and `leasehold cancel`: one workflow instance, read or cancelled.
//!
//! `cancel` exits 0 when the instance is (now or already) cancelled, 1 when refused
//! (already completed / failed, or the instance belongs to another build), 2 for an
//! unknown instance or an unreadable store. Every cancel is recorded in the audit log with
//! who (`user@host`), when and why; the instance's own history records it too.

use std::io::Write;

use clap::Args;

use super::output::{cell, cell_max, json_line};
use super::{CliResult, Failure, StoreArg};
use crate::clock::format_instant;
use crate::error::Error;
use crate::ids::check_id;
use crate::store::url::OpenMode;
use crate::workflow::engine::CancelOutcome;

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
    /// The build whose compatibility key the cancelling operator runs (default v1).
    #[arg(long, default_value = crate::build_key::DEFAULT_BUILD_TAG)]
    pub build: String,
}

/// `user@host` of whoever runs this process: who operator actions are recorded as.
#[must_use]
pub fn actor() -> String {
    let user = std::env::var("USER")
        .or_else(|_| std::env::var("LOGNAME"))
        .unwrap_or_else(|_| "unknown".into());
    let host = std::fs::read_to_string("/etc/hostname")
        .map(|h| h.trim().to_owned())
        .unwrap_or_else(|_| "localhost".into());
    format!("{user}@{host}")
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
    let store = args.store.open(OpenMode::ReadWrite)?;
    let who = actor();
    let reason = args
        .reason
        .clone()
        .unwrap_or_else(|| "cancelled from the command line".into());
    let compat = crate::build_key::compatibility_key(&args.build).digest();
    let outcome = store.cancel_workflow(&args.instance, Some(&compat), &who, &reason);
    let said = match &outcome {
        Ok(CancelOutcome::Cancelled) => "cancelled".to_owned(),
        Ok(CancelOutcome::AlreadyCancelled) => "already cancelled".to_owned(),
        Err(Error::AlreadyTerminal { state, .. }) => format!("refused: already {state}"),
        Err(Error::Incompatible { .. }) => "refused: incompatible build".to_owned(),
        Err(e) => e.code().to_owned(),
    };
    if !matches!(&outcome, Err(Error::NotFound { .. })) {
        store.audit(&who, "cancel", &args.instance, &said)?;
    }
    match outcome {
        Ok(CancelOutcome::Cancelled) => {
            writeln!(
                out,
                "{} cancelled: no further steps will run (committed actions and dispatched effects stand)",
                cell(&args.instance)
            )?;
            Ok(())
        }
        Ok(CancelOutcome::AlreadyCancelled) => {
            writeln!(
                out,
                "{} was already cancelled: nothing changed",
                cell(&args.instance)
            )?;
            Ok(())
        }
        Err(Error::AlreadyTerminal { state, .. }) => Err(Failure::refused(format!(
            "{} is already {state}: a finished workflow cannot be cancelled",
            cell(&args.instance)
        ))),
        Err(Error::Incompatible { .. }) => Err(Failure::refused(format!(
            "{} belongs to another build: this build ({}) may not cancel it",
            cell(&args.instance),
            cell(&args.build)
        ))),
        Err(e) => Err(e.into()),
    }
}
