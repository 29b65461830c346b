//! The demo seam: what the dashboard may do to an embedded cluster ([`ClusterControl`]),
//! and its implementation over a live [`Cluster`]. The dashboard only calls it from the
//! operator's uppercase keys, off the UI thread; it depends on this seam, never the other
//! way round.

use serde::Serialize;

use super::{Cluster, NodeState};

/// How a demo authority is doing, as the cluster sees it (not as the store sees it: the
/// store only knows heartbeats).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum DemoState {
    Running,
    Paused,
    Crashed,
}

impl DemoState {
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Running => "running",
            Self::Paused => "paused",
            Self::Crashed => "crashed",
        }
    }
}

/// One authority of the embedded cluster.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DemoAuthority {
    pub id: String,
    /// Build tag it runs (`--build`).
    pub build: String,
    pub state: DemoState,
}

/// Fault injection and scaling for the embedded cluster, driven by hand from the dashboard.
/// Calls may block briefly; the dashboard runs them on a blocking task.
pub trait ClusterControl: Send + Sync {
    /// Every authority the cluster started, in a stable order.
    fn authorities(&self) -> Vec<DemoAuthority>;
    /// Crashes `id`: it stops without releasing anything (its leases must expire and be
    /// reclaimed).
    fn kill(&self, id: &str);
    /// Freezes `id` (a stop-the-world pause); on resume it must find itself fenced.
    fn pause(&self, id: &str);
    fn resume(&self, id: &str);
    /// Starts one more authority with the current build; returns its id.
    fn add_authority(&self) -> String;
    /// Rolling deploy: replaces authorities one by one with `build` (a new compatibility key).
    fn roll_out(&self, build: &str);
    /// Skews `id`'s clock by `offset_ms`.
    fn skew(&self, id: &str, offset_ms: i64);
    /// The scenario name and seed, for the header.
    fn scenario(&self) -> String;
}

impl ClusterControl for Cluster {
    fn authorities(&self) -> Vec<DemoAuthority> {
        self.nodes()
            .into_iter()
            .map(|n| DemoAuthority {
                id: n.id,
                build: n.build,
                state: match n.state {
                    NodeState::Running | NodeState::Stopping => DemoState::Running,
                    NodeState::Paused => DemoState::Paused,
                    // A cleanly stopped authority (replaced by a roll-out) is gone too.
                    NodeState::Crashed | NodeState::Stopped => DemoState::Crashed,
                },
            })
            .collect()
    }

    fn kill(&self, id: &str) {
        Cluster::kill(self, id);
    }

    fn pause(&self, id: &str) {
        Cluster::pause(self, id);
    }

    fn resume(&self, id: &str) {
        Cluster::resume(self, id);
    }

    fn add_authority(&self) -> String {
        Cluster::add_authority(self).unwrap_or_default()
    }

    fn roll_out(&self, build: &str) {
        Cluster::roll_out(self, build);
    }

    fn skew(&self, id: &str, offset_ms: i64) {
        Cluster::skew(self, id, offset_ms);
    }

    fn scenario(&self) -> String {
        self.label().to_owned()
    }
}
