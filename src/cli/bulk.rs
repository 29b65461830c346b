//! A triage verb over every work item a filter matches (`leasehold work requeue|discard|
//! retry-now --filter EXPR`).
//!
//! The matches are read page by page from the store (the filter is answered by the store,
//! index-backed) and each page is changed in one transaction by the same fenced, audited
//! verb as a single-item call ([`Store::triage_work_batch`]), so a run interrupted half
//! way leaves every item either changed or untouched. Before writing, each item is judged as its page shows it:
//! one that already shows the change is *skipped* (no write, no audit entry), so a re-run
//! finishes the rest and does nothing twice; one the verb does not apply to is *refused*
//! without a write. The store judges again inside the transaction, so an item that moved
//! meanwhile is never changed on stale grounds. `--dry-run` only counts; more than
//! [`CONFIRM_ABOVE`] matches need `--yes`. The run itself is audited once more, with the
//! filter and the counts.

use std::io::Write;

use serde::Serialize;

use super::live::LiveBuilds;
use super::output::{cell, json_line};
use super::{CliResult, Failure};
use crate::model::work::WorkFilter;
use crate::model::{PageRequest, WorkItem};
use crate::ops::cancel::with_reason;
use crate::ops::filter::Filter;
use crate::ops::triage::{Verb, Verdict};
use crate::store::Store;

/// More matches than this need `--yes`.
pub const CONFIRM_ABOVE: usize = 100;

/// Items read per page.
const PAGE: usize = 500;

/// Matched items named in a preview.
const PREVIEW: usize = 5;

/// One bulk run.
pub struct Bulk<'a> {
    pub store: &'a Store,
    pub verb: Verb,
    pub filter: &'a Filter,
    /// The filter as the operator wrote it, for the answer and the audit log.
    pub filter_text: &'a str,
    pub actor: &'a str,
    pub reason: &'a str,
}

/// What a run (or a dry run) found and did.
#[derive(Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
struct Tally {
    action: &'static str,
    filter: String,
    dry_run: bool,
    matched: usize,
    first: Vec<String>,
    done: usize,
    skipped: usize,
    refused: usize,
    /// The first refusals, `id: why`.
    refusals: Vec<String>,
}

impl Bulk<'_> {
    /// Counts the matches, then (unless `dry_run`) acts on each.
    ///
    /// # Errors
    /// More than [`CONFIRM_ABOVE`] matches without `yes`, or any refusal (exit 1); a store
    /// failure.
    pub fn run(&self, dry_run: bool, yes: bool, json: bool, out: &mut dyn Write) -> CliResult {
        let live = LiveBuilds::load(self.store, self.store.now())?;
        let filter = live.work_filter(self.store, self.filter)?;
        let mut tally = Tally {
            action: self.verb.action(),
            filter: self.filter_text.trim().to_owned(),
            dry_run,
            ..Tally::default()
        };
        self.each_page(filter.as_ref(), |page| {
            for item in page {
                tally.matched += 1;
                if tally.first.len() < PREVIEW {
                    tally.first.push(item.id.clone());
                }
            }
            Ok(())
        })?;
        if !dry_run {
            if tally.matched > CONFIRM_ABOVE && !yes {
                return Err(Failure::refused(format!(
                    "{} items match {}; add --yes to {} all of them (--dry-run lists the first)",
                    tally.matched,
                    tally.filter,
                    self.verb.action().trim_end_matches("-work"),
                )));
            }
            self.each_page(filter.as_ref(), |page| self.act(page, &mut tally))?;
            self.store.audit(
                self.actor,
                &format!("bulk-{}", self.verb.action()),
                &format!("filter {}", tally.filter),
                &with_reason(self.summary(&tally), self.reason),
            )?;
        }
        if json {
            json_line(out, &tally)?;
        } else if dry_run {
            writeln!(
                out,
                "{}: {} item(s) match {}{}; dry run, nothing changed",
                self.verb.action(),
                tally.matched,
                tally.filter,
                first_of(&tally),
            )?;
        } else {
            writeln!(
                out,
                "{} over {}: {}",
                self.verb.action(),
                tally.filter,
                self.summary(&tally)
            )?;
            for refusal in &tally.refusals {
                writeln!(out, "  refused {refusal}")?;
            }
        }
        if tally.refused > 0 && !dry_run {
            return Err(Failure::refused(format!(
                "{} of {} matched item(s) refused",
                tally.refused, tally.matched
            )));
        }
        Ok(())
    }

    /// Calls `visit` with every page of matching items.
    fn each_page(
        &self,
        filter: Option<&WorkFilter>,
        mut visit: impl FnMut(&[WorkItem]) -> CliResult,
    ) -> CliResult {
        let Some(filter) = filter else { return Ok(()) };
        let mut page = PageRequest::first(PAGE);
        loop {
            let rows = self.store.list_work(filter, &page)?;
            visit(&rows.rows)?;
            match rows.next {
                Some(next) => page = PageRequest::after(next, PAGE),
                None => return Ok(()),
            }
        }
    }

    /// Judges each item as its page shows it, then changes the ones it applies to in one
    /// transaction (where the store judges them again).
    fn act(&self, page: &[WorkItem], tally: &mut Tally) -> CliResult {
        let now = self.store.now();
        let mut to_change: Vec<&str> = Vec::new();
        let mut verdicts: Vec<(&str, Verdict)> = Vec::new();
        for item in page {
            match self.verb.judge(item, self.actor, self.reason, now).0 {
                Verdict::Done => to_change.push(&item.id),
                seen => verdicts.push((&item.id, seen)),
            }
        }
        if !to_change.is_empty() {
            let answers =
                self.store
                    .triage_work_batch(self.verb, &to_change, self.actor, self.reason)?;
            verdicts.extend(
                to_change
                    .iter()
                    .zip(answers)
                    .map(|(id, a)| (*id, a.verdict)),
            );
        }
        for (id, verdict) in verdicts {
            match verdict {
                Verdict::Done => tally.done += 1,
                Verdict::AlreadyDone => tally.skipped += 1,
                refused @ (Verdict::Refused(_) | Verdict::Unknown) => {
                    tally.refused += 1;
                    if tally.refusals.len() < PREVIEW {
                        tally
                            .refusals
                            .push(format!("{}: {}", cell(id), refused.words(self.verb)));
                    }
                }
            }
        }
        Ok(())
    }

    fn summary(&self, tally: &Tally) -> String {
        format!(
            "{} matched: {} {}, {} skipped (already {}), {} refused",
            tally.matched,
            tally.done,
            self.verb.done(),
            tally.skipped,
            self.verb.done(),
            tally.refused
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
