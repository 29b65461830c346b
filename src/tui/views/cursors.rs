//! Subscription cursors: the monotone delivered sequence, which authority holds the cursor
//! and under which generation, and how far behind the journal it is.

use crate::ops::timefmt::TimeFmt;
use std::collections::HashMap;

use super::super::text::{clean, relative};
use super::super::theme::Role;
use super::{Cell, Column, Row, TableData, col, version};
use crate::model::{Page, Subscription, WorkItem, WorkState};

pub const COLUMNS: &[Column] = &[
    col("subscription", 20, 0),
    col("event", 14, 1),
    col("seq", 6, 0),
    col("behind", 6, 1),
    col("owner", 14, 0),
    col("gen", 4, 1),
    col("lease", 10, 2),
    col("updated", 12, 3),
];

#[must_use]
pub fn table(
    page: &Page<Subscription>,
    items: &HashMap<String, WorkItem>,
    high_water: i64,
    fmt: TimeFmt,
) -> TableData {
    let now = fmt.now;
    let rows = page
        .rows
        .iter()
        .map(|s| {
            let item = items.get(&s.subscription_id);
            let owner = item.and_then(|w| w.current_owner()).unwrap_or("-");
            let generation = item.map_or(s.generation, |w| w.generation);
            let lease = item
                .filter(|w| w.state == WorkState::Claimed)
                .and_then(|w| w.lease_expires_at);
            let behind = (high_water - i64::try_from(s.sequence).unwrap_or(i64::MAX)).max(0);
            Row {
                key: s.subscription_id.clone(),
                cells: vec![
                    Cell::raw(&s.subscription_id, 80),
                    Cell::raw(&s.event_type, 60),
                    Cell::num(i64::try_from(s.sequence).unwrap_or(i64::MAX)),
                    Cell::num(behind).role_if(behind > 0, Role::Warning),
                    Cell::raw(owner, 40),
                    Cell::num(i64::try_from(generation).unwrap_or(i64::MAX)),
                    Cell::timed(relative(now, lease), lease.unwrap_or(0))
                        .role_if(lease.is_some_and(|l| l <= now), Role::LeaseExpired),
                    Cell::timed(fmt.wall(s.updated_at), s.updated_at),
                ],
                detail: vec![
                    ("subscription".into(), clean(&s.subscription_id, 300)),
                    ("event type".into(), clean(&s.event_type, 200)),
                    (
                        "sequence".into(),
                        format!(
                            "{} (journal high-water {high_water}; behind at most {behind})",
                            s.sequence
                        ),
                    ),
                    ("cursor generation".into(), s.generation.to_string()),
                    (
                        "updated".into(),
                        format!(
                            "{} by {}",
                            fmt.at(s.updated_at),
                            clean(s.updated_by.as_deref().unwrap_or("-"), 100)
                        ),
                    ),
                    (
                        "cursor work item".into(),
                        Subscription::work_id(&s.subscription_id),
                    ),
                    (
                        "holder".into(),
                        format!("{} gen {generation}", clean(owner, 100)),
                    ),
                ],
                resource: Some(Subscription::work_id(&s.subscription_id)),
                version: version(&(s, item)),
                ..Row::default()
            }
        })
        .collect();
    TableData::new(COLUMNS, rows, format!("journal seq {high_water}"))
}
