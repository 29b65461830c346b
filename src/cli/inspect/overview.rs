//! `inspect overview`: one object of headline figures (store, revision, authorities by
//! liveness, workflows and events by status, claims, accepted and refused writes, the
//! window's incidents, retention), how late each kind and lane of work runs, and the work
//! counts by kind, state and build; outcomes held in recovery and writes stalled on the
//! store's lock, as the authorities publish them; the intake's waiting and refused
//! requests; the handlers paused fleet-wide; whether this host's writers refuse the store
//! as rewound; the changes of database server the store shows.

use std::io::Write;

use serde::Serialize;

use super::incidents;
use super::render::{ViewRow, table};
use super::{Ctx, Failure};
use crate::cli::output::{json_line, opt_when, short, yes_no};
use crate::cli::witness::StateDirArg;
use crate::clock::{Millis, format_duration};
use crate::foundation::text_cell::{cell, cell_max};
use crate::model::{IntakeCounts, PageRequest, PausedHandler};
use crate::ops::live_builds::LiveBuilds;
use crate::ops::paused_handlers;
use crate::ops::published::PublishedView;
use crate::ops::retention::RetentionView;
use crate::rules::lateness::{self, KindLateness, LaneLateness};
use crate::rules::liveness::Liveness;
use crate::store::server_record::ServerChange;
use crate::store::witness::Rewound;

/// Registrations read for the retention line (the policy of the first running one, and
/// how many of the others differ) and the recovery line.
const REGISTRY_SAMPLE: usize = 1_000;

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct OverviewRow {
    store: String,
    store_kind: &'static str,
    revision: u64,
    now: Millis,
    authorities_live: usize,
    authorities_silent: usize,
    /// Registered, but neither heartbeating nor stopped cleanly: their claims are reclaimed.
    authorities_gone: usize,
    authorities_stopped: usize,
    authorities_registered: usize,
    work: Vec<CountRow>,
    workflows: serde_json::Map<String, serde_json::Value>,
    events: serde_json::Map<String, serde_json::Value>,
    claims: u64,
    writes_accepted: u64,
    writes_refused: u64,
    oldest_waiting: Option<Millis>,
    /// Per kind, its latest lane; then every late lane (`ops::lateness`).
    late_kinds: Vec<KindLateness>,
    late_lanes: Vec<LaneLateness>,
    incidents: incidents::WindowCounts,
    /// The running authorities' retention policy and where the checker's history starts.
    retention: RetentionView,
    /// Outcomes held in recovery and writes stalled on the store's lock, as the
    /// authorities publish them.
    #[serde(flatten)]
    published: PublishedView,
    /// Requests applications wrote into the intake that no claim has moved yet, and those
    /// the move refused.
    intake: IntakeCounts,
    /// Handlers paused fleet-wide: who, when, why, and how many items wait behind each.
    paused_handlers: Vec<PausedHandler>,
    /// The store judged by this host's rewind witness (`LEASEHOLD_STATE_DIR`, else the
    /// default): what the writers here refuse it for, `null` when they would take it.
    rewound: Option<Rewound>,
    /// The changes of database server the store shows (`store/server_record.rs`): whether
    /// commits were lost in one cannot be told from the store.
    server_changes: Vec<ServerChange>,
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

impl ViewRow for CountRow {
    const COLUMNS: &'static [&'static str] = &["KIND", "STATE", "COMPAT", "COMPATIBLE", "COUNT"];

    fn cells(&self, _now: Millis) -> Vec<String> {
        let c = self;
        vec![
            c.kind.into(),
            c.state.into(),
            short(&c.compat),
            yes_no(c.compatible),
            c.count.to_string(),
        ]
    }
}

pub(super) fn print(ctx: &Ctx<'_>, out: &mut dyn Write) -> Result<Option<String>, Failure> {
    let overview = ctx.store.overview()?;
    let live = LiveBuilds::load(ctx.store, ctx.now)?;
    let mut counts: Vec<CountRow> = overview
        .work
        .iter()
        .filter(|c| c.count > 0)
        .map(|c| CountRow {
            kind: c.kind.as_str(),
            state: c.name(),
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
    let late_lanes = lateness::lanes(&overview.waiting_lanes, ctx.now);
    let registered = ctx
        .store
        .list_authorities(&PageRequest::first(REGISTRY_SAMPLE))?
        .rows;
    let row = OverviewRow {
        store: ctx.store.describe(),
        store_kind: ctx.store.kind().as_str(),
        revision: overview.revision,
        now: ctx.now,
        authorities_live: live.live,
        authorities_silent: live.silent,
        authorities_gone: live.in_state(Liveness::Gone),
        authorities_stopped: live.in_state(Liveness::Stopped),
        authorities_registered: live.registered(),
        workflows: to_map(&overview.workflows),
        events: to_map(&overview.events),
        work: counts,
        claims: overview.claims,
        writes_accepted: overview.writes_accepted,
        writes_refused: overview.writes_refused,
        oldest_waiting: overview.oldest_waiting,
        late_kinds: lateness::by_kind(&late_lanes),
        late_lanes,
        incidents: incidents::WindowCounts::read(ctx)?,
        retention: RetentionView::read(&registered, overview.history_from),
        published: PublishedView::read(&registered, &ctx.store.write_stalls()?, ctx.now),
        intake: overview.intake,
        paused_handlers: overview.paused_handlers,
        rewound: StateDirArg::from_env().rewound(ctx.store)?,
        server_changes: ctx.store.server_changes()?,
    };
    if ctx.json {
        json_line(out, &row)?;
    } else {
        print_text(&row, ctx.now, out)?;
    }
    Ok(None)
}

/// The overview for people: one line per figure, then the work counts.
fn print_text(row: &OverviewRow, now: Millis, out: &mut dyn Write) -> Result<(), Failure> {
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
        "authorities  {} live, {} silent, {} gone, {} stopped ({} registered)",
        row.authorities_live,
        row.authorities_silent,
        row.authorities_gone,
        row.authorities_stopped,
        row.authorities_registered
    )?;
    writeln!(out, "workflows    {}", pairs(&row.workflows))?;
    writeln!(out, "events       {}", pairs(&row.events))?;
    writeln!(
        out,
        "writes       {} accepted, {} refused (fenced); {} claims; oldest waiting {}",
        row.writes_accepted,
        row.writes_refused,
        row.claims,
        opt_when(row.oldest_waiting, now)
    )?;
    writeln!(out, "late         {}", late_line(&row.late_kinds))?;
    writeln!(out, "incidents    {}", row.incidents.line())?;
    writeln!(out, "retention    {}", row.retention.line())?;
    writeln!(
        out,
        "recovery     {}",
        cell_max(&row.published.line(now), 400)
    )?;
    writeln!(out, "rewound      {}", rewound_line(row.rewound.as_ref()))?;
    writeln!(out, "server       {}", server_line(&row.server_changes))?;
    writeln!(out, "intake       {}", row.intake.line())?;
    writeln!(
        out,
        "paused       {}",
        paused_handlers::line(&row.paused_handlers)
    )?;
    writeln!(out)?;
    out.write_all(table(&row.work, now).render().as_bytes())?;
    Ok(())
}

/// `no`, or what this host's writers refuse the store for.
fn rewound_line(rewound: Option<&Rewound>) -> String {
    rewound.map_or_else(
        || "no".to_owned(),
        |r| {
            format!(
                "YES: this host saw revision {}, the store is at revision {}: {}; writers here refuse it (STORE_REWOUND)",
                r.witnessed.revision,
                r.store.revision,
                cell(&r.detail)
            )
        },
    )
}

/// `unchanged`, or each change of server the store shows: `CHANGED:` while one is not
/// acknowledged, `changed (acknowledged):` once every one is.
fn server_line(changes: &[ServerChange]) -> String {
    if changes.is_empty() {
        return "unchanged".to_owned();
    }
    let said: Vec<String> = changes
        .iter()
        .map(|c| match (c.acknowledged, changes.len()) {
            (true, 2..) => format!("{} (acknowledged)", c.sentence()),
            _ => c.sentence(),
        })
        .collect();
    let head = if changes.iter().all(|c| c.acknowledged) {
        "changed (acknowledged)"
    } else {
        "CHANGED"
    };
    format!("{head}: {}", cell_max(&said.join("; "), 600))
}

/// `effect 45m00s (flood), schedule 2.0s (tick)`, or `none`.
fn late_line(kinds: &[KindLateness]) -> String {
    if kinds.is_empty() {
        return "none".into();
    }
    kinds
        .iter()
        .map(|k| {
            format!(
                "{} {} ({})",
                k.kind.as_str(),
                format_duration(k.late_ms),
                cell(&k.handler)
            )
        })
        .collect::<Vec<_>>()
        .join(", ")
}
