//! The memory store's work table: the rows by id and the three claim indexes, kept in step
//! by the one method that writes a row. The indexes are keyed like the SQL providers'
//! `work_lane`, `work_lane_waiting` and `work_reclaim`: the claim order of each (compat,
//! kind, handler) lane's unclaimed items, the waiting items of each (kind, handler) lane by
//! when they became eligible, and the claims of each compat by lease expiry. Lanes are found
//! by a skip-scan (one range seek per lane), as the SQL providers find them.
//!
//! Why it is shaped this way: every claim and every completion moves an item's index
//! entries, and this is the memory store's hottest code. Each lane, waiting lane and compat
//! is interned as a small number when its first item arrives (numbers are never reused; a
//! lane that empties costs one seek that finds nothing), and a row keeps its numbers, since
//! an item's compat, kind and handler never change. So an index key compares numbers
//! before it compares an id, and the id is one shared copy held by the row and its index
//! entries: moving an entry copies no text and looks nothing up.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet};
use std::ops::Bound;
use std::sync::Arc;

use crate::clock::Millis;
use crate::model::work::WorkLane;
use crate::model::{WorkItem, WorkKind, WorkState};

/// (lane, priority descending, due instant, id) of every unclaimed, non-terminal item.
type LaneKey = (u32, Reverse<i32>, Millis, Arc<str>);
/// (number, instant, id): a waiting item by its waiting lane and `nextEligibleAt`, or a
/// claim by its compat and lease expiry.
type TimeKey = (u32, Millis, Arc<str>);

/// The interned numbers of an item's lane, waiting lane and compat.
#[derive(Clone, Copy, PartialEq, Eq)]
struct Numbers {
    lane: u32,
    waiting: u32,
    compat: u32,
}

/// One stored item, the shared copy of its id and its interned numbers. The item is
/// shared too: a claim hands the version it stored to the claimer, and a row moves in the
/// tree's nodes and the undo log as a pointer, not as a whole item.
struct Row {
    id: Arc<str>,
    numbers: Numbers,
    item: Arc<WorkItem>,
}

/// What writing a row replaced: the row as it was, or nothing (the id of the row added).
/// Kept in the memory store's undo log; undone with [`WorkTable::restore`].
pub(super) enum Replaced {
    Row(Arc<WorkItem>),
    Nothing(Arc<str>),
}

/// Names numbered in first-seen order; a name keeps its number for the life of the store.
struct Interned<N> {
    numbers: BTreeMap<N, u32>,
}

impl<N> Default for Interned<N> {
    fn default() -> Self {
        Self {
            numbers: BTreeMap::new(),
        }
    }
}

impl<N: Ord> Interned<N> {
    fn intern(&mut self, name: N) -> u32 {
        let next = self.numbers.len() as u32;
        *self.numbers.entry(name).or_insert(next)
    }
}

#[derive(Default)]
pub(super) struct WorkTable {
    rows: BTreeMap<Arc<str>, Row>,
    lanes: Interned<(String, WorkKind, String)>,
    waiting_lanes: Interned<(WorkKind, String)>,
    compats: Interned<String>,
    /// Every unclaimed, non-terminal item in its lane's claim order: the claim index.
    /// Claims are left to `claims_due`, which serves their lapses first.
    claim_order: BTreeSet<LaneKey>,
    /// Every pending / retry item by waiting lane and eligibility: how late each lane runs.
    waiting: BTreeSet<TimeKey>,
    /// Every claimed item by compat and lease expiry, and retries a lapsed claim left
    /// backing off (they keep the lapsed expiry) by when they fall due: lapsed claims are
    /// reclaimed first.
    claims_due: BTreeSet<TimeKey>,
    /// (idempotency key, id) of every item: the key index the insert path asks whether a
    /// key is held (a store copied from an older one may hold a key twice).
    by_key: BTreeSet<(String, Arc<str>)>,
    /// The least id: the lower end of a seek.
    least: Arc<str>,
}

/// The index entries of one item.
struct Keys {
    lane: Option<LaneKey>,
    waiting: Option<TimeKey>,
    claim: Option<TimeKey>,
}

impl Keys {
    const NONE: Self = Self {
        lane: None,
        waiting: None,
        claim: None,
    };

    fn of(item: &WorkItem, numbers: Numbers, id: &Arc<str>) -> Self {
        let reclaim = match item.state {
            WorkState::Claimed => true,
            WorkState::Retry => item.lease_expires_at.is_some(),
            _ => false,
        };
        let waits = matches!(item.state, WorkState::Pending | WorkState::Retry);
        Self {
            lane: (item.due_at())
                .filter(|_| item.state != WorkState::Claimed)
                .map(|due| (numbers.lane, Reverse(item.priority), due, id.clone())),
            waiting: waits.then(|| (numbers.waiting, item.next_eligible_at, id.clone())),
            claim: (reclaim.then(|| item.due_at()).flatten())
                .map(|due| (numbers.compat, due, id.clone())),
        }
    }
}

/// Whether two versions of an item have one compat, kind and handler (its lanes) and one
/// idempotency key (its key index entry).
fn same_identity(a: &WorkItem, b: &WorkItem) -> bool {
    a.kind == b.kind
        && a.compat == b.compat
        && a.handler == b.handler
        && a.idempotency_key == b.idempotency_key
}

/// Moves one entry of `index` from `prev` to `next`.
fn move_key<K: Ord>(index: &mut BTreeSet<K>, prev: Option<K>, next: Option<K>) {
    if prev == next {
        return;
    }
    if let Some(key) = prev {
        index.remove(&key);
    }
    if let Some(key) = next {
        index.insert(key);
    }
}

impl WorkTable {
    pub fn get(&self, id: &str) -> Option<&WorkItem> {
        self.rows.get(id).map(|r| &*r.item)
    }

    /// The shared version of the item `id`.
    fn shared(&self, id: &str) -> Option<&Arc<WorkItem>> {
        self.rows.get(id).map(|r| &r.item)
    }

    pub fn contains(&self, id: &str) -> bool {
        self.rows.contains_key(id)
    }

    /// The rows whose ids lie within `bounds`, in id order.
    pub fn range<'a>(
        &'a self,
        bounds: (Bound<&str>, Bound<&str>),
    ) -> impl DoubleEndedIterator<Item = &'a WorkItem> + use<'a> {
        self.rows.range::<str, _>(bounds).map(|(_, r)| &*r.item)
    }

    pub fn values(&self) -> impl Iterator<Item = &WorkItem> {
        self.rows.values().map(|r| &*r.item)
    }

    /// Writes `item` over the row with its id (or adds it), moving its index entries;
    /// returns what it replaced.
    pub fn put(&mut self, item: Arc<WorkItem>) -> Replaced {
        let Some(row) = self.rows.get_mut(item.id.as_str()) else {
            let id: Arc<str> = Arc::from(item.id.as_str());
            let numbers = self.numbers_of(&item);
            let keys = Keys::of(&item, numbers, &id);
            self.by_key
                .insert((item.idempotency_key.clone(), id.clone()));
            self.rows.insert(
                id.clone(),
                Row {
                    id: id.clone(),
                    numbers,
                    item,
                },
            );
            self.apply(Keys::NONE, keys);
            return Replaced::Nothing(id);
        };
        if !same_identity(&row.item, &item) {
            // An item's identity never changes; were it rewritten, it is filed afresh.
            let id = row.id.clone();
            let old = self.remove(&id);
            self.put(item);
            return old.map_or(Replaced::Nothing(id), Replaced::Row);
        }
        let id = row.id.clone();
        let old = std::mem::replace(&mut row.item, item);
        let prev = Keys::of(&old, row.numbers, &id);
        let next = Keys::of(&row.item, row.numbers, &id);
        self.apply(prev, next);
        Replaced::Row(old)
    }

    /// Removes the row of `id` and its index entries; returns it.
    pub fn remove(&mut self, id: &str) -> Option<Arc<WorkItem>> {
        let row = self.rows.remove(id)?;
        self.apply(Keys::of(&row.item, row.numbers, &row.id), Keys::NONE);
        self.by_key
            .remove(&(row.item.idempotency_key.clone(), row.id.clone()));
        Some(row.item)
    }

    /// The item holding idempotency key `key` (the lowest id, should two hold it).
    pub fn holder(&self, key: &str) -> Option<&WorkItem> {
        (self.by_key.range((key.to_owned(), self.least.clone())..))
            .next()
            .filter(|(k, _)| k == key)
            .and_then(|(_, id)| self.get(id))
    }

    /// `(idempotency key, id)` of the items after `after` in that order, at most `limit`.
    pub fn keys_after(&self, after: Option<(&str, &str)>, limit: usize) -> Vec<(String, String)> {
        let start = match after {
            Some((key, id)) => Bound::Excluded((key.to_owned(), Arc::from(id))),
            None => Bound::Unbounded,
        };
        (self.by_key.range((start, Bound::Unbounded)))
            .take(limit)
            .map(|(key, id)| (key.clone(), id.to_string()))
            .collect()
    }

    /// Undoes a change: puts back the row it replaced, or removes the row it added (index
    /// entries with it).
    pub fn restore(&mut self, replaced: Replaced) {
        match replaced {
            Replaced::Row(item) => drop(self.put(item)),
            Replaced::Nothing(id) => drop(self.remove(&id)),
        }
    }

    fn numbers_of(&mut self, item: &WorkItem) -> Numbers {
        Numbers {
            lane: (self.lanes).intern((item.compat.clone(), item.kind, item.handler.clone())),
            waiting: (self.waiting_lanes).intern((item.kind, item.handler.clone())),
            compat: self.compats.intern(item.compat.clone()),
        }
    }

    fn apply(&mut self, prev: Keys, next: Keys) {
        move_key(&mut self.claim_order, prev.lane, next.lane);
        move_key(&mut self.waiting, prev.waiting, next.waiting);
        move_key(&mut self.claims_due, prev.claim, next.claim);
    }

    /// The claim order of lane number `lane`, from its first item.
    fn lane_order(&self, lane: u32) -> impl Iterator<Item = &LaneKey> {
        let start = (lane, Reverse(i32::MAX), Millis::MIN, self.least.clone());
        (self.claim_order.range(start..)).take_while(move |k| k.0 == lane)
    }

    /// The lanes of `compat` with unclaimed items, in [`WorkLane::sort_key`] order.
    pub fn lanes(&self, compat: &str) -> Vec<WorkLane> {
        let start = (compat.to_owned(), WorkKind::ALL[0], String::new());
        let mut out: Vec<WorkLane> = (self.lanes.numbers.range(start..))
            .take_while(|((c, ..), _)| c == compat)
            .filter(|&(_, &lane)| self.lane_order(lane).next().is_some())
            .map(|((_, kind, handler), _)| WorkLane::new(*kind, handler.clone()))
            .collect();
        out.sort_by(|a, b| a.sort_key().cmp(&b.sort_key()));
        out
    }

    /// `lane`'s unclaimed items of `compat` due by `now`, in claim order, at most `limit`.
    pub fn due(
        &self,
        compat: &str,
        lane: &WorkLane,
        now: Millis,
        limit: usize,
    ) -> Vec<&Arc<WorkItem>> {
        let name = (compat.to_owned(), lane.kind, lane.handler.clone());
        let Some(&number) = self.lanes.numbers.get(&name) else {
            return Vec::new();
        };
        (self.lane_order(number))
            .filter(|k| k.2 <= now)
            .take(limit)
            .filter_map(|k| self.shared(&k.3))
            .collect()
    }

    /// The first `limit` items of `compat` in the reclaim index due by `now`, in due order.
    pub fn lapsed(&self, compat: &str, now: Millis, limit: usize) -> Vec<&Arc<WorkItem>> {
        let Some(&number) = self.compats.numbers.get(compat) else {
            return Vec::new();
        };
        (self
            .claims_due
            .range((number, Millis::MIN, self.least.clone())..))
        .take_while(|k| k.0 == number && k.1 <= now)
        .take(limit)
        .filter_map(|k| self.shared(&k.2))
        .collect()
    }

    /// Every item in the reclaim index: the claimed ones, and lapsed retries.
    pub fn reclaimable(&self) -> impl Iterator<Item = &WorkItem> {
        self.claims_due.iter().filter_map(|k| self.get(&k.2))
    }

    /// How many items of `handler`, of any kind, wait (pending or retry).
    pub fn waiting_count(&self, handler: &str) -> u64 {
        WorkKind::ALL
            .into_iter()
            .filter_map(|kind| self.waiting_lanes.numbers.get(&(kind, handler.to_owned())))
            .map(|&number| {
                (self.waiting)
                    .range((number, Millis::MIN, self.least.clone())..)
                    .take_while(|k| k.0 == number)
                    .count() as u64
            })
            .sum()
    }

    /// Per waiting lane with items, the earliest `nextEligibleAt` of its items.
    pub fn waiting_lanes(&self) -> Vec<(WorkLane, Millis)> {
        let mut out: Vec<(WorkLane, Millis)> = (self.waiting_lanes.numbers.iter())
            .filter_map(|((kind, handler), &number)| {
                let first = (self.waiting)
                    .range((number, Millis::MIN, self.least.clone())..)
                    .next()
                    .filter(|k| k.0 == number)?;
                Some((WorkLane::new(*kind, handler.clone()), first.1))
            })
            .collect();
        out.sort_by(|a, b| a.0.sort_key().cmp(&b.0.sort_key()));
        out
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::model::work::NewWork;

    /// One change to the table: an item written (new or over an existing id) or removed.
    #[derive(Debug, Clone)]
    enum Change {
        Put {
            id: u8,
            compat: u8,
            kind: u8,
            handler: u8,
            state: u8,
            priority: i8,
            eligible: u8,
            expires: Option<u8>,
        },
        Remove(u8),
    }

    fn change() -> impl Strategy<Value = Change> {
        prop_oneof![
            4 => (0..12u8, 0..2u8, 0..3u8, 0..2u8, 0..5u8, -1..2i8, 0..6u8, proptest::option::of(0..6u8))
                .prop_map(|(id, compat, kind, handler, state, priority, eligible, expires)| {
                    Change::Put { id, compat, kind, handler, state, priority, eligible, expires }
                }),
            1 => (0..12u8).prop_map(Change::Remove),
        ]
    }

    fn item(change: &Change) -> Option<WorkItem> {
        let Change::Put {
            id,
            compat,
            kind,
            handler,
            state,
            priority,
            eligible,
            expires,
        } = change
        else {
            return None;
        };
        // Ids of one item keep their identity, as the store's items do, except that an id
        // may come back with another lane: the table files it afresh.
        // Keys repeat across ids (as in a store copied from an older one), and an id may
        // come back under another key.
        let spec = NewWork {
            kind: WorkKind::ALL[usize::from(*kind)],
            priority: i32::from(*priority),
            idempotency_key: Some(format!("k{}", (id + eligible) % 4)),
            ..NewWork::effect(format!("w{id:02}"), format!("h{handler}"), "{}")
        };
        let mut item = WorkItem::new(spec, &format!("c{compat}"), 0);
        item.state = WorkState::ALL[usize::from(*state)];
        item.next_eligible_at = Millis::from(*eligible);
        item.lease_expires_at = expires.map(Millis::from);
        Some(item)
    }

    /// What every index read must answer, worked out from the rows alone.
    fn check_against_rows(table: &WorkTable) {
        let rows: Vec<&WorkItem> = table.values().collect();
        for compat in ["c0", "c1", "c9"] {
            let mut lanes: Vec<WorkLane> = rows
                .iter()
                .filter(|w| w.compat == compat && w.due_at().is_some())
                .filter(|w| w.state != WorkState::Claimed)
                .map(|w| WorkLane::new(w.kind, w.handler.clone()))
                .collect();
            lanes.sort_by(|a, b| a.sort_key().cmp(&b.sort_key()));
            lanes.dedup();
            assert_eq!(table.lanes(compat), lanes, "lanes of {compat}");
            for lane in &lanes {
                for now in [0, 3, 9] {
                    let mut due: Vec<&WorkItem> = (rows.iter().copied())
                        .filter(|w| w.compat == compat && w.kind == lane.kind)
                        .filter(|w| w.handler == lane.handler && w.state != WorkState::Claimed)
                        .filter(|w| w.due_at().is_some_and(|d| d <= now))
                        .collect();
                    due.sort_by_key(|w| (Reverse(w.priority), w.due_at(), w.id.clone()));
                    due.truncate(4);
                    let read: Vec<&WorkItem> = table
                        .due(compat, lane, now, 4)
                        .into_iter()
                        .map(|w| &**w)
                        .collect();
                    assert_eq!(read, due, "due in {lane:?}");
                }
            }
            for now in [0, 3, 9] {
                let mut lapsed: Vec<&WorkItem> = (rows.iter().copied())
                    .filter(|w| w.compat == compat)
                    .filter(|w| {
                        w.state == WorkState::Claimed
                            || (w.state == WorkState::Retry && w.lease_expires_at.is_some())
                    })
                    .filter(|w| w.due_at().is_some_and(|d| d <= now))
                    .collect();
                lapsed.sort_by_key(|w| (w.due_at(), w.id.clone()));
                lapsed.truncate(4);
                let read: Vec<&WorkItem> = table
                    .lapsed(compat, now, 4)
                    .into_iter()
                    .map(|w| &**w)
                    .collect();
                assert_eq!(read, lapsed, "lapsed of {compat}");
            }
        }
        let mut waiting: Vec<(WorkLane, Millis)> = Vec::new();
        for w in &rows {
            if matches!(w.state, WorkState::Pending | WorkState::Retry) {
                let lane = WorkLane::new(w.kind, w.handler.clone());
                match waiting.iter_mut().find(|(l, _)| *l == lane) {
                    Some((_, at)) => *at = (*at).min(w.next_eligible_at),
                    None => waiting.push((lane, w.next_eligible_at)),
                }
            }
        }
        waiting.sort_by(|a, b| a.0.sort_key().cmp(&b.0.sort_key()));
        assert_eq!(table.waiting_lanes(), waiting);
        for (lane, _) in &waiting {
            let handler = lane.handler.as_str();
            let n = (rows.iter())
                .filter(|w| w.handler == handler)
                .filter(|w| matches!(w.state, WorkState::Pending | WorkState::Retry))
                .count() as u64;
            assert_eq!(table.waiting_count(handler), n, "waiting of {handler}");
        }
        let reclaimable = table.reclaimable().count();
        let claims = (rows.iter())
            .filter(|w| {
                w.due_at().is_some()
                    && (w.state == WorkState::Claimed
                        || (w.state == WorkState::Retry && w.lease_expires_at.is_some()))
            })
            .count();
        assert_eq!(reclaimable, claims);
        let mut keys: Vec<(String, String)> = (rows.iter())
            .map(|w| (w.idempotency_key.clone(), w.id.clone()))
            .collect();
        keys.sort();
        assert_eq!(table.keys_after(None, usize::MAX), keys);
        if let Some((key, id)) = keys.first() {
            assert_eq!(table.keys_after(Some((key, id)), usize::MAX), keys[1..]);
        }
        for key in ["k0", "k1", "k2", "k3"] {
            let first = keys
                .iter()
                .find(|(k, _)| k == key)
                .map(|(_, id)| id.as_str());
            assert_eq!(table.holder(key).map(|w| w.id.as_str()), first, "{key}");
        }
    }

    proptest! {
        /// Every index answers what the rows say after any writes, and a rolled-back batch
        /// of writes (restored in reverse, as the store's undo log does) leaves the rows and
        /// every index as they were.
        #[test]
        fn the_indexes_follow_the_rows_and_roll_back_with_them(
            kept in proptest::collection::vec(change(), 0..40),
            undone in proptest::collection::vec(change(), 0..20),
        ) {
            let mut table = WorkTable::default();
            let apply = |table: &mut WorkTable, change: &Change| match (change, item(change)) {
                (_, Some(item)) => Some(table.put(Arc::new(item))),
                (Change::Remove(id), None) => table.remove(&format!("w{id:02}")).map(Replaced::Row),
                (Change::Put { .. }, None) => unreachable!("a put makes an item"),
            };
            for change in &kept {
                apply(&mut table, change);
                check_against_rows(&table);
            }
            let before: Vec<WorkItem> = table.values().cloned().collect();
            let undo: Vec<Replaced> = undone.iter().filter_map(|c| apply(&mut table, c)).collect();
            check_against_rows(&table);
            for replaced in undo.into_iter().rev() {
                table.restore(replaced);
            }
            let after: Vec<WorkItem> = table.values().cloned().collect();
            prop_assert_eq!(after, before);
            check_against_rows(&table);
        }
    }
}
