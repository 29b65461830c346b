//! Leases: exclusive, time-bounded ownership of a resource, fenced by a generation.

use serde::{Deserialize, Serialize};

use crate::clock::Millis;
use crate::model::vocab::vocabulary;

vocabulary! {
    /// A lease row's standing at one instant, for people and `--json`.
    pub enum LeaseStatus("lease status") {
        /// Unreleased and `expiresAt > now`: held.
        Live = "live",
        /// Unreleased but past `expiresAt`: reclaimable, yet its holder's writes are still
        /// accepted until someone takes it.
        Expired = "expired",
        /// Given back by its holder.
        Released = "released",
    }
}

/// A lease as stored. The row outlives release so that its generation keeps climbing
/// across release, crash and restart.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Lease {
    pub resource_id: String,
    pub owner_id: String,
    /// Opaque per-acquisition secret: renew and release must present it.
    pub token: String,
    /// Strictly increasing per resource; minted by every acquisition and handoff.
    pub generation: u64,
    pub acquired_at: Millis,
    pub expires_at: Millis,
    /// Set by a normal release; a released lease is free whatever `expires_at` says.
    pub released_at: Option<Millis>,
    /// Resume state saved by a holder; survives expiry, dropped on release.
    pub checkpoint: Option<Checkpoint>,
}

/// The stored answer of a keyed lease-family call (see `store::Keyed`): `key` is
/// namespaced by owner and verb, `answer` is the JSON the first call returned, replayed to
/// every retry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct IdempotentAnswer {
    pub key: String,
    pub answer: String,
    pub at: Millis,
}

/// A holder's saved progress, tagged with the generation that wrote it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Checkpoint {
    pub generation: u64,
    pub data: String,
    pub saved_at: Millis,
}

impl Lease {
    /// Live means held: not released and the window has not closed (`expiresAt > now`).
    #[must_use]
    pub fn is_live(&self, now: Millis) -> bool {
        self.released_at.is_none() && self.expires_at > now
    }

    /// Live, expired or released at `now`.
    #[must_use]
    pub fn status(&self, now: Millis) -> LeaseStatus {
        if self.released_at.is_some() {
            LeaseStatus::Released
        } else if self.expires_at > now {
            LeaseStatus::Live
        } else {
            LeaseStatus::Expired
        }
    }
}
