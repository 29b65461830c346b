//! The memory provider: the semantic reference. One mutex-guarded state shared by every
//! authority in the process; a write transaction holds the mutex and keeps an undo log so
//! an `Err` rolls back exactly what it touched. Not durable across processes.
//!
//! Longer than 600 lines on purpose: the `impl Tx` below (one method per row access of the
//! seam, about 650 lines) is one block that cannot be split across files, and it reads
//! best as the one place that says what every `Tx` method means with no SQL around it.

mod instance_table;

use std::collections::{BTreeMap, BTreeSet};
use std::ops::Bound;
use std::sync::{Arc, Mutex, MutexGuard};

use super::backend::{Backend, StoreKind, Tx};
use super::capability::{Capability, WORK_MODEL};
use super::work_table::{Replaced, WorkTable};
use crate::clock::Millis;
use crate::error::{Error, Result};
use crate::model::event::DedupRecord;
use crate::model::work::{WorkFilter, WorkLane, WorkState};
use crate::model::workflow::ActionOutcome;
use crate::model::{
    AuditEntry, Authority, Grant, HistoryPosition, HistoryRecord, IdempotentAnswer, Ingestion,
    InstanceRow, JournalEvent, Lease, PageRequest, Schedule, Subscription, WorkItem,
    WorkflowDefinitionRow, WriteRecord,
};
use crate::store::RETENTION;
use instance_table::InstanceTable;

#[derive(Default)]
struct State {
    revision: u64,
    /// Named meta values beside the revision (`store_id`, `store_epoch`).
    meta: BTreeMap<String, i64>,
    counters: BTreeMap<String, i64>,
    leases: BTreeMap<String, Lease>,
    /// (owner, resource) of every lease: the owner-cap count reads one owner's leases,
    /// not all of them.
    lease_owners: BTreeSet<(String, String)>,
    /// Work items and their claim indexes.
    work: WorkTable,
    dedup: BTreeMap<(String, String), DedupRecord>,
    journal: BTreeMap<i64, JournalEvent>,
    journal_seq: i64,
    ingestions: BTreeMap<i64, Ingestion>,
    subscriptions: BTreeMap<String, Subscription>,
    schedules: BTreeMap<String, Schedule>,
    authorities: BTreeMap<String, Authority>,
    idempotency: BTreeMap<String, IdempotentAnswer>,
    audit: BTreeMap<i64, AuditEntry>,
    grants: BTreeMap<(u64, u64), Grant>,
    writes: BTreeMap<(u64, u64), WriteRecord>,
    /// Position → `grants` key of every failover grant: the failover list's index.
    failover_index: BTreeMap<HistoryPosition, (u64, u64)>,
    /// Position → `writes` key of every refused write.
    refused_index: BTreeMap<HistoryPosition, (u64, u64)>,
    log_seq: u64,
    definitions: BTreeMap<String, WorkflowDefinitionRow>,
    instances: InstanceTable,
    start_keys: BTreeMap<String, String>,
    history: BTreeMap<(String, u64), HistoryRecord>,
    outcomes: BTreeMap<String, ActionOutcome>,
}

type Undo = Box<dyn FnOnce(&mut State) + Send>;

/// The undo logs of one write transaction. Work rows are undone on a log of their own:
/// their index entries move back with them, so no index change needs an undo step, and
/// nothing else depends on the order of work rows and other changes.
#[derive(Default)]
struct UndoLogs {
    steps: Vec<Undo>,
    work: Vec<Replaced>,
    /// History records added (each with its incident index entry, if it has one): taken
    /// out again on rollback. Keys, not closures: a claim or completion adds one per item.
    history: Vec<Added>,
}

/// A history record added by a transaction, by its key.
enum Added {
    Grant((u64, u64), Option<HistoryPosition>),
    Write((u64, u64), Option<HistoryPosition>),
}

/// The shared in-memory store. Clones share state.
#[derive(Clone)]
pub struct MemoryBackend {
    state: Arc<Mutex<State>>,
    /// When set, every call fails as `Unavailable`: the cluster's store-outage fault.
    outage: Arc<std::sync::atomic::AtomicBool>,
    /// This store's number in the process, never reused (its identity: an address could
    /// be a dropped store's).
    number: u64,
}

/// Memory stores made in this process so far.
static MADE: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

impl Default for MemoryBackend {
    fn default() -> Self {
        Self {
            state: Arc::default(),
            outage: Arc::default(),
            number: MADE.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
        }
    }
}

impl MemoryBackend {
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Starts or ends a simulated outage.
    pub fn set_outage(&self, down: bool) {
        self.outage.store(down, std::sync::atomic::Ordering::SeqCst);
    }

    fn lock(&self) -> Result<MutexGuard<'_, State>> {
        if self.outage.load(std::sync::atomic::Ordering::SeqCst) {
            return Err(Error::Unavailable(
                "the memory store is in a simulated outage".into(),
            ));
        }
        // A panic inside a transaction left the undo log unapplied; refuse rather than
        // serve half a transaction.
        self.state.lock().map_err(|_| {
            Error::Corrupt("a transaction panicked while holding the memory store".into())
        })
    }
}

impl Backend for MemoryBackend {
    fn kind(&self) -> StoreKind {
        StoreKind::Memory
    }

    fn describe(&self) -> String {
        "memory".into()
    }

    fn identity(&self) -> String {
        format!("memory {}", self.number)
    }

    fn physical_durability(&self) -> bool {
        false
    }

    /// The work model within one process: nothing survives it and nobody outside it sees
    /// the store.
    fn capabilities(&self) -> Vec<Capability> {
        WORK_MODEL.to_vec()
    }

    fn write(&self, f: &mut dyn FnMut(&mut dyn Tx) -> Result<()>) -> Result<()> {
        let mut guard = self.lock()?;
        let mut tx = MemTx::new(&mut guard, true);
        let result = f(&mut tx);
        if result.is_ok() {
            tx.settle_counters(false);
        }
        let MemTx { state, undo, .. } = tx;
        if result.is_err() {
            for step in undo.steps.into_iter().rev() {
                step(state);
            }
            for replaced in undo.work.into_iter().rev() {
                state.work.restore(replaced);
            }
            for added in undo.history {
                match added {
                    Added::Grant(key, position) => {
                        state.grants.remove(&key);
                        if let Some(p) = position {
                            state.failover_index.remove(&p);
                        }
                    }
                    Added::Write(key, position) => {
                        state.writes.remove(&key);
                        if let Some(p) = position {
                            state.refused_index.remove(&p);
                        }
                    }
                }
            }
            return result;
        }
        // What the transaction replaced is freed once the store is unlocked: every other
        // authority waits on the lock, not on the allocator.
        drop(guard);
        drop(undo);
        result
    }

    fn read(&self, f: &mut dyn FnMut(&mut dyn Tx) -> Result<()>) -> Result<()> {
        let mut guard = self.lock()?;
        f(&mut MemTx::new(&mut guard, false))
    }

    fn change_token(&self) -> Result<u64> {
        Ok(self.lock()?.revision)
    }
}

struct MemTx<'a> {
    state: &'a mut State,
    undo: UndoLogs,
    /// Counter changes not yet applied: a transaction adds to a handful of counters many
    /// times, so it sums them here and applies each once (before any read of them).
    counter_deltas: Vec<(String, i64)>,
    revision: Option<u64>,
    writable: bool,
}

/// Puts `value` under `key` in the map chosen by `field`, remembering how to undo it.
macro_rules! put {
    ($tx:expr, $field:ident, $key:expr, $value:expr) => {{
        let key = $key;
        let old = $tx.state.$field.insert(key.clone(), $value);
        $tx.undo.steps.push(Box::new(move |s: &mut State| {
            match old {
                Some(old) => s.$field.insert(key, old),
                None => s.$field.remove(&key),
            };
        }));
    }};
}

/// Removes `key` from `field`, undone on rollback; returns the removed value.
macro_rules! take {
    ($tx:expr, $field:ident, $key:expr) => {{
        let key = $key;
        let old = $tx.state.$field.remove(&key);
        if let Some(value) = old.clone() {
            $tx.undo.steps.push(Box::new(move |s: &mut State| {
                s.$field.insert(key, value);
            }));
        }
        old
    }};
}

/// Removes every key of `keys` from `field` (see `take!`); returns how many keys.
macro_rules! take_all {
    ($tx:expr, $field:ident, $keys:expr) => {{
        let keys = $keys;
        let n = keys.len() as u64;
        for key in keys {
            take!($tx, $field, key);
        }
        n
    }};
}

/// The keys of the `limit` oldest `(instant, key)` rows, oldest first.
fn oldest<K: Ord>(rows: impl Iterator<Item = (Millis, K)>, limit: usize) -> Vec<K> {
    let mut rows: Vec<(Millis, K)> = rows.collect();
    rows.sort();
    rows.truncate(limit);
    rows.into_iter().map(|(_, key)| key).collect()
}

fn page_of<'m, V: Clone + 'm>(
    map: &'m BTreeMap<String, V>,
    page: &PageRequest,
    keep: impl Fn(&V) -> bool,
) -> Vec<V> {
    page_in(
        |bounds| map.range::<str, _>(bounds).map(|(_, v)| v),
        page,
        keep,
    )
}

/// A page of the rows `range` gives for bounds on their keys, in key order.
fn page_in<'m, 'p, V: Clone + 'm, I: DoubleEndedIterator<Item = &'m V>>(
    range: impl FnOnce((Bound<&'p str>, Bound<&'p str>)) -> I,
    page: &'p PageRequest,
    keep: impl Fn(&V) -> bool,
) -> Vec<V> {
    let limit = page.limit.max(1);
    let key = page
        .after
        .as_deref()
        .map_or(Bound::Unbounded, Bound::Excluded);
    if page.backwards {
        let mut rows: Vec<V> = range((Bound::Unbounded, key))
            .rev()
            .filter(|v| keep(v))
            .take(limit)
            .cloned()
            .collect();
        rows.reverse();
        rows
    } else {
        range((key, Bound::Unbounded))
            .filter(|v| keep(v))
            .take(limit)
            .cloned()
            .collect()
    }
}

fn numeric_page<V: Clone>(map: &BTreeMap<i64, V>, page: &PageRequest) -> Vec<V> {
    let limit = page.limit.max(1);
    let key = page.after.as_ref().and_then(|k| k.parse::<i64>().ok());
    if page.backwards {
        let upper = key.map_or(Bound::Unbounded, Bound::Excluded);
        let mut rows: Vec<V> = map
            .range((Bound::Unbounded, upper))
            .rev()
            .take(limit)
            .map(|(_, v)| v.clone())
            .collect();
        rows.reverse();
        rows
    } else {
        let lower = key.map_or(Bound::Unbounded, Bound::Excluded);
        map.range((lower, Bound::Unbounded))
            .take(limit)
            .map(|(_, v)| v.clone())
            .collect()
    }
}

/// A page of the checker's history (grants or writes): the first `limit` rows above
/// revision `after` that `keep` accepts, extended to the end of the last revision reached
/// (see [`Tx::grants`]).
fn history_page<V: Clone>(
    map: &BTreeMap<(u64, u64), V>,
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
/// newest first: an incident page (see [`Tx::failovers`]).
fn incident_page<V: Clone>(
    index: &BTreeMap<HistoryPosition, (u64, u64)>,
    rows: &BTreeMap<(u64, u64), V>,
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
/// and their `index` entries (see [`Tx::trim_history`]).
fn trim_rows<V>(
    rows: &mut BTreeMap<(u64, u64), V>,
    index: &mut BTreeMap<HistoryPosition, (u64, u64)>,
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

impl<'a> MemTx<'a> {
    fn new(state: &'a mut State, writable: bool) -> Self {
        Self {
            state,
            undo: UndoLogs::default(),
            counter_deltas: Vec::new(),
            revision: None,
            writable,
        }
    }

    fn writable(&self) -> Result<()> {
        if self.writable {
            Ok(())
        } else {
            Err(Error::ReadOnly("write inside a read transaction".into()))
        }
    }

    /// Writes an instance row, undoably: the row it replaces (or none) is put back on
    /// rollback, its runnable index entry with it.
    fn put_instance(&mut self, row: InstanceRow) {
        let id = row.instance_id.clone();
        let old = self.state.instances.put(row);
        self.undo
            .steps
            .push(Box::new(move |s: &mut State| s.instances.restore(&id, old)));
    }

    /// Writes a work row, undoably: the row it replaces moves into the undo log.
    fn put_work(&mut self, item: Arc<WorkItem>) {
        let replaced = self.state.work.put(item);
        self.undo.work.push(replaced);
    }

    /// Applies the summed counter changes, undoably when `undoable` (a read of the counters
    /// inside the transaction; at its end the changes are final).
    fn settle_counters(&mut self, undoable: bool) {
        for (name, delta) in std::mem::take(&mut self.counter_deltas) {
            let value = self.state.counters.get(&name).copied().unwrap_or(0) + delta;
            if undoable {
                put!(self, counters, name, value);
            } else {
                self.state.counters.insert(name, value);
            }
        }
    }

    fn next_log_seq(&mut self) -> u64 {
        self.state.log_seq += 1;
        self.state.log_seq
    }
}

impl Tx for MemTx<'_> {
    fn revision(&mut self) -> Result<u64> {
        Ok(self.state.revision)
    }

    fn commit_revision(&mut self) -> Result<u64> {
        self.writable()?;
        if let Some(rev) = self.revision {
            return Ok(rev);
        }
        let old = self.state.revision;
        self.state.revision += 1;
        self.undo
            .steps
            .push(Box::new(move |s: &mut State| s.revision = old));
        self.revision = Some(self.state.revision);
        Ok(self.state.revision)
    }

    fn meta_value(&mut self, key: &str) -> Result<Option<i64>> {
        Ok(self.state.meta.get(key).copied())
    }

    fn set_meta_value(&mut self, key: &str, value: i64) -> Result<()> {
        self.writable()?;
        put!(self, meta, key.to_owned(), value);
        Ok(())
    }

    fn raise_generations(&mut self, floor: u64) -> Result<u64> {
        self.writable()?;
        let leases: Vec<Lease> = (self.state.leases.values())
            .filter(|l| l.generation < floor)
            .cloned()
            .collect();
        let items: Vec<WorkItem> = (self.state.work.values())
            .filter(|w| w.generation < floor)
            .cloned()
            .collect();
        let raised = (leases.len() + items.len()) as u64;
        for lease in leases {
            put!(
                self,
                leases,
                lease.resource_id.clone(),
                Lease {
                    generation: floor,
                    ..lease
                }
            );
        }
        for item in items {
            self.put_work(Arc::new(WorkItem {
                generation: floor,
                ..item
            }));
        }
        Ok(raised)
    }

    fn adjust_counter(&mut self, name: &str, delta: i64) -> Result<()> {
        self.writable()?;
        match self.counter_deltas.iter_mut().find(|(n, _)| n == name) {
            Some((_, sum)) => *sum += delta,
            None => self.counter_deltas.push((name.to_owned(), delta)),
        }
        Ok(())
    }

    fn counters(&mut self, prefix: &str) -> Result<Vec<(String, i64)>> {
        self.settle_counters(true);
        Ok(self
            .state
            .counters
            .range(prefix.to_owned()..)
            .take_while(|(k, _)| k.starts_with(prefix))
            .map(|(k, v)| (k.clone(), *v))
            .collect())
    }

    fn lease(&mut self, resource: &str) -> Result<Option<Lease>> {
        Ok(self.state.leases.get(resource).cloned())
    }

    fn put_lease(&mut self, lease: &Lease) -> Result<()> {
        let key = (lease.owner_id.clone(), lease.resource_id.clone());
        let previous = self
            .state
            .leases
            .get(&lease.resource_id)
            .map(|old| (old.owner_id.clone(), old.resource_id.clone()))
            .filter(|old| *old != key);
        if let Some(old) = &previous {
            self.state.lease_owners.remove(old);
        }
        let added = self.state.lease_owners.insert(key.clone());
        self.undo.steps.push(Box::new(move |s: &mut State| {
            if added {
                s.lease_owners.remove(&key);
            }
            if let Some(old) = previous {
                s.lease_owners.insert(old);
            }
        }));
        put!(self, leases, lease.resource_id.clone(), lease.clone());
        Ok(())
    }

    fn live_lease_count(&mut self, owner: &str, now: Millis) -> Result<u64> {
        let leases = &self.state.leases;
        Ok(self
            .state
            .lease_owners
            .range((owner.to_owned(), String::new())..)
            .take_while(|(o, _)| o == owner)
            .filter_map(|(_, resource)| leases.get(resource))
            .filter(|l| l.is_live(now))
            .count() as u64)
    }

    fn claimed_counts(&mut self, owner: &str, now: Millis) -> Result<(u64, u64)> {
        // Through the reclaim index (every claimed item, and lapsed retries), not every
        // item of the store.
        let mut counts = (0, 0);
        for item in self.state.work.reclaimable() {
            if item.state == WorkState::Claimed && item.owner_id.as_deref() == Some(owner) {
                counts.0 += 1;
                counts.1 += u64::from(item.lease_expires_at.is_some_and(|at| at <= now));
            }
        }
        Ok(counts)
    }

    fn list_leases(&mut self, page: &PageRequest) -> Result<Vec<Lease>> {
        Ok(page_of(&self.state.leases, page, |_| true))
    }

    fn work(&mut self, id: &str) -> Result<Option<WorkItem>> {
        Ok(self.state.work.get(id).cloned())
    }

    fn with_work(&mut self, id: &str, f: &mut dyn FnMut(Option<&WorkItem>)) -> Result<()> {
        f(self.state.work.get(id));
        Ok(())
    }

    fn insert_work(&mut self, item: &WorkItem) -> Result<bool> {
        if self.state.work.contains(&item.id) {
            return Ok(false);
        }
        let floor = crate::store::epoch::generation_floor(self)?;
        let floored = crate::store::epoch::floored(item, floor);
        self.put_work(Arc::new(floored.unwrap_or_else(|| item.clone())));
        Ok(true)
    }

    fn update_work(&mut self, item: &Arc<WorkItem>) -> Result<()> {
        self.put_work(item.clone());
        Ok(())
    }

    fn work_by_key(&mut self, key: &str) -> Result<Option<WorkItem>> {
        Ok(self.state.work.holder(key).cloned())
    }

    fn work_keys(
        &mut self,
        after: Option<(&str, &str)>,
        limit: usize,
    ) -> Result<Vec<(String, String)>> {
        Ok(self.state.work.keys_after(after, limit))
    }

    fn claim_lanes(&mut self, compat: &str) -> Result<Vec<WorkLane>> {
        Ok(self.state.work.lanes(compat))
    }

    fn lane_claimable(
        &mut self,
        compat: &str,
        lane: &WorkLane,
        now: Millis,
        limit: usize,
    ) -> Result<Vec<Arc<WorkItem>>> {
        let due = self.state.work.due(compat, lane, now, limit);
        Ok(due.into_iter().cloned().collect())
    }

    fn lapsed_claims(
        &mut self,
        compat: &str,
        now: Millis,
        limit: usize,
    ) -> Result<Vec<Arc<WorkItem>>> {
        let lapsed = self.state.work.lapsed(compat, now, limit);
        Ok(lapsed.into_iter().cloned().collect())
    }

    fn list_work(&mut self, filter: &WorkFilter, page: &PageRequest) -> Result<Vec<WorkItem>> {
        Ok(page_in(
            |bounds| self.state.work.range(bounds),
            page,
            |w| {
                (filter.states.is_empty() || filter.states.contains(&w.state))
                    && filter.kind.is_none_or(|k| w.kind == k)
                    && filter
                        .owner
                        .as_ref()
                        .is_none_or(|o| w.owner_id.as_ref() == Some(o))
                    && (filter.compats.is_empty() || filter.compats.contains(&w.compat))
                    && filter
                        .id_prefix
                        .as_ref()
                        .is_none_or(|p| w.id.starts_with(p.as_str()))
            },
        ))
    }

    fn waiting_lanes(&mut self) -> Result<Vec<(WorkLane, Millis)>> {
        Ok(self.state.work.waiting_lanes())
    }

    fn dedup(&mut self, source: &str, external_id: &str) -> Result<Option<DedupRecord>> {
        Ok(self
            .state
            .dedup
            .get(&(source.to_owned(), external_id.to_owned()))
            .cloned())
    }

    fn put_dedup(&mut self, record: &DedupRecord) -> Result<()> {
        put!(
            self,
            dedup,
            (record.source.clone(), record.external_id.clone()),
            record.clone()
        );
        Ok(())
    }

    fn append_journal(&mut self, event: &JournalEvent) -> Result<i64> {
        let old_seq = self.state.journal_seq;
        self.state.journal_seq += 1;
        let seq = self.state.journal_seq;
        self.undo
            .steps
            .push(Box::new(move |s: &mut State| s.journal_seq = old_seq));
        put!(
            self,
            journal,
            seq,
            JournalEvent {
                seq,
                ..event.clone()
            }
        );
        let floor = seq - RETENTION.journal_events;
        while let Some((&oldest, _)) = self.state.journal.first_key_value() {
            if oldest > floor {
                break;
            }
            if let Some(removed) = self.state.journal.remove(&oldest) {
                self.undo.steps.push(Box::new(move |s: &mut State| {
                    s.journal.insert(oldest, removed);
                }));
            }
        }
        Ok(seq)
    }

    fn journal_after(
        &mut self,
        after: i64,
        event_type: Option<&str>,
        limit: usize,
    ) -> Result<Vec<JournalEvent>> {
        Ok(self
            .state
            .journal
            .range((Bound::Excluded(after), Bound::Unbounded))
            .map(|(_, e)| e)
            .filter(|e| event_type.is_none_or(|t| e.event_type == t))
            .take(limit)
            .cloned()
            .collect())
    }

    fn journal_high_water(&mut self) -> Result<i64> {
        Ok(self.state.journal_seq)
    }

    fn journal_type_high_water(&mut self, event_type: &str) -> Result<i64> {
        Ok(self
            .state
            .journal
            .values()
            .rev()
            .find(|e| e.event_type == event_type)
            .map_or(0, |e| e.seq))
    }

    fn add_ingestion(&mut self, ingestion: &Ingestion) -> Result<()> {
        let id = self
            .state
            .ingestions
            .last_key_value()
            .map_or(1, |(k, _)| k + 1);
        put!(
            self,
            ingestions,
            id,
            Ingestion {
                id,
                ..ingestion.clone()
            }
        );
        Ok(())
    }

    fn list_ingestions(&mut self, page: &PageRequest) -> Result<Vec<Ingestion>> {
        Ok(numeric_page(&self.state.ingestions, page))
    }

    fn subscription(&mut self, id: &str) -> Result<Option<Subscription>> {
        Ok(self.state.subscriptions.get(id).cloned())
    }

    fn put_subscription(&mut self, sub: &Subscription) -> Result<()> {
        put!(
            self,
            subscriptions,
            sub.subscription_id.clone(),
            sub.clone()
        );
        Ok(())
    }

    fn list_subscriptions(&mut self, page: &PageRequest) -> Result<Vec<Subscription>> {
        Ok(page_of(&self.state.subscriptions, page, |_| true))
    }

    fn schedule(&mut self, id: &str) -> Result<Option<Schedule>> {
        Ok(self.state.schedules.get(id).cloned())
    }

    fn put_schedule(&mut self, schedule: &Schedule) -> Result<()> {
        put!(
            self,
            schedules,
            schedule.schedule_id.clone(),
            schedule.clone()
        );
        Ok(())
    }

    fn due_schedules(&mut self, now: Millis, limit: usize) -> Result<Vec<Schedule>> {
        let mut due: Vec<Schedule> = self
            .state
            .schedules
            .values()
            .filter(|s| s.next_due <= now)
            .cloned()
            .collect();
        due.sort_by_key(|s| s.next_due);
        due.truncate(limit);
        Ok(due)
    }

    fn list_schedules(&mut self, page: &PageRequest) -> Result<Vec<Schedule>> {
        Ok(page_of(&self.state.schedules, page, |_| true))
    }

    fn authority(&mut self, id: &str) -> Result<Option<Authority>> {
        Ok(self.state.authorities.get(id).cloned())
    }

    fn put_authority(&mut self, authority: &Authority) -> Result<()> {
        put!(
            self,
            authorities,
            authority.instance_id.clone(),
            authority.clone()
        );
        Ok(())
    }

    fn delete_authority(&mut self, id: &str) -> Result<bool> {
        let Some(old) = self.state.authorities.remove(id) else {
            return Ok(false);
        };
        self.undo.steps.push(Box::new(move |s: &mut State| {
            s.authorities.insert(old.instance_id.clone(), old);
        }));
        Ok(true)
    }

    fn list_authorities(&mut self, page: &PageRequest) -> Result<Vec<Authority>> {
        Ok(page_of(&self.state.authorities, page, |_| true))
    }

    fn idempotent_answer(&mut self, key: &str) -> Result<Option<String>> {
        Ok(self.state.idempotency.get(key).map(|a| a.answer.clone()))
    }

    fn put_idempotent_answer(&mut self, key: &str, answer: &str, at: Millis) -> Result<()> {
        put!(
            self,
            idempotency,
            key.to_owned(),
            IdempotentAnswer {
                key: key.to_owned(),
                answer: answer.to_owned(),
                at,
            }
        );
        Ok(())
    }

    fn add_audit(&mut self, entry: &AuditEntry) -> Result<()> {
        let id = self.state.audit.last_key_value().map_or(1, |(k, _)| k + 1);
        put!(
            self,
            audit,
            id,
            AuditEntry {
                id,
                ..entry.clone()
            }
        );
        Ok(())
    }

    fn list_audit(&mut self, page: &PageRequest) -> Result<Vec<AuditEntry>> {
        Ok(numeric_page(&self.state.audit, page))
    }

    fn add_grant(&mut self, grant: Grant) -> Result<()> {
        let seq = self.next_log_seq();
        let key = (grant.revision, seq);
        let position = (grant.took_over.is_some()).then_some(HistoryPosition { at: grant.at, seq });
        if let Some(position) = position {
            self.state.failover_index.insert(position, key);
        }
        self.state.grants.insert(key, grant);
        self.undo.history.push(Added::Grant(key, position));
        Ok(())
    }

    fn add_write(&mut self, write: WriteRecord) -> Result<()> {
        let seq = self.next_log_seq();
        let key = (write.revision, seq);
        let position = (!write.accepted).then_some(HistoryPosition { at: write.at, seq });
        if let Some(position) = position {
            self.state.refused_index.insert(position, key);
        }
        self.state.writes.insert(key, write);
        self.undo.history.push(Added::Write(key, position));
        Ok(())
    }

    fn grants(&mut self, resource: Option<&str>, after: u64, limit: usize) -> Result<Vec<Grant>> {
        Ok(history_page(
            &self.state.grants,
            (after, u64::MAX),
            limit,
            |g| resource.is_none_or(|r| g.resource_id == r),
        ))
    }

    fn grants_through(&mut self, after: u64, through: u64, limit: usize) -> Result<Vec<Grant>> {
        Ok(history_page(
            &self.state.grants,
            (after, through),
            limit,
            |_| true,
        ))
    }

    fn history_records_bound(&mut self) -> Result<u64> {
        Ok((self.state.grants.len() + self.state.writes.len()) as u64)
    }

    fn latest_grants(&mut self, resource: &str, limit: usize) -> Result<Vec<Grant>> {
        Ok(self
            .state
            .grants
            .values()
            .rev()
            .filter(|g| g.resource_id == resource)
            .take(limit)
            .cloned()
            .collect())
    }

    fn writes(
        &mut self,
        resource: Option<&str>,
        after: u64,
        limit: usize,
    ) -> Result<Vec<WriteRecord>> {
        Ok(history_page(
            &self.state.writes,
            (after, u64::MAX),
            limit,
            |w| resource.is_none_or(|r| w.resource_id == r),
        ))
    }

    fn trim_history(
        &mut self,
        keep_from_revision: u64,
        keep_incidents_since: Millis,
    ) -> Result<()> {
        // Trimming is not undone on rollback: it only drops rows older than retention.
        let recent = |p: &HistoryPosition| p.at >= keep_incidents_since;
        let state = &mut *self.state;
        trim_rows(
            &mut state.grants,
            &mut state.failover_index,
            keep_from_revision,
            |g: &Grant, seq| {
                g.took_over
                    .is_some()
                    .then_some(HistoryPosition { at: g.at, seq })
            },
            recent,
        );
        trim_rows(
            &mut state.writes,
            &mut state.refused_index,
            keep_from_revision,
            |w: &WriteRecord, seq| (!w.accepted).then_some(HistoryPosition { at: w.at, seq }),
            recent,
        );
        Ok(())
    }

    fn failovers(
        &mut self,
        since: Millis,
        before: Option<HistoryPosition>,
        limit: usize,
    ) -> Result<Vec<(HistoryPosition, Grant)>> {
        let s = &self.state;
        Ok(incident_page(
            &s.failover_index,
            &s.grants,
            since,
            before,
            limit,
        ))
    }

    fn count_failovers(&mut self, since: Millis) -> Result<u64> {
        let from = HistoryPosition { at: since, seq: 0 };
        Ok(self.state.failover_index.range(from..).count() as u64)
    }

    fn refused_writes(
        &mut self,
        since: Millis,
        before: Option<HistoryPosition>,
        limit: usize,
    ) -> Result<Vec<(HistoryPosition, WriteRecord)>> {
        let s = &self.state;
        Ok(incident_page(
            &s.refused_index,
            &s.writes,
            since,
            before,
            limit,
        ))
    }

    fn count_refused_writes(&mut self, since: Millis) -> Result<u64> {
        let from = HistoryPosition { at: since, seq: 0 };
        Ok(self.state.refused_index.range(from..).count() as u64)
    }

    fn put_definition(&mut self, def: &WorkflowDefinitionRow) -> Result<()> {
        put!(self, definitions, def.workflow_id.clone(), def.clone());
        Ok(())
    }

    fn definition(&mut self, workflow_id: &str) -> Result<Option<WorkflowDefinitionRow>> {
        Ok(self.state.definitions.get(workflow_id).cloned())
    }

    fn list_definitions(&mut self, page: &PageRequest) -> Result<Vec<WorkflowDefinitionRow>> {
        Ok(page_of(&self.state.definitions, page, |_| true))
    }

    fn instance(&mut self, id: &str) -> Result<Option<InstanceRow>> {
        Ok(self.state.instances.get(id).cloned())
    }

    fn instance_by_start_key(&mut self, start_key: &str) -> Result<Option<InstanceRow>> {
        Ok(self
            .state
            .start_keys
            .get(start_key)
            .and_then(|id| self.state.instances.get(id))
            .cloned())
    }

    fn insert_instance(&mut self, row: &InstanceRow) -> Result<()> {
        if let Some(key) = &row.start_key {
            put!(self, start_keys, key.clone(), row.instance_id.clone());
        }
        self.put_instance(row.clone());
        Ok(())
    }

    fn update_instance(&mut self, row: &InstanceRow) -> Result<()> {
        self.put_instance(row.clone());
        Ok(())
    }

    fn runnable_instances(
        &mut self,
        compat: &str,
        now: Millis,
        limit: usize,
    ) -> Result<Vec<InstanceRow>> {
        let runnable = self.state.instances.runnable(compat, now, limit);
        Ok(runnable.into_iter().cloned().collect())
    }

    fn instances_waiting_for(
        &mut self,
        event_type: &str,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<InstanceRow>> {
        let page = PageRequest::resume(after, limit);
        Ok(page_of(self.state.instances.rows(), &page, |i| {
            i.waiting_event.as_deref() == Some(event_type)
        }))
    }

    fn list_instances(
        &mut self,
        status: Option<&str>,
        id_prefix: Option<&str>,
        page: &PageRequest,
    ) -> Result<Vec<InstanceRow>> {
        Ok(page_of(self.state.instances.rows(), page, |i| {
            status.is_none_or(|s| i.status == s)
                && id_prefix.is_none_or(|p| i.instance_id.starts_with(p))
        }))
    }

    fn add_history(&mut self, record: &HistoryRecord) -> Result<()> {
        put!(
            self,
            history,
            (record.instance_id.clone(), record.position),
            record.clone()
        );
        Ok(())
    }

    fn history(&mut self, instance_id: &str) -> Result<Vec<HistoryRecord>> {
        Ok(self
            .state
            .history
            .range((instance_id.to_owned(), 0)..=(instance_id.to_owned(), u64::MAX))
            .map(|(_, r)| r.clone())
            .collect())
    }

    fn action_outcome(&mut self, invocation_id: &str) -> Result<Option<ActionOutcome>> {
        Ok(self.state.outcomes.get(invocation_id).cloned())
    }

    fn put_action_outcome(&mut self, outcome: &ActionOutcome) -> Result<()> {
        put!(
            self,
            outcomes,
            outcome.invocation_id.clone(),
            outcome.clone()
        );
        Ok(())
    }

    fn finished_work(&mut self, before: Millis, limit: usize) -> Result<Vec<WorkItem>> {
        // A scan, not an index: an index of succeeded items would cost every completion a
        // write (measured: a few per cent of the drain), where this costs one read of the
        // rows per trim interval.
        let work = &self.state.work;
        let ids = oldest(
            work.values()
                .filter(|w| w.state == WorkState::Succeeded && w.updated_at < before)
                .map(|w| (w.updated_at, w.id.clone())),
            limit,
        );
        Ok(ids.iter().filter_map(|id| work.get(id).cloned()).collect())
    }

    fn delete_work(&mut self, id: &str) -> Result<()> {
        self.writable()?;
        if let Some(old) = self.state.work.remove(id) {
            self.undo.work.push(Replaced::Row(old));
        }
        Ok(())
    }

    fn finished_instances(&mut self, before: Millis, limit: usize) -> Result<Vec<InstanceRow>> {
        let done = self.state.instances.finished_before(before, limit);
        Ok(done.into_iter().cloned().collect())
    }

    fn delete_instance(&mut self, id: &str) -> Result<()> {
        self.writable()?;
        let Some(row) = self.state.instances.remove(id) else {
            return Ok(());
        };
        let start_key = row.start_key.clone();
        self.undo
            .steps
            .push(Box::new(move |s: &mut State| drop(s.instances.put(row))));
        if let Some(key) = start_key {
            take!(self, start_keys, key);
        }
        let positions: Vec<(String, u64)> = self
            .state
            .history
            .range((id.to_owned(), 0)..=(id.to_owned(), u64::MAX))
            .map(|(k, _)| k.clone())
            .collect();
        take_all!(self, history, positions);
        let prefix = format!("{id}/");
        let invocations: Vec<String> = self
            .state
            .outcomes
            .range(prefix.clone()..)
            .take_while(|(k, _)| k.starts_with(&prefix))
            .map(|(k, _)| k.clone())
            .collect();
        take_all!(self, outcomes, invocations);
        Ok(())
    }

    fn trim_dedup(
        &mut self,
        source: Option<&str>,
        except: &[String],
        before: Millis,
        limit: usize,
    ) -> Result<u64> {
        self.writable()?;
        let in_scope = |s: &String| source.map_or_else(|| !except.contains(s), |only| s == only);
        let keys = oldest(
            self.state
                .dedup
                .iter()
                .filter(|((s, _), r)| r.first_seen_at < before && in_scope(s))
                .map(|(k, r)| (r.first_seen_at, k.clone())),
            limit,
        );
        Ok(take_all!(self, dedup, keys))
    }

    fn trim_idempotent_answers(&mut self, before: Millis, limit: usize) -> Result<u64> {
        self.writable()?;
        let keys = oldest(
            self.state
                .idempotency
                .values()
                .filter(|a| a.at < before)
                .map(|a| (a.at, a.key.clone())),
            limit,
        );
        Ok(take_all!(self, idempotency, keys))
    }

    fn delete_ingestions_through(&mut self, through: i64) -> Result<u64> {
        self.writable()?;
        let ids: Vec<i64> = self
            .state
            .ingestions
            .range(..=through)
            .map(|(k, _)| *k)
            .collect();
        Ok(take_all!(self, ingestions, ids))
    }

    fn delete_audit_through(&mut self, through: i64) -> Result<u64> {
        self.writable()?;
        let ids: Vec<i64> = self
            .state
            .audit
            .range(..=through)
            .map(|(k, _)| *k)
            .collect();
        Ok(take_all!(self, audit, ids))
    }

    fn list_dedup(
        &mut self,
        after: Option<(&str, &str)>,
        limit: usize,
    ) -> Result<Vec<DedupRecord>> {
        let lower = after.map_or(Bound::Unbounded, |(s, e)| {
            Bound::Excluded((s.to_owned(), e.to_owned()))
        });
        Ok(self
            .state
            .dedup
            .range((lower, Bound::Unbounded))
            .take(limit)
            .map(|(_, r)| r.clone())
            .collect())
    }

    fn list_idempotent_answers(
        &mut self,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<IdempotentAnswer>> {
        let page = PageRequest::resume(after, limit);
        Ok(page_of(&self.state.idempotency, &page, |_| true))
    }

    fn list_action_outcomes(
        &mut self,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<ActionOutcome>> {
        let page = PageRequest::resume(after, limit);
        Ok(page_of(&self.state.outcomes, &page, |_| true))
    }

    fn import_journal(&mut self, event: &JournalEvent) -> Result<()> {
        self.writable()?;
        put!(self, journal, event.seq, event.clone());
        Ok(())
    }

    fn import_ingestion(&mut self, ingestion: &Ingestion) -> Result<()> {
        self.writable()?;
        put!(self, ingestions, ingestion.id, ingestion.clone());
        Ok(())
    }

    fn import_audit(&mut self, entry: &AuditEntry) -> Result<()> {
        self.writable()?;
        put!(self, audit, entry.id, entry.clone());
        Ok(())
    }

    fn import_revision(&mut self, revision: u64, journal_high_water: i64) -> Result<()> {
        self.writable()?;
        let old = (self.state.revision, self.state.journal_seq);
        self.state.revision = revision;
        self.state.journal_seq = journal_high_water;
        self.undo.steps.push(Box::new(move |s: &mut State| {
            (s.revision, s.journal_seq) = old;
        }));
        Ok(())
    }
}

#[cfg(test)]
mod tests;
