//! Failovers: every resource taken from a holder that had not released it, in the last
//! window, newest first — time, resource, from → to, the generation the lost holder held
//! and the one granted (`1→2`), how long the lease had lapsed. The rows are [`crate::ops::failovers`]'s, the same `inspect failovers` prints.

use super::super::text::clean;
use super::super::theme::Role;
use super::{Cell, Column, Row, TableData, col, version};
use crate::foundation::timefmt::TimeFmt;
use crate::ops::failovers::FailoverRow;
use crate::ops::window::Listing;

pub const COLUMNS: &[Column] = &[
    col("at", 12, 1),
    col("resource", 20, 0),
    col("from", 12, 0),
    col("to", 12, 0),
    col("gen", 5, 0),
    col("lapsed", 8, 1),
    col("how", 7, 2),
    col("ago", 8, 3),
];

/// The failover at `f` as a table row (also the overview's list).
#[must_use]
pub fn row(f: &FailoverRow, fmt: TimeFmt) -> Row {
    Row {
        key: f.position.key(),
        cells: vec![
            Cell::timed(fmt.wall(f.at), f.at),
            Cell::raw(&f.resource, 80),
            Cell::raw(&f.from, 40).role(Role::Fenced),
            Cell::raw(&f.to, 40),
            Cell::timed(
                format!("{}→{}", f.from_generation, f.generation),
                i64::try_from(f.generation).unwrap_or(i64::MAX),
            ),
            Cell::timed(f.lapsed_label(), f.lapsed_ms).role(Role::Warning),
            Cell::raw(f.how.as_str(), 12).role(Role::Muted),
            Cell::timed(fmt.relative(f.at), f.at).role(Role::Muted),
        ],
        detail: vec![
            ("at".into(), fmt.at(f.at)),
            ("resource".into(), clean(&f.resource, 500)),
            (
                "from".into(),
                format!("{} (generation {})", clean(&f.from, 200), f.from_generation),
            ),
            (
                "to".into(),
                format!("{} (generation {})", clean(&f.to, 200), f.generation),
            ),
            ("lapsed".into(), f.lapsed_label()),
            ("how".into(), clean(f.how.as_str(), 40)),
            ("revision".into(), f.revision.to_string()),
            ("timeline".into(), "press Esc, then t".into()),
        ],
        resource: Some(f.resource.clone()),
        version: version(f),
        ..Row::default()
    }
}

#[must_use]
pub fn table(list: &Listing<FailoverRow>, fmt: TimeFmt) -> TableData {
    let rows = list.rows.iter().map(|f| row(f, fmt)).collect();
    TableData::new(COLUMNS, rows, list.headline("failover", "failovers"))
}
