//! Authorities: who runs, under which build, how recently alive, how much they own, and
//! what each publishes it cannot settle by itself (outcomes held in recovery, a stall).

use crate::foundation::timefmt::TimeFmt;
use std::collections::HashMap;

use super::super::snapshot::Snapshot;
use super::super::text::{clean, short};
use super::super::theme::Role;
use super::{Cell, Column, Row, TableData, col, version};
use crate::clock::Millis;
use crate::model::{Authority, Page};
use crate::ops::claims::OwnedClaims;
use crate::ops::heartbeat::heartbeat_age;
use crate::ops::published::stall_of;
use crate::rules::liveness::{Liveness, Timing, liveness};
use crate::store::stall::ProcessStall;

pub const COLUMNS: &[Column] = &[
    col("instance", 18, 0),
    col("state", 7, 0),
    col("build", 10, 1),
    col("heartbeat", 9, 1),
    col("owned", 6, 1),
    col("claims/s", 8, 2),
    col("demo", 8, 2),
    col("compat", 8, 3),
    col("host", 14, 4),
    col("started", 12, 5),
    col("recovery", 8, 5),
];

/// Window over which claims/s is averaged.
pub const RATE_WINDOW_MS: Millis = 10_000;

/// A stopped authority left cleanly: nothing to warn about, so it is muted, not red.
#[must_use]
pub fn state_role(state: Liveness) -> Role {
    match state {
        Liveness::Live => Role::AuthorityLive,
        Liveness::Silent => Role::AuthoritySilent,
        Liveness::Gone => Role::AuthorityGone,
        Liveness::Stopped => Role::Muted,
    }
}

#[must_use]
pub fn table(
    snap: &Snapshot,
    page: &Page<Authority>,
    owned: &HashMap<String, OwnedClaims>,
    fmt: TimeFmt,
) -> TableData {
    let now = fmt.now;
    let rows = page
        .rows
        .iter()
        .map(|a| {
            let state = liveness(a, now);
            let demo = snap
                .demo
                .as_ref()
                .and_then(|d| d.iter().find(|x| x.id == a.instance_id))
                .map(|d| d.state.as_str());
            let claims = owned.get(&a.instance_id).copied().unwrap_or_default();
            let n = claims.claimed;
            let rate = snap.claim_rates.per_sec(&a.instance_id);
            // Marked when it runs another build than the running fleet's (with none
            // running, there is no fleet's build to differ from).
            let other_build = snap.fleet.any_running() && !snap.live_compats.contains(&a.compat);
            let timing = Timing::of(a);
            Row {
                key: a.instance_id.clone(),
                cells: vec![
                    Cell::raw(&a.instance_id, 64),
                    Cell::text(state.as_str()).role(state_role(state)),
                    Cell::raw(&a.build, 32),
                    Cell::timed(heartbeat_age(now, a.heartbeat_at), now - a.heartbeat_at)
                        .role_if(state != Liveness::Live, state_role(state)),
                    Cell::timed(claims.text(), i64::try_from(n).unwrap_or(0))
                        .role_if(claims.expired > 0, Role::LeaseExpired),
                    Cell::timed(format!("{rate:.1}"), (rate * 10.0) as i64),
                    Cell::text(demo.unwrap_or("-"))
                        .role_if(demo.is_some_and(|d| d != "running"), Role::Warning),
                    Cell::text(short(&a.compat, 8)).role_if(other_build, Role::Incompatible),
                    Cell::raw(&format!("{}:{}", a.host, a.pid), 40),
                    Cell::timed(fmt.wall(a.started_at), a.started_at),
                    Cell::timed(
                        a.published.in_recovery.to_string(),
                        i64::try_from(a.published.in_recovery).unwrap_or(i64::MAX),
                    )
                    .role_if(a.published.in_recovery > 0, Role::Warning),
                ],
                detail: vec![
                    ("instance".into(), clean(&a.instance_id, 200)),
                    (
                        "state".into(),
                        format!(
                            "{state} (heartbeat every {} ms, lease {} ms)",
                            timing.heartbeat_interval_ms, timing.lease_duration_ms
                        ),
                    ),
                    ("build".into(), clean(&a.build, 200)),
                    ("compat".into(), clean(&a.compat, 200)),
                    (
                        "host / pid".into(),
                        format!("{} / {}", clean(&a.host, 100), a.pid),
                    ),
                    ("started".into(), fmt.at(a.started_at)),
                    (
                        "heartbeat".into(),
                        format!(
                            "{} ({})",
                            fmt.at(a.heartbeat_at),
                            heartbeat_age(now, a.heartbeat_at)
                        ),
                    ),
                    (
                        "stopped".into(),
                        a.stopped_at.map_or_else(|| "-".into(), |t| fmt.at(t)),
                    ),
                    ("items owned".into(), owned_text_detail(claims)),
                    ("claims/s (10 s)".into(), format!("{rate:.1}")),
                    ("in recovery".into(), recovery_detail(a)),
                    ("write stall".into(), stall_detail(a, &snap.stalls, fmt)),
                    ("stood aside".into(), steps_aside_detail(a)),
                    ("demo state".into(), demo.unwrap_or("-").into()),
                    ("config".into(), clean(&a.config, 2_000)),
                ],
                authority: Some(a.instance_id.clone()),
                version: version(a) + demo.unwrap_or(""),
                ..Row::default()
            }
        })
        .collect();
    let registrations = snap.fleet.registrations();
    let live = registrations
        .iter()
        .filter(|a| liveness(a, now) == Liveness::Live)
        .count();
    TableData::new(
        COLUMNS,
        rows,
        format!("{live} live of {}", registrations.len()),
    )
}

fn owned_text_detail(claims: OwnedClaims) -> String {
    let count = format!("{} claimed items", claims.claimed);
    match claims.expired {
        0 => count,
        expired => format!("{count}, {expired} expired, awaiting reclaim"),
    }
}

/// `2 held: e1 (effect, generation 3, since 12:00:01: the read-back failed: …), …`.
fn recovery_detail(a: &Authority) -> String {
    let p = &a.published;
    if p.in_recovery == 0 {
        return "none".into();
    }
    let listed: Vec<String> = p
        .recovery
        .iter()
        .take(5)
        .map(|r| {
            format!(
                "{} ({}, generation {}: {})",
                clean(&r.resource_id, 64),
                r.kind,
                r.generation,
                clean(&r.why, 120)
            )
        })
        .collect();
    let more = p.in_recovery.saturating_sub(listed.len() as u64);
    let tail = if more > 0 {
        format!(" and {more} more")
    } else {
        String::new()
    };
    format!("{} held: {}{tail}", p.in_recovery, listed.join(", "))
}

/// `12 polls since it started`, or `none`: how often it left the crowded write lock to
/// others, as of its last heartbeat (why free slots claimed nothing while work waited).
fn steps_aside_detail(a: &Authority) -> String {
    match a.published.steps_aside {
        0 => "none".into(),
        1 => "1 poll since it started".into(),
        n => format!("{n} polls since it started"),
    }
}

/// `waiting since 12:00:01 (4.0s), holder pid 77`, or `none` (also for an authority no
/// longer running: a dead process waits for nothing).
fn stall_detail(a: &Authority, stalls: &[ProcessStall], fmt: TimeFmt) -> String {
    match stall_of(a, stalls, fmt.now) {
        None => "none".into(),
        Some(s) => format!(
            "waiting since {} ({}), holder {}",
            fmt.at(s.since),
            crate::clock::format_duration(fmt.now.saturating_sub(s.since)),
            s.holder
                .as_deref()
                .map_or_else(|| "unknown".into(), |h| clean(h, 200))
        ),
    }
}
