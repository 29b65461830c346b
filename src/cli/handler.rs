//! `leasehold handler pause|resume|list --store STORE …`: a handler's fleet-wide pause.
//!
//! `pause NAME [--reason R]` stops every authority on the store from claiming the
//! handler's work, from its next poll on; the items stay pending, attempts in flight
//! finish. `resume NAME [--reason R]` makes them claimable again. Both are audited under
//! `user@host` (see [`crate::Store::control_handler`]); a repeat changes nothing and says
//! so. Any valid handler name may be paused, one no authority runs yet too. `list` prints
//! the paused handlers with who paused them, when, why, and how many items wait. The store
//! must exist: a mistyped path is refused, never created.

use std::io::Write;

use clap::{Args, Subcommand};
use serde::Serialize;

use super::output::{Table, json_line, when};
use super::{CliResult, StoreArg};
use crate::foundation::actor::operator;
use crate::foundation::text_cell::{cell, cell_max};
use crate::ids::check_id;
use crate::model::PausedHandler;
use crate::rules::handler::HandlerControl;
use crate::store::url::OpenMode;

/// `leasehold handler …`.
#[derive(Debug, Clone, Subcommand)]
pub enum HandlerCommand {
    /// Stop every authority claiming this handler's work until it is resumed.
    Pause(ControlArgs),
    /// Let the authorities claim this handler's work again.
    Resume(ControlArgs),
    /// List the paused handlers: who, when, why, and how many items wait.
    List(ListArgs),
}

/// Arguments of `leasehold handler pause|resume`.
#[derive(Debug, Clone, Args)]
pub struct ControlArgs {
    #[command(flatten)]
    pub store: StoreArg,
    /// The handler's name.
    #[arg(value_name = "NAME")]
    pub name: String,
    /// Why, for the audit log (and, for a pause, the list).
    #[arg(long)]
    pub reason: Option<String>,
    /// Print the answer as one JSON object.
    #[arg(long)]
    pub json: bool,
}

/// Arguments of `leasehold handler list`.
#[derive(Debug, Clone, Args)]
pub struct ListArgs {
    #[command(flatten)]
    pub store: StoreArg,
    /// One JSON object per line instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// What `pause` and `resume` print as JSON.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ControlOut<'a> {
    outcome: &'static str,
    handler: &'a str,
    paused: bool,
}

/// Runs a `handler` subcommand.
///
/// # Errors
/// A malformed name or a missing store (exit 2).
pub fn run(command: &HandlerCommand, out: &mut dyn Write) -> CliResult {
    match command {
        HandlerCommand::Pause(args) => control(args, HandlerControl::Pause, out),
        HandlerCommand::Resume(args) => control(args, HandlerControl::Resume, out),
        HandlerCommand::List(args) => list(args, out),
    }
}

fn control(args: &ControlArgs, control: HandlerControl, out: &mut dyn Write) -> CliResult {
    check_id("handler", &args.name)?;
    let store = args.store.open_writer()?;
    let reason = args.reason.clone().unwrap_or_default();
    let answer = store.control_handler(&args.name, control, &operator(), &reason)?;
    let outcome = match (answer.changed, control) {
        (false, HandlerControl::Pause) => "already paused",
        (false, HandlerControl::Resume) => "not paused",
        (true, control) => control.done(),
    };
    let row = ControlOut {
        outcome,
        handler: &args.name,
        paused: answer.pause.is_some(),
    };
    if args.json {
        json_line(out, &row)?;
    } else if answer.changed {
        writeln!(out, "{outcome} handler {}", cell(&args.name))?;
    } else {
        writeln!(
            out,
            "handler {} was {outcome}; nothing changed",
            cell(&args.name)
        )?;
    }
    Ok(())
}

fn list(args: &ListArgs, out: &mut dyn Write) -> CliResult {
    let store = args.store.open(OpenMode::ReadOnly)?;
    let paused = store.paused_handlers()?;
    if args.json {
        for p in &paused {
            json_line(out, p)?;
        }
        return Ok(());
    }
    let now = store.now();
    let mut table = Table::new(&["HANDLER", "WAITING", "PAUSED", "BY", "REASON"]);
    for PausedHandler { pause, waiting } in &paused {
        table.row(vec![
            cell(&pause.handler),
            waiting.to_string(),
            when(pause.paused_at, now),
            cell(&pause.paused_by),
            cell_max(&pause.reason, 200),
        ]);
    }
    out.write_all(table.render().as_bytes())?;
    Ok(())
}
