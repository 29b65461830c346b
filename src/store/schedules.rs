//! Schedules: definitions and firing. Firings are derived-id work items, enqueued with an
//! insert-if-absent inside one transaction, so any number of pollers yields one firing.

use super::Store;
use super::work::save_work;
use crate::error::Result;
use crate::ids::check_id;
use crate::model::schedule::{CatchUp, Schedule, Trigger, firing_id};
use crate::model::work::NewWork;
use crate::model::{WorkItem, WorkKind};
use crate::rules::schedule as rules;

impl Store {
    /// Creates (or leaves alone) a schedule. Its first boundary is the first one after now.
    ///
    /// # Errors
    /// A store failure.
    pub fn create_schedule(
        &self,
        id: &str,
        trigger: Trigger,
        catch_up: CatchUp,
        handler: &str,
        payload: &str,
        compat: &str,
    ) -> Result<bool> {
        check_id("schedule id", id)?;
        check_id("handler", handler)?;
        self.write(|tx, now| {
            if tx.schedule(id)?.is_some() {
                return Ok(false);
            }
            tx.commit_revision()?;
            tx.put_schedule(&Schedule {
                schedule_id: id.into(),
                trigger,
                catch_up,
                handler: handler.into(),
                payload: payload.into(),
                compat: compat.into(),
                last_due: None,
                next_due: rules::first_boundary(trigger, now),
                created_at: now,
            })?;
            Ok(true)
        })
    }

    /// Enqueues the firings of every due schedule (at most `limit` schedules per call);
    /// returns how many new firings this call created.
    ///
    /// # Errors
    /// A store failure.
    pub fn fire_due_schedules(&self, limit: usize) -> Result<usize> {
        self.write(|tx, now| {
            let mut fired = 0;
            for schedule in tx.due_schedules(now, limit)? {
                let observation = rules::observe(&schedule, now);
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
                        &WorkItem::new(spec, &schedule.compat, now),
                    )?);
                }
                tx.put_schedule(&Schedule {
                    last_due: observation.last_due,
                    next_due: observation.next_due,
                    ..schedule
                })?;
            }
            Ok(fired)
        })
    }

    /// One schedule.
    ///
    /// # Errors
    /// A store failure.
    pub fn schedule(&self, id: &str) -> Result<Option<Schedule>> {
        self.read(|tx| tx.schedule(id))
    }
}
