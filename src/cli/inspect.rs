//! `leasehold inspect --store STORE VIEW [--json] [--limit N] [--filter EXPR] [--after KEY]
//! [--window SPAN]`.
//!
//! One page of one view: an aligned table for people (short digests, relative instants,
//! hostile text escaped), or with `--json` one object per row and line with camelCase keys.
//! Every read is a keyed page of an index-backed list; `--after KEY` continues from the
//! key printed under the previous page (on stderr with `--json`).
//!
//! Filters (`--filter 'state:pending,retry kind:effect'`, repeatable) use the dashboard's
//! grammar ([`crate::ops::filter`]) and map onto the store's own filtered reads, so they
//! never scan: `work` takes `state:`, `kind:`, `owner:`, `compat:` and an id prefix;
//! `workflows` takes `status:` and an id prefix. Other views take no filter (start at a
//! key with `--after`). `compatible` is defined in [`super::live`]. `failovers`
//! and `fenced` (in `incidents.rs`) list by time, newest first, over `--window`.

use std::io::Write;

use clap::{Args, ValueEnum};
use serde::Serialize;

mod authorities;

use super::live::LiveBuilds;
use super::output::{Table, cell, cell_max, json_line, opt_cell, opt_when, short, when};
use super::{CliResult, Failure, StoreArg};
use crate::clock::Millis;
use crate::model::InstanceRow;
use crate::model::schedule::Trigger;
use crate::model::{Failure as WorkFailure, Page, PageRequest, WorkState};
use crate::ops::claims::{self, ClaimStanding};
use crate::ops::cursors::{CursorStatus, rate_text};
use crate::ops::filter::{Filter, Subject};
use crate::store::Store;
use crate::store::url::OpenMode;
use crate::workflow::InstanceState;
use crate::workflow::engine::decode_state;

/// Which view to print.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum View {
    /// Headline counts by kind, state and build; authorities; events.
    Overview,
    /// Registered authority processes and their liveness.
    Authorities,
    /// Leases by resource: owner, generation, expiry.
    Leases,
    /// Durable work items (effects, schedule firings, cursors).
    Work,
    /// Workflow instances.
    Workflows,
    /// Subscription delivery cursors.
    Cursors,
    /// Event ingestions: dedup outcome and journal seq.
    Events,
    /// Schedules: trigger, catch-up, next due.
    Schedules,
    /// Operator actions.
    Audit,
    /// Grants that took a resource from a holder that had not released it (`--window`).
    Failovers,
    /// Refused (fenced) writes and who held the resource then (`--window`).
    Fenced,
}

impl View {
    fn name(self) -> &'static str {
        match self {
            Self::Overview => "overview",
            Self::Authorities => "authorities",
            Self::Leases => "leases",
            Self::Work => "work",
            Self::Workflows => "workflows",
            Self::Cursors => "cursors",
            Self::Events => "events",
            Self::Schedules => "schedules",
            Self::Audit => "audit",
            Self::Failovers => "failovers",
            Self::Fenced => "fenced",
        }
    }

    /// What the filter grammar knows this view as.
    fn subject(self) -> Subject {
        match self {
            Self::Work => Subject::Work,
            Self::Workflows => Subject::Workflows,
            other => Subject::Other(other.name()),
        }
    }
}

/// Arguments of `leasehold inspect`.
#[derive(Debug, Clone, Args)]
pub struct InspectArgs {
    #[command(flatten)]
    pub store: StoreArg,
    /// The view to print.
    #[arg(value_enum, value_name = "VIEW")]
    pub view: View,
    /// One JSON object per line instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Rows per page.
    #[arg(long, default_value_t = 50, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub limit: u32,
    /// `field:value` pairs, e.g. `state:pending,retry`, `kind:effect`, `owner:a-1`,
    /// `compat:incompatible`, `status:waiting`.
    #[arg(long, value_name = "EXPR")]
    pub filter: Vec<String>,
    /// Continue after this row key (printed under the previous page).
    #[arg(long, value_name = "KEY")]
    pub after: Option<String>,
    /// How far back `failovers` and `fenced` look, e.g. `15m` (the default), `90s`, `2h`.
    #[arg(long, value_name = "SPAN")]
    pub window: Option<String>,
}

/// Runs `leasehold inspect`.
///
/// # Errors
/// A store failure (exit 2) or a bad filter (exit 2).
pub fn run(args: &InspectArgs, out: &mut dyn Write) -> CliResult {
    let filter = parse_filter(args.view, &args.filter)?;
    if args.view == View::Overview && args.after.is_some() {
        return Err(Failure::usage("--after does not apply to the overview"));
    }
    if args.window.is_some() && !matches!(args.view, View::Failovers | View::Fenced) {
        return Err(Failure::usage(format!(
            "--window applies to failovers and fenced, not {}",
            args.view.name()
        )));
    }
    let window = super::incidents::window(args.window.as_deref())?;
    let store = args.store.open(OpenMode::ReadOnly)?;
    let now = store.now();
    let page = match &args.after {
        Some(key) => PageRequest::after(key.clone(), args.limit as usize),
        None => PageRequest::first(args.limit as usize),
    };
    let ctx = Ctx {
        store: &store,
        now,
        page,
        json: args.json,
    };
    let next = match args.view {
        View::Overview => overview(&ctx, out)?,
        View::Authorities => authorities::authorities(&ctx, out)?,
        View::Leases => leases(&ctx, out)?,
        View::Work => work(&ctx, &filter, out)?,
        View::Workflows => workflows(&ctx, &filter, out)?,
        View::Cursors => cursors(&ctx, out)?,
        View::Events => events(&ctx, out)?,
        View::Schedules => schedules(&ctx, out)?,
        View::Audit => audit(&ctx, out)?,
        View::Failovers => super::incidents::print_failovers(&ctx, window, out)?,
        View::Fenced => super::incidents::print_fenced(&ctx, window, out)?,
    };
    if let Some(key) = next {
        let hint = format!("(more rows: --after {})", cell_max(&key, 200));
        if args.json {
            let _ = writeln!(std::io::stderr(), "{hint}");
        } else {
            writeln!(out, "{hint}")?;
        }
    }
    Ok(())
}

/// What every view needs.
pub(super) struct Ctx<'a> {
    pub(super) store: &'a Store,
    pub(super) now: Millis,
    pub(super) page: PageRequest,
    pub(super) json: bool,
}

impl Ctx<'_> {
    /// Prints the rows as JSON lines or the table, and returns the continuation key.
    pub(super) fn emit<T: Serialize>(
        &self,
        out: &mut dyn Write,
        rows: &[T],
        table: &Table,
        next: Option<String>,
    ) -> Result<Option<String>, Failure> {
        if self.json {
            for row in rows {
                json_line(out, row)?;
            }
        } else {
            out.write_all(table.render().as_bytes())?;
        }
        Ok(next)
    }
}

/// Parses the `--filter` expressions (joined, as one filter) for `view`. A view whose
/// store read takes no filter refuses one rather than narrowing a single page.
fn parse_filter(view: View, exprs: &[String]) -> Result<Filter, Failure> {
    let filter =
        Filter::parse(view.subject(), &exprs.join(" ")).map_err(|e| Failure::usage(e.0))?;
    if filter.page_prefix().is_some() {
        return Err(Failure::usage(format!(
            "the {} view takes no filter here; start at a key with --after KEY",
            view.name()
        )));
    }
    Ok(filter)
}

fn yes_no(b: bool) -> String {
    if b { "yes" } else { "no" }.to_owned()
}

// ---------------------------------------------------------------- overview

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct OverviewRow {
    store: String,
    store_kind: &'static str,
    revision: u64,
    now: Millis,
    authorities_live: usize,
    authorities_silent: usize,
    authorities_registered: usize,
    work: Vec<CountRow>,
    workflows: serde_json::Map<String, serde_json::Value>,
    events: serde_json::Map<String, serde_json::Value>,
    claims: u64,
    writes_accepted: u64,
    writes_refused: u64,
    oldest_waiting: Option<Millis>,
    incidents: super::incidents::WindowCounts,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct CountRow {
    kind: &'static str,
    state: &'static str,
    compat: String,
    compatible: bool,
    count: u64,
}

fn overview(ctx: &Ctx<'_>, out: &mut dyn Write) -> Result<Option<String>, Failure> {
    let overview = ctx.store.overview()?;
    let live = LiveBuilds::load(ctx.store, ctx.now)?;
    let mut counts: Vec<CountRow> = overview
        .work
        .iter()
        .filter(|c| c.count > 0)
        .map(|c| CountRow {
            kind: c.kind.as_str(),
            state: c.state.as_str(),
            compat: c.compat.clone(),
            compatible: live.compatible(&c.compat),
            count: c.count,
        })
        .collect();
    counts.sort_by(|a, b| (a.kind, a.state, &a.compat).cmp(&(b.kind, b.state, &b.compat)));
    let to_map = |pairs: &[(String, u64)]| {
        pairs
            .iter()
            .filter(|(_, n)| *n > 0)
            .map(|(k, n)| (k.clone(), serde_json::Value::from(*n)))
            .collect()
    };
    let row = OverviewRow {
        store: ctx.store.describe(),
        store_kind: ctx.store.kind().as_str(),
        revision: overview.revision,
        now: ctx.now,
        authorities_live: live.live,
        authorities_silent: live.silent,
        authorities_registered: live.registered,
        workflows: to_map(&overview.workflows),
        events: to_map(&overview.events),
        work: counts,
        claims: overview.claims,
        writes_accepted: overview.writes_accepted,
        writes_refused: overview.writes_refused,
        oldest_waiting: overview.oldest_waiting,
        incidents: super::incidents::WindowCounts::read(ctx)?,
    };
    if ctx.json {
        json_line(out, &row)?;
        return Ok(None);
    }
    let pairs = |map: &serde_json::Map<String, serde_json::Value>| {
        if map.is_empty() {
            "none".to_owned()
        } else {
            map.iter()
                .map(|(k, v)| format!("{} {v}", cell(k)))
                .collect::<Vec<_>>()
                .join(", ")
        }
    };
    writeln!(
        out,
        "store        {} ({}, revision {})",
        cell_max(&row.store, 120),
        row.store_kind,
        row.revision
    )?;
    writeln!(
        out,
        "authorities  {} live, {} silent of {} registered",
        row.authorities_live, row.authorities_silent, row.authorities_registered
    )?;
    writeln!(out, "workflows    {}", pairs(&row.workflows))?;
    writeln!(out, "events       {}", pairs(&row.events))?;
    writeln!(
        out,
        "writes       {} accepted, {} refused (fenced); {} claims; oldest waiting {}",
        row.writes_accepted,
        row.writes_refused,
        row.claims,
        opt_when(row.oldest_waiting, ctx.now)
    )?;
    writeln!(out, "incidents    {}", row.incidents.line())?;
    writeln!(out)?;
    let mut table = Table::new(&["KIND", "STATE", "COMPAT", "COMPATIBLE", "COUNT"]);
    for c in &row.work {
        table.row(vec![
            c.kind.into(),
            c.state.into(),
            short(&c.compat),
            yes_no(c.compatible),
            c.count.to_string(),
        ]);
    }
    out.write_all(table.render().as_bytes())?;
    Ok(None)
}

// ---------------------------------------------------------------- authorities

// The view lives in `inspect/authorities.rs`.

// ---------------------------------------------------------------- leases

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct LeaseRow {
    resource_id: String,
    owner_id: String,
    generation: u64,
    status: &'static str,
    acquired_at: Millis,
    expires_at: Millis,
    released_at: Option<Millis>,
    /// Set while the lease has lapsed without a reclaim: for how long, in ms (the table
    /// says it; the JSON keeps absolute instants and `status`).
    #[serde(skip)]
    awaiting_reclaim_ms: Option<Millis>,
    checkpoint_generation: Option<u64>,
}

fn leases(ctx: &Ctx<'_>, out: &mut dyn Write) -> Result<Option<String>, Failure> {
    let Page { rows, next } = ctx.store.list_leases(&ctx.page)?;
    let rows: Vec<LeaseRow> = rows
        .into_iter()
        .map(|l| LeaseRow {
            status: l.status(ctx.now).as_str(),
            awaiting_reclaim_ms: ClaimStanding::of_lease(&l, ctx.now)
                .and_then(ClaimStanding::lapsed_ms),
            checkpoint_generation: l.checkpoint.as_ref().map(|c| c.generation),
            resource_id: l.resource_id,
            owner_id: l.owner_id,
            generation: l.generation,
            acquired_at: l.acquired_at,
            expires_at: l.expires_at,
            released_at: l.released_at,
        })
        .collect();
    let mut table = Table::new(&[
        "RESOURCE",
        "OWNER",
        "GEN",
        "STATUS",
        "EXPIRES",
        "ACQUIRED",
        "CHECKPOINT",
    ]);
    for l in &rows {
        table.row(vec![
            cell(&l.resource_id),
            cell(&l.owner_id),
            l.generation.to_string(),
            l.awaiting_reclaim_ms
                .map_or_else(|| l.status.into(), claims::expired_text),
            when(l.expires_at, ctx.now),
            when(l.acquired_at, ctx.now),
            l.checkpoint_generation
                .map_or_else(|| "-".into(), |g| format!("gen {g}")),
        ]);
    }
    ctx.emit(out, &rows, &table, next)
}

// ---------------------------------------------------------------- work

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct WorkRow {
    id: String,
    kind: &'static str,
    state: &'static str,
    handler: String,
    owner_id: Option<String>,
    generation: u64,
    lease_expires_at: Option<Millis>,
    /// Whether it is claimed and its claim lapsed without a reclaim (`leaseExpiresAt`
    /// says since when).
    claim_expired: bool,
    /// For how long, in ms (the table says it; the JSON keeps absolute instants).
    #[serde(skip)]
    awaiting_reclaim_ms: Option<Millis>,
    attempt_number: u32,
    uncertain_attempts: u32,
    max_attempts: u32,
    last_attempt_at: Option<Millis>,
    next_eligible_at: Millis,
    last_failure: Option<WorkFailure>,
    logical_effect_id: String,
    idempotency_key: String,
    compat: String,
    compatible: bool,
    created_at: Millis,
    updated_at: Millis,
}

fn work(ctx: &Ctx<'_>, filter: &Filter, out: &mut dyn Write) -> Result<Option<String>, Failure> {
    let live = LiveBuilds::load(ctx.store, ctx.now)?;
    // The digests present come from the (small) counts table, never from a scan.
    let present: Vec<String> = if filter.compat.is_some() {
        let mut d: Vec<String> = ctx
            .store
            .overview()?
            .work
            .into_iter()
            .map(|c| c.compat)
            .collect();
        d.sort();
        d.dedup();
        d
    } else {
        Vec::new()
    };
    let Page { rows, next } = match filter.work_filter(&present, |d| live.compatible(d)) {
        Some(filter) => ctx.store.list_work(&filter, &ctx.page)?,
        None => Page {
            rows: Vec::new(),
            next: None,
        },
    };
    let rows: Vec<WorkRow> = rows
        .into_iter()
        .map(|w| WorkRow {
            compatible: live.compatible(&w.compat),
            kind: w.kind.as_str(),
            state: w.state.as_str(),
            claim_expired: ClaimStanding::of_work(&w, ctx.now)
                .is_some_and(ClaimStanding::is_expired),
            awaiting_reclaim_ms: ClaimStanding::of_work(&w, ctx.now)
                .and_then(ClaimStanding::lapsed_ms),
            owner_id: w.current_owner().map(str::to_owned),
            lease_expires_at: (w.state == WorkState::Claimed)
                .then_some(w.lease_expires_at)
                .flatten(),
            id: w.id,
            handler: w.handler,
            generation: w.generation,
            attempt_number: w.attempt_number,
            uncertain_attempts: w.uncertain_attempts,
            max_attempts: w.max_attempts,
            last_attempt_at: w.last_attempt_at,
            next_eligible_at: w.next_eligible_at,
            last_failure: w.last_failure,
            logical_effect_id: w.logical_effect_id,
            idempotency_key: w.idempotency_key,
            compat: w.compat,
            created_at: w.created_at,
            updated_at: w.updated_at,
        })
        .collect();
    let mut table = Table::new(&[
        "ID",
        "KIND",
        "STATE",
        "HANDLER",
        "OWNER",
        "GEN",
        "ATTEMPTS",
        "UNCERTAIN",
        "NEXT",
        "COMPAT",
        "COMPATIBLE",
    ]);
    for w in &rows {
        let next = match (w.state, w.lease_expires_at) {
            ("claimed", Some(at)) => format!("lease {}", when(at, ctx.now)),
            ("pending" | "retry", _) => when(w.next_eligible_at, ctx.now),
            _ => "-".into(),
        };
        table.row(vec![
            cell(&w.id),
            w.kind.into(),
            w.awaiting_reclaim_ms
                .map_or_else(|| w.state.into(), claims::expired_text),
            cell_max(&w.handler, 24),
            opt_cell(w.owner_id.as_deref()),
            w.generation.to_string(),
            if w.max_attempts == u32::MAX {
                format!("{}/∞", w.attempt_number)
            } else {
                format!("{}/{}", w.attempt_number, w.max_attempts)
            },
            w.uncertain_attempts.to_string(),
            next,
            short(&w.compat),
            yes_no(w.compatible),
        ]);
    }
    ctx.emit(out, &rows, &table, next)
}

// ---------------------------------------------------------------- workflows

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct WorkflowRow {
    instance_id: String,
    workflow_id: String,
    status: String,
    current_step_id: Option<String>,
    activation_id: Option<String>,
    attempt: Option<u64>,
    waiting_reason: Option<String>,
    next_eligible_at: Option<Millis>,
    created_at: Millis,
    updated_at: Millis,
    instance_revision: u64,
    compat: String,
    compatible: bool,
    incompatible_reason: Option<String>,
    principal: String,
    failure: Option<serde_json::Value>,
    output: Option<serde_json::Value>,
}

/// The display fields of an instance's state JSON, tolerant of shapes this build does not
/// know (then only the fields present are shown).
struct StateFields {
    current_step_id: Option<String>,
    activation_id: Option<String>,
    attempt: Option<u64>,
    waiting_reason: Option<String>,
    failure: Option<serde_json::Value>,
    output: Option<serde_json::Value>,
}

fn state_fields(row: &InstanceRow) -> StateFields {
    if let Ok((_, state)) = decode_state(row) {
        return fields_of(state);
    }
    let value: serde_json::Value = serde_json::from_str(&row.state).unwrap_or_default();
    // The engine stores `{ definition, state }`; older or foreign rows may be the bare state.
    let value = value
        .get("state")
        .filter(|v| v.is_object())
        .cloned()
        .unwrap_or(value);
    if let Ok(state) = serde_json::from_value::<InstanceState>(value.clone()) {
        return fields_of(state);
    }
    let text_of = |key: &str| {
        value
            .get(key)
            .and_then(serde_json::Value::as_str)
            .map(str::to_owned)
    };
    let present = |key: &str| value.get(key).filter(|v| !v.is_null()).cloned();
    StateFields {
        current_step_id: text_of("currentStepId"),
        activation_id: text_of("activationId"),
        attempt: value.get("attempt").and_then(serde_json::Value::as_u64),
        waiting_reason: text_of("waitingReason"),
        failure: present("failure"),
        output: present("output"),
    }
}

fn fields_of(state: InstanceState) -> StateFields {
    StateFields {
        waiting_reason: state.waiting_reason(),
        current_step_id: state.current_step_id,
        activation_id: state.activation_id,
        attempt: Some(u64::from(state.attempt)),
        failure: state.failure.and_then(|f| serde_json::to_value(f).ok()),
        output: state.output,
    }
}

fn workflows(
    ctx: &Ctx<'_>,
    filter: &Filter,
    out: &mut dyn Write,
) -> Result<Option<String>, Failure> {
    let live = LiveBuilds::load(ctx.store, ctx.now)?;
    let Page { rows, next } =
        ctx.store
            .list_instances_by(filter.status, filter.id_prefix.as_deref(), &ctx.page)?;
    let rows: Vec<WorkflowRow> = rows
        .into_iter()
        .map(|i| {
            let fields = state_fields(&i);
            let compatible = live.compatible(&i.compat);
            let terminal = matches!(i.status.as_str(), "completed" | "failed" | "cancelled");
            WorkflowRow {
                incompatible_reason: (!compatible && !terminal)
                    .then(|| format!("no live authority runs build key {}", i.compat)),
                compatible,
                current_step_id: fields.current_step_id,
                activation_id: fields.activation_id,
                attempt: fields.attempt,
                waiting_reason: fields.waiting_reason,
                failure: fields.failure,
                output: fields.output,
                instance_id: i.instance_id,
                workflow_id: i.workflow_id,
                status: i.status.to_string(),
                next_eligible_at: i.next_eligible_at,
                created_at: i.created_at,
                updated_at: i.updated_at,
                instance_revision: i.instance_revision,
                compat: i.compat,
                principal: i.principal,
            }
        })
        .collect();
    let mut table = Table::new(&[
        "INSTANCE",
        "WORKFLOW",
        "STATUS",
        "STEP",
        "ATTEMPT",
        "WAITING",
        "NEXT",
        "REV",
        "COMPAT",
        "COMPATIBLE",
    ]);
    for w in &rows {
        table.row(vec![
            cell(&w.instance_id),
            cell_max(&w.workflow_id, 24),
            cell_max(&w.status, 12),
            opt_cell(w.current_step_id.as_deref()),
            w.attempt.map_or_else(|| "-".into(), |a| a.to_string()),
            opt_cell(w.waiting_reason.as_deref()),
            opt_when(w.next_eligible_at, ctx.now),
            w.instance_revision.to_string(),
            short(&w.compat),
            yes_no(w.compatible),
        ]);
    }
    ctx.emit(out, &rows, &table, next)
}

// ---------------------------------------------------------------- cursors

/// A cursor as [`crate::ops::cursors`] defines it, and whether a live build can claim it.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct CursorRow {
    #[serde(flatten)]
    cursor: CursorStatus,
    compatible: Option<bool>,
}

fn cursors(ctx: &Ctx<'_>, out: &mut dyn Write) -> Result<Option<String>, Failure> {
    let live = LiveBuilds::load(ctx.store, ctx.now)?;
    let Page { rows, next } = crate::ops::cursors::page(ctx.store, &ctx.page, ctx.now)?;
    let shown: Vec<CursorRow> = rows
        .into_iter()
        .map(|cursor| CursorRow {
            compatible: cursor.compat.as_deref().map(|c| live.compatible(c)),
            cursor,
        })
        .collect();
    let mut table = Table::new(&[
        "SUBSCRIPTION",
        "EVENT",
        "POSITION",
        "LAG",
        "GEN",
        "OWNER",
        "STATE",
        "CLAIMS/S",
        "UPDATED",
        "COMPATIBLE",
    ]);
    for row in &shown {
        let c = &row.cursor;
        table.row(vec![
            cell(&c.subscription_id),
            cell_max(&c.event_type, 24),
            c.position.to_string(),
            c.lag.to_string(),
            c.generation.to_string(),
            opt_cell(c.owner_id.as_deref()),
            c.state.unwrap_or("-").into(),
            rate_text(c.claims_per_sec),
            when(c.updated_at, ctx.now),
            row.compatible.map_or_else(|| "-".into(), yes_no),
        ]);
    }
    ctx.emit(out, &shown, &table, next)
}

// ---------------------------------------------------------------- events

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct EventRow {
    id: i64,
    at: Millis,
    event_type: String,
    source: Option<String>,
    external_id: Option<String>,
    outcome: &'static str,
    seq: Option<i64>,
}

fn events(ctx: &Ctx<'_>, out: &mut dyn Write) -> Result<Option<String>, Failure> {
    let Page { rows, next } = ctx.store.list_ingestions(&ctx.page)?;
    let rows: Vec<EventRow> = rows
        .into_iter()
        .map(|i| EventRow {
            outcome: i.outcome.as_str(),
            id: i.id,
            at: i.at,
            event_type: i.event_type,
            source: i.source,
            external_id: i.external_id,
            seq: i.seq,
        })
        .collect();
    let mut table = Table::new(&[
        "ID",
        "AT",
        "TYPE",
        "SOURCE",
        "EXTERNAL-ID",
        "OUTCOME",
        "SEQ",
    ]);
    for e in &rows {
        table.row(vec![
            e.id.to_string(),
            when(e.at, ctx.now),
            cell_max(&e.event_type, 24),
            opt_cell(e.source.as_deref()),
            opt_cell(e.external_id.as_deref()),
            e.outcome.into(),
            e.seq.map_or_else(|| "-".into(), |s| s.to_string()),
        ]);
    }
    ctx.emit(out, &rows, &table, next)
}

// ---------------------------------------------------------------- schedules

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ScheduleRow {
    schedule_id: String,
    trigger: String,
    every_ms: Option<Millis>,
    after_ms: Option<Millis>,
    catch_up: String,
    handler: String,
    compat: String,
    compatible: bool,
    last_due: Option<Millis>,
    next_due: Millis,
    due: bool,
    created_at: Millis,
}

fn schedules(ctx: &Ctx<'_>, out: &mut dyn Write) -> Result<Option<String>, Failure> {
    let live = LiveBuilds::load(ctx.store, ctx.now)?;
    let Page { rows, next } = ctx.store.list_schedules(&ctx.page)?;
    let rows: Vec<ScheduleRow> = rows
        .into_iter()
        .map(|s| {
            let (trigger, every_ms, after_ms) = match s.trigger {
                Trigger::Interval { every_ms } => (
                    format!("every {}", interval_label(every_ms)),
                    Some(every_ms),
                    None,
                ),
                Trigger::Delay { after_ms } => (
                    format!("once at {}", crate::clock::format_instant(after_ms)),
                    None,
                    Some(after_ms),
                ),
            };
            ScheduleRow {
                trigger,
                every_ms,
                after_ms,
                catch_up: s.catch_up.label(),
                compatible: live.compatible(&s.compat),
                due: s.next_due <= ctx.now,
                schedule_id: s.schedule_id,
                handler: s.handler,
                compat: s.compat,
                last_due: s.last_due,
                next_due: s.next_due,
                created_at: s.created_at,
            }
        })
        .collect();
    let mut table = Table::new(&[
        "SCHEDULE",
        "TRIGGER",
        "CATCH-UP",
        "HANDLER",
        "NEXT-DUE",
        "LAST-DUE",
        "COMPAT",
        "COMPATIBLE",
    ]);
    for s in &rows {
        table.row(vec![
            cell(&s.schedule_id),
            s.trigger.clone(),
            s.catch_up.clone(),
            cell_max(&s.handler, 24),
            when(s.next_due, ctx.now),
            opt_when(s.last_due, ctx.now),
            short(&s.compat),
            yes_no(s.compatible),
        ]);
    }
    ctx.emit(out, &rows, &table, next)
}

/// `5s`, `1m`, `2h`, or the exact duration when it is not a whole unit.
fn interval_label(ms: Millis) -> String {
    match ms {
        ms if ms > 0 && ms % 3_600_000 == 0 => format!("{}h", ms / 3_600_000),
        ms if ms > 0 && ms % 60_000 == 0 => format!("{}m", ms / 60_000),
        ms if ms > 0 && ms % 1_000 == 0 => format!("{}s", ms / 1_000),
        ms => crate::clock::format_duration(ms),
    }
}

// ---------------------------------------------------------------- audit

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct AuditRow {
    id: i64,
    at: Millis,
    actor: String,
    action: String,
    target: String,
    outcome: String,
}

fn audit(ctx: &Ctx<'_>, out: &mut dyn Write) -> Result<Option<String>, Failure> {
    let Page { rows, next } = ctx.store.list_audit(&ctx.page)?;
    let rows: Vec<AuditRow> = rows
        .into_iter()
        .map(|a| AuditRow {
            id: a.id,
            at: a.at,
            actor: a.actor,
            action: a.action,
            target: a.target,
            outcome: a.outcome,
        })
        .collect();
    let mut table = Table::new(&["ID", "AT", "ACTOR", "ACTION", "TARGET", "OUTCOME"]);
    for a in &rows {
        table.row(vec![
            a.id.to_string(),
            when(a.at, ctx.now),
            cell_max(&a.actor, 24),
            cell_max(&a.action, 16),
            cell(&a.target),
            cell(&a.outcome),
        ]);
    }
    ctx.emit(out, &rows, &table, next)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn filters_join_into_one_and_views_without_store_filters_refuse() {
        let f = parse_filter(
            View::Work,
            &["state:pending,retry kind:effect".into(), "owner:a-1".into()],
        )
        .unwrap();
        assert_eq!(f.owner.as_deref(), Some("a-1"));
        assert_eq!(f.states.len(), 2);
        assert!(parse_filter(View::Leases, &["owner:x".into()]).is_err());
        let refused = parse_filter(View::Leases, &["lease-1".into()]).unwrap_err();
        assert!(refused.message.contains("--after"), "{}", refused.message);
        assert!(parse_filter(View::Work, &["bogus:1".into()]).is_err());
        assert!(parse_filter(View::Work, &["state:".into()]).is_err());
        assert!(parse_filter(View::Workflows, &["order-".into()]).is_ok());
    }

    #[test]
    fn state_fields_tolerate_unknown_shapes() {
        let row = |state: &str| InstanceRow {
            instance_id: "i".into(),
            workflow_id: "w".into(),
            status: crate::model::InstanceStatus::Waiting,
            compat: "c".into(),
            instance_revision: 1,
            next_eligible_at: None,
            waiting_event: None,
            principal: "p".into(),
            start_key: None,
            state: state.into(),
            created_at: 0,
            updated_at: 0,
        };
        let fields = state_fields(&row(
            r#"{"currentStepId":"s1","attempt":2,"waitingReason":"timer"}"#,
        ));
        assert_eq!(fields.current_step_id.as_deref(), Some("s1"));
        assert_eq!(fields.attempt, Some(2));
        assert_eq!(fields.waiting_reason.as_deref(), Some("timer"));
        let none = state_fields(&row("not json"));
        assert!(none.current_step_id.is_none());
    }
}
