//! `inspect authorities`: each registration with its liveness (see
//! [`crate::rules::liveness`]) and how many claims it holds, of which how many lapsed
//! unreclaimed (see [`crate::ops::claims`]); how many outcomes it holds in recovery and
//! how long its write has waited on the store's lock, as it published them.

use std::io::Write;

use serde::Serialize;

use super::render::ViewRow;
use super::{Ctx, Failure};
use crate::cli::output::{short, when};
use crate::clock::{Millis, format_duration};
use crate::foundation::text_cell::{cell, cell_max};
use crate::model::{Page, Published};
use crate::ops::claims::OwnedClaims;
use crate::ops::published::stall_of;
use crate::rules::liveness::{Liveness, Timing, liveness};
use crate::store::stall::ProcessStall;

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct AuthorityRow {
    instance_id: String,
    build: String,
    compat: String,
    state: Liveness,
    heartbeat_at: Millis,
    started_at: Millis,
    stopped_at: Option<Millis>,
    host: String,
    pid: u32,
    /// The timing its liveness is judged by.
    timing: Timing,
    /// Claimed items it owns (read up to a cap) and how many of them lapsed unreclaimed.
    owned: OwnedClaims,
    /// Outcomes it holds in recovery, as it published them.
    published: Published,
    /// Its process's write waiting on the store's lock now, as posted (while it runs).
    stall: Option<ProcessStall>,
    config: serde_json::Value,
}

impl ViewRow for AuthorityRow {
    const COLUMNS: &'static [&'static str] = &[
        "INSTANCE",
        "BUILD",
        "COMPAT",
        "STATE",
        "HEARTBEAT",
        "OWNED",
        "RECOVERY",
        "STALLED",
        "STARTED",
        "HOST",
        "PID",
    ];

    fn cells(&self, now: Millis) -> Vec<String> {
        let a = self;
        vec![
            cell(&a.instance_id),
            cell_max(&a.build, 16),
            short(&a.compat),
            a.state.as_str().into(),
            when(a.heartbeat_at, now),
            a.owned.text(),
            a.published.in_recovery.to_string(),
            stalled(a.stall.as_ref(), now),
            when(a.started_at, now),
            cell_max(&a.host, 24),
            a.pid.to_string(),
        ]
    }
}

pub(super) fn print(ctx: &Ctx<'_>, out: &mut dyn Write) -> Result<Option<String>, Failure> {
    let Page { rows, next } = ctx.store.list_authorities(&ctx.page)?;
    let stalls = ctx.store.write_stalls()?;
    let mut shown = Vec::with_capacity(rows.len());
    for a in rows {
        let stall = stall_of(&a, &stalls, ctx.now).cloned();
        shown.push(AuthorityRow {
            stall,
            state: liveness(&a, ctx.now),
            timing: Timing::of(&a),
            owned: OwnedClaims::read(ctx.store, &a.instance_id, ctx.now)?,
            config: serde_json::from_str(&a.config)
                .unwrap_or(serde_json::Value::String(a.config.clone())),
            instance_id: a.instance_id,
            build: a.build,
            compat: a.compat,
            heartbeat_at: a.heartbeat_at,
            started_at: a.started_at,
            stopped_at: a.stopped_at,
            host: a.host,
            pid: a.pid,
            published: a.published,
        });
    }
    ctx.emit(out, &shown, next)
}

/// `4.0s (pid 77)` for a write waiting on the store's lock since 4 s ago, else `-`.
fn stalled(stall: Option<&ProcessStall>, now: Millis) -> String {
    stall.map_or_else(
        || "-".into(),
        |s| {
            let waited = format_duration(now.saturating_sub(s.since));
            match &s.holder {
                Some(holder) => format!("{waited} ({})", cell_max(holder, 40)),
                None => waited,
            }
        },
    )
}
