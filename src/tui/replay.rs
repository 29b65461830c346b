//! What the replay view asks the reader for and what it gets back: a window of the
//! store's durable history, its summary, a page of steps around a cursor, and — after
//! Enter — one resource as the history left it at the cursor's revision. The reader
//! resolves jumps (the next failover, a step off the page) against the store, so the UI
//! thread only ever holds the page on screen ([`crate::ops::replay`] does the walking).

use crate::clock::Millis;
use crate::error::Result;
use crate::ops::replay::{
    self, ResourceAt, Span, SpanFinder, Step, StepAt, Summary, next_failover, previous_failover,
    steps_before, steps_from,
};
use crate::store::Store;

/// Where the cursor should go, from the anchor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Seek {
    /// Stay on the anchor (or the first step at or after it).
    #[default]
    Stay,
    /// One step back or forward.
    PreviousStep,
    NextStep,
    /// The nearest failover before or after.
    PreviousFailover,
    NextFailover,
}

/// The replay view's part of the reader's query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplayQuery {
    /// The window, in store instants (inclusive).
    pub from: Millis,
    pub to: Millis,
    /// The step the cursor was on; `None`: the window's first.
    pub anchor: Option<StepAt>,
    pub seek: Seek,
    /// Steps shown before and from the cursor.
    pub before: usize,
    pub after: usize,
    /// The resource whose standing at the cursor's revision is shown (Enter).
    pub inspect: Option<String>,
}

/// What the reader found for a [`ReplayQuery`].
#[derive(Debug, Clone, PartialEq)]
pub struct ReplayData {
    pub span: Span,
    pub summary: Summary,
    /// The steps around the cursor, in order; the cursor's step is among them.
    pub steps: Vec<(StepAt, Step)>,
    /// The cursor's step; `None` when the window holds no step.
    pub cursor: Option<StepAt>,
    /// Whether the seek found what it looked for (a failover, a step further on).
    pub found: bool,
    /// The inspected resource at the cursor's revision, or why it could not be read.
    pub resource: Option<std::result::Result<ResourceAt, String>>,
}

impl ReplayData {
    /// Where the cursor's step is in [`Self::steps`].
    #[must_use]
    pub fn cursor_index(&self) -> Option<usize> {
        let cursor = self.cursor?;
        self.steps.iter().position(|(at, _)| *at == cursor)
    }
}

/// What a reader keeps between reads of the replay: where the window's span was found, and
/// the last window summarised with its summary. Committed revisions never change, so a
/// window whose revisions are the same has the same summary, and one that grew at its end
/// only needs its new revisions counted: a reader that keeps this searches only the
/// revisions committed since for the span, and re-reads only the page around the cursor
/// at each refresh, not the whole window.
#[derive(Debug, Clone, Default)]
pub struct ReplayCache {
    spans: SpanFinder,
    last: Option<(Span, Summary)>,
}

impl ReplayCache {
    fn summary(&mut self, store: &Store, span: Span) -> Result<Summary> {
        if let Some((seen, summary)) = &self.last
            && *seen == span
        {
            return Ok(summary.clone());
        }
        let known = self.last.as_ref().map(|(seen, summary)| (*seen, summary));
        let summary = replay::summarize_after(store, span, known)?;
        self.last = Some((span, summary.clone()));
        Ok(summary)
    }
}

/// Reads what `query` asks for: the window's span and summary (from `cache` when the
/// window's revisions are the ones it summarised), the cursor after the seek, the page
/// around it and the inspected resource.
///
/// # Errors
/// A store failure (an empty window is no failure).
pub fn read(store: &Store, query: &ReplayQuery, cache: &mut ReplayCache) -> Result<ReplayData> {
    let span = cache.spans.find(store, query.from, query.to)?;
    let summary = cache.summary(store, span)?;
    let anchor = query
        .anchor
        .unwrap_or_else(|| StepAt::start_of(span.from_revision));
    let sought = match query.seek {
        Seek::Stay => None,
        Seek::NextStep => steps_from(store, span, after(anchor), 1)?
            .first()
            .map(|(at, _)| *at),
        Seek::PreviousStep => steps_before(store, span, anchor, 1)?
            .first()
            .map(|(at, _)| *at),
        Seek::NextFailover => next_failover(store, span, anchor)?,
        Seek::PreviousFailover => previous_failover(store, span, anchor)?,
    };
    let found = query.seek == Seek::Stay || sought.is_some();
    let target = sought.unwrap_or(anchor);
    // The cursor is the first step at or after the target, else the window's last.
    let mut cursor = steps_from(store, span, target, 1)?
        .first()
        .map(|(at, _)| *at);
    if cursor.is_none() {
        cursor = steps_before(store, span, target, 1)?
            .first()
            .map(|(at, _)| *at);
    }
    let steps = match cursor {
        Some(at) => page_around(store, span, at, query.before, query.after)?,
        None => Vec::new(),
    };
    let resource = match (&query.inspect, cursor) {
        (Some(id), Some(at)) => {
            Some(replay::resource_at(store, id, at.revision).map_err(|e| e.to_string()))
        }
        _ => None,
    };
    Ok(ReplayData {
        span,
        summary,
        steps,
        cursor,
        found,
        resource,
    })
}

/// `before` steps before `at` and `after` from it — or, near an end of the window, more
/// on the other side, so the page stays full.
fn page_around(
    store: &Store,
    span: Span,
    at: StepAt,
    before: usize,
    after: usize,
) -> Result<Vec<(StepAt, Step)>> {
    let whole = before + after.max(1);
    let mut steps = steps_before(store, span, at, before)?;
    let from = steps_from(store, span, at, whole - steps.len())?;
    if steps.len() + from.len() < whole && steps.len() == before {
        steps = steps_before(store, span, at, whole - from.len())?;
    }
    steps.extend(from);
    Ok(steps)
}

/// The position just past `at` (the next record of its revision, or the next revision).
fn after(at: StepAt) -> StepAt {
    match at.index.checked_add(1) {
        Some(index) => StepAt { index, ..at },
        None => StepAt::start_of(at.revision.saturating_add(1)),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::clock::ManualClock;
    use crate::ids::SeededIds;
    use crate::model::work::NewWork;
    use crate::store::memory::MemoryBackend;

    const KEY: &str = "c0ffee00";

    #[test]
    fn a_summary_is_kept_while_the_windows_revisions_are_the_same() {
        let clock = ManualClock::new(1_767_225_600_000);
        let store = Store::new(
            Arc::new(MemoryBackend::new()),
            Arc::new(clock.clone()),
            Arc::new(SeededIds::new(1)),
        );
        let claim_by = |id: &str, owner: &str| {
            store
                .enqueue(NewWork::effect(id, "send-email", "{}"), KEY)
                .unwrap();
            store.claim(id, owner, KEY, 30_000).unwrap();
        };
        let claim = |id: &str| claim_by(id, "a-1");
        claim("e-1");
        let query = ReplayQuery {
            from: 0,
            to: Millis::MAX,
            anchor: None,
            seek: Seek::Stay,
            before: 2,
            after: 2,
            inspect: None,
        };
        let mut cache = ReplayCache::default();
        assert_eq!(read(&store, &query, &mut cache).unwrap().summary.claims, 1);
        // The past window's revisions are unchanged by a later read.
        let first = read(&store, &query, &mut cache).unwrap();
        assert_eq!(
            first.summary,
            replay::summarize(&store, first.span).unwrap()
        );
        // A record inside the window moves its last revision: its new revisions are
        // counted on from the summary kept, to the same summary as a fresh pass.
        claim("e-2");
        claim_by("e-3", "a-2");
        let again = read(&store, &query, &mut cache).unwrap();
        assert_eq!(again.summary.claims, 3);
        assert_eq!(again.span.from_revision, first.span.from_revision);
        assert_eq!(
            again.summary,
            replay::summarize(&store, again.span).unwrap()
        );
    }
}
