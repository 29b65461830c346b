//! Replay: the store's durable history — every grant and every fenced write, by revision —
//! over a window of time, as steps an operator walks through, a summary of the window, and
//! the state of one resource at any revision. Everything pages the history by revision
//! and keeps at most two pages in memory, so a window of a million revisions costs no
//! more memory than one of ten. `cursor` walks the window from a position, both ways,
//! for the dashboard's replay view.

mod cursor;

use std::collections::{BTreeMap, VecDeque};

use serde::Serialize;

use crate::clock::Millis;
use crate::error::{Error, Result};
use crate::foundation::timefmt::{Zone, parse_instant, span as duration};
use crate::model::{Grant, GrantKind, WriteRecord, WriteVerb};
use crate::store::Store;

pub use cursor::{StepAt, next_failover, previous_failover, steps_before, steps_from};

/// Where a window starts when nobody says: a quarter of an hour before its end.
pub const DEFAULT_FROM: &str = "15m";
/// Where a window ends when nobody says.
pub const DEFAULT_TO: &str = "now";

/// The instants of a window an operator typed (`03:10`, `15m`, `now`, RFC 3339 … as
/// [`parse_instant`] reads them), measured from `now`. The command line and the
/// dashboard both read their windows here.
///
/// # Errors
/// `INVALID` for an instant that cannot be read or a window that ends before it starts.
pub fn parse_window(from: &str, to: &str, now: Millis, zone: Zone) -> Result<(Millis, Millis)> {
    let (from, to) = (
        parse_instant(from, now, zone)?,
        parse_instant(to, now, zone)?,
    );
    if to < from {
        return Err(ends_before_start());
    }
    Ok((from, to))
}

fn ends_before_start() -> Error {
    Error::Invalid("the window ends before it starts (--to is before --from)".into())
}

/// Text as a view writes it: escaped and cut to a width (the command line's cells, the
/// dashboard's cleaner).
pub type Clip<'a> = &'a dyn Fn(&str, usize) -> String;

/// Rows read per history page.
const PAGE: usize = 512;

/// At most this many failovers are listed in a summary (all are counted).
const LISTED_FAILOVERS: usize = 50;

/// A window of revisions, found from a window of time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Span {
    /// The first revision in the window (records at or after `from`).
    pub from_revision: u64,
    /// The last revision in the window (records at or before `to`).
    pub to_revision: u64,
    pub from: Millis,
    pub to: Millis,
}

/// One record of the history.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "record", rename_all = "camelCase")]
pub enum Step {
    Grant(Grant),
    Write(WriteRecord),
}

impl Step {
    #[must_use]
    pub fn revision(&self) -> u64 {
        match self {
            Self::Grant(g) => g.revision,
            Self::Write(w) => w.revision,
        }
    }

    #[must_use]
    pub fn at(&self) -> Millis {
        match self {
            Self::Grant(g) => g.at,
            Self::Write(w) => w.at,
        }
    }

    #[must_use]
    pub fn resource(&self) -> &str {
        match self {
            Self::Grant(g) => &g.resource_id,
            Self::Write(w) => &w.resource_id,
        }
    }

    /// Whether this step is a failover: a grant that took over an unfinished claim.
    #[must_use]
    pub fn is_failover(&self) -> bool {
        matches!(self, Self::Grant(g) if g.took_over.is_some())
    }

    /// Whether this step is a write the store refused (a fenced write).
    #[must_use]
    pub fn is_refused(&self) -> bool {
        matches!(self, Self::Write(w) if !w.accepted)
    }

    /// The step in words: `claim by a-2 gen 3, took over a-1 gen 2 (lapsed 1.2s)`,
    /// `complete by a-1 gen 2: REFUSED WORK_FENCED`; ids written through `clip`.
    #[must_use]
    pub fn what(&self, clip: Clip<'_>) -> String {
        match self {
            Self::Grant(g) => {
                let mut text = format!(
                    "{} by {} gen {}",
                    g.how,
                    clip(&g.owner_id, 32),
                    g.generation
                );
                if let Some(t) = &g.took_over {
                    text.push_str(&format!(
                        ", took over {} gen {} (lapsed {})",
                        clip(&t.from_owner, 32),
                        t.from_generation,
                        duration(t.lapsed_ms)
                    ));
                }
                text
            }
            Self::Write(w) => {
                let who = format!(
                    "{} by {} gen {}",
                    w.verb,
                    clip(&w.owner_id, 32),
                    w.generation
                );
                if w.accepted {
                    who
                } else {
                    let why = w.refusal.as_deref().unwrap_or("refused");
                    format!("{who}: REFUSED {}", clip(why, 40))
                }
            }
        }
    }
}

/// The first revision from `lo` whose records were made at or after `at`, `top + 1` when
/// none was: a binary search over revisions, each probe the first grant and write above a
/// revision (two index seeks, or two searches by position on SQLite). Revisions commit in
/// time order, so the instant of the first record at or after a revision never decreases
/// as the revision grows.
fn first_revision_at(store: &Store, at: Millis, lo: u64, top: u64) -> Result<u64> {
    let (mut lo, mut hi) = (lo, top.saturating_add(1));
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        match first_record_from(store, mid)? {
            Some((_, made)) if made >= at => hi = mid,
            Some((revision, _)) => lo = revision.max(mid) + 1,
            None => hi = mid,
        }
    }
    Ok(lo)
}

/// The revision and instant of the first record at or after `revision`.
fn first_record_from(store: &Store, revision: u64) -> Result<Option<(u64, Millis)>> {
    let after = revision.saturating_sub(1);
    let (grants, writes) =
        store.read(|tx| Ok((tx.grants(None, after, 1)?, tx.writes(None, after, 1)?)))?;
    let grant = grants.first().map(|g| (g.revision, g.at));
    let write = writes.first().map(|w| (w.revision, w.at));
    Ok(match (grant, write) {
        (Some(g), Some(w)) => Some(g.min(w)),
        (g, w) => g.or(w),
    })
}

/// The revisions of the records made between `from` and `to` (inclusive).
///
/// # Errors
/// `INVALID` when `to` is before `from`; a store failure.
pub fn span(store: &Store, from: Millis, to: Millis) -> Result<Span> {
    SpanFinder::default().find(store, from, to)
}

/// Finds a window's span again and again as the store grows, searching only the
/// revisions committed since the last time.
///
/// A committed revision never gains records, so an edge found among the revisions seen
/// last time stands: only an edge that was still beyond the newest revision is looked for,
/// among the new ones. Besides saving the search, this keeps the span steady while writers
/// commit — a fresh search over a moving top probes other revisions, and where writers'
/// clocks differ by a few milliseconds it could land one batch earlier or later each time.
#[derive(Debug, Clone, Default)]
pub struct SpanFinder {
    /// The last span found, and the newest revision when it was.
    last: Option<(Span, u64)>,
}

impl SpanFinder {
    /// The span of `from..=to` in the store as it is now.
    ///
    /// # Errors
    /// `INVALID` when `to` is before `from`; a store failure.
    pub fn find(&mut self, store: &Store, from: Millis, to: Millis) -> Result<Span> {
        if to < from {
            return Err(ends_before_start());
        }
        let top = store.revision()?;
        let known = self
            .last
            .filter(|(span, seen)| span.from == from && span.to == to && *seen <= top);
        let edge = |found: Option<u64>, at: Millis| -> Result<u64> {
            match (found, known) {
                (Some(found), Some((_, seen))) if found <= seen => Ok(found),
                (_, Some((_, seen))) => first_revision_at(store, at, seen + 1, top),
                (_, None) => first_revision_at(store, at, 0, top),
            }
        };
        let from_revision = edge(known.map(|(s, _)| s.from_revision), from)?;
        let after_end = edge(known.map(|(s, _)| s.to_revision + 1), to.saturating_add(1))?;
        let span = Span {
            from_revision,
            to_revision: after_end.saturating_sub(1),
            from,
            to,
        };
        self.last = Some((span, top));
        Ok(span)
    }
}

/// The steps of a window, in revision order (a revision's grants before its writes),
/// read a page at a time.
pub struct Steps<'a> {
    store: &'a Store,
    resource: Option<String>,
    last: u64,
    /// Rows asked for per read (a page extends to the end of its last revision).
    page: usize,
    grants: Page<Grant>,
    writes: Page<WriteRecord>,
}

/// One kind of record, buffered, with where its next page starts.
struct Page<T> {
    rows: VecDeque<T>,
    after: u64,
    done: bool,
}

impl<T> Page<T> {
    fn starting_after(revision: u64) -> Self {
        Self {
            rows: VecDeque::new(),
            after: revision,
            done: false,
        }
    }
}

impl<'a> Steps<'a> {
    /// The steps of `span`, of every resource or of `resource` alone.
    #[must_use]
    pub fn new(store: &'a Store, span: Span, resource: Option<&str>) -> Self {
        Self::paged(store, span, resource, PAGE)
    }

    /// As [`Self::new`], reading about `page` rows at a time (at least one, at most the
    /// usual page): a walk that wants a few steps reads no more than it needs.
    #[must_use]
    pub fn paged(store: &'a Store, span: Span, resource: Option<&str>, page: usize) -> Self {
        let after = span.from_revision.saturating_sub(1);
        Self {
            store,
            resource: resource.map(str::to_owned),
            last: span.to_revision,
            page: page.clamp(1, PAGE),
            grants: Page::starting_after(after),
            writes: Page::starting_after(after),
        }
    }

    fn refill(&mut self) -> Result<()> {
        let resource = self.resource.as_deref();
        let limit = self.page;
        if self.grants.rows.is_empty() && !self.grants.done {
            let after = self.grants.after;
            let page = self.store.read(|tx| tx.grants(resource, after, limit))?;
            fill(&mut self.grants, page, |g| g.revision, (limit, self.last));
        }
        if self.writes.rows.is_empty() && !self.writes.done {
            let after = self.writes.after;
            let page = self.store.read(|tx| tx.writes(resource, after, limit))?;
            fill(&mut self.writes, page, |w| w.revision, (limit, self.last));
        }
        Ok(())
    }

    /// The next step, or `None` past the window.
    ///
    /// # Errors
    /// A store failure.
    pub fn next_step(&mut self) -> Result<Option<Step>> {
        self.refill()?;
        let grant = self.grants.rows.front().map(|g| g.revision);
        let write = self.writes.rows.front().map(|w| w.revision);
        Ok(match (grant, write) {
            (Some(g), Some(w)) if g <= w => self.grants.rows.pop_front().map(Step::Grant),
            (_, Some(_)) => self.writes.rows.pop_front().map(Step::Write),
            (Some(_), None) => self.grants.rows.pop_front().map(Step::Grant),
            (None, None) => None,
        })
    }
}

/// Buffers `rows` (asked for `limit` of them) up to revision `last`; a short page or a
/// row past `last` ends the kind.
fn fill<T>(
    page: &mut Page<T>,
    rows: Vec<T>,
    revision: impl Fn(&T) -> u64,
    (limit, last): (usize, u64),
) {
    let short = rows.len() < limit;
    if let Some(end) = rows.last().map(&revision) {
        page.after = end;
    }
    let before = rows.len();
    page.rows
        .extend(rows.into_iter().filter(|r| revision(r) <= last));
    page.done = short || page.rows.len() < before;
}

/// What one owner did in the window.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct OwnerActivity {
    pub grants: u64,
    pub completions: u64,
    pub refused: u64,
}

/// One failover in the window.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FailoverStep {
    pub revision: u64,
    pub at: Millis,
    pub resource: String,
    pub from: String,
    pub to: String,
    pub generation: u64,
    pub lapsed_ms: Millis,
}

/// The window at a glance.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Summary {
    pub records: u64,
    pub grants: u64,
    pub claims: u64,
    pub failovers: u64,
    /// The first 50 of them.
    pub failover_steps: Vec<FailoverStep>,
    pub writes: u64,
    pub fenced_writes: u64,
    /// Refused writes by refusal.
    pub refusals: BTreeMap<String, u64>,
    pub completions: u64,
    /// Accepted `fail` writes: attempts that failed and were recorded.
    pub failures: u64,
    pub completions_per_sec: f64,
    pub by_owner: BTreeMap<String, OwnerActivity>,
}

impl Summary {
    /// The window's counts on one line: `failovers 2 · fenced writes 3 (WORK_FENCED 3) ·
    /// completions 40 (0.4/s) · failures 1 · claims 45`.
    #[must_use]
    pub fn line(&self, clip: Clip<'_>) -> String {
        let refusals: Vec<String> = self
            .refusals
            .iter()
            .map(|(why, n)| format!("{} {n}", clip(why, 32)))
            .collect();
        format!(
            "failovers {} · fenced writes {}{} · completions {} ({:.1}/s) · failures {} · claims {}",
            self.failovers,
            self.fenced_writes,
            if refusals.is_empty() {
                String::new()
            } else {
                format!(" ({})", refusals.join(", "))
            },
            self.completions,
            self.completions_per_sec,
            self.failures,
            self.claims
        )
    }
}

/// Summarises `span`, reading it once, page by page.
///
/// # Errors
/// A store failure.
pub fn summarize(store: &Store, span: Span) -> Result<Summary> {
    summarize_after(store, span, None)
}

/// Summarises `span`, starting from `known` — the summary of a span of the same window
/// that ends at or before it — when there is one: a committed revision never changes, so
/// the steps counted there stand and only the revisions after it are read.
///
/// # Errors
/// A store failure.
pub fn summarize_after(
    store: &Store,
    span: Span,
    known: Option<(Span, &Summary)>,
) -> Result<Summary> {
    let earlier = known.filter(|(seen, _)| {
        (seen.from_revision, seen.from, seen.to) == (span.from_revision, span.from, span.to)
            && seen.to_revision <= span.to_revision
    });
    let (mut summary, unread) = match earlier {
        Some((seen, summary)) => (
            summary.clone(),
            Span {
                from_revision: seen.to_revision.saturating_add(1),
                ..span
            },
        ),
        None => (Summary::default(), span),
    };
    if unread.from_revision <= unread.to_revision {
        let mut steps = Steps::new(store, unread, None);
        while let Some(step) = steps.next_step()? {
            summary.records += 1;
            match &step {
                Step::Grant(g) => count_grant(&mut summary, g),
                Step::Write(w) => count_write(&mut summary, w),
            }
        }
    }
    let seconds = (span.to - span.from).max(1) as f64 / 1_000.0;
    summary.completions_per_sec = summary.completions as f64 / seconds;
    Ok(summary)
}

fn count_grant(summary: &mut Summary, g: &Grant) {
    summary.grants += 1;
    summary
        .by_owner
        .entry(g.owner_id.clone())
        .or_default()
        .grants += 1;
    if g.how == GrantKind::Claim {
        summary.claims += 1;
    }
    if let Some(t) = &g.took_over {
        summary.failovers += 1;
        if summary.failover_steps.len() < LISTED_FAILOVERS {
            summary.failover_steps.push(FailoverStep {
                revision: g.revision,
                at: g.at,
                resource: g.resource_id.clone(),
                from: t.from_owner.clone(),
                to: g.owner_id.clone(),
                generation: g.generation,
                lapsed_ms: t.lapsed_ms,
            });
        }
    }
}

fn count_write(summary: &mut Summary, w: &WriteRecord) {
    summary.writes += 1;
    let owner = summary.by_owner.entry(w.owner_id.clone()).or_default();
    if !w.accepted {
        summary.fenced_writes += 1;
        owner.refused += 1;
        let why = w.refusal.clone().unwrap_or_else(|| "refused".into());
        *summary.refusals.entry(why).or_default() += 1;
        return;
    }
    match w.verb {
        WriteVerb::Complete => {
            summary.completions += 1;
            owner.completions += 1;
        }
        WriteVerb::Fail => summary.failures += 1,
        _ => {}
    }
}

/// One resource as the history left it at a revision.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceAt {
    pub resource: String,
    pub revision: u64,
    /// The owner of the newest grant at or before `revision`, and its generation.
    pub owner: Option<String>,
    pub generation: u64,
    /// Where that grant was made.
    pub granted_at_revision: Option<u64>,
    /// What the newest accepted record at or before `revision` left: `held` (granted,
    /// nothing written since), `renewed`, `completed`, `failed`, `released`, `yielded`,
    /// `cursor`, `transition`, … — the verb of that write.
    pub state: String,
    pub last_change_revision: Option<u64>,
    pub last_change_at: Option<Millis>,
}

impl ResourceAt {
    /// The resource's standing in words: `effect-020 at revision 41: held by a-2 gen 3
    /// (granted at revision 41; last change at revision 41, 03:10:07)`; instants written
    /// by `when`.
    #[must_use]
    pub fn line(&self, clip: Clip<'_>, when: &dyn Fn(Millis) -> String) -> String {
        let revision = |r: Option<u64>| r.map_or_else(|| "-".into(), |r| r.to_string());
        format!(
            "{} at revision {}: {} by {} gen {} (granted at revision {}; last change at revision {}, {})",
            clip(&self.resource, 48),
            self.revision,
            self.state,
            self.owner
                .as_deref()
                .map_or_else(|| "nobody".into(), |o| clip(o, 32)),
            self.generation,
            revision(self.granted_at_revision),
            revision(self.last_change_revision),
            self.last_change_at.map_or_else(|| "-".into(), when),
        )
    }
}

/// `resource` as of `revision`, from its own history (an index range of its rows).
///
/// # Errors
/// `NOT_FOUND` when the history holds nothing of `resource` at or before `revision`; a
/// store failure.
pub fn resource_at(store: &Store, resource: &str, revision: u64) -> Result<ResourceAt> {
    let whole = Span {
        from_revision: 0,
        to_revision: revision,
        from: 0,
        to: Millis::MAX,
    };
    let mut steps = Steps::new(store, whole, Some(resource));
    let mut at = ResourceAt {
        resource: resource.to_owned(),
        revision,
        owner: None,
        generation: 0,
        granted_at_revision: None,
        state: String::new(),
        last_change_revision: None,
        last_change_at: None,
    };
    while let Some(step) = steps.next_step()? {
        match &step {
            Step::Grant(g) => {
                at.owner = Some(g.owner_id.clone());
                at.generation = g.generation;
                at.granted_at_revision = Some(g.revision);
                at.state = "held".into();
            }
            Step::Write(w) if w.accepted => at.state = state_after(w.verb).into(),
            Step::Write(_) => continue,
        }
        at.last_change_revision = Some(step.revision());
        at.last_change_at = Some(step.at());
    }
    if at.last_change_revision.is_none() {
        return Err(Error::NotFound {
            what: "history of resource".into(),
            id: resource.into(),
        });
    }
    Ok(at)
}

/// The state an accepted write leaves its resource in.
fn state_after(verb: WriteVerb) -> &'static str {
    match verb {
        WriteVerb::Renew | WriteVerb::Checkpoint => "held",
        WriteVerb::Release => "released",
        WriteVerb::Handoff => "handed-off",
        WriteVerb::Complete => "completed",
        WriteVerb::Fail => "failed",
        WriteVerb::Yield => "yielded",
        WriteVerb::Cursor => "cursor-advanced",
        WriteVerb::ActionOutcome => "action-recorded",
        WriteVerb::Transition => "transitioned",
        WriteVerb::Requeue => "requeued",
        WriteVerb::Discard => "discarded",
        WriteVerb::ForceRelease => "force-released",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 2026-11-30T14:03:02.800Z.
    const NOW: Millis = 1_796_047_382_800;

    #[test]
    fn windows_read_as_typed_and_refuse_running_backwards() {
        let read = |from: &str, to: &str| parse_window(from, to, NOW, Zone::Utc);
        assert_eq!(
            read(DEFAULT_FROM, DEFAULT_TO).ok(),
            Some((NOW - 15 * 60_000, NOW))
        );
        assert_eq!(
            read("14:00", "14:01").ok(),
            Some((1_796_047_200_000, 1_796_047_260_000))
        );
        let backwards = read("now", "1h").err().map(|e| e.to_string());
        assert!(
            backwards.is_some_and(|e| e.contains("ends before it starts")),
            "a window may not end before it starts"
        );
        assert!(read("yesterday", "now").is_err());
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod span_tests {
    use std::sync::Arc;

    use super::*;
    use crate::clock::ManualClock;
    use crate::ids::SeededIds;
    use crate::model::work::NewWork;
    use crate::store::memory::MemoryBackend;

    /// 2026-01-01T00:00:00Z.
    const T0: Millis = 1_767_225_600_000;
    const KEY: &str = "c0ffee00";

    /// A store whose clock the test moves, and a way to make one claim (a grant record in
    /// a revision of its own) at an instant; returns the claim's revision.
    fn store() -> (Store, ManualClock) {
        let clock = ManualClock::new(T0);
        let store = Store::new(
            Arc::new(MemoryBackend::new()),
            Arc::new(clock.clone()),
            Arc::new(SeededIds::new(1)),
        );
        (store, clock)
    }

    fn claim_at(store: &Store, clock: &ManualClock, id: &str, at: Millis) -> u64 {
        clock.set(at);
        store
            .enqueue(NewWork::effect(id, "send-email", "{}"), KEY)
            .unwrap();
        store.claim(id, "a-1", KEY, 30_000).unwrap();
        store.revision().unwrap()
    }

    /// Found again as the store grows, a span gains the revisions committed inside the
    /// window and no others, and an edge already found stays put — even when a writer
    /// whose clock is behind commits a record dated inside the window after it.
    #[test]
    fn a_span_found_again_grows_only_at_an_edge_not_yet_reached() {
        let (store, clock) = store();
        let first = claim_at(&store, &clock, "e-1", T0 + 10);
        let mut finder = SpanFinder::default();
        let (from, to) = (T0 + 5, T0 + 100);
        let found = finder.find(&store, from, to).unwrap();
        assert_eq!(found, span(&store, from, to).unwrap());
        assert_eq!(
            (found.to_revision, found.from_revision <= first),
            (first, true)
        );

        let inside = claim_at(&store, &clock, "e-2", T0 + 50);
        let grown = finder.find(&store, from, to).unwrap();
        assert_eq!(grown, span(&store, from, to).unwrap());
        assert_eq!(
            grown.to_revision, inside,
            "a revision inside the window joins it"
        );
        assert_eq!(grown.from_revision, found.from_revision);

        claim_at(&store, &clock, "e-3", T0 + 500);
        let past = finder.find(&store, from, to).unwrap();
        assert_eq!(past, span(&store, from, to).unwrap());
        assert_eq!(
            past.to_revision, inside,
            "a revision after the window does not"
        );

        claim_at(&store, &clock, "e-4", T0 + 60);
        assert_eq!(
            finder.find(&store, from, to).unwrap(),
            past,
            "the end was found among committed revisions: it stands"
        );

        let other = finder.find(&store, T0 + 40, T0 + 45).unwrap();
        assert_eq!(other, span(&store, T0 + 40, T0 + 45).unwrap());
        assert!(
            finder.find(&store, to, from).is_err(),
            "a window that runs backwards is refused"
        );
    }
}
