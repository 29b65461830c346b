//! [`Tx`] over one PostgreSQL transaction. Every statement is prepared once per connection
//! with `$n` placeholders; the only SQL assembled at run time is the choice of filter
//! columns for the paged lists, all from constants. Each list is served by an index (the
//! schema mirrors SQLite's indexes).
//!
//! Every statement is a network round trip, so the hot writes are held back and sent as
//! one statement per table (arrays through `unnest`): work, lease, instance and history
//! rows, counter deltas, grants and write records wait in [`Pending`] until a statement
//! that lists one of those tables (each such method flushes first), or the commit. Rows
//! read or written by key in a write transaction are remembered in [`Seen`]: the write
//! lock keeps every other writer out, so they cannot change under it, and a read by key
//! is answered from there (history by key merges the held-back records). A batch of
//! work rows is read in one round trip ([`Tx::prefetch_work`]). A claim batch or a group
//! commit thus costs a constant handful of round trips, whatever its size.

use std::collections::{BTreeMap, HashMap};

use postgres::Row;
use postgres::types::ToSql;

use super::{Conn, Names, map_error, rows, transient};
use crate::clock::Millis;
use crate::error::{Error, Result};
use crate::model::event::DedupRecord;
use crate::model::work::WorkFilter;
use crate::model::workflow::ActionOutcome;
use crate::model::{
    AuditEntry, Authority, Grant, HistoryPosition, HistoryRecord, IdempotentAnswer, Ingestion,
    InstanceRow, JournalEvent, Lease, PageRequest, Schedule, Subscription, WorkItem, WorkState,
    WorkflowDefinitionRow, WriteRecord,
};
use crate::store::RETENTION;
use crate::store::backend::Tx;
use crate::store::sql::{Transient, bound, incident_bound, int, json, limit};

type Map<T> = fn(&Row) -> Result<T>;
type Param<'a> = &'a (dyn ToSql + Sync);

/// Owned parameters of a statement assembled at run time.
#[derive(Default)]
struct Query {
    conds: Vec<String>,
    values: Vec<Box<dyn ToSql + Sync>>,
}

impl Query {
    /// Binds a value and returns its placeholder.
    fn bind(&mut self, value: impl ToSql + Sync + 'static) -> String {
        self.values.push(Box::new(value));
        format!("${}", self.values.len())
    }

    /// Adds the condition `{lhs} {placeholder}{rhs}`.
    fn cond(&mut self, lhs: &str, value: impl ToSql + Sync + 'static, rhs: &str) {
        let p = self.bind(value);
        self.conds.push(format!("{lhs} {p}{rhs}"));
    }

    fn params(&self) -> Vec<Param<'_>> {
        self.values.iter().map(|v| &**v as Param<'_>).collect()
    }
}

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
    }
}

/// Rows a write transaction has read or written, by key (`None`: known not to exist). The
/// write lock keeps every other writer out, so they cannot change but through it.
#[derive(Default)]
struct Seen {
    work: HashMap<String, Option<WorkItem>>,
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
    /// This transaction's revision once [`Tx::commit_revision`] advanced it.
    revision: Option<u64>,
    /// Set when a statement failed in a way that may pass on a fresh attempt.
    transient: Option<Transient>,
    pending: Pending,
    seen: Seen,
    /// The backend's high-water revision when this transaction began.
    high_water: u64,
    /// The revision this transaction read or will commit as.
    seen_revision: Option<u64>,
}

impl<'a> PgTx<'a> {
    pub(super) fn new(
        conn: &'a mut Conn,
        names: &'a Names,
        writable: bool,
        high_water: u64,
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
        }
    }

    /// The store revision this transaction read or advanced to (committed if it commits).
    pub(super) fn seen_revision(&self) -> Option<u64> {
        self.seen_revision
    }

    /// Sends every held-back write: one statement per table. The backend calls it before
    /// COMMIT; every statement that could observe them calls it first.
    pub(super) fn flush(&mut self) -> Result<()> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let pending = std::mem::take(&mut self.pending);
        if !pending.work.is_empty() {
            let columns = WorkColumns::of(pending.work.values())?;
            self.exec(UPSERT_WORK, &columns.params())?;
        }
        if !pending.leases.is_empty() {
            let l: Vec<&Lease> = pending.leases.values().collect();
            let resource: Vec<&str> = l.iter().map(|l| l.resource_id.as_str()).collect();
            let owner: Vec<&str> = l.iter().map(|l| l.owner_id.as_str()).collect();
            let token: Vec<&str> = l.iter().map(|l| l.token.as_str()).collect();
            let generation = l
                .iter()
                .map(|l| int(l.generation))
                .collect::<Result<Vec<_>>>()?;
            let acquired: Vec<i64> = l.iter().map(|l| l.acquired_at).collect();
            let expires: Vec<i64> = l.iter().map(|l| l.expires_at).collect();
            let released: Vec<Option<i64>> = l.iter().map(|l| l.released_at).collect();
            let checkpoint = l
                .iter()
                .map(|l| l.checkpoint.as_ref().map(json).transpose())
                .collect::<Result<Vec<_>>>()?;
            self.exec(
                "INSERT INTO leases
                    (resource_id, owner_id, token, generation, acquired_at, expires_at, released_at, checkpoint)
                 SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[], $5::bigint[],
                    $6::bigint[], $7::bigint[], $8::text[])
                 ON CONFLICT (resource_id) DO UPDATE SET owner_id = EXCLUDED.owner_id, token = EXCLUDED.token,
                    generation = EXCLUDED.generation, acquired_at = EXCLUDED.acquired_at,
                    expires_at = EXCLUDED.expires_at, released_at = EXCLUDED.released_at,
                    checkpoint = EXCLUDED.checkpoint",
                &[
                    &resource,
                    &owner,
                    &token,
                    &generation,
                    &acquired,
                    &expires,
                    &released,
                    &checkpoint,
                ],
            )?;
        }
        if !pending.instances.is_empty() {
            let r: Vec<&InstanceRow> = pending.instances.values().collect();
            let text = |f: fn(&InstanceRow) -> &str| r.iter().map(|r| f(r)).collect::<Vec<_>>();
            let opt =
                |f: fn(&InstanceRow) -> Option<&str>| r.iter().map(|r| f(r)).collect::<Vec<_>>();
            let revision = r
                .iter()
                .map(|r| int(r.instance_revision))
                .collect::<Result<Vec<_>>>()?;
            let next: Vec<Option<i64>> = r.iter().map(|r| r.next_eligible_at).collect();
            let created: Vec<i64> = r.iter().map(|r| r.created_at).collect();
            let updated: Vec<i64> = r.iter().map(|r| r.updated_at).collect();
            self.exec(
                "INSERT INTO instances (instance_id, workflow_id, status, compat, instance_revision,
                    next_eligible_at, waiting_event, principal, start_key, state, created_at, updated_at)
                 SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::bigint[],
                    $6::bigint[], $7::text[], $8::text[], $9::text[], $10::text[], $11::bigint[], $12::bigint[])
                 ON CONFLICT (instance_id) DO UPDATE SET workflow_id = EXCLUDED.workflow_id,
                    status = EXCLUDED.status, compat = EXCLUDED.compat,
                    instance_revision = EXCLUDED.instance_revision, next_eligible_at = EXCLUDED.next_eligible_at,
                    waiting_event = EXCLUDED.waiting_event, principal = EXCLUDED.principal,
                    start_key = EXCLUDED.start_key, state = EXCLUDED.state, created_at = EXCLUDED.created_at,
                    updated_at = EXCLUDED.updated_at",
                &[
                    &text(|r| &r.instance_id),
                    &text(|r| &r.workflow_id),
                    &text(|r| r.status.as_str()),
                    &text(|r| &r.compat),
                    &revision,
                    &next,
                    &opt(|r| r.waiting_event.as_deref()),
                    &text(|r| &r.principal),
                    &opt(|r| r.start_key.as_deref()),
                    &text(|r| &r.state),
                    &created,
                    &updated,
                ],
            )?;
        }
        if !pending.history.is_empty() {
            let h: Vec<&HistoryRecord> = pending.history.values().collect();
            let id: Vec<&str> = h.iter().map(|h| h.instance_id.as_str()).collect();
            let position = h
                .iter()
                .map(|h| int(h.position))
                .collect::<Result<Vec<_>>>()?;
            let revision = h
                .iter()
                .map(|h| int(h.instance_revision))
                .collect::<Result<Vec<_>>>()?;
            let kind: Vec<&str> = h.iter().map(|h| h.kind.as_str()).collect();
            let at: Vec<i64> = h.iter().map(|h| h.at).collect();
            let step: Vec<Option<&str>> = h.iter().map(|h| h.step_id.as_deref()).collect();
            let activation: Vec<Option<&str>> =
                h.iter().map(|h| h.activation_id.as_deref()).collect();
            let detail: Vec<&str> = h.iter().map(|h| h.detail.as_str()).collect();
            self.exec(
                "INSERT INTO history
                    (instance_id, position, instance_revision, kind, at, step_id, activation_id, detail)
                 SELECT * FROM unnest($1::text[], $2::bigint[], $3::bigint[], $4::text[], $5::bigint[],
                    $6::text[], $7::text[], $8::text[])
                 ON CONFLICT (instance_id, position) DO UPDATE SET
                    instance_revision = EXCLUDED.instance_revision, kind = EXCLUDED.kind, at = EXCLUDED.at,
                    step_id = EXCLUDED.step_id, activation_id = EXCLUDED.activation_id,
                    detail = EXCLUDED.detail",
                &[
                    &id,
                    &position,
                    &revision,
                    &kind,
                    &at,
                    &step,
                    &activation,
                    &detail,
                ],
            )?;
        }
        if !pending.counters.is_empty() {
            let (names, deltas): (Vec<String>, Vec<i64>) = pending.counters.into_iter().unzip();
            self.exec(
                "INSERT INTO counters (name, value) SELECT * FROM unnest($1::text[], $2::bigint[])
                 ON CONFLICT (name) DO UPDATE SET value = counters.value + EXCLUDED.value",
                &[&names, &deltas],
            )?;
        }
        if !pending.grants.is_empty() {
            let g = &pending.grants;
            let revision = g
                .iter()
                .map(|g| int(g.revision))
                .collect::<Result<Vec<_>>>()?;
            let generation = g
                .iter()
                .map(|g| int(g.generation))
                .collect::<Result<Vec<_>>>()?;
            let resource: Vec<&str> = g.iter().map(|g| g.resource_id.as_str()).collect();
            let owner: Vec<&str> = g.iter().map(|g| g.owner_id.as_str()).collect();
            let how: Vec<&str> = g.iter().map(|g| g.how.as_str()).collect();
            let owner_compat: Vec<Option<&str>> =
                g.iter().map(|g| g.owner_compat.as_deref()).collect();
            let item_compat: Vec<Option<&str>> =
                g.iter().map(|g| g.item_compat.as_deref()).collect();
            let at: Vec<i64> = g.iter().map(|g| g.at).collect();
            let from_owner: Vec<Option<&str>> = g
                .iter()
                .map(|g| g.took_over.as_ref().map(|t| t.from_owner.as_str()))
                .collect();
            let from_generation = g
                .iter()
                .map(|g| {
                    g.took_over
                        .as_ref()
                        .map(|t| int(t.from_generation))
                        .transpose()
                })
                .collect::<Result<Vec<_>>>()?;
            let lapsed: Vec<Option<i64>> = g
                .iter()
                .map(|g| g.took_over.as_ref().map(|t| t.lapsed_ms))
                .collect();
            self.exec(
                "INSERT INTO grants (revision, resource_id, generation, owner_id, how, owner_compat, item_compat, at,
                    from_owner, from_generation, lapsed_ms)
                 SELECT revision, resource_id, generation, owner_id, how, owner_compat, item_compat, at,
                    from_owner, from_generation, lapsed_ms
                 FROM unnest($1::bigint[], $2::text[], $3::bigint[], $4::text[], $5::text[], $6::text[],
                    $7::text[], $8::bigint[], $9::text[], $10::bigint[], $11::bigint[])
                    WITH ORDINALITY AS t(revision, resource_id, generation, owner_id, how, owner_compat,
                    item_compat, at, from_owner, from_generation, lapsed_ms, n)
                 ORDER BY n",
                &[
                    &revision,
                    &resource,
                    &generation,
                    &owner,
                    &how,
                    &owner_compat,
                    &item_compat,
                    &at,
                    &from_owner,
                    &from_generation,
                    &lapsed,
                ],
            )?;
        }
        if !pending.writes.is_empty() {
            let w = &pending.writes;
            let revision = w
                .iter()
                .map(|w| int(w.revision))
                .collect::<Result<Vec<_>>>()?;
            let generation = w
                .iter()
                .map(|w| int(w.generation))
                .collect::<Result<Vec<_>>>()?;
            let resource: Vec<&str> = w.iter().map(|w| w.resource_id.as_str()).collect();
            let owner: Vec<&str> = w.iter().map(|w| w.owner_id.as_str()).collect();
            let verb: Vec<&str> = w.iter().map(|w| w.verb.as_str()).collect();
            let accepted: Vec<bool> = w.iter().map(|w| w.accepted).collect();
            let refusal: Vec<Option<&str>> = w.iter().map(|w| w.refusal.as_deref()).collect();
            let detail: Vec<&str> = w.iter().map(|w| w.detail.as_str()).collect();
            let at: Vec<i64> = w.iter().map(|w| w.at).collect();
            let holder_id: Vec<Option<&str>> = w
                .iter()
                .map(|w| w.holder.as_ref().and_then(|h| h.owner_id.as_deref()))
                .collect();
            let holder_generation = w
                .iter()
                .map(|w| w.holder.as_ref().map(|h| int(h.generation)).transpose())
                .collect::<Result<Vec<_>>>()?;
            self.exec(
                "INSERT INTO writes (revision, resource_id, generation, owner_id, verb, accepted, refusal, detail, at,
                    holder_id, holder_generation)
                 SELECT revision, resource_id, generation, owner_id, verb, accepted, refusal, detail, at,
                    holder_id, holder_generation
                 FROM unnest($1::bigint[], $2::text[], $3::bigint[], $4::text[], $5::text[], $6::boolean[],
                    $7::text[], $8::text[], $9::bigint[], $10::text[], $11::bigint[])
                    WITH ORDINALITY AS t(revision, resource_id, generation, owner_id, verb, accepted, refusal,
                    detail, at, holder_id, holder_generation, n)
                 ORDER BY n",
                &[
                    &revision,
                    &resource,
                    &generation,
                    &owner,
                    &verb,
                    &accepted,
                    &refusal,
                    &detail,
                    &at,
                    &holder_id,
                    &holder_generation,
                ],
            )?;
        }
        Ok(())
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
        key: &str,
        sql: &str,
        map: Map<T>,
    ) -> Result<Option<T>> {
        if !self.writable {
            return self.one(sql, &[&key], map);
        }
        if let Some(known) = cache(&mut self.seen).get(key) {
            return Ok(known.clone());
        }
        let row = self.one(sql, &[&key], map)?;
        cache(&mut self.seen).insert(key.to_owned(), row.clone());
        Ok(row)
    }

    /// Why a statement failed transiently, if one did: the backend runs the transaction
    /// again.
    pub(super) fn take_transient(&mut self) -> Option<Transient> {
        self.transient.take()
    }

    fn check<T>(&mut self, r: std::result::Result<T, postgres::Error>) -> Result<T> {
        r.map_err(|e| {
            if let Some(t) = transient(self.names, &e, self.conn.client()) {
                self.transient = Some(t);
            }
            map_error(self.names, &e)
        })
    }

    fn writable(&self) -> Result<()> {
        if self.writable {
            Ok(())
        } else {
            Err(Error::ReadOnly("write inside a read transaction".into()))
        }
    }

    /// Runs a query. Held-back writes are not sent first: a method reading `work`,
    /// `counters`, `grants` or `writes` calls [`Self::flush`] itself.
    fn query(&mut self, sql: &str, params: &[Param<'_>]) -> Result<Vec<Row>> {
        let conn = &mut *self.conn;
        let rows = conn
            .statement(sql)
            .and_then(|s| conn.client().query(&s, params));
        self.check(rows)
    }

    /// Runs a write statement (see [`Self::query`] about held-back writes).
    fn exec(&mut self, sql: &str, params: &[Param<'_>]) -> Result<u64> {
        self.writable()?;
        let conn = &mut *self.conn;
        let n = conn
            .statement(sql)
            .and_then(|s| conn.client().execute(&s, params));
        self.check(n)
    }

    fn one<T>(&mut self, sql: &str, params: &[Param<'_>], map: Map<T>) -> Result<Option<T>> {
        self.query(sql, params)?.first().map(map).transpose()
    }

    fn all<T>(&mut self, sql: &str, params: &[Param<'_>], map: Map<T>) -> Result<Vec<T>> {
        self.query(sql, params)?.iter().map(map).collect()
    }

    /// A `count(*)` over an index range starting at `since`.
    fn count(&mut self, sql: &str, since: Millis) -> Result<u64> {
        let n = self.one(sql, &[&since], first_i64)?.unwrap_or(0);
        Ok(n.unsigned_abs())
    }

    /// Reads a meta value (once per write transaction: only this one can change it).
    fn meta(&mut self, key: &str) -> Result<i64> {
        if let Some(v) = self.seen.meta.get(key) {
            return Ok(*v);
        }
        let v = self
            .query("SELECT value FROM meta WHERE key = $1", &[&key])?
            .first()
            .map(first_i64)
            .transpose()?
            .ok_or_else(|| missing_meta(self.names, key))?;
        if self.writable {
            self.seen.meta.insert(key.to_owned(), v);
        }
        Ok(v)
    }

    /// Advances a meta counter by one and returns the new value.
    fn bump_meta(&mut self, key: &str) -> Result<i64> {
        self.writable()?;
        let v = self
            .query(
                "UPDATE meta SET value = value + 1 WHERE key = $1 RETURNING value",
                &[&key],
            )?
            .first()
            .map(first_i64)
            .transpose()?
            .ok_or_else(|| missing_meta(self.names, key))?;
        self.seen.meta.insert(key.to_owned(), v);
        Ok(v)
    }

    /// One keyset page: rows of `table` matching `q` strictly after (or, backwards, before)
    /// `after` in `key` order, returned ascending.
    #[allow(clippy::too_many_arguments)]
    fn page<T>(
        &mut self,
        table: &str,
        key: &str,
        mut q: Query,
        after: Option<Box<dyn ToSql + Sync>>,
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
            q.values.push(after);
            q.conds.push(format!("{key} {cmp} ${}", q.values.len()));
        }
        let filter = if q.conds.is_empty() {
            String::new()
        } else {
            format!(" WHERE {}", q.conds.join(" AND "))
        };
        let lim = q.bind(limit(n));
        let sql = format!("SELECT * FROM {table}{filter} ORDER BY {key} {dir} LIMIT {lim}");
        let mut rows = self.all(&sql, &q.params(), map)?;
        if backwards {
            rows.reverse();
        }
        Ok(rows)
    }

    /// A page keyed by a text primary key, optionally narrowed by one equality.
    fn text_page<T>(
        &mut self,
        table: &str,
        key: &str,
        eq: Option<(&str, &str)>,
        page: &PageRequest,
        map: Map<T>,
    ) -> Result<Vec<T>> {
        let mut q = Query::default();
        if let Some((col, v)) = eq {
            q.cond(&format!("{col} ="), v.to_owned(), "");
        }
        let after = page
            .after
            .clone()
            .map(|a| Box::new(a) as Box<dyn ToSql + Sync>);
        self.page(table, key, q, after, page.backwards, page.limit.max(1), map)
    }

    /// A page keyed by an integer id; the cursor is its decimal text.
    fn numeric_page<T>(&mut self, table: &str, page: &PageRequest, map: Map<T>) -> Result<Vec<T>> {
        let after = page
            .after
            .as_ref()
            .and_then(|k| k.parse::<i64>().ok())
            .map(|a| Box::new(a) as Box<dyn ToSql + Sync>);
        self.page(
            table,
            "id",
            Query::default(),
            after,
            page.backwards,
            page.limit.max(1),
            map,
        )
    }

    /// A page of the checker's history (`grants` or `writes`): the first `n` rows above
    /// revision `after`, then the rest of the last revision reached (see [`Tx::grants`]).
    fn history_page<T>(
        &mut self,
        table: &str,
        resource: Option<&str>,
        after: u64,
        n: usize,
        map: Map<T>,
        revision: fn(&T) -> u64,
    ) -> Result<Vec<T>> {
        self.flush()?;
        let on_resource = if resource.is_some() {
            " AND resource_id = $3"
        } else {
            ""
        };
        let (after, lim) = (bound(after), limit(n));
        let mut params: Vec<Param<'_>> = vec![&after, &lim];
        if let Some(r) = &resource {
            params.push(r);
        }
        let mut rows = self.all(
            &format!(
                "SELECT * FROM {table} WHERE revision > $1{on_resource} ORDER BY revision, seq LIMIT $2"
            ),
            &params,
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
        let last = int(last)?;
        params[0] = &last;
        let on_resource = if resource.is_some() {
            " AND resource_id = $2"
        } else {
            ""
        };
        params.remove(1);
        rows.extend(self.all(
            &format!("SELECT * FROM {table} WHERE revision = $1{on_resource} ORDER BY seq"),
            &params,
            map,
        )?);
        Ok(rows)
    }

    /// Stores a journal row under `seq`.
    fn insert_journal_row(&mut self, seq: i64, event: &JournalEvent) -> Result<()> {
        self.exec(
            "INSERT INTO journal (seq, event_type, source, external_id, payload, fingerprint, at)
             VALUES ($1, $2, $3, $4, $5, $6, $7)",
            &[
                &seq,
                &event.event_type,
                &event.source,
                &event.external_id,
                &event.payload,
                &event.fingerprint,
                &event.at,
            ],
        )?;
        Ok(())
    }

    /// Stores an ingestion under `id`, or the next id (max + 1: writers are serialised).
    fn insert_ingestion(&mut self, id: Option<i64>, i: &Ingestion) -> Result<()> {
        self.exec(
            "INSERT INTO ingestions (id, at, event_type, source, external_id, outcome, seq)
             VALUES (coalesce($1, (SELECT coalesce(max(id), 0) + 1 FROM ingestions)), $2, $3, $4, $5, $6, $7)",
            &[
                &id,
                &i.at,
                &i.event_type,
                &i.source,
                &i.external_id,
                &i.outcome.as_str(),
                &i.seq,
            ],
        )?;
        Ok(())
    }

    /// Stores an audit entry under `id`, or the next id (max + 1: writers are serialised).
    fn insert_audit(&mut self, id: Option<i64>, e: &AuditEntry) -> Result<()> {
        self.exec(
            "INSERT INTO audit (id, at, actor, action, target, outcome)
             VALUES (coalesce($1, (SELECT coalesce(max(id), 0) + 1 FROM audit)), $2, $3, $4, $5, $6)",
            &[&id, &e.at, &e.actor, &e.action, &e.target, &e.outcome],
        )?;
        Ok(())
    }

    /// Sets a meta value.
    fn set_meta(&mut self, key: &str, value: i64) -> Result<()> {
        if self.exec("UPDATE meta SET value = $2 WHERE key = $1", &[&key, &value])? == 1 {
            self.seen.meta.insert(key.to_owned(), value);
            Ok(())
        } else {
            Err(missing_meta(self.names, key))
        }
    }
}

/// Writes work rows (new or changed) from one array per column.
const UPSERT_WORK: &str = "INSERT INTO work (id, kind, state, handler, payload, logical_effect_id,
        idempotency_key, compat, owner_id, token, generation, claimed_at, lease_expires_at, attempt_number,
        uncertain_attempts, max_attempts, last_attempt_at, next_eligible_at, last_failure, result, created_at,
        updated_at, due_at)
    SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[],
        $8::text[], $9::text[], $10::text[], $11::bigint[], $12::bigint[], $13::bigint[], $14::bigint[],
        $15::bigint[], $16::bigint[], $17::bigint[], $18::bigint[], $19::text[], $20::text[], $21::bigint[],
        $22::bigint[], $23::bigint[])
    ON CONFLICT (id) DO UPDATE SET kind = EXCLUDED.kind, state = EXCLUDED.state,
        handler = EXCLUDED.handler, payload = EXCLUDED.payload,
        logical_effect_id = EXCLUDED.logical_effect_id, idempotency_key = EXCLUDED.idempotency_key,
        compat = EXCLUDED.compat, owner_id = EXCLUDED.owner_id, token = EXCLUDED.token,
        generation = EXCLUDED.generation, claimed_at = EXCLUDED.claimed_at,
        lease_expires_at = EXCLUDED.lease_expires_at, attempt_number = EXCLUDED.attempt_number,
        uncertain_attempts = EXCLUDED.uncertain_attempts, max_attempts = EXCLUDED.max_attempts,
        last_attempt_at = EXCLUDED.last_attempt_at, next_eligible_at = EXCLUDED.next_eligible_at,
        last_failure = EXCLUDED.last_failure, result = EXCLUDED.result,
        created_at = EXCLUDED.created_at, updated_at = EXCLUDED.updated_at, due_at = EXCLUDED.due_at";

/// Work rows as one array per column, in [`UPSERT_WORK`]'s parameter order.
#[derive(Default)]
struct WorkColumns<'a> {
    id: Vec<&'a str>,
    kind: Vec<&'static str>,
    state: Vec<&'static str>,
    handler: Vec<&'a str>,
    payload: Vec<&'a str>,
    logical_effect_id: Vec<&'a str>,
    idempotency_key: Vec<&'a str>,
    compat: Vec<&'a str>,
    owner_id: Vec<Option<&'a str>>,
    token: Vec<Option<&'a str>>,
    generation: Vec<i64>,
    claimed_at: Vec<Option<i64>>,
    lease_expires_at: Vec<Option<i64>>,
    attempt_number: Vec<i64>,
    uncertain_attempts: Vec<i64>,
    max_attempts: Vec<i64>,
    last_attempt_at: Vec<Option<i64>>,
    next_eligible_at: Vec<i64>,
    last_failure: Vec<Option<String>>,
    result: Vec<Option<&'a str>>,
    created_at: Vec<i64>,
    updated_at: Vec<i64>,
    due_at: Vec<Option<i64>>,
}

impl<'a> WorkColumns<'a> {
    fn of(items: impl Iterator<Item = &'a WorkItem>) -> Result<Self> {
        let mut c = Self::default();
        for item in items {
            c.id.push(&item.id);
            c.kind.push(item.kind.as_str());
            c.state.push(item.state.as_str());
            c.handler.push(&item.handler);
            c.payload.push(&item.payload);
            c.logical_effect_id.push(&item.logical_effect_id);
            c.idempotency_key.push(&item.idempotency_key);
            c.compat.push(&item.compat);
            c.owner_id.push(item.owner_id.as_deref());
            c.token.push(item.token.as_deref());
            c.generation.push(int(item.generation)?);
            c.claimed_at.push(item.claimed_at);
            c.lease_expires_at.push(item.lease_expires_at);
            c.attempt_number.push(item.attempt_number.into());
            c.uncertain_attempts.push(item.uncertain_attempts.into());
            c.max_attempts.push(item.max_attempts.into());
            c.last_attempt_at.push(item.last_attempt_at);
            c.next_eligible_at.push(item.next_eligible_at);
            c.last_failure
                .push(item.last_failure.as_ref().map(json).transpose()?);
            c.result.push(item.result.as_deref());
            c.created_at.push(item.created_at);
            c.updated_at.push(item.updated_at);
            c.due_at.push(item.due_at());
        }
        Ok(c)
    }

    fn params(&self) -> [Param<'_>; 23] {
        [
            &self.id,
            &self.kind,
            &self.state,
            &self.handler,
            &self.payload,
            &self.logical_effect_id,
            &self.idempotency_key,
            &self.compat,
            &self.owner_id,
            &self.token,
            &self.generation,
            &self.claimed_at,
            &self.lease_expires_at,
            &self.attempt_number,
            &self.uncertain_attempts,
            &self.max_attempts,
            &self.last_attempt_at,
            &self.next_eligible_at,
            &self.last_failure,
            &self.result,
            &self.created_at,
            &self.updated_at,
            &self.due_at,
        ]
    }
}

fn first_i64(row: &Row) -> Result<i64> {
    row.try_get(0)
        .map_err(|e| Error::Corrupt(format!("unreadable row: {e}")))
}

fn first_opt_i64(row: &Row) -> Result<Option<i64>> {
    row.try_get(0)
        .map_err(|e| Error::Corrupt(format!("unreadable row: {e}")))
}

fn first_string(row: &Row) -> Result<String> {
    row.try_get(0)
        .map_err(|e| Error::Corrupt(format!("unreadable row: {e}")))
}

fn missing_meta(names: &Names, key: &str) -> Error {
    Error::Corrupt(format!("{}: the meta row {key:?} is missing", names.label))
}

fn to_u64(names: &Names, rev: i64) -> Result<u64> {
    u64::try_from(rev)
        .map_err(|_| Error::Corrupt(format!("{}: negative revision {rev}", names.label)))
}

impl Tx for PgTx<'_> {
    fn revision(&mut self) -> Result<u64> {
        let rev = self.meta("revision")?;
        let rev = to_u64(self.names, rev)?;
        self.seen_revision = self.seen_revision.max(Some(rev));
        Ok(rev)
    }

    fn commit_revision(&mut self) -> Result<u64> {
        self.writable()?;
        if let Some(rev) = self.revision {
            return Ok(rev);
        }
        let rev = self.bump_meta("revision")?;
        let rev = to_u64(self.names, rev)?;
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
        self.writable()?;
        *self.pending.counters.entry(name.to_owned()).or_default() += delta;
        Ok(())
    }

    fn counters(&mut self, prefix: &str) -> Result<Vec<(String, i64)>> {
        self.flush()?;
        // A range seek on the primary key from `prefix` (byte order: COLLATE "C").
        self.all(
            "SELECT name, value FROM counters WHERE name >= $1 AND starts_with(name, $1) ORDER BY name",
            &[&prefix],
            |r| {
                Ok((
                    first_string(r)?,
                    r.try_get(1)
                        .map_err(|e| Error::Corrupt(format!("unreadable row: {e}")))?,
                ))
            },
        )
    }

    fn lease(&mut self, resource: &str) -> Result<Option<Lease>> {
        self.cached(
            |seen| &mut seen.leases,
            resource,
            "SELECT * FROM leases WHERE resource_id = $1",
            rows::lease,
        )
    }

    fn put_lease(&mut self, lease: &Lease) -> Result<()> {
        self.writable()?;
        let key = lease.resource_id.clone();
        self.seen.leases.insert(key.clone(), Some(lease.clone()));
        self.pending.leases.insert(key, lease.clone());
        Ok(())
    }

    fn live_lease_count(&mut self, owner: &str, now: Millis) -> Result<u64> {
        self.flush()?;
        let n = self
            .one(
                "SELECT count(*) FROM leases WHERE owner_id = $1 AND expires_at > $2 AND released_at IS NULL",
                &[&owner, &now],
                first_i64,
            )?
            .unwrap_or(0);
        Ok(u64::try_from(n).unwrap_or(0))
    }

    fn list_leases(&mut self, page: &PageRequest) -> Result<Vec<Lease>> {
        self.flush()?;
        self.text_page("leases", "resource_id", None, page, rows::lease)
    }

    fn work(&mut self, id: &str) -> Result<Option<WorkItem>> {
        self.cached(
            |seen| &mut seen.work,
            id,
            "SELECT * FROM work WHERE id = $1",
            rows::work,
        )
    }

    fn prefetch_work(&mut self, ids: &[&str]) -> Result<()> {
        if !self.writable {
            return Ok(());
        }
        let wanted: Vec<&str> = ids
            .iter()
            .copied()
            .filter(|id| !self.seen.work.contains_key(*id))
            .collect();
        if wanted.is_empty() {
            return Ok(());
        }
        let found = self
            .query("SELECT * FROM work WHERE id = ANY($1)", &[&wanted])?
            .iter()
            .map(rows::work)
            .collect::<Result<Vec<_>>>()?;
        for id in wanted {
            self.seen.work.insert(id.to_owned(), None);
        }
        self.saw(&found);
        Ok(())
    }

    fn insert_work(&mut self, item: &WorkItem) -> Result<bool> {
        self.writable()?;
        let absent = match self.seen.work.get(&item.id) {
            Some(Some(_)) => return Ok(false),
            Some(None) => true,
            None => self.work(&item.id)?.is_none(),
        };
        if absent {
            self.update_work(item)?;
        }
        Ok(absent)
    }

    fn update_work(&mut self, item: &WorkItem) -> Result<()> {
        self.writable()?;
        self.seen.work.insert(item.id.clone(), Some(item.clone()));
        self.pending.work.insert(item.id.clone(), item.clone());
        Ok(())
    }

    fn claimable_work(&mut self, compat: &str, now: Millis, n: usize) -> Result<Vec<WorkItem>> {
        self.flush()?;
        let items = self.all(
            "SELECT * FROM work WHERE compat = $1 AND due_at <= $2 ORDER BY due_at, id LIMIT $3",
            &[&compat, &now, &limit(n)],
            rows::work,
        )?;
        if self.writable {
            self.saw(&items);
        }
        Ok(items)
    }

    fn lapsed_claims(&mut self, compat: &str, now: Millis, n: usize) -> Result<Vec<WorkItem>> {
        self.flush()?;
        let items = self.all(
            "SELECT * FROM work WHERE compat = $1 AND state = 'claimed' AND due_at <= $2 ORDER BY due_at, id LIMIT $3",
            &[&compat, &now, &limit(n)],
            rows::work,
        )?;
        if self.writable {
            self.saw(&items);
        }
        Ok(items)
    }

    fn list_work(&mut self, filter: &WorkFilter, page: &PageRequest) -> Result<Vec<WorkItem>> {
        self.flush()?;
        let mut states: Vec<String> = filter.states.iter().map(|s| s.as_str().into()).collect();
        states.sort_unstable();
        states.dedup();
        let mut compats = filter.compats.clone();
        compats.sort_unstable();
        compats.dedup();
        let mut q = Query::default();
        if let Some(owner) = &filter.owner {
            q.cond("owner_id =", owner.clone(), "");
        }
        if filter.owner.is_some() && states == [WorkState::Claimed.as_str()] {
            // "What does this authority hold now" (the dashboard asks it for every authority
            // on every refresh): a literal, so the planner sees the partial index's condition.
            q.conds.push("state = 'claimed'".to_owned());
        } else if !states.is_empty() {
            q.cond("state = ANY(", states, ")");
        }
        if !compats.is_empty() {
            q.cond("compat = ANY(", compats, ")");
        }
        if let Some(kind) = filter.kind {
            q.cond("kind =", kind.as_str(), "");
        }
        if let Some(prefix) = &filter.id_prefix {
            q.cond("id >=", prefix.clone(), "");
            if let Some(end) = crate::model::page::prefix_end(prefix) {
                q.cond("id <", end, "");
            }
        }
        let after = page
            .after
            .clone()
            .map(|a| Box::new(a) as Box<dyn ToSql + Sync>);
        self.page(
            "work",
            "id",
            q,
            after,
            page.backwards,
            page.limit.max(1),
            rows::work,
        )
    }

    fn oldest_waiting_work(&mut self) -> Result<Option<Millis>> {
        self.flush()?;
        Ok(self
            .one(
                "SELECT next_eligible_at FROM work WHERE state IN ('pending', 'retry')
                 ORDER BY next_eligible_at LIMIT 1",
                &[],
                first_opt_i64,
            )?
            .flatten())
    }

    fn dedup(&mut self, source: &str, external_id: &str) -> Result<Option<DedupRecord>> {
        self.one(
            "SELECT * FROM dedup WHERE source = $1 AND external_id = $2",
            &[&source, &external_id],
            rows::dedup,
        )
    }

    fn put_dedup(&mut self, record: &DedupRecord) -> Result<()> {
        self.exec(
            "INSERT INTO dedup (source, external_id, fingerprint, seq, first_seen_at)
             VALUES ($1, $2, $3, $4, $5)
             ON CONFLICT (source, external_id) DO UPDATE SET fingerprint = EXCLUDED.fingerprint,
                seq = EXCLUDED.seq, first_seen_at = EXCLUDED.first_seen_at",
            &[
                &record.source,
                &record.external_id,
                &record.fingerprint,
                &record.seq,
                &record.first_seen_at,
            ],
        )?;
        Ok(())
    }

    fn append_journal(&mut self, event: &JournalEvent) -> Result<i64> {
        let seq = self.bump_meta("journal_seq")?;
        self.insert_journal_row(seq, event)?;
        self.exec(
            "DELETE FROM journal WHERE seq <= $1",
            &[&(seq - RETENTION.journal_events)],
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
                "SELECT * FROM journal WHERE event_type = $1 AND seq > $2 ORDER BY seq LIMIT $3",
                &[&t, &after, &limit(n)],
                rows::journal,
            ),
            None => self.all(
                "SELECT * FROM journal WHERE seq > $1 ORDER BY seq LIMIT $2",
                &[&after, &limit(n)],
                rows::journal,
            ),
        }
    }

    fn journal_high_water(&mut self) -> Result<i64> {
        self.meta("journal_seq")
    }

    fn journal_type_high_water(&mut self, event_type: &str) -> Result<i64> {
        let max = self.one(
            "SELECT COALESCE(MAX(seq), 0) FROM journal WHERE event_type = $1",
            &[&event_type],
            first_i64,
        )?;
        Ok(max.unwrap_or(0))
    }

    fn add_ingestion(&mut self, i: &Ingestion) -> Result<()> {
        self.insert_ingestion(None, i)
    }

    fn list_ingestions(&mut self, page: &PageRequest) -> Result<Vec<Ingestion>> {
        self.numeric_page("ingestions", page, rows::ingestion)
    }

    fn subscription(&mut self, id: &str) -> Result<Option<Subscription>> {
        self.one(
            "SELECT * FROM subscriptions WHERE subscription_id = $1",
            &[&id],
            rows::subscription,
        )
    }

    fn put_subscription(&mut self, sub: &Subscription) -> Result<()> {
        let sequence = int(sub.sequence)?;
        let generation = int(sub.generation)?;
        self.exec(
            "INSERT INTO subscriptions (subscription_id, event_type, sequence, generation, updated_at, updated_by)
             VALUES ($1, $2, $3, $4, $5, $6)
             ON CONFLICT (subscription_id) DO UPDATE SET event_type = EXCLUDED.event_type,
                sequence = EXCLUDED.sequence, generation = EXCLUDED.generation,
                updated_at = EXCLUDED.updated_at, updated_by = EXCLUDED.updated_by",
            &[
                &sub.subscription_id,
                &sub.event_type,
                &sequence,
                &generation,
                &sub.updated_at,
                &sub.updated_by,
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
            "SELECT * FROM schedules WHERE schedule_id = $1",
            &[&id],
            rows::schedule,
        )
    }

    fn put_schedule(&mut self, s: &Schedule) -> Result<()> {
        let trigger = json(&s.trigger)?;
        let catch_up = json(&s.catch_up)?;
        self.exec(
            "INSERT INTO schedules
                (schedule_id, trigger, catch_up, handler, payload, compat, last_due, next_due, created_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
             ON CONFLICT (schedule_id) DO UPDATE SET trigger = EXCLUDED.trigger, catch_up = EXCLUDED.catch_up,
                handler = EXCLUDED.handler, payload = EXCLUDED.payload, compat = EXCLUDED.compat,
                last_due = EXCLUDED.last_due, next_due = EXCLUDED.next_due, created_at = EXCLUDED.created_at",
            &[
                &s.schedule_id,
                &trigger,
                &catch_up,
                &s.handler,
                &s.payload,
                &s.compat,
                &s.last_due,
                &s.next_due,
                &s.created_at,
            ],
        )?;
        Ok(())
    }

    fn due_schedules(&mut self, now: Millis, n: usize) -> Result<Vec<Schedule>> {
        self.all(
            "SELECT * FROM schedules WHERE next_due <= $1 ORDER BY next_due, schedule_id LIMIT $2",
            &[&now, &limit(n)],
            rows::schedule,
        )
    }

    fn list_schedules(&mut self, page: &PageRequest) -> Result<Vec<Schedule>> {
        self.text_page("schedules", "schedule_id", None, page, rows::schedule)
    }

    fn authority(&mut self, id: &str) -> Result<Option<Authority>> {
        self.one(
            "SELECT * FROM authorities WHERE instance_id = $1",
            &[&id],
            rows::authority,
        )
    }

    fn put_authority(&mut self, a: &Authority) -> Result<()> {
        let pid = i64::from(a.pid);
        self.exec(
            "INSERT INTO authorities
                (instance_id, compat, build, config, started_at, heartbeat_at, stopped_at, host, pid)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
             ON CONFLICT (instance_id) DO UPDATE SET compat = EXCLUDED.compat, build = EXCLUDED.build,
                config = EXCLUDED.config, started_at = EXCLUDED.started_at,
                heartbeat_at = EXCLUDED.heartbeat_at, stopped_at = EXCLUDED.stopped_at,
                host = EXCLUDED.host, pid = EXCLUDED.pid",
            &[
                &a.instance_id,
                &a.compat,
                &a.build,
                &a.config,
                &a.started_at,
                &a.heartbeat_at,
                &a.stopped_at,
                &a.host,
                &pid,
            ],
        )?;
        Ok(())
    }

    fn delete_authority(&mut self, id: &str) -> Result<bool> {
        let n = self.exec("DELETE FROM authorities WHERE instance_id = $1", &[&id])?;
        Ok(n > 0)
    }

    fn list_authorities(&mut self, page: &PageRequest) -> Result<Vec<Authority>> {
        self.text_page("authorities", "instance_id", None, page, rows::authority)
    }

    fn idempotent_answer(&mut self, key: &str) -> Result<Option<String>> {
        self.one(
            "SELECT answer FROM idempotency WHERE key = $1",
            &[&key],
            first_string,
        )
    }

    fn put_idempotent_answer(&mut self, key: &str, answer: &str, at: Millis) -> Result<()> {
        self.exec(
            "INSERT INTO idempotency (key, answer, at) VALUES ($1, $2, $3)
             ON CONFLICT (key) DO UPDATE SET answer = EXCLUDED.answer, at = EXCLUDED.at",
            &[&key, &answer, &at],
        )?;
        Ok(())
    }

    fn add_audit(&mut self, e: &AuditEntry) -> Result<()> {
        self.insert_audit(None, e)
    }

    fn list_audit(&mut self, page: &PageRequest) -> Result<Vec<AuditEntry>> {
        self.numeric_page("audit", page, rows::audit)
    }

    fn add_grant(&mut self, g: &Grant) -> Result<()> {
        self.writable()?;
        self.pending.grants.push(g.clone());
        Ok(())
    }

    fn add_write(&mut self, w: &WriteRecord) -> Result<()> {
        self.writable()?;
        self.pending.writes.push(w.clone());
        Ok(())
    }

    fn grants(&mut self, resource: Option<&str>, after: u64, n: usize) -> Result<Vec<Grant>> {
        self.history_page("grants", resource, after, n, rows::grant, |g| g.revision)
    }

    fn latest_grants(&mut self, resource: &str, n: usize) -> Result<Vec<Grant>> {
        self.flush()?;
        self.all(
            "SELECT * FROM grants WHERE resource_id = $1 ORDER BY revision DESC, seq DESC LIMIT $2",
            &[&resource, &limit(n)],
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
        self.flush()?;
        let keep = bound(keep_from_revision);
        self.exec(
            "DELETE FROM grants WHERE revision < $1 AND (from_owner IS NULL OR at < $2)",
            &[&keep, &keep_incidents_since],
        )?;
        self.exec(
            "DELETE FROM writes WHERE revision < $1 AND (accepted OR at < $2)",
            &[&keep, &keep_incidents_since],
        )?;
        Ok(())
    }

    fn failovers(
        &mut self,
        since: Millis,
        before: Option<HistoryPosition>,
        n: usize,
    ) -> Result<Vec<(HistoryPosition, Grant)>> {
        self.flush()?;
        let (at, seq) = incident_bound(before);
        self.all(
            "SELECT * FROM grants WHERE from_owner IS NOT NULL AND at >= $1 AND (at, seq) < ($2, $3)
             ORDER BY at DESC, seq DESC LIMIT $4",
            &[&since, &at, &seq, &limit(n)],
            rows::failover,
        )
    }

    fn count_failovers(&mut self, since: Millis) -> Result<u64> {
        self.flush()?;
        self.count(
            "SELECT count(*) FROM grants WHERE from_owner IS NOT NULL AND at >= $1",
            since,
        )
    }

    fn refused_writes(
        &mut self,
        since: Millis,
        before: Option<HistoryPosition>,
        n: usize,
    ) -> Result<Vec<(HistoryPosition, WriteRecord)>> {
        self.flush()?;
        let (at, seq) = incident_bound(before);
        self.all(
            "SELECT * FROM writes WHERE NOT accepted AND at >= $1 AND (at, seq) < ($2, $3)
             ORDER BY at DESC, seq DESC LIMIT $4",
            &[&since, &at, &seq, &limit(n)],
            rows::refused_write,
        )
    }

    fn count_refused_writes(&mut self, since: Millis) -> Result<u64> {
        self.flush()?;
        self.count(
            "SELECT count(*) FROM writes WHERE NOT accepted AND at >= $1",
            since,
        )
    }

    fn put_definition(&mut self, d: &WorkflowDefinitionRow) -> Result<()> {
        self.exec(
            "INSERT INTO definitions (workflow_id, fingerprint, definition, deployed_at)
             VALUES ($1, $2, $3, $4)
             ON CONFLICT (workflow_id) DO UPDATE SET fingerprint = EXCLUDED.fingerprint,
                definition = EXCLUDED.definition, deployed_at = EXCLUDED.deployed_at",
            &[
                &d.workflow_id,
                &d.fingerprint,
                &d.definition,
                &d.deployed_at,
            ],
        )?;
        self.seen
            .definitions
            .insert(d.workflow_id.clone(), Some(d.clone()));
        Ok(())
    }

    fn definition(&mut self, workflow_id: &str) -> Result<Option<WorkflowDefinitionRow>> {
        self.cached(
            |seen| &mut seen.definitions,
            workflow_id,
            "SELECT * FROM definitions WHERE workflow_id = $1",
            rows::definition,
        )
    }

    fn list_definitions(&mut self, page: &PageRequest) -> Result<Vec<WorkflowDefinitionRow>> {
        self.text_page("definitions", "workflow_id", None, page, rows::definition)
    }

    fn instance(&mut self, id: &str) -> Result<Option<InstanceRow>> {
        self.cached(
            |seen| &mut seen.instances,
            id,
            "SELECT * FROM instances WHERE instance_id = $1",
            rows::instance,
        )
    }

    fn instance_by_start_key(&mut self, start_key: &str) -> Result<Option<InstanceRow>> {
        self.flush()?;
        self.one(
            "SELECT * FROM instances WHERE start_key = $1",
            &[&start_key],
            rows::instance,
        )
    }

    fn insert_instance(&mut self, row: &InstanceRow) -> Result<()> {
        // An upsert on the id (the memory provider's insert replaces a same-id row).
        self.writable()?;
        let key = row.instance_id.clone();
        self.seen.instances.insert(key.clone(), Some(row.clone()));
        self.pending.instances.insert(key, row.clone());
        Ok(())
    }

    fn update_instance(&mut self, row: &InstanceRow) -> Result<()> {
        // Same as the insert: an update of a missing row inserts it.
        self.insert_instance(row)
    }

    fn runnable_instances(
        &mut self,
        compat: &str,
        now: Millis,
        n: usize,
    ) -> Result<Vec<InstanceRow>> {
        self.flush()?;
        self.all(
            "SELECT * FROM instances WHERE compat = $1 AND next_eligible_at <= $2
             ORDER BY next_eligible_at, instance_id LIMIT $3",
            &[&compat, &now, &limit(n)],
            rows::instance,
        )
    }

    fn instances_waiting_for(
        &mut self,
        event_type: &str,
        after: Option<&str>,
        n: usize,
    ) -> Result<Vec<InstanceRow>> {
        self.flush()?;
        let page = PageRequest {
            after: after.map(str::to_owned),
            limit: n,
            backwards: false,
        };
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
        self.flush()?;
        let mut q = Query::default();
        if let Some(status) = status {
            q.cond("status =", status.to_owned(), "");
        }
        if let Some(prefix) = id_prefix {
            q.cond("instance_id >=", prefix.to_owned(), "");
            if let Some(end) = crate::model::page::prefix_end(prefix) {
                q.cond("instance_id <", end, "");
            }
        }
        let after = page
            .after
            .clone()
            .map(|a| Box::new(a) as Box<dyn ToSql + Sync>);
        let n = page.limit.max(1);
        self.page(
            "instances",
            "instance_id",
            q,
            after,
            page.backwards,
            n,
            rows::instance,
        )
    }

    fn add_history(&mut self, h: &HistoryRecord) -> Result<()> {
        self.writable()?;
        self.pending
            .history
            .insert((h.instance_id.clone(), h.position), h.clone());
        Ok(())
    }

    /// The stored records merged with this transaction's held-back ones.
    fn history(&mut self, instance_id: &str) -> Result<Vec<HistoryRecord>> {
        let stored = self.all(
            "SELECT * FROM history WHERE instance_id = $1 ORDER BY position",
            &[&instance_id],
            rows::history,
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

    fn action_outcome(&mut self, invocation_id: &str) -> Result<Option<ActionOutcome>> {
        self.one(
            "SELECT * FROM action_outcomes WHERE invocation_id = $1",
            &[&invocation_id],
            rows::outcome,
        )
    }

    fn put_action_outcome(&mut self, o: &ActionOutcome) -> Result<()> {
        let attempt = i64::from(o.attempt);
        self.exec(
            "INSERT INTO action_outcomes (invocation_id, attempt, outcome, detail, at)
             VALUES ($1, $2, $3, $4, $5)
             ON CONFLICT (invocation_id) DO UPDATE SET attempt = EXCLUDED.attempt,
                outcome = EXCLUDED.outcome, detail = EXCLUDED.detail, at = EXCLUDED.at",
            &[&o.invocation_id, &attempt, &o.outcome, &o.detail, &o.at],
        )?;
        Ok(())
    }

    fn list_dedup(&mut self, after: Option<(&str, &str)>, n: usize) -> Result<Vec<DedupRecord>> {
        match after {
            Some((source, external_id)) => self.all(
                "SELECT * FROM dedup WHERE (source, external_id) > ($1, $2)
                 ORDER BY source, external_id LIMIT $3",
                &[&source, &external_id, &limit(n)],
                rows::dedup,
            ),
            None => self.all(
                "SELECT * FROM dedup ORDER BY source, external_id LIMIT $1",
                &[&limit(n)],
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
