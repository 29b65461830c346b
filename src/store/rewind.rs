//! Accepting a rewound store: the operator's answer to `STORE_REWOUND`.

use serde::Serialize;

use super::witness::Seen;
use super::{Store, epoch};
use crate::error::{Error, Result};
use crate::model::AuditEntry;

/// The audit action of an accepted rewind.
pub const ACCEPT_REWIND_ACTION: &str = "accept-rewind";

/// What [`Store::accept_rewind`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AcceptedRewind {
    /// The new store epoch.
    pub epoch: u64,
    /// Every generation minted from now on is above this one.
    pub generation_floor: u64,
    /// Leases and work items whose generation was raised to the floor.
    pub raised: u64,
    /// The revision the acceptance committed as.
    pub revision: u64,
    /// What this host's witness held before (`None`: no witness, or it had seen nothing).
    pub witnessed: Option<Seen>,
}

impl Store {
    /// Accepts the store as it is now: starts the next epoch (every lease's and work item's
    /// generation raised to its floor, so a generation handed out before the rewind is never
    /// handed out again; see `store/epoch.rs`), audits it under `actor` with `reason`, and
    /// makes this handle's witness, if any, adopt the store. The one write that skips the
    /// witness check: the store is behind it by definition.
    ///
    /// # Errors
    /// `STORE_CORRUPT` for a damaged store or an epoch out of range, `STORE_UNAVAILABLE`
    /// when the witness cannot be written, or a store failure.
    pub fn accept_rewind(&self, actor: &str, reason: Option<&str>) -> Result<AcceptedRewind> {
        let now = self.clock.now();
        let witnessed = self.witness().and_then(super::witness::Witness::seen);
        let mut out = None;
        self.backend.write(&mut |tx| {
            let before = Seen::read(tx)?;
            let (next, raised) = epoch::advance(tx)?;
            let outcome = serde_json::json!({
                "epoch": next,
                "fromRevision": before.revision,
                "witnessedRevision": witnessed.map(|w| w.revision),
                "raised": raised,
                "reason": reason,
            });
            tx.add_audit(&AuditEntry {
                id: 0,
                at: now,
                actor: actor.into(),
                action: ACCEPT_REWIND_ACTION.into(),
                target: self.describe(),
                outcome: outcome.to_string(),
            })?;
            out = Some(AcceptedRewind {
                epoch: next,
                generation_floor: epoch::floor(next)?,
                raised,
                revision: tx.revision()?,
                witnessed,
            });
            Ok(())
        })?;
        let accepted = out.ok_or_else(|| {
            Error::OutcomeUnknown("the acceptance committed without an answer".into())
        })?;
        if let Some(w) = self.witness() {
            w.adopt(Seen::of(self)?)?;
        }
        Ok(accepted)
    }
}
