//! The embedded memory cluster (docs/ARCHITECTURE.md#embedded-cluster): N authorities in one process over one memory
//! store, a workload generator, fault injection, named seedable scenarios and an
//! end-of-run report with the invariant checker's verdict.
//!
//! - `sim/`: the deterministic discrete-event simulation (virtual time, seeded).
//! - [`workload`]: the generator of effects, schedules, subscriptions, workflows, events.
//! - [`pace`]: seconds of simulated work per attempt, so a live demo has leases to move.
//! - [`faults`]: crash, pause, outage, slow / failing handlers, skew, rolling deploy.
//! - [`scenarios`]: `steady`, `failover`, `stall`, `rolling-deploy`, `skew`, `chaos`.
//! - [`demonstrated`]: the report's closing sentence, what the run showed.
//! - [`report`]: [`run_headless`] and the report ([`render_text`], serde JSON).
//! - [`tour`]: the guided tour, a step at a time, each waiting for its effect in the store.
//! - [`control`]: the dashboard's [`crate::cluster::control::ClusterControl`] over [`Cluster`].
//!
//! Headless runs step the simulation straight to the end. The dashboard's live mode uses
//! [`Cluster`]: the same simulation stepped by a background thread against the wall
//! clock (the virtual clock advanced in real time), with kill / pause / resume / add /
//! roll-out / skew controls.

pub mod control;
pub mod demonstrated;
pub mod faults;
pub mod pace;
pub mod report;
pub mod scenarios;
mod sim;
pub mod tour;
pub mod workload;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

pub use faults::{Fault, Target};
pub use pace::WorkPace;
pub use report::{Report, render_text, run_headless, run_with};
pub use scenarios::{SCENARIOS, Timing};
pub use sim::{ClusterOptions, HEADLESS_EPOCH, NodeInfo, NodeState, Sim};

use crate::clock::Millis;
use crate::error::Result;
use crate::store::Store;

/// A cluster that can be stepped by hand or run live, and controlled while it runs.
/// Share it in an `Arc`; every method locks the simulation briefly.
pub struct Cluster {
    sim: Mutex<Sim>,
    store: Store,
    label: String,
}

impl Cluster {
    /// Builds a cluster (nothing runs until it is stepped or [`Self::spawn_live`]).
    ///
    /// # Errors
    /// As [`Sim::new`].
    pub fn new(options: ClusterOptions) -> Result<Self> {
        let label = format!("{} · seed {}", options.scenario, options.seed);
        let sim = Sim::new(options)?;
        let store = sim.store().clone();
        Ok(Self {
            sim: Mutex::new(sim),
            store,
            label,
        })
    }

    fn sim(&self) -> MutexGuard<'_, Sim> {
        // A panic inside a step cannot be recovered from meaningfully; keep serving reads.
        self.sim
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The shared store (read it through its unskewed virtual clock).
    #[must_use]
    pub fn store(&self) -> Store {
        self.store.clone()
    }

    /// `"<scenario> · seed <seed>"`.
    #[must_use]
    pub fn label(&self) -> &str {
        &self.label
    }

    /// The virtual now.
    #[must_use]
    pub fn now(&self) -> Millis {
        self.sim().now()
    }

    /// Runs every event due by `at`.
    pub fn step_until(&self, at: Millis) {
        self.sim().step_until(at);
    }

    /// Runs `ms` of virtual time.
    pub fn advance(&self, ms: Millis) {
        let mut sim = self.sim();
        let target = sim.now() + ms;
        sim.step_until(target);
    }

    /// The authorities in start order.
    #[must_use]
    pub fn nodes(&self) -> Vec<NodeInfo> {
        self.sim().nodes()
    }

    /// Applies a fault now.
    ///
    /// # Errors
    /// `NOT_FOUND` when its target does not resolve.
    pub fn apply(&self, fault: &Fault) -> Result<String> {
        self.sim().apply(fault)
    }

    /// The authority called `id`.
    ///
    /// # Errors
    /// `NOT_FOUND` for an id the cluster never started.
    fn node(&self, id: &str) -> Result<usize> {
        self.nodes()
            .iter()
            .position(|n| n.id == id)
            .ok_or_else(|| crate::error::Error::NotFound {
                what: "authority".into(),
                id: id.into(),
            })
    }

    /// Crashes `id` (nothing released).
    ///
    /// # Errors
    /// `NOT_FOUND` for an unknown id; `INVALID` when it is not running or paused.
    pub fn kill(&self, id: &str) -> Result<String> {
        let i = self.node(id)?;
        let state = self.sim().nodes[i].state;
        if !matches!(state, NodeState::Running | NodeState::Paused) {
            return Err(not_now(
                id,
                state,
                "only a running or paused authority crashes",
            ));
        }
        self.apply(&Fault::Crash(Target::Node(i)))
    }

    /// Freezes `id` until [`Self::resume`].
    ///
    /// # Errors
    /// `NOT_FOUND` for an unknown id; `INVALID` when it is not running.
    pub fn pause(&self, id: &str) -> Result<String> {
        let i = self.node(id)?;
        let mut sim = self.sim();
        if sim.nodes[i].state != NodeState::Running {
            return Err(not_now(
                id,
                sim.nodes[i].state,
                "only a running authority pauses",
            ));
        }
        sim.pause_node(i, None);
        Ok(sim.record(format!("pause → {id}")))
    }

    /// Brings `id` back: a paused one resumes (its late writes are presented first, and
    /// refused where it lost the claim); a crashed one restarts as a new incarnation.
    ///
    /// # Errors
    /// `NOT_FOUND` for an unknown id; `INVALID` when it is running, stopping or stopped.
    pub fn resume(&self, id: &str) -> Result<String> {
        let i = self.node(id)?;
        let mut sim = self.sim();
        match sim.nodes[i].state {
            NodeState::Paused => {
                sim.resume_node(i);
                Ok(sim.record(format!("resume → {id}")))
            }
            NodeState::Crashed => sim.restart_node(i),
            state => Err(not_now(
                id,
                state,
                "R resumes a paused authority or restarts a crashed one",
            )),
        }
    }

    /// Starts one more authority of the current build; returns its id.
    ///
    /// # Errors
    /// `INVALID` when the cluster is full.
    pub fn add_authority(&self) -> Result<String> {
        let what = self.apply(&Fault::AddAuthority { build: None })?;
        Ok(what.rsplit(' ').next().unwrap_or_default().to_owned())
    }

    /// Rolling deploy to `build`: every authority of another build is replaced (stopped
    /// cleanly) by one of `build`.
    ///
    /// # Errors
    /// A store failure while switching the workload's build.
    pub fn roll_out(&self, build: &str) -> Result<String> {
        let step = self.sim().options.timing.lease_ms / 2;
        self.apply(&Fault::RollOut {
            build: build.into(),
            step_ms: step,
        })
    }

    /// Deploys a build beside the fleet (see the simulation's `deploy_beside`): returns
    /// the new authority's id and build.
    ///
    /// # Errors
    /// `INVALID` when the cluster is full.
    pub fn deploy(&self, compatible: bool) -> Result<(String, String)> {
        self.sim().deploy_beside(compatible)
    }

    /// Sets `id`'s clock offset.
    ///
    /// # Errors
    /// `NOT_FOUND` for an unknown id.
    pub fn skew(&self, id: &str, offset_ms: Millis) -> Result<String> {
        let i = self.node(id)?;
        self.apply(&Fault::Skew {
            target: Target::Node(i),
            offset_ms,
        })
    }

    /// The newest `limit` entries of the fault timeline, newest first, each at its
    /// instant on the virtual clock.
    #[must_use]
    pub fn timeline(&self, limit: usize) -> Vec<(Millis, String)> {
        let sim = self.sim();
        let start = sim.options.start_at;
        sim.timeline
            .iter()
            .rev()
            .take(limit)
            .map(|f| (start + f.at_ms, f.what.clone()))
            .collect()
    }

    /// The report as of now (runs the checker).
    ///
    /// # Errors
    /// A store failure (e.g. during an outage).
    pub fn report(&self) -> Result<Report> {
        self.sim().report()
    }

    /// Steps the cluster from a background thread so virtual time follows the wall clock
    /// (`speed` virtual ms per wall ms), every `tick` of wall time. Stops when the handle
    /// is dropped (or [`LiveHandle::stop`]).
    #[must_use]
    pub fn spawn_live(self: &Arc<Self>, speed: f64, tick: Duration) -> LiveHandle {
        let stop = Arc::new(AtomicBool::new(false));
        let cluster = self.clone();
        let flag = stop.clone();
        let thread = std::thread::Builder::new()
            .name("leasehold-cluster".into())
            .spawn(move || {
                let wall = Instant::now();
                let start = cluster.now();
                while !flag.load(Ordering::SeqCst) {
                    std::thread::park_timeout(tick);
                    // Wall milliseconds since start fit an f64 exactly for centuries.
                    #[allow(clippy::cast_precision_loss, clippy::cast_possible_truncation)]
                    let elapsed = (wall.elapsed().as_millis() as f64 * speed) as Millis;
                    cluster.step_until(start + elapsed);
                }
            })
            .ok();
        LiveHandle { stop, thread }
    }
}

/// Why a hand-driven fault does not apply to an authority in `state`.
fn not_now(id: &str, state: NodeState, rule: &str) -> crate::error::Error {
    crate::error::Error::Invalid(format!("{id} is {}: {rule}", state.as_str()))
}

/// Keeps a live cluster stepping; dropping it stops the stepping thread.
pub struct LiveHandle {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl LiveHandle {
    /// Stops stepping and waits for the thread.
    pub fn stop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(thread) = self.thread.take() {
            thread.thread().unpark();
            let _ = thread.join();
        }
    }
}

impl Drop for LiveHandle {
    fn drop(&mut self) {
        self.stop();
    }
}
