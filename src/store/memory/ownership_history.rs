//! The memory store's ownership history: every grant and every fenced write, keyed by
//! (revision, log sequence), and the two incident indexes (failover grants, refused writes)
//! the dashboard's and `inspect`'s incident lists page through.
//!
//! Why a table of its own: a claim or a completion adds a record per item, so adding one
//! must keep its incident index in step at once, and a rollback must take both out again
//! by key rather than through a closure per record.

use std::collections::BTreeMap;
use std::ops::Bound;

use crate::clock::Millis;
use crate::model::{Grant, HistoryPosition, WriteRecord};

/// The key of a record: (revision, log sequence).
type Key = (u64, u64);

#[derive(Default)]
pub(super) struct OwnershipHistory {
    grants: BTreeMap<Key, Grant>,
    writes: BTreeMap<Key, WriteRecord>,
    /// Position → `grants` key of every failover grant: the failover list's index.
    failover_index: BTreeMap<HistoryPosition, Key>,
    /// Position → `writes` key of every refused write.
    refused_index: BTreeMap<HistoryPosition, Key>,
    log_seq: u64,
}

/// A history record added by a transaction, by its key (and its incident index entry, if
/// it has one): what a rollback takes out again.
pub(super) enum Added {
    Grant(Key, Option<HistoryPosition>),
    Write(Key, Option<HistoryPosition>),
}

impl OwnershipHistory {
    fn next_log_seq(&mut self) -> u64 {
        self.log_seq += 1;
        self.log_seq
    }

    pub(super) fn add_grant(&mut self, grant: Grant) -> Added {
        let seq = self.next_log_seq();
        let key = (grant.revision, seq);
        let position = (grant.took_over.is_some()).then_some(HistoryPosition { at: grant.at, seq });
        if let Some(position) = position {
            self.failover_index.insert(position, key);
        }
        self.grants.insert(key, grant);
        Added::Grant(key, position)
    }

    pub(super) fn add_write(&mut self, write: WriteRecord) -> Added {
        let seq = self.next_log_seq();
        let key = (write.revision, seq);
        let position = (!write.accepted).then_some(HistoryPosition { at: write.at, seq });
        if let Some(position) = position {
            self.refused_index.insert(position, key);
        }
        self.writes.insert(key, write);
        Added::Write(key, position)
    }

    /// Takes an added record out again, with its incident index entry.
    pub(super) fn forget(&mut self, added: Added) {
        match added {
            Added::Grant(key, position) => {
                self.grants.remove(&key);
                if let Some(p) = position {
                    self.failover_index.remove(&p);
                }
            }
            Added::Write(key, position) => {
                self.writes.remove(&key);
                if let Some(p) = position {
                    self.refused_index.remove(&p);
                }
            }
        }
    }

    /// Grants of `resource` (or of every resource) with a revision in `after + 1 ..=
    /// through`, paged as [`history_page`] says.
    pub(super) fn grants(
        &self,
        resource: Option<&str>,
        (after, through): (u64, u64),
        limit: usize,
    ) -> Vec<Grant> {
        history_page(&self.grants, (after, through), limit, |g| {
            resource.is_none_or(|r| g.resource_id == r)
        })
    }

    /// Writes of `resource` (or of every resource) with a revision above `after`.
    pub(super) fn writes(
        &self,
        resource: Option<&str>,
        after: u64,
        limit: usize,
    ) -> Vec<WriteRecord> {
        history_page(&self.writes, (after, u64::MAX), limit, |w| {
            resource.is_none_or(|r| w.resource_id == r)
        })
    }

    /// How many records the history holds.
    pub(super) fn len(&self) -> u64 {
        (self.grants.len() + self.writes.len()) as u64
    }

    /// The highest revision a record carries (0 with none).
    pub(super) fn high_revision(&self) -> u64 {
        let last = |keys: Option<&Key>| keys.map_or(0, |k| k.0);
        last(self.grants.keys().next_back()).max(last(self.writes.keys().next_back()))
    }

    /// The newest `limit` grants of `resource`, newest first.
    pub(super) fn latest_grants(&self, resource: &str, limit: usize) -> Vec<Grant> {
        (self.grants.values())
            .rev()
            .filter(|g| g.resource_id == resource)
            .take(limit)
            .cloned()
            .collect()
    }

    /// Drops the records below revision `keep_from_revision`, except failovers and refused
    /// writes made at or after `keep_incidents_since`. Not undone on rollback: it only drops
    /// rows older than retention.
    pub(super) fn trim(&mut self, keep_from_revision: u64, keep_incidents_since: Millis) {
        let recent = |p: &HistoryPosition| p.at >= keep_incidents_since;
        trim_rows(
            &mut self.grants,
            &mut self.failover_index,
            keep_from_revision,
            |g: &Grant, seq| {
                g.took_over
                    .is_some()
                    .then_some(HistoryPosition { at: g.at, seq })
            },
            recent,
        );
        trim_rows(
            &mut self.writes,
            &mut self.refused_index,
            keep_from_revision,
            |w: &WriteRecord, seq| (!w.accepted).then_some(HistoryPosition { at: w.at, seq }),
            recent,
        );
    }

    pub(super) fn failovers(
        &self,
        since: Millis,
        before: Option<HistoryPosition>,
        limit: usize,
    ) -> Vec<(HistoryPosition, Grant)> {
        incident_page(&self.failover_index, &self.grants, since, before, limit)
    }

    pub(super) fn count_failovers(&self, since: Millis) -> u64 {
        let from = HistoryPosition { at: since, seq: 0 };
        self.failover_index.range(from..).count() as u64
    }

    pub(super) fn refused_writes(
        &self,
        since: Millis,
        before: Option<HistoryPosition>,
        limit: usize,
    ) -> Vec<(HistoryPosition, WriteRecord)> {
        incident_page(&self.refused_index, &self.writes, since, before, limit)
    }

    pub(super) fn count_refused_writes(&self, since: Millis) -> u64 {
        let from = HistoryPosition { at: since, seq: 0 };
        self.refused_index.range(from..).count() as u64
    }
}

/// A page of the checker's history (grants or writes): the first `limit` rows above
/// revision `after` that `keep` accepts, extended to the end of the last revision reached
/// (see [`crate::store::backend::Tx::grants`]).
fn history_page<V: Clone>(
    map: &BTreeMap<Key, V>,
    (after, through): (u64, u64),
    limit: usize,
    keep: impl Fn(&V) -> bool,
) -> Vec<V> {
    let mut rows = Vec::new();
    let Some(start) = after.checked_add(1).filter(|s| *s <= through) else {
        return rows;
    };
    let mut last = None;
    for (&(revision, _), row) in map.range((start, 0)..=(through, u64::MAX)) {
        if rows.len() >= limit && last != Some(revision) {
            break;
        }
        if keep(row) {
            rows.push(row.clone());
            last = Some(revision);
        }
    }
    rows
}

/// Rows of `rows` listed in `index` at or after `since` and strictly before `before`,
/// newest first: an incident page (see [`crate::store::backend::Tx::failovers`]).
fn incident_page<V: Clone>(
    index: &BTreeMap<HistoryPosition, Key>,
    rows: &BTreeMap<Key, V>,
    since: Millis,
    before: Option<HistoryPosition>,
    limit: usize,
) -> Vec<(HistoryPosition, V)> {
    let lower = Bound::Included(HistoryPosition { at: since, seq: 0 });
    let upper = before.map_or(Bound::Unbounded, Bound::Excluded);
    index
        .range((lower, upper))
        .rev()
        .filter_map(|(position, key)| rows.get(key).map(|row| (*position, row.clone())))
        .take(limit)
        .collect()
}

/// Drops the rows of `rows` below revision `keep_from` except those `kept` says to keep,
/// and their `index` entries (see [`crate::store::backend::Tx::trim_history`]).
fn trim_rows<V>(
    rows: &mut BTreeMap<Key, V>,
    index: &mut BTreeMap<HistoryPosition, Key>,
    keep_from: u64,
    position: impl Fn(&V, u64) -> Option<HistoryPosition>,
    kept: impl Fn(&HistoryPosition) -> bool,
) {
    let newer = rows.split_off(&(keep_from, 0));
    for (key, row) in std::mem::replace(rows, newer) {
        match position(&row, key.1) {
            Some(p) if kept(&p) => {
                rows.insert(key, row);
            }
            Some(p) => {
                index.remove(&p);
            }
            None => {}
        }
    }
}
