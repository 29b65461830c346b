//! Injecting a fault into the running simulation: resolve its target to an authority,
//! then crash, pause, resume or stop it, skew its clock, cut the store off, slow or fail
//! handlers, roll out a build, add an authority; every fault is recorded in the timeline.
//! Kept apart from the event loop, which only schedules what a fault set in motion.

use rand::Rng;

use super::{Ev, NodeState, Sim};
use crate::clock::{Clock, Millis};
use crate::cluster::faults::{Fault, FaultRecord, Target};
use crate::error::{Error, Result};

impl Sim {
    pub(super) fn running(&self) -> Vec<usize> {
        (0..self.nodes.len())
            .filter(|&i| self.nodes[i].state == NodeState::Running)
            .collect()
    }

    pub(super) fn resolve(&mut self, target: &Target) -> Option<usize> {
        let running = self.running();
        match target {
            Target::Node(i) => (*i < self.nodes.len()).then_some(*i),
            Target::Busiest => running
                .iter()
                .copied()
                .max_by_key(|&i| (self.nodes[i].core.inflight(), std::cmp::Reverse(i))),
            Target::Random => {
                (!running.is_empty()).then(|| running[self.rng.random_range(0..running.len())])
            }
            Target::Stallable => running
                .iter()
                .copied()
                .max_by_key(|&i| (self.stall_weight(i), std::cmp::Reverse(i))),
        }
    }

    /// How sure a stall of `i` is to end in a fenced write: its executing jobs on
    /// long-lived claims (cursors, workflows: never terminal under a successor), its
    /// executing jobs, then what it owns of each.
    pub(super) fn stall_weight(&self, i: usize) -> (usize, usize, usize, usize) {
        let node = &self.nodes[i];
        let owned = node.core.owned();
        let long_lived = |j: &crate::authority::Job| matches!(j.kind(), "cursor" | "workflow");
        let executing: Vec<&crate::authority::Job> = owned
            .iter()
            .filter(|j| node.running.contains_key(&j.id))
            .collect();
        (
            executing.iter().filter(|j| long_lived(j)).count(),
            executing.len(),
            owned.iter().filter(|j| long_lived(j)).count(),
            owned.len(),
        )
    }

    /// Applies one fault now and records it in the timeline; returns what it did.
    ///
    /// # Errors
    /// `NOT_FOUND` when the target does not resolve to an authority.
    pub fn apply(&mut self, fault: &Fault) -> Result<String> {
        let now = self.clock.now();
        let target_of = |f: &Fault| match f {
            Fault::Crash(t)
            | Fault::Stop(t)
            | Fault::Pause { target: t, .. }
            | Fault::Skew { target: t, .. } => Some(t.clone()),
            _ => None,
        };
        let node = match target_of(fault) {
            Some(t) => Some(self.resolve(&t).ok_or_else(|| Error::NotFound {
                what: "authority".into(),
                id: format!("{t:?}"),
            })?),
            None => None,
        };
        let mut what = fault.describe();
        if let Some(i) = node {
            what = format!("{what} → {}", self.nodes[i].id);
        }
        match fault {
            Fault::Crash(_) => self.crash_node(node.unwrap_or(0)),
            Fault::Pause { for_ms, .. } => self.pause_node(node.unwrap_or(0), Some(*for_ms)),
            Fault::Stop(_) => self.stop_node(node.unwrap_or(0)),
            Fault::Skew { offset_ms, .. } => {
                self.nodes[node.unwrap_or(0)].clock.set_offset(*offset_ms);
            }
            Fault::ResetSkew => self.nodes.iter().for_each(|n| n.clock.set_offset(0)),
            Fault::Outage { for_ms } => {
                self.backend.set_outage(true);
                self.push(now + for_ms, Ev::OutageEnd);
            }
            Fault::SlowHandlers { factor_pct, for_ms } => {
                self.faults.set_slow(*factor_pct);
                self.push(now + for_ms, Ev::HandlerFaultsEnd);
            }
            Fault::FailingHandlers { per_mille, for_ms } => {
                self.faults.set_failing(*per_mille);
                self.push(now + for_ms, Ev::HandlerFaultsEnd);
            }
            Fault::RollOut { build, step_ms } => {
                let version = self.version_of(build);
                self.build_versions.insert(build.clone(), version.clone());
                self.generator.switch_build(&self.store, build, &version);
                let olds: Vec<usize> = self
                    .running()
                    .into_iter()
                    .filter(|&i| self.nodes[i].build != *build)
                    .collect();
                for (k, old) in olds.into_iter().enumerate() {
                    let k = Millis::try_from(k).unwrap_or(0);
                    self.push(
                        now + k * step_ms,
                        Ev::Replace {
                            old,
                            build: build.clone(),
                        },
                    );
                }
            }
            Fault::AddAuthority { build } => {
                let build = build
                    .clone()
                    .unwrap_or_else(|| self.generator.build().to_owned());
                let id = self.add_node(&build)?;
                what = format!("{what} → {id}");
            }
        }
        self.timeline.push(FaultRecord {
            at_ms: now - self.options.start_at,
            what: what.clone(),
        });
        Ok(what)
    }

    /// Crashes `i`: forgets everything without releasing.
    pub(in crate::cluster) fn crash_node(&mut self, i: usize) {
        let node = &mut self.nodes[i];
        if matches!(node.state, NodeState::Crashed | NodeState::Stopped) {
            return;
        }
        node.core.crash();
        node.running.clear();
        node.deferred.clear();
        node.state = NodeState::Crashed;
    }

    /// Freezes `i`, until `for_ms` passes (or [`Self::resume_node`]).
    pub(in crate::cluster) fn pause_node(&mut self, i: usize, for_ms: Option<Millis>) {
        if self.nodes[i].state != NodeState::Running {
            return;
        }
        self.nodes[i].state = NodeState::Paused;
        if let Some(for_ms) = for_ms {
            let now = self.clock.now();
            self.push(now + for_ms, Ev::Resume(i));
        }
    }

    /// Unfreezes `i`: its held-back events run now, completions first.
    pub(in crate::cluster) fn resume_node(&mut self, i: usize) {
        if self.nodes[i].state != NodeState::Paused {
            return;
        }
        self.nodes[i].state = NodeState::Running;
        let deferred = std::mem::take(&mut self.nodes[i].deferred);
        let (finishes, others): (Vec<Ev>, Vec<Ev>) = deferred
            .into_iter()
            .partition(|e| matches!(e, Ev::Finish(..)));
        let now = self.clock.now();
        for ev in finishes.into_iter().chain(others) {
            self.push(now, ev);
        }
    }

    /// Stops `i` cleanly: no new claims; it finishes what runs (up to a renew interval),
    /// then abandons what still runs (those claims lapse), releases the rest and records
    /// the stop.
    pub(in crate::cluster) fn stop_node(&mut self, i: usize) {
        if self.nodes[i].state != NodeState::Running {
            return;
        }
        self.nodes[i].state = NodeState::Stopping;
        self.nodes[i].core.stop_claiming();
        if self.nodes[i].running.is_empty() {
            self.complete_stop(i);
        } else {
            let at = self.clock.now() + self.options.timing.renew_ms;
            self.push(at, Ev::StopDeadline(i));
        }
    }

    pub(super) fn complete_stop(&mut self, i: usize) {
        let node = &mut self.nodes[i];
        node.running.clear();
        let _ = node.core.shutdown();
        node.state = NodeState::Stopped;
    }
}
