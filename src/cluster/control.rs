//! The demo seam: what the dashboard may do to an embedded cluster ([`ClusterControl`]),
//! and its implementation over a live [`Cluster`]. The dashboard only calls it from the
//! operator's uppercase keys, off the UI thread; it depends on this seam, never the other
//! way round.

use serde::Serialize;

use super::{Cluster, NodeState};
use crate::clock::Millis;

/// How a demo authority is doing, as the cluster sees it (not as the store sees it: the
/// store only knows heartbeats).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum DemoState {
    Running,
    Paused,
    Crashed,
    /// Restarted after a crash, waiting to register its new incarnation.
    Restarting,
    /// Stopped cleanly (replaced by a rolling deploy): it released what it owned.
    Stopped,
}

impl DemoState {
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Running => "running",
            Self::Paused => "paused",
            Self::Crashed => "crashed",
            Self::Restarting => "restarting",
            Self::Stopped => "stopped",
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
    /// How far its clock is from the shared one (milliseconds, + ahead).
    pub clock_offset_ms: i64,
}

/// What a demo control did (a sentence for the status line), or why it did nothing.
pub type Outcome = Result<String, String>;

/// Fault injection and scaling for the embedded cluster, driven by hand from the dashboard.
/// Calls may block briefly; the dashboard runs them on a blocking task.
///
/// Every control answers an [`Outcome`]: the sentence the status line shows, or why
/// nothing was done (an unknown id, an authority in the wrong state, a full cluster).
#[allow(clippy::missing_errors_doc)] // documented once above, the same for every control
pub trait ClusterControl: Send + Sync {
    /// Every authority the cluster started, in a stable order.
    fn authorities(&self) -> Vec<DemoAuthority>;
    /// Crashes `id`: it stops without releasing anything (its leases must expire and be
    /// reclaimed).
    fn kill(&self, id: &str) -> Outcome;
    /// Freezes `id` (a stop-the-world pause); on resume it must find itself fenced.
    fn pause(&self, id: &str) -> Outcome;
    /// Brings `id` back: a paused one resumes, a crashed one restarts as a new incarnation
    /// of the same id (its predecessor's claims are reclaimed, never inherited).
    fn resume(&self, id: &str) -> Outcome;
    /// Starts one more authority with the current build.
    fn add_authority(&self) -> Outcome;
    /// Deploys a new build beside the running fleet (which keeps running): compatible
    /// (a new tag with the same handler versions, claims everything) or not (the next
    /// major version of every handler: new work waits for it).
    fn deploy(&self, compatible: bool) -> Outcome;
    /// Skews `id`'s clock by `offset_ms`.
    fn skew(&self, id: &str, offset_ms: i64) -> Outcome;
    /// The scenario name and seed, for the header.
    fn scenario(&self) -> String;
    /// What was done to the cluster (faults, restarts, deploys), newest first, at most
    /// `limit`, each with its instant: the event ticker's fault lines.
    fn faults(&self, limit: usize) -> Vec<(Millis, String)> {
        let _ = limit;
        Vec::new()
    }
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
                    NodeState::Crashed => DemoState::Crashed,
                    NodeState::Restarting => DemoState::Restarting,
                    NodeState::Stopped => DemoState::Stopped,
                },
                clock_offset_ms: n.clock_offset_ms,
            })
            .collect()
    }

    fn kill(&self, id: &str) -> Outcome {
        Cluster::kill(self, id)
            .map(|_| {
                format!("killed {id}: nothing released, its claims must lapse and be reclaimed")
            })
            .map_err(|e| e.to_string())
    }

    fn pause(&self, id: &str) -> Outcome {
        Cluster::pause(self, id)
            .map(|_| format!("paused {id}: its leases will expire; R resumes it into a fence"))
            .map_err(|e| e.to_string())
    }

    fn resume(&self, id: &str) -> Outcome {
        Cluster::resume(self, id)
            .map(|what| {
                if what.starts_with("restart") {
                    format!(
                        "restarted {id} as a new incarnation: it registers once the old one is gone"
                    )
                } else {
                    format!("resumed {id}: its late writes meet the new generation")
                }
            })
            .map_err(|e| e.to_string())
    }

    fn add_authority(&self) -> Outcome {
        Cluster::add_authority(self)
            .map(|id| format!("added authority {id}"))
            .map_err(|e| e.to_string())
    }

    fn deploy(&self, compatible: bool) -> Outcome {
        Cluster::deploy(self, compatible)
            .map(|(id, build)| {
                if compatible {
                    format!("deployed a compatible build beside the fleet: {id} ({build}, same key) claims everything")
                } else {
                    format!("deployed incompatible build {build} beside the fleet: {id} takes new work, the old fleet drains the old")
                }
            })
            .map_err(|e| e.to_string())
    }

    fn skew(&self, id: &str, offset_ms: i64) -> Outcome {
        Cluster::skew(self, id, offset_ms)
            .map(|_| format!("skewed {id}'s clock by {offset_ms:+} ms"))
            .map_err(|e| e.to_string())
    }

    fn scenario(&self) -> String {
        self.label().to_owned()
    }

    fn faults(&self, limit: usize) -> Vec<(Millis, String)> {
        self.timeline(limit)
    }
}
