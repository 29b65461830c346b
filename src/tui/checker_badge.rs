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
    })
}

/// The header badge for `verdict`.
#[must_use]
pub fn badge<'a>(verdict: &Verdict, theme: &Theme) -> Span<'a> {
    if verdict.violations == 0 {
        Span::styled(
            format!("checker ✓ 0 violations ({} writes)", verdict.writes),
            theme.style(Role::Ok),
        )
    } else {
        Span::styled(
            format!("checker ✗ {} VIOLATIONS", verdict.violations),
            theme.style(Role::Error),
        )
    }
}
