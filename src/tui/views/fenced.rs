//! Refused (fenced) writes in the last window, newest first: time, resource, the writer
//! and the generation it presented, who held the resource then and under which generation,
//! the verb and the refusal. The rows are [`crate::ops::fenced`]'s, as `inspect fenced`.

use super::super::text::clean;
use super::super::theme::Role;
use super::{Cell, Column, Row, TableData, col, version};
use crate::foundation::timefmt::TimeFmt;
use crate::ops::fenced::FencedRow;
use crate::ops::window::Listing;

pub const COLUMNS: &[Column] = &[
    col("at", 12, 1),
    col("resource", 18, 0),
    col("writer", 12, 0),
    col("gen", 4, 0),
    col("holder then", 14, 0),
    col("h.gen", 5, 0),
    col("verb", 9, 1),
    col("refusal", 16, 2),
];

#[must_use]
pub fn table(list: &Listing<FencedRow>, fmt: TimeFmt) -> TableData {
    let rows = list
        .rows
        .iter()
        .map(|w| Row {
            key: w.position.key(),
            cells: vec![
                Cell::timed(fmt.wall(w.at), w.at),
                Cell::raw(&w.resource, 80),
                Cell::raw(&w.writer, 40).role(Role::Fenced),
                Cell::num(i64::try_from(w.writer_generation).unwrap_or(i64::MAX)),
                Cell::raw(&w.holder_label(), 40),
                Cell::text(w.holder_generation_label()),
                Cell::raw(w.verb.as_str(), 20),
                Cell::raw(&w.refusal, 40).role(Role::Error),
            ],
            detail: vec![
                ("at".into(), fmt.at(w.at)),
                ("resource".into(), clean(&w.resource, 500)),
                (
                    "writer".into(),
                    format!(
                        "{} (generation {})",
                        clean(&w.writer, 200),
                        w.writer_generation
                    ),
                ),
                (
                    "holder then".into(),
                    format!(
                        "{} (generation {})",
                        clean(&w.holder_label(), 200),
                        w.holder_generation_label()
                    ),
                ),
                ("verb".into(), clean(w.verb.as_str(), 40)),
                ("refusal".into(), clean(&w.refusal, 200)),
                ("revision".into(), w.revision.to_string()),
                ("timeline".into(), "press Esc, then t".into()),
            ],
            resource: Some(w.resource.clone()),
            version: version(w),
            ..Row::default()
        })
        .collect();
    TableData::new(
        COLUMNS,
        rows,
        list.headline("refused write", "refused writes"),
    )
}
