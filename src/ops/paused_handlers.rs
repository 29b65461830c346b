//! Paused handlers as the command line and the dashboard state them: how many items wait
//! behind pauses, and one line naming each paused handler.

use crate::foundation::text_cell::cell;
use crate::model::PausedHandler;

/// How many items wait behind every pause together.
#[must_use]
pub fn waiting(paused: &[PausedHandler]) -> u64 {
    paused.iter().map(|p| p.waiting).sum()
}

/// `poison (12 waiting), legacy-sync (0 waiting)`, or `none`.
#[must_use]
pub fn line(paused: &[PausedHandler]) -> String {
    if paused.is_empty() {
        return "none".into();
    }
    paused
        .iter()
        .map(|p| format!("{} ({} waiting)", cell(&p.pause.handler), p.waiting))
        .collect::<Vec<_>>()
        .join(", ")
}
