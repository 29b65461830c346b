//! The dashboard's demo controls ([`ClusterControl`]) over a live [`Cluster`].

use super::{Cluster, NodeState};
use crate::tui::demo::{ClusterControl, DemoAuthority, DemoState};

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
