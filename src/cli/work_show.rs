//! `leasehold work show ID`: one work item in full ([`WorkDetail`]) — its state, handler,
//! keys, attempts against its budget, the checkpoint an attempt saved, the retry policies
//! the fleet applies to its handler, its payload and result as indented JSON, the errors
//! of its attempts and the grants of its claims, newest first. Exit 0, or 2 for an unknown
//! item, a malformed id or an unreadable store.

use std::io::Write;

use clap::Args;

use super::output::{json_line, opt_when, when};
use super::{CliResult, StoreArg};
use crate::error::Error;
use crate::foundation::text_cell::{cell, cell_max, escape};
use crate::foundation::timefmt::{TimeFmt, Zone};
use crate::ids::check_id;
use crate::ops::pretty::{lines, unfold};
use crate::ops::work_detail::WorkDetail;
use crate::store::url::OpenMode;

/// `leasehold work show`.
#[derive(Debug, Clone, Args)]
pub struct ShowArgs {
    #[command(flatten)]
    pub store: StoreArg,
    /// The work item.
    #[arg(value_name = "ID")]
    pub id: String,
    /// One JSON object: the item, its attempt errors, its grants and the policies.
    #[arg(long)]
    pub json: bool,
}

/// Runs `leasehold work show`.
///
/// # Errors
/// An unknown item, a malformed id or an unreadable store (exit 2).
pub fn run(args: &ShowArgs, out: &mut dyn Write) -> CliResult {
    check_id("work id", &args.id)?;
    let store = args.store.open(OpenMode::ReadOnly)?;
    let Some(detail) = WorkDetail::load(&store, &args.id)? else {
        return Err(Error::NotFound {
            what: "work item".into(),
            id: args.id.clone(),
        }
        .into());
    };
    if args.json {
        json_line(out, &detail)?;
        return Ok(());
    }
    let now = store.now();
    for line in describe(&detail, now) {
        writeln!(out, "{line}")?;
    }
    Ok(())
}

/// The most of a checkpoint the text shows, in characters: a handler may save a large
/// one, and `--json` has it whole.
const CHECKPOINT_SHOWN: usize = 200;

/// The text of `work show`, a line each; every value from the store made safe to print.
#[must_use]
pub fn describe(detail: &WorkDetail, now: i64) -> Vec<String> {
    let w = &detail.item;
    let mut text = vec![format!("work {}", cell(&w.id))];
    let mut field = |name: &str, value: String| text.push(format!("  {name:<10} {value}"));
    field("state", w.state_text().to_owned());
    // How it ended, in the words it was recorded with: a discard names who and why.
    if let (Some(_), Some(f)) = (w.ending(), &w.last_failure) {
        field(
            "ended",
            format!(
                "{} {}: {}",
                f.class.as_str(),
                cell(&f.code),
                escape(&f.message)
            ),
        );
    }
    field("kind", w.kind.as_str().to_owned());
    field("handler", cell(&w.handler));
    field("key", cell(&w.idempotency_key));
    if w.logical_effect_id != w.idempotency_key {
        field("effect", cell(&w.logical_effect_id));
    }
    field("attempts", attempts(w));
    if let Some(owner) = w.current_owner() {
        field(
            "claimed",
            format!(
                "by {} under generation {}, lease until {}",
                cell(owner),
                w.generation,
                opt_when(w.lease_expires_at, now)
            ),
        );
    } else if !w.state.is_terminal() {
        field("due", when(w.next_eligible_at, now));
    }
    // Where the next attempt resumes: what an operator weighs before a requeue or discard.
    if let Some(checkpoint) = &w.checkpoint {
        field("checkpoint", cell_max(checkpoint, CHECKPOINT_SHOWN));
    }
    if detail.policies.is_empty() {
        field(
            "retry",
            "the default backoff (500ms doubling to 30s)".into(),
        );
    }
    for applied in &detail.policies {
        field(
            "retry",
            format!(
                "{}: {}",
                cell(&applied.authority),
                applied.policy.describe()
            ),
        );
    }
    let fmt = TimeFmt::new(now, Zone::Local);
    text.push("  payload".into());
    text.extend(json_block(&w.payload, fmt));
    if let Some(result) = &w.result {
        text.push("  result".into());
        text.extend(json_block(result, fmt));
    }
    text.push(format!(
        "  errors ({}, newest first)",
        detail.attempt_errors.len()
    ));
    for e in &detail.attempt_errors {
        text.push(format!(
            "    #{} {} by {} (generation {}) {} {}: {}",
            e.attempt,
            when(e.at, now),
            cell(&e.owner_id),
            e.generation,
            e.class.as_str(),
            cell(&e.code),
            // Whole (the store keeps at most 2 KiB of it): the message is what triage reads.
            escape(&e.message)
        ));
    }
    text.push(format!("  grants ({}, newest first)", detail.grants.len()));
    for g in &detail.grants {
        let took_over = g.took_over.as_ref().map_or_else(String::new, |t| {
            format!(
                ", taken over from {} (generation {})",
                cell(&t.from_owner),
                t.from_generation
            )
        });
        text.push(format!(
            "    generation {} to {} {}{took_over}",
            g.generation,
            cell(&g.owner_id),
            when(g.at, now)
        ));
    }
    text
}

/// `2/5`, with the uncertain ones and an unbounded budget said as such.
fn attempts(w: &crate::model::WorkItem) -> String {
    let max = if w.max_attempts == u32::MAX {
        "unbounded".to_owned()
    } else {
        w.max_attempts.to_string()
    };
    let mut text = format!("{}/{max}", w.attempt_number);
    if w.uncertain_attempts > 0 {
        text.push_str(&format!(" ({} uncertain)", w.uncertain_attempts));
    }
    text
}

/// JSON text as indented lines (instants annotated), or the text itself made safe when
/// it is not JSON.
fn json_block(text: &str, fmt: TimeFmt) -> Vec<String> {
    match serde_json::from_str::<serde_json::Value>(text) {
        Ok(value) => lines(&unfold(value), fmt)
            .into_iter()
            .map(|line| format!("    {line}"))
            .collect(),
        Err(_) => vec![format!("    {}", escape(text))],
    }
}
