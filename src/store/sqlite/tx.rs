//! [`Tx`] over one SQLite transaction. Every statement is `prepare_cached` with placeholders;
//! the only SQL assembled at run time is the choice of index, filter columns and `?` lists
//! for the paged lists, all from constants. Each list is served by an index seek (see the
//! query-plan tests in `tests.rs`).

use std::cell::Cell;
use std::collections::{BTreeMap, HashMap};

use rusqlite::types::Value;
use rusqlite::{Connection, OptionalExtension, Params, Row, params, params_from_iter};

use super::map_error;
use super::rows;
use crate::clock::Millis;
use crate::error::{Error, Result};
use crate::model::event::DedupRecord;
use crate::model::work::WorkFilter;
use crate::model::workflow::ActionOutcome;
use crate::model::{
    AuditEntry, Authority, Grant, HistoryPosition, HistoryRecord, IdempotentAnswer, Ingestion,
    InstanceRow, JournalEvent, Lease, PageRequest, Schedule, Subscription, WorkItem,
    WorkflowDefinitionRow, WriteRecord,
};
use crate::store::RETENTION;
use crate::store::backend::Tx;
use crate::store::sql::{bound, incident_bound, int, json, limit};

type Map<T> = fn(&Row<'_>) -> rusqlite::Result<T>;

/// One open transaction (the caller owns BEGIN / COMMIT / ROLLBACK).
pub(super) struct SqliteTx<'a> {
    conn: &'a Connection,
    label: &'a str,
    writable: bool,
    /// This transaction's revision once [`Tx::commit_revision`] advanced it.
    revision: Option<u64>,
    /// Set when a statement hit `SQLITE_BUSY` / `SQLITE_LOCKED`: the caller retries.
    busy: Cell<bool>,
    /// Counter deltas not yet written: a claim batch moves the same few cells once per
    /// item, so they are summed here and written once, before any counter read and at
    /// commit ([`Self::flush`]).
    pending_counters: BTreeMap<String, i64>,
    /// The owner of each work row read in this write transaction: an update that keeps
    /// the owner leaves `owner_id` out of its SET list, so SQLite does not rewrite the row's
    /// `work_owner` index entry (a completion never changes the owner).
    owners: HashMap<String, Option<String>>,
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
            owners: HashMap::new(),
        }
    }

    /// Remembers the stored owner of work rows read inside a write transaction (the lock is
    /// held, so they cannot change under it).
    fn note_owners<'i>(&mut self, items: impl Iterator<Item = &'i WorkItem>) {
        if self.writable {
            for item in items {
                self.owners.insert(item.id.clone(), item.owner_id.clone());
            }
        }
    }

    /// Writes the buffered counter deltas. The caller runs it before COMMIT. A net delta of
    /// zero is written too: a counter once adjusted exists (at 0), as in the memory store,
    /// and a copy recreates zero-valued counters exactly.
    pub(super) fn flush(&mut self) -> Result<()> {
        for (name, delta) in std::mem::take(&mut self.pending_counters) {
            self.exec(
                "INSERT INTO counters (name, value) VALUES (?1, ?2)
                 ON CONFLICT (name) DO UPDATE SET value = value + excluded.value",
                params![name, delta],
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

    fn writable(&self) -> Result<()> {
        if self.writable {
            Ok(())
        } else {
            Err(Error::ReadOnly("write inside a read transaction".into()))
        }
    }

    fn exec(&self, sql: &str, p: impl Params) -> Result<usize> {
        self.writable()?;
        let conn = self.conn;
        self.check(conn.prepare_cached(sql).and_then(|mut s| s.execute(p)))
    }

    fn one<T>(&self, sql: &str, p: impl Params, map: Map<T>) -> Result<Option<T>> {
        let conn = self.conn;
        self.check(
            conn.prepare_cached(sql)
                .and_then(|mut s| s.query_row(p, map).optional()),
        )
    }

    fn all<T>(&self, sql: &str, p: impl Params, map: Map<T>) -> Result<Vec<T>> {
        let conn = self.conn;
        self.check(
            conn.prepare_cached(sql)
                .and_then(|mut s| s.query_map(p, map)?.collect()),
        )
    }

    /// A `count(*)` over an index range starting at `since`.
    fn count(&self, sql: &str, since: Millis) -> Result<u64> {
        let n: i64 = self.one(sql, [since], |r| r.get(0))?.unwrap_or(0);
        Ok(n.unsigned_abs())
    }

    fn meta(&self, key: &str) -> Result<i64> {
        self.one("SELECT value FROM meta WHERE key = ?1", [key], |r| r.get(0))?
            .ok_or_else(|| self.missing_meta(key))
    }

    fn missing_meta(&self, key: &str) -> Error {
        Error::Corrupt(format!("{}: the meta row {key:?} is missing", self.label))
    }

    /// Advances a meta counter by one and returns the new value.
    fn bump_meta(&self, key: &str) -> Result<i64> {
        self.writable()?;
        self.one(
            "UPDATE meta SET value = value + 1 WHERE key = ?1 RETURNING value",
            [key],
            |r| r.get(0),
        )?
        .ok_or_else(|| self.missing_meta(key))
    }

    /// One keyset page: rows of `from` matching `conds` strictly after (or, backwards,
    /// before) `after` in `key` order, returned ascending.
    #[allow(clippy::too_many_arguments)]
    fn page<T>(
        &self,
        from: &str,
        key: &str,
        mut conds: Vec<String>,
        mut values: Vec<Value>,
        after: Option<Value>,
        backwards: bool,
        n: usize,
        map: Map<T>,
    ) -> Result<Vec<T>> {
        let (cmp, dir) = if backwards {
            ("<", "DESC")
        } else {
            (">", "ASC")
        };
        if let Some(after) = after {
            conds.push(format!("{key} {cmp} ?"));
            values.push(after);
        }
        let filter = if conds.is_empty() {
            String::new()
        } else {
            format!(" WHERE {}", conds.join(" AND "))
        };
        let sql = format!("SELECT * FROM {from}{filter} ORDER BY {key} {dir} LIMIT ?");
        values.push(Value::Integer(limit(n)));
        let mut rows = self.all(&sql, params_from_iter(values), map)?;
        if backwards {
            rows.reverse();
        }
        Ok(rows)
    }

    /// A page keyed by a text primary key, optionally narrowed by one equality.
    fn text_page<T>(
        &self,
        table: &str,
        key: &str,
        eq: Option<(&str, &str)>,
        page: &PageRequest,
        map: Map<T>,
    ) -> Result<Vec<T>> {
        let (conds, values) = match eq {
            Some((col, v)) => (vec![format!("{col} = ?")], vec![Value::Text(v.to_owned())]),
            None => (Vec::new(), Vec::new()),
        };
        let after = page.after.clone().map(Value::Text);
        self.page(
            table,
            key,
            conds,
            values,
            after,
            page.backwards,
            page.limit.max(1),
            map,
        )
    }

    /// A page keyed by an integer id; the cursor is its decimal text (zero-padded is fine).
    fn numeric_page<T>(&self, table: &str, page: &PageRequest, map: Map<T>) -> Result<Vec<T>> {
        let after = page
            .after
            .as_ref()
            .and_then(|k| k.parse::<i64>().ok())
            .map(Value::Integer);
        self.page(
            table,
            "id",
            Vec::new(),
            Vec::new(),
            after,
            page.backwards,
            page.limit.max(1),
            map,
        )
    }

    /// A page of the checker's history (`grants` or `writes`): the first `n` rows above
    /// revision `after`, then the rest of the last revision reached (see [`Tx::grants`]).
    fn history_page<T>(
        &self,
        table: &str,
        resource: Option<&str>,
        after: u64,
        n: usize,
        map: Map<T>,
        revision: fn(&T) -> u64,
    ) -> Result<Vec<T>> {
        let (on_resource, mut values) = match resource {
            Some(r) => (" AND resource_id = ?", vec![Value::Text(r.to_owned())]),
            None => ("", Vec::new()),
        };
        let mut head = vec![Value::Integer(bound(after))];
        head.extend(values.iter().cloned());
        head.push(Value::Integer(limit(n)));
        let mut rows = self.all(
            &format!(
                "SELECT * FROM {table} WHERE revision > ?{on_resource} ORDER BY revision, seq LIMIT ?"
            ),
            params_from_iter(head),
            map,
        )?;
        let Some(last) = rows
            .last()
            .map(revision)
            .filter(|_| n > 0 && rows.len() == n)
        else {
            return Ok(rows);
        };
        rows.retain(|r| revision(r) != last);
        values.insert(0, Value::Integer(int(last)?));
        rows.extend(self.all(
            &format!("SELECT * FROM {table} WHERE revision = ?{on_resource} ORDER BY seq"),
            params_from_iter(values),
            map,
        )?);
        Ok(rows)
    }

    /// Inserts a journal row under `seq`.
    fn insert_journal_row(&self, seq: i64, event: &JournalEvent) -> Result<()> {
        self.exec(
            "INSERT INTO journal (seq, event_type, source, external_id, payload, fingerprint, at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            params![
                seq,
                event.event_type,
                event.source,
                event.external_id,
                event.payload,
                event.fingerprint,
                event.at
            ],
        )?;
        Ok(())
    }

    /// Inserts an ingestion under `id`, or the next id when `None`.
    fn insert_ingestion(&self, id: Option<i64>, i: &Ingestion) -> Result<()> {
        self.exec(
            "INSERT INTO ingestions (id, at, event_type, source, external_id, outcome, seq)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            params![
                id,
                i.at,
                i.event_type,
                i.source,
                i.external_id,
                i.outcome.as_str(),
                i.seq
            ],
        )?;
        Ok(())
    }

    /// Inserts an audit entry under `id`, or the next id when `None`.
    fn insert_audit(&self, id: Option<i64>, e: &AuditEntry) -> Result<()> {
        self.exec(
            "INSERT INTO audit (id, at, actor, action, target, outcome) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            params![id, e.at, e.actor, e.action, e.target, e.outcome],
        )?;
        Ok(())
    }

    /// Sets a meta value.
    fn set_meta(&self, key: &str, value: i64) -> Result<()> {
        if self.exec(
            "UPDATE meta SET value = ?2 WHERE key = ?1",
            params![key, value],
        )? == 1
        {
            Ok(())
        } else {
            Err(self.missing_meta(key))
        }
    }

    fn insert_work_row(&self, item: &WorkItem) -> Result<usize> {
        self.exec(
            "INSERT INTO work (id, kind, state, handler, payload, logical_effect_id, idempotency_key, compat,
                owner_id, token, generation, claimed_at, lease_expires_at, attempt_number, uncertain_attempts,
                max_attempts, last_attempt_at, next_eligible_at, last_failure, result, created_at, updated_at, due_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20,
                ?21, ?22, ?23)
             ON CONFLICT (id) DO NOTHING",
            params_from_iter(work_values(item)?),
        )
    }
}

/// `?, ?, ?` for an IN list of `n` values.
fn marks(n: usize) -> String {
    vec!["?"; n].join(", ")
}

impl Tx for SqliteTx<'_> {
    fn revision(&mut self) -> Result<u64> {
        let rev = self.meta("revision")?;
        u64::try_from(rev)
            .map_err(|_| Error::Corrupt(format!("{}: negative revision {rev}", self.label)))
    }

    fn commit_revision(&mut self) -> Result<u64> {
        self.writable()?;
        if let Some(rev) = self.revision {
            return Ok(rev);
        }
        let rev = self.bump_meta("revision")?;
        let rev = u64::try_from(rev)
            .map_err(|_| Error::Corrupt(format!("{}: negative revision {rev}", self.label)))?;
        self.revision = Some(rev);
        Ok(rev)
    }

    fn adjust_counter(&mut self, name: &str, delta: i64) -> Result<()> {
        self.writable()?;
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
        self.one(
            "SELECT * FROM leases WHERE resource_id = ?1",
            [resource],
            rows::lease,
        )
    }

    fn put_lease(&mut self, lease: &Lease) -> Result<()> {
        self.exec(
            "INSERT OR REPLACE INTO leases
                (resource_id, owner_id, token, generation, acquired_at, expires_at, released_at, checkpoint)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            params![
                lease.resource_id,
                lease.owner_id,
                lease.token,
                int(lease.generation)?,
                lease.acquired_at,
                lease.expires_at,
                lease.released_at,
                lease.checkpoint.as_ref().map(json).transpose()?,
            ],
        )?;
        Ok(())
    }

    fn live_lease_count(&mut self, owner: &str, now: Millis) -> Result<u64> {
        let n: i64 = self
            .one(
                "SELECT count(*) FROM leases WHERE owner_id = ?1 AND expires_at > ?2 AND released_at IS NULL",
                params![owner, now],
                |r| r.get(0),
            )?
            .unwrap_or(0);
        Ok(u64::try_from(n).unwrap_or(0))
    }

    fn list_leases(&mut self, page: &PageRequest) -> Result<Vec<Lease>> {
        self.text_page("leases", "resource_id", None, page, rows::lease)
    }

    fn work(&mut self, id: &str) -> Result<Option<WorkItem>> {
        let item = self.one("SELECT * FROM work WHERE id = ?1", [id], rows::work)?;
        self.note_owners(item.iter());
        Ok(item)
    }

    fn insert_work(&mut self, item: &WorkItem) -> Result<bool> {
        Ok(self.insert_work_row(item)? == 1)
    }

    fn update_work(&mut self, item: &WorkItem) -> Result<()> {
        // Only the columns a transition changes: SQLite then leaves the indexes over the
        // identity columns (kind, compat) alone, and over the owner when it is unchanged.
        // Parameters keep `work_values` numbering.
        let same_owner = self.owners.get(&item.id) == Some(&item.owner_id);
        let sql = if same_owner {
            "UPDATE work SET state = ?3, token = ?10, generation = ?11, claimed_at = ?12,
                lease_expires_at = ?13, attempt_number = ?14, uncertain_attempts = ?15, max_attempts = ?16,
                last_attempt_at = ?17, next_eligible_at = ?18, last_failure = ?19, result = ?20,
                updated_at = ?22, due_at = ?23
             WHERE id = ?1"
        } else {
            "UPDATE work SET state = ?3, owner_id = ?9, token = ?10, generation = ?11, claimed_at = ?12,
                lease_expires_at = ?13, attempt_number = ?14, uncertain_attempts = ?15, max_attempts = ?16,
                last_attempt_at = ?17, next_eligible_at = ?18, last_failure = ?19, result = ?20,
                updated_at = ?22, due_at = ?23
             WHERE id = ?1"
        };
        let changed = self.exec(sql, params_from_iter(work_values(item)?))?;
        if self.owners.contains_key(&item.id) {
            self.owners.insert(item.id.clone(), item.owner_id.clone());
        }
        if changed == 0 {
            self.insert_work_row(item)?;
        }
        Ok(())
    }

    fn claimable_work(&mut self, compat: &str, now: Millis, n: usize) -> Result<Vec<WorkItem>> {
        let items = self.all(
            "SELECT * FROM work INDEXED BY work_claim WHERE compat = ?1 AND due_at <= ?2 ORDER BY due_at, id LIMIT ?3",
            params![compat, now, limit(n)],
            rows::work,
        )?;
        self.note_owners(items.iter());
        Ok(items)
    }

    fn lapsed_claims(&mut self, compat: &str, now: Millis, n: usize) -> Result<Vec<WorkItem>> {
        let items = self.all(
            "SELECT * FROM work INDEXED BY work_lapsed WHERE compat = ?1 AND state = 'claimed' AND due_at <= ?2 ORDER BY due_at, id LIMIT ?3",
            params![compat, now, limit(n)],
            rows::work,
        )?;
        self.note_owners(items.iter());
        Ok(items)
    }

    fn list_work(&mut self, filter: &WorkFilter, page: &PageRequest) -> Result<Vec<WorkItem>> {
        let n = page.limit.max(1);
        let mut states: Vec<&str> = filter.states.iter().map(|s| s.as_str()).collect();
        states.sort_unstable();
        states.dedup();
        let mut compats: Vec<&str> = filter.compats.iter().map(String::as_str).collect();
        compats.sort_unstable();
        compats.dedup();

        // One filter leads through its `(column, id)` index (one seek per value, merged);
        // the others narrow the rows that index yields.
        let text = |v: &str| Value::Text(v.to_owned());
        // "What does this authority hold now" (the dashboard asks it for every authority on
        // every refresh) reads the small partial index of claimed items, not every item the
        // owner ever touched.
        let claimed_by =
            filter.owner.is_some() && states == [crate::model::WorkState::Claimed.as_str()];
        let (lead, lead_values): (Option<(&str, &str)>, Vec<Value>) =
            if let (true, Some(owner)) = (claimed_by, &filter.owner) {
                (Some(("work_claimed_by", "owner_id")), vec![text(owner)])
            } else if let Some(owner) = &filter.owner {
                (Some(("work_owner", "owner_id")), vec![text(owner)])
            } else if !states.is_empty() {
                (
                    Some(("work_state", "state")),
                    states.iter().map(|s| text(s)).collect(),
                )
            } else if !compats.is_empty() {
                (
                    Some(("work_compat", "compat")),
                    compats.iter().map(|c| text(c)).collect(),
                )
            } else if let Some(kind) = filter.kind {
                (Some(("work_kind", "kind")), vec![text(kind.as_str())])
            } else {
                (None, Vec::new())
            };
        let lead_col = lead.map(|(_, col)| col);
        let mut conds = Vec::new();
        let mut values = Vec::new();
        if lead_col != Some("owner_id") {
            if let Some(owner) = &filter.owner {
                conds.push("owner_id = ?".to_owned());
                values.push(text(owner));
            }
        }
        if claimed_by {
            // A literal, so the planner sees the partial index's condition.
            conds.push("state = 'claimed'".to_owned());
        } else if lead_col != Some("state") && !states.is_empty() {
            conds.push(format!("state IN ({})", marks(states.len())));
            values.extend(states.iter().map(|s| text(s)));
        }
        if lead_col != Some("compat") && !compats.is_empty() {
            conds.push(format!("compat IN ({})", marks(compats.len())));
            values.extend(compats.iter().map(|c| text(c)));
        }
        if lead_col != Some("kind") {
            if let Some(kind) = filter.kind {
                conds.push("kind = ?".to_owned());
                values.push(text(kind.as_str()));
            }
        }
        if let Some(prefix) = &filter.id_prefix {
            conds.push("id >= ?".to_owned());
            values.push(text(prefix));
            if let Some(end) = crate::model::page::prefix_end(prefix) {
                conds.push("id < ?".to_owned());
                values.push(Value::Text(end));
            }
        }
        let after = page.after.clone().map(Value::Text);
        let Some((index, col)) = lead else {
            return self.page(
                "work",
                "id",
                conds,
                values,
                after,
                page.backwards,
                n,
                rows::work,
            );
        };
        // The claimed-by index is left to the planner: a store created before it existed
        // (opened read-only, so nothing is added) still answers, through `work_owner`.
        let from = if claimed_by {
            "work".to_owned()
        } else {
            format!("work INDEXED BY {index}")
        };
        let mut rows = Vec::new();
        for v in lead_values {
            let mut c = vec![format!("{col} = ?")];
            c.extend(conds.iter().cloned());
            let mut p = vec![v];
            p.extend(values.iter().cloned());
            rows.extend(self.page(
                &from,
                "id",
                c,
                p,
                after.clone(),
                page.backwards,
                n,
                rows::work,
            )?);
        }
        rows.sort_by(|a, b| a.id.cmp(&b.id));
        if page.backwards {
            let skip = rows.len().saturating_sub(n);
            rows.drain(..skip);
        } else {
            rows.truncate(n);
        }
        Ok(rows)
    }

    fn oldest_waiting_work(&mut self) -> Result<Option<Millis>> {
        self.one(
            "SELECT next_eligible_at FROM work INDEXED BY work_waiting WHERE state IN ('pending', 'retry') ORDER BY next_eligible_at LIMIT 1",
            [],
            |r| r.get(0),
        )
    }

    fn dedup(&mut self, source: &str, external_id: &str) -> Result<Option<DedupRecord>> {
        self.one(
            "SELECT * FROM dedup WHERE source = ?1 AND external_id = ?2",
            [source, external_id],
            rows::dedup,
        )
    }

    fn put_dedup(&mut self, record: &DedupRecord) -> Result<()> {
        self.exec(
            "INSERT OR REPLACE INTO dedup (source, external_id, fingerprint, seq, first_seen_at)
             VALUES (?1, ?2, ?3, ?4, ?5)",
            params![
                record.source,
                record.external_id,
                record.fingerprint,
                record.seq,
                record.first_seen_at
            ],
        )?;
        Ok(())
    }

    fn append_journal(&mut self, event: &JournalEvent) -> Result<i64> {
        let seq = self.bump_meta("journal_seq")?;
        self.insert_journal_row(seq, event)?;
        self.exec(
            "DELETE FROM journal WHERE seq <= ?1",
            [seq - RETENTION.journal_events],
        )?;
        Ok(seq)
    }

    fn journal_after(
        &mut self,
        after: i64,
        event_type: Option<&str>,
        n: usize,
    ) -> Result<Vec<JournalEvent>> {
        match event_type {
            Some(t) => self.all(
                "SELECT * FROM journal WHERE event_type = ?1 AND seq > ?2 ORDER BY seq LIMIT ?3",
                params![t, after, limit(n)],
                rows::journal,
            ),
            None => self.all(
                "SELECT * FROM journal WHERE seq > ?1 ORDER BY seq LIMIT ?2",
                params![after, limit(n)],
                rows::journal,
            ),
        }
    }

    fn journal_high_water(&mut self) -> Result<i64> {
        self.meta("journal_seq")
    }

    fn journal_type_high_water(&mut self, event_type: &str) -> Result<i64> {
        let max = self.one(
            "SELECT COALESCE(MAX(seq), 0) FROM journal WHERE event_type = ?1",
            [event_type],
            |r| r.get(0),
        )?;
        Ok(max.unwrap_or(0))
    }

    fn add_ingestion(&mut self, ingestion: &Ingestion) -> Result<()> {
        self.insert_ingestion(None, ingestion)
    }

    fn list_ingestions(&mut self, page: &PageRequest) -> Result<Vec<Ingestion>> {
        self.numeric_page("ingestions", page, rows::ingestion)
    }

    fn subscription(&mut self, id: &str) -> Result<Option<Subscription>> {
        self.one(
            "SELECT * FROM subscriptions WHERE subscription_id = ?1",
            [id],
            rows::subscription,
        )
    }

    fn put_subscription(&mut self, sub: &Subscription) -> Result<()> {
        self.exec(
            "INSERT OR REPLACE INTO subscriptions
                (subscription_id, event_type, sequence, generation, updated_at, updated_by)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            params![
                sub.subscription_id,
                sub.event_type,
                int(sub.sequence)?,
                int(sub.generation)?,
                sub.updated_at,
                sub.updated_by
            ],
        )?;
        Ok(())
    }

    fn list_subscriptions(&mut self, page: &PageRequest) -> Result<Vec<Subscription>> {
        self.text_page(
            "subscriptions",
            "subscription_id",
            None,
            page,
            rows::subscription,
        )
    }

    fn schedule(&mut self, id: &str) -> Result<Option<Schedule>> {
        self.one(
            "SELECT * FROM schedules WHERE schedule_id = ?1",
            [id],
            rows::schedule,
        )
    }

    fn put_schedule(&mut self, s: &Schedule) -> Result<()> {
        self.exec(
            "INSERT OR REPLACE INTO schedules
                (schedule_id, trigger, catch_up, handler, payload, compat, last_due, next_due, created_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
            params![
                s.schedule_id,
                json(&s.trigger)?,
                json(&s.catch_up)?,
                s.handler,
                s.payload,
                s.compat,
                s.last_due,
                s.next_due,
                s.created_at
            ],
        )?;
        Ok(())
    }

    fn due_schedules(&mut self, now: Millis, n: usize) -> Result<Vec<Schedule>> {
        self.all(
            "SELECT * FROM schedules WHERE next_due <= ?1 ORDER BY next_due, schedule_id LIMIT ?2",
            params![now, limit(n)],
            rows::schedule,
        )
    }

    fn list_schedules(&mut self, page: &PageRequest) -> Result<Vec<Schedule>> {
        self.text_page("schedules", "schedule_id", None, page, rows::schedule)
    }

    fn authority(&mut self, id: &str) -> Result<Option<Authority>> {
        self.one(
            "SELECT * FROM authorities WHERE instance_id = ?1",
            [id],
            rows::authority,
        )
    }

    fn put_authority(&mut self, a: &Authority) -> Result<()> {
        self.exec(
            "INSERT OR REPLACE INTO authorities
                (instance_id, compat, build, config, started_at, heartbeat_at, stopped_at, host, pid)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
            params![a.instance_id, a.compat, a.build, a.config, a.started_at, a.heartbeat_at, a.stopped_at, a.host, a.pid],
        )?;
        Ok(())
    }

    fn delete_authority(&mut self, id: &str) -> Result<bool> {
        let n = self.exec("DELETE FROM authorities WHERE instance_id = ?1", [id])?;
        Ok(n > 0)
    }

    fn list_authorities(&mut self, page: &PageRequest) -> Result<Vec<Authority>> {
        self.text_page("authorities", "instance_id", None, page, rows::authority)
    }

    fn idempotent_answer(&mut self, key: &str) -> Result<Option<String>> {
        self.one(
            "SELECT answer FROM idempotency WHERE key = ?1",
            [key],
            |r| r.get(0),
        )
    }

    fn put_idempotent_answer(&mut self, key: &str, answer: &str, at: Millis) -> Result<()> {
        self.exec(
            "INSERT OR REPLACE INTO idempotency (key, answer, at) VALUES (?1, ?2, ?3)",
            params![key, answer, at],
        )?;
        Ok(())
    }

    fn add_audit(&mut self, entry: &AuditEntry) -> Result<()> {
        self.insert_audit(None, entry)
    }

    fn list_audit(&mut self, page: &PageRequest) -> Result<Vec<AuditEntry>> {
        self.numeric_page("audit", page, rows::audit)
    }

    fn add_grant(&mut self, g: &Grant) -> Result<()> {
        self.exec(
            "INSERT INTO grants (revision, resource_id, generation, owner_id, how, owner_compat, item_compat, at,
                from_owner, from_generation, lapsed_ms)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
            params![
                int(g.revision)?, g.resource_id, int(g.generation)?, g.owner_id, g.how.as_str(), g.owner_compat, g.item_compat, g.at,
                g.took_over.as_ref().map(|t| &t.from_owner),
                g.took_over.as_ref().map(|t| int(t.from_generation)).transpose()?,
                g.took_over.as_ref().map(|t| t.lapsed_ms),
            ],
        )?;
        Ok(())
    }

    fn add_write(&mut self, w: &WriteRecord) -> Result<()> {
        self.exec(
            "INSERT INTO writes (revision, resource_id, generation, owner_id, verb, accepted, refusal, detail, at,
                holder_id, holder_generation)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
            params![
                int(w.revision)?, w.resource_id, int(w.generation)?, w.owner_id, w.verb.as_str(), w.accepted, w.refusal, w.detail, w.at,
                w.holder.as_ref().and_then(|h| h.owner_id.as_ref()),
                w.holder.as_ref().map(|h| int(h.generation)).transpose()?,
            ],
        )?;
        Ok(())
    }

    fn grants(&mut self, resource: Option<&str>, after: u64, n: usize) -> Result<Vec<Grant>> {
        self.history_page("grants", resource, after, n, rows::grant, |g| g.revision)
    }

    fn latest_grants(&mut self, resource: &str, n: usize) -> Result<Vec<Grant>> {
        self.all(
            "SELECT * FROM grants WHERE resource_id = ?1 ORDER BY revision DESC, seq DESC LIMIT ?2",
            params![resource, limit(n)],
            rows::grant,
        )
    }

    fn writes(&mut self, resource: Option<&str>, after: u64, n: usize) -> Result<Vec<WriteRecord>> {
        self.history_page("writes", resource, after, n, rows::write_record, |w| {
            w.revision
        })
    }

    fn trim_history(
        &mut self,
        keep_from_revision: u64,
        keep_incidents_since: Millis,
    ) -> Result<()> {
        let keep = bound(keep_from_revision);
        self.exec(
            "DELETE FROM grants WHERE revision < ?1 AND (from_owner IS NULL OR at < ?2)",
            [keep, keep_incidents_since],
        )?;
        self.exec(
            "DELETE FROM writes WHERE revision < ?1 AND (accepted = 1 OR at < ?2)",
            [keep, keep_incidents_since],
        )?;
        Ok(())
    }

    fn failovers(
        &mut self,
        since: Millis,
        before: Option<HistoryPosition>,
        n: usize,
    ) -> Result<Vec<(HistoryPosition, Grant)>> {
        let (at, seq) = incident_bound(before);
        self.all(
            "SELECT * FROM grants WHERE from_owner IS NOT NULL AND at >= ?1 AND (at, seq) < (?2, ?3)
             ORDER BY at DESC, seq DESC LIMIT ?4",
            params![since, at, seq, limit(n)],
            rows::failover,
        )
    }

    fn count_failovers(&mut self, since: Millis) -> Result<u64> {
        self.count(
            "SELECT count(*) FROM grants WHERE from_owner IS NOT NULL AND at >= ?1",
            since,
        )
    }

    fn refused_writes(
        &mut self,
        since: Millis,
        before: Option<HistoryPosition>,
        n: usize,
    ) -> Result<Vec<(HistoryPosition, WriteRecord)>> {
        let (at, seq) = incident_bound(before);
        self.all(
            "SELECT * FROM writes WHERE accepted = 0 AND at >= ?1 AND (at, seq) < (?2, ?3)
             ORDER BY at DESC, seq DESC LIMIT ?4",
            params![since, at, seq, limit(n)],
            rows::refused_write,
        )
    }

    fn count_refused_writes(&mut self, since: Millis) -> Result<u64> {
        self.count(
            "SELECT count(*) FROM writes WHERE accepted = 0 AND at >= ?1",
            since,
        )
    }

    fn put_definition(&mut self, d: &WorkflowDefinitionRow) -> Result<()> {
        self.exec(
            "INSERT OR REPLACE INTO definitions (workflow_id, fingerprint, definition, deployed_at)
             VALUES (?1, ?2, ?3, ?4)",
            params![d.workflow_id, d.fingerprint, d.definition, d.deployed_at],
        )?;
        Ok(())
    }

    fn definition(&mut self, workflow_id: &str) -> Result<Option<WorkflowDefinitionRow>> {
        self.one(
            "SELECT * FROM definitions WHERE workflow_id = ?1",
            [workflow_id],
            rows::definition,
        )
    }

    fn list_definitions(&mut self, page: &PageRequest) -> Result<Vec<WorkflowDefinitionRow>> {
        self.text_page("definitions", "workflow_id", None, page, rows::definition)
    }

    fn instance(&mut self, id: &str) -> Result<Option<InstanceRow>> {
        self.one(
            "SELECT * FROM instances WHERE instance_id = ?1",
            [id],
            rows::instance,
        )
    }

    fn instance_by_start_key(&mut self, start_key: &str) -> Result<Option<InstanceRow>> {
        self.one(
            "SELECT * FROM instances WHERE start_key = ?1",
            [start_key],
            rows::instance,
        )
    }

    fn insert_instance(&mut self, row: &InstanceRow) -> Result<()> {
        // An upsert on the id (the memory provider's insert replaces a same-id row).
        self.exec(
            "INSERT INTO instances (instance_id, workflow_id, status, compat, instance_revision, next_eligible_at,
                waiting_event, principal, start_key, state, created_at, updated_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)
             ON CONFLICT (instance_id) DO UPDATE SET workflow_id = excluded.workflow_id, status = excluded.status,
                compat = excluded.compat, instance_revision = excluded.instance_revision,
                next_eligible_at = excluded.next_eligible_at, waiting_event = excluded.waiting_event,
                principal = excluded.principal, start_key = excluded.start_key, state = excluded.state,
                created_at = excluded.created_at, updated_at = excluded.updated_at",
            params_from_iter(instance_values(row)?),
        )?;
        Ok(())
    }

    fn update_instance(&mut self, row: &InstanceRow) -> Result<()> {
        let changed = self.exec(
            "UPDATE instances SET workflow_id = ?2, status = ?3, compat = ?4, instance_revision = ?5,
                next_eligible_at = ?6, waiting_event = ?7, principal = ?8, start_key = ?9, state = ?10,
                created_at = ?11, updated_at = ?12
             WHERE instance_id = ?1",
            params_from_iter(instance_values(row)?),
        )?;
        if changed == 0 {
            self.insert_instance(row)?;
        }
        Ok(())
    }

    fn runnable_instances(
        &mut self,
        compat: &str,
        now: Millis,
        n: usize,
    ) -> Result<Vec<InstanceRow>> {
        self.all(
            "SELECT * FROM instances INDEXED BY instances_runnable WHERE compat = ?1 AND next_eligible_at <= ?2
             ORDER BY next_eligible_at, instance_id LIMIT ?3",
            params![compat, now, limit(n)],
            rows::instance,
        )
    }

    fn instances_waiting_for(
        &mut self,
        event_type: &str,
        after: Option<&str>,
        n: usize,
    ) -> Result<Vec<InstanceRow>> {
        let page = PageRequest::resume(after, n);
        self.text_page(
            "instances",
            "instance_id",
            Some(("waiting_event", event_type)),
            &page,
            rows::instance,
        )
    }

    fn list_instances(
        &mut self,
        status: Option<&str>,
        id_prefix: Option<&str>,
        page: &PageRequest,
    ) -> Result<Vec<InstanceRow>> {
        let mut conds = Vec::new();
        let mut values = Vec::new();
        if let Some(status) = status {
            conds.push("status = ?".to_owned());
            values.push(Value::Text(status.to_owned()));
        }
        if let Some(prefix) = id_prefix {
            conds.push("instance_id >= ?".to_owned());
            values.push(Value::Text(prefix.to_owned()));
            if let Some(end) = crate::model::page::prefix_end(prefix) {
                conds.push("instance_id < ?".to_owned());
                values.push(Value::Text(end));
            }
        }
        self.page(
            "instances",
            "instance_id",
            conds,
            values,
            page.after.clone().map(Value::Text),
            page.backwards,
            page.limit.max(1),
            rows::instance,
        )
    }

    fn add_history(&mut self, h: &HistoryRecord) -> Result<()> {
        self.exec(
            "INSERT OR REPLACE INTO history
                (instance_id, position, instance_revision, kind, at, step_id, activation_id, detail)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            params![
                h.instance_id,
                int(h.position)?,
                int(h.instance_revision)?,
                h.kind,
                h.at,
                h.step_id,
                h.activation_id,
                h.detail
            ],
        )?;
        Ok(())
    }

    fn history(&mut self, instance_id: &str) -> Result<Vec<HistoryRecord>> {
        self.all(
            "SELECT * FROM history WHERE instance_id = ?1 ORDER BY position",
            [instance_id],
            rows::history,
        )
    }

    fn action_outcome(&mut self, invocation_id: &str) -> Result<Option<ActionOutcome>> {
        self.one(
            "SELECT * FROM action_outcomes WHERE invocation_id = ?1",
            [invocation_id],
            rows::outcome,
        )
    }

    fn put_action_outcome(&mut self, o: &ActionOutcome) -> Result<()> {
        self.exec(
            "INSERT OR REPLACE INTO action_outcomes (invocation_id, attempt, outcome, detail, at)
             VALUES (?1, ?2, ?3, ?4, ?5)",
            params![o.invocation_id, o.attempt, o.outcome, o.detail, o.at],
        )?;
        Ok(())
    }

    fn list_dedup(&mut self, after: Option<(&str, &str)>, n: usize) -> Result<Vec<DedupRecord>> {
        match after {
            Some((source, external_id)) => self.all(
                "SELECT * FROM dedup WHERE (source, external_id) > (?1, ?2)
                 ORDER BY source, external_id LIMIT ?3",
                params![source, external_id, limit(n)],
                rows::dedup,
            ),
            None => self.all(
                "SELECT * FROM dedup ORDER BY source, external_id LIMIT ?1",
                [limit(n)],
                rows::dedup,
            ),
        }
    }

    fn list_idempotent_answers(
        &mut self,
        after: Option<&str>,
        n: usize,
    ) -> Result<Vec<IdempotentAnswer>> {
        self.text_page(
            "idempotency",
            "key",
            None,
            &PageRequest::resume(after, n),
            rows::idempotent_answer,
        )
    }

    fn list_action_outcomes(
        &mut self,
        after: Option<&str>,
        n: usize,
    ) -> Result<Vec<ActionOutcome>> {
        self.text_page(
            "action_outcomes",
            "invocation_id",
            None,
            &PageRequest::resume(after, n),
            rows::outcome,
        )
    }

    fn import_journal(&mut self, event: &JournalEvent) -> Result<()> {
        self.insert_journal_row(event.seq, event)
    }

    fn import_ingestion(&mut self, ingestion: &Ingestion) -> Result<()> {
        self.insert_ingestion(Some(ingestion.id), ingestion)
    }

    fn import_audit(&mut self, entry: &AuditEntry) -> Result<()> {
        self.insert_audit(Some(entry.id), entry)
    }

    fn import_revision(&mut self, revision: u64, journal_high_water: i64) -> Result<()> {
        self.set_meta("revision", int(revision)?)?;
        self.set_meta("journal_seq", journal_high_water)
    }
}

/// The 23 positional parameters of a work row, in column order.
fn work_values(item: &WorkItem) -> Result<Vec<Value>> {
    Ok(vec![
        item.id.clone().into(),
        item.kind.as_str().to_owned().into(),
        item.state.as_str().to_owned().into(),
        item.handler.clone().into(),
        item.payload.clone().into(),
        item.logical_effect_id.clone().into(),
        item.idempotency_key.clone().into(),
        item.compat.clone().into(),
        item.owner_id.clone().into(),
        item.token.clone().into(),
        int(item.generation)?.into(),
        item.claimed_at.into(),
        item.lease_expires_at.into(),
        item.attempt_number.into(),
        item.uncertain_attempts.into(),
        item.max_attempts.into(),
        item.last_attempt_at.into(),
        item.next_eligible_at.into(),
        item.last_failure.as_ref().map(json).transpose()?.into(),
        item.result.clone().into(),
        item.created_at.into(),
        item.updated_at.into(),
        item.due_at().into(),
    ])
}

/// The 12 positional parameters of an instance row, in column order.
fn instance_values(row: &InstanceRow) -> Result<Vec<Value>> {
    Ok(vec![
        row.instance_id.clone().into(),
        row.workflow_id.clone().into(),
        row.status.to_string().into(),
        row.compat.clone().into(),
        int(row.instance_revision)?.into(),
        row.next_eligible_at.into(),
        row.waiting_event.clone().into(),
        row.principal.clone().into(),
        row.start_key.clone().into(),
        row.state.clone().into(),
        row.created_at.into(),
        row.updated_at.into(),
    ])
}
