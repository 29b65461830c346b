//! `inspect horizon`: what becomes due over the next `--window` ([`crate::ops::horizon`]),
//! one row per slice with its count per source and the first entries.

use std::io::Write;

use serde::Serialize;

use super::render::ViewRow;
use super::{Ctx, Failure};
use crate::cli::output::when;
use crate::clock::Millis;
use crate::foundation::text_cell::cell;
use crate::ops::horizon::{Bucket, Source, horizon};
use crate::ops::window::Window;

/// Slices of a horizon, and rows read per source at most.
const SLICES: usize = 10;
const CAP: usize = 1_000;

/// One slice as the view prints it.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct HorizonRow {
    #[serde(flatten)]
    bucket: Bucket,
}

impl ViewRow for HorizonRow {
    const COLUMNS: &'static [&'static str] =
        &["FROM", "FIRINGS", "DELAYED", "BACKOFF", "TIMERS", "FIRST"];

    fn cells(&self, now: Millis) -> Vec<String> {
        let b = &self.bucket;
        let n = |s: Source| b.counts.get(&s).copied().unwrap_or(0).to_string();
        vec![
            when(b.from, now),
            n(Source::Firing),
            n(Source::Delayed),
            n(Source::Backoff),
            n(Source::WorkflowTimer),
            b.entries
                .iter()
                .take(3)
                .map(|e| cell(&e.id))
                .collect::<Vec<_>>()
                .join(" "),
        ]
    }
}

pub(super) fn print(
    ctx: &Ctx<'_>,
    window: Window,
    out: &mut dyn Write,
) -> Result<Option<String>, Failure> {
    let h = horizon(ctx.store, ctx.now, window.ms, SLICES, CAP)?;
    let total: u64 = h.buckets.iter().map(Bucket::total).sum();
    let rows: Vec<HorizonRow> = h
        .buckets
        .into_iter()
        .map(|bucket| HorizonRow { bucket })
        .collect();
    let next = ctx.emit(out, &rows, None)?;
    if !ctx.json {
        writeln!(
            out,
            "{}{total} due in the next {}",
            if h.capped { "at least " } else { "" },
            window.label()
        )?;
    }
    Ok(next)
}
