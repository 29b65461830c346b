//! Subscription cursors, as [`crate::ops::cursors`] defines them (the rows `inspect
//! cursors` prints): the position, how far behind its event type it is, which authority
//! holds the cursor and under which generation, and how often it changes hands.

use crate::foundation::timefmt::TimeFmt;

use super::super::text::{clean, relative};
use super::super::theme::Role;
use super::{Cell, Column, Row, TableData, col, version};
use crate::model::{Page, Subscription};
use crate::ops::cursors::{CLAIM_RATE_WINDOW_MS, CursorStatus, rate_text};

pub const COLUMNS: &[Column] = &[
    col("subscription", 20, 0),
    col("event", 14, 1),
    col("position", 8, 0),
    col("lag", 6, 0),
    col("owner", 14, 0),
    col("gen", 4, 1),
    col("claims/s", 8, 2),
    col("lease", 10, 2),
    col("updated", 12, 3),
];

fn num(n: u64) -> Cell {
    Cell::num(i64::try_from(n).unwrap_or(i64::MAX))
}

#[must_use]
pub fn table(page: &Page<CursorStatus>, fmt: TimeFmt) -> TableData {
    let now = fmt.now;
    let rows = page
        .rows
        .iter()
        .map(|c| {
            let owner = c.owner_id.as_deref().unwrap_or("-");
            let lease = c.lease_expires_at;
            let rate = rate_text(c.claims_per_sec);
            Row {
                key: c.subscription_id.clone(),
                cells: vec![
                    Cell::raw(&c.subscription_id, 80),
                    Cell::raw(&c.event_type, 60),
                    num(c.position),
                    num(c.lag).role_if(c.lag > 0, Role::Warning),
                    Cell::raw(owner, 40),
                    num(c.generation),
                    Cell::text(&rate),
                    Cell::timed(relative(now, lease), lease.unwrap_or(0))
                        .role_if(lease.is_some_and(|l| l <= now), Role::LeaseExpired),
                    Cell::timed(fmt.wall(c.updated_at), c.updated_at),
                ],
                detail: vec![
                    ("subscription".into(), clean(&c.subscription_id, 300)),
                    ("event type".into(), clean(&c.event_type, 200)),
                    (
                        "position".into(),
                        format!(
                            "{} (its event type's journal high-water {}; lag {})",
                            c.position, c.high_water, c.lag
                        ),
                    ),
                    (
                        "holder".into(),
                        format!("{} gen {}", clean(owner, 100), c.generation),
                    ),
                    (
                        "claims/s".into(),
                        format!("{rate} over the last {}s", CLAIM_RATE_WINDOW_MS / 1_000),
                    ),
                    ("state".into(), c.state.unwrap_or("-").into()),
                    (
                        "updated".into(),
                        format!(
                            "{} by {}",
                            fmt.at(c.updated_at),
                            clean(c.updated_by.as_deref().unwrap_or("-"), 100)
                        ),
                    ),
                    (
                        "cursor work item".into(),
                        Subscription::work_id(&c.subscription_id),
                    ),
                ],
                resource: Some(Subscription::work_id(&c.subscription_id)),
                version: version(c),
                ..Row::default()
            }
        })
        .collect();
    let behind = page.rows.iter().filter(|c| c.lag > 0).count();
    TableData::new(COLUMNS, rows, format!("{behind} behind"))
}
