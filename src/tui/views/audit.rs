//! The audit log, newest first: who did what to which target, and what came of it. The
//! page is [`crate::ops::audit`]'s, as `inspect audit` prints it, under the `/` filter's
//! `actor:` and `action:`.

use super::super::text::clean;
use super::super::theme::Role;
use super::{Cell, Column, Row, TableData, col, version};
use crate::foundation::timefmt::TimeFmt;
use crate::model::PageRequest;
use crate::ops::audit::{AuditPage, key};

pub const COLUMNS: &[Column] = &[
    col("#", 5, 2),
    col("at", 12, 1),
    col("actor", 16, 0),
    col("action", 16, 0),
    col("target", 12, 1),
    col("outcome", 20, 0),
];

/// The page `request` read. A filtered page may end before it is full, having examined as
/// many entries as a page may: paging on continues from where it reached, not from its
/// last row.
#[must_use]
pub fn table(page: &AuditPage, request: &PageRequest, fmt: TimeFmt) -> TableData {
    let rows = page
        .rows
        .iter()
        .map(|a| {
            let refused = a.outcome.starts_with("refused") || a.outcome.starts_with("failed");
            Row {
                key: key(a),
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
    let mut data = TableData::new(COLUMNS, rows, String::new());
    let more = page.resume.is_some();
    let from_key = request.after.is_some();
    if request.backwards {
        data.first_key = page.resume.clone().or(data.first_key);
        (data.more_before, data.more_after) = (more, from_key);
    } else {
        data.last_key = page.resume.clone().or(data.last_key);
        (data.more_before, data.more_after) = (from_key, more);
    }
    data
}
