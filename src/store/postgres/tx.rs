//! The PostgreSQL side of the shared SQL layer: one transaction as a
//! [`Driver`](crate::store::sql::Driver). Every statement is prepared once per connection;
//! the shared statements are in `store/sql/`.
//!
//! Every statement is a network round trip, so the hot writes are held back: work, lease,
//! instance and history rows, counter deltas, grants, write records and the revision wait
//! in [`Pending`] until a statement that lists one of those tables (each such method
//! settles first, sending one statement per table, arrays through `unnest`), or the
//! commit, which sends a small set as text with the `COMMIT` itself (`literal.rs`). Rows
//! read or written by key in a write transaction are remembered in [`Seen`]: the write
//! lock keeps every other writer out, so they cannot change under it, and a read by key
//! is answered from there (history by key merges the held-back records). The revision and
//! the store epoch are read with the lock (`BEGIN_WRITE`), so advancing the revision needs
//! no statement of its own.
//!
//! A new work item's id is assumed free without a read ([`Inserts::Assume`]): its row is
//! sent as a plain `INSERT`, which fails the transaction if the id is taken, and the
//! backend then runs the transaction again reading first ([`Inserts::Read`]). Ids are
//! rarely reused, so a lone enqueue is two round trips: the lock, then the writes with the
//! commit. The rows a batch will read (`prefetch_work`) are fetched in one round trip at
//! the first read that needs one.
//!
//! A new item's idempotency key is assumed free the same way: the commit message carries,
//! after the inserts, a guard that fails when one of those keys is now held twice
//! ([`literal::key_guard`]), and the transaction then runs again reading the keys first. So
//! the one-seek-per-key check costs a lone enqueue no round trip of its own.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use super::Names;
use super::batch::{self, Batch, COUNTERS, Form, META};
use super::bind::{self, Param, PgRow};
use super::errors::{map_error, transient};
use super::intake;
use super::literal;
use super::pool::Conn;
use crate::clock::Millis;
use crate::error::{Error, Result};
use crate::model::work::{WorkFilter, WorkLane};
use crate::model::{
    ChainLink, Grant, HistoryRecord, InstanceRow, IntakeCounts, IntakeRow, Lease, PageRequest,
    WorkItem, WorkState, WorkflowDefinitionRow, WriteRecord,
};
use crate::store::sql::dialect::{Dialect, POSTGRES};
use crate::store::sql::encode::{
    self, DEFINITIONS, GRANTS, HISTORY, INSTANCES, LEASES, Table, WORK, WRITES,
};
use crate::store::sql::lanes::ClaimRead;
use crate::store::sql::query::Query;
use crate::store::sql::row::Decode;
use crate::store::sql::statements::{REVISION, Statements};
use crate::store::sql::value::SqlValue;
use crate::store::sql::{Driver, KnownEmpty, Transient, decode, lanes, limit, writable};

/// Writes held back until a statement could observe them, or the commit.
#[derive(Default)]
struct Pending {
    /// The last version of each written row, by key.
    work: BTreeMap<String, WorkItem>,
    leases: BTreeMap<String, Lease>,
    instances: BTreeMap<String, InstanceRow>,
    history: BTreeMap<(String, u64), HistoryRecord>,
    /// The summed delta of each counter.
    counters: BTreeMap<String, i64>,
    /// Appended in order (their identity column orders one revision's rows).
    grants: Vec<Grant>,
    writes: Vec<WriteRecord>,
    /// Work ids among `work` assumed free: their rows go as plain inserts.
    fresh: BTreeSet<String>,
    /// The revision this transaction advances the store to.
    revision: Option<u64>,
    /// Chain links by revision (the link of this transaction's revision, or a copy's).
    links: BTreeMap<u64, ChainLink>,
}

impl Pending {
    fn is_empty(&self) -> bool {
        self.work.is_empty()
            && self.leases.is_empty()
            && self.instances.is_empty()
            && self.history.is_empty()
            && self.counters.is_empty()
            && self.grants.is_empty()
            && self.writes.is_empty()
            && self.revision.is_none()
            && self.links.is_empty()
    }

    /// The held-back writes as batches, in the order they are sent.
    fn into_batches(self) -> Result<Vec<Batch>> {
        let (fresh, work): (Vec<_>, Vec<_>) = self
            .work
            .iter()
            .partition(|(id, _)| self.fresh.contains(*id));
        let counters = self
            .counters
            .into_iter()
            .map(|(name, delta)| vec![name.into(), delta.into()])
            .collect();
        let revision = self.revision.map(|rev| {
            let rev = i64::try_from(rev).unwrap_or(i64::MAX);
            vec![vec![REVISION.into(), rev.into()]]
        });
        let batches = [
            (
                &WORK,
                Form::Insert,
                encoded(fresh.into_iter().map(|(_, w)| w), encode::work)?,
            ),
            (
                &WORK,
                Form::Upsert,
                encoded(work.into_iter().map(|(_, w)| w), encode::work)?,
            ),
            (
                &LEASES,
                Form::Upsert,
                encoded(self.leases.values(), encode::lease)?,
            ),
            (
                &INSTANCES,
                Form::Upsert,
                encoded(self.instances.values(), encode::instance)?,
            ),
            (
                &HISTORY,
                Form::Upsert,
                encoded(self.history.values(), encode::history)?,
            ),
            (&COUNTERS, Form::Sum, counters),
            (&GRANTS, Form::Append, encoded(&self.grants, encode::grant)?),
            (&WRITES, Form::Append, encoded(&self.writes, encode::write)?),
            (&META, Form::Upsert, revision.unwrap_or_default()),
            (
                &encode::CHAIN,
                Form::Upsert,
                encoded(self.links.values(), encode::link)?,
            ),
        ];
        Ok(batches
            .into_iter()
            .filter(|(_, _, rows)| !rows.is_empty())
            .map(|(table, form, rows)| Batch { table, form, rows })
            .collect())
    }
}

/// Each of `rows` as its columns' values.
fn encoded<'a, T: 'a>(
    rows: impl IntoIterator<Item = &'a T>,
    encode: fn(&T) -> Result<Vec<SqlValue>>,
) -> Result<Vec<Vec<SqlValue>>> {
    rows.into_iter().map(encode).collect()
}

/// How a write transaction learns whether a new work item's id is free (see the module
/// documentation).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Inserts {
    /// Assume it is; a taken id fails the transaction, to be run again with `Read`.
    Assume,
    /// Read the row first.
    Read,
}

/// At most this many held-back rows travel as text with the COMMIT; a larger set (a claim
/// or a completion batch) goes as one array statement per table first, where the server
/// parses less.
const LITERAL_ROWS: usize = 64;

/// What a write transaction learnt with the write lock to be absent (see `BEGIN_WRITE`),
/// so a read of it needs no round trip. Each is forgotten when this transaction writes what
/// could change it. The default knows nothing.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Known {
    /// No handler is paused.
    pub(super) no_pauses: bool,
    /// When the earliest unpaused schedule is due (`Millis::MAX`: there is none).
    pub(super) next_schedule: Option<Millis>,
    /// No workflow instance waits to run.
    pub(super) no_instances: bool,
}

impl Known {
    fn empty(&self, read: KnownEmpty) -> bool {
        match read {
            KnownEmpty::HandlerPauses => self.no_pauses,
            KnownEmpty::SchedulesDueBy(now) => self.next_schedule.is_some_and(|due| due > now),
            KnownEmpty::RunnableInstances => self.no_instances,
        }
    }
}

/// Rows a write transaction has read or written, by key (`None`: known not to exist). The
/// write lock keeps every other writer out, so they cannot change but through it.
#[derive(Default)]
struct Seen {
    work: HashMap<String, Option<WorkItem>>,
    /// The item holding each idempotency key read or inserted here (`None`: read, none).
    keys: HashMap<String, Option<String>>,
    leases: HashMap<String, Option<Lease>>,
    instances: HashMap<String, Option<InstanceRow>>,
    definitions: HashMap<String, Option<WorkflowDefinitionRow>>,
    meta: HashMap<String, i64>,
}

/// One open transaction (the backend owns BEGIN / COMMIT / ROLLBACK).
pub(super) struct PgTx<'a> {
    conn: &'a mut Conn,
    names: &'a Names,
    writable: bool,
    /// This transaction's revision once `commit_revision` advanced it.
    revision: Option<u64>,
    /// Set when a statement failed in a way that may pass on a fresh attempt.
    transient: Option<Transient>,
    pending: Pending,
    seen: Seen,
    /// The backend's high-water revision when this transaction began.
    high_water: u64,
    /// The revision this transaction read or will commit as.
    seen_revision: Option<u64>,
    inserts: Inserts,
    /// Work items inserted on the assumption that their id was free.
    assumed: usize,
    /// Ids a batch will read (`prefetch_work`), fetched together at the first read.
    wanted: Vec<String>,
    /// Idempotency keys a batch will look up (`prefetch_work_keys`), likewise.
    wanted_keys: Vec<String>,
    /// Keys answered free without a read ([`Inserts::Assume`]).
    assumed_keys: BTreeSet<String>,
    /// The keys of the items inserted under such an answer: the commit's guard checks them.
    guarded_keys: Vec<String>,
    /// Whether committed intake requests were waiting when the write lock was taken (and
    /// have not been taken since): an empty intake costs a claim no statement.
    intake_waits: bool,
    /// What the write lock's statement found absent, while this transaction's own writes
    /// have not changed it.
    known: Known,
    /// The chain's newest link as the write lock's statement read it, then as this
    /// transaction extends it.
    head: Option<ChainLink>,
    /// Older links the write lock's statement read (those the witnesses compare).
    links: Vec<ChainLink>,
    /// The statements this transaction sent (each a round trip).
    round_trips: u64,
    /// Every grant and fenced write this transaction added, held back or sent: what its
    /// revision's chain link digests, without reading them back.
    added: (Vec<Grant>, Vec<WriteRecord>),
    /// What claims read at once, by compat digest, while no work row changed.
    claim_reads: Vec<ClaimReads>,
}

impl<'a> PgTx<'a> {
    pub(super) fn new(
        conn: &'a mut Conn,
        names: &'a Names,
        writable: bool,
        high_water: u64,
        inserts: Inserts,
    ) -> Self {
        Self {
            conn,
            names,
            writable,
            revision: None,
            transient: None,
            pending: Pending::default(),
            seen: Seen::default(),
            high_water,
            seen_revision: None,
            inserts,
            assumed: 0,
            wanted: Vec::new(),
            wanted_keys: Vec::new(),
            assumed_keys: BTreeSet::new(),
            guarded_keys: Vec::new(),
            intake_waits: false,
            known: Known::default(),
            head: None,
            links: Vec::new(),
            added: (Vec::new(), Vec::new()),
            round_trips: 0,
            claim_reads: Vec::new(),
        }
    }

    /// The chain's links the write lock's statement read: its head and the links asked
    /// for.
    pub(super) fn chain_links(&mut self, links: &[ChainLink]) {
        self.head = links.iter().max_by_key(|l| l.revision).cloned();
        self.links = links.to_vec();
    }

    /// Whether committed intake requests wait, as the write lock's statement found.
    pub(super) fn intake_waits(&mut self, waits: bool) {
        self.intake_waits = waits;
    }

    /// The work items `ids` as the write lock's statement read them (`items`; an id
    /// without one has no item).
    pub(super) fn fetched(&mut self, ids: &[&str], items: &[WorkItem]) {
        for id in ids {
            self.seen.work.entry((*id).to_owned()).or_insert(None);
        }
        self.saw(items);
    }

    /// What the write lock's statement found absent.
    pub(super) fn know(&mut self, known: Known) {
        self.known = known;
    }

    /// How many work items this transaction inserted on the assumption that their id (or
    /// their idempotency key) was free: if it fails for good, it runs again reading first.
    pub(super) fn assumed(&self) -> usize {
        self.assumed
    }

    /// The store revision this transaction read or advanced to (committed if it commits).
    pub(super) fn seen_revision(&self) -> Option<u64> {
        self.seen_revision
    }

    /// Sends every held-back write, all tables in one statement ([`batch::together`]).
    /// Every statement that could observe them calls it first.
    pub(super) fn flush(&mut self) -> Result<()> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let batches = std::mem::take(&mut self.pending).into_batches()?;
        self.send(batches)
    }

    /// What ends the transaction, as one simple query: the held-back writes (as text when
    /// they are few; otherwise they are sent first), the notification and the `COMMIT`.
    pub(super) fn commit_statement(&mut self) -> Result<String> {
        let batches = std::mem::take(&mut self.pending).into_batches()?;
        let rows: usize = batches.iter().map(|b| b.rows.len()).sum();
        let text = (rows <= LITERAL_ROWS)
            .then(|| literal::statements(&batches))
            .flatten();
        let mut sql = match text {
            Some(sql) => sql,
            None => {
                self.send(batches)?;
                String::new()
            }
        };
        if !self.guarded_keys.is_empty() {
            let keys = std::mem::take(&mut self.guarded_keys);
            match literal::key_guard(&keys) {
                Some(guard) => sql.push_str(&guard),
                None => self.guard_keys(&keys)?,
            }
        }
        sql.push_str(&super::notify::commit_statement(self.revision));
        Ok(sql)
    }

    /// [`literal::key_guard`] as its own statement, after the held-back writes were sent.
    fn guard_keys(&mut self, keys: &[String]) -> Result<()> {
        let conn = &mut *self.conn;
        let rows = conn
            .statement(literal::KEY_GUARD)
            .and_then(|s| conn.client().query(&s, &[&keys]));
        self.check(rows)?;
        Ok(())
    }

    /// Reads the items holding the keys `prefetch_work_keys` named, with `key`, in one
    /// round trip, and remembers each key's holder (the lowest id) or that it has none.
    fn fetch_wanted_keys(&mut self, key: &str) -> Result<()> {
        let mut wanted = std::mem::take(&mut self.wanted_keys);
        wanted.push(key.to_owned());
        wanted.retain(|k| !self.seen.keys.contains_key(k));
        let found = self.work_where_any(
            "SELECT * FROM work WHERE idempotency_key = ANY($1) ORDER BY idempotency_key, id",
            &mut wanted,
        )?;
        for key in wanted {
            self.seen.keys.insert(key, None);
        }
        for item in &found {
            let holder = self
                .seen
                .keys
                .entry(item.idempotency_key.clone())
                .or_default();
            if holder.is_none() {
                *holder = Some(item.id.clone());
            }
        }
        self.saw(&found);
        Ok(())
    }

    /// Writes batches in one statement, one array per column.
    fn send(&mut self, batches: Vec<Batch>) -> Result<()> {
        if batches.is_empty() {
            return Ok(());
        }
        let (sql, arrays) = batch::together(batches);
        self.exec_raw(&sql, &batch::params(&arrays))?;
        Ok(())
    }

    /// Fetches the rows `prefetch_work` named, with `id`, in one round trip.
    fn fetch_wanted(&mut self, id: &str) -> Result<()> {
        let mut wanted = std::mem::take(&mut self.wanted);
        wanted.push(id.to_owned());
        wanted.retain(|id| !self.seen.work.contains_key(id));
        let found = self.work_where_any("SELECT * FROM work WHERE id = ANY($1)", &mut wanted)?;
        for id in wanted {
            self.seen.work.insert(id, None);
        }
        self.saw(&found);
        Ok(())
    }

    /// The work rows `query` finds for the text array `values` (its `$1`), in one round
    /// trip; `values` is sorted and deduplicated first, so a prefetch asks for each once.
    fn work_where_any(&mut self, query: &str, values: &mut Vec<String>) -> Result<Vec<WorkItem>> {
        values.sort_unstable();
        values.dedup();
        let conn = &mut *self.conn;
        let rows = conn
            .statement(query)
            .and_then(|s| conn.client().query(&s, &[&*values]));
        self.check(rows)?
            .iter()
            .map(|r| decode::work(&PgRow(r)))
            .collect()
    }

    /// Remembers work rows read in this transaction.
    fn saw(&mut self, items: &[WorkItem]) {
        for item in items {
            self.seen.work.insert(item.id.clone(), Some(item.clone()));
        }
    }

    /// A row by key, read once per write transaction (see [`Seen`]); `cache` picks the
    /// table's map. Reads only that row, which has no held-back write unless it is cached.
    fn cached<T: Clone>(
        &mut self,
        cache: fn(&mut Seen) -> &mut HashMap<String, Option<T>>,
        table: &Table,
        key: &str,
        decode: Decode<T>,
    ) -> Result<Option<T>> {
        if !self.writable {
            return self.by_key(table, key, decode);
        }
        if let Some(known) = cache(&mut self.seen).get(key) {
            return Ok(known.clone());
        }
        let row = self.by_key(table, key, decode)?;
        cache(&mut self.seen).insert(key.to_owned(), row.clone());
        Ok(row)
    }

    /// Why a statement failed transiently, if one did: the backend runs the transaction
    /// again.
    pub(super) fn take_transient(&mut self) -> Option<Transient> {
        self.transient.take()
    }

    /// The statements this transaction has sent so far.
    pub(super) fn round_trips(&self) -> u64 {
        self.round_trips
    }

    /// A statement's outcome; every statement this transaction sends passes here.
    fn check<T>(&mut self, r: std::result::Result<T, postgres::Error>) -> Result<T> {
        self.round_trips += 1;
        r.map_err(|e| {
            if let Some(t) = transient(self.names, &e, self.conn.client()) {
                self.transient = Some(t);
            }
            map_error(self.names, &e)
        })
    }

    /// Runs a write statement with driver-typed parameters (the arrays of a flush).
    fn exec_raw(&mut self, sql: &str, params: &[Param<'_>]) -> Result<u64> {
        writable(self.writable)?;
        let conn = &mut *self.conn;
        let n = conn
            .statement(sql)
            .and_then(|s| conn.client().execute(&s, params));
        self.check(n)
    }

    /// What [`lanes::claim_reads_at_once`] read for a claim of `compat` at `now` while no
    /// work row changed since: the lanes, and `lane`'s first `n` due items when it read as
    /// many or the lane had no more.
    fn claim_read(&self, compat: &str, now: Option<Millis>) -> Option<&ClaimReads> {
        self.claim_reads
            .iter()
            .find(|r| r.compat == compat && now.is_none_or(|now| now == r.now))
    }
}

/// What one statement read for a claim of one compat digest ([`lanes::claim_reads_at_once`]):
/// the lanes, and each lane's first due items. The claim's next reads, the lanes and their
/// items, are answered from it while no work row changes (every write of one forgets it).
struct ClaimReads {
    compat: String,
    now: Millis,
    /// How many items were read of each lane: a lane that gave fewer has no more due.
    per_lane: usize,
    lanes: Vec<(WorkLane, Vec<WorkItem>)>,
}

impl ClaimReads {
    /// The first `n` items of `lane` due by `now`, if this read knows them.
    fn items(&self, lane: &WorkLane, n: usize) -> Option<Vec<WorkItem>> {
        let (_, items) = self.lanes.iter().find(|(l, _)| l == lane)?;
        if n <= items.len() {
            Some(items[..n].to_vec())
        } else if items.len() < self.per_lane {
            Some(items.clone())
        } else {
            None
        }
    }
}

impl Driver for PgTx<'_> {
    const DIALECT: &'static Dialect = &POSTGRES;

    fn label(&self) -> &str {
        &self.names.label
    }

    fn is_writable(&self) -> bool {
        self.writable
    }

    fn connection_server(&mut self) -> Option<&mut crate::store::backend::ConnectionServer> {
        self.conn.server.as_mut()
    }

    fn execute(&mut self, sql: &str, params: &[SqlValue]) -> Result<u64> {
        writable(self.writable)?;
        // A statement of its own writes a table outside the held-back ones: a pause or a
        // schedule among them, or the chain's trimming.
        self.known = Known::default();
        self.links.clear();
        self.claim_reads.clear();
        let conn = &mut *self.conn;
        let n = conn
            .statement(sql)
            .and_then(|s| conn.client().execute(&s, &bind::params(params, &s)));
        self.check(n)
    }

    fn query<T>(&mut self, sql: &str, params: &[SqlValue], decode: Decode<T>) -> Result<Vec<T>> {
        let conn = &mut *self.conn;
        let rows = conn
            .statement(sql)
            .and_then(|s| conn.client().query(&s, &bind::params(params, &s)));
        self.check(rows)?
            .iter()
            .map(|r| decode(&PgRow(r)))
            .collect()
    }

    fn settle(&mut self) -> Result<()> {
        self.flush()
    }

    fn known_meta(&self, key: &str) -> Option<i64> {
        self.seen.meta.get(key).copied()
    }

    fn known_empty(&self, read: KnownEmpty) -> bool {
        self.known.empty(read)
    }

    fn remember_meta(&mut self, key: &str, value: i64) {
        if self.writable {
            self.seen.meta.insert(key.to_owned(), value);
        }
    }

    fn revision(&mut self) -> Result<u64> {
        let rev = self.stored_revision()?;
        self.seen_revision = self.seen_revision.max(Some(rev));
        Ok(rev)
    }

    fn commit_revision(&mut self) -> Result<u64> {
        writable(self.writable)?;
        if let Some(rev) = self.revision {
            return Ok(rev);
        }
        // The revision was read with the write lock (or by an earlier read here), so the
        // next one is known, and writing it waits for the commit with the other held-back
        // writes. Only a transaction that never learned it advances it with a statement.
        let rev = match self.known_meta(REVISION) {
            Some(current) => {
                let rev = u64::try_from(current.saturating_add(1)).map_err(|_| {
                    Error::Corrupt(format!("{}: negative revision {current}", self.names.label))
                })?;
                self.remember_meta(REVISION, current.saturating_add(1));
                self.pending.revision = Some(rev);
                rev
            }
            None => self.next_revision()?,
        };
        // Under the write lock every commit is visible: a revision at or below one already
        // seen committed means the database lost acknowledged commits.
        if rev <= self.high_water {
            return Err(Error::Corrupt(format!(
                "{}: the store revision went back from {} to {}: the database lost acknowledged \
                 commits (a failover to a replica that was behind?); refusing to write",
                self.names.label,
                self.high_water,
                rev.saturating_sub(1)
            )));
        }
        self.revision = Some(rev);
        self.seen_revision = Some(rev);
        Ok(rev)
    }

    fn adjust_counter(&mut self, name: &str, delta: i64) -> Result<()> {
        writable(self.writable)?;
        *self.pending.counters.entry(name.to_owned()).or_default() += delta;
        Ok(())
    }

    fn counters(&mut self, prefix: &str) -> Result<Vec<(String, i64)>> {
        self.flush()?;
        // A range seek on the primary key from `prefix` (byte order: COLLATE "C").
        self.query(
            "SELECT name, value FROM counters WHERE name >= $1 AND starts_with(name, $1) ORDER BY name",
            &[prefix.into()],
            |r| {
                Ok((
                    crate::store::sql::row::text(r, "name")?,
                    crate::store::sql::row::int(r, "value")?,
                ))
            },
        )
    }

    fn lease(&mut self, resource: &str) -> Result<Option<Lease>> {
        self.cached(|seen| &mut seen.leases, &LEASES, resource, decode::lease)
    }

    fn put_lease(&mut self, lease: &Lease) -> Result<()> {
        writable(self.writable)?;
        let key = lease.resource_id.clone();
        self.seen.leases.insert(key.clone(), Some(lease.clone()));
        self.pending.leases.insert(key, lease.clone());
        Ok(())
    }

    fn work(&mut self, id: &str) -> Result<Option<WorkItem>> {
        if self.writable && !self.wanted.is_empty() && !self.seen.work.contains_key(id) {
            self.fetch_wanted(id)?;
        }
        self.cached(|seen| &mut seen.work, &WORK, id, decode::work)
    }

    fn prefetch_work(&mut self, ids: &[&str]) -> Result<()> {
        if self.writable {
            self.wanted.extend(
                ids.iter()
                    .filter(|id| !self.seen.work.contains_key(**id))
                    .map(|id| (*id).to_owned()),
            );
        }
        Ok(())
    }

    fn insert_work(&mut self, item: &WorkItem) -> Result<bool> {
        writable(self.writable)?;
        let absent = match self.seen.work.get(&item.id) {
            Some(Some(_)) => return Ok(false),
            Some(None) => true,
            None if self.inserts == Inserts::Assume => {
                self.assumed += 1;
                self.pending.fresh.insert(item.id.clone());
                true
            }
            None => Driver::work(self, &item.id)?.is_none(),
        };
        if absent {
            Driver::update_work(self, item)?;
            let key = &item.idempotency_key;
            if self.assumed_keys.contains(key) {
                // Its key was assumed free: a wrong guess fails the commit's guard, and the
                // transaction runs again reading.
                self.assumed += 1;
                self.guarded_keys.push(key.clone());
            }
            self.seen.keys.insert(key.clone(), Some(item.id.clone()));
        }
        Ok(absent)
    }

    fn work_by_key(&mut self, key: &str) -> Result<Option<WorkItem>> {
        if !self.writable {
            return self.one(
                "SELECT * FROM work WHERE idempotency_key = $1 ORDER BY idempotency_key, id LIMIT 1",
                &[key.into()],
                decode::work,
            );
        }
        if let Some(holder) = self.seen.keys.get(key) {
            return match holder.clone() {
                Some(id) => Driver::work(self, &id),
                None => Ok(None),
            };
        }
        if self.inserts == Inserts::Assume {
            self.assumed_keys.insert(key.to_owned());
            return Ok(None);
        }
        // No held-back write needs sending first: every row this transaction inserted is
        // in `seen.keys` already, and no write changes a stored item's key.
        self.fetch_wanted_keys(key)?;
        match self.seen.keys.get(key).cloned().flatten() {
            Some(id) => Driver::work(self, &id),
            None => Ok(None),
        }
    }

    fn prefetch_work_keys(&mut self, keys: &[&str]) -> Result<()> {
        if self.writable && self.inserts == Inserts::Read {
            self.wanted_keys.extend(
                keys.iter()
                    .filter(|key| !self.seen.keys.contains_key(**key))
                    .map(|key| (*key).to_owned()),
            );
        }
        Ok(())
    }

    fn update_work(&mut self, item: &WorkItem) -> Result<()> {
        writable(self.writable)?;
        self.claim_reads.clear();
        self.seen.work.insert(item.id.clone(), Some(item.clone()));
        self.pending.work.insert(item.id.clone(), item.clone());
        Ok(())
    }

    fn lane_claimable(
        &mut self,
        compat: &str,
        lane: &WorkLane,
        now: Millis,
        n: usize,
    ) -> Result<Vec<WorkItem>> {
        if let Some(items) = self
            .claim_read(compat, Some(now))
            .and_then(|read| read.items(lane, n))
        {
            return Ok(items);
        }
        self.flush()?;
        let items = self.query(
            lanes::lane_items_sql(&POSTGRES),
            &lanes::lane_items_params(compat, lane, now, n),
            decode::work,
        )?;
        if self.writable {
            self.saw(&items);
        }
        Ok(items)
    }

    /// With the lanes and their first due items, in one round trip
    /// ([`lanes::claim_reads_at_once`]): a claim reads those next.
    fn lapsed_claims(&mut self, compat: &str, now: Millis, n: usize) -> Result<Vec<WorkItem>> {
        self.flush()?;
        let rows = self.query(
            lanes::claim_reads_at_once(&POSTGRES),
            &[compat.into(), now.into(), limit(n).into()],
            lanes::claim_read,
        )?;
        let mut lapsed = Vec::new();
        let mut lanes: Vec<(WorkLane, Vec<WorkItem>)> = Vec::new();
        for row in rows {
            match row {
                ClaimRead::Lapsed(item) => lapsed.push(item),
                ClaimRead::Lane(lane, item) => {
                    if lanes.last().is_none_or(|(last, _)| *last != lane) {
                        lanes.push((lane, Vec::new()));
                    }
                    if let (Some((_, items)), Some(item)) = (lanes.last_mut(), item) {
                        items.push(item);
                    }
                }
            }
        }
        if self.writable {
            self.saw(&lapsed);
            for (_, items) in &lanes {
                self.saw(items);
            }
        }
        self.claim_reads.retain(|r| r.compat != compat);
        self.claim_reads.push(ClaimReads {
            compat: compat.to_owned(),
            now,
            per_lane: lanes::lane_share(n, lanes.len()),
            lanes,
        });
        Ok(lapsed)
    }

    /// The lanes a claim's first read found ([`Self::lapsed_claims`]), or in one round trip
    /// instead of one per lane and one more.
    fn claim_lanes(&mut self, compat: &str) -> Result<Vec<WorkLane>> {
        if let Some(read) = self.claim_read(compat, None) {
            return Ok(read.lanes.iter().map(|(lane, _)| lane.clone()).collect());
        }
        self.flush()?;
        self.query(
            lanes::claim_lanes_at_once(&POSTGRES),
            &[compat.into()],
            decode::lane,
        )
    }

    fn list_work(&mut self, filter: &WorkFilter, page: &PageRequest) -> Result<Vec<WorkItem>> {
        self.flush()?;
        let mut states: Vec<&str> = filter.states.iter().map(|s| s.as_str()).collect();
        states.sort_unstable();
        states.dedup();
        let mut compats: Vec<&str> = filter.compats.iter().map(String::as_str).collect();
        compats.sort_unstable();
        compats.dedup();
        let mut q = Query::new(&POSTGRES);
        if let Some(owner) = &filter.owner {
            q.cond("owner_id =", owner.as_str());
        }
        if filter.owner.is_some() && states == [WorkState::Claimed.as_str()] {
            // "What does this authority hold now" (the dashboard asks it for every authority
            // on every refresh): a literal, so the planner sees the partial index's condition.
            q.literal("state = 'claimed'");
        } else if !states.is_empty() {
            q.cond_in("state", &states);
        }
        if !compats.is_empty() {
            q.cond_in("compat", &compats);
        }
        if let Some(kind) = filter.kind {
            q.cond("kind =", kind.as_str());
        }
        if let Some(prefix) = &filter.id_prefix {
            q.cond("id >=", prefix.as_str());
            if let Some(end) = crate::model::page::prefix_end(prefix) {
                q.cond("id <", end);
            }
        }
        let after = page.after.clone().map(SqlValue::Text);
        let n = page.limit.max(1);
        self.page("work", "id", q, after, page.backwards, n, decode::work)
    }

    fn add_grant(&mut self, grant: &Grant) -> Result<()> {
        writable(self.writable)?;
        self.pending.grants.push(grant.clone());
        self.added.0.push(grant.clone());
        Ok(())
    }

    fn add_write(&mut self, write: &WriteRecord) -> Result<()> {
        writable(self.writable)?;
        self.pending.writes.push(write.clone());
        self.added.1.push(write.clone());
        Ok(())
    }

    /// Held back, to go with the `COMMIT`.
    fn put_link(&mut self, link: &ChainLink) -> Result<()> {
        writable(self.writable)?;
        self.pending.links.insert(link.revision, link.clone());
        self.head = Some(link.clone());
        Ok(())
    }

    fn known_link(&self, revision: u64) -> Option<ChainLink> {
        self.head
            .iter()
            .chain(&self.links)
            .find(|link| link.revision == revision)
            .cloned()
    }

    fn own_history(&self, revision: u64) -> Option<(Vec<Grant>, Vec<WriteRecord>)> {
        Some(crate::store::sql::stamped_among(&self.added, revision))
    }

    fn put_definition(&mut self, def: &WorkflowDefinitionRow) -> Result<()> {
        self.execute(POSTGRES.upsert(&DEFINITIONS), &encode::definition(def))?;
        self.seen
            .definitions
            .insert(def.workflow_id.clone(), Some(def.clone()));
        Ok(())
    }

    fn definition(&mut self, workflow_id: &str) -> Result<Option<WorkflowDefinitionRow>> {
        let decode = decode::definition;
        self.cached(
            |seen| &mut seen.definitions,
            &DEFINITIONS,
            workflow_id,
            decode,
        )
    }

    fn instance(&mut self, id: &str) -> Result<Option<InstanceRow>> {
        self.cached(|seen| &mut seen.instances, &INSTANCES, id, decode::instance)
    }

    fn insert_instance(&mut self, row: &InstanceRow) -> Result<()> {
        // An upsert on the id (the memory provider's insert replaces a same-id row).
        writable(self.writable)?;
        self.known.no_instances = false;
        let key = row.instance_id.clone();
        self.seen.instances.insert(key.clone(), Some(row.clone()));
        self.pending.instances.insert(key, row.clone());
        Ok(())
    }

    fn update_instance(&mut self, row: &InstanceRow) -> Result<()> {
        // Same as the insert: an update of a missing row inserts it.
        Driver::insert_instance(self, row)
    }

    fn add_history(&mut self, record: &HistoryRecord) -> Result<()> {
        writable(self.writable)?;
        self.pending.history.insert(
            (record.instance_id.clone(), record.position),
            record.clone(),
        );
        Ok(())
    }

    /// The stored records merged with this transaction's held-back ones.
    fn take_intake(&mut self, limit: usize) -> Result<Vec<IntakeRow>> {
        if !std::mem::take(&mut self.intake_waits) {
            return Ok(Vec::new());
        }
        intake::take(self, limit)
    }

    fn refuse_intake(&mut self, row: &IntakeRow, reason: &str, at: Millis) -> Result<()> {
        intake::refuse(self, row, reason, at)
    }

    fn intake_counts(&mut self) -> Result<IntakeCounts> {
        intake::counts(self)
    }

    fn history(&mut self, instance_id: &str) -> Result<Vec<HistoryRecord>> {
        let stored = self.query(
            "SELECT * FROM history WHERE instance_id = $1 ORDER BY position",
            &[instance_id.into()],
            decode::history,
        )?;
        let key = instance_id.to_owned();
        let mut held = self
            .pending
            .history
            .range((key.clone(), 0)..=(key, u64::MAX))
            .map(|(_, h)| h.clone())
            .peekable();
        if held.peek().is_none() {
            return Ok(stored);
        }
        let mut merged: BTreeMap<u64, HistoryRecord> =
            stored.into_iter().map(|h| (h.position, h)).collect();
        merged.extend(held.map(|h| (h.position, h)));
        Ok(merged.into_values().collect())
    }
}
