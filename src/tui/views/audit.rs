//! The audit log: who did what to which target, and what came of it.

use super::super::text::clean;
use super::super::theme::Role;
use super::{Cell, Column, Row, TableData, col, version};
use crate::foundation::timefmt::TimeFmt;
use crate::model::{AuditEntry, Page};

pub const COLUMNS: &[Column] = &[
    col("#", 5, 0),
    col("at", 12, 1),
    col("actor", 16, 1),
    col("action", 16, 0),
    col("target", 20, 0),
    col("outcome", 20, 0),
];

#[must_use]
pub fn table(page: &Page<AuditEntry>, fmt: TimeFmt) -> TableData {
    let rows = page
        .rows
        .iter()
        .map(|a| {
            let refused = a.outcome.starts_with("refused") || a.outcome.starts_with("failed");
            Row {
                key: format!("{:020}", a.id),
                cells: vec![
                    Cell::num(a.id),
                    Cell::timed(fmt.wall(a.at), a.at),
                    Cell::raw(&a.actor, 60),
                    Cell::raw(&a.action, 60),
                    Cell::raw(&a.target, 80),
                    Cell::raw(&a.outcome, 120).role(if refused { Role::Error } else { Role::Ok }),
                ],
                detail: vec![
                    ("entry".into(), a.id.to_string()),
                    ("at".into(), fmt.at(a.at)),
                    ("actor".into(), clean(&a.actor, 200)),
                    ("action".into(), clean(&a.action, 200)),
                    ("target".into(), clean(&a.target, 500)),
                    ("outcome".into(), clean(&a.outcome, 1_000)),
                ],
                version: version(a),
                ..Row::default()
            }
        })
        .collect();
    TableData::new(COLUMNS, rows, String::new())
}
