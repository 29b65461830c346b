//! The SQLite side of the shared SQL layer: one transaction as a
//! [`Driver`](crate::store::sql::Driver). Every statement is `prepare_cached`; the shared
//! statements are in `store/sql/`. What is SQLite's own: counter deltas summed until the
//! commit, work updates that leave unchanged indexed columns alone, and `INDEXED BY` hints
//! so each list is an index seek (see the query-plan tests in `tests.rs`).

use std::cell::Cell;
use std::collections::BTreeMap;
use std::sync::LazyLock;

use rusqlite::{Connection, params_from_iter};

use super::bind::SqliteRow;
use super::map_error;
use crate::clock::Millis;
use crate::error::{Error, Result};
use crate::model::work::{WorkFilter, WorkLane};
use crate::model::{
    Grant, HistoryRecord, InstanceRow, Lease, PageRequest, WorkItem, WorkflowDefinitionRow,
    WriteRecord,
};
use crate::store::sql::dialect::{Dialect, SQLITE, on_conflict_update};
use crate::store::sql::encode::{
    self, DEFINITIONS, GRANTS, HISTORY, INSTANCES, LEASES, WORK, WRITES,
};
use crate::store::sql::row::Decode;
use crate::store::sql::statements::Statements;
use crate::store::sql::value::SqlValue;
use crate::store::sql::{Driver, RECLAIM, decode, lanes, limit, writable};

/// One open transaction (the caller owns BEGIN / COMMIT / ROLLBACK).
pub(super) struct SqliteTx<'a> {
    conn: &'a Connection,
    label: &'a str,
    writable: bool,
    /// This transaction's revision once `commit_revision` advanced it.
    revision: Option<u64>,
    /// Set when a statement hit `SQLITE_BUSY` / `SQLITE_LOCKED`: the caller retries.
    busy: Cell<bool>,
    /// Counter deltas not yet written: a claim batch moves the same few cells once per
    /// item, so they are summed here and written once, before any counter read and at
    /// commit ([`Self::flush`]).
    pending_counters: BTreeMap<String, i64>,
    /// The grants and fenced writes this transaction added, in the order it added them:
    /// the chain link of its revision is made from them, where reading them back cost two
    /// queries and a decode of every row of the batch.
    added: (Vec<Grant>, Vec<WriteRecord>),
}

impl<'a> SqliteTx<'a> {
    pub(super) fn new(conn: &'a Connection, label: &'a str, writable: bool) -> Self {
        Self {
            conn,
            label,
            writable,
            revision: None,
            busy: Cell::new(false),
            pending_counters: BTreeMap::new(),
            added: (Vec::new(), Vec::new()),
        }
    }

    /// Writes the buffered counter deltas. The caller runs it before COMMIT. A net delta of
    /// zero is written too: a counter once adjusted exists (at 0), as in the memory store,
    /// and a copy recreates zero-valued counters exactly.
    pub(super) fn flush(&mut self) -> Result<()> {
        for (name, delta) in std::mem::take(&mut self.pending_counters) {
            self.execute(
                "INSERT INTO counters (name, value) VALUES (?1, ?2)
                 ON CONFLICT (name) DO UPDATE SET value = value + excluded.value",
                &[name.into(), delta.into()],
            )?;
        }
        Ok(())
    }

    /// Whether a statement failed with physical contention.
    pub(super) fn hit_busy(&self) -> bool {
        self.busy.get()
    }

    fn check<T>(&self, r: rusqlite::Result<T>) -> Result<T> {
        r.map_err(|e| {
            if super::is_busy(&e) {
                self.busy.set(true);
            }
            map_error(self.label, &e)
        })
    }

    /// Work rows through `index`.
    fn work_through(
        &mut self,
        index: &str,
        cond: &str,
        compat: &str,
        now: Millis,
        n: usize,
    ) -> Result<Vec<WorkItem>> {
        let sql = format!(
            "SELECT * FROM {} WHERE compat = ?1 AND {cond}due_at <= ?2 ORDER BY due_at, id LIMIT ?3",
            SQLITE.from("work", index)
        );
        self.query(
            &sql,
            &[compat.into(), now.into(), limit(n).into()],
            decode::work,
        )
    }

    fn insert_work_row(&mut self, item: &WorkItem) -> Result<u64> {
        static SQL: LazyLock<String> =
            LazyLock::new(|| format!("{} ON CONFLICT (id) DO NOTHING", SQLITE.insert(&WORK)));
        self.execute(&SQL, &encode::work(item)?)
    }
}

impl Driver for SqliteTx<'_> {
    const DIALECT: &'static Dialect = &SQLITE;

    fn label(&self) -> &str {
        self.label
    }

    fn is_writable(&self) -> bool {
        self.writable
    }

    fn execute(&mut self, sql: &str, params: &[SqlValue]) -> Result<u64> {
        writable(self.writable)?;
        let conn = self.conn;
        let n = self.check(
            conn.prepare_cached(sql)
                .and_then(|mut s| s.execute(params_from_iter(params))),
        )?;
        Ok(n as u64)
    }

    fn query<T>(&mut self, sql: &str, params: &[SqlValue], decode: Decode<T>) -> Result<Vec<T>> {
        let conn = self.conn;
        let mut stmt = self.check(conn.prepare_cached(sql))?;
        let mut rows = self.check(stmt.query(params_from_iter(params)))?;
        let mut out = Vec::new();
        while let Some(row) = self.check(rows.next())? {
            out.push(decode(&SqliteRow(row)).map_err(|e| match e {
                Error::Corrupt(why) => Error::Corrupt(format!("{}: {why}", self.label)),
                other => other,
            })?);
        }
        Ok(out)
    }

    fn settle(&mut self) -> Result<()> {
        Ok(())
    }

    fn known_meta(&self, _key: &str) -> Option<i64> {
        None
    }

    fn remember_meta(&mut self, _key: &str, _value: i64) {}

    fn revision(&mut self) -> Result<u64> {
        self.stored_revision()
    }

    fn commit_revision(&mut self) -> Result<u64> {
        if let Some(rev) = self.revision {
            return Ok(rev);
        }
        let rev = self.next_revision()?;
        self.revision = Some(rev);
        Ok(rev)
    }

    fn adjust_counter(&mut self, name: &str, delta: i64) -> Result<()> {
        writable(self.writable)?;
        match self.pending_counters.get_mut(name) {
            Some(sum) => *sum += delta,
            None => {
                self.pending_counters.insert(name.to_owned(), delta);
            }
        }
        Ok(())
    }

    fn counters(&mut self, prefix: &str) -> Result<Vec<(String, i64)>> {
        self.flush()?;
        // A range seek on the primary key from `prefix`, stopping at the first name past it.
        let conn = self.conn;
        let rows = conn
            .prepare_cached("SELECT name, value FROM counters WHERE name >= ?1 ORDER BY name")
            .and_then(|mut s| {
                let mut rows = s.query([prefix])?;
                let mut out = Vec::new();
                while let Some(row) = rows.next()? {
                    let name: String = row.get(0)?;
                    if !name.starts_with(prefix) {
                        break;
                    }
                    out.push((name, row.get(1)?));
                }
                Ok(out)
            });
        self.check(rows)
    }

    fn lease(&mut self, resource: &str) -> Result<Option<Lease>> {
        self.by_key(&LEASES, resource, decode::lease)
    }

    fn put_lease(&mut self, lease: &Lease) -> Result<()> {
        self.execute(SQLITE.upsert(&LEASES), &encode::lease(lease)?)?;
        Ok(())
    }

    fn work(&mut self, id: &str) -> Result<Option<WorkItem>> {
        self.by_key(&WORK, id, decode::work)
    }

    fn prefetch_work(&mut self, _ids: &[&str]) -> Result<()> {
        Ok(())
    }

    fn insert_work(&mut self, item: &WorkItem) -> Result<bool> {
        Ok(self.insert_work_row(item)? == 1)
    }

    fn work_by_key(&mut self, key: &str) -> Result<Option<WorkItem>> {
        self.one(
            "SELECT * FROM work INDEXED BY work_key WHERE idempotency_key = ?1
             ORDER BY idempotency_key, id LIMIT 1",
            &[key.into()],
            decode::work,
        )
    }

    fn prefetch_work_keys(&mut self, _keys: &[&str]) -> Result<()> {
        Ok(())
    }

    fn update_work(&mut self, item: &WorkItem) -> Result<()> {
        // Only the columns a transition changes: SQLite then leaves the indexes over the
        // identity columns (kind, compat, key) alone. Every index over the owner names the
        // state in its condition, so SQLite maintains it at every transition whether or not
        // the owner is set here. Parameters keep the work row's column numbering. Priority
        // never changes after the insert; it is set with the rest only because every
        // parameter must be used.
        let sql = "UPDATE work SET state = ?3, owner_id = ?9, token = ?10, generation = ?11, claimed_at = ?12,
                lease_expires_at = ?13, attempt_number = ?14, uncertain_attempts = ?15, max_attempts = ?16,
                last_attempt_at = ?17, next_eligible_at = ?18, last_failure = ?19, result = ?20,
                updated_at = ?22, due_at = ?23, checkpoint = ?24, priority = ?25
             WHERE id = ?1";
        let changed = self.execute(sql, &encode::work(item)?)?;
        if changed == 0 {
            self.insert_work_row(item)?;
        }
        Ok(())
    }

    fn lane_claimable(
        &mut self,
        compat: &str,
        lane: &WorkLane,
        now: Millis,
        n: usize,
    ) -> Result<Vec<WorkItem>> {
        self.query(
            lanes::lane_items_sql(&SQLITE),
            &lanes::lane_items_params(compat, lane, now, n),
            decode::work,
        )
    }

    fn lapsed_claims(&mut self, compat: &str, now: Millis, n: usize) -> Result<Vec<WorkItem>> {
        self.work_through("work_reclaim", RECLAIM, compat, now, n)
    }

    fn list_work(&mut self, filter: &WorkFilter, page: &PageRequest) -> Result<Vec<WorkItem>> {
        super::list_work::list_work(self, filter, page)
    }

    fn add_grant(&mut self, grant: &Grant) -> Result<()> {
        self.execute(SQLITE.insert(&GRANTS), &encode::grant(grant)?)?;
        self.added.0.push(grant.clone());
        Ok(())
    }

    fn add_write(&mut self, write: &WriteRecord) -> Result<()> {
        self.execute(SQLITE.insert(&WRITES), &encode::write(write)?)?;
        self.added.1.push(write.clone());
        Ok(())
    }

    /// What this transaction wrote through: every row it stamped is among those it added.
    /// One that added none reads them back, so an idle write (a heartbeat, an empty poll)
    /// still reads both history tables and finds a damaged store on its next commit.
    fn own_history(&self, revision: u64) -> Option<(Vec<Grant>, Vec<WriteRecord>)> {
        let (grants, writes) = &self.added;
        (!grants.is_empty() || !writes.is_empty())
            .then(|| crate::store::sql::stamped_among(&self.added, revision))
    }

    fn put_definition(&mut self, def: &WorkflowDefinitionRow) -> Result<()> {
        self.execute(SQLITE.upsert(&DEFINITIONS), &encode::definition(def))?;
        Ok(())
    }

    fn definition(&mut self, workflow_id: &str) -> Result<Option<WorkflowDefinitionRow>> {
        self.by_key(&DEFINITIONS, workflow_id, decode::definition)
    }

    fn instance(&mut self, id: &str) -> Result<Option<InstanceRow>> {
        self.by_key(&INSTANCES, id, decode::instance)
    }

    fn insert_instance(&mut self, row: &InstanceRow) -> Result<()> {
        // An upsert on the id (the memory provider's insert replaces a same-id row).
        static SQL: LazyLock<String> = LazyLock::new(|| {
            let insert = SQLITE.insert(&INSTANCES);
            format!("{insert} {}", on_conflict_update(&INSTANCES))
        });
        self.execute(&SQL, &encode::instance(row)?)?;
        Ok(())
    }

    fn update_instance(&mut self, row: &InstanceRow) -> Result<()> {
        let changed = self.execute(SQLITE.update_by_key(&INSTANCES), &encode::instance(row)?)?;
        if changed == 0 {
            Driver::insert_instance(self, row)?;
        }
        Ok(())
    }

    fn add_history(&mut self, record: &HistoryRecord) -> Result<()> {
        self.execute(SQLITE.upsert(&HISTORY), &encode::history(record)?)?;
        Ok(())
    }

    fn history(&mut self, instance_id: &str) -> Result<Vec<HistoryRecord>> {
        self.query(
            "SELECT * FROM history WHERE instance_id = ?1 ORDER BY position",
            &[instance_id.into()],
            decode::history,
        )
    }
}
