//! `leasehold work enqueue` (a producer's new item: see [`super::enqueue`]; many, from
//! JSON lines: [`super::enqueue_from`]), `leasehold work show` (one item in full: see
//! [`super::work_show`]), and
//! `leasehold work requeue|discard|retry-now`: an operator's triage of failed, poisoned
//! and waiting work ([`crate::rules::triage`] decides and words it; the store verbs fence
//! and audit it), on one item or on every item a `--filter` matches ([`super::bulk`]).
//!
//! Exit 0 when the item changed or already showed the change (a repeat), 1 when refused —
//! the line starts with the refusal's code: `already-terminal` for a finished item,
//! `WORK_STATE_MISMATCH` for a requeue of an item that is not failed or a retry-now of a
//! running one — 2 for an unknown item, a
//! missing reason for discard, or an unreadable or missing store — which is never created.
//! The audit entry records the OS account (`name@host`), the verdict and the reason.

use std::io::Write;

use clap::{Args, Subcommand};
use serde::Serialize;

use super::bulk::Target;
use super::output::json_line;
use super::{CliResult, Failure, StoreArg};
use crate::error::Error;
use crate::foundation::actor::operator;
use crate::foundation::text_cell::cell;
use crate::ids::check_id;
use crate::model::WorkItem;
use crate::ops::bulk::{Bulk, TriageMatches};
use crate::ops::filter::Subject;
use crate::ops::live_builds::LiveBuilds;
use crate::rules::triage::{Verb, Verdict};
use crate::store::Triaged;

/// `leasehold work …`.
#[derive(Debug, Clone, Subcommand)]
pub enum WorkCommand {
    /// Enqueue one effect for a handler (a repeat with the same id or idempotency key is a
    /// duplicate and changes nothing).
    Enqueue(super::enqueue::EnqueueArgs),
    /// Show one item in full: state, attempts, retry policy, payload, result, the errors
    /// of its attempts and the grants of its claims.
    Show(super::work_show::ShowArgs),
    /// Give a failed item (a dead letter included) a fresh attempt budget: pending now,
    /// same logical id and idempotency key.
    Requeue(TriageArgs),
    /// End an item for good, with a reason recorded on the item and in the audit log.
    Discard(DiscardArgs),
    /// Make an item waiting out a retry's backoff (or an enqueue delay) due now.
    RetryNow(TriageArgs),
}

/// `leasehold work requeue` and `leasehold work retry-now`.
#[derive(Debug, Clone, Args)]
pub struct TriageArgs {
    #[command(flatten)]
    pub store: StoreArg,
    #[command(flatten)]
    pub target: Target,
    /// Why, for the audit log.
    #[arg(long)]
    pub reason: Option<String>,
    /// One JSON object.
    #[arg(long)]
    pub json: bool,
}

/// `leasehold work discard`.
#[derive(Debug, Clone, Args)]
pub struct DiscardArgs {
    #[command(flatten)]
    pub store: StoreArg,
    #[command(flatten)]
    pub target: Target,
    /// Why (required): recorded in the item's last failure and in the audit log.
    #[arg(long)]
    pub reason: String,
    /// One JSON object.
    #[arg(long)]
    pub json: bool,
}

/// The `--json` answer.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Answer<'a> {
    id: &'a str,
    action: &'static str,
    outcome: String,
    changed: bool,
    item: Option<&'a WorkItem>,
}

/// Runs `leasehold work …`.
///
/// # Errors
/// A refusal (exit 1); an unknown item, bad input or unreadable store (exit 2).
pub fn run(command: &WorkCommand, out: &mut dyn Write) -> CliResult {
    let (verb, store, target, reason, json) = match command {
        WorkCommand::Enqueue(a) => {
            return match &a.from {
                Some(from) => super::enqueue_from::run(a, from, out),
                None => super::enqueue::run(a, out),
            };
        }
        WorkCommand::Show(a) => return super::work_show::run(a, out),
        WorkCommand::Requeue(a) => (
            Verb::Requeue,
            &a.store,
            &a.target,
            a.reason.as_deref().unwrap_or_default(),
            a.json,
        ),
        WorkCommand::RetryNow(a) => (
            Verb::RetryNow,
            &a.store,
            &a.target,
            a.reason.as_deref().unwrap_or_default(),
            a.json,
        ),
        WorkCommand::Discard(a) => (
            Verb::Discard,
            &a.store,
            &a.target,
            a.reason.as_str(),
            a.json,
        ),
    };
    if verb == Verb::Discard && reason.trim().is_empty() {
        return Err(Failure::usage(
            "a discard needs a reason (--reason), for the item and the audit log",
        ));
    }
    if let Some(id) = &target.id {
        check_id("work id", id)?;
    }
    let filter = target.parse_filter(Subject::Work)?;
    let store = store.open_writer()?;
    let actor = operator();
    match (&target.id, filter) {
        (Some(id), _) => {
            let answer = store.triage_work(verb, id, &actor, reason)?;
            report(verb, id, &answer, json, out)
        }
        (None, Some(filter)) => {
            let live = LiveBuilds::load(&store, store.now())?;
            let bulk = Bulk {
                store: &store,
                action: TriageMatches::new(verb, &filter, live.work_filter(&store, &filter)?),
                filter_text: target.filter.as_deref().unwrap_or_default(),
                actor: &actor,
                reason,
            };
            super::bulk::run(&bulk, target.dry_run, target.yes, json, out)
        }
        (None, None) => Err(Failure::usage("give an item id or --filter")),
    }
}

fn report(verb: Verb, id: &str, answer: &Triaged, json: bool, out: &mut dyn Write) -> CliResult {
    let words = answer.verdict.words(verb);
    match &answer.verdict {
        Verdict::Unknown => {
            return Err(Error::NotFound {
                what: "work item".into(),
                id: id.into(),
            }
            .into());
        }
        Verdict::Refused { error, .. } => {
            return Err(Failure::refused(format!(
                "{}: {}: {words}",
                error.code(),
                cell(id)
            )));
        }
        Verdict::Done | Verdict::AlreadyDone => {}
    }
    if json {
        json_line(
            out,
            &Answer {
                id,
                action: verb.action(),
                outcome: words,
                changed: answer.verdict == Verdict::Done,
                item: answer.item.as_ref(),
            },
        )?;
    } else {
        let state = answer.item.as_ref().map_or("-", WorkItem::state_text);
        writeln!(out, "{}: {words} (now {state})", cell(id))?;
    }
    Ok(())
}
