//! The seam between the shared SQL layer and one SQL provider. A provider implements
//! [`Driver`]: a few primitives (run a statement, run a query, send held-back writes) and
//! the methods whose storage is truly its own (counters, leases, work, grants and write
//! records, definitions, instances and their history: PostgreSQL holds their writes back and
//! answers reads by key from what the transaction has seen; SQLite writes through and steers
//! its planner with index hints). Everything else of [`Tx`](crate::store::backend::Tx) is
//! written once over these, in `tx.rs`.

use super::dialect::Dialect;
use super::encode;
use super::lanes;
use super::row::Decode;
use super::value::SqlValue;
use crate::clock::Millis;
use crate::error::{Error, Result};
use crate::model::work::{WorkFilter, WorkLane};
use crate::model::{
    ChainLink, Grant, HistoryRecord, InstanceRow, IntakeCounts, IntakeRow, Lease, PageRequest,
    WorkItem, WorkflowDefinitionRow, WriteRecord,
};

/// One open transaction of a SQL provider.
pub(crate) trait Driver {
    /// The provider's SQL spelling.
    const DIALECT: &'static Dialect;

    /// How errors name the store.
    fn label(&self) -> &str;

    /// Whether this transaction may write.
    fn is_writable(&self) -> bool;

    /// Runs a write statement; the number of rows it changed.
    fn execute(&mut self, sql: &str, params: &[SqlValue]) -> Result<u64>;

    /// Runs a query, decoding each row. Held-back writes are not sent first: a shared method
    /// reading a table with held-back writes calls [`Driver::settle`] itself.
    fn query<T>(&mut self, sql: &str, params: &[SqlValue], decode: Decode<T>) -> Result<Vec<T>>;

    /// Sends every held-back write (PostgreSQL); SQLite writes through.
    fn settle(&mut self) -> Result<()>;

    /// A meta value this transaction already knows (PostgreSQL remembers them in a write
    /// transaction, where only it can change them).
    fn known_meta(&self, key: &str) -> Option<i64>;

    /// Remembers a meta value read or written by this transaction.
    fn remember_meta(&mut self, key: &str, value: i64);

    /// The server this transaction's connection reached (`Tx::connection_server`).
    fn connection_server(&mut self) -> Option<&mut crate::store::backend::ConnectionServer> {
        None
    }

    /// Whether this transaction knows, without a statement, that `read` finds nothing
    /// (PostgreSQL learns it with the write lock, and forgets it when it writes what could
    /// change it); `false` when it does not know.
    fn known_empty(&self, read: KnownEmpty) -> bool {
        let _ = read;
        false
    }

    // --- what each provider stores its own way (the `Tx` methods of the same names)
    fn revision(&mut self) -> Result<u64>;
    fn commit_revision(&mut self) -> Result<u64>;
    fn adjust_counter(&mut self, name: &str, delta: i64) -> Result<()>;
    fn counters(&mut self, prefix: &str) -> Result<Vec<(String, i64)>>;
    fn lease(&mut self, resource: &str) -> Result<Option<Lease>>;
    fn put_lease(&mut self, lease: &Lease) -> Result<()>;
    fn work(&mut self, id: &str) -> Result<Option<WorkItem>>;
    fn prefetch_work(&mut self, ids: &[&str]) -> Result<()>;
    fn insert_work(&mut self, item: &WorkItem) -> Result<bool>;
    fn work_by_key(&mut self, key: &str) -> Result<Option<WorkItem>>;
    fn prefetch_work_keys(&mut self, keys: &[&str]) -> Result<()>;
    fn update_work(&mut self, item: &WorkItem) -> Result<()>;
    fn lane_claimable(
        &mut self,
        compat: &str,
        lane: &WorkLane,
        now: Millis,
        n: usize,
    ) -> Result<Vec<WorkItem>>;
    fn lapsed_claims(&mut self, compat: &str, now: Millis, n: usize) -> Result<Vec<WorkItem>>;

    /// The claim lanes of `compat` (see [`lanes::claim_lanes`]).
    fn claim_lanes(&mut self, compat: &str) -> Result<Vec<WorkLane>>
    where
        Self: Sized,
    {
        lanes::claim_lanes(self, compat)
    }
    fn list_work(&mut self, filter: &WorkFilter, page: &PageRequest) -> Result<Vec<WorkItem>>;
    fn add_grant(&mut self, grant: &Grant) -> Result<()>;
    fn add_write(&mut self, write: &WriteRecord) -> Result<()>;
    /// Writes a chain link; at once by default, where a provider that holds its writes
    /// back sends it with them.
    fn put_link(&mut self, link: &ChainLink) -> Result<()>
    where
        Self: Sized,
    {
        self.execute(Self::DIALECT.upsert(&encode::CHAIN), &encode::link(link)?)
            .map(drop)
    }
    /// The link of `revision` when this transaction knows it without a read (PostgreSQL
    /// reads the chain's head with the write lock).
    fn known_link(&self, revision: u64) -> Option<ChainLink> {
        let _ = revision;
        None
    }
    /// The grants and fenced writes this transaction stamped `revision`, when it keeps
    /// them (PostgreSQL holds them back, SQLite keeps a copy of what it wrote through);
    /// `None`: read them back.
    fn own_history(&self, revision: u64) -> Option<(Vec<Grant>, Vec<WriteRecord>)>;
    fn put_definition(&mut self, def: &WorkflowDefinitionRow) -> Result<()>;
    fn definition(&mut self, workflow_id: &str) -> Result<Option<WorkflowDefinitionRow>>;
    fn instance(&mut self, id: &str) -> Result<Option<InstanceRow>>;
    fn insert_instance(&mut self, row: &InstanceRow) -> Result<()>;
    fn update_instance(&mut self, row: &InstanceRow) -> Result<()>;
    fn add_history(&mut self, record: &HistoryRecord) -> Result<()>;
    fn history(&mut self, instance_id: &str) -> Result<Vec<HistoryRecord>>;

    // --- the intake, which only PostgreSQL has (the `Tx` methods of the same names)
    fn take_intake(&mut self, limit: usize) -> Result<Vec<IntakeRow>> {
        let _ = limit;
        Ok(Vec::new())
    }
    fn refuse_intake(&mut self, row: &IntakeRow, reason: &str, at: Millis) -> Result<()> {
        let _ = (row, reason, at);
        Err(Error::Invalid(format!(
            "{}: this store has no intake",
            self.label()
        )))
    }
    fn intake_counts(&mut self) -> Result<IntakeCounts> {
        Ok(IntakeCounts::default())
    }
}

/// A read [`Driver::known_empty`] may answer.
#[derive(Clone, Copy, Debug)]
pub(crate) enum KnownEmpty {
    /// The paused handlers.
    HandlerPauses,
    /// The unpaused schedules due by this instant.
    SchedulesDueBy(Millis),
    /// The workflow instances waiting to run, of any compat digest.
    RunnableInstances,
}

/// Refuses a write inside a read transaction.
pub(crate) fn writable(writable: bool) -> Result<()> {
    if writable {
        Ok(())
    } else {
        Err(Error::ReadOnly("write inside a read transaction".into()))
    }
}

/// Of the grants and fenced writes a transaction added (in order), those it stamped
/// `revision`: what [`Driver::own_history`] answers for a provider that keeps them.
pub(crate) fn stamped_among(
    added: &(Vec<Grant>, Vec<WriteRecord>),
    revision: u64,
) -> (Vec<Grant>, Vec<WriteRecord>) {
    let (grants, writes) = added;
    (
        grants
            .iter()
            .filter(|g| g.revision == revision)
            .cloned()
            .collect(),
        writes
            .iter()
            .filter(|w| w.revision == revision)
            .cloned()
            .collect(),
    )
}
