//! The invariant check after a benchmark: a rate is worth nothing if the run that made it
//! broke a promise (two owners of a generation, a superseded write accepted, an item
//! finished twice), so every benchmark that writes checks the store it wrote with
//! `leasehold check`'s own code and reports the verdict next to its figures.

use std::time::Instant;

use super::Report;
use crate::check::{CheckOptions, check};
use crate::error::Result;
use crate::store::Store;

/// The report's keys for the verdict.
const VIOLATIONS: &str = "checkViolations";
const GAPS: &str = "checkHistoryGaps";

/// Checks `store` at its own clock's now and records the verdict in `report`: the counts
/// as figures, the first finding (or what was read) as a note.
///
/// # Errors
/// A store failure while reading (no verdict then).
pub fn check_after(store: &Store, report: &mut Report) -> Result<()> {
    let started = Instant::now();
    let found = check(store, &CheckOptions::at(store.now()))?;
    let elapsed = started.elapsed();
    let gaps = found.history_gaps();
    report.metric(
        VIOLATIONS,
        "leasehold check: violations",
        found.violations.len() as f64,
        "",
    );
    report.metric(GAPS, "leasehold check: history gaps", gaps as f64, "");
    report.metric(
        "checkSeconds",
        "leasehold check: run time",
        elapsed.as_secs_f64(),
        "s",
    );
    let c = &found.checked;
    let verdict = match found.violations.iter().chain(&found.gaps).next() {
        None => format!(
            "leasehold check: clean through revision {} ({} grants, {} writes, {} items, {} workflow instances)",
            found.through_revision, c.grants, c.writes, c.items, c.instances
        ),
        Some(first) => format!(
            "leasehold check: {} violation(s), {gaps} history gap(s); first: {} [{}] {}",
            found.violations.len(),
            first.invariant,
            first.ids.join(", "),
            first.sentence
        ),
    };
    report.note(verdict);
    Ok(())
}

/// What the check after the run found wrong, as one line, or `None` when it was clean
/// (or did not run).
#[must_use]
pub fn broken(report: &Report) -> Option<String> {
    let violations = report.value(VIOLATIONS).unwrap_or(0.0);
    let gaps = report.value(GAPS).unwrap_or(0.0);
    (violations + gaps > 0.0).then(|| {
        format!(
            "the store the benchmark wrote fails leasehold check: {violations} violation(s), {gaps} history gap(s)"
        )
    })
}
