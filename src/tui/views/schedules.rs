//! Schedules: trigger, next due (due / late / paused), last firing and who owns it.

use crate::foundation::timefmt::TimeFmt;
use std::collections::HashMap;

use super::super::text::{clean, relative};
use super::super::theme::Role;
use super::{Cell, Column, Row, TableData, col, version};
use crate::clock::{Millis, format_duration};
use crate::model::schedule::{Trigger, firing_id};
use crate::model::{Page, Schedule, WorkItem};

pub const COLUMNS: &[Column] = &[
    col("schedule", 18, 0),
    col("trigger", 12, 1),
    col("status", 7, 0),
    col("next due", 11, 0),
    col("last fired", 11, 1),
    col("firing", 10, 2),
    col("owner", 12, 2),
    col("catch-up", 8, 3),
    col("handler", 14, 4),
];

/// `paused` (by an operator: it fires nothing), `late` (due for longer than a grace
/// period), `due`, or `waiting`.
#[must_use]
pub fn status(s: &Schedule, now: Millis) -> &'static str {
    if s.paused_at.is_some() {
        return "paused";
    }
    let grace = match s.trigger {
        Trigger::Interval { every_ms } => every_ms.max(1_000),
        Trigger::Delay { .. } => 5_000,
        Trigger::Cron { .. } => 60_000,
    };
    if s.next_due <= now - grace {
        "late"
    } else if s.next_due <= now {
        "due"
    } else {
        "waiting"
    }
}

#[must_use]
pub fn table(
    page: &Page<Schedule>,
    firings: &HashMap<String, WorkItem>,
    fmt: TimeFmt,
) -> TableData {
    let now = fmt.now;
    let rows = page
        .rows
        .iter()
        .map(|s| {
            let st = status(s, now);
            let trigger = match &s.trigger {
                Trigger::Interval { every_ms } => format!("every {}", format_duration(*every_ms)),
                Trigger::Cron { expr, tz } => format!("cron {expr} {tz}"),
                Trigger::Delay { after_ms } => format!(
                    "at {}",
                    chrono::DateTime::from_timestamp_millis(*after_ms).map_or_else(
                        || after_ms.to_string(),
                        |t| t.format("%H:%M:%S").to_string()
                    )
                ),
            };
            let firing = firings.get(&s.schedule_id);
            let firing_state = firing.map_or("-", |w| w.state_text());
            let owner = firing.and_then(|w| w.current_owner()).unwrap_or("-");
            Row {
                key: s.schedule_id.clone(),
                cells: vec![
                    Cell::raw(&s.schedule_id, 60),
                    Cell::text(trigger.clone()),
                    Cell::text(st).role(match st {
                        "late" => Role::Warning,
                        "due" => Role::WorkPending,
                        "paused" => Role::Accent,
                        _ => Role::Muted,
                    }),
                    Cell::timed(relative(now, Some(s.next_due)), s.next_due),
                    Cell::timed(relative(now, s.last_due), s.last_due.unwrap_or(0)),
                    Cell::text(firing_state).role_if(
                        firing.is_some(),
                        firing.map_or(Role::Base, |w| super::work::state_role(w.state)),
                    ),
                    Cell::raw(owner, 40),
                    Cell::text(s.catch_up.label()),
                    Cell::raw(&s.handler, 60),
                ],
                detail: vec![
                    ("schedule".into(), clean(&s.schedule_id, 300)),
                    ("trigger".into(), trigger),
                    ("catch-up".into(), s.catch_up.label()),
                    ("handler".into(), clean(&s.handler, 200)),
                    ("payload".into(), clean(&s.payload, 1_000)),
                    ("next due".into(), format!("{} ({st})", fmt.at(s.next_due))),
                    (
                        "paused".into(),
                        s.paused_at
                            .map_or_else(|| "no".into(), |t| format!("since {}", fmt.at(t))),
                    ),
                    (
                        "last fired".into(),
                        s.last_due.map_or_else(|| "never".into(), |t| fmt.at(t)),
                    ),
                    (
                        "last firing".into(),
                        s.last_due.map_or_else(
                            || "-".into(),
                            |d| {
                                format!(
                                    "{} {firing_state} owner {}",
                                    firing_id(&s.schedule_id, d),
                                    clean(owner, 80)
                                )
                            },
                        ),
                    ),
                    ("compat".into(), clean(&s.compat, 100)),
                ],
                resource: s.last_due.map(|d| firing_id(&s.schedule_id, d)),
                version: version(&(s, firing)),
                ..Row::default()
            }
        })
        .collect();
    let late = page
        .rows
        .iter()
        .filter(|s| status(s, now) == "late")
        .count();
    TableData::new(COLUMNS, rows, format!("{late} late on this page"))
}
