//! `inspect failovers` and `inspect fenced`: the incident lists of [`crate::ops`] over a
//! time window (`--window 15m`), newest first, paged with `--after AT.SEQ`.

use std::io::Write;

use super::render::ViewRow;
use super::{Ctx, Failure};
use crate::cli::output::when;
use crate::clock::Millis;
use crate::foundation::text_cell::cell_max;
use crate::model::HistoryPosition;
use crate::ops::failovers::{self, FailoverRow};
use crate::ops::fenced::{self, FencedRow};
use crate::ops::window::{Listing, Window};

/// The window `--window` names, or the default.
///
/// # Errors
/// A window that cannot be read or is out of range (exit 2).
pub fn window(text: Option<&str>) -> Result<Window, Failure> {
    text.map_or(Ok(Window::default()), |t| {
        Window::parse(t).map_err(|e| Failure::usage(e.to_string()))
    })
}

/// Where `--after` continues from.
fn before(ctx: &Ctx<'_>) -> Result<Option<HistoryPosition>, Failure> {
    ctx.page
        .after
        .as_deref()
        .map(|key| {
            HistoryPosition::parse_key(key).ok_or_else(|| {
                Failure::usage(format!(
                    "--after {}: not a key of this list (they look like 1764547200000.42)",
                    cell_max(key, 40)
                ))
            })
        })
        .transpose()
}

/// The headline under the table (people only): the window and its count.
fn emit<R: ViewRow>(
    ctx: &Ctx<'_>,
    out: &mut dyn Write,
    list: &Listing<R>,
    (one, many): (&str, &str),
) -> Result<Option<String>, Failure> {
    let next = list.next.map(HistoryPosition::key);
    let next = ctx.emit(out, &list.rows, next)?;
    if !ctx.json {
        writeln!(out, "{}", list.headline(one, many))?;
    }
    Ok(next)
}

/// Prints one page of failovers in `window`.
///
/// # Errors
/// A bad `--after` key (exit 2) or a store failure.
pub fn print_failovers(
    ctx: &Ctx<'_>,
    window: Window,
    out: &mut dyn Write,
) -> Result<Option<String>, Failure> {
    let list = failovers::failovers(ctx.store, window, ctx.now, before(ctx)?, ctx.page.limit)?;
    emit(ctx, out, &list, ("failover", "failovers"))
}

impl ViewRow for FailoverRow {
    const COLUMNS: &'static [&'static str] =
        &["AT", "RESOURCE", "FROM", "TO", "GEN", "LAPSED", "HOW"];

    fn cells(&self, now: Millis) -> Vec<String> {
        let f = self;
        vec![
            when(f.at, now),
            cell_max(&f.resource, 48),
            format!("{} (gen {})", cell_max(&f.from, 32), f.from_generation),
            cell_max(&f.to, 32),
            f.generation.to_string(),
            f.lapsed_label(),
            cell_max(f.how.as_str(), 12),
        ]
    }
}

/// Prints one page of refused writes in `window`.
///
/// # Errors
/// A bad `--after` key (exit 2) or a store failure.
pub fn print_fenced(
    ctx: &Ctx<'_>,
    window: Window,
    out: &mut dyn Write,
) -> Result<Option<String>, Failure> {
    let list = fenced::fenced(ctx.store, window, ctx.now, before(ctx)?, ctx.page.limit)?;
    emit(ctx, out, &list, ("refused write", "refused writes"))
}

impl ViewRow for FencedRow {
    const COLUMNS: &'static [&'static str] = &[
        "AT",
        "RESOURCE",
        "WRITER",
        "GEN",
        "HOLDER THEN",
        "HOLDER GEN",
        "VERB",
        "REFUSAL",
    ];

    fn cells(&self, now: Millis) -> Vec<String> {
        let w = self;
        vec![
            when(w.at, now),
            cell_max(&w.resource, 48),
            cell_max(&w.writer, 32),
            w.writer_generation.to_string(),
            cell_max(&w.holder_label(), 32),
            w.holder_generation_label(),
            cell_max(w.verb.as_str(), 16),
            cell_max(&w.refusal, 24),
        ]
    }
}

/// The overview's incident figures: how many failovers and refused writes the default
/// window holds, read from the same lists as the two views.
#[derive(Debug, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WindowCounts {
    window: String,
    failovers: u64,
    refused_writes: u64,
}

impl WindowCounts {
    /// Counts the default window ending at `ctx.now`.
    ///
    /// # Errors
    /// A store failure.
    pub fn read(ctx: &Ctx<'_>) -> Result<Self, Failure> {
        let window = Window::default();
        Ok(Self {
            window: window.label(),
            failovers: failovers::failovers(ctx.store, window, ctx.now, None, 1)?.total,
            refused_writes: fenced::fenced(ctx.store, window, ctx.now, None, 1)?.total,
        })
    }

    /// `2 failovers, 5 refused writes in the last 15m`.
    #[must_use]
    pub fn line(&self) -> String {
        format!(
            "{} failovers, {} refused writes in the last {} (inspect failovers, fenced)",
            self.failovers, self.refused_writes, self.window
        )
    }
}
