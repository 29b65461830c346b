//! Triage: everything that needs a person, grouped by reason — count, oldest, first ids,
//! what to do. The groups are [`crate::ops::attention`]'s, the same `inspect triage`
//! prints; Enter on a group that has a filter opens the work view with it applied.

use super::super::theme::Role;
use super::{Cell, Column, Row, TableData, col};
use crate::foundation::timefmt::TimeFmt;
use crate::ops::attention::{Group, Reason};

pub const COLUMNS: &[Column] = &[
    col("reason", 36, 0),
    col("count", 7, 0),
    col("oldest", 10, 1),
    col("first", 24, 2),
    col("do", 40, 1),
];

#[must_use]
pub fn table(groups: &[Group], fmt: TimeFmt) -> TableData {
    let rows: Vec<Row> = groups
        .iter()
        .map(|g| {
            let count = if g.exact {
                g.count.to_string()
            } else {
                format!("≥ {}", g.count)
            };
            let urgent = matches!(
                g.reason,
                Reason::DeadLetters | Reason::Failed | Reason::OutcomesInRecovery
            );
            let oldest = g.oldest_at.map_or_else(
                || Cell::raw("-", 1).role(Role::Muted),
                |at| Cell::timed(fmt.relative(at), at),
            );
            let act = match g.filter {
                Some(f) => format!("Enter: {f} · {}", g.action),
                None => g.action.to_owned(),
            };
            Row {
                key: format!("{:?}", g.reason),
                cells: vec![
                    Cell::raw(g.title, 80).role_if(urgent, Role::Error),
                    Cell::raw(&count, 12),
                    oldest,
                    Cell::raw(&g.first.join(" "), 200).role(Role::Muted),
                    Cell::raw(&act, 200),
                ],
                detail: vec![
                    ("reason".into(), g.title.to_owned()),
                    ("count".into(), count),
                    (
                        "oldest".into(),
                        g.oldest_at.map_or("-".into(), |at| fmt.at(at)),
                    ),
                    ("do".into(), g.action.to_owned()),
                ],
                filter: g.filter.map(str::to_owned),
                ..Row::default()
            }
        })
        .collect();
    let summary = if rows.is_empty() {
        "nothing needs a person".to_owned()
    } else {
        format!("{} group(s) need a person", rows.len())
    };
    TableData::new(COLUMNS, rows, summary)
}
