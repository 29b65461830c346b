//! Claims per second by authority, from the newest claim grants.
//!
//! The history pages by revision, oldest first, so "the grants of the last N revisions,
//! at most M" are the *oldest* M of those revisions: on a busy store they end long before
//! now, and a rate counted from them over the last ten seconds is far too low. Here the
//! look back starts at the newest revisions and widens — 8, 16, 32 … revisions — until the
//! grants read reach back past the window, reach the start of the history, or would pass
//! the row cap. Each widening reads only the revisions it adds. The rate is then counted
//! over the time the grants read really cover.

use std::collections::HashMap;

use crate::clock::Millis;
use crate::error::Result;
use crate::model::{Grant, GrantKind};
use crate::store::Store;

/// Revisions the first look back covers (doubling after each that falls short).
const FIRST_LOOK_BACK: u64 = 8;

/// Claims per second of each authority, over a window ending at one instant.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ClaimRates {
    per_owner: HashMap<String, u64>,
    /// How long the counted claims span, in ms.
    covered_ms: Millis,
}

impl ClaimRates {
    /// Reads the newest grants of `store` (at most about `cap` rows, and never further back
    /// than `max_revisions`) and counts each owner's claims over `window_ms` before `now` —
    /// or, when the grants that fit under `cap` cover less than the window, over the time
    /// they do cover: from the oldest revision read (whose own claims mark the start and
    /// are not counted) to `now`.
    ///
    /// # Errors
    /// A store failure.
    pub fn read(
        store: &Store,
        now: Millis,
        window_ms: Millis,
        cap: usize,
        max_revisions: u64,
    ) -> Result<Self> {
        let start = now.saturating_sub(window_ms);
        // One read transaction: every look back sees the same history.
        let (grants, whole) = store.read(|tx| {
            let top = tx.revision()?;
            let mut back = FIRST_LOOK_BACK.min(max_revisions);
            let mut after = top.saturating_sub(back);
            let mut grants = tx.grants(None, after, cap)?;
            // Even the first look back fills a page: it is what there is to count from.
            if grants.len() >= cap {
                return Ok((grants, false));
            }
            let whole = loop {
                let reaches_back = grants.first().is_some_and(|g| g.at <= start);
                if after == 0 || reaches_back {
                    break true;
                }
                if back >= max_revisions {
                    break false;
                }
                back = back.saturating_mul(2).min(max_revisions);
                let older = top.saturating_sub(back);
                // Only the revisions this look back adds; the newer ones are held. Together
                // they would pass the cap when these alone fill the room left: then the
                // look back before this one is what is counted (or these, when it read
                // nothing).
                let room = cap - grants.len();
                let mut added = tx.grants_through(older, after, room)?;
                if added.len() >= room {
                    if grants.is_empty() {
                        grants = added;
                    }
                    break false;
                }
                added.append(&mut grants);
                grants = added;
                after = older;
            };
            Ok((grants, whole))
        })?;
        Ok(Self::count(&grants, now, window_ms, whole))
    }

    /// Counts `grants` (ascending by revision). `whole`: nothing older is missing from the
    /// window (the grants reach past its start, or the history starts inside it).
    fn count(grants: &[Grant], now: Millis, window_ms: Millis, whole: bool) -> Self {
        let start = now.saturating_sub(window_ms);
        let (from, covered_ms) = match grants.first() {
            Some(_) if whole => (start, window_ms),
            Some(oldest) => (
                oldest.at.max(start),
                now.saturating_sub(oldest.at.max(start)),
            ),
            None => (start, window_ms),
        };
        let first_revision = grants.first().map(|g| g.revision);
        let mut per_owner: HashMap<String, u64> = HashMap::new();
        for g in grants.iter().filter(|g| {
            g.how == GrantKind::Claim
                && g.at > from
                && g.at <= now
                && (whole || Some(g.revision) != first_revision)
        }) {
            *per_owner.entry(g.owner_id.clone()).or_default() += 1;
        }
        Self {
            per_owner,
            covered_ms,
        }
    }

    /// `owner`'s claims per second.
    #[must_use]
    pub fn per_sec(&self, owner: &str) -> f64 {
        let n = self.per_owner.get(owner).copied().unwrap_or(0);
        if self.covered_ms <= 0 {
            return 0.0;
        }
        n as f64 * 1_000.0 / self.covered_ms as f64
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

    /// 2026-01-01T00:00:00Z.
    const T0: Millis = 1_767_225_600_000;
    const KEY: &str = "c0ffee00";

    fn store(clock: &ManualClock) -> Store {
        Store::new(
            Arc::new(MemoryBackend::new()),
            Arc::new(clock.clone()),
            Arc::new(SeededIds::new(1)),
        )
    }

    /// `n` items claimed by `owner` in one batch (one revision) at the clock's instant.
    fn claim_batch(store: &Store, owner: &str, n: usize, tag: &str) {
        let specs = (0..n)
            .map(|i| NewWork::effect(format!("{tag}-{i}"), "send-email", "{}"))
            .collect();
        store.enqueue_batch(specs, KEY).unwrap();
        let got = store.claim_batch(owner, KEY, n, 60_000).unwrap();
        assert_eq!(got.len(), n);
    }

    /// Two authorities claiming steadily, one twice as fast, over a history far longer than
    /// the row cap: the rates are the ones they claim at, not those of the oldest rows.
    #[test]
    fn a_busy_history_gives_the_rate_of_its_newest_claims() {
        let clock = ManualClock::new(T0);
        let store = store(&clock);
        // 60 s of history, a batch every 100 ms: a-1 claims 20 a batch, a-2 10.
        for tick in 0..600 {
            clock.set(T0 + tick * 100);
            claim_batch(&store, "a-1", 20, &format!("x{tick}"));
            claim_batch(&store, "a-2", 10, &format!("y{tick}"));
        }
        let now = T0 + 599 * 100;
        // The cap holds less than the window (10 s is 3,000 grants).
        let rates = ClaimRates::read(&store, now, 10_000, 1_024, 512).unwrap();
        let (a1, a2) = (rates.per_sec("a-1"), rates.per_sec("a-2"));
        assert!(
            (a1 - 200.0).abs() < 200.0 * 0.1,
            "a-1 claims 200/s, read {a1}"
        );
        assert!(
            (a2 - 100.0).abs() < 100.0 * 0.1,
            "a-2 claims 100/s, read {a2}"
        );
        assert!(rates.per_sec("a-3").abs() < f64::EPSILON);

        // With room for the whole window, exactly the claims in it.
        let all = ClaimRates::read(&store, now, 10_000, 100_000, 1_024).unwrap();
        assert!((all.per_sec("a-1") - 200.0).abs() < 1e-9, "{all:?}");
        assert!((all.per_sec("a-2") - 100.0).abs() < 1e-9, "{all:?}");
    }

    /// The look back as first written: each widening re-reads every revision from its
    /// start. Reading only the revisions each widening adds must count exactly the same.
    fn rereading(store: &Store, now: Millis, window_ms: Millis, cap: usize) -> ClaimRates {
        let start = now.saturating_sub(window_ms);
        let top = store.revision().unwrap();
        let mut grants: Vec<Grant> = Vec::new();
        let mut back = FIRST_LOOK_BACK;
        let whole = loop {
            let after = top.saturating_sub(back);
            let page = store.ownership_history(None, after, cap).unwrap().0;
            if page.len() >= cap {
                if grants.is_empty() {
                    grants = page;
                }
                break false;
            }
            grants = page;
            if after == 0 || grants.first().is_some_and(|g| g.at <= start) {
                break true;
            }
            if back >= 512 {
                break false;
            }
            back = (back * 2).min(512);
        };
        ClaimRates::count(&grants, now, window_ms, whole)
    }

    /// Batches of uneven sizes (one larger than the cap), idle revisions between them, and
    /// every cap from tiny to roomy: the incremental look back counts what re-reading did.
    #[test]
    fn each_widening_reads_only_its_own_revisions_and_counts_the_same() {
        let clock = ManualClock::new(T0);
        let store = store(&clock);
        for (tick, n) in (0..120_i64).zip([1, 7, 30, 3, 90, 12].into_iter().cycle()) {
            clock.set(T0 + tick * 250);
            claim_batch(
                &store,
                if tick % 3 == 0 { "a-2" } else { "a-1" },
                n,
                &format!("t{tick}"),
            );
            if tick % 4 == 0 {
                store
                    .enqueue(
                        NewWork::effect(format!("idle-{tick}"), "send-email", "{}"),
                        KEY,
                    )
                    .unwrap();
            }
        }
        let end = T0 + 119 * 250;
        // Caps that a look back's rows meet exactly (the rows of the newest revisions, one
        // revision more at a time), where "at the cap" and "under it" part.
        let history = store.ownership_history(None, 0, 100_000).unwrap().0;
        let mut exact: Vec<usize> = (1..=history.len())
            .filter(|&n| {
                let from_top = &history[history.len() - n..];
                n == history.len()
                    || history[history.len() - n - 1].revision != from_top[0].revision
            })
            .take(24)
            .collect();
        exact.extend([1, 5, 40, 89, 200, 1_024, 100_000]);
        for cap in exact {
            for (now, window) in [
                (end, 10_000),
                (end, 2_000),
                (end + 60_000, 10_000),
                (T0 + 5_000, 10_000),
            ] {
                assert_eq!(
                    ClaimRates::read(&store, now, window, cap, 512).unwrap(),
                    rereading(&store, now, window, cap),
                    "cap {cap}, now {now}, window {window}"
                );
            }
        }
    }

    /// A quiet store: the look back widens past many revisions to find the window's
    /// claims, and a history that starts inside the window is counted over the window.
    #[test]
    fn a_quiet_history_is_counted_over_the_whole_window() {
        let clock = ManualClock::new(T0);
        let store = store(&clock);
        claim_batch(&store, "a-1", 5, "old");
        clock.set(T0 + 30_000);
        claim_batch(&store, "a-1", 4, "new");
        for i in 0..40 {
            clock.set(T0 + 35_000 + i);
            store
                .enqueue(
                    NewWork::effect(format!("idle-{i}"), "send-email", "{}"),
                    KEY,
                )
                .unwrap();
        }
        let now = T0 + 36_000;
        let rates = ClaimRates::read(&store, now, 10_000, 1_024, 512).unwrap();
        assert!((rates.per_sec("a-1") - 0.4).abs() < 1e-9, "{rates:?}");

        let young = ClaimRates::read(&store, T0 + 1_000, 10_000, 1_024, 512).unwrap();
        assert!((young.per_sec("a-1") - 0.5).abs() < 1e-9, "{young:?}");
        let empty = ClaimRates::read(&self::store(&clock), now, 10_000, 1_024, 512).unwrap();
        assert!(empty.per_sec("a-1").abs() < f64::EPSILON);
    }
}
