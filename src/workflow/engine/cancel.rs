//! Cancelling an instance: an operator's fenced transition to `cancelled`.

use serde::Serialize;

use super::transition::{commit_transition, decode_state};
use super::{corrupt, pinned, refusal};
use crate::error::{Error, Result};
use crate::ids::check_id;
use crate::model::CompatSet;
use crate::store::{Logged, Store};
use crate::workflow::machine::{self, MachineError, Trigger};
use crate::workflow::parse_definition;

/// What a cancel did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum CancelOutcome {
    Cancelled,
    AlreadyCancelled,
}

impl Store {
    /// Cancels an instance: an idempotent, fenced transition to `cancelled` (not a
    /// rollback: committed actions and dispatched effects stand). `compat` is the digests the
    /// caller may run (`None`: any); an instance whose digest is not among them is refused. Any authority holding the
    /// instance is fenced out by the revision change. `actor` and `reason` go into the
    /// instance's history; the audit log is written by [`crate::ops::cancel::cancel`],
    /// which wraps this call for the CLI and the dashboard.
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
            let Some(row) = tx.instance(instance_id)? else {
                return Ok(Logged::Refused(Error::NotFound {
                    what: "workflow instance".into(),
                    id: instance_id.into(),
                }));
            };
            if let Some(have) = compat.filter(|keys| !keys.contains(&row.compat)) {
                return Ok(Logged::Refused(Error::Incompatible {
                    id: instance_id.into(),
                    required: row.compat.clone(),
                    have: have.to_string(),
                }));
            }
            let (definition, state) = decode_state(&row)?;
            let Some(def_row) = tx.definition(&pinned(&row.workflow_id, &definition))? else {
                return Ok(Logged::Refused(Error::NotFound {
                    what: "workflow definition".into(),
                    id: pinned(&row.workflow_id, &definition),
                }));
            };
            let def = parse_definition(&def_row.definition)
                .map_err(|_| corrupt("deployed definition", &row.workflow_id))?;
            match machine::apply(
                &def,
                &state,
                Trigger::Cancel {
                    by: actor.into(),
                    reason: reason.into(),
                },
                now,
                0,
            ) {
                Err(MachineError::AlreadyCancelled) => {
                    Ok(Logged::Done(CancelOutcome::AlreadyCancelled))
                }
                Err(e) => Ok(Logged::Refused(refusal(&e, instance_id))),
                Ok((next, entries)) => {
                    commit_transition(tx, &row, &definition, &next, &entries, now)?;
                    Ok(Logged::Done(CancelOutcome::Cancelled))
                }
            }
        })
    }
}
