//! `inspect audit`: the operator actions recorded in the store (who, what, on what, how
//! it ended), newest first, under `--filter 'actor:NAME action:NAME'` — the page
//! [`crate::ops::audit`] reads for the dashboard too.

use std::io::Write;

use serde::Serialize;

use super::render::ViewRow;
use super::{Ctx, Failure};
use crate::cli::output::when;
use crate::clock::Millis;
use crate::foundation::text_cell::{cell, cell_max, escape};
use crate::ops::audit;
use crate::ops::filter::Filter;

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct AuditRow {
    id: i64,
    at: Millis,
    actor: String,
    action: String,
    target: String,
    outcome: String,
}

impl ViewRow for AuditRow {
    const COLUMNS: &'static [&'static str] = &["ID", "AT", "ACTOR", "ACTION", "TARGET", "OUTCOME"];

    fn cells(&self, now: Millis) -> Vec<String> {
        let a = self;
        vec![
            a.id.to_string(),
            when(a.at, now),
            cell_max(&a.actor, 24),
            // Action names are the store's own (the longest 25 characters): never cut.
            cell_max(&a.action, 32),
            cell(&a.target),
            // The last column, whole: the outcome ends with the operator's reason.
            escape(&a.outcome),
        ]
    }
}

pub(super) fn print(
    ctx: &Ctx<'_>,
    filter: &Filter,
    out: &mut dyn Write,
) -> Result<Option<String>, Failure> {
    let page = audit::page(ctx.store, filter, &ctx.page)?;
    let rows: Vec<AuditRow> = page
        .rows
        .into_iter()
        .map(|a| AuditRow {
            id: a.id,
            at: a.at,
            actor: a.actor,
            action: a.action,
            target: a.target,
            outcome: a.outcome,
        })
        .collect();
    ctx.emit(out, &rows, page.resume)
}
