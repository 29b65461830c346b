//! The event ticker: one short line per notable event, newest first — claims lost to a
//! takeover (from → to, with the generations), writes refused because their generation
//! was stale, and whatever the caller adds (the demo's faults and deploys). Read from the
//! store's own failover and refused-write records, so a line is never a guess.

use serde::Serialize;

use super::failovers::failovers;
use super::fenced::fenced;
use super::window::Window;
use crate::clock::{Millis, format_duration};
use crate::error::Result;
use crate::store::Store;

/// What kind of event a line reports (its colour on screen).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TickerKind {
    /// A claim taken over from a holder that had not released it.
    Reclaim,
    /// A write refused for presenting a stale generation (`WORK_FENCED`), or refused as
    /// too late (the item already finished).
    Fenced,
    /// Something done to the cluster: a crash, pause, restart, deploy, skew.
    Fault,
}

/// One line of the ticker.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TickerLine {
    pub at: Millis,
    pub kind: TickerKind,
    pub text: String,
}

/// The newest `limit` failovers and refused writes of the last `window`, newest first.
///
/// # Errors
/// A store failure.
pub fn ticker(store: &Store, now: Millis, window: Window, limit: usize) -> Result<Vec<TickerLine>> {
    let mut lines: Vec<TickerLine> = failovers(store, window, now, None, limit)?
        .rows
        .into_iter()
        .map(|f| TickerLine {
            at: f.at,
            kind: TickerKind::Reclaim,
            text: format!(
                "{} reclaimed {} from {} · gen {} → {} · lease over {}",
                f.to,
                f.resource,
                f.from,
                f.from_generation,
                f.generation,
                f.lapsed_label()
            ),
        })
        .collect();
    lines.extend(
        fenced(store, window, now, None, limit)?
            .rows
            .into_iter()
            .filter(|r| r.verb != "renew")
            .map(|r| TickerLine {
                at: r.at,
                kind: TickerKind::Fenced,
                text: format!(
                    "{} {} write by {} at gen {} refused · holder {} gen {}",
                    r.refusal,
                    r.resource,
                    r.writer,
                    r.writer_generation,
                    r.holder_label(),
                    r.holder_generation_label()
                ),
            }),
    );
    lines.sort_by_key(|l| std::cmp::Reverse(l.at));
    lines.truncate(limit);
    Ok(lines)
}

/// Adds the demo's `faults` (each with its instant) as fault lines and keeps the newest
/// `limit`.
#[must_use]
pub fn merged(
    mut lines: Vec<TickerLine>,
    faults: Vec<(Millis, String)>,
    limit: usize,
) -> Vec<TickerLine> {
    lines.extend(faults.into_iter().map(|(at, text)| TickerLine {
        at,
        kind: TickerKind::Fault,
        text,
    }));
    lines.sort_by_key(|l| std::cmp::Reverse(l.at));
    lines.truncate(limit);
    lines
}

/// `3.2s ago`, for a line's age on screen.
#[must_use]
pub fn ago(now: Millis, at: Millis) -> String {
    format!("{} ago", format_duration(now.saturating_sub(at).max(0)))
}
