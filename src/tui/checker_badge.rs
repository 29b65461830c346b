//! The demo's checker badge: the invariant checker (the same one `leasehold check` runs)
//! run over the embedded store every few seconds, its verdict shown in the header — green
//! with what it read, or red with the violations listed in the ticker.

use ratatui::text::Span;

use super::theme::{Role, Theme};
use crate::check::{CheckOptions, check};
use crate::clock::Millis;
use crate::store::Store;

/// How often the dashboard re-checks the demo store.
pub const EVERY_MS: u64 = 5_000;
/// Violations kept for the ticker.
const LISTED: usize = 5;

/// One verdict of the checker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    /// When it ran (the store's clock).
    pub at: Millis,
    pub violations: usize,
    /// `invariant: sentence`, the first few.
    pub listed: Vec<String>,
    pub grants: u64,
    pub writes: u64,
    /// Items and instances past the stranded bound while live authorities kept claiming
    /// (a backlog: lateness, not a violation).
    pub backlogged: u64,
}

/// Runs the checker over `store` now; a store failure is no verdict (the badge keeps the
/// last one).
#[must_use]
pub fn run(store: &Store) -> Option<Verdict> {
    let at = store.now();
    let report = check(store, &CheckOptions::at(at)).ok()?;
    Some(Verdict {
        at,
        violations: report.violations.len(),
        listed: report
            .violations
            .iter()
            .take(LISTED)
            .map(|v| format!("{}: {}", v.invariant, v.sentence))
            .collect(),
        grants: report.checked.grants,
        writes: report.checked.writes,
        backlogged: report.backlogged_items + report.backlogged_instances,
    })
}

/// The header badge for `verdict`, and how much work waits in a backlog when some does
/// (not a violation, but what an operator should see beside the green tick).
#[must_use]
pub fn badge<'a>(verdict: &Verdict, theme: &Theme) -> Vec<Span<'a>> {
    let mut spans = vec![if verdict.violations == 0 {
        Span::styled(
            format!("checker ✓ 0 violations ({} writes)", verdict.writes),
            theme.style(Role::Ok),
        )
    } else {
        Span::styled(
            format!("checker ✗ {} VIOLATIONS", verdict.violations),
            theme.style(Role::Error),
        )
    }];
    if verdict.backlogged > 0 {
        spans.push(Span::styled(
            format!(" · {} backlogged", verdict.backlogged),
            theme.style(Role::Warning),
        ));
    }
    spans
}
