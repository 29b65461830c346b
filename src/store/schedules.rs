//! Schedules: definitions, updates and firing. Firings are derived-id work items, enqueued
//! with an insert-if-absent inside one transaction, so any number of pollers yields one
//! firing. A firing is work created by the authority that observes the schedule, so it
//! carries that observer's compatibility key, not the key of whoever created the schedule:
//! after a rolling deploy retires the creating build, the new build's firings stay
//! claimable by the new build.

use super::work::{check_payload, save_work};
use super::{HandlerKeys, Store, Tx};
use crate::clock::Millis;
use crate::error::{Error, Result};
use crate::ids::{check_id, check_new_id};
use crate::model::schedule::{CatchUp, Schedule, Trigger, firing_id};
use crate::model::work::NewWork;
use crate::model::{AuditEntry, WorkItem, WorkKind};
use crate::rules::schedule as rules;

/// The audit action of [`Store::update_schedule`].
pub const UPDATE_ACTION: &str = "schedule-update";

impl Store {
    /// Creates a schedule; its first boundary is the first one after now. `compat` labels
    /// the creating build (firings carry their observer's key, see the module docs).
    ///
    /// Outcomes: `Ok(true)` — created; `Ok(false)` — a schedule with this id already exists
    /// and is left exactly as it is, whatever its definition: a caller that must tell a
    /// repeat from another definition reads it back with [`Self::schedule`] (as
    /// `leasehold schedule create` does), and changes one with [`Self::update_schedule`].
    ///
    /// # Errors
    /// `INVALID` for a schedule id or handler that fails [`check_new_id`], a cron trigger
    /// that does not read ([`Trigger::check`]), or a new schedule's payload that is not
    /// JSON (nothing is written);
    /// a store failure.
    pub fn create_schedule(
        &self,
        id: &str,
        trigger: Trigger,
        catch_up: CatchUp,
        handler: &str,
        payload: &str,
        compat: &str,
    ) -> Result<bool> {
        check_new_id("schedule id", id)?;
        check_new_id("handler", handler)?;
        trigger.check()?;
        self.write(|tx, now| {
            if tx.schedule(id)?.is_some() {
                return Ok(false);
            }
            // A repeat (a service creating its schedules at every start) answers as it
            // always did, whatever an older build stored; only a new schedule's payload
            // must be JSON, as every firing hands it to the handler.
            check_payload(&format!("schedule {id}"), payload)?;
            tx.commit_revision()?;
            tx.put_schedule(&Schedule {
                schedule_id: id.into(),
                trigger: trigger.clone(),
                catch_up,
                handler: handler.into(),
                payload: payload.into(),
                compat: compat.into(),
                last_due: None,
                next_due: rules::first_boundary(&trigger, now),
                created_at: now,
                paused_at: None,
            })?;
            Ok(true)
        })
    }

    /// Replaces a schedule's trigger, catch-up policy, handler and payload, audited under
    /// `actor`. Firings already enqueued stay as they were; the boundaries after now follow
    /// the new definition. Returns the schedule as stored.
    ///
    /// # Errors
    /// `NOT_FOUND` for an unknown schedule, `INVALID` for a schedule id that fails
    /// [`check_id`], a handler that fails [`check_new_id`], a cron trigger that does not
    /// read or a payload that is not JSON (nothing is written either way); a store failure.
    #[allow(clippy::too_many_arguments)] // one argument per replaced field, plus who and which
    pub fn update_schedule(
        &self,
        id: &str,
        trigger: Trigger,
        catch_up: CatchUp,
        handler: &str,
        payload: &str,
        actor: &str,
    ) -> Result<Schedule> {
        check_id("schedule id", id)?;
        check_new_id("handler", handler)?;
        trigger.check()?;
        check_payload(&format!("schedule {id}"), payload)?;
        self.write(|tx, now| {
            let Some(current) = tx.schedule(id)? else {
                return Err(Error::NotFound {
                    what: "schedule".into(),
                    id: id.into(),
                });
            };
            tx.commit_revision()?;
            let updated = Schedule {
                trigger: trigger.clone(),
                catch_up,
                handler: handler.into(),
                payload: payload.into(),
                next_due: rules::first_boundary(&trigger, now.saturating_add(1)),
                ..current
            };
            tx.put_schedule(&updated)?;
            tx.add_audit(&AuditEntry {
                id: 0,
                at: now,
                actor: actor.into(),
                action: UPDATE_ACTION.into(),
                target: id.into(),
                outcome: format!(
                    "updated: {}, catch-up {}, handler {handler}",
                    trigger.label(),
                    catch_up.label()
                ),
            })?;
            Ok(updated)
        })
    }

    /// Enqueues the firings of every due schedule (at most `limit` schedules per call),
    /// stamped with the observing authority's key for the schedule's handler
    /// ([`HandlerKeys`]); returns how many new firings this call created. Observers of one
    /// due instant converge on its derived firing id: the first to enqueue it wins, the
    /// rest add nothing. A schedule whose handler the observer does not run is left due.
    /// Boundaries found within [`DEFAULT_ON_TIME_MS`] of their instant all fire; the catch-up
    /// policy thins only the older ones ([`rules::observe`]).
    ///
    /// # Errors
    /// A store failure.
    pub fn fire_due_schedules(&self, observer: impl HandlerKeys, limit: usize) -> Result<usize> {
        self.write(|tx, now| fire_due_in(tx, now, &observer, limit, DEFAULT_ON_TIME_MS))
    }

    /// One schedule.
    ///
    /// # Errors
    /// A store failure.
    pub fn schedule(&self, id: &str) -> Result<Option<Schedule>> {
        self.read(|tx| tx.schedule(id))
    }
}

/// The on-time window of [`Store::fire_due_schedules`]: that of an observer polling every
/// second, an authority's default.
pub const DEFAULT_ON_TIME_MS: Millis = 2_000;

/// [`Store::fire_due_schedules`] inside a transaction the caller may write more in (an
/// authority's poll fires and claims in one), with the observer's own on-time window
/// ([`rules::on_time_window`] of its poll interval).
///
/// # Errors
/// A store failure (then the caller's transaction commits nothing).
pub(crate) fn fire_due_in(
    tx: &mut dyn Tx,
    now: Millis,
    observer: &dyn HandlerKeys,
    limit: usize,
    on_time: Millis,
) -> Result<usize> {
    let mut fired = 0;
    for schedule in tx.due_schedules(now, limit)? {
        let Some(observer_compat) = observer.key_for(&schedule.handler) else {
            continue;
        };
        let observation = rules::observe(&schedule, now, on_time);
        tx.commit_revision()?;
        for due in &observation.due {
            let spec = NewWork {
                kind: WorkKind::Schedule,
                not_before: Some(*due),
                ..NewWork::effect(
                    firing_id(&schedule.schedule_id, *due),
                    schedule.handler.clone(),
                    schedule.payload.clone(),
                )
            };
            fired += usize::from(save_work(
                tx,
                None,
                &WorkItem::new(spec, &observer_compat, now),
            )?);
        }
        tx.put_schedule(&Schedule {
            last_due: observation.last_due,
            next_due: observation.next_due,
            ..schedule
        })?;
    }
    Ok(fired)
}
