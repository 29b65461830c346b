//! An operator's action over every row a filter matches, written once for both front ends
//! (`leasehold work requeue|discard|retry-now --filter`, `leasehold cancel --filter`, and
//! the dashboard's bulk dialog); each [`Action`] says how its rows are paged, judged and
//! changed.
//!
//! The matches are read page by page from the store (the filter is answered by the store,
//! index-backed). Before writing, each row is judged as its page shows it: one that
//! already shows the change is *skipped* (no write, no audit entry), so a re-run finishes
//! the rest and does nothing twice; one the action does not apply to is *refused* without
//! a write. The rest are changed by the same fenced, audited call as a single-row action,
//! which judges each row again inside its transaction, so a row that moved meanwhile is
//! never changed on stale grounds; a run interrupted half way leaves every row either
//! changed or untouched. The run itself is audited once more, with the filter and the
//! counts.

use serde::Serialize;

use crate::error::Result;
use crate::foundation::text_cell::cell;
use crate::model::PageRequest;
use crate::model::history::with_reason;
use crate::model::work::{WorkFilter, WorkItem};
use crate::rules::triage::{Verb, Verdict};
use crate::store::Store;

/// Rows read per page.
pub const PAGE: usize = 500;

/// Matched rows named in a preview, and refusals named in a report.
pub const PREVIEW: usize = 5;

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

/// What a run (or a preview) found and did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
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
    /// A dry run's judgement of every match: what a run would do to it now.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub would: Option<Would>,
}

/// What a run would do, each match judged as its page shows it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Would {
    pub change: usize,
    pub skip: usize,
    pub refuse: usize,
    /// The first refusals, `id: why`.
    pub refusals: Vec<String>,
}

impl<A: Action> Bulk<'_, A> {
    /// Counts the matches and names the first; changes nothing.
    ///
    /// # Errors
    /// A store failure.
    pub fn preview(&self) -> Result<Tally> {
        self.scan(|_| {})
    }

    /// A dry run: the preview, and every match judged as its page shows it by the judgement
    /// a run makes before it writes ([`Action::judge`]); changes nothing.
    ///
    /// # Errors
    /// A store failure.
    pub fn dry_run(&self) -> Result<Tally> {
        let mut would = Would::default();
        let mut tally = self.scan(|row| match self.action.judge(row, self.store) {
            Fate::Change => would.change += 1,
            Fate::Skip => would.skip += 1,
            Fate::Refuse(why) => {
                would.refuse += 1;
                if would.refusals.len() < PREVIEW {
                    would.refusals.push(refusal_line(A::id(row), &why));
                }
            }
        })?;
        tally.would = Some(would);
        Ok(tally)
    }

    /// Counts the matches and names the first, calling `visit` with each.
    fn scan(&self, mut visit: impl FnMut(&A::Row)) -> Result<Tally> {
        let mut tally = Tally {
            action: self.action.name(),
            filter: self.filter_text.trim().to_owned(),
            dry_run: true,
            ..Tally::default()
        };
        self.each_page(|page| {
            for row in page {
                tally.matched += 1;
                if tally.first.len() < PREVIEW {
                    tally.first.push(A::id(row).to_owned());
                }
                visit(row);
            }
            Ok(())
        })?;
        Ok(tally)
    }

    /// Acts on every match (counted into `tally`, which a [`Self::preview`] began), then
    /// audits the run with the filter and the counts.
    ///
    /// # Errors
    /// A store failure (the rows changed so far stay changed; a re-run skips them).
    pub fn apply(&self, tally: &mut Tally) -> Result<()> {
        tally.dry_run = false;
        self.each_page(|page| self.act(page, tally))?;
        self.store.audit(
            self.actor,
            &format!("bulk-{}", self.action.name()),
            &format!("filter {}", tally.filter),
            &with_reason(self.summary(tally), self.reason),
        )
    }

    /// The counts in words: `12 matched: 12 requeued, 0 skipped (already requeued), 0
    /// refused`.
    #[must_use]
    pub fn summary(&self, tally: &Tally) -> String {
        format!(
            "{} matched: {}",
            tally.matched,
            self.fates(tally.done, tally.skipped, tally.refused)
        )
    }

    /// A dry run's judgement in words: `would be 11 requeued, 0 skipped (already
    /// requeued), 1 refused`; empty for a tally that judged nothing.
    #[must_use]
    pub fn would_summary(&self, tally: &Tally) -> String {
        tally.would.as_ref().map_or_else(String::new, |w| {
            format!("would be {}", self.fates(w.change, w.skip, w.refuse))
        })
    }

    fn fates(&self, changed: usize, skipped: usize, refused: usize) -> String {
        let done = self.action.done();
        format!("{changed} {done}, {skipped} skipped (already {done}), {refused} refused")
    }

    /// Calls `visit` with every page of matching rows.
    fn each_page(&self, mut visit: impl FnMut(&[A::Row]) -> Result<()>) -> Result<()> {
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
    fn act(&self, page: &[A::Row], tally: &mut Tally) -> Result<()> {
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
                        tally.refusals.push(refusal_line(id, &why));
                    }
                }
            }
        }
        Ok(())
    }
}

/// One refusal as a report names it: `id: why`, the id made safe to print.
fn refusal_line(id: &str, why: &str) -> String {
    format!("{}: {why}", cell(id))
}

/// A triage verb over the work items a store filter matches (`None`: a filter that can
/// match nothing).
pub struct TriageMatches {
    pub verb: Verb,
    pub filter: Option<WorkFilter>,
}

impl TriageMatches {
    fn fate(&self, verdict: &Verdict) -> Fate {
        match verdict {
            Verdict::Done => Fate::Change,
            Verdict::AlreadyDone => Fate::Skip,
            refused => Fate::Refuse(refused.words(self.verb)),
        }
    }
}

impl Action for TriageMatches {
    type Row = WorkItem;

    fn name(&self) -> &'static str {
        self.verb.action()
    }

    fn noun(&self) -> &'static str {
        "item"
    }

    fn done(&self) -> &'static str {
        self.verb.done()
    }

    fn page(&self, store: &Store, page: &PageRequest) -> Result<(Vec<WorkItem>, Option<String>)> {
        let Some(filter) = &self.filter else {
            return Ok((Vec::new(), None));
        };
        let rows = store.list_work(filter, page)?;
        Ok((rows.rows, rows.next))
    }

    fn id(row: &WorkItem) -> &str {
        &row.id
    }

    fn judge(&self, row: &WorkItem, store: &Store) -> Fate {
        self.fate(&self.verb.judge(row, "", "", store.now()).0)
    }

    fn apply(&self, store: &Store, ids: &[&str], actor: &str, reason: &str) -> Result<Vec<Fate>> {
        Ok(store
            .triage_work_batch(self.verb, ids, actor, reason)?
            .iter()
            .map(|answer| self.fate(&answer.verdict))
            .collect())
    }
}
