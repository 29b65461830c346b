//! An operator's action over every row a filter matches: `leasehold work requeue|discard|
//! retry-now --filter EXPR` over work items, `leasehold cancel --filter EXPR` over workflow
//! instances. The run is written once here; each [`Action`] says how its rows are paged,
//! judged and changed.
//!
//! The matches are read page by page from the store (the filter is answered by the store,
//! index-backed). Before writing, each row is judged as its page shows it: one that
//! already shows the change is *skipped* (no write, no audit entry), so a re-run finishes
//! the rest and does nothing twice; one the action does not apply to is *refused* without
//! a write. The rest are changed by the same fenced, audited call as a single-row command,
//! which judges each row again inside its transaction, so a row that moved meanwhile is
//! never changed on stale grounds; a run interrupted half way leaves every row either
//! changed or untouched. `--dry-run` only counts; more than [`CONFIRM_ABOVE`] matches need
//! `--yes`. The run itself is audited once more, with the filter and the counts.

use std::io::Write;

use clap::Args;
use serde::Serialize;

use super::output::{cell, json_line};
use super::{CliResult, Failure};
use crate::error::Result;
use crate::model::PageRequest;
use crate::ops::cancel::with_reason;
use crate::store::Store;

/// More matches than this need `--yes`.
pub const CONFIRM_ABOVE: usize = 100;

/// Rows read per page.
pub const PAGE: usize = 500;

/// Matched rows named in a preview.
const PREVIEW: usize = 5;

/// Which rows an action acts on: one by id, or every row a filter matches.
#[derive(Debug, Clone, Args)]
pub struct Target {
    /// The row's id (or `--filter` for every row it matches).
    #[arg(
        value_name = "ID",
        required_unless_present = "filter",
        conflicts_with = "filter"
    )]
    pub id: Option<String>,
    /// Act on every row this filter matches (the dashboard's `/` grammar, e.g.
    /// `state:failed kind:effect`, `status:waiting`), page by page; re-running after an
    /// interruption finishes the rest and does nothing twice.
    #[arg(long, value_name = "EXPR")]
    pub filter: Option<String>,
    /// With `--filter`: say how many rows match and list the first; change nothing.
    #[arg(long, requires = "filter")]
    pub dry_run: bool,
    /// With `--filter`: act on more than the confirmation threshold without refusing.
    #[arg(long, requires = "filter")]
    pub yes: bool,
}

/// How one row fares, judged from a page or answered by the change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fate {
    /// Changed (or, judged from a page, to be changed).
    Change,
    /// Already shows the change: left alone.
    Skip,
    /// The action does not apply: the words say why.
    Refuse(String),
}

/// One kind of bulk action: its rows, how each is judged, and the call that changes them.
pub trait Action {
    type Row;
    /// The audit log's action name (`requeue-work`, `cancel-workflow`).
    fn name(&self) -> &'static str;
    /// What a row is called (`item`, `instance`).
    fn noun(&self) -> &'static str;
    /// What a change is called (`requeued`, `cancelled`).
    fn done(&self) -> &'static str;
    /// A page of matching rows after the key `after`, and the key of the next page.
    ///
    /// # Errors
    /// A store failure.
    fn page(&self, store: &Store, page: &PageRequest) -> Result<(Vec<Self::Row>, Option<String>)>;
    /// The row's id.
    fn id(row: &Self::Row) -> &str;
    /// How the row fares as the page shows it.
    fn judge(&self, row: &Self::Row, store: &Store) -> Fate;
    /// Changes the rows of `ids` (each judged [`Fate::Change`]) as `actor` with `reason`,
    /// answering each one's fate in order.
    ///
    /// # Errors
    /// A store failure.
    fn apply(&self, store: &Store, ids: &[&str], actor: &str, reason: &str) -> Result<Vec<Fate>>;
}

/// One bulk run.
pub struct Bulk<'a, A: Action> {
    pub store: &'a Store,
    pub action: A,
    /// The filter as the operator wrote it, for the answer and the audit log.
    pub filter_text: &'a str,
    pub actor: &'a str,
    pub reason: &'a str,
}

/// What a run (or a dry run) found and did.
#[derive(Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Tally {
    pub action: &'static str,
    pub filter: String,
    pub dry_run: bool,
    pub matched: usize,
    pub first: Vec<String>,
    pub done: usize,
    pub skipped: usize,
    pub refused: usize,
    /// The first refusals, `id: why`.
    pub refusals: Vec<String>,
}

impl<A: Action> Bulk<'_, A> {
    /// Counts the matches, then (unless `dry_run`) acts on each.
    ///
    /// # Errors
    /// More than [`CONFIRM_ABOVE`] matches without `yes`, or any refusal (exit 1); a store
    /// failure.
    pub fn run(&self, dry_run: bool, yes: bool, json: bool, out: &mut dyn Write) -> CliResult {
        let name = self.action.name();
        let mut tally = Tally {
            action: name,
            filter: self.filter_text.trim().to_owned(),
            dry_run,
            ..Tally::default()
        };
        self.each_page(|page| {
            for row in page {
                tally.matched += 1;
                if tally.first.len() < PREVIEW {
                    tally.first.push(A::id(row).to_owned());
                }
            }
            Ok(())
        })?;
        if !dry_run {
            if tally.matched > CONFIRM_ABOVE && !yes {
                return Err(Failure::refused(format!(
                    "{} {}s match {}; add --yes to act on all of them (--dry-run lists the first)",
                    tally.matched,
                    self.action.noun(),
                    tally.filter,
                )));
            }
            self.each_page(|page| self.act(page, &mut tally))?;
            self.store.audit(
                self.actor,
                &format!("bulk-{name}"),
                &format!("filter {}", tally.filter),
                &with_reason(self.summary(&tally), self.reason),
            )?;
        }
        if json {
            json_line(out, &tally)?;
        } else if dry_run {
            writeln!(
                out,
                "{name}: {} {}(s) match {}{}; dry run, nothing changed",
                tally.matched,
                self.action.noun(),
                tally.filter,
                first_of(&tally),
            )?;
        } else {
            writeln!(
                out,
                "{name} over {}: {}",
                tally.filter,
                self.summary(&tally)
            )?;
            for refusal in &tally.refusals {
                writeln!(out, "  refused {refusal}")?;
            }
        }
        if tally.refused > 0 && !dry_run {
            return Err(Failure::refused(format!(
                "{} of {} matched {}(s) refused",
                tally.refused,
                tally.matched,
                self.action.noun()
            )));
        }
        Ok(())
    }

    /// Calls `visit` with every page of matching rows.
    fn each_page(&self, mut visit: impl FnMut(&[A::Row]) -> CliResult) -> CliResult {
        let mut page = PageRequest::first(PAGE);
        loop {
            let (rows, next) = self.action.page(self.store, &page)?;
            visit(&rows)?;
            match next {
                Some(next) => page = PageRequest::after(next, PAGE),
                None => return Ok(()),
            }
        }
    }

    /// Judges each row as its page shows it, then changes the ones the action applies to
    /// (where the store judges them again).
    fn act(&self, page: &[A::Row], tally: &mut Tally) -> CliResult {
        let mut to_change: Vec<&str> = Vec::new();
        let mut fates: Vec<(&str, Fate)> = Vec::new();
        for row in page {
            match self.action.judge(row, self.store) {
                Fate::Change => to_change.push(A::id(row)),
                seen => fates.push((A::id(row), seen)),
            }
        }
        if !to_change.is_empty() {
            let answers = self
                .action
                .apply(self.store, &to_change, self.actor, self.reason)?;
            fates.extend(to_change.iter().copied().zip(answers));
        }
        for (id, fate) in fates {
            match fate {
                Fate::Change => tally.done += 1,
                Fate::Skip => tally.skipped += 1,
                Fate::Refuse(why) => {
                    tally.refused += 1;
                    if tally.refusals.len() < PREVIEW {
                        tally.refusals.push(format!("{}: {why}", cell(id)));
                    }
                }
            }
        }
        Ok(())
    }

    fn summary(&self, tally: &Tally) -> String {
        let done = self.action.done();
        format!(
            "{} matched: {} {done}, {} skipped (already {done}), {} refused",
            tally.matched, tally.done, tally.skipped, tally.refused
        )
    }
}

fn first_of(tally: &Tally) -> String {
    if tally.first.is_empty() {
        String::new()
    } else {
        let more = if tally.matched > tally.first.len() {
            ", …"
        } else {
            ""
        };
        format!(
            " (first: {}{more})",
            tally
                .first
                .iter()
                .map(|id| cell(id))
                .collect::<Vec<_>>()
                .join(", ")
        )
    }
}
