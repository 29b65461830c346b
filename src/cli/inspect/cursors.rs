//! `inspect cursors`: subscription delivery cursors as [`crate::ops::cursors`] defines
//! them (position, lag, owner, claim rate), and whether a live build can claim each.

use std::io::Write;

use serde::Serialize;

use super::render::ViewRow;
use super::{Ctx, Failure};
use crate::cli::output::{when, yes_no};
use crate::clock::Millis;
use crate::foundation::text_cell::{cell, cell_max, opt_cell};
use crate::model::Page;
use crate::ops::cursors::{CursorStatus, rate_text};
use crate::ops::live::LiveBuilds;

/// A cursor as [`crate::ops::cursors`] defines it, and whether a live build can claim it.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct CursorRow {
    #[serde(flatten)]
    cursor: CursorStatus,
    compatible: Option<bool>,
}

impl ViewRow for CursorRow {
    const COLUMNS: &'static [&'static str] = &[
        "SUBSCRIPTION",
        "EVENT",
        "POSITION",
        "LAG",
        "GEN",
        "OWNER",
        "STATE",
        "CLAIMS/S",
        "UPDATED",
        "COMPATIBLE",
    ];

    fn cells(&self, now: Millis) -> Vec<String> {
        let c = &self.cursor;
        vec![
            cell(&c.subscription_id),
            cell_max(&c.event_type, 24),
            c.position.to_string(),
            c.lag.to_string(),
            c.generation.to_string(),
            opt_cell(c.owner_id.as_deref()),
            c.state.unwrap_or("-").into(),
            rate_text(c.claims_per_sec),
            when(c.updated_at, now),
            self.compatible.map_or_else(|| "-".into(), yes_no),
        ]
    }
}

pub(super) fn print(ctx: &Ctx<'_>, out: &mut dyn Write) -> Result<Option<String>, Failure> {
    let live = LiveBuilds::load(ctx.store, ctx.now)?;
    let Page { rows, next } = crate::ops::cursors::page(ctx.store, &ctx.page, ctx.now)?;
    let shown: Vec<CursorRow> = rows
        .into_iter()
        .map(|cursor| CursorRow {
            compatible: cursor.compat.as_deref().map(|c| live.compatible(c)),
            cursor,
        })
        .collect();
    ctx.emit(out, &shown, next)
}
