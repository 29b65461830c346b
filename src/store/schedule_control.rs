//! The operator's changes to a schedule's life: pause, resume, delete
//! ([`crate::rules::schedule::control`] decides). The schedule is read, judged and written
//! in one transaction, and the audit entry (actor, outcome, reason) commits with it, for a
//! refusal too. Firings already enqueued are ordinary work items: none of these touches
//! them, so a firing in flight when its schedule is paused or deleted runs to its end.

use super::logged::Logged;
use super::release::refusal;
use super::{Store, record_audit};
use crate::error::{Error, Result};
use crate::ids::check_id;
use crate::model::schedule::Schedule;
use crate::rules::schedule::{self as rules, Control, Controlled};

/// The answer of [`Store::control_schedule`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScheduleControlled {
    /// The schedule as it stands afterwards (as it was, for a delete).
    pub schedule: Schedule,
    /// Whether anything changed (`false`: it was already paused, or already running).
    pub changed: bool,
}

impl Store {
    /// Pauses, resumes or deletes schedule `id`, audited as `actor` with `reason` (which
    /// may be empty). A repeated pause or resume changes nothing and answers
    /// `changed: false` (audited as such).
    ///
    /// # Errors
    /// `NOT_FOUND` for an unknown schedule (the refusal is audited), `INVALID` for a
    /// malformed id (nothing written); a store failure.
    pub fn control_schedule(
        &self,
        id: &str,
        control: Control,
        actor: &str,
        reason: &str,
    ) -> Result<ScheduleControlled> {
        check_id("schedule id", id)?;
        let action = control.action();
        self.write_logged(|tx, now| {
            let Some(current) = tx.schedule(id)? else {
                let e = Error::NotFound {
                    what: "schedule".into(),
                    id: id.into(),
                };
                record_audit(tx, now, actor, action, id, &refusal(&e), reason)?;
                return Ok(Logged::Refused(e));
            };
            let (outcome, changed) = match rules::control(&current, control, now) {
                Controlled::Already => (format!("already {}", control.done()), false),
                Controlled::Changed(next) => {
                    match &next {
                        Some(schedule) => tx.put_schedule(schedule)?,
                        None => {
                            tx.delete_schedule(id)?;
                        }
                    }
                    (control.done().to_owned(), true)
                }
            };
            record_audit(tx, now, actor, action, id, &outcome, reason)?;
            let schedule = match control {
                Control::Delete => current,
                _ => tx.schedule(id)?.unwrap_or(current),
            };
            Ok(Logged::Done(ScheduleControlled { schedule, changed }))
        })
    }
}
