//! Leases and claims: what is held and by whom. The named leases (kind `lease`), then the
//! work items claimed now (kind `effect`, `schedule`, `cursor`, with their handler): owner,
//! generation, live / expired / released, expiry countdown, token.

use super::super::snapshot::Holds;
use super::super::text::{clean, relative, short};
use super::super::theme::Role;
use super::{Cell, Column, Row, TableData, col, version};
use crate::foundation::timefmt::TimeFmt;
use crate::model::{Lease, WorkItem};
use crate::ops::claims::ClaimStanding;

pub const COLUMNS: &[Column] = &[
    col("resource", 24, 0),
    col("kind", 8, 0),
    col("owner", 14, 0),
    col("gen", 5, 0),
    // Where the terminal is narrow, `expires` says it alone: a countdown, `-` (released)
    // or `expired, awaiting reclaim`.
    col("status", 8, 1),
    col("expires", 11, 0),
    col("handler", 12, 2),
    col("token", 10, 3),
    col("acquired", 12, 4),
    col("checkpoint", 12, 5),
];

/// The kind of a named lease, beside the work kinds of claims.
const LEASE: &str = "lease";

#[must_use]
pub fn status_role(status: &str) -> Role {
    match status {
        "live" => Role::LeaseLive,
        "expired" => Role::LeaseExpired,
        _ => Role::LeaseReleased,
    }
}

/// `live` or `expired` for a claim's standing (`released` without one), and what its
/// expiry column says: a countdown, how long it has lapsed unreclaimed, or `-`.
fn standing(
    standing: Option<ClaimStanding>,
    expires_at: i64,
    fmt: TimeFmt,
) -> (&'static str, String) {
    match standing {
        None => ("released", "-".into()),
        Some(s) => match s.expired_text() {
            Some(expired) => ("expired", expired),
            None => ("live", relative(fmt.now, Some(expires_at))),
        },
    }
}

fn lease_row(l: &Lease, fmt: TimeFmt) -> Row {
    let now = fmt.now;
    let (status, expires) = standing(ClaimStanding::of_lease(l, now), l.expires_at, fmt);
    Row {
        key: l.resource_id.clone(),
        cells: vec![
            Cell::raw(&l.resource_id, 80),
            Cell::text(LEASE).role(Role::Muted),
            Cell::raw(&l.owner_id, 40),
            Cell::num(i64::try_from(l.generation).unwrap_or(i64::MAX)),
            Cell::text(status).role(status_role(status)),
            Cell::timed(expires.clone(), l.expires_at - now).role(status_role(status)),
            Cell::text("-").role(Role::Muted),
            Cell::text(short(&l.token, 10)).role(Role::Muted),
            Cell::timed(fmt.wall(l.acquired_at), l.acquired_at),
            Cell::text(
                l.checkpoint
                    .as_ref()
                    .map_or_else(|| "-".into(), |c| format!("gen {}", c.generation)),
            ),
        ],
        detail: vec![
            ("resource".into(), clean(&l.resource_id, 500)),
            ("kind".into(), LEASE.into()),
            ("owner".into(), clean(&l.owner_id, 200)),
            ("generation".into(), l.generation.to_string()),
            (
                "status".into(),
                if status == "expired" {
                    expires
                } else {
                    status.into()
                },
            ),
            ("token".into(), clean(&l.token, 200)),
            ("acquired".into(), fmt.at(l.acquired_at)),
            ("expires".into(), fmt.at(l.expires_at)),
            (
                "released".into(),
                l.released_at.map_or_else(|| "-".into(), |t| fmt.at(t)),
            ),
            (
                "checkpoint".into(),
                l.checkpoint.as_ref().map_or_else(
                    || "-".into(),
                    |c| {
                        format!(
                            "gen {} at {}: {}",
                            c.generation,
                            fmt.at(c.saved_at),
                            clean(&c.data, 1_000)
                        )
                    },
                ),
            ),
            ("timeline".into(), "press Esc, then t".into()),
        ],
        resource: Some(l.resource_id.clone()),
        version: version(l),
        ..Row::default()
    }
}

fn claim_row(w: &WorkItem, fmt: TimeFmt) -> Row {
    let now = fmt.now;
    let expires_at = w.lease_expires_at.unwrap_or(now);
    let (status, expires) = standing(ClaimStanding::of_work(w, now), expires_at, fmt);
    let owner = w.owner_id.as_deref().unwrap_or("-");
    Row {
        key: w.id.clone(),
        cells: vec![
            Cell::raw(&w.id, 80),
            Cell::text(w.kind.as_str()),
            Cell::raw(owner, 40),
            Cell::num(i64::try_from(w.generation).unwrap_or(i64::MAX)),
            Cell::text(status).role(status_role(status)),
            Cell::timed(expires.clone(), expires_at - now).role(status_role(status)),
            Cell::raw(&w.handler, 40),
            Cell::text(short(w.token.as_deref().unwrap_or("-"), 10)).role(Role::Muted),
            Cell::timed(
                w.claimed_at.map_or_else(|| "-".into(), |t| fmt.wall(t)),
                w.claimed_at.unwrap_or(0),
            ),
            Cell::text(if w.checkpoint.is_some() { "saved" } else { "-" }),
        ],
        detail: vec![
            ("item".into(), clean(&w.id, 500)),
            ("kind".into(), w.kind.as_str().into()),
            ("handler".into(), clean(&w.handler, 200)),
            ("owner".into(), clean(owner, 200)),
            ("generation".into(), w.generation.to_string()),
            (
                "status".into(),
                if status == "expired" {
                    expires
                } else {
                    status.into()
                },
            ),
            ("attempt".into(), w.attempt_number.to_string()),
            (
                "claimed".into(),
                w.claimed_at.map_or_else(|| "-".into(), |t| fmt.at(t)),
            ),
            ("expires".into(), fmt.at(expires_at)),
            ("timeline".into(), "press Esc, then t".into()),
        ],
        resource: Some(w.id.clone()),
        handler: Some(w.handler.clone()),
        version: version(w),
        ..Row::default()
    }
}

#[must_use]
pub fn table(holds: &Holds, fmt: TimeFmt) -> TableData {
    let now = fmt.now;
    let rows = holds
        .leases
        .iter()
        .map(|l| lease_row(l, fmt))
        .chain(holds.claims.iter().map(|w| claim_row(w, fmt)))
        .collect();
    let live = holds.leases.iter().filter(|l| l.is_live(now)).count()
        + holds
            .claims
            .iter()
            .filter(|w| w.lease_expires_at.is_some_and(|e| e > now))
            .count();
    let mut data = TableData::new(COLUMNS, rows, format!("{live} live on this page"));
    (data.first_key, data.last_key) = holds.ends();
    data
}
