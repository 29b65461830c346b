//! `inspect events`: event ingestions, with their dedup outcome and journal position.

use std::io::Write;

use serde::Serialize;

use super::render::ViewRow;
use super::{Ctx, Failure};
use crate::cli::output::when;
use crate::clock::Millis;
use crate::foundation::text_cell::{cell_max, opt_cell};
use crate::model::Page;

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct EventRow {
    id: i64,
    at: Millis,
    event_type: String,
    source: Option<String>,
    external_id: Option<String>,
    outcome: &'static str,
    seq: Option<i64>,
}

impl ViewRow for EventRow {
    const COLUMNS: &'static [&'static str] = &[
        "ID",
        "AT",
        "TYPE",
        "SOURCE",
        "EXTERNAL-ID",
        "OUTCOME",
        "SEQ",
    ];

    fn cells(&self, now: Millis) -> Vec<String> {
        let e = self;
        vec![
            e.id.to_string(),
            when(e.at, now),
            cell_max(&e.event_type, 24),
            opt_cell(e.source.as_deref()),
            opt_cell(e.external_id.as_deref()),
            e.outcome.into(),
            e.seq.map_or_else(|| "-".into(), |s| s.to_string()),
        ]
    }
}

pub(super) fn print(ctx: &Ctx<'_>, out: &mut dyn Write) -> Result<Option<String>, Failure> {
    let Page { rows, next } = ctx.store.list_ingestions(&ctx.page)?;
    let rows: Vec<EventRow> = rows
        .into_iter()
        .map(|i| EventRow {
            outcome: i.outcome.as_str(),
            id: i.id,
            at: i.at,
            event_type: i.event_type,
            source: i.source,
            external_id: i.external_id,
            seq: i.seq,
        })
        .collect();
    ctx.emit(out, &rows, next)
}
