//! [`Tx`] for every SQL provider, written once over [`Driver`]: the methods whose statements
//! are the same on SQLite and PostgreSQL but for the [`Dialect`](super::dialect::Dialect),
//! and the provider's own methods passed through. Each statement reads through an index
//! (SQLite's query-plan tests, PostgreSQL's no-sequential-scan test). A method reading a
//! table PostgreSQL holds writes back for (leases, work, instances, grants, writes) sends
//! them first ([`Driver::settle`]); the others cost no extra round trip.

use std::sync::Arc;

use super::attempt_errors;
use super::decode;
use super::driver::{Driver, KnownEmpty};
use super::encode::{self, Table};
use super::incident_bound;
use super::lanes;
use super::limit;
use super::query::Query;
use super::row::Decode;
use super::statements::Statements;
use super::value::SqlValue;
use crate::clock::Millis;
use crate::error::Result;
use crate::model::event::DedupRecord;
use crate::model::work::{WorkFilter, WorkLane};
use crate::model::workflow::ActionOutcome;
use crate::model::{
    AttemptError, AuditEntry, Authority, ChainLink, Grant, HandlerPause, HistoryPosition,
    HistoryRecord, IdempotentAnswer, Ingestion, InstanceRow, IntakeCounts, IntakeRow, JournalEvent,
    Lease, PageRequest, RateWindow, Schedule, Subscription, WorkItem, WorkflowDefinitionRow,
    WriteRecord,
};
use crate::store::RETENTION;
use crate::store::backend::Tx;
use crate::store::epoch;
use crate::store::history_order::Disorder;

/// Inserts or replaces one row of `table`.
fn upsert<D: Driver>(tx: &mut D, table: &Table, values: &[SqlValue]) -> Result<()> {
    tx.execute(D::DIALECT.upsert(table), values)?;
    Ok(())
}

/// A page of rows of `table` after a text key, for a copy.
fn resume<D: Driver, T>(
    tx: &mut D,
    table: &Table,
    after: Option<&str>,
    n: usize,
    decode: Decode<T>,
) -> Result<Vec<T>> {
    let page = PageRequest::resume(after, n);
    tx.text_page(table.name, table.key[0], None, &page, decode)
}

/// Succeeded work items: the condition of the `work_succeeded` index.
const FINISHED_WORK: &str = "state = 'succeeded'";
/// Terminal instances: the condition of the `instances_finished` index.
const FINISHED_INSTANCE: &str = "status IN ('completed', 'failed', 'cancelled')";

/// The oldest `n` rows of `table` (name, its retention index, its key) matching `cond`
/// and last updated before `before`, through that index.
fn finished<D: Driver, T>(
    tx: &mut D,
    (table, index, key): (&str, &str, &str),
    cond: &str,
    (before, n): (Millis, usize),
    decode: Decode<T>,
) -> Result<Vec<T>> {
    tx.settle()?;
    let sql = D::DIALECT.marks(&format!(
        "SELECT * FROM {} WHERE {cond} AND updated_at < ?1 ORDER BY updated_at, {key} LIMIT ?2",
        D::DIALECT.from(table, index)
    ));
    tx.query(&sql, &[before.into(), limit(n).into()], decode)
}

/// The grants that took a lease over from another owner.
const FAILOVER: &str = "from_owner IS NOT NULL";

/// A newest-first page of the incidents (rows of `table` matching `cond`) at or after
/// `since` and before the position `before`, through the table's `(at, seq)` incident index.
fn incidents<D: Driver, T>(
    tx: &mut D,
    table: &str,
    cond: &str,
    (since, before, n): (Millis, Option<HistoryPosition>, usize),
    decode: Decode<T>,
) -> Result<Vec<T>> {
    tx.settle()?;
    let (at, seq) = incident_bound(before);
    let sql = D::DIALECT.marks(&format!(
        "SELECT * FROM {table} WHERE {cond} AND at >= ?1 AND (at, seq) < (?2, ?3)
         ORDER BY at DESC, seq DESC LIMIT ?4"
    ));
    let params = [since.into(), at.into(), seq.into(), limit(n).into()];
    tx.query(&sql, &params, decode)
}

/// How many incidents (rows of `table` matching `cond`) happened at or after `since`.
fn count_incidents<D: Driver>(tx: &mut D, table: &str, cond: &str, since: Millis) -> Result<u64> {
    tx.settle()?;
    let sql = format!("SELECT count(*) FROM {table} WHERE {cond} AND at >= ?1");
    tx.count(&D::DIALECT.marks(&sql), since)
}

impl<D: Driver> Tx for D {
    fn take_intake(&mut self, limit: usize) -> Result<Vec<IntakeRow>> {
        Driver::take_intake(self, limit)
    }

    fn refuse_intake(&mut self, row: &IntakeRow, reason: &str, at: Millis) -> Result<()> {
        Driver::refuse_intake(self, row, reason, at)
    }

    fn intake_counts(&mut self) -> Result<IntakeCounts> {
        Driver::intake_counts(self)
    }

    fn revision(&mut self) -> Result<u64> {
        Driver::revision(self)
    }

    fn commit_revision(&mut self) -> Result<u64> {
        Driver::commit_revision(self)
    }

    fn adjust_counter(&mut self, name: &str, delta: i64) -> Result<()> {
        Driver::adjust_counter(self, name, delta)
    }

    fn counters(&mut self, prefix: &str) -> Result<Vec<(String, i64)>> {
        Driver::counters(self, prefix)
    }

    fn lease(&mut self, resource: &str) -> Result<Option<Lease>> {
        Driver::lease(self, resource)
    }

    fn put_lease(&mut self, lease: &Lease) -> Result<()> {
        Driver::put_lease(self, lease)
    }

    fn live_lease_count(&mut self, owner: &str, now: Millis) -> Result<u64> {
        self.settle()?;
        let n = self
            .one(
                D::DIALECT.text(
                    "SELECT count(*) FROM leases WHERE owner_id = ?1 AND expires_at > ?2 AND released_at IS NULL",
                ),
                &[owner.into(), now.into()],
                decode::first_int,
            )?
            .flatten()
            .unwrap_or(0);
        Ok(u64::try_from(n).unwrap_or(0))
    }

    fn claimed_counts(&mut self, owner: &str, now: Millis) -> Result<(u64, u64)> {
        self.settle()?;
        let (claimed, lapsed) = self
            .one(
                D::DIALECT.text(
                    "SELECT count(*), sum(CASE WHEN lease_expires_at <= ?2 THEN 1 ELSE 0 END) FROM work WHERE state = 'claimed' AND owner_id = ?1",
                ),
                &[owner.into(), now.into()],
                decode::int_and_opt_int,
            )?
            .unwrap_or((0, None));
        let count = |n: i64| u64::try_from(n).unwrap_or(0);
        Ok((count(claimed), count(lapsed.unwrap_or(0))))
    }

    fn list_leases(&mut self, page: &PageRequest) -> Result<Vec<Lease>> {
        self.settle()?;
        self.text_page("leases", "resource_id", None, page, decode::lease)
    }

    fn work(&mut self, id: &str) -> Result<Option<WorkItem>> {
        Driver::work(self, id)
    }

    fn prefetch_work(&mut self, ids: &[&str]) -> Result<()> {
        Driver::prefetch_work(self, ids)
    }

    fn insert_work(&mut self, item: &WorkItem) -> Result<bool> {
        let floor = epoch::generation_floor(self)?;
        match epoch::floored(item, floor) {
            Some(item) => Driver::insert_work(self, &item),
            None => Driver::insert_work(self, item),
        }
    }

    fn update_work(&mut self, item: &Arc<WorkItem>) -> Result<()> {
        Driver::update_work(self, item)
    }

    fn work_by_key(&mut self, key: &str) -> Result<Option<WorkItem>> {
        Driver::work_by_key(self, key)
    }

    fn prefetch_work_keys(&mut self, keys: &[&str]) -> Result<()> {
        Driver::prefetch_work_keys(self, keys)
    }

    fn work_keys(
        &mut self,
        after: Option<(&str, &str)>,
        n: usize,
    ) -> Result<Vec<(String, String)>> {
        self.settle()?;
        let from = D::DIALECT.from("work", "work_key");
        let order = "ORDER BY idempotency_key, id";
        match after {
            None => {
                let sql = format!("SELECT idempotency_key, id FROM {from} {order} LIMIT ?1");
                let sql = D::DIALECT.marks(&sql);
                self.query(&sql, &[limit(n).into()], decode::key_and_id)
            }
            Some((key, id)) => {
                let sql = format!(
                    "SELECT idempotency_key, id FROM {from} WHERE (idempotency_key, id) > (?1, ?2) {order} LIMIT ?3"
                );
                let sql = D::DIALECT.marks(&sql);
                let params = [key.into(), id.into(), limit(n).into()];
                self.query(&sql, &params, decode::key_and_id)
            }
        }
    }

    fn claim_lanes(&mut self, compat: &str) -> Result<Vec<WorkLane>> {
        Driver::claim_lanes(self, compat)
    }

    fn lane_claimable(
        &mut self,
        compat: &str,
        lane: &WorkLane,
        now: Millis,
        n: usize,
    ) -> Result<Vec<Arc<WorkItem>>> {
        let items = Driver::lane_claimable(self, compat, lane, now, n)?;
        Ok(items.into_iter().map(Arc::new).collect())
    }

    fn lapsed_claims(&mut self, compat: &str, now: Millis, n: usize) -> Result<Vec<Arc<WorkItem>>> {
        let items = Driver::lapsed_claims(self, compat, now, n)?;
        Ok(items.into_iter().map(Arc::new).collect())
    }

    fn list_work(&mut self, filter: &WorkFilter, page: &PageRequest) -> Result<Vec<WorkItem>> {
        Driver::list_work(self, filter, page)
    }

    fn waiting_lanes(&mut self) -> Result<Vec<(WorkLane, Millis)>> {
        lanes::waiting_lanes(self)
    }

    fn dedup(&mut self, source: &str, external_id: &str) -> Result<Option<DedupRecord>> {
        self.one(
            D::DIALECT.text("SELECT * FROM dedup WHERE source = ?1 AND external_id = ?2"),
            &[source.into(), external_id.into()],
            decode::dedup,
        )
    }

    fn put_dedup(&mut self, record: &DedupRecord) -> Result<()> {
        upsert(self, &encode::DEDUP, &encode::dedup(record))
    }

    fn append_journal(&mut self, event: &JournalEvent) -> Result<i64> {
        let seq = self.bump_meta("journal_seq")?;
        let sql = D::DIALECT.insert(&encode::JOURNAL);
        self.execute(sql, &encode::journal(seq, event))?;
        self.execute(
            D::DIALECT.text("DELETE FROM journal WHERE seq <= ?1"),
            &[(seq - RETENTION.journal_events).into()],
        )?;
        Ok(seq)
    }

    fn journal_after(
        &mut self,
        after: i64,
        event_type: Option<&str>,
        n: usize,
    ) -> Result<Vec<JournalEvent>> {
        let mut q = Query::new(D::DIALECT);
        if let Some(t) = event_type {
            q.cond("event_type =", t);
        }
        q.cond("seq >", after);
        let lim = q.bind(limit(n));
        let sql = format!(
            "SELECT * FROM journal{} ORDER BY seq LIMIT {lim}",
            q.filter()
        );
        self.query(&sql, q.values(), decode::journal)
    }

    fn journal_high_water(&mut self) -> Result<i64> {
        self.meta("journal_seq")
    }

    fn journal_type_high_water(&mut self, event_type: &str) -> Result<i64> {
        let max = self.one(
            D::DIALECT.text("SELECT COALESCE(MAX(seq), 0) FROM journal WHERE event_type = ?1"),
            &[event_type.into()],
            decode::first_int,
        )?;
        Ok(max.flatten().unwrap_or(0))
    }

    fn add_ingestion(&mut self, ingestion: &Ingestion) -> Result<()> {
        let sql = D::DIALECT.insert_with_id(&encode::INGESTIONS);
        self.execute(sql, &encode::ingestion(None, ingestion))?;
        Ok(())
    }

    fn list_ingestions(&mut self, page: &PageRequest) -> Result<Vec<Ingestion>> {
        self.numeric_page("ingestions", page, decode::ingestion)
    }

    fn subscription(&mut self, id: &str) -> Result<Option<Subscription>> {
        self.by_key(&encode::SUBSCRIPTIONS, id, decode::subscription)
    }

    fn put_subscription(&mut self, sub: &Subscription) -> Result<()> {
        upsert(self, &encode::SUBSCRIPTIONS, &encode::subscription(sub)?)
    }

    fn list_subscriptions(&mut self, page: &PageRequest) -> Result<Vec<Subscription>> {
        let t = &encode::SUBSCRIPTIONS;
        self.text_page(t.name, t.key[0], None, page, decode::subscription)
    }

    fn schedule(&mut self, id: &str) -> Result<Option<Schedule>> {
        self.by_key(&encode::SCHEDULES, id, decode::schedule)
    }

    fn put_schedule(&mut self, schedule: &Schedule) -> Result<()> {
        upsert(self, &encode::SCHEDULES, &encode::schedule(schedule)?)
    }

    fn due_schedules(&mut self, now: Millis, n: usize) -> Result<Vec<Schedule>> {
        if self.known_empty(KnownEmpty::SchedulesDueBy(now)) {
            return Ok(Vec::new());
        }
        self.query(
            D::DIALECT.text(
                "SELECT * FROM schedules WHERE next_due <= ?1 AND paused_at IS NULL ORDER BY next_due, schedule_id LIMIT ?2",
            ),
            &[now.into(), limit(n).into()],
            decode::schedule,
        )
    }

    fn delete_schedule(&mut self, id: &str) -> Result<bool> {
        let sql = D::DIALECT.text("DELETE FROM schedules WHERE schedule_id = ?1");
        Ok(self.execute(sql, &[id.into()])? > 0)
    }

    fn list_schedules(&mut self, page: &PageRequest) -> Result<Vec<Schedule>> {
        let t = &encode::SCHEDULES;
        self.text_page(t.name, t.key[0], None, page, decode::schedule)
    }

    fn handler_pauses(&mut self) -> Result<Vec<HandlerPause>> {
        if self.known_empty(KnownEmpty::HandlerPauses) {
            return Ok(Vec::new());
        }
        let sql = D::DIALECT.text("SELECT * FROM handler_pauses ORDER BY handler");
        self.query(sql, &[], decode::handler_pause)
    }

    fn put_handler_pause(&mut self, pause: &HandlerPause) -> Result<()> {
        upsert(self, &encode::HANDLER_PAUSES, &encode::handler_pause(pause))
    }

    fn delete_handler_pause(&mut self, handler: &str) -> Result<bool> {
        let sql = D::DIALECT.text("DELETE FROM handler_pauses WHERE handler = ?1");
        Ok(self.execute(sql, &[handler.into()])? > 0)
    }

    fn rate_window(&mut self, handler: &str) -> Result<Option<RateWindow>> {
        self.by_key(&encode::HANDLER_RATES, handler, decode::rate_window)
    }

    fn put_rate_window(&mut self, window: &RateWindow) -> Result<()> {
        upsert(self, &encode::HANDLER_RATES, &encode::rate_window(window)?)
    }

    fn waiting_count(&mut self, handler: &str) -> Result<u64> {
        self.settle()?;
        let sql = D::DIALECT.marks(&format!(
            "SELECT COUNT(*) FROM {} WHERE kind IN ('effect', 'schedule', 'cursor') \
             AND handler = ?1 AND state IN ('pending', 'retry')",
            D::DIALECT.from("work", "work_lane_waiting")
        ));
        let n = self
            .one(&sql, &[handler.into()], decode::first_int)?
            .flatten();
        Ok(n.unwrap_or(0).unsigned_abs())
    }

    fn authority(&mut self, id: &str) -> Result<Option<Authority>> {
        self.by_key(&encode::AUTHORITIES, id, decode::authority)
    }

    fn put_authority(&mut self, authority: &Authority) -> Result<()> {
        upsert(self, &encode::AUTHORITIES, &encode::authority(authority)?)
    }

    fn delete_authority(&mut self, id: &str) -> Result<bool> {
        let sql = D::DIALECT.text("DELETE FROM authorities WHERE instance_id = ?1");
        Ok(self.execute(sql, &[id.into()])? > 0)
    }

    fn list_authorities(&mut self, page: &PageRequest) -> Result<Vec<Authority>> {
        let t = &encode::AUTHORITIES;
        self.text_page(t.name, t.key[0], None, page, decode::authority)
    }

    fn idempotent_answer(&mut self, key: &str) -> Result<Option<String>> {
        self.one(
            D::DIALECT.text("SELECT answer FROM idempotency WHERE key = ?1"),
            &[key.into()],
            decode::answer,
        )
    }

    fn put_idempotent_answer(&mut self, key: &str, answer: &str, at: Millis) -> Result<()> {
        upsert(
            self,
            &encode::IDEMPOTENCY,
            &[key.into(), answer.into(), at.into()],
        )
    }

    fn add_audit(&mut self, entry: &AuditEntry) -> Result<()> {
        let sql = D::DIALECT.insert_with_id(&encode::AUDIT);
        self.execute(sql, &encode::audit(None, entry))?;
        Ok(())
    }

    fn list_audit(&mut self, page: &PageRequest) -> Result<Vec<AuditEntry>> {
        self.numeric_page("audit", page, decode::audit)
    }

    fn add_grant(&mut self, grant: Grant) -> Result<()> {
        Driver::add_grant(self, &grant)
    }

    fn add_write(&mut self, write: WriteRecord) -> Result<()> {
        Driver::add_write(self, &write)
    }

    fn grants(&mut self, resource: Option<&str>, after: u64, n: usize) -> Result<Vec<Grant>> {
        self.history_page("grants", resource, (after, None), n, decode::grant, |g| {
            g.revision
        })
    }

    fn grants_through(&mut self, after: u64, through: u64, n: usize) -> Result<Vec<Grant>> {
        self.history_page(
            "grants",
            None,
            (after, Some(through)),
            n,
            decode::grant,
            |g| g.revision,
        )
    }

    fn latest_grants(&mut self, resource: &str, n: usize) -> Result<Vec<Grant>> {
        self.settle()?;
        self.query(
            D::DIALECT.text(
                "SELECT * FROM grants WHERE resource_id = ?1 ORDER BY revision DESC, seq DESC LIMIT ?2",
            ),
            &[resource.into(), limit(n).into()],
            decode::grant,
        )
    }

    fn history_records_bound(&mut self) -> Result<u64> {
        self.settle()?;
        // Two seeks at each end of each primary key, whatever the tables' size.
        let span =
            |table: &str| format!("(SELECT COALESCE(max(seq) - min(seq) + 1, 0) FROM {table})");
        let sql = format!("SELECT {} + {}", span("grants"), span("writes"));
        let n = self.one(&sql, &[], decode::first_int)?.flatten();
        Ok(n.unwrap_or(0).unsigned_abs())
    }

    fn history_high_revision(&mut self) -> Result<u64> {
        self.settle()?;
        // One seek into each table: the last record by position (which carries the
        // highest revision, see `Statements::position_after`), or `max` over the revision
        // index.
        let sql = if D::DIALECT.history_by_position() {
            "SELECT COALESCE(max(r), 0) FROM (SELECT revision AS r FROM grants WHERE seq = (SELECT max(seq) FROM grants) UNION ALL SELECT revision FROM writes WHERE seq = (SELECT max(seq) FROM writes)) AS h"
        } else {
            "SELECT COALESCE(max(r), 0) FROM (SELECT max(revision) AS r FROM grants UNION ALL SELECT max(revision) FROM writes) AS h"
        };
        let sql = D::DIALECT.text(sql);
        let n = self.one(sql, &[], decode::first_int)?.flatten();
        Ok(n.unwrap_or(0).unsigned_abs())
    }

    fn history_out_of_order(&mut self) -> Result<Option<Disorder>> {
        if !D::DIALECT.history_by_position() {
            return Ok(None);
        }
        self.settle()?;
        for table in ["grants", "writes"] {
            // One pass over the primary key, each record beside the one before it.
            let sql = format!(
                "SELECT seq, revision, previous FROM (SELECT seq, revision, lag(revision) OVER (ORDER BY seq) AS previous FROM {table}) AS h WHERE revision < previous ORDER BY seq LIMIT 1"
            );
            if let Some((position, revision, previous)) = self.one(&sql, &[], decode::int_triple)? {
                return Ok(Some(Disorder {
                    table,
                    position,
                    revision: revision.unsigned_abs(),
                    previous: previous.unsigned_abs(),
                }));
            }
        }
        Ok(None)
    }

    fn writes(&mut self, resource: Option<&str>, after: u64, n: usize) -> Result<Vec<WriteRecord>> {
        self.history_page(
            "writes",
            resource,
            (after, None),
            n,
            decode::write_record,
            |w| w.revision,
        )
    }

    fn trim_history(
        &mut self,
        keep_from_revision: u64,
        keep_incidents_since: Millis,
    ) -> Result<()> {
        self.settle()?;
        let since: SqlValue = keep_incidents_since.into();
        let accepted = D::DIALECT.is_true("accepted");
        for (table, trimmed) in [
            ("grants", "from_owner IS NULL".to_owned()),
            ("writes", accepted),
        ] {
            // Below the first kept revision: a range of positions where the history has
            // no revision index, a range of that index where it has one.
            let (column, keep) = match (D::DIALECT.history_by_position(), keep_from_revision) {
                (_, 0) => continue,
                (true, keep) => ("seq", self.position_after(table, keep - 1)?),
                (false, keep) => ("revision", super::bound(keep)),
            };
            self.execute(
                &D::DIALECT.marks(&format!(
                    "DELETE FROM {table} WHERE {column} < ?1 AND ({trimmed} OR at < ?2)"
                )),
                &[keep.into(), since.clone()],
            )?;
        }
        Ok(())
    }

    fn put_link(&mut self, link: &ChainLink) -> Result<()> {
        Driver::put_link(self, link)
    }

    fn link(&mut self, revision: u64) -> Result<Option<ChainLink>> {
        if let Some(known) = self.known_link(revision) {
            return Ok(Some(known));
        }
        let sql = D::DIALECT.by_key(&encode::CHAIN);
        self.one(sql, &[super::bound(revision).into()], decode::link)
    }

    fn stamped(&mut self, revision: u64) -> Result<(Vec<Grant>, Vec<WriteRecord>)> {
        match self.own_history(revision) {
            Some(own) => Ok(own),
            None => Ok((
                self.grants(None, revision - 1, 1)?,
                self.writes(None, revision - 1, 1)?,
            )),
        }
    }

    fn links(&mut self, after: u64, n: usize) -> Result<Vec<ChainLink>> {
        self.query(
            D::DIALECT.text("SELECT * FROM chain WHERE revision > ?1 ORDER BY revision LIMIT ?2"),
            &[super::bound(after).into(), limit(n).into()],
            decode::link,
        )
    }

    fn trim_links(&mut self, keep_from_revision: u64) -> Result<()> {
        use crate::store::chain::{TRIMMED_LINKS, sparse_below};
        let sql = D::DIALECT.marks(&format!("DELETE FROM chain WHERE {TRIMMED_LINKS}"));
        let bounds = [
            super::bound(keep_from_revision).into(),
            super::bound(sparse_below(keep_from_revision)).into(),
        ];
        self.execute(&sql, &bounds)?;
        Ok(())
    }

    fn failovers(
        &mut self,
        since: Millis,
        before: Option<HistoryPosition>,
        n: usize,
    ) -> Result<Vec<(HistoryPosition, Grant)>> {
        let page = (since, before, n);
        incidents(self, "grants", FAILOVER, page, decode::failover)
    }

    fn count_failovers(&mut self, since: Millis) -> Result<u64> {
        count_incidents(self, "grants", FAILOVER, since)
    }

    fn refused_writes(
        &mut self,
        since: Millis,
        before: Option<HistoryPosition>,
        n: usize,
    ) -> Result<Vec<(HistoryPosition, WriteRecord)>> {
        let refused = D::DIALECT.is_false("accepted");
        let page = (since, before, n);
        incidents(self, "writes", &refused, page, decode::refused_write)
    }

    fn count_refused_writes(&mut self, since: Millis) -> Result<u64> {
        let refused = D::DIALECT.is_false("accepted");
        count_incidents(self, "writes", &refused, since)
    }

    fn put_definition(&mut self, def: &WorkflowDefinitionRow) -> Result<()> {
        Driver::put_definition(self, def)
    }

    fn definition(&mut self, workflow_id: &str) -> Result<Option<WorkflowDefinitionRow>> {
        Driver::definition(self, workflow_id)
    }

    fn list_definitions(&mut self, page: &PageRequest) -> Result<Vec<WorkflowDefinitionRow>> {
        let t = &encode::DEFINITIONS;
        self.text_page(t.name, t.key[0], None, page, decode::definition)
    }

    fn instance(&mut self, id: &str) -> Result<Option<InstanceRow>> {
        Driver::instance(self, id)
    }

    fn instance_by_start_key(&mut self, start_key: &str) -> Result<Option<InstanceRow>> {
        self.settle()?;
        self.one(
            D::DIALECT.text("SELECT * FROM instances WHERE start_key = ?1"),
            &[start_key.into()],
            decode::instance,
        )
    }

    fn insert_instance(&mut self, row: &InstanceRow) -> Result<()> {
        Driver::insert_instance(self, row)
    }

    fn update_instance(&mut self, row: &InstanceRow) -> Result<()> {
        Driver::update_instance(self, row)
    }

    fn runnable_instances(
        &mut self,
        compat: &str,
        now: Millis,
        n: usize,
    ) -> Result<Vec<InstanceRow>> {
        if self.known_empty(KnownEmpty::RunnableInstances) {
            return Ok(Vec::new());
        }
        self.settle()?;
        let from = D::DIALECT.from("instances", "instances_runnable");
        self.query(
            &D::DIALECT.marks(&format!(
                "SELECT * FROM {from} WHERE compat = ?1 AND next_eligible_at <= ?2
             ORDER BY next_eligible_at, instance_id LIMIT ?3"
            )),
            &[compat.into(), now.into(), limit(n).into()],
            decode::instance,
        )
    }

    fn instances_waiting_for(
        &mut self,
        event_type: &str,
        after: Option<&str>,
        n: usize,
    ) -> Result<Vec<InstanceRow>> {
        self.settle()?;
        let page = PageRequest::resume(after, n);
        let eq = Some(("waiting_event", event_type));
        self.text_page("instances", "instance_id", eq, &page, decode::instance)
    }

    fn list_instances(
        &mut self,
        status: Option<&str>,
        id_prefix: Option<&str>,
        page: &PageRequest,
    ) -> Result<Vec<InstanceRow>> {
        self.settle()?;
        let mut q = Query::new(D::DIALECT);
        if let Some(status) = status {
            q.cond("status =", status);
        }
        if let Some(prefix) = id_prefix {
            q.cond("instance_id >=", prefix);
            if let Some(end) = crate::model::page::prefix_end(prefix) {
                q.cond("instance_id <", end);
            }
        }
        let after = page.after.clone().map(SqlValue::Text);
        let n = page.limit.max(1);
        let decode = decode::instance;
        self.page(
            "instances",
            "instance_id",
            q,
            after,
            page.backwards,
            n,
            decode,
        )
    }

    fn add_history(&mut self, record: &HistoryRecord) -> Result<()> {
        Driver::add_history(self, record)
    }

    fn history(&mut self, instance_id: &str) -> Result<Vec<HistoryRecord>> {
        Driver::history(self, instance_id)
    }

    fn add_attempt_error(&mut self, error: &AttemptError, keep: usize) -> Result<()> {
        attempt_errors::add(self, error, keep)
    }

    fn attempt_errors(&mut self, work_id: &str) -> Result<Vec<AttemptError>> {
        attempt_errors::of(self, work_id)
    }

    fn list_attempt_errors(
        &mut self,
        after: Option<(&str, u64)>,
        n: usize,
    ) -> Result<Vec<AttemptError>> {
        attempt_errors::page(self, after, n)
    }

    fn action_outcome(&mut self, invocation_id: &str) -> Result<Option<ActionOutcome>> {
        self.by_key(&encode::ACTION_OUTCOMES, invocation_id, decode::outcome)
    }

    fn put_action_outcome(&mut self, outcome: &ActionOutcome) -> Result<()> {
        upsert(self, &encode::ACTION_OUTCOMES, &encode::outcome(outcome))
    }

    fn finished_work(&mut self, before: Millis, n: usize) -> Result<Vec<WorkItem>> {
        let at = (before, n);
        finished(
            self,
            ("work", "work_succeeded", "id"),
            FINISHED_WORK,
            at,
            decode::work,
        )
    }

    fn delete_work(&mut self, id: &str) -> Result<()> {
        self.settle()?;
        self.execute(
            D::DIALECT.text("DELETE FROM work WHERE id = ?1"),
            &[id.into()],
        )?;
        attempt_errors::delete(self, id)
    }

    fn finished_instances(&mut self, before: Millis, n: usize) -> Result<Vec<InstanceRow>> {
        let table = ("instances", "instances_finished", "instance_id");
        finished(
            self,
            table,
            FINISHED_INSTANCE,
            (before, n),
            decode::instance,
        )
    }

    fn delete_instance(&mut self, id: &str) -> Result<()> {
        self.settle()?;
        for sql in [
            "DELETE FROM history WHERE instance_id = ?1",
            "DELETE FROM instances WHERE instance_id = ?1",
        ] {
            self.execute(&D::DIALECT.marks(sql), &[id.into()])?;
        }
        // The invocation ids `"<id>/…"` are the key range [`<id>/`, `<id>0`): '0' follows '/'.
        self.execute(
            D::DIALECT.text(
                "DELETE FROM action_outcomes WHERE invocation_id >= ?1 AND invocation_id < ?2",
            ),
            &[format!("{id}/").into(), format!("{id}0").into()],
        )?;
        Ok(())
    }

    fn trim_dedup(
        &mut self,
        source: Option<&str>,
        except: &[String],
        before: Millis,
        n: usize,
    ) -> Result<u64> {
        let mut q = Query::new(D::DIALECT);
        q.cond("first_seen_at <", before);
        match source {
            Some(only) => q.cond("source =", only),
            None => {
                for other in except {
                    q.cond("source <>", other.as_str());
                }
            }
        }
        let lim = q.bind(limit(n));
        let sql = format!(
            "DELETE FROM dedup WHERE (source, external_id) IN (SELECT source, external_id FROM {}{} ORDER BY first_seen_at LIMIT {lim})",
            D::DIALECT.from("dedup", "dedup_age"),
            q.filter()
        );
        self.execute(&sql, q.values())
    }

    fn trim_idempotent_answers(&mut self, before: Millis, n: usize) -> Result<u64> {
        self.execute(
            &D::DIALECT.marks(&format!(
                "DELETE FROM idempotency WHERE key IN (SELECT key FROM {} WHERE at < ?1 ORDER BY at LIMIT ?2)",
                D::DIALECT.from("idempotency", "idempotency_age")
            )),
            &[before.into(), limit(n).into()],
        )
    }

    fn delete_ingestions_through(&mut self, through: i64) -> Result<u64> {
        self.execute(
            D::DIALECT.text("DELETE FROM ingestions WHERE id <= ?1"),
            &[through.into()],
        )
    }

    fn delete_audit_through(&mut self, through: i64) -> Result<u64> {
        self.execute(
            D::DIALECT.text("DELETE FROM audit WHERE id <= ?1"),
            &[through.into()],
        )
    }

    fn list_dedup(&mut self, after: Option<(&str, &str)>, n: usize) -> Result<Vec<DedupRecord>> {
        match after {
            Some((source, external_id)) => self.query(
                D::DIALECT.text(
                    "SELECT * FROM dedup WHERE (source, external_id) > (?1, ?2)
                 ORDER BY source, external_id LIMIT ?3",
                ),
                &[source.into(), external_id.into(), limit(n).into()],
                decode::dedup,
            ),
            None => self.query(
                D::DIALECT.text("SELECT * FROM dedup ORDER BY source, external_id LIMIT ?1"),
                &[limit(n).into()],
                decode::dedup,
            ),
        }
    }

    fn list_idempotent_answers(
        &mut self,
        after: Option<&str>,
        n: usize,
    ) -> Result<Vec<IdempotentAnswer>> {
        resume(
            self,
            &encode::IDEMPOTENCY,
            after,
            n,
            decode::idempotent_answer,
        )
    }

    fn list_action_outcomes(
        &mut self,
        after: Option<&str>,
        n: usize,
    ) -> Result<Vec<ActionOutcome>> {
        resume(self, &encode::ACTION_OUTCOMES, after, n, decode::outcome)
    }

    fn import_journal(&mut self, event: &JournalEvent) -> Result<()> {
        let sql = D::DIALECT.insert(&encode::JOURNAL);
        self.execute(sql, &encode::journal(event.seq, event))?;
        Ok(())
    }

    fn import_ingestion(&mut self, ingestion: &Ingestion) -> Result<()> {
        let sql = D::DIALECT.insert_with_id(&encode::INGESTIONS);
        self.execute(sql, &encode::ingestion(Some(ingestion.id), ingestion))?;
        Ok(())
    }

    fn import_audit(&mut self, entry: &AuditEntry) -> Result<()> {
        let sql = D::DIALECT.insert_with_id(&encode::AUDIT);
        self.execute(sql, &encode::audit(Some(entry.id), entry))?;
        Ok(())
    }

    fn connection_server(&mut self) -> Option<&mut crate::store::backend::ConnectionServer> {
        Driver::connection_server(self)
    }

    fn meta_value(&mut self, key: &str) -> Result<Option<i64>> {
        if let Some(v) = self.known_meta(key) {
            return Ok(Some(v));
        }
        let sql = D::DIALECT.text("SELECT value FROM meta WHERE key = ?1");
        let value = self.one(sql, &[key.into()], decode::first_int)?.flatten();
        if let Some(v) = value {
            self.remember_meta(key, v);
        }
        Ok(value)
    }

    fn set_meta_value(&mut self, key: &str, value: i64) -> Result<()> {
        super::driver::writable(self.is_writable())?;
        // After the held-back writes, as `set_meta`.
        self.settle()?;
        let sql = D::DIALECT.text(
            "INSERT INTO meta (key, value) VALUES (?1, ?2) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        );
        self.execute(sql, &[key.into(), value.into()])?;
        self.remember_meta(key, value);
        Ok(())
    }

    fn raise_generations(&mut self, floor: u64) -> Result<u64> {
        super::driver::writable(self.is_writable())?;
        self.settle()?;
        let floor = super::int(floor)?;
        let mut raised = 0;
        for table in ["leases", "work"] {
            let sql = D::DIALECT.marks(&format!(
                "UPDATE {table} SET generation = ?1 WHERE generation < ?1"
            ));
            raised += self.execute(&sql, &[floor.into()])?;
        }
        Ok(raised)
    }

    fn import_revision(&mut self, revision: u64, journal_high_water: i64) -> Result<()> {
        self.set_meta("revision", super::int(revision)?)?;
        self.set_meta("journal_seq", journal_high_water)
    }
}
