//! `leasehold history` and `leasehold cancel`: one workflow instance, read or cancelled.
//!
//! `cancel` exits 0 when it cancelled the instance, 1 when refused (already completed,
//! failed or cancelled, or the instance belongs to another build), 2 for an unknown
//! instance or an unreadable store. Every attempt is recorded in the audit log through
//! [`crate::ops::cancel`] — the same entry the dashboard writes — with who (the OS account
//! `name@host`), when, the outcome and the reason; the instance's own history records a
//! cancel too. `cancel --filter EXPR` cancels every instance the filter matches, page by
//! page, with the preview, confirmation and re-run behaviour of every bulk action
//! ([`super::bulk`]).

use std::io::Write;

use clap::Args;

use super::bulk::Target;
use super::output::{cell, cell_max, json_line};
use super::{CliResult, Failure, StoreArg};
use crate::authority::handlers::HandlerVersion;
use crate::clock::format_instant;
use crate::error::{Error, Result};
use crate::ids::check_id;
use crate::model::{CompatSet, InstanceRow, InstanceStatus, PageRequest};
use crate::ops::actor::operator;
use crate::ops::bulk::{Action, Bulk, Fate};
use crate::ops::cancel::{self as ops, Verdict};
use crate::ops::filter::{Filter, Subject};
use crate::store::Store;
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
    /// The workflow instance (or `--filter`, e.g. `status:waiting order-`).
    #[command(flatten)]
    pub target: Target,
    /// Why, for the audit log and the instance's history.
    #[arg(long)]
    pub reason: Option<String>,
    /// The version of the built-in handlers the cancelling operator runs (default 1.0.0):
    /// an instance only such code may run is cancelled, another is refused.
    #[command(flatten)]
    pub version: super::handler_version::HandlerVersionArg,
    /// With `--filter`: one JSON object with the counts.
    #[arg(long, requires = "filter")]
    pub json: bool,
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
    let filter = args
        .target
        .filter
        .as_deref()
        .map(|text| Filter::parse(Subject::Workflows, text))
        .transpose()
        .map_err(|e| Failure::usage(format!("--filter: {e}")))?;
    if let Some(id) = &args.target.id {
        check_id("instance id", id)?;
    }
    let store = args.store.open_writer()?;
    let reason = args.reason.clone().unwrap_or_default();
    let keys = args.version.caller_keys(&store)?;
    let actor = operator();
    let Some(instance) = &args.target.id else {
        let filter = filter.ok_or_else(|| Failure::usage("give an instance id or --filter"))?;
        let bulk = Bulk {
            store: &store,
            action: CancelMatches { filter, keys },
            filter_text: args.target.filter.as_deref().unwrap_or_default(),
            actor: &actor,
            reason: &reason,
        };
        return super::bulk::run(&bulk, args.target.dry_run, args.target.yes, args.json, out);
    };
    let verdict = ops::cancel(&store, instance, Some(&keys), &actor, &reason)?;
    let id = cell(instance);
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
            id: instance.clone(),
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

/// A cancel over the workflow instances a filter matches (`status:`, an id prefix), each
/// through [`ops::cancel`] (its own transaction and audit entry, as a single cancel), as
/// the build whose digest is `compat`.
struct CancelMatches {
    filter: Filter,
    /// The keys of the code the operator runs: an instance outside them is refused.
    keys: CompatSet,
}

/// A cancel's verdict as a bulk run counts it: an instance already cancelled is skipped.
fn fate(verdict: &Verdict) -> Fate {
    match verdict {
        Verdict::Cancelled => Fate::Change,
        Verdict::Finished(status) if status == InstanceStatus::Cancelled.as_str() => Fate::Skip,
        refused => Fate::Refuse(refused.words()),
    }
}

impl Action for CancelMatches {
    type Row = InstanceRow;

    fn name(&self) -> &'static str {
        ops::AUDIT_ACTION
    }

    fn noun(&self) -> &'static str {
        "instance"
    }

    fn done(&self) -> &'static str {
        "cancelled"
    }

    fn page(
        &self,
        store: &Store,
        page: &PageRequest,
    ) -> Result<(Vec<InstanceRow>, Option<String>)> {
        let rows =
            store.list_instances_by(self.filter.status, self.filter.id_prefix.as_deref(), page)?;
        Ok((rows.rows, rows.next))
    }

    fn id(row: &InstanceRow) -> &str {
        &row.instance_id
    }

    fn judge(&self, row: &InstanceRow, _: &Store) -> Fate {
        fate(&if row.status.is_terminal() {
            Verdict::Finished(row.status.as_str().into())
        } else if !self.keys.contains(&row.compat) {
            Verdict::Incompatible
        } else {
            Verdict::Cancelled
        })
    }

    fn apply(&self, store: &Store, ids: &[&str], actor: &str, reason: &str) -> Result<Vec<Fate>> {
        ids.iter()
            .map(|id| {
                Ok(fate(&ops::cancel(
                    store,
                    id,
                    Some(&self.keys),
                    actor,
                    reason,
                )?))
            })
            .collect()
    }
}
