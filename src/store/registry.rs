//! The authority registry: registration, heartbeats and forgetting, each one transaction
//! that judges the row it changes. An instance id is unique among running authorities:
//! a start under an id whose holder is still live or silent is refused, a heartbeat never
//! overwrites a row that another start of the same id now owns, and only a gone or stopped
//! registration can be forgotten.

use super::{Logged, Store};
use crate::error::{Error, Result};
use crate::model::{AuditEntry, Authority, Incarnation};
use crate::ops::liveness::{Liveness, liveness};

/// The audit action of [`Store::forget_authority`].
pub const FORGET_ACTION: &str = "forget-authority";

fn in_use(row: &Authority, state: Liveness) -> Error {
    Error::InstanceInUse {
        instance: row.instance_id.clone(),
        liveness: state.as_str().into(),
        host: row.host.clone(),
        pid: row.pid,
    }
}

impl Store {
    /// Registers an authority. Refused while another incarnation of the same instance id
    /// is running (live or silent, judged by its own registered timing at the store's
    /// clock); a gone or stopped registration is replaced, and the same incarnation may
    /// register again (a registration retried after an outage). The check and the write
    /// are one write transaction, which every provider serialises, so of two racing
    /// starts under one id exactly one registers.
    ///
    /// # Errors
    /// `INSTANCE_IN_USE` naming the running holder; a store failure.
    pub fn register_authority(&self, authority: &Authority) -> Result<()> {
        crate::ids::check_id("instance id", &authority.instance_id)?;
        crate::ids::check_opt_id(
            "build",
            Some(authority.build.as_str()).filter(|b| !b.is_empty()),
        )?;
        let incarnation = authority.incarnation();
        self.write(|tx, now| {
            tx.commit_revision()?;
            if let Some(row) = tx.authority(&authority.instance_id)? {
                let state = liveness(&row, now);
                if state.is_running() && !incarnation.owns(&row) {
                    return Err(in_use(&row, state));
                }
            }
            tx.put_authority(authority)
        })
    }

    /// Records a heartbeat (or, with `stopped`, a clean stop) for `incarnation`.
    ///
    /// # Errors
    /// `NOT_FOUND` for an unregistered (or forgotten) instance; `INSTANCE_SUPERSEDED` when
    /// another start of the same instance id registered since — the row is left alone; a
    /// store failure.
    pub fn heartbeat(&self, incarnation: &Incarnation, stopped: bool) -> Result<()> {
        self.write(|tx, now| {
            let Some(mut row) = tx.authority(&incarnation.instance_id)? else {
                return Err(Error::NotFound {
                    what: "authority".into(),
                    id: incarnation.instance_id.clone(),
                });
            };
            if !incarnation.owns(&row) {
                return Err(Error::Superseded {
                    instance: row.instance_id,
                    host: row.host,
                    pid: row.pid,
                });
            }
            row.heartbeat_at = now;
            if stopped {
                row.stopped_at = Some(now);
            }
            tx.commit_revision()?;
            tx.put_authority(&row)
        })
    }

    /// Removes a gone or stopped authority's registration and records it in the audit log
    /// as `actor`, in one transaction; answers the row and the liveness it was judged by. A refusal is audited too (and changes nothing
    /// else).
    ///
    /// # Errors
    /// `NOT_FOUND` for an unknown id; `INSTANCE_IN_USE` while it is live or silent; a store
    /// failure.
    pub fn forget_authority(&self, instance: &str, actor: &str) -> Result<(Authority, Liveness)> {
        crate::ids::check_id("instance id", instance)?;
        self.write_logged(|tx, now| {
            tx.commit_revision()?;
            let row = tx.authority(instance)?;
            let (outcome, answer) = match row {
                None => (
                    "refused: not found".to_owned(),
                    Err(Error::NotFound {
                        what: "authority".into(),
                        id: instance.into(),
                    }),
                ),
                Some(row) => match liveness(&row, now) {
                    state if state.is_running() => {
                        (format!("refused: {state}"), Err(in_use(&row, state)))
                    }
                    state => {
                        tx.delete_authority(instance)?;
                        (format!("forgotten: was {state}"), Ok((row, state)))
                    }
                },
            };
            tx.add_audit(&AuditEntry {
                id: 0,
                at: now,
                actor: actor.into(),
                action: FORGET_ACTION.into(),
                target: instance.into(),
                outcome,
            })?;
            Ok(Logged::from(answer))
        })
    }
}
