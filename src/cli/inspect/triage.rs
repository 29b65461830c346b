//! `inspect triage`: everything that needs a person, grouped by reason
//! ([`crate::ops::attention`]), each with its count, its oldest item's age, a few ids and
//! what to do — the filter to list or act on it, where the grammar can say it.

use std::io::Write;

use serde::Serialize;

use super::render::ViewRow;
use super::{Ctx, Failure};
use crate::cli::output::when;
use crate::clock::Millis;
use crate::foundation::text_cell::cell;
use crate::ops::attention::{Group, groups};
use crate::ops::live::LiveBuilds;

/// One group as the view prints it.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct TriageRow {
    #[serde(flatten)]
    group: Group,
}

impl ViewRow for TriageRow {
    const COLUMNS: &'static [&'static str] = &["REASON", "COUNT", "OLDEST", "FIRST", "DO"];

    fn cells(&self, now: Millis) -> Vec<String> {
        let g = &self.group;
        let count = if g.exact {
            g.count.to_string()
        } else {
            format!("≥ {}", g.count)
        };
        let act = match g.filter {
            Some(filter) => format!("--filter {filter} · {}", g.action),
            None => g.action.to_owned(),
        };
        vec![
            g.title.to_owned(),
            count,
            g.oldest_at.map_or_else(|| "-".into(), |at| when(at, now)),
            g.first
                .iter()
                .map(|id| cell(id))
                .collect::<Vec<_>>()
                .join(" "),
            act,
        ]
    }
}

pub(super) fn print(ctx: &Ctx<'_>, out: &mut dyn Write) -> Result<Option<String>, Failure> {
    let live = LiveBuilds::load(ctx.store, ctx.now)?;
    let rows: Vec<TriageRow> = groups(ctx.store, live.fleet(), ctx.now)?
        .into_iter()
        .map(|group| TriageRow { group })
        .collect();
    if rows.is_empty() && !ctx.json {
        writeln!(out, "nothing needs a person")?;
        return Ok(None);
    }
    ctx.emit(out, &rows, None)
}
