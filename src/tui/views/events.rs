//! Events: every ingestion with its dedup outcome and journal seq.

use super::super::text::clean;
use super::super::theme::Role;
use super::{Cell, Column, Row, TableData, col, version};
use crate::foundation::timefmt::TimeFmt;
use crate::model::{DedupOutcome, Ingestion, Page};

pub const COLUMNS: &[Column] = &[
    col("#", 6, 0),
    col("at", 12, 1),
    col("type", 16, 0),
    col("source", 12, 2),
    col("external id", 16, 1),
    col("outcome", 17, 0),
    col("seq", 6, 0),
];

#[must_use]
pub fn outcome_role(o: DedupOutcome) -> Role {
    match o {
        DedupOutcome::Accepted => Role::Ok,
        DedupOutcome::Duplicate => Role::Muted,
        DedupOutcome::Conflict => Role::Fenced,
        DedupOutcome::Unidentified => Role::Warning,
    }
}

#[must_use]
pub fn table(page: &Page<Ingestion>, high_water: i64, fmt: TimeFmt) -> TableData {
    let rows = page
        .rows
        .iter()
        .map(|e| Row {
            key: format!("{:020}", e.id),
            cells: vec![
                Cell::num(e.id),
                Cell::timed(fmt.wall(e.at), e.at),
                Cell::raw(&e.event_type, 60),
                Cell::raw(e.source.as_deref().unwrap_or("-"), 60),
                Cell::raw(e.external_id.as_deref().unwrap_or("-"), 80),
                Cell::text(e.outcome.as_str()).role(outcome_role(e.outcome)),
                Cell::timed(
                    e.seq.map_or_else(|| "-".into(), |s| s.to_string()),
                    e.seq.unwrap_or(-1),
                ),
            ],
            detail: vec![
                ("ingestion".into(), e.id.to_string()),
                ("at".into(), fmt.at(e.at)),
                ("type".into(), clean(&e.event_type, 200)),
                (
                    "source / external id".into(),
                    format!(
                        "{} / {}",
                        clean(e.source.as_deref().unwrap_or("-"), 200),
                        clean(e.external_id.as_deref().unwrap_or("-"), 200)
                    ),
                ),
                ("outcome".into(), e.outcome.as_str().into()),
                (
                    "journal seq".into(),
                    match (e.outcome, e.seq) {
                        (DedupOutcome::Duplicate | DedupOutcome::Conflict, Some(s)) => {
                            format!("{s} (the original event; nothing new was appended)")
                        }
                        (_, Some(s)) => s.to_string(),
                        (_, None) => "-".into(),
                    },
                ),
            ],
            version: version(e),
            ..Row::default()
        })
        .collect();
    TableData::new(COLUMNS, rows, format!("journal seq {high_water}"))
}
