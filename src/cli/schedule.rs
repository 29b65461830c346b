//! `leasehold schedule create|update|pause|resume|delete|list --store STORE …`.
//!
//! `create ID (--every SPAN | --at MILLIS | --cron EXPR [--tz ZONE]) --handler H
//! [--catch-up P] [--payload JSON]`
//! defines a schedule; creating one that exists with the same definition changes nothing
//! (exit 0), with another definition is refused (`IDEMPOTENCY_CONFLICT`, exit 1) and
//! points at `update`, which replaces the trigger, catch-up policy, handler and payload of
//! the next firings (audited under `user@host`; firings already enqueued stay as they
//! were). `list` is the page `inspect schedules` prints.
//! `pause ID`, `resume ID` and `delete ID [--reason R]` change
//! a schedule's life, audited under `user@host` (see [`crate::Store::control_schedule`]): a paused
//! schedule fires nothing, a resume hands the boundaries it missed to its catch-up policy,
//! a delete leaves the firings already enqueued to run. The store must exist: a mistyped path is refused, never
//! created. Firings carry the key of the authority that observes the schedule (its
//! version of the schedule's handler); the schedule itself records the creator's key for
//! that handler (`--handler-version`, see [`super::handler_version`]).

use std::io::Write;

use clap::{ArgGroup, Args, Subcommand};
use serde::Serialize;

use super::handler_version::HandlerVersionArg;
use super::inspect::{InspectArgs, View};
use super::output::json_line;
use super::{CliResult, Failure, StoreArg};
use crate::clock::{Millis, parse_duration};
use crate::foundation::actor::operator;
use crate::foundation::text_cell::cell;
use crate::ids::check_id;
use crate::model::schedule::{CatchUp, Schedule, Trigger};
use crate::rules::schedule::Control;

/// `leasehold schedule …`.
#[derive(Debug, Clone, Subcommand)]
pub enum ScheduleCommand {
    /// Define a schedule (an identical one already there is left alone).
    Create(CreateArgs),
    /// Replace an existing schedule's trigger, catch-up, handler and payload.
    Update(DefinitionArgs),
    /// Stop a schedule's firings until it is resumed.
    Pause(ControlArgs),
    /// Fire again; the catch-up policy decides which boundaries missed while paused fire.
    Resume(ControlArgs),
    /// Remove a schedule; firings already enqueued stay and run.
    Delete(ControlArgs),
    /// List the schedules (the `inspect schedules` page).
    List(ListArgs),
}

/// Arguments of `leasehold schedule pause|resume|delete`.
#[derive(Debug, Clone, Args)]
pub struct ControlArgs {
    #[command(flatten)]
    pub store: StoreArg,
    /// The schedule id.
    #[arg(value_name = "ID")]
    pub id: String,
    /// Why, for the audit log.
    #[arg(long)]
    pub reason: Option<String>,
    /// Print the schedule as one JSON object.
    #[arg(long)]
    pub json: bool,
}

/// What a schedule is: the arguments `create` and `update` share.
#[derive(Debug, Clone, Args)]
#[command(group(ArgGroup::new("trigger").required(true).args(["every", "at", "cron"])))]
pub struct DefinitionArgs {
    #[command(flatten)]
    pub store: StoreArg,
    /// The schedule id.
    #[arg(value_name = "ID")]
    pub id: String,
    /// Fire at every epoch-aligned multiple of this span, e.g. `30s`, `5m`, `1h`.
    #[arg(long, value_name = "SPAN")]
    pub every: Option<String>,
    /// Fire once, at this instant (epoch milliseconds).
    #[arg(long, value_name = "MILLIS")]
    pub at: Option<Millis>,
    /// Fire at every instant this five-field cron expression names, e.g. `"0 9 * * MON-FRI"`.
    #[arg(long, value_name = "EXPR")]
    pub cron: Option<String>,
    /// The IANA time zone `--cron` is read in, e.g. `Europe/Paris` (default UTC).
    #[arg(long, value_name = "ZONE", requires = "cron")]
    pub tz: Option<String>,
    /// What an outage enqueues: `latest` (default), `all`, or the N most recent.
    #[arg(long, value_name = "POLICY", default_value = "latest")]
    pub catch_up: String,
    /// The handler each firing runs.
    #[arg(long, value_name = "H")]
    pub handler: String,
    /// Each firing's payload, as JSON (default `{}`); `-` reads standard input, `@FILE` a file.
    #[arg(long, value_name = "JSON")]
    pub payload: Option<String>,
    /// Print the schedule as one JSON object.
    #[arg(long)]
    pub json: bool,
}

/// Arguments of `leasehold schedule create`.
#[derive(Debug, Clone, Args)]
pub struct CreateArgs {
    #[command(flatten)]
    pub definition: DefinitionArgs,
    #[command(flatten)]
    pub version: HandlerVersionArg,
}

/// Arguments of `leasehold schedule list`.
#[derive(Debug, Clone, Args)]
pub struct ListArgs {
    #[command(flatten)]
    pub store: StoreArg,
    /// One JSON object per line instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Rows per page.
    #[arg(long, default_value_t = 50, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub limit: u32,
    /// Continue after this schedule id (printed under the previous page).
    #[arg(long, value_name = "KEY")]
    pub after: Option<String>,
}

/// A definition read from the command line, checked before the store is opened.
struct Definition {
    trigger: Trigger,
    catch_up: CatchUp,
    payload: String,
}

/// What `create` and `update` print: the schedule as stored.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ScheduleOut<'a> {
    outcome: &'static str,
    schedule_id: &'a str,
    trigger: String,
    catch_up: String,
    handler: &'a str,
    payload: &'a str,
    next_due: Millis,
    last_due: Option<Millis>,
    paused_at: Option<Millis>,
}

/// Runs a `schedule` subcommand.
///
/// # Errors
/// Bad arguments, an unknown schedule or a missing store (exit 2); a create that would
/// change an existing schedule (exit 1).
pub fn run(command: ScheduleCommand, out: &mut dyn Write) -> CliResult {
    match command {
        ScheduleCommand::Create(args) => create(&args, out),
        ScheduleCommand::Update(args) => update(&args, out),
        ScheduleCommand::Pause(args) => control(&args, Control::Pause, out),
        ScheduleCommand::Resume(args) => control(&args, Control::Resume, out),
        ScheduleCommand::Delete(args) => control(&args, Control::Delete, out),
        ScheduleCommand::List(args) => super::inspect::run(
            &InspectArgs {
                store: args.store,
                view: View::Schedules,
                json: args.json,
                limit: args.limit,
                filter: Vec::new(),
                after: args.after,
                window: None,
            },
            out,
        ),
    }
}

fn create(args: &CreateArgs, out: &mut dyn Write) -> CliResult {
    let d = &args.definition;
    let def = definition(d)?;
    let store = d.store.open_writer()?;
    let (compat, stamp) = args.version.key(&store, &d.handler)?;
    let created = store.create_schedule(
        &d.id,
        def.trigger.clone(),
        def.catch_up,
        &d.handler,
        &def.payload,
        &compat,
    )?;
    let stored = store
        .schedule(&d.id)?
        .ok_or_else(|| Failure::usage(format!("schedule {} vanished after create", cell(&d.id))))?;
    let same = (
        &stored.trigger,
        stored.catch_up,
        stored.handler.as_str(),
        stored.payload.as_str(),
    ) == (
        &def.trigger,
        def.catch_up,
        d.handler.as_str(),
        def.payload.as_str(),
    );
    if !same {
        return Err(Failure::refused(format!(
            "IDEMPOTENCY_CONFLICT: schedule {} exists with another definition ({}); change it with `leasehold schedule update`",
            cell(&d.id),
            stored.trigger.label()
        )));
    }
    if created {
        stamp.tell();
    }
    print(
        out,
        d.json,
        if created { "created" } else { "unchanged" },
        &stored,
    )
}

fn update(args: &DefinitionArgs, out: &mut dyn Write) -> CliResult {
    let def = definition(args)?;
    let store = args.store.open_writer()?;
    let stored = store.update_schedule(
        &args.id,
        def.trigger,
        def.catch_up,
        &args.handler,
        &def.payload,
        &operator(),
    )?;
    print(out, args.json, "updated", &stored)
}

fn control(args: &ControlArgs, control: Control, out: &mut dyn Write) -> CliResult {
    check_id("schedule id", &args.id)?;
    let store = args.store.open_writer()?;
    let reason = args.reason.clone().unwrap_or_default();
    let answer = store.control_schedule(&args.id, control, &operator(), &reason)?;
    let outcome = match (answer.changed, control) {
        (false, Control::Pause) => "already paused",
        (false, _) => "already running",
        (true, control) => control.done(),
    };
    print(out, args.json, outcome, &answer.schedule)
}

/// Checks every argument before anything is opened.
fn definition(args: &DefinitionArgs) -> Result<Definition, Failure> {
    check_id("schedule id", &args.id)?;
    check_id("handler", &args.handler)?;
    let trigger = match (&args.every, args.at) {
        _ if args.cron.is_some() => Trigger::cron(
            args.cron.as_deref().unwrap_or_default(),
            args.tz.as_deref().unwrap_or("UTC"),
        )?,
        (Some(span), None) => match parse_duration(span) {
            Some(every_ms) if every_ms > 0 => Trigger::Interval { every_ms },
            _ => {
                return Err(Failure::usage(format!(
                    "cannot read --every {}: use e.g. 30s, 5m, 1h (at most 36525d)",
                    cell(span.trim())
                )));
            }
        },
        (None, Some(after_ms)) if (0..=crate::clock::LATEST).contains(&after_ms) => {
            Trigger::Delay { after_ms }
        }
        (None, Some(at)) if at < 0 => {
            return Err(Failure::usage(format!("--at {at} is before the epoch")));
        }
        (None, Some(at)) => {
            return Err(Failure::usage(format!(
                "--at {at} is past the year 9999 (milliseconds since the epoch, at most {})",
                crate::clock::LATEST
            )));
        }
        _ => {
            return Err(Failure::usage(
                "give exactly one of --every, --at and --cron",
            ));
        }
    };
    let catch_up = CatchUp::parse(&args.catch_up).ok_or_else(|| {
        Failure::usage(format!(
            "cannot read --catch-up {}: use latest, all or a positive number",
            cell(&args.catch_up)
        ))
    })?;
    let payload = match &args.payload {
        Some(text) => super::payload::read_payload(text, std::io::stdin())?.to_string(),
        None => "{}".to_owned(),
    };
    Ok(Definition {
        trigger,
        catch_up,
        payload,
    })
}

fn print(out: &mut dyn Write, json: bool, outcome: &'static str, s: &Schedule) -> CliResult {
    let row = ScheduleOut {
        outcome,
        schedule_id: &s.schedule_id,
        trigger: s.trigger.label(),
        catch_up: s.catch_up.label(),
        handler: &s.handler,
        payload: &s.payload,
        next_due: s.next_due,
        last_due: s.last_due,
        paused_at: s.paused_at,
    };
    if json {
        json_line(out, &row)?;
    } else {
        let next = match row.paused_at {
            Some(at) => format!("paused since {}", crate::clock::format_instant(at)),
            None => format!("next due {}", crate::clock::format_instant(row.next_due)),
        };
        writeln!(
            out,
            "{outcome} schedule {} ({}, catch-up {}, handler {}), {next}",
            cell(row.schedule_id),
            row.trigger,
            row.catch_up,
            cell(row.handler),
        )?;
    }
    Ok(())
}
