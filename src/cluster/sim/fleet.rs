//! Changing the fleet by hand: restarting a crashed authority as a new incarnation of the
//! same id, and deploying a new build beside the running one. Kept apart from fault
//! injection, which only breaks things; these are what an operator does next.

use std::sync::Arc;

use super::{Ev, NodeState, Sim};
use crate::clock::Clock;
use crate::cluster::faults::FaultRecord;
use crate::error::{Error, Result};
use crate::model::handler_key;

impl Sim {
    /// Adds `what` to the fault timeline; returns it.
    pub(in crate::cluster) fn record(&mut self, what: String) -> String {
        let at_ms = self.clock.now() - self.options.start_at;
        self.timeline.push(FaultRecord {
            at_ms,
            what: what.clone(),
        });
        what
    }

    /// Restarts crashed authority `i` as a new incarnation of the same id: a fresh core
    /// that remembers nothing of its predecessor's claims (those lapse and are reclaimed
    /// under a higher generation, so anything the old process could still present is
    /// fenced). It registers once the store judges the old registration gone, which is
    /// what the store demands of any restart under a running id.
    ///
    /// # Errors
    /// `INVALID` when `i` is not crashed (pause / resume is for a running one).
    pub(in crate::cluster) fn restart_node(&mut self, i: usize) -> Result<String> {
        let node = &self.nodes[i];
        if node.state != NodeState::Crashed {
            return Err(Error::Invalid(format!(
                "{} is {}: only a crashed authority restarts",
                node.id,
                node.state.as_str()
            )));
        }
        let (id, build, clock) = (node.id.clone(), node.build.clone(), node.clock.clone());
        let version = node.version.clone();
        let core = self.new_core(&id, &build, &version, &clock)?;
        let node = &mut self.nodes[i];
        node.core = Arc::new(core);
        node.state = NodeState::Restarting;
        node.running.clear();
        node.deferred.clear();
        let now = self.clock.now();
        self.push(now, Ev::Restart(i));
        Ok(self.record(format!("restart {id} (a new incarnation)")))
    }

    /// A restarting authority registers; refused while its predecessor's registration
    /// still counts as running, it tries again a heartbeat later.
    pub(super) fn try_register(&mut self, i: usize) {
        if self.nodes[i].state != NodeState::Restarting {
            return;
        }
        if self.nodes[i].core.register().is_ok() {
            self.nodes[i].state = NodeState::Running;
            self.start_loops(i);
        } else {
            let at = self.clock.now() + self.options.timing.heartbeat_ms;
            self.push(at, Ev::Restart(i));
        }
    }

    /// Deploys a build beside the running fleet: one more authority under the next tag
    /// (`v2`, `v3`, …), and the old ones keep running. A compatible build runs the same
    /// handler versions (the tag is only a label): it claims everything. An incompatible
    /// one runs every handler at the next major version, and the workload creates new work
    /// for it, so old work stays with the old fleet and new work waits for the new build.
    /// Returns the new authority's id and build.
    ///
    /// # Errors
    /// `INVALID` when the cluster is full.
    pub(in crate::cluster) fn deploy_beside(
        &mut self,
        compatible: bool,
    ) -> Result<(String, String)> {
        let build = self.next_build();
        let current = self.generator.version().clone();
        let version = if compatible {
            current
        } else {
            current.next_major()
        };
        self.build_versions.insert(build.clone(), version.clone());
        if !compatible {
            self.generator.switch_build(&self.store, &build, &version);
        }
        let id = self.add_node(&build)?;
        let key = &handler_key(crate::authority::workload::SCHEDULE_HANDLER, &version)[..8];
        let _ = self.record(format!(
            "deploy {} build {build} (handlers {version}) beside the fleet → {id} (key {key})",
            if compatible {
                "a compatible"
            } else {
                "an incompatible"
            }
        ));
        Ok((id, build))
    }

    /// `v<n+1>` for the highest `v<n>` any authority ran (`v2` when none is numbered).
    fn next_build(&self) -> String {
        let highest = self
            .nodes
            .iter()
            .filter_map(|n| n.build.strip_prefix('v')?.parse::<u32>().ok())
            .max()
            .unwrap_or(1);
        format!("v{}", highest + 1)
    }
}
