//! Cancelling an instance: an operator's fenced transition to `cancelled`.
//!
//! One verdict function ([`judge`]) decides, from the instance's row and the caller's keys,
//! what a cancel comes to; the store's cancel runs it inside its write transaction before
//! it writes, and a dry run runs it on the row a page listed, so the two can only differ
//! when the row moved in between. An operator's cancel
//! ([`Store::cancel_workflow_audited`], the command line's and the dashboard's) writes its
//! audit entry in the transaction that judged and cancelled, refusals included: a committed
//! cancel always has its entry.

use serde::Serialize;

use super::transition::{commit_transition, decode_state};
use super::{corrupt, instance_resource, pinned, refusal};
use crate::clock::Millis;
use crate::error::{Error, Result};
use crate::ids::check_id;
use crate::model::{CompatSet, InstanceRow, InstanceStatus};
use crate::store::{Logged, Store, Tx, record_audit};
use crate::workflow::machine::{self, MachineError, Trigger};
use crate::workflow::parse_definition;

/// The audit log's action name for an operator's cancel, from either front end.
pub const AUDIT_ACTION: &str = "cancel-workflow";

/// What a cancel did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum CancelOutcome {
    Cancelled,
    AlreadyCancelled,
}

/// What a cancel attempt came to, in the words the screen, the terminal and the audit log
/// share.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// The instance moved to `cancelled`.
    Cancelled,
    /// A repeat: the instance was cancelled before; nothing was written. Cancelling is
    /// idempotent, so this is a success, not a refusal.
    AlreadyCancelled,
    /// Refused: the instance had already finished with this status (completed, failed).
    Finished(String),
    /// Refused: no instance has this id.
    Unknown,
    /// Refused: the instance belongs to another build than the caller's.
    Incompatible,
    /// Refused for another reason (its error code).
    Failed(String),
}

impl Verdict {
    /// The verdict of a cancel's answer.
    #[must_use]
    pub fn of(answer: &Result<CancelOutcome>) -> Self {
        match answer {
            Ok(CancelOutcome::Cancelled) => Self::Cancelled,
            Ok(CancelOutcome::AlreadyCancelled) => Self::AlreadyCancelled,
            Err(Error::AlreadyTerminal { state, .. }) => Self::Finished(state.clone()),
            Err(Error::NotFound { .. }) => Self::Unknown,
            Err(Error::Incompatible { .. }) => Self::Incompatible,
            Err(e) => Self::Failed(e.code().into()),
        }
    }

    /// The outcome in words: `cancelled`, `already cancelled`, `refused: completed`,
    /// `refused: no such instance`, `refused: incompatible build`, `failed: INVALID`.
    #[must_use]
    pub fn words(&self) -> String {
        match self {
            Self::Cancelled => "cancelled".into(),
            Self::AlreadyCancelled => "already cancelled".into(),
            Self::Finished(status) => format!("refused: {status}"),
            Self::Unknown => "refused: no such instance".into(),
            Self::Incompatible => "refused: incompatible build".into(),
            Self::Failed(code) => format!("failed: {code}"),
        }
    }

    /// Whether the cancel was refused (or failed): the instance is not cancelled.
    #[must_use]
    pub fn refused(&self) -> bool {
        !matches!(self, Self::Cancelled | Self::AlreadyCancelled)
    }

    /// The stable code of a refusal — the code of the error [`Verdict::of`] read it from —
    /// for the command line's one line to start with; `None` when the cancel stands.
    #[must_use]
    pub fn code(&self) -> Option<&str> {
        match self {
            Self::Cancelled | Self::AlreadyCancelled => None,
            Self::Finished(_) => Some("already-terminal"),
            Self::Unknown => Some("NOT_FOUND"),
            Self::Incompatible => Some("INCOMPATIBLE_AUTHORITY"),
            Self::Failed(code) => Some(code),
        }
    }
}

/// What a cancel of `instance_id` comes to, judged from its row (`None`: no such instance)
/// for a caller that may run `compat` (`None`: any): refused for another build's instance
/// first (fail-closed, whatever its status), then a repeat for a cancelled one, a refusal
/// for a completed or failed one, and otherwise [`CancelOutcome::Cancelled`] — the cancel
/// goes ahead.
///
/// # Errors
/// `NOT_FOUND`, `INCOMPATIBLE_AUTHORITY` or `already-terminal`: the refusal.
pub fn judge(
    instance_id: &str,
    row: Option<&InstanceRow>,
    compat: Option<&CompatSet>,
) -> Result<CancelOutcome> {
    let Some(row) = row else {
        return Err(Error::NotFound {
            what: "workflow instance".into(),
            id: instance_id.into(),
        });
    };
    if let Some(have) = compat.filter(|keys| !keys.contains(&row.compat)) {
        return Err(Error::Incompatible {
            id: instance_id.into(),
            required: row.compat.clone(),
            have: have.to_string(),
        });
    }
    match row.status {
        InstanceStatus::Cancelled => Ok(CancelOutcome::AlreadyCancelled),
        status if status.is_terminal() => Err(Error::AlreadyTerminal {
            id: instance_id.into(),
            state: status.as_str().into(),
        }),
        _ => Ok(CancelOutcome::Cancelled),
    }
}

impl Store {
    /// Cancels an instance: an idempotent, fenced transition to `cancelled` (not a
    /// rollback: committed actions and dispatched effects stand). `compat` is the digests the
    /// caller may run (`None`: any); an instance whose digest is not among them is refused.
    /// The instance's lease is released under a new generation in the same transaction:
    /// an authority holding it is refused at its next renewal (which stops the action it
    /// runs) and fenced out of any late transition. `actor` and `reason` go into the
    /// instance's history; an operator's cancel, which is audited too, is
    /// [`Store::cancel_workflow_audited`].
    ///
    /// Outcomes: [`CancelOutcome::Cancelled`] — moved to `cancelled` now;
    /// [`CancelOutcome::AlreadyCancelled`] — it already was, nothing is written.
    ///
    /// # Errors
    /// `NOT_FOUND` (no such instance, or its pinned definition is gone), `already-terminal`
    /// (completed / failed), `INCOMPATIBLE_AUTHORITY`, `INVALID` for an instance id that
    /// fails [`check_id`]; `STORE_CORRUPT`; a store failure. Nothing is written on any
    /// error.
    pub fn cancel_workflow(
        &self,
        instance_id: &str,
        compat: Option<&CompatSet>,
        actor: &str,
        reason: &str,
    ) -> Result<CancelOutcome> {
        check_id("instance id", instance_id)?;
        self.write_logged(|tx, now| {
            cancel_in(tx, now, instance_id, compat, actor, reason).map(Logged::from)
        })
    }

    /// An operator's cancel: [`Store::cancel_workflow`] and its audit entry (as `actor`,
    /// the verdict's words with `reason`) in one transaction, whatever the verdict — a
    /// refusal is audited and changes nothing else. What the command line and the
    /// dashboard call.
    ///
    /// # Errors
    /// `INVALID` for a malformed instance id or an empty actor (nothing written);
    /// `STORE_CORRUPT`; a store failure (nothing written, the audit entry included).
    pub fn cancel_workflow_audited(
        &self,
        instance_id: &str,
        compat: Option<&CompatSet>,
        actor: &str,
        reason: &str,
    ) -> Result<Verdict> {
        check_id("instance id", instance_id)?;
        if actor.trim().is_empty() {
            return Err(Error::Invalid("an operator action needs an actor".into()));
        }
        self.write(|tx, now| {
            let verdict = Verdict::of(&cancel_in(tx, now, instance_id, compat, actor, reason)?);
            record_audit(
                tx,
                now,
                actor,
                AUDIT_ACTION,
                instance_id,
                &verdict.words(),
                reason,
            )?;
            Ok(verdict)
        })
    }
}

/// One cancel inside a write transaction: the [`judge`]ment of the row it reads, and the
/// transition when the judgement lets the cancel go ahead. The inner result is the
/// answer (a refusal writes nothing); the outer one a store failure or a corrupt row.
fn cancel_in(
    tx: &mut dyn Tx,
    now: Millis,
    instance_id: &str,
    compat: Option<&CompatSet>,
    actor: &str,
    reason: &str,
) -> Result<Result<CancelOutcome>> {
    let row = tx.instance(instance_id)?;
    let answer = judge(instance_id, row.as_ref(), compat);
    let (Ok(CancelOutcome::Cancelled), Some(row)) = (&answer, row) else {
        return Ok(answer);
    };
    let (definition, state) = decode_state(&row)?;
    let Some(def_row) = tx.definition(&pinned(&row.workflow_id, &definition))? else {
        return Ok(Err(Error::NotFound {
            what: "workflow definition".into(),
            id: pinned(&row.workflow_id, &definition),
        }));
    };
    let def = parse_definition(&def_row.definition)
        .map_err(|_| corrupt("deployed definition", &row.workflow_id))?;
    let trigger = Trigger::Cancel {
        by: actor.into(),
        reason: reason.into(),
    };
    Ok(match machine::apply(&def, &state, trigger, now, 0) {
        Err(MachineError::AlreadyCancelled) => Ok(CancelOutcome::AlreadyCancelled),
        Err(e) => Err(refusal(&e, instance_id)),
        Ok((next, entries)) => {
            commit_transition(tx, &row, &definition, &next, &entries, now)?;
            // The authority advancing it, an action perhaps running, loses its lease now:
            // its next renewal is fenced, which stops the action (an exec handler is sent
            // SIGTERM, then SIGKILL after its grace), and a late transition of it is
            // refused as after any release, with no holder, not as its own stale write.
            let resource = instance_resource(instance_id);
            if let Some(lease) = tx.lease(&resource)?.filter(|l| l.released_at.is_none()) {
                crate::store::release_lease(tx, now, actor, &lease)?;
            }
            Ok(CancelOutcome::Cancelled)
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::history::with_reason;

    fn row(status: InstanceStatus, compat: &str) -> InstanceRow {
        InstanceRow {
            instance_id: "wf-1".into(),
            workflow_id: "order".into(),
            status,
            compat: compat.into(),
            instance_revision: 1,
            next_eligible_at: None,
            waiting_event: None,
            principal: "alice".into(),
            start_key: None,
            state: "{}".into(),
            created_at: 0,
            updated_at: 0,
        }
    }

    #[test]
    fn another_builds_instance_is_refused_whatever_its_status() {
        let mine = CompatSet::from("mine");
        let judged =
            |status, compat| Verdict::of(&judge("wf-1", Some(&row(status, compat)), Some(&mine)));
        assert_eq!(judged(InstanceStatus::Running, "mine"), Verdict::Cancelled);
        assert_eq!(
            judged(InstanceStatus::Cancelled, "mine"),
            Verdict::AlreadyCancelled
        );
        assert_eq!(
            judged(InstanceStatus::Completed, "mine"),
            Verdict::Finished("completed".into())
        );
        for status in [InstanceStatus::Running, InstanceStatus::Cancelled] {
            assert_eq!(judged(status, "theirs"), Verdict::Incompatible);
        }
        assert_eq!(
            Verdict::of(&judge("wf-9", None, Some(&mine))),
            Verdict::Unknown
        );
        assert_eq!(
            Verdict::of(&judge(
                "wf-1",
                Some(&row(InstanceStatus::Waiting, "theirs")),
                None
            )),
            Verdict::Cancelled,
            "a caller without keys may cancel any build's"
        );
    }

    /// A refusal's code is the one of the error it was read from.
    #[test]
    fn a_refusal_keeps_its_error_s_code() {
        let refusals = [
            Error::AlreadyTerminal {
                id: "wf-1".into(),
                state: "completed".into(),
            },
            Error::NotFound {
                what: "workflow instance".into(),
                id: "wf-1".into(),
            },
            Error::Incompatible {
                id: "wf-1".into(),
                required: "k2".into(),
                have: "k1".into(),
            },
            Error::Invalid("x".into()),
        ];
        for e in refusals {
            assert_eq!(Verdict::of(&Err(e.clone())).code(), Some(e.code()), "{e}");
        }
        assert_eq!(Verdict::of(&Ok(CancelOutcome::Cancelled)).code(), None);
    }

    #[test]
    fn one_vocabulary_with_the_reason() {
        assert_eq!(with_reason(Verdict::Cancelled.words(), ""), "cancelled");
        assert_eq!(
            with_reason(Verdict::Finished("completed".into()).words(), " dup "),
            "refused: completed; reason: dup"
        );
        assert_eq!(Verdict::Unknown.words(), "refused: no such instance");
        assert!(Verdict::Incompatible.refused());
        assert_eq!(Verdict::AlreadyCancelled.words(), "already cancelled");
        assert!(
            !Verdict::AlreadyCancelled.refused(),
            "a repeat is a success"
        );
    }
}
