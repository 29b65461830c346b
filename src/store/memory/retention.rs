//! What retention may remove from the memory store: the keys of the oldest rows past their
//! period, chosen here and removed (undoably, like every write) by the transaction.

use std::collections::BTreeMap;

use super::State;
use crate::clock::Millis;
use crate::model::work::WorkState;
use crate::model::{AttemptError, WorkItem};

impl State {
    /// Succeeded work items last updated before `before`, oldest first, at most `limit`.
    /// A scan, not an index: an index of succeeded items would cost every completion a
    /// write (measured: a few per cent of the drain), where this costs one read of the rows
    /// per trim interval.
    pub(super) fn succeeded_before(&self, before: Millis, limit: usize) -> Vec<WorkItem> {
        let work = &self.work;
        let ids = oldest(
            work.values()
                .filter(|w| w.state == WorkState::Succeeded && w.updated_at < before)
                .map(|w| (w.updated_at, w.id.clone())),
            limit,
        );
        ids.iter().filter_map(|id| work.get(id).cloned()).collect()
    }

    /// The keys of the oldest `limit` dedup records first seen before `before`: of
    /// `source` when given, else of every source not in `except`.
    pub(super) fn dedup_before(
        &self,
        source: Option<&str>,
        except: &[String],
        before: Millis,
        limit: usize,
    ) -> Vec<(String, String)> {
        let in_scope = |s: &String| source.map_or_else(|| !except.contains(s), |only| s == only);
        oldest(
            self.dedup
                .iter()
                .filter(|((s, _), r)| r.first_seen_at < before && in_scope(s))
                .map(|(k, r)| (r.first_seen_at, k.clone())),
            limit,
        )
    }

    /// The keys of the oldest `limit` keyed answers given before `before`.
    pub(super) fn answers_before(&self, before: Millis, limit: usize) -> Vec<String> {
        oldest(
            self.idempotency
                .values()
                .filter(|a| a.at < before)
                .map(|a| (a.at, a.key.clone())),
            limit,
        )
    }

    /// The keys of an instance's history records and of its action outcome records
    /// (invocation ids `"<instanceId>/…"`): what goes with the instance.
    pub(super) fn instance_records(&self, id: &str) -> (Vec<(String, u64)>, Vec<String>) {
        let positions = (self.history)
            .range((id.to_owned(), 0)..=(id.to_owned(), u64::MAX))
            .map(|(k, _)| k.clone())
            .collect();
        let prefix = format!("{id}/");
        let invocations = (self.outcomes)
            .range(prefix.clone()..)
            .take_while(|(k, _)| k.starts_with(&prefix))
            .map(|(k, _)| k.clone())
            .collect();
        (positions, invocations)
    }

    /// An item's attempt errors, oldest (lowest generation) first: what goes with the item,
    /// and what a new one pushes out beyond the bound.
    pub(super) fn attempt_errors_of(
        &self,
        id: &str,
    ) -> impl DoubleEndedIterator<Item = &AttemptError> {
        (self.attempt_errors)
            .range((id.to_owned(), 0)..=(id.to_owned(), u64::MAX))
            .map(|(_, e)| e)
    }
}

/// The ids of `rows` up to `through`, inclusive: the ingestions or audit entries an age
/// limit reaches (their ids rise with time).
pub(super) fn ids_through<V>(rows: &BTreeMap<i64, V>, through: i64) -> Vec<i64> {
    rows.range(..=through).map(|(k, _)| *k).collect()
}

/// The keys of the `limit` oldest `(instant, key)` rows, oldest first.
fn oldest<K: Ord>(rows: impl Iterator<Item = (Millis, K)>, limit: usize) -> Vec<K> {
    let mut rows: Vec<(Millis, K)> = rows.collect();
    rows.sort();
    rows.truncate(limit);
    rows.into_iter().map(|(_, key)| key).collect()
}
