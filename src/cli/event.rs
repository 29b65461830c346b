//! `leasehold event --store STORE --type EVENT [--source S --id EXTERNAL_ID] [--payload JSON]`.
//!
//! Ingests one external delivery through [`crate::Store::ingest`] and prints the dedup
//! outcome: `accepted seq 12`, `duplicate of seq 12`, `unidentified seq 13` (exit 0), or
//! `EVENT_ID_CONFLICT: …` (exit 1). `--source` and `--id` come together or not at all: an
//! event without them is `unidentified` (at-least-once; an id is never synthesised).

use std::io::Write;

use clap::Args;
use clap::builder::NonEmptyStringValueParser;
use serde::Serialize;

use super::output::json_line;
use super::{CliResult, Failure, StoreArg};
use crate::foundation::text_cell::cell;
use crate::ids::{check_id, check_opt_id};
use crate::model::DedupOutcome;
use crate::model::event::NewEvent;

/// Arguments of `leasehold event`.
#[derive(Debug, Clone, Args)]
pub struct EventArgs {
    #[command(flatten)]
    pub store: StoreArg,
    /// The event type (what subscriptions and workflow waits match on).
    #[arg(long = "type", value_name = "EVENT", value_parser = NonEmptyStringValueParser::new())]
    pub event_type: String,
    /// Where the event comes from; dedup is per (source, id).
    #[arg(long, value_name = "S", requires = "id", value_parser = NonEmptyStringValueParser::new())]
    pub source: Option<String>,
    /// The producer's stable event id.
    #[arg(long = "id", value_name = "EXTERNAL_ID", requires = "source", value_parser = NonEmptyStringValueParser::new())]
    pub id: Option<String>,
    /// The payload, as JSON (default `{}`); `-` reads standard input, `@FILE` a file.
    #[arg(long, value_name = "JSON")]
    pub payload: Option<String>,
    /// Print the outcome as one JSON object.
    #[arg(long)]
    pub json: bool,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct OutcomeRow<'a> {
    outcome: &'static str,
    seq: Option<i64>,
    event_type: &'a str,
    source: Option<&'a str>,
    external_id: Option<&'a str>,
}

/// Runs `leasehold event`.
///
/// # Errors
/// A malformed payload or a store failure (exit 2); `EVENT_ID_CONFLICT` (exit 1).
pub fn run(args: &EventArgs, out: &mut dyn Write) -> CliResult {
    let payload = match &args.payload {
        Some(text) => super::payload::read_payload(text, std::io::stdin())?,
        None => serde_json::json!({}),
    };
    check_id("event type", &args.event_type)?;
    check_opt_id("event source", args.source.as_deref())?;
    check_opt_id("event id", args.id.as_deref())?;
    let store = args.store.open_writer()?;
    let event = NewEvent {
        event_type: args.event_type.clone(),
        source: args.source.clone(),
        external_id: args.id.clone(),
        payload,
    };
    let ingested = store.ingest(&event)?;
    let row = OutcomeRow {
        outcome: ingested.outcome.as_str(),
        seq: ingested.seq,
        event_type: &args.event_type,
        source: args.source.as_deref(),
        external_id: args.id.as_deref(),
    };
    let seq = ingested
        .seq
        .map_or_else(|| "?".to_owned(), |s| s.to_string());
    if args.json {
        json_line(out, &row)?;
    } else if ingested.outcome != DedupOutcome::Conflict {
        match ingested.outcome {
            DedupOutcome::Duplicate => writeln!(out, "duplicate of seq {seq}")?,
            other => writeln!(out, "{} seq {seq}", other.as_str())?,
        }
    }
    if ingested.outcome == DedupOutcome::Conflict {
        return Err(Failure::refused(format!(
            "EVENT_ID_CONFLICT: {}/{} was first seen (seq {seq}) with another payload; nothing was dispatched",
            cell(args.source.as_deref().unwrap_or("")),
            cell(args.id.as_deref().unwrap_or(""))
        )));
    }
    Ok(())
}
