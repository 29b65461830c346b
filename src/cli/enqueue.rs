//! `leasehold work enqueue --store STORE --handler H --payload JSON [--id ID]
//! [--idempotency-key K] [--delay D] [--max-attempts N] [--priority N] [--handler-version V] [--json]`: one outbox
//! effect offered from the command line through [`crate::Store::enqueue`], the call an
//! embedding application makes.
//!
//! The item's id is `--id`, else the idempotency key, else a fresh id from the store's id
//! source; the idempotency key defaults to the id. A key is held by one item in a store,
//! so a repeat with the same `--idempotency-key` — whatever `--id` it gives, or none —
//! or with the same `--id` names the item already there, and the store keeps the first:
//! the repeat answers `duplicate` naming that item (exit 0) and changes nothing — unless
//! it offers another handler or payload (or, for the same id, another explicit key),
//! which is refused as `IDEMPOTENCY_CONFLICT` (exit 1), never called a duplicate; neither
//! writes anything, so the store's revision stays as it was. The first offer's delay,
//! attempt budget, priority and handler version stand. Bad input — a payload that is not
//! JSON or is over the bound, an id or handler name that is not printable, an unreadable
//! duration, a missing store (never created) — is one line, exit 2, and nothing is
//! written. `--from FILE|-` offers many items instead, from JSON lines
//! ([`super::enqueue_from`]).

use std::io::Write;

use clap::Args;
use serde::Serialize;

use super::handler_version::HandlerVersionArg;
use super::output::json_line;
use super::payload::read_payload;
use super::{CliResult, Failure, StoreArg};
use crate::clock::{Millis, format_instant, parse_duration};
use crate::foundation::text_cell::cell;
use crate::ids::{check_id, check_opt_id};
use crate::model::WorkItem;
use crate::model::work::NewWork;
use crate::store::Enqueued;

/// The prefix of the ids this command mints when neither `--id` nor `--idempotency-key`
/// names the item.
pub const FRESH_ID_PREFIX: &str = "work";

/// Arguments of `leasehold work enqueue`.
#[derive(Debug, Clone, Args)]
pub struct EnqueueArgs {
    #[command(flatten)]
    pub store: StoreArg,
    /// The registered handler that runs the item.
    #[arg(long, value_name = "H", required_unless_present = "from")]
    pub handler: Option<String>,
    /// The handler's input, as JSON; `-` reads it from standard input, `@FILE` from a file
    /// (up to 1 MiB).
    #[arg(
        long,
        value_name = "JSON",
        allow_hyphen_values = true,
        required_unless_present = "from"
    )]
    pub payload: Option<String>,
    /// Many items: JSON lines, one item a line with the fields above (`handler`,
    /// `payload`, `id`, `idempotencyKey`, `delay`, `maxAttempts`, `priority`), from FILE or
    /// `-` for standard input, committed in batches; a re-run is answered `duplicate`.
    #[arg(
        long,
        value_name = "FILE",
        conflicts_with_all = ["handler", "payload", "id", "idempotency_key", "delay", "max_attempts", "priority"]
    )]
    pub from: Option<String>,
    /// The item's id (default: the idempotency key, else a fresh id).
    #[arg(long, value_name = "ID")]
    pub id: Option<String>,
    /// What the handler's provider dedups on (default: the id); a repeat with the same key
    /// is the same item.
    #[arg(long, value_name = "K")]
    pub idempotency_key: Option<String>,
    /// Not claimable before this long from now, e.g. `30s`, `5m`, `1h`.
    #[arg(long, value_name = "D")]
    pub delay: Option<String>,
    /// Attempts before the item fails for good (default 5).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub max_attempts: Option<u32>,
    /// Claim order among the handler's due items: higher first, then earlier due
    /// (default 0; negative runs after the default).
    #[arg(
        long,
        value_name = "N",
        allow_negative_numbers = true,
        default_value_t = 0
    )]
    pub priority: i32,
    #[command(flatten)]
    pub version: HandlerVersionArg,
    /// Print the outcome as one JSON object.
    #[arg(long)]
    pub json: bool,
}

/// What an enqueue came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    Created,
    Duplicate,
}

impl Outcome {
    fn as_str(self) -> &'static str {
        match self {
            Self::Created => "created",
            Self::Duplicate => "duplicate",
        }
    }
}

/// The `--json` answer: the item as stored.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Answer<'a> {
    outcome: &'static str,
    id: &'a str,
    handler: &'a str,
    state: &'static str,
    idempotency_key: &'a str,
    next_eligible_at: Millis,
    max_attempts: u32,
    priority: i32,
}

/// Runs `leasehold work enqueue`.
///
/// # Errors
/// Bad input or a missing store (exit 2, nothing written); `IDEMPOTENCY_CONFLICT` (exit 1).
pub fn run(args: &EnqueueArgs, out: &mut dyn Write) -> CliResult {
    let (Some(handler), Some(payload)) = (&args.handler, &args.payload) else {
        return Err(Failure::usage(
            "give --handler and --payload, or --from FILE",
        ));
    };
    check_id("handler", handler)?;
    check_opt_id("work id", args.id.as_deref())?;
    check_opt_id("idempotency key", args.idempotency_key.as_deref())?;
    let delay = args
        .delay
        .as_deref()
        .map(|d| delay_ms("--delay", d))
        .transpose()?;
    // Last of the checks, so a mistyped flag is refused before standard input is waited on.
    let payload = read_payload(payload, std::io::stdin().lock())?;
    let store = args.store.open_writer()?;
    let id = args
        .id
        .clone()
        .or_else(|| args.idempotency_key.clone())
        .unwrap_or_else(|| store.ids().next_id(FRESH_ID_PREFIX));
    let mut spec = NewWork::effect(id, handler.clone(), payload.to_string());
    spec.idempotency_key.clone_from(&args.idempotency_key);
    spec.not_before = delay.map(|d| store.now().saturating_add(d));
    if let Some(n) = args.max_attempts {
        spec.max_attempts = n;
    }
    spec.priority = args.priority;
    // The store decides in the inserting transaction: new, a repeat of the item holding
    // the key (or the id), or IDEMPOTENCY_CONFLICT (exit 1); a repeat or a conflict
    // commits nothing, not even a revision.
    let (key, stamp) = args.version.key(&store, &spec.handler)?;
    let (outcome, id) = match store.offer_work(spec.clone(), &key)? {
        Enqueued::Created => (Outcome::Created, spec.id),
        Enqueued::Duplicate(id) => (Outcome::Duplicate, id),
    };
    let stored = store
        .work(&id)?
        .ok_or_else(|| Failure::usage(format!("work item {} vanished after enqueue", cell(&id))))?;
    report(out, args.json, outcome, &stored)?;
    // Last, so a failure above stays one line; a repeat stamped nothing new.
    if outcome == Outcome::Created {
        stamp.tell();
    }
    Ok(())
}

/// A delay (`what`: `--delay`, or a line's `delay`) in milliseconds, read as every other
/// duration option is.
pub(super) fn delay_ms(what: &str, text: &str) -> Result<Millis, Failure> {
    parse_duration(text).ok_or_else(|| {
        Failure::usage(format!(
            "cannot read {what} {}: use e.g. 30s, 5m, 1h (at most 36525d)",
            cell(text.trim())
        ))
    })
}

fn report(out: &mut dyn Write, json: bool, outcome: Outcome, item: &WorkItem) -> CliResult {
    if json {
        json_line(
            out,
            &Answer {
                outcome: outcome.as_str(),
                id: &item.id,
                handler: &item.handler,
                state: item.state.as_str(),
                idempotency_key: &item.idempotency_key,
                next_eligible_at: item.next_eligible_at,
                max_attempts: item.max_attempts,
                priority: item.priority,
            },
        )?;
    } else {
        writeln!(
            out,
            "{} work item {} (handler {}, {}, eligible {}, max attempts {}, idempotency key {})",
            outcome.as_str(),
            cell(&item.id),
            cell(&item.handler),
            item.state.as_str(),
            format_instant(item.next_eligible_at),
            item.max_attempts,
            cell(&item.idempotency_key)
        )?;
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn delays_read_like_every_other_duration() {
        assert_eq!(delay_ms("--delay", "90s"), Ok(90_000));
        assert_eq!(delay_ms("--delay", "0"), Ok(0));
        let refused = delay_ms("--delay", "soon\u{1b}[2J").unwrap_err();
        assert_eq!(
            refused.message,
            "cannot read --delay soon\\x1b[2J: use e.g. 30s, 5m, 1h (at most 36525d)"
        );
        assert!(delay_ms("--delay", "-5s").is_err());
    }
}
