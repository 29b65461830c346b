//! Authority registrations: who is running, under which build, how recently alive.

use serde::{Deserialize, Serialize};

use crate::clock::Millis;

/// One authority's registration row.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Authority {
    pub instance_id: String,
    /// Digest of its compatibility key.
    pub compat: String,
    /// Human build tag (`--build`).
    pub build: String,
    /// The runtime knobs it runs with, JSON text.
    pub config: String,
    pub started_at: Millis,
    pub heartbeat_at: Millis,
    /// Set on clean shutdown.
    pub stopped_at: Option<Millis>,
    pub host: String,
    pub pid: u32,
}

impl Authority {
    /// `live` (recent heartbeat), `silent` (missed heartbeats) or `gone` (stopped, or silent
    /// for longer than the lease window so whatever it held is reclaimable).
    #[must_use]
    pub fn state(&self, now: Millis, heartbeat_ms: Millis, lease_ms: Millis) -> &'static str {
        let age = now - self.heartbeat_at;
        if self.stopped_at.is_some() || age > lease_ms {
            "gone"
        } else if age > heartbeat_ms * 3 {
            "silent"
        } else {
            "live"
        }
    }
}
