//! Walking a window's history from a cursor, both ways, a page at a time: the steps at or
//! after a position, the steps before it, and the nearest failover either side. The store
//! pages its history forward only (by revision), so a read *before* a position looks back
//! over a growing range of revisions — one, two, four … — and scans each range forward
//! keeping only the last rows it needs. Memory stays one history page plus the rows
//! asked for, however long the window.

use std::collections::VecDeque;

use serde::Serialize;

use super::{Span, Step, Steps};
use crate::error::Result;
use crate::store::Store;

/// Where one step sits in the history: its revision, and its place among that revision's
/// records (grants first, then writes, each in the order they were added). A committed
/// revision never gains records, so a position names the same step for as long as
/// retention keeps it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StepAt {
    pub revision: u64,
    pub index: u32,
}

impl StepAt {
    /// The first record of `revision`.
    #[must_use]
    pub const fn start_of(revision: u64) -> Self {
        Self { revision, index: 0 }
    }
}

/// Rows read at a time while looking back for a page: the range scanned grows, so a read
/// takes more than the page asks for, but far less than a whole history page.
const BEFORE_PAGE: usize = 32;

/// Revisions the first look back for a failover covers (doubling after each miss).
const FAILOVER_LOOKBACK: u64 = 64;

/// The steps of `span` from revision `from` on, each with its position.
struct Positioned<'a> {
    steps: Steps<'a>,
    at: Option<StepAt>,
}

impl<'a> Positioned<'a> {
    /// From the first record of `from` (not before the window) to `last` (not past it),
    /// reading about `page` rows at a time.
    fn new(store: &'a Store, span: Span, (from, last): (u64, u64), page: usize) -> Self {
        let part = Span {
            from_revision: from.max(span.from_revision),
            to_revision: last.min(span.to_revision),
            ..span
        };
        Self {
            steps: Steps::paged(store, part, None, page),
            at: None,
        }
    }

    fn next_step(&mut self) -> Result<Option<(StepAt, Step)>> {
        let Some(step) = self.steps.next_step()? else {
            return Ok(None);
        };
        let revision = step.revision();
        let at = match self.at {
            Some(prev) if prev.revision == revision => StepAt {
                revision,
                index: prev.index.saturating_add(1),
            },
            _ => StepAt::start_of(revision),
        };
        self.at = Some(at);
        Ok(Some((at, step)))
    }
}

/// At most `n` steps of `span` at or after `at`, in order.
///
/// # Errors
/// A store failure.
pub fn steps_from(store: &Store, span: Span, at: StepAt, n: usize) -> Result<Vec<(StepAt, Step)>> {
    let mut out = Vec::with_capacity(n.min(1_024));
    if n == 0 || at.revision > span.to_revision {
        return Ok(out);
    }
    let mut walk = Positioned::new(store, span, (at.revision, span.to_revision), n);
    while out.len() < n {
        match walk.next_step()? {
            Some((pos, step)) if pos >= at => out.push((pos, step)),
            Some(_) => {}
            None => break,
        }
    }
    Ok(out)
}

/// The last `n` (at most) steps of `span` strictly before `at`, in order.
///
/// # Errors
/// A store failure.
pub fn steps_before(
    store: &Store,
    span: Span,
    at: StepAt,
    n: usize,
) -> Result<Vec<(StepAt, Step)>> {
    if n == 0 || at <= StepAt::start_of(span.from_revision) {
        return Ok(Vec::new());
    }
    let end = at.min(StepAt {
        revision: span.to_revision,
        index: u32::MAX,
    });
    let mut back = 1u64;
    loop {
        let start = end.revision.saturating_sub(back).max(span.from_revision);
        let mut kept: VecDeque<(StepAt, Step)> = VecDeque::with_capacity(n.min(1_024) + 1);
        let mut walk = Positioned::new(store, span, (start, end.revision), n.max(BEFORE_PAGE));
        while let Some((pos, step)) = walk.next_step()? {
            if pos >= end {
                break;
            }
            kept.push_back((pos, step));
            if kept.len() > n {
                kept.pop_front();
            }
        }
        if kept.len() >= n || start == span.from_revision {
            return Ok(kept.into());
        }
        back = back.saturating_mul(2);
    }
}

/// The first failover of `span` strictly after `after`.
///
/// # Errors
/// A store failure.
pub fn next_failover(store: &Store, span: Span, after: StepAt) -> Result<Option<StepAt>> {
    let mut walk = Positioned::new(store, span, (after.revision, span.to_revision), usize::MAX);
    while let Some((pos, step)) = walk.next_step()? {
        if pos > after && step.is_failover() {
            return Ok(Some(pos));
        }
    }
    Ok(None)
}

/// The last failover of `span` strictly before `before`: looks back over 64 revisions,
/// then twice as many each time nothing was found.
///
/// # Errors
/// A store failure.
pub fn previous_failover(store: &Store, span: Span, before: StepAt) -> Result<Option<StepAt>> {
    let mut end = before.min(StepAt {
        revision: span.to_revision,
        index: u32::MAX,
    });
    let mut back = FAILOVER_LOOKBACK;
    while end > StepAt::start_of(span.from_revision) {
        let start = end.revision.saturating_sub(back).max(span.from_revision);
        let mut found = None;
        let mut walk = Positioned::new(store, span, (start, end.revision), usize::MAX);
        while let Some((pos, step)) = walk.next_step()? {
            if pos >= end {
                break;
            }
            if step.is_failover() {
                found = Some(pos);
            }
        }
        if found.is_some() || start == span.from_revision {
            return Ok(found);
        }
        end = StepAt::start_of(start);
        back = back.saturating_mul(2);
    }
    Ok(None)
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

    /// 2026-01-01T00:00:00Z.
    const T0: i64 = 1_767_225_600_000;
    const KEY: &str = "c0ffee00";

    /// A history with revisions of many records (claim batches), revisions with none
    /// (enqueues), two failovers (a-3 takes two of a-1's lapsed claims: nothing else is
    /// pending) and a refused write.
    fn history() -> (Store, Span) {
        let clock = ManualClock::new(T0);
        let store = Store::new(
            Arc::new(MemoryBackend::new()),
            Arc::new(clock.clone()),
            Arc::new(SeededIds::new(3)),
        );
        for i in 0..8 {
            store
                .enqueue(
                    NewWork::effect(format!("e-{i:02}"), "send-email", "{}"),
                    KEY,
                )
                .unwrap();
        }
        let held = store.claim_batch("a-1", KEY, 5, 1_000).unwrap();
        let done = store.claim_batch("a-2", KEY, 3, 60_000).unwrap();
        for item in &done {
            store
                .complete(&item.id, "a-2", item.generation, None)
                .unwrap();
        }
        clock.advance(2_000);
        let taken = store.claim_batch("a-3", KEY, 2, 60_000).unwrap();
        let late = held.iter().find(|h| h.id == taken[0].id).unwrap();
        assert!(
            store
                .complete(&late.id, "a-1", late.generation, None)
                .is_err()
        );
        for i in 0..40 {
            store
                .enqueue(
                    NewWork::effect(format!("late-{i:02}"), "send-email", "{}"),
                    KEY,
                )
                .unwrap();
        }
        store
            .complete(&taken[0].id, "a-3", taken[0].generation, None)
            .unwrap();
        let span = super::super::span(&store, 0, Millis::MAX).unwrap();
        (store, span)
    }

    use crate::clock::Millis;

    fn all(store: &Store, span: Span) -> Vec<(StepAt, Step)> {
        steps_from(store, span, StepAt::start_of(0), usize::MAX).unwrap()
    }

    #[test]
    fn positions_number_each_revisions_records_from_zero() {
        let (store, span) = history();
        let steps = all(&store, span);
        let mut summary = super::super::Steps::new(&store, span, None);
        for (pos, step) in &steps {
            assert_eq!(Some(step), summary.next_step().unwrap().as_ref());
            assert_eq!(pos.revision, step.revision());
        }
        assert!(
            steps.windows(2).all(|w| w[0].0 < w[1].0),
            "strictly ordered"
        );
        let batch: Vec<u32> = steps
            .iter()
            .filter(|(p, _)| p.revision == steps[0].0.revision)
            .map(|(p, _)| p.index)
            .collect();
        assert_eq!(
            batch,
            [0, 1, 2, 3, 4],
            "a-1's batch of five is one revision"
        );
    }

    #[test]
    fn pages_either_side_of_every_position_match_the_whole_history() {
        let (store, span) = history();
        let steps = all(&store, span);
        let positions: Vec<StepAt> = steps.iter().map(|(p, _)| *p).collect();
        for (i, at) in positions.iter().enumerate() {
            for n in [1, 2, 3, 7, 100] {
                let from = steps_from(&store, span, *at, n).unwrap();
                assert_eq!(
                    from,
                    steps[i..(i + n).min(steps.len())],
                    "from {at:?} n {n}"
                );
                let before = steps_before(&store, span, *at, n).unwrap();
                assert_eq!(before, steps[i.saturating_sub(n)..i], "before {at:?} n {n}");
            }
        }
        let past = StepAt::start_of(span.to_revision + 1);
        let tail = steps_before(&store, span, past, 2).unwrap();
        assert_eq!(
            tail,
            steps[steps.len() - 2..],
            "a page ending past the window"
        );
        assert!(
            steps_before(&store, span, positions[0], 5)
                .unwrap()
                .is_empty()
        );
        assert!(steps_from(&store, span, past, 5).unwrap().is_empty());
    }

    #[test]
    fn failovers_are_found_either_side_as_the_history_lists_them() {
        let (store, span) = history();
        let steps = all(&store, span);
        let failovers: Vec<StepAt> = steps
            .iter()
            .filter(|(_, s)| s.is_failover())
            .map(|(p, _)| *p)
            .collect();
        assert_eq!(failovers.len(), 2, "a-3 took two of a-1's claims");
        for (at, _) in &steps {
            let next = failovers.iter().find(|f| *f > at).copied();
            let prev = failovers.iter().rev().find(|f| *f < at).copied();
            assert_eq!(next_failover(&store, span, *at).unwrap(), next, "{at:?}");
            assert_eq!(
                previous_failover(&store, span, *at).unwrap(),
                prev,
                "{at:?}"
            );
        }
    }

    #[test]
    fn a_narrower_window_bounds_every_walk() {
        let (store, whole) = history();
        let steps = all(&store, whole);
        let first_failover = steps.iter().find(|(_, s)| s.is_failover()).unwrap().0;
        let span = Span {
            from_revision: first_failover.revision,
            ..whole
        };
        let inside = all(&store, span);
        assert_eq!(
            inside[0].0, first_failover,
            "the window starts at the failover's revision"
        );
        assert!(
            steps_before(&store, span, first_failover, 10)
                .unwrap()
                .is_empty()
        );
        assert_eq!(
            previous_failover(&store, span, first_failover).unwrap(),
            None
        );
    }
}
