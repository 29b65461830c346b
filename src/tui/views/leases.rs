//! Leases: resource, owner, generation, token, expiry countdown, live / expired / released.

use super::super::text::{clean, relative, short};
use super::super::theme::Role;
use super::{Cell, Column, Row, TableData, col, version};
use crate::foundation::timefmt::TimeFmt;
use crate::model::{Lease, Page};
use crate::ops::claims::ClaimStanding;

pub const COLUMNS: &[Column] = &[
    col("resource", 24, 0),
    col("owner", 14, 0),
    col("gen", 5, 0),
    col("status", 8, 0),
    col("expires", 11, 1),
    col("token", 10, 2),
    col("acquired", 12, 3),
    col("checkpoint", 12, 4),
];

#[must_use]
pub fn status_role(status: &str) -> Role {
    match status {
        "live" => Role::LeaseLive,
        "expired" => Role::LeaseExpired,
        _ => Role::LeaseReleased,
    }
}

#[must_use]
pub fn table(page: &Page<Lease>, fmt: TimeFmt) -> TableData {
    let now = fmt.now;
    let rows = page
        .rows
        .iter()
        .map(|l| {
            let status = l.status(now).as_str();
            let expired = ClaimStanding::of_lease(l, now).and_then(ClaimStanding::expired_text);
            let expires = match (status, &expired) {
                ("released", _) => "-".into(),
                (_, Some(expired)) => expired.clone(),
                _ => relative(now, Some(l.expires_at)),
            };
            Row {
                key: l.resource_id.clone(),
                cells: vec![
                    Cell::raw(&l.resource_id, 80),
                    Cell::raw(&l.owner_id, 40),
                    Cell::num(i64::try_from(l.generation).unwrap_or(i64::MAX)),
                    Cell::text(status).role(status_role(status)),
                    Cell::timed(expires, l.expires_at - now).role(status_role(status)),
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
                    ("owner".into(), clean(&l.owner_id, 200)),
                    ("generation".into(), l.generation.to_string()),
                    ("status".into(), expired.unwrap_or_else(|| status.into())),
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
        })
        .collect();
    let live = page.rows.iter().filter(|l| l.is_live(now)).count();
    TableData::new(COLUMNS, rows, format!("{live} live on this page"))
}
