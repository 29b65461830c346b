//! Event ingestion (dedup + journal) and subscription cursors.

use super::work::save_work;
use super::{Counter, Logged, Store, Tx, record_write};
use crate::clock::Millis;
use crate::error::{Error, Result};
use crate::ids::{check_id, check_opt_id};
use crate::model::event::{DedupOutcome, DedupRecord, NewEvent};
use crate::model::work::NewWork;
use crate::model::{
    Holder, Ingestion, InstanceRow, JournalEvent, Subscription, WorkItem, WorkKind, WriteVerb,
};
use crate::rules::{cursor, dedup};

/// What ingestion did with one delivery.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ingested {
    pub outcome: DedupOutcome,
    /// Journal seq of the semantic event (the original one for a duplicate).
    pub seq: Option<i64>,
}

/// Fanout: every instance waiting for this event type becomes eligible now, so some
/// authority replays the journal for it promptly. Nothing is consumed: each instance
/// decides on its own whether the event matches its `where`.
fn wake_waiters(tx: &mut dyn Tx, event_type: &str, now: Millis) -> Result<()> {
    let mut after: Option<String> = None;
    loop {
        let page = tx.instances_waiting_for(event_type, after.as_deref(), 512)?;
        let Some(last) = page.last() else {
            return Ok(());
        };
        after = Some(last.instance_id.clone());
        for row in page {
            if row.next_eligible_at.is_none_or(|t| t > now) {
                tx.update_instance(&InstanceRow {
                    next_eligible_at: Some(now),
                    ..row
                })?;
            }
        }
    }
}

impl Store {
    /// Ingests one external delivery: dedup on `(source, externalEventId)` against the
    /// canonical payload fingerprint, then (accepted / unidentified) one journal append.
    /// An id is never synthesised: without one, the event is `unidentified`.
    ///
    /// Outcomes, each recorded in the ingestion log and returned in `Ok`
    /// ([`Ingested::outcome`], with the journal `seq`):
    /// - `accepted`: first delivery of this `(source, id)`; appended, waiting workflow
    ///   instances woken;
    /// - `duplicate`: same `(source, id)` and the same canonical payload as the first
    ///   delivery; nothing appended, `seq` is the first delivery's;
    /// - `EVENT_ID_CONFLICT` ([`DedupOutcome::Conflict`]): same `(source, id)`, another
    ///   payload; nothing appended or dispatched, `seq` is the first delivery's;
    /// - `unidentified`: no `(source, id)`; appended every time (at-least-once).
    ///
    /// # Errors
    /// `INVALID` for an event type, source or id that fails [`check_id`] (nothing is
    /// written); a store failure.
    pub fn ingest(&self, event: &NewEvent) -> Result<Ingested> {
        check_id("event type", &event.event_type)?;
        check_opt_id(
            "event source",
            event.source.as_deref().filter(|s| !s.is_empty()),
        )?;
        check_opt_id(
            "event id",
            event.external_id.as_deref().filter(|s| !s.is_empty()),
        )?;
        let canonical = dedup::canonical_json(&event.payload);
        let fingerprint = dedup::fingerprint(&canonical);
        let stable = event
            .source
            .as_deref()
            .zip(event.external_id.as_deref())
            .filter(|(s, id)| !s.is_empty() && !id.is_empty());
        self.write(|tx, now| {
            let existing = match stable {
                Some((source, id)) => tx.dedup(source, id)?,
                None => None,
            };
            let outcome = dedup::classify(stable.is_some(), existing.as_ref(), &fingerprint);
            tx.commit_revision()?;
            let seq = match outcome {
                DedupOutcome::Accepted | DedupOutcome::Unidentified => {
                    let seq = tx.append_journal(&JournalEvent {
                        seq: 0,
                        event_type: event.event_type.clone(),
                        source: event.source.clone(),
                        external_id: event.external_id.clone(),
                        payload: canonical.clone(),
                        fingerprint: fingerprint.clone(),
                        at: now,
                    })?;
                    if let Some((source, id)) = stable {
                        tx.put_dedup(&DedupRecord {
                            source: source.into(),
                            external_id: id.into(),
                            fingerprint: fingerprint.clone(),
                            seq,
                            first_seen_at: now,
                        })?;
                    }
                    wake_waiters(tx, &event.event_type, now)?;
                    Some(seq)
                }
                DedupOutcome::Duplicate | DedupOutcome::Conflict => {
                    existing.as_ref().map(|r| r.seq)
                }
            };
            tx.add_ingestion(&Ingestion {
                id: 0,
                at: now,
                event_type: event.event_type.clone(),
                source: event.source.clone(),
                external_id: event.external_id.clone(),
                outcome,
                seq,
            })?;
            Counter::Events(outcome).adjust(tx, 1)?;
            Ok(Ingested { outcome, seq })
        })
    }

    /// Journal events after `after`, ascending (only `event_type` when given).
    ///
    /// # Errors
    /// A store failure.
    pub fn journal_after(
        &self,
        after: i64,
        event_type: Option<&str>,
        limit: usize,
    ) -> Result<Vec<JournalEvent>> {
        self.read(|tx| tx.journal_after(after, event_type, limit))
    }

    /// The journal's high-water mark: the seq a new wait starts after.
    ///
    /// # Errors
    /// A store failure.
    pub fn journal_high_water(&self) -> Result<i64> {
        self.read(|tx| tx.journal_high_water())
    }

    /// Creates a subscription over `event_type` and its cursor work item (idempotent).
    ///
    /// # Errors
    /// A store failure.
    pub fn create_subscription(
        &self,
        id: &str,
        event_type: &str,
        handler: &str,
        compat: &str,
    ) -> Result<bool> {
        check_id("subscription id", id)?;
        check_id("event type", event_type)?;
        check_id("handler", handler)?;
        self.write(|tx, now| {
            if tx.subscription(id)?.is_some() {
                return Ok(false);
            }
            tx.commit_revision()?;
            tx.put_subscription(&Subscription {
                subscription_id: id.into(),
                event_type: event_type.into(),
                sequence: 0,
                generation: 0,
                updated_at: now,
                updated_by: None,
            })?;
            let spec = NewWork {
                kind: WorkKind::Cursor,
                max_attempts: u32::MAX,
                ..NewWork::effect(
                    Subscription::work_id(id),
                    handler,
                    serde_json::json!({ "subscription": id }).to_string(),
                )
            };
            save_work(tx, None, &WorkItem::new(spec, compat, now))?;
            Ok(true)
        })
    }

    /// Moves a subscription's cursor forward under the cursor item's claim.
    ///
    /// # Errors
    /// `WORK_FENCED` (a newer owner took the cursor), `stale-sequence` (not forward).
    pub fn advance_cursor(
        &self,
        subscription: &str,
        owner: &str,
        generation: u64,
        sequence: u64,
    ) -> Result<Subscription> {
        let work_id = Subscription::work_id(subscription);
        self.write_logged(|tx, now| {
            let (Some(sub), Some(item)) = (tx.subscription(subscription)?, tx.work(&work_id)?) else {
                let refused = Error::NotFound { what: "subscription".into(), id: subscription.into() };
                let detail = serde_json::json!({ "subscription": subscription });
                record_write(tx, now, &work_id, owner, generation, WriteVerb::Cursor, &Err(refused.clone()), detail, Holder::nobody())?;
                return Ok(Logged::Refused(refused));
            };
            let outcome = cursor::advance(&sub, &item, owner, generation, sequence, now);
            let detail = serde_json::json!({ "subscription": subscription, "from": sub.sequence, "to": sequence });
            record_write(tx, now, &work_id, owner, generation, WriteVerb::Cursor, &outcome.as_ref().map(|_| ()).map_err(Clone::clone), detail, Holder::of_work(&item))?;
            if let Ok(next) = &outcome {
                tx.put_subscription(next)?;
            }
            Ok(outcome.into())
        })
    }

    /// One subscription's durable cursor.
    ///
    /// # Errors
    /// A store failure.
    pub fn subscription(&self, id: &str) -> Result<Option<Subscription>> {
        self.read(|tx| tx.subscription(id))
    }
}
