//! The memory provider: the semantic reference. One mutex-guarded state shared by every
//! authority in the process; a write transaction holds the mutex and keeps an undo log so
//! an `Err` rolls back exactly what it touched. Not durable across processes.
//!
//! Here: the state, the provider handle (`MemoryBackend`, the `Backend` seam) and the
//! transaction (`MemTx`). Beside them, each in a file named for it: the transaction's
//! `Tx` methods, one per row access (`tx.rs`); the undo logs (`undo.rs`); the tables whose indexes are kept in step with
//! their rows — work items (`store/work_table.rs`), workflow instances
//! (`instance_table.rs`), schedules (`schedule_table.rs`), leases (`leases.rs`), the event journal (`journal.rs`), the ownership history
//! (`ownership_history.rs`); what retention removes (`retention.rs`); keyset pages over
//! ordered maps (`pages.rs`).

#[macro_use]
mod undo;
mod instance_table;
mod journal;
mod leases;
mod ownership_history;
mod pages;
mod retention;
mod schedule_table;
mod tx;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};

use super::backend::{Backend, StoreKind, Tx};
use super::capability::{Capability, WORK_MODEL};
use super::work_table::WorkTable;
use crate::error::{Error, Result};
use crate::model::event::DedupRecord;
use crate::model::workflow::ActionOutcome;
use crate::model::{AttemptError, InstanceRow, Lease, WorkItem};
use crate::model::{
    AuditEntry, Authority, HandlerPause, HistoryRecord, IdempotentAnswer, Ingestion, RateWindow,
    Subscription, WorkflowDefinitionRow,
};
use instance_table::InstanceTable;
use journal::Journal;
use leases::LeaseTable;
use ownership_history::OwnershipHistory;
use schedule_table::ScheduleTable;
use undo::UndoLogs;

#[derive(Default)]
struct State {
    revision: u64,
    /// Named meta values beside the revision (`store_id`, `store_epoch`).
    meta: BTreeMap<String, i64>,
    counters: BTreeMap<String, i64>,
    /// Leases and the owner index the owner cap counts through.
    leases: LeaseTable,
    /// Work items and their claim indexes.
    work: WorkTable,
    dedup: BTreeMap<(String, String), DedupRecord>,
    journal: Journal,
    ingestions: BTreeMap<i64, Ingestion>,
    subscriptions: BTreeMap<String, Subscription>,
    /// Schedules and the due index polls read.
    schedules: ScheduleTable,
    handler_pauses: BTreeMap<String, HandlerPause>,
    handler_rates: BTreeMap<String, RateWindow>,
    authorities: BTreeMap<String, Authority>,
    idempotency: BTreeMap<String, IdempotentAnswer>,
    audit: BTreeMap<i64, AuditEntry>,
    /// The checker's grants and fenced writes, with their incident indexes.
    ownership: OwnershipHistory,
    /// The chain over that history, by revision (`store/chain.rs`).
    chain: BTreeMap<u64, crate::model::ChainLink>,
    definitions: BTreeMap<String, WorkflowDefinitionRow>,
    instances: InstanceTable,
    start_keys: BTreeMap<String, String>,
    history: BTreeMap<(String, u64), HistoryRecord>,
    outcomes: BTreeMap<String, ActionOutcome>,
    /// Attempt errors by (work id, generation).
    attempt_errors: BTreeMap<(String, u64), AttemptError>,
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
            undo.roll_back(state);
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

    /// Nothing to read back: the store lives in this process's memory, and a transaction
    /// that panicked is refused by every call already.
    fn verify(&self) -> Result<String> {
        drop(self.lock()?);
        Ok("nothing to verify in a memory store: it lives in this process".into())
    }

    fn change_token(&self) -> Result<u64> {
        Ok(self.lock()?.revision)
    }
}

/// One transaction over the state: a write holds the store's mutex for its whole run.
struct MemTx<'a> {
    state: &'a mut State,
    undo: UndoLogs,
    /// Counter changes not yet applied: a transaction adds to a handful of counters many
    /// times, so it sums them here and applies each once (before any read of them).
    counter_deltas: Vec<(String, i64)>,
    revision: Option<u64>,
    writable: bool,
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

    pub(super) fn writable(&self) -> Result<()> {
        if self.writable {
            Ok(())
        } else {
            Err(Error::ReadOnly("write inside a read transaction".into()))
        }
    }

    /// Writes an instance row, undoably: the row it replaces (or none) is put back on
    /// rollback, its runnable index entry with it.
    pub(super) fn put_instance(&mut self, row: InstanceRow) {
        let id = row.instance_id.clone();
        let old = self.state.instances.put(row);
        self.undo
            .steps
            .push(Box::new(move |s: &mut State| s.instances.restore(&id, old)));
    }

    /// Writes a lease, undoably: the lease it replaces (or none) is put back on rollback,
    /// its owner index entry with it.
    pub(super) fn put_lease_row(&mut self, lease: Lease) {
        let resource = lease.resource_id.clone();
        let old = self.state.leases.put(lease);
        self.undo.steps.push(Box::new(move |s: &mut State| {
            s.leases.restore(resource, old);
        }));
    }

    /// Writes a work row, undoably: the row it replaces moves into the undo log.
    pub(super) fn put_work(&mut self, item: Arc<WorkItem>) {
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
}

#[cfg(test)]
mod tests;
