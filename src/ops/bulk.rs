//! An operator's action over every row a filter matches, written once for both front ends
//! (`leasehold work requeue|discard|retry-now --filter`, `leasehold cancel --filter`, and
//! the dashboard's bulk dialog); each [`Action`] says how its rows are paged, judged and
//! changed.
//!
//! The matches are read page by page from the store (the filter is answered by the store,
//! index-backed). Before writing, each row is judged as its page shows it: one that
//! already shows the change is *skipped* (no write, no audit entry); one the action does
//! not apply to is *refused* without a write. A row left alone that an earlier run of the
//! same selection (the action and the filter as written) changed is *done before*
//! instead: the items a run killed half way requeued may have run and succeeded since,
//! and a re-run counts them as that run's work, not as refusals. The rest are changed by
//! the same fenced, audited call as a single-row action, which judges each row again
//! inside its transaction, so a row that moved meanwhile is never changed on stale
//! grounds; a run interrupted half way leaves every row either changed or untouched.
//!
//! The run itself is audited page by page: each page adds the run's entry with the
//! filter and the counts so far (`in progress: …`), the last page the run's summary. A
//! work triage writes it in the page's own transaction, so a run killed at any point
//! leaves an entry for every page that committed, with its counts.

use serde::Serialize;

use crate::error::Result;
use crate::foundation::text_cell::cell;
use crate::model::PageRequest;
use crate::model::WorkGroup;
use crate::model::history::with_reason;
use crate::model::work::{Ending, WorkFilter, WorkItem};
use crate::ops::filter::Filter;
use crate::rules::triage::{Verb, Verdict};
use crate::store::{BulkPage, Store, Triaged};

/// Rows read per page.
pub const PAGE: usize = 500;

/// Matched rows named in a preview, and refusals named in a report.
pub const PREVIEW: usize = 5;

/// How one row fares, judged from a page or answered by the change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fate {
    /// Changed (or, judged from a page, to be changed).
    Change,
    /// Changed by an earlier run of the same selection: left alone. Only a run finds
    /// this, never [`Action::judge`].
    DoneBefore,
    /// Already shows the change: left alone.
    Skip,
    /// The action does not apply: the words say why.
    Refuse(String),
}

/// One page of a run as an action's change writes it: who and why, the selection its
/// changes are recorded under, and the run's audit entry for the page, whose outcome is
/// made from the fates of the page's changes.
pub struct RunPage<'a> {
    pub actor: &'a str,
    pub reason: &'a str,
    /// The action and the filter as written (`requeue-work filter state:failed`).
    pub selection: &'a str,
    /// The run's audit action (`bulk-requeue-work`) and target (`filter state:failed`).
    pub action: &'a str,
    pub target: &'a str,
    pub outcome: &'a dyn Fn(&[Fate]) -> String,
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
    /// Changes the rows of `ids` (each judged [`Fate::Change`], perhaps none) as `run`
    /// says, answering each one's fate in order, and writes the run's audit entry for the
    /// page — in the same transaction where the store allows it.
    ///
    /// # Errors
    /// A store failure.
    fn apply(&self, store: &Store, ids: &[&str], run: &RunPage<'_>) -> Result<Vec<Fate>>;
    /// Which of `ids` (rows this run leaves alone) an earlier run of `selection` changed;
    /// none, for an action whose changes keep no such record.
    ///
    /// # Errors
    /// A store failure.
    fn done_before(&self, store: &Store, selection: &str, ids: &[&str]) -> Result<Vec<bool>> {
        let _ = (store, selection);
        Ok(vec![false; ids.len()])
    }
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
    /// Changed by an earlier run of the same selection.
    pub done_before: usize,
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
    pub done_before: usize,
    pub skip: usize,
    pub refuse: usize,
    /// The first refusals, `id: why`.
    pub refusals: Vec<String>,
}

impl Tally {
    fn count(&mut self, id: &str, fate: Fate) {
        let counts = [
            &mut self.done,
            &mut self.done_before,
            &mut self.skipped,
            &mut self.refused,
        ];
        count(counts, &mut self.refusals, id, fate);
    }

    /// The rows judged so far.
    fn judged(&self) -> usize {
        self.done + self.done_before + self.skipped + self.refused
    }
}

impl Would {
    fn count(&mut self, id: &str, fate: Fate) {
        let counts = [
            &mut self.change,
            &mut self.done_before,
            &mut self.skip,
            &mut self.refuse,
        ];
        count(counts, &mut self.refusals, id, fate);
    }
}

/// Adds one row's fate to counts of (changed, done before, skipped, refused), naming the
/// first refusals.
fn count(counts: [&mut usize; 4], refusals: &mut Vec<String>, id: &str, fate: Fate) {
    let [changed, before, skipped, refused] = counts;
    match fate {
        Fate::Change => *changed += 1,
        Fate::DoneBefore => *before += 1,
        Fate::Skip => *skipped += 1,
        Fate::Refuse(why) => {
            *refused += 1;
            if refusals.len() < PREVIEW {
                refusals.push(refusal_line(id, &why));
            }
        }
    }
}

impl<A: Action> Bulk<'_, A> {
    /// Counts the matches and names the first; changes nothing.
    ///
    /// # Errors
    /// A store failure.
    pub fn preview(&self) -> Result<Tally> {
        self.scan(|_| Ok(()))
    }

    /// A dry run: the preview, and every match judged as a run judges it before it writes
    /// ([`Action::judge`], and what an earlier run of the same selection did); changes
    /// nothing.
    ///
    /// # Errors
    /// A store failure.
    pub fn dry_run(&self) -> Result<Tally> {
        let mut would = Would::default();
        let mut tally = self.scan(|page| {
            for (id, fate) in self.judge(page)? {
                would.count(id, fate);
            }
            Ok(())
        })?;
        tally.would = Some(would);
        Ok(tally)
    }

    /// Counts the matches and names the first, calling `visit` with each page.
    fn scan(&self, mut visit: impl FnMut(&[A::Row]) -> Result<()>) -> Result<Tally> {
        let mut tally = Tally {
            action: self.action.name(),
            filter: self.filter_text.trim().to_owned(),
            dry_run: true,
            ..Tally::default()
        };
        self.each_page(|page, _| {
            tally.matched += page.len();
            let room = PREVIEW.saturating_sub(tally.first.len());
            tally
                .first
                .extend(page.iter().take(room).map(|row| A::id(row).to_owned()));
            visit(page)
        })?;
        Ok(tally)
    }

    /// Acts on every match (counted into `tally`, which a [`Self::preview`] began), each
    /// page audited with the filter and the counts so far, the last with the run's.
    ///
    /// # Errors
    /// A store failure (the rows changed so far stay changed, their pages audited; a re-run
    /// counts them done before).
    pub fn apply(&self, tally: &mut Tally) -> Result<()> {
        tally.dry_run = false;
        self.each_page(|page, last| self.act(page, last, tally))
    }

    /// The counts in words: `12 matched: 12 requeued, 0 skipped (already requeued), 0
    /// refused`, with `, 3 done before` after the changed ones when there are any.
    #[must_use]
    pub fn summary(&self, tally: &Tally) -> String {
        format!(
            "{} matched: {}",
            tally.matched,
            self.fates(tally.done, tally.done_before, tally.skipped, tally.refused)
        )
    }

    /// A dry run's judgement in words: `would be 11 requeued, 0 skipped (already
    /// requeued), 1 refused`; empty for a tally that judged nothing.
    #[must_use]
    pub fn would_summary(&self, tally: &Tally) -> String {
        tally.would.as_ref().map_or_else(String::new, |w| {
            format!(
                "would be {}",
                self.fates(w.change, w.done_before, w.skip, w.refuse)
            )
        })
    }

    fn fates(&self, changed: usize, before: usize, skipped: usize, refused: usize) -> String {
        let done = self.action.done();
        let before = if before > 0 {
            format!(", {before} done before")
        } else {
            String::new()
        };
        format!("{changed} {done}{before}, {skipped} skipped (already {done}), {refused} refused")
    }

    /// What the run acts on, as its changes record it: the action and the filter as
    /// written.
    fn selection(&self) -> String {
        format!("{} filter {}", self.action.name(), self.filter_text.trim())
    }

    /// The run's audit entry for a page: the summary after the last page, the counts so
    /// far before it.
    fn page_outcome(&self, tally: &Tally, last: bool) -> String {
        let words = if last {
            self.summary(tally)
        } else {
            format!(
                "in progress: {} of {} matched so far: {}",
                tally.judged(),
                tally.matched,
                self.fates(tally.done, tally.done_before, tally.skipped, tally.refused)
            )
        };
        with_reason(words, self.reason)
    }

    /// Calls `visit` with every page of matching rows, and whether it is the last.
    fn each_page(&self, mut visit: impl FnMut(&[A::Row], bool) -> Result<()>) -> Result<()> {
        let mut page = PageRequest::first(PAGE);
        loop {
            let (rows, next) = self.action.page(self.store, &page)?;
            visit(&rows, next.is_none())?;
            match next {
                Some(next) => page = PageRequest::after(next, PAGE),
                None => return Ok(()),
            }
        }
    }

    /// Each row of `page` judged as the page shows it; a row left alone (skipped or
    /// refused) that an earlier run of the same selection changed is done before.
    fn judge<'r>(&self, page: &'r [A::Row]) -> Result<Vec<(&'r str, Fate)>> {
        let mut judged: Vec<(&str, Fate)> = page
            .iter()
            .map(|row| (A::id(row), self.action.judge(row, self.store)))
            .collect();
        let left: Vec<&str> = judged
            .iter()
            .filter(|(_, fate)| *fate != Fate::Change)
            .map(|(id, _)| *id)
            .collect();
        if left.is_empty() {
            return Ok(judged);
        }
        let before = self
            .action
            .done_before(self.store, &self.selection(), &left)?;
        let mut before = before.into_iter();
        for (_, fate) in judged.iter_mut().filter(|(_, fate)| *fate != Fate::Change) {
            if before.next() == Some(true) {
                *fate = Fate::DoneBefore;
            }
        }
        Ok(judged)
    }

    /// Judges the page, then changes the rows the action applies to (where the store
    /// judges them again) and audits the page with the counts it leads to.
    fn act(&self, page: &[A::Row], last: bool, tally: &mut Tally) -> Result<()> {
        let mut to_change: Vec<&str> = Vec::new();
        let mut left = tally.clone();
        for (id, fate) in self.judge(page)? {
            match fate {
                Fate::Change => to_change.push(id),
                fate => left.count(id, fate),
            }
        }
        let with_changes = |fates: &[Fate]| {
            let mut counted = left.clone();
            for (id, fate) in to_change.iter().zip(fates) {
                counted.count(id, fate.clone());
            }
            counted
        };
        let outcome = |fates: &[Fate]| self.page_outcome(&with_changes(fates), last);
        let run = RunPage {
            actor: self.actor,
            reason: self.reason,
            selection: &self.selection(),
            action: &format!("bulk-{}", self.action.name()),
            target: &format!("filter {}", tally.filter),
            outcome: &outcome,
        };
        let fates = self.action.apply(self.store, &to_change, &run)?;
        *tally = with_changes(&fates);
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
    verb: Verb,
    filter: Option<WorkFilter>,
}

impl TriageMatches {
    /// `verb` over what `filter` matches; `matched` is its store filter (`None`: it can
    /// match nothing). A requeue never revives an item a person discarded unless the
    /// filter names `state:discarded`: a discard records a terminal failure with the code
    /// `DISCARDED`, so `class:terminal` or `handler:NAME` alone match discarded items too,
    /// and a person's decision is undone only when asked for by name.
    #[must_use]
    pub fn new(verb: Verb, filter: &Filter, matched: Option<WorkFilter>) -> Self {
        let spare_discards =
            verb == Verb::Requeue && !filter.groups.contains(&WorkGroup::Discarded);
        let filter = matched.map(|mut f| {
            if spare_discards {
                let endings = &mut f.facets.endings;
                if endings.is_empty() {
                    endings.extend(Ending::ALL);
                }
                endings.retain(|e| *e != Ending::Discarded);
            }
            f
        });
        Self { verb, filter }
    }

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

    fn apply(&self, store: &Store, ids: &[&str], run: &RunPage<'_>) -> Result<Vec<Fate>> {
        let fates = |answers: &[Triaged]| -> Vec<Fate> {
            answers.iter().map(|a| self.fate(&a.verdict)).collect()
        };
        let outcome = |answers: &[Triaged]| (run.outcome)(&fates(answers));
        let page = BulkPage {
            selection: run.selection,
            action: run.action,
            target: run.target,
            outcome: &outcome,
        };
        let answers = store.triage_work_page(self.verb, ids, run.actor, run.reason, &page)?;
        Ok(fates(&answers))
    }

    fn done_before(&self, store: &Store, selection: &str, ids: &[&str]) -> Result<Vec<bool>> {
        store.changed_by_selection(self.verb, selection, ids)
    }
}
