//! `leasehold history` and `leasehold cancel`: one workflow instance, read or cancelled.
//!
//! `cancel` exits 0 when it cancelled the instance or it was already cancelled (a
//! repeat changes nothing and says so), 1 when refused (`already-terminal`: already
//! completed or failed; `INCOMPATIBLE_AUTHORITY`: the instance belongs to another build
//! than the fleet's — the refusal names the builds checked), 2 for an unknown instance or
//! an unreadable store. Every attempt is recorded in
//! the audit log in the cancel's own transaction ([`Store::cancel_workflow_audited`]) —
//! the same entry the dashboard writes — with who (the OS account `name@host`), when, the
//! outcome and the reason; the instance's own history records a
//! cancel too. `cancel --filter EXPR` cancels every instance the filter matches, page by
//! page, with the preview, confirmation and re-run behaviour of every bulk action
//! ([`super::bulk`]).

use std::io::Write;

use clap::Args;

use super::bulk::Target;
use super::output::json_line;
use super::{CliResult, Failure, StoreArg};
use crate::clock::format_instant;
use crate::error::{Error, Result};
use crate::foundation::actor::operator;
use crate::foundation::text_cell::{cell, cell_max};
use crate::ids::check_id;
use crate::model::{InstanceRow, PageRequest};
use crate::ops::bulk::{Action, Bulk, Fate, RunPage};
use crate::ops::cancel::Builds;
use crate::ops::filter::{Filter, Subject};
use crate::store::Store;
use crate::store::url::OpenMode;
use crate::workflow::engine::cancel::{AUDIT_ACTION, Verdict, judge};

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
    /// Judge as a build running every handler at this version, instead of by the
    /// versions the fleet registered (the default: an instance one of the fleet's builds
    /// may run is cancelled, another is refused).
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
    let filter = args.target.parse_filter(Subject::Workflows)?;
    if let Some(id) = &args.target.id {
        check_id("instance id", id)?;
    }
    let store = args.store.open_writer()?;
    let reason = args.reason.clone().unwrap_or_default();
    let builds = args.version.cancel_builds(&store)?;
    let actor = operator();
    let Some(instance) = &args.target.id else {
        let filter = filter.ok_or_else(|| Failure::usage("give an instance id or --filter"))?;
        let bulk = Bulk {
            store: &store,
            action: CancelMatches { filter, builds },
            filter_text: args.target.filter.as_deref().unwrap_or_default(),
            actor: &actor,
            reason: &reason,
        };
        return super::bulk::run(&bulk, args.target.dry_run, args.target.yes, args.json, out);
    };
    let verdict = store.cancel_workflow_audited(instance, Some(builds.keys()), &actor, &reason)?;
    let id = cell(instance);
    // A refusal's line starts with its code, as every refusal of the work model does.
    let code = verdict.code().unwrap_or_default();
    match &verdict {
        Verdict::Cancelled => {
            writeln!(
                out,
                "{id} cancelled: no further steps will run (committed actions and dispatched effects stand)"
            )?;
            Ok(())
        }
        Verdict::AlreadyCancelled => {
            writeln!(out, "{id} already cancelled: nothing changed")?;
            Ok(())
        }
        Verdict::Finished(status) => Err(Failure::refused(format!(
            "{code}: {id} is already {status}: nothing to cancel"
        ))),
        Verdict::Unknown => Err(Error::NotFound {
            what: "workflow instance".into(),
            id: instance.clone(),
        }
        .into()),
        Verdict::Incompatible => {
            let checked = store
                .instance(instance)?
                .map(|row| builds.checked(&row))
                .unwrap_or_default();
            Err(Failure::refused(format!(
                "{code}: {id} belongs to another build: none of the builds checked may run it, so none may cancel it (checked: {}; --handler-version V judges as another)",
                cell_max(&checked, 400)
            )))
        }
        Verdict::Failed(_) => Err(Failure::refused(format!("{code}: {id}: cancel failed"))),
    }
}

/// A cancel over the workflow instances a filter matches (`status:`, an id prefix), each
/// through [`Store::cancel_workflow_audited`] (its own transaction and audit entry, as a
/// single cancel), judged by the same builds and the same verdict function ([`judge`]) as
/// a single cancel.
struct CancelMatches {
    filter: Filter,
    /// The builds that may cancel: an instance none of them may run is refused.
    builds: Builds,
}

/// A cancel's verdict as a bulk run counts it: an instance already cancelled is skipped.
fn fate(verdict: &Verdict) -> Fate {
    match verdict {
        Verdict::Cancelled => Fate::Change,
        Verdict::AlreadyCancelled => Fate::Skip,
        refused => Fate::Refuse(refused.words()),
    }
}

impl Action for CancelMatches {
    type Row = InstanceRow;

    fn name(&self) -> &'static str {
        AUDIT_ACTION
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
        let keys = Some(self.builds.keys());
        fate(&Verdict::of(&judge(&row.instance_id, Some(row), keys)))
    }

    /// Each cancel is its own transaction, so the run's entry for the page follows them.
    fn apply(&self, store: &Store, ids: &[&str], run: &RunPage<'_>) -> Result<Vec<Fate>> {
        let fates = ids
            .iter()
            .map(|id| {
                Ok(fate(&store.cancel_workflow_audited(
                    id,
                    Some(self.builds.keys()),
                    run.actor,
                    run.reason,
                )?))
            })
            .collect::<Result<Vec<_>>>()?;
        store.audit(run.actor, run.action, run.target, &(run.outcome)(&fates))?;
        Ok(fates)
    }
}
