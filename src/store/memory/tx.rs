//! The `Tx` seam on the memory store: one method per row access, with no SQL around it —
//! the one place that says what every `Tx` method means. Each is a map access or a call
//! into the table that keeps the rows' indexes in step; a write logs how to undo each
//! change (`undo.rs`).
//!
//! About 700 lines on purpose: a trait's implementation is one block, which cannot be split
//! across files; what is longer than a few lines lives in the tables beside it.

use std::ops::Bound;
use std::sync::Arc;

use super::MemTx;
use super::State;
use super::pages::{numeric_page, page_in, page_of};
use super::retention::ids_through;
use crate::clock::Millis;
use crate::error::Result;
use crate::model::event::DedupRecord;
use crate::model::work::{WorkFilter, WorkLane, WorkState};
use crate::model::workflow::ActionOutcome;
use crate::model::{
    AttemptError, AuditEntry, Authority, ChainLink, Grant, HandlerPause, HistoryPosition,
    HistoryRecord, IdempotentAnswer, Ingestion, InstanceRow, JournalEvent, Lease, PageRequest,
    RateWindow, Schedule, Subscription, WorkItem, WorkflowDefinitionRow, WriteRecord,
};
use crate::store::backend::Tx;
use crate::store::work_table::Replaced;

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
        let leases: Vec<Lease> = (self.state.leases.rows().values())
            .filter(|l| l.generation < floor)
            .cloned()
            .collect();
        let items: Vec<WorkItem> = (self.state.work.values())
            .filter(|w| w.generation < floor)
            .cloned()
            .collect();
        let raised = (leases.len() + items.len()) as u64;
        for lease in leases {
            self.put_lease_row(Lease {
                generation: floor,
                ..lease
            });
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
        self.put_lease_row(lease.clone());
        Ok(())
    }

    fn live_lease_count(&mut self, owner: &str, now: Millis) -> Result<u64> {
        Ok(self.state.leases.live_count(owner, now))
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
        Ok(page_of(self.state.leases.rows(), page, |_| true))
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
        let appended = self.state.journal.append(event);
        let seq = appended.seq;
        self.undo.steps.push(Box::new(move |s: &mut State| {
            s.journal.undo_append(appended);
        }));
        Ok(seq)
    }

    fn journal_after(
        &mut self,
        after: i64,
        event_type: Option<&str>,
        limit: usize,
    ) -> Result<Vec<JournalEvent>> {
        Ok(self.state.journal.after(after, event_type, limit))
    }

    fn journal_high_water(&mut self) -> Result<i64> {
        Ok(self.state.journal.high_water())
    }

    fn journal_type_high_water(&mut self, event_type: &str) -> Result<i64> {
        Ok(self.state.journal.type_high_water(event_type))
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
        let due = self.state.schedules.due(now, limit);
        Ok(due.into_iter().cloned().collect())
    }

    fn delete_schedule(&mut self, id: &str) -> Result<bool> {
        let Some(old) = self.state.schedules.remove(id) else {
            return Ok(false);
        };
        self.undo.steps.push(Box::new(move |s: &mut State| {
            s.schedules.insert(old.schedule_id.clone(), old);
        }));
        Ok(true)
    }

    fn list_schedules(&mut self, page: &PageRequest) -> Result<Vec<Schedule>> {
        Ok(page_of(self.state.schedules.rows(), page, |_| true))
    }

    fn handler_pauses(&mut self) -> Result<Vec<HandlerPause>> {
        Ok(self.state.handler_pauses.values().cloned().collect())
    }

    fn put_handler_pause(&mut self, pause: &HandlerPause) -> Result<()> {
        put!(self, handler_pauses, pause.handler.clone(), pause.clone());
        Ok(())
    }

    fn delete_handler_pause(&mut self, handler: &str) -> Result<bool> {
        Ok(take!(self, handler_pauses, handler.to_owned()).is_some())
    }

    fn rate_window(&mut self, handler: &str) -> Result<Option<RateWindow>> {
        Ok(self.state.handler_rates.get(handler).cloned())
    }

    fn put_rate_window(&mut self, window: &RateWindow) -> Result<()> {
        put!(self, handler_rates, window.handler.clone(), window.clone());
        Ok(())
    }

    fn waiting_count(&mut self, handler: &str) -> Result<u64> {
        Ok(self.state.work.waiting_count(handler))
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
        let added = self.state.ownership.add_grant(grant);
        self.undo.history.push(added);
        Ok(())
    }

    fn add_write(&mut self, write: WriteRecord) -> Result<()> {
        let added = self.state.ownership.add_write(write);
        self.undo.history.push(added);
        Ok(())
    }

    fn grants(&mut self, resource: Option<&str>, after: u64, limit: usize) -> Result<Vec<Grant>> {
        Ok(self
            .state
            .ownership
            .grants(resource, (after, u64::MAX), limit))
    }

    fn grants_through(&mut self, after: u64, through: u64, limit: usize) -> Result<Vec<Grant>> {
        Ok(self.state.ownership.grants(None, (after, through), limit))
    }

    fn history_records_bound(&mut self) -> Result<u64> {
        Ok(self.state.ownership.len())
    }

    fn history_high_revision(&mut self) -> Result<u64> {
        Ok(self.state.ownership.high_revision())
    }

    fn latest_grants(&mut self, resource: &str, limit: usize) -> Result<Vec<Grant>> {
        Ok(self.state.ownership.latest_grants(resource, limit))
    }

    fn writes(
        &mut self,
        resource: Option<&str>,
        after: u64,
        limit: usize,
    ) -> Result<Vec<WriteRecord>> {
        Ok(self.state.ownership.writes(resource, after, limit))
    }

    fn trim_history(
        &mut self,
        keep_from_revision: u64,
        keep_incidents_since: Millis,
    ) -> Result<()> {
        self.state
            .ownership
            .trim(keep_from_revision, keep_incidents_since);
        Ok(())
    }

    fn put_link(&mut self, link: &ChainLink) -> Result<()> {
        self.writable()?;
        put!(self, chain, link.revision, link.clone());
        Ok(())
    }

    fn link(&mut self, revision: u64) -> Result<Option<ChainLink>> {
        Ok(self.state.chain.get(&revision).cloned())
    }

    fn links(&mut self, after: u64, limit: usize) -> Result<Vec<ChainLink>> {
        Ok(self
            .state
            .chain
            .range((Bound::Excluded(after), Bound::Unbounded))
            .take(limit)
            .map(|(_, l)| l.clone())
            .collect())
    }

    fn trim_links(&mut self, keep_from_revision: u64) -> Result<()> {
        self.writable()?;
        let old: Vec<u64> = self
            .state
            .chain
            .range(..keep_from_revision)
            .map(|(r, _)| *r)
            .filter(|r| crate::store::chain::trims_link(*r, keep_from_revision))
            .collect();
        take_all!(self, chain, old);
        Ok(())
    }

    fn failovers(
        &mut self,
        since: Millis,
        before: Option<HistoryPosition>,
        limit: usize,
    ) -> Result<Vec<(HistoryPosition, Grant)>> {
        Ok(self.state.ownership.failovers(since, before, limit))
    }

    fn count_failovers(&mut self, since: Millis) -> Result<u64> {
        Ok(self.state.ownership.count_failovers(since))
    }

    fn refused_writes(
        &mut self,
        since: Millis,
        before: Option<HistoryPosition>,
        limit: usize,
    ) -> Result<Vec<(HistoryPosition, WriteRecord)>> {
        Ok(self.state.ownership.refused_writes(since, before, limit))
    }

    fn count_refused_writes(&mut self, since: Millis) -> Result<u64> {
        Ok(self.state.ownership.count_refused_writes(since))
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

    fn add_attempt_error(&mut self, error: &AttemptError, keep: usize) -> Result<()> {
        self.writable()?;
        let id = error.work_id.clone();
        put!(
            self,
            attempt_errors,
            (id.clone(), error.generation),
            error.clone()
        );
        let older: Vec<(String, u64)> = self
            .state
            .attempt_errors_of(&id)
            .rev()
            .skip(keep)
            .map(|e| (id.clone(), e.generation))
            .collect();
        take_all!(self, attempt_errors, older);
        Ok(())
    }

    fn attempt_errors(&mut self, work_id: &str) -> Result<Vec<AttemptError>> {
        Ok(self
            .state
            .attempt_errors_of(work_id)
            .rev()
            .cloned()
            .collect())
    }

    fn list_attempt_errors(
        &mut self,
        after: Option<(&str, u64)>,
        limit: usize,
    ) -> Result<Vec<AttemptError>> {
        let lower = after.map_or(Bound::Unbounded, |(id, generation)| {
            Bound::Excluded((id.to_owned(), generation))
        });
        Ok(self
            .state
            .attempt_errors
            .range((lower, Bound::Unbounded))
            .take(limit)
            .map(|(_, e)| e.clone())
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
        Ok(self.state.succeeded_before(before, limit))
    }

    fn delete_work(&mut self, id: &str) -> Result<()> {
        self.writable()?;
        if let Some(old) = self.state.work.remove(id) {
            self.undo.work.push(Replaced::Row(old));
        }
        let errors: Vec<(String, u64)> = (self.state.attempt_errors_of(id))
            .map(|e| (id.to_owned(), e.generation))
            .collect();
        take_all!(self, attempt_errors, errors);
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
        let (positions, invocations) = self.state.instance_records(id);
        take_all!(self, history, positions);
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
        let keys = self.state.dedup_before(source, except, before, limit);
        Ok(take_all!(self, dedup, keys))
    }

    fn trim_idempotent_answers(&mut self, before: Millis, limit: usize) -> Result<u64> {
        self.writable()?;
        let keys = self.state.answers_before(before, limit);
        Ok(take_all!(self, idempotency, keys))
    }

    fn delete_ingestions_through(&mut self, through: i64) -> Result<u64> {
        self.writable()?;
        let ids = ids_through(&self.state.ingestions, through);
        Ok(take_all!(self, ingestions, ids))
    }

    fn delete_audit_through(&mut self, through: i64) -> Result<u64> {
        self.writable()?;
        let ids = ids_through(&self.state.audit, through);
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
        let (seq, old) = (event.seq, self.state.journal.import(event));
        self.undo
            .steps
            .push(Box::new(move |s: &mut State| s.journal.put_back(seq, old)));
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
        let old_revision = std::mem::replace(&mut self.state.revision, revision);
        let old_seq = self.state.journal.set_high_water(journal_high_water);
        self.undo.steps.push(Box::new(move |s: &mut State| {
            s.revision = old_revision;
            s.journal.set_high_water(old_seq);
        }));
        Ok(())
    }
}
