//! `leasehold work enqueue` (a producer's new item: see [`super::enqueue`]), and
//! `leasehold work requeue` and `leasehold work discard`: an operator's triage of failed
//! and poisoned work ([`crate::ops::triage`] decides and words it; the store verbs fence
//! and audit it).
//!
//! Exit 0 when the item changed or already showed the change (a repeat), 1 when refused
//! (a succeeded item; requeue of an item that is not failed), 2 for an unknown item, a
//! missing reason for discard, or an unreadable or missing store — which is never created.
//! The audit entry records the OS account (`name@host`), the verdict and the reason.

use std::io::Write;

use clap::{Args, Subcommand};
use serde::Serialize;

use super::output::{cell, json_line};
use super::{CliResult, Failure, StoreArg};
use crate::error::Error;
use crate::ids::check_id;
use crate::model::WorkItem;
use crate::ops::actor::operator;
use crate::ops::triage::{Verb, Verdict};
use crate::store::Triaged;
use crate::store::url::OpenMode;

/// `leasehold work …`.
#[derive(Debug, Clone, Subcommand)]
pub enum WorkCommand {
    /// Enqueue one effect for a handler (a repeat with the same id or idempotency key is a
    /// duplicate and changes nothing).
    Enqueue(super::enqueue::EnqueueArgs),
    /// Give a failed item (a dead letter included) a fresh attempt budget: pending now,
    /// same logical id and idempotency key.
    Requeue(RequeueArgs),
    /// End an item for good, with a reason recorded on the item and in the audit log.
    Discard(DiscardArgs),
}

/// `leasehold work requeue`.
#[derive(Debug, Clone, Args)]
pub struct RequeueArgs {
    #[command(flatten)]
    pub store: StoreArg,
    /// The work item.
    #[arg(value_name = "ID")]
    pub id: String,
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
    /// The work item.
    #[arg(value_name = "ID")]
    pub id: String,
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
    let (verb, store, id, reason, json) = match command {
        WorkCommand::Enqueue(a) => return super::enqueue::run(a, out),
        WorkCommand::Requeue(a) => (
            Verb::Requeue,
            &a.store,
            &a.id,
            a.reason.as_deref().unwrap_or_default(),
            a.json,
        ),
        WorkCommand::Discard(a) => (Verb::Discard, &a.store, &a.id, a.reason.as_str(), a.json),
    };
    check_id("work id", id)?;
    let store = store.open(OpenMode::Existing)?;
    let actor = operator();
    let answer = match verb {
        Verb::Requeue => store.requeue_work(id, &actor, reason)?,
        Verb::Discard => store.discard_work(id, &actor, reason)?,
    };
    report(verb, id, &answer, json, out)
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
        Verdict::Refused(_) => return Err(Failure::refused(format!("{}: {words}", cell(id)))),
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
        let state = answer.item.as_ref().map_or("-", |w| w.state.as_str());
        writeln!(out, "{}: {words} (now {state})", cell(id))?;
    }
    Ok(())
}
