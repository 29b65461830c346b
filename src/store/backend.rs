//! The provider seam. A provider implements [`Backend`] (open transactions, retry physical
//! contention, commit) and [`Tx`] (typed row access inside one transaction). Everything
//! semantic — fencing, claiming, dedup, revision — is written once in [`super::Store`] on
//! top of these, so every provider enforces the same rules inside its own transaction.
//!
//! Contract for every provider:
//! - a write transaction is serialisable with respect to every other write: rows read in
//!   it cannot change under it before it commits (SQLite `BEGIN IMMEDIATE`, PostgreSQL row
//!   locks via `FOR UPDATE`, memory a mutex);
//! - [`Backend::write`] runs the closure again from scratch after physical contention, at
//!   most a bounded number of times, and reports `Contention` after that — never a
//!   backend error text;
//! - list methods return rows in ascending key order, strictly after (or, backwards,
//!   strictly before) the page cursor, using an index — never a scan of the table.

use std::sync::Arc;

use super::capability::Capability;
use super::history_order::Disorder;
use super::stall::ProcessStall;
use crate::clock::Millis;
use crate::error::{Error, Result};
use crate::model::event::DedupRecord;
use crate::model::work::{WorkFilter, WorkLane};
use crate::model::workflow::ActionOutcome;
use crate::model::{
    AttemptError, AuditEntry, Authority, ChainLink, Grant, HandlerPause, HistoryPosition,
    HistoryRecord, IdempotentAnswer, Ingestion, InstanceRow, IntakeCounts, IntakeRow, JournalEvent,
    Lease, PageRequest, RateWindow, Schedule, Subscription, WorkItem, WorkflowDefinitionRow,
    WriteRecord,
};

/// What kind of store this is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoreKind {
    Memory,
    Sqlite,
    Postgres,
}

impl StoreKind {
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Memory => "memory",
            Self::Sqlite => "sqlite",
            Self::Postgres => "postgres",
        }
    }
}

/// The database server under a store; see [`Backend::server_identity`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ServerIdentity {
    pub system_identifier: i64,
    pub timeline: i64,
}

impl std::fmt::Display for ServerIdentity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "system identifier {} timeline {}",
            self.system_identifier, self.timeline
        )
    }
}

/// What one connection knows of the server it reached (see [`Tx::connection_server`]):
/// its identity, read once when the connection was opened, and whether the store's meta is
/// known to name it (from this connection's first write on, until a transaction rolls
/// back), so a commit on the server the store already names reads and writes nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectionServer {
    pub identity: ServerIdentity,
    pub recorded: bool,
}

/// A provider: transactions over one store.
/// A feed of committed revisions (see [`Backend::commit_feed`]).
pub trait CommitFeed: Send {
    /// Waits up to `within` for commits; answers the newest revision committed meanwhile,
    /// or `None` when there was none.
    ///
    /// # Errors
    /// The feed's session failed: open a new feed (and poll meanwhile).
    fn next_commit(&mut self, within: std::time::Duration) -> Result<Option<u64>>;
}

/// What a write transaction will read first, named before it begins
/// ([`Backend::write_reading`]).
#[derive(Debug, Clone, Copy, Default)]
pub struct WriteReads<'a> {
    /// Work items by id: a batch of completions, a renewal round.
    pub items: &'a [&'a str],
    /// Chain links by revision: the revisions this process's rewind witnesses saw last,
    /// which every write compares the store with (`witness.rs`). With several writers on
    /// one store the newest link is rarely one of them.
    pub links: &'a [u64],
}

pub trait Backend: Send + Sync {
    fn kind(&self) -> StoreKind;

    /// Human description without secrets (a path, a URL with the password removed).
    fn describe(&self) -> String;

    /// Equal for two handles on the same data (one file, one database, one memory state)
    /// and different otherwise: `copy` refuses to copy a store onto itself by it. Defaults
    /// to [`Backend::describe`].
    fn identity(&self) -> String {
        self.describe()
    }

    /// The database server under the store, when the provider can tell: PostgreSQL's
    /// system identifier (shared by a primary and its physical replicas, different for
    /// any other cluster) and current timeline (a new one after each promotion). `None`
    /// when the provider has no server or the role may not read them. Read outside any
    /// transaction.
    fn server_identity(&self) -> Option<ServerIdentity> {
        None
    }

    /// Removes what opening this store created where nothing was (the schema of a new
    /// PostgreSQL store), after a copy into it failed; nothing when the store was there
    /// before, or the provider creates a file the caller removes (SQLite).
    ///
    /// # Errors
    /// A store failure.
    fn discard_created(&self) -> Result<()> {
        Ok(())
    }

    /// Where a rewind witness can be kept beside the store's own files, so every host
    /// judges the store by what its last writer saw (`witness.rs::Witness::beside`);
    /// `None` where the provider has no such place.
    fn witness_beside(&self) -> Option<std::path::PathBuf> {
        None
    }

    /// The server's write-ahead log position in bytes (PostgreSQL's `pg_current_wal_lsn()`),
    /// read outside any transaction: two readings bound what the server wrote between them,
    /// which `leasehold bench` reports per item. `None` where the log is this process's own
    /// files (SQLite, measured from the process's I/O instead) or there is none.
    fn wal_position(&self) -> Option<u64> {
        None
    }

    /// The round trips to the server this handle's committed write transactions took, from
    /// the write lock's statement to the commit's, and how long they held the lock
    /// (`leasehold bench` reports both per commit: each round trip is time the write lock
    /// is held while the server waits for the client).
    /// `None` where a statement is no round trip (the in-process providers).
    fn write_round_trips(&self) -> Option<RoundTrips> {
        None
    }

    /// Whether the store survives the process (false only for memory).
    fn physical_durability(&self) -> bool;

    /// Commits pushed as they happen, on a session of their own, where the provider can
    /// push them (PostgreSQL's `LISTEN`); `None` where readers must poll
    /// [`Backend::change_token`].
    ///
    /// # Errors
    /// The provider can push but the feed could not be opened.
    fn commit_feed(&self) -> Result<Option<Box<dyn CommitFeed>>> {
        Ok(None)
    }

    /// What this provider guarantees: the whole work model, plus
    /// [`Capability::Durable`] exactly when [`Backend::physical_durability`], plus how far
    /// it reaches (other processes, other hosts).
    fn capabilities(&self) -> Vec<Capability>;

    /// Runs `f` in one write transaction and commits it if `f` returns `Ok`; rolls back on
    /// `Err`. May run `f` more than once after physical contention (see module docs).
    ///
    /// # Errors
    /// Whatever `f` returns, or a store failure.
    fn write(&self, f: &mut dyn FnMut(&mut dyn Tx) -> Result<()>) -> Result<()>;

    /// Like [`Self::write`], for the small writes that keep what a process holds alive
    /// (renewals, heartbeats): a provider that queues its writers lets these go first. The
    /// same transaction as [`Self::write`] by default.
    ///
    /// # Errors
    /// As [`Self::write`].
    fn write_urgent(&self, f: &mut dyn FnMut(&mut dyn Tx) -> Result<()>) -> Result<()> {
        self.write(f)
    }

    /// Like [`Self::write`] (or, when `urgent`, [`Self::write_urgent`]), for a write that
    /// reads `reads` first: a provider whose every statement is a round trip reads them
    /// with the write lock instead of after it. The same transaction by default.
    ///
    /// # Errors
    /// As [`Self::write`].
    fn write_reading(
        &self,
        urgent: bool,
        reads: WriteReads<'_>,
        f: &mut dyn FnMut(&mut dyn Tx) -> Result<()>,
    ) -> Result<()> {
        let _ = reads;
        if urgent {
            self.write_urgent(f)
        } else {
            self.write(f)
        }
    }

    /// Runs `f` in one read-only snapshot.
    ///
    /// # Errors
    /// Whatever `f` returns, or a store failure.
    fn read(&self, f: &mut dyn FnMut(&mut dyn Tx) -> Result<()>) -> Result<()>;

    /// Checks the whole store for damage that opening it does not look for, and answers
    /// what was checked, for people. Opening stays cheap (a one-shot writer must not read a
    /// big store end to end); this may read everything, so it runs where that is worth it:
    /// `leasehold store verify`, `init`, `copy`, and beside a starting authority.
    ///
    /// # Errors
    /// `STORE_CORRUPT` on damage, or a store failure.
    fn verify(&self) -> Result<String>;

    /// Writes of any process waiting on this store's write lock right now, as far as the
    /// provider can tell (see `store/stall.rs`); none by default.
    ///
    /// # Errors
    /// A store failure.
    fn write_stalls(&self) -> Result<Vec<ProcessStall>> {
        Ok(Vec::new())
    }

    /// Sizes the provider for `callers` concurrent store calls (an authority's workers plus
    /// its poller and renewer). Only a provider with a connection pool uses it.
    fn fit_concurrency(&self, callers: usize) {
        let _ = callers;
    }

    /// A cheap probe that changes whenever another connection committed (SQLite
    /// `data_version`, a revision read elsewhere). Readers poll it before re-reading.
    ///
    /// # Errors
    /// A store failure.
    fn change_token(&self) -> Result<u64>;
}

/// Typed row access inside one transaction. Write methods are only called inside
/// [`Backend::write`]; the store calls [`Tx::commit_revision`] before its first write (or
/// right after an insert that may find its id taken, which writes only when it inserts), except
/// while a copy fills an empty store (see the copy methods at the end) and when retention
/// trims a table no reader polls for changes (dedup, keyed answers, ingestions, audit).
#[allow(clippy::missing_errors_doc)]
pub trait Tx {
    // --- revision and counters
    /// The current store revision.
    fn revision(&mut self) -> Result<u64>;
    /// Advances the revision once for this transaction (later calls return the same
    /// value) and returns the revision this transaction will commit as.
    fn commit_revision(&mut self) -> Result<u64>;
    /// Adds `delta` to a named counter (incremental counts: never recomputed by a scan).
    fn adjust_counter(&mut self, name: &str, delta: i64) -> Result<()>;
    /// Every counter whose name starts with `prefix`.
    fn counters(&mut self, prefix: &str) -> Result<Vec<(String, i64)>>;

    // --- store identity and epoch (see `store/epoch.rs`)
    /// A named meta value beside the revision (`store_id`, `store_epoch`); `None` when
    /// the store has no such row.
    fn meta_value(&mut self, key: &str) -> Result<Option<i64>>;
    /// The server this transaction's connection reached, for a provider with a server
    /// whose identity the role may read (see `store/server_record.rs`); `None` otherwise.
    fn connection_server(&mut self) -> Option<&mut ConnectionServer> {
        None
    }
    /// Sets a named meta value, creating its row if needed.
    fn set_meta_value(&mut self, key: &str, value: i64) -> Result<()>;
    /// Raises every lease's and work item's generation below `floor` to `floor`, so the
    /// next generation minted for any of them is above it. Returns how many rows changed.
    fn raise_generations(&mut self, floor: u64) -> Result<u64>;

    // --- leases
    fn lease(&mut self, resource: &str) -> Result<Option<Lease>>;
    fn put_lease(&mut self, lease: &Lease) -> Result<()>;
    /// Live (unreleased, unexpired) leases held by `owner`.
    fn live_lease_count(&mut self, owner: &str, now: Millis) -> Result<u64>;
    /// How many items `owner` has claimed, and how many of those claims lapsed at `now`
    /// (`leaseExpiresAt <= now`, not yet reclaimed): one aggregate over the claimed-by
    /// index, reading each claimed row's expiry but decoding no item, so the count costs
    /// one row visit per claim instead of a whole item each.
    fn claimed_counts(&mut self, owner: &str, now: Millis) -> Result<(u64, u64)>;
    /// Leases by resource id.
    fn list_leases(&mut self, page: &PageRequest) -> Result<Vec<Lease>>;

    // --- work
    fn work(&mut self, id: &str) -> Result<Option<WorkItem>>;
    /// Shows `f` the item `id` (none: there is no such item) without a copy where the
    /// provider holds it in memory; `f` is called once. For a change that only looks at
    /// the item before writing its next version.
    fn with_work(&mut self, id: &str, f: &mut dyn FnMut(Option<&WorkItem>)) -> Result<()> {
        f(self.work(id)?.as_ref());
        Ok(())
    }
    /// A hint that [`Tx::work`] is about to be called for each of `ids`: a provider whose
    /// statements cost a network round trip fetches them in one. Changes nothing.
    fn prefetch_work(&mut self, ids: &[&str]) -> Result<()> {
        let _ = ids;
        Ok(())
    }
    /// Inserts unless the id exists; returns whether it was inserted.
    fn insert_work(&mut self, item: &WorkItem) -> Result<bool>;
    /// The item holding idempotency key `key`, if any: one seek of the key index (an older
    /// store may hold a key twice; then the holder with the lowest id). The insert path asks
    /// it before every new item, so a key is held once (see `save_work`). A provider that
    /// assumes new ids free without a read may assume the key free too, provided its commit
    /// then fails when the key turned out held, and the transaction runs again reading.
    fn work_by_key(&mut self, key: &str) -> Result<Option<WorkItem>>;
    /// A hint that [`Tx::work_by_key`] is about to be called for each of `keys`, as
    /// [`Tx::prefetch_work`] is for ids. Changes nothing.
    fn prefetch_work_keys(&mut self, keys: &[&str]) -> Result<()> {
        let _ = keys;
        Ok(())
    }
    /// `(idempotency key, id)` of work items in that order, strictly after `after`, at
    /// most `limit`: the key index read in order, so items sharing a key come next to each
    /// other (the checker finds them so, whatever the store's size).
    fn work_keys(
        &mut self,
        after: Option<(&str, &str)>,
        limit: usize,
    ) -> Result<Vec<(String, String)>>;
    /// Writes an item's lifecycle fields. Its identity (kind, handler, payload, logical
    /// effect id, idempotency key, compat, `created_at`) is fixed at insert and may be
    /// left as stored. The item is shared: a provider that keeps items in memory keeps
    /// this one rather than a copy, and the caller hands the same version on.
    fn update_work(&mut self, item: &Arc<WorkItem>) -> Result<()>;
    /// The claim lanes of `compat`: every (kind, handler) with an unclaimed, non-terminal
    /// item, in [`WorkLane::sort_key`] order. A skip-scan of the lane index — one seek per
    /// lane — never a read of a lane's items, however many there are. Claims are in no
    /// lane: their lapses are [`Tx::lapsed_claims`], served first.
    fn claim_lanes(&mut self, compat: &str) -> Result<Vec<WorkLane>>;
    /// One lane's unclaimed items of `compat` due by `now` (pending / retry eligible) in
    /// claim order: higher priority first, then earlier due, then id.
    /// Shared, like [`Tx::update_work`]'s: a claim reads an item to write its next version.
    fn lane_claimable(
        &mut self,
        compat: &str,
        lane: &WorkLane,
        now: Millis,
        limit: usize,
    ) -> Result<Vec<Arc<WorkItem>>>;
    /// Reclaims due by `now` with this compat digest, earliest first: claims whose lease
    /// lapsed, and retries a lapsed claim left backing off. An index of its own, so a dead
    /// owner's work never waits behind a backlog of pending work.
    fn lapsed_claims(
        &mut self,
        compat: &str,
        now: Millis,
        limit: usize,
    ) -> Result<Vec<Arc<WorkItem>>>;
    /// Work by id, narrowed by `filter`.
    fn list_work(&mut self, filter: &WorkFilter, page: &PageRequest) -> Result<Vec<WorkItem>>;
    /// Per lane (any compat), the earliest `nextEligibleAt` among its pending / retry
    /// items, in [`WorkLane::sort_key`] order; lanes with none waiting are left out. One
    /// seek per lane.
    fn waiting_lanes(&mut self) -> Result<Vec<(WorkLane, Millis)>>;
    /// The earliest `nextEligibleAt` among pending / retry items.
    fn oldest_waiting_work(&mut self) -> Result<Option<Millis>> {
        Ok(self.waiting_lanes()?.into_iter().map(|(_, at)| at).min())
    }

    // --- the intake (docs/ARCHITECTURE.md#intake); a provider without one has none
    /// Removes up to `limit` committed intake requests, oldest first, and answers them: the
    /// caller moves each into work or refuses it in the same transaction, so a rollback
    /// leaves them waiting.
    fn take_intake(&mut self, limit: usize) -> Result<Vec<IntakeRow>> {
        let _ = limit;
        Ok(Vec::new())
    }
    /// Keeps a request the move refused, with `reason`, where a person finds it.
    fn refuse_intake(&mut self, row: &IntakeRow, reason: &str, at: Millis) -> Result<()> {
        let _ = (row, reason, at);
        Err(Error::Invalid("this store has no intake".into()))
    }
    /// How many requests wait in the intake, and how many were refused.
    fn intake_counts(&mut self) -> Result<IntakeCounts> {
        Ok(IntakeCounts::default())
    }

    // --- events
    fn dedup(&mut self, source: &str, external_id: &str) -> Result<Option<DedupRecord>>;
    fn put_dedup(&mut self, record: &DedupRecord) -> Result<()>;
    /// Appends to the journal; the store assigns and returns the next `seq`.
    fn append_journal(&mut self, event: &JournalEvent) -> Result<i64>;
    /// Journal events with `seq > after`, ascending; only `event_type` when given.
    fn journal_after(
        &mut self,
        after: i64,
        event_type: Option<&str>,
        limit: usize,
    ) -> Result<Vec<JournalEvent>>;
    /// The highest seq ever assigned (0 for none).
    fn journal_high_water(&mut self) -> Result<i64>;
    /// The highest seq of `event_type` still in the journal (0 for none); an index seek.
    fn journal_type_high_water(&mut self, event_type: &str) -> Result<i64>;
    fn add_ingestion(&mut self, ingestion: &Ingestion) -> Result<()>;
    /// Ingestions by id.
    fn list_ingestions(&mut self, page: &PageRequest) -> Result<Vec<Ingestion>>;

    // --- subscriptions and schedules
    fn subscription(&mut self, id: &str) -> Result<Option<Subscription>>;
    fn put_subscription(&mut self, sub: &Subscription) -> Result<()>;
    fn list_subscriptions(&mut self, page: &PageRequest) -> Result<Vec<Subscription>>;
    fn schedule(&mut self, id: &str) -> Result<Option<Schedule>>;
    fn put_schedule(&mut self, schedule: &Schedule) -> Result<()>;
    /// Unpaused schedules with `next_due <= now`, earliest first.
    fn due_schedules(&mut self, now: Millis, limit: usize) -> Result<Vec<Schedule>>;
    /// Removes a schedule; returns whether there was one.
    fn delete_schedule(&mut self, id: &str) -> Result<bool>;
    fn list_schedules(&mut self, page: &PageRequest) -> Result<Vec<Schedule>>;

    // --- handlers, fleet-wide
    /// Every paused handler, by name: a handful of rows, read by every claim.
    fn handler_pauses(&mut self) -> Result<Vec<HandlerPause>>;
    fn put_handler_pause(&mut self, pause: &HandlerPause) -> Result<()>;
    /// Removes a handler's pause; returns whether there was one.
    fn delete_handler_pause(&mut self, handler: &str) -> Result<bool>;
    /// The stored rate window of `handler`, if its claims were ever counted.
    fn rate_window(&mut self, handler: &str) -> Result<Option<RateWindow>>;
    fn put_rate_window(&mut self, window: &RateWindow) -> Result<()>;
    /// How many items of `handler` wait (pending or retry), of any kind and compat: a
    /// range of the waiting-lane index per kind.
    fn waiting_count(&mut self, handler: &str) -> Result<u64>;

    // --- authorities, idempotency, audit
    fn authority(&mut self, id: &str) -> Result<Option<Authority>>;
    fn put_authority(&mut self, authority: &Authority) -> Result<()>;
    /// Removes a registration; returns whether there was one.
    fn delete_authority(&mut self, id: &str) -> Result<bool>;
    fn list_authorities(&mut self, page: &PageRequest) -> Result<Vec<Authority>>;
    /// The recorded answer of a keyed mutation, if it already ran.
    fn idempotent_answer(&mut self, key: &str) -> Result<Option<String>>;
    fn put_idempotent_answer(&mut self, key: &str, answer: &str, at: Millis) -> Result<()>;
    /// Appends an audit entry (the store assigns the id).
    fn add_audit(&mut self, entry: &AuditEntry) -> Result<()>;
    fn list_audit(&mut self, page: &PageRequest) -> Result<Vec<AuditEntry>>;

    // --- checker history (bounded)
    /// Takes the record (a provider that keeps rows in memory stores it as it is).
    fn add_grant(&mut self, grant: Grant) -> Result<()>;
    fn add_write(&mut self, write: WriteRecord) -> Result<()>;
    /// Grants with a revision above `after`, in revision order and, within one revision,
    /// in the order they were added. A page is the first `limit` such rows *extended to the
    /// end of the last revision it reaches*: one transaction may add many grants (a claim
    /// batch), and a page that stopped inside a revision could not be continued by revision
    /// without skipping or repeating rows. So the next page is always `after = the last
    /// row's revision`, a page may hold more than `limit` rows, and fewer than `limit` rows
    /// means there are no more.
    fn grants(&mut self, resource: Option<&str>, after: u64, limit: usize) -> Result<Vec<Grant>>;
    /// [`Tx::grants`] of every resource, only up to revision `through` (inclusive): a
    /// reader that already holds the newer revisions reads the older ones alone, rather
    /// than every row from `after` on again. Paged as [`Tx::grants`].
    fn grants_through(&mut self, after: u64, through: u64, limit: usize) -> Result<Vec<Grant>>;
    /// The newest `limit` grants of `resource`, newest first; an index seek.
    fn latest_grants(&mut self, resource: &str, limit: usize) -> Result<Vec<Grant>>;
    /// At least as many grant and write records as the store holds, found without counting
    /// them (the span of their sequence numbers): at most this many resources have any
    /// history, which sizes the checker's passes.
    fn history_records_bound(&mut self) -> Result<u64>;
    /// The highest revision a grant or a write record carries (0 with none): never above
    /// the store's revision in a sound store. A seek or two into each history table.
    fn history_high_revision(&mut self) -> Result<u64>;
    /// The first grant or write record stored after a record of a higher revision, if any
    /// (see [`history_order`](crate::store::history_order)): one scan of each history
    /// table where ranges of revisions are read by position, nothing to find where they
    /// are read by a revision index.
    ///
    /// # Errors
    /// A store failure.
    fn history_out_of_order(&mut self) -> Result<Option<Disorder>> {
        Ok(None)
    }
    /// Writes with a revision above `after`, paged exactly like [`Tx::grants`].
    fn writes(
        &mut self,
        resource: Option<&str>,
        after: u64,
        limit: usize,
    ) -> Result<Vec<WriteRecord>>;
    /// Drops grants and writes older than `keep_from_revision`, except failovers and
    /// refused writes made at or after `keep_incidents_since`: the operator's incident
    /// lists read by time, and a busy store passes many revisions in a minute.
    fn trim_history(&mut self, keep_from_revision: u64, keep_incidents_since: Millis)
    -> Result<()>;
    // --- the chain over the history (see `store/chain.rs`)
    /// Stores the link of one revision (a new commit's, or a copied one), replacing any.
    /// The grants and fenced writes stamped `revision` — this transaction's own revision,
    /// for its chain link — in the order they were added. Read back by default.
    ///
    /// # Errors
    /// A store failure.
    fn stamped(&mut self, revision: u64) -> Result<(Vec<Grant>, Vec<WriteRecord>)> {
        let after = revision.saturating_sub(1);
        Ok((self.grants(None, after, 1)?, self.writes(None, after, 1)?))
    }
    fn put_link(&mut self, link: &ChainLink) -> Result<()>;
    /// The link of `revision`, if the store keeps one; a primary-key seek.
    fn link(&mut self, revision: u64) -> Result<Option<ChainLink>>;
    /// Links of revisions above `after`, in revision order, at most `limit`.
    fn links(&mut self, after: u64, limit: usize) -> Result<Vec<ChainLink>>;
    /// Drops the links of revisions below `keep_from_revision`, with the history they
    /// chain (see [`Tx::trim_history`]), but the milestones (`chain::trims_link`).
    fn trim_links(&mut self, keep_from_revision: u64) -> Result<()>;
    /// Failover grants (those with [`Grant::took_over`]) made at or after `since` and
    /// strictly before `before`, newest first, at most `limit`, through an index on
    /// `(at, seq)` over failovers only.
    fn failovers(
        &mut self,
        since: Millis,
        before: Option<HistoryPosition>,
        limit: usize,
    ) -> Result<Vec<(HistoryPosition, Grant)>>;
    /// How many failover grants were made at or after `since` (a range of that index).
    fn count_failovers(&mut self, since: Millis) -> Result<u64>;
    /// Refused writes made at or after `since`, paged like [`Tx::failovers`] through an
    /// index over refused writes only.
    fn refused_writes(
        &mut self,
        since: Millis,
        before: Option<HistoryPosition>,
        limit: usize,
    ) -> Result<Vec<(HistoryPosition, WriteRecord)>>;
    /// How many writes were refused at or after `since`.
    fn count_refused_writes(&mut self, since: Millis) -> Result<u64>;

    // --- workflows
    fn put_definition(&mut self, def: &WorkflowDefinitionRow) -> Result<()>;
    fn definition(&mut self, workflow_id: &str) -> Result<Option<WorkflowDefinitionRow>>;
    fn list_definitions(&mut self, page: &PageRequest) -> Result<Vec<WorkflowDefinitionRow>>;
    fn instance(&mut self, id: &str) -> Result<Option<InstanceRow>>;
    fn instance_by_start_key(&mut self, start_key: &str) -> Result<Option<InstanceRow>>;
    fn insert_instance(&mut self, row: &InstanceRow) -> Result<()>;
    fn update_instance(&mut self, row: &InstanceRow) -> Result<()>;
    /// Non-terminal instances of this compat digest with `next_eligible_at <= now`.
    fn runnable_instances(
        &mut self,
        compat: &str,
        now: Millis,
        limit: usize,
    ) -> Result<Vec<InstanceRow>>;
    /// Instances waiting for `event_type`, by id after `after`.
    fn instances_waiting_for(
        &mut self,
        event_type: &str,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<InstanceRow>>;
    /// Instances by id, only `status` and ids starting with `id_prefix` when given (the
    /// prefix is a key range, so it combines with the `(status, instance_id)` index).
    fn list_instances(
        &mut self,
        status: Option<&str>,
        id_prefix: Option<&str>,
        page: &PageRequest,
    ) -> Result<Vec<InstanceRow>>;
    fn add_history(&mut self, record: &HistoryRecord) -> Result<()>;
    fn history(&mut self, instance_id: &str) -> Result<Vec<HistoryRecord>>;

    // --- attempt errors (`model/attempt_error.rs`), written with the failure they record
    /// Adds one attempt's error to its item's list and drops that item's errors older than
    /// its newest `keep` (by generation).
    fn add_attempt_error(&mut self, error: &AttemptError, keep: usize) -> Result<()>;
    /// An item's attempt errors, newest (highest generation) first.
    fn attempt_errors(&mut self, work_id: &str) -> Result<Vec<AttemptError>>;
    /// Every item's attempt errors in key order (work id, generation), strictly after
    /// `after`, at most `limit`: for a copy.
    fn list_attempt_errors(
        &mut self,
        after: Option<(&str, u64)>,
        limit: usize,
    ) -> Result<Vec<AttemptError>>;
    fn action_outcome(&mut self, invocation_id: &str) -> Result<Option<ActionOutcome>>;
    fn put_action_outcome(&mut self, outcome: &ActionOutcome) -> Result<()>;

    // --- retention (`store/retention.rs`): each call is bounded by `limit`, so one trim
    // batch is a short transaction whatever the table's size.
    /// Succeeded work items last updated before `before`, oldest first, at most `limit`
    /// (failed ones wait for a person: requeue or discard).
    fn finished_work(&mut self, before: Millis, limit: usize) -> Result<Vec<WorkItem>>;
    /// Removes one work item with its attempt errors (the caller adjusts its counter).
    fn delete_work(&mut self, id: &str) -> Result<()>;
    /// Terminal instances last updated before `before`, oldest first, at most `limit`.
    fn finished_instances(&mut self, before: Millis, limit: usize) -> Result<Vec<InstanceRow>>;
    /// Removes one instance with its history and its action outcome records (invocation
    /// ids `"<instanceId>/…"`); the caller adjusts its counter.
    fn delete_instance(&mut self, id: &str) -> Result<()>;
    /// Removes up to `limit` dedup records first seen before `before`, oldest first: of
    /// `source` when given, else of every source not in `except` (the sources with a window
    /// of their own). Returns how many.
    fn trim_dedup(
        &mut self,
        source: Option<&str>,
        except: &[String],
        before: Millis,
        limit: usize,
    ) -> Result<u64>;
    /// Removes up to `limit` keyed answers recorded before `before`. Returns how many.
    fn trim_idempotent_answers(&mut self, before: Millis, limit: usize) -> Result<u64>;
    /// Removes every ingestion with an id at most `through` (ids rise with time).
    fn delete_ingestions_through(&mut self, through: i64) -> Result<u64>;
    /// Removes every audit entry with an id at most `through`.
    fn delete_audit_through(&mut self, through: i64) -> Result<u64>;

    // --- used by copy (`store/copy.rs`): the rows no other list returns, and writes that
    // keep the keys the source assigned. The imports are only called on a store that was
    // empty when the copy began, in write transactions that do not advance the revision;
    // `import_revision` comes last, in the copy's final transaction.
    /// Dedup records in `(source, external_id)` order, strictly after `after`.
    fn list_dedup(&mut self, after: Option<(&str, &str)>, limit: usize)
    -> Result<Vec<DedupRecord>>;
    /// Keyed answers by key, strictly after `after`.
    fn list_idempotent_answers(
        &mut self,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<IdempotentAnswer>>;
    /// Action outcome records by invocation id, strictly after `after`.
    fn list_action_outcomes(
        &mut self,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<ActionOutcome>>;
    /// Stores a journal event under its own `seq`. Nothing is trimmed and the high-water
    /// is left alone (see [`Tx::import_revision`]).
    fn import_journal(&mut self, event: &JournalEvent) -> Result<()>;
    /// Stores an ingestion under its own `id`; later [`Tx::add_ingestion`] ids are higher.
    fn import_ingestion(&mut self, ingestion: &Ingestion) -> Result<()>;
    /// Stores an audit entry under its own `id`; later [`Tx::add_audit`] ids are higher.
    fn import_audit(&mut self, entry: &AuditEntry) -> Result<()>;
    /// Sets the store revision and the journal high-water to exactly these values; the
    /// next committed transaction is `revision + 1` and the next journal seq
    /// `journal_high_water + 1`.
    fn import_revision(&mut self, revision: u64, journal_high_water: i64) -> Result<()>;
}

/// Round trips taken by committed write transactions ([`Backend::write_round_trips`]),
/// and how long they held the write lock.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RoundTrips {
    /// Committed write transactions.
    pub writes: u64,
    /// The statements (round trips) they sent, the write lock's and the commit's included;
    /// a statement's first preparation on a connection is not counted.
    pub round_trips: u64,
    /// Microseconds they held the write lock, as the client sees it: from the answer to the
    /// lock's statement to the answer to the commit. Beside the server's own time for
    /// their statements, the rest is the round trips, the client's work between them and
    /// the commit. It leaves out the lock's own statement after the grant (its reads).
    #[serde(default)]
    pub held_micros: u64,
}

impl RoundTrips {
    /// Round trips per committed write, or `None` before the first.
    #[must_use]
    pub fn per_write(&self) -> Option<f64> {
        #[allow(clippy::cast_precision_loss)] // counts far below 2^52
        (self.writes > 0).then(|| self.round_trips as f64 / self.writes as f64)
    }

    /// Milliseconds the write lock was held per committed write, or `None` before the
    /// first.
    #[must_use]
    pub fn held_ms_per_write(&self) -> Option<f64> {
        #[allow(clippy::cast_precision_loss)] // counts far below 2^52
        (self.writes > 0).then(|| self.held_micros as f64 / 1000.0 / self.writes as f64)
    }
}

/// The round trips of several handles (a fleet's authorities) together.
impl std::iter::Sum for RoundTrips {
    fn sum<I: Iterator<Item = Self>>(iter: I) -> Self {
        iter.fold(Self::default(), |all, one| Self {
            writes: all.writes + one.writes,
            round_trips: all.round_trips + one.round_trips,
            held_micros: all.held_micros + one.held_micros,
        })
    }
}
