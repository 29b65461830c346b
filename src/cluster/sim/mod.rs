//! The deterministic discrete-event simulation behind the cluster.
//!
//! N [`AuthorityCore`]s share one [`MemoryBackend`] store; each reads time through its own
//! [`SkewedClock`] over one shared [`ManualClock`] (virtual time). Every step — a poll, a
//! handler finishing after its virtual latency, a renewal, a heartbeat, a workload tick, a
//! fault — is an event in one queue ordered by `(instant, sequence)`, processed one at a
//! time; randomness comes from generators seeded by the run's seed. So the same options
//! give the same history, and a minute of cluster time takes milliseconds.
//!
//! A paused authority's events are held back and replayed, completions first, when it
//! resumes — exactly what a process frozen by SIGSTOP does: it presents its late writes
//! before it notices anything.
//!
//! This file holds the simulation's state and its event loop; injecting a fault into it
//! (`inject.rs`) and watching a rolling deploy (`deploy_watch.rs`) live beside it.

mod deploy_watch;
mod fleet;
mod inject;

use std::collections::BTreeMap;
use std::sync::Arc;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use super::faults::{Fault, FaultRecord, HandlerFaults, Target};
use super::pace::WorkPace;
use super::scenarios::{self, Scenario, Timing};
use super::workload::{Generator, Rates};
use crate::authority::config::DEFAULT_BUILD_TAG;
use crate::authority::config::DEFAULT_TRIM_INTERVAL_MS;
use crate::authority::{AuthorityConfig, AuthorityCore, Executed, Pace, Workload};
use crate::clock::{Clock, ManualClock, Millis, SkewedClock};
use crate::error::{Error, Result};
use crate::ids::SeededIds;
use crate::model::HandlerVersion;
use crate::store::memory::MemoryBackend;
use crate::store::{RetentionPolicy, Store};

use deploy_watch::DeployWatch;

/// Where headless runs start on the virtual clock: 2026-01-01T00:00:00Z.
pub const HEADLESS_EPOCH: Millis = 1_767_225_600_000;
/// The period a live (unbounded) run lays its scenario out over.
pub const NOMINAL_CYCLE_MS: Millis = 120_000;
/// Most authorities one cluster runs.
pub const MAX_AUTHORITIES: usize = 64;

/// How to build a cluster.
#[derive(Debug, Clone, PartialEq)]
pub struct ClusterOptions {
    pub scenario: String,
    pub seed: u64,
    pub authorities: usize,
    /// A bounded (headless) run; `None` for a live run that goes on until stopped.
    pub duration_ms: Option<Millis>,
    /// The virtual clock's start.
    pub start_at: Millis,
    pub timing: Timing,
    /// The handler profile ([`crate::authority::workload::WORKLOAD_NAMES`]).
    pub workload: String,
    /// The build the first authorities run.
    pub build: String,
    pub rates: Rates,
    /// Seconds of simulated work per attempt (a live demo), or the handlers' own
    /// millisecond latencies (`None`: headless runs and benchmarks).
    pub pace: Option<WorkPace>,
    /// What the authorities trim, and how often (`store/retention.rs`).
    pub retention: RetentionPolicy,
    pub trim_every_ms: Millis,
    /// Virtual time between generator ticks (the rates are per tick): a long soak ticks
    /// slower, so a simulated week takes fewer steps than its events would.
    pub generate_every_ms: Millis,
}

impl ClusterOptions {
    /// A bounded run on virtual time from [`HEADLESS_EPOCH`].
    #[must_use]
    pub fn headless(scenario: &str, seed: u64, authorities: usize, duration_ms: Millis) -> Self {
        Self {
            scenario: scenario.into(),
            seed,
            authorities,
            duration_ms: Some(duration_ms),
            start_at: HEADLESS_EPOCH,
            timing: Timing::default(),
            workload: "default".into(),
            build: DEFAULT_BUILD_TAG.into(),
            rates: Rates::default(),
            pace: None,
            retention: RetentionPolicy::default(),
            trim_every_ms: DEFAULT_TRIM_INTERVAL_MS,
            generate_every_ms: Generator::TICK_MS,
        }
    }

    /// An unbounded run whose virtual clock starts at `start_at` (the wall clock, for the
    /// dashboard), paced to be watched ([`WorkPace::default`]).
    #[must_use]
    pub fn live(scenario: &str, seed: u64, authorities: usize, start_at: Millis) -> Self {
        Self {
            duration_ms: None,
            start_at,
            ..Self::headless(scenario, seed, authorities, 0)
        }
        .paced(WorkPace::default())
    }

    /// The same options with every attempt taking `pace`'s simulated work, and the
    /// generator thinned to match.
    #[must_use]
    pub fn paced(self, pace: WorkPace) -> Self {
        Self {
            rates: pace.rates(self.authorities),
            pace: Some(pace),
            ..self
        }
    }
}

/// What an authority of the cluster is doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum NodeState {
    Running,
    Paused,
    /// Stopping cleanly: no new claims, finishing what runs.
    Stopping,
    /// Stopped cleanly (released what it owned).
    Stopped,
    /// Crashed: released nothing.
    Crashed,
    /// Restarted after a crash: a new incarnation waiting for its predecessor's
    /// registration to lapse before it registers and claims.
    Restarting,
}

impl NodeState {
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Running => "running",
            Self::Paused => "paused",
            Self::Stopping => "stopping",
            Self::Stopped => "stopped",
            Self::Crashed => "crashed",
            Self::Restarting => "restarting",
        }
    }
}

/// One authority as the cluster sees it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeInfo {
    pub id: String,
    pub build: String,
    pub state: NodeState,
    pub clock_offset_ms: Millis,
    pub inflight: usize,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Ev {
    Poll(usize),
    Renew(usize),
    Heartbeat(usize),
    Finish(usize, u64),
    StopDeadline(usize),
    Resume(usize),
    Generate,
    Sample,
    Script(usize),
    OutageEnd,
    HandlerFaultsEnd,
    Replace {
        old: usize,
        build: String,
    },
    /// A restarted authority tries to register its new incarnation.
    Restart(usize),
}

impl Ev {
    fn node(&self) -> Option<usize> {
        match self {
            Self::Poll(i)
            | Self::Renew(i)
            | Self::Heartbeat(i)
            | Self::Finish(i, _)
            | Self::StopDeadline(i) => Some(*i),
            _ => None,
        }
    }
}

pub(super) struct Node {
    pub id: String,
    pub build: String,
    /// The version every handler of this node runs at.
    pub version: HandlerVersion,
    pub core: Arc<AuthorityCore>,
    pub clock: SkewedClock,
    pub state: NodeState,
    running: BTreeMap<u64, Executed>,
    deferred: Vec<Ev>,
}

/// The simulation. Not thread-safe by itself: [`super::Cluster`] wraps it in a mutex.
pub struct Sim {
    pub(super) options: ClusterOptions,
    pub(super) scenario: Scenario,
    pub(super) clock: ManualClock,
    pub(super) backend: MemoryBackend,
    pub(super) store: Store,
    workload: Workload,
    faults: Arc<HandlerFaults>,
    pub(super) nodes: Vec<Node>,
    queue: BTreeMap<(Millis, u64), Ev>,
    seq: u64,
    rng: SmallRng,
    pub(super) generator: Generator,
    /// The handler version each build tag that ran runs at.
    pub(super) build_versions: BTreeMap<String, HandlerVersion>,
    pub(super) timeline: Vec<FaultRecord>,
    pub(super) deploy: DeployWatch,
    script_waits: BTreeMap<usize, u32>,
}

impl Sim {
    /// Builds the cluster, sets up the workload and starts the authorities (nothing runs
    /// until [`Self::step_until`]).
    ///
    /// # Errors
    /// `INVALID` for an unknown scenario or workload, or an authority count out of range.
    pub fn new(options: ClusterOptions) -> Result<Self> {
        if options.authorities == 0 || options.authorities > MAX_AUTHORITIES {
            return Err(Error::Invalid(format!(
                "a cluster runs 1 to {MAX_AUTHORITIES} authorities, not {}",
                options.authorities
            )));
        }
        let layout = options.duration_ms.unwrap_or(NOMINAL_CYCLE_MS);
        let scenario = scenarios::build(
            &options.scenario,
            options.seed,
            layout,
            options.authorities,
            options.timing,
            &options.build,
        )?;
        let clock = ManualClock::new(options.start_at);
        let backend = MemoryBackend::new();
        let store = Store::new(
            Arc::new(backend.clone()),
            Arc::new(clock.clone()),
            Arc::new(SeededIds::new(options.seed)),
        );
        let faults = Arc::new(HandlerFaults::default());
        let pace = options.pace;
        let workload =
            crate::authority::workload::named(&options.workload, options.seed)?.wrapped(|h| {
                let h = match pace {
                    Some(p) => p.wrap(h),
                    None => h,
                };
                faults.wrap(h)
            });
        let mut generator = Generator::new(options.seed, &options.build, options.rates);
        generator.setup(&store)?;
        let mut sim = Self {
            rng: SmallRng::seed_from_u64(options.seed),
            scenario,
            clock,
            backend,
            store,
            workload,
            faults,
            nodes: Vec::new(),
            queue: BTreeMap::new(),
            seq: 0,
            generator,
            build_versions: BTreeMap::new(),
            timeline: Vec::new(),
            deploy: DeployWatch::default(),
            script_waits: BTreeMap::new(),
            options,
        };
        for _ in 0..sim.options.authorities {
            let build = sim.options.build.clone();
            sim.add_node(&build)?;
        }
        let start = sim.options.start_at;
        sim.push(start, Ev::Generate);
        sim.push(start + 1_000, Ev::Sample);
        for k in 0..sim.scenario.script.len() {
            let offset = sim.scenario.script[k].0;
            sim.push(start + offset, Ev::Script(k));
        }
        Ok(sim)
    }

    /// The store every authority shares (read through the unskewed virtual clock).
    #[must_use]
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// The virtual now.
    #[must_use]
    pub fn now(&self) -> Millis {
        self.clock.now()
    }

    /// When a bounded run ends.
    #[must_use]
    pub fn end(&self) -> Option<Millis> {
        self.options.duration_ms.map(|d| self.options.start_at + d)
    }

    fn push(&mut self, at: Millis, ev: Ev) {
        self.seq += 1;
        self.queue.insert((at, self.seq), ev);
    }

    /// Processes every event due by `target` in order, then sets the clock to `target`.
    pub fn step_until(&mut self, target: Millis) {
        while let Some(entry) = self.queue.first_entry() {
            let (at, _) = *entry.key();
            if at > target {
                break;
            }
            let ev = entry.remove();
            if at > self.clock.now() {
                self.clock.set(at);
            }
            self.handle(ev);
        }
        if target > self.clock.now() {
            self.clock.set(target);
        }
    }

    /// The authorities, in start order.
    #[must_use]
    pub fn nodes(&self) -> Vec<NodeInfo> {
        self.nodes
            .iter()
            .map(|n| NodeInfo {
                id: n.id.clone(),
                build: n.build.clone(),
                state: n.state,
                clock_offset_ms: n.clock.offset(),
                inflight: n.core.inflight(),
            })
            .collect()
    }

    /// Starts one more authority of `build`; returns its id.
    ///
    /// # Errors
    /// `INVALID` when the cluster is full.
    pub fn add_node(&mut self, build: &str) -> Result<String> {
        if self.nodes.len() >= MAX_AUTHORITIES {
            return Err(Error::Invalid(format!(
                "the cluster already ran {MAX_AUTHORITIES} authorities"
            )));
        }
        let index = self.nodes.len();
        let id = format!("auth-{}", index + 1);
        let clock = SkewedClock::new(Arc::new(self.clock.clone()), 0);
        let version = self.version_of(build);
        self.build_versions.insert(build.into(), version.clone());
        let core = self.new_core(&id, build, &version, &clock)?;
        // A registration lost to an outage is retried by the heartbeat.
        let _ = core.register();
        self.nodes.push(Node {
            id,
            build: build.into(),
            version,
            core: Arc::new(core),
            clock,
            state: NodeState::Running,
            running: BTreeMap::new(),
            deferred: Vec::new(),
        });
        self.start_loops(index);
        Ok(self.nodes[index].id.clone())
    }

    /// The handler version `build` runs at: the one it ran at before; the first build runs
    /// the built-in version, and any other tag not seen yet (a rolling deploy's new
    /// build) the next major version — a release that does not run the old work. A
    /// compatible deploy records its version before it starts a node.
    pub(super) fn version_of(&self, build: &str) -> HandlerVersion {
        match self.build_versions.get(build) {
            Some(known) => known.clone(),
            None if build == self.options.build => HandlerVersion::demo(),
            None => self.generator.version().next_major(),
        }
    }

    /// An authority core for `id` running `build` with every handler at `version`, reading
    /// time through `clock`.
    fn new_core(
        &self,
        id: &str,
        build: &str,
        version: &HandlerVersion,
        clock: &SkewedClock,
    ) -> Result<AuthorityCore> {
        let t = self.options.timing;
        let config = AuthorityConfig {
            lease_duration_ms: t.lease_ms,
            renew_interval_ms: t.renew_ms,
            worker_concurrency: t.concurrency,
            claim_batch_size: t.batch,
            poll_interval_ms: t.poll_ms,
            heartbeat_interval_ms: t.heartbeat_ms,
            retention: self.options.retention.clone(),
            trim_interval_ms: self.options.trim_every_ms,
            ..AuthorityConfig::new(id, build)
        };
        Ok(AuthorityCore::new(
            self.store.with_clock(Arc::new(clock.clone())),
            config,
            self.workload.clone().at_version(version),
            Pace::Virtual,
        )?
        .with_host("memory-cluster"))
    }

    /// Schedules node `index`'s poll, renew and heartbeat loops, unless a loop of an
    /// earlier incarnation at that index is still queued (it carries on for this one).
    fn start_loops(&mut self, index: usize) {
        let t = self.options.timing;
        let now = self.clock.now();
        let jitter = self.rng.random_range(0..t.poll_ms.max(1));
        for (at, ev) in [
            (now + jitter, Ev::Poll(index)),
            (now + t.renew_ms, Ev::Renew(index)),
            (now + t.heartbeat_ms, Ev::Heartbeat(index)),
        ] {
            if !self.queue.values().any(|queued| *queued == ev) {
                self.push(at, ev);
            }
        }
    }

    fn handle(&mut self, ev: Ev) {
        if let Some(i) = ev.node() {
            match self.nodes[i].state {
                NodeState::Crashed | NodeState::Stopped | NodeState::Restarting => return,
                NodeState::Paused => {
                    self.nodes[i].deferred.push(ev);
                    return;
                }
                NodeState::Running | NodeState::Stopping => {}
            }
        }
        let now = self.clock.now();
        let t = self.options.timing;
        match ev {
            Ev::Poll(i) => {
                if self.nodes[i].state != NodeState::Running {
                    return;
                }
                let core = self.nodes[i].core.clone();
                core.flush();
                core.trim_when_due();
                for job in core.poll().unwrap_or_default() {
                    let executed = core.execute(&job);
                    let latency = executed.spent_ms.max(1);
                    self.nodes[i].running.insert(job.id, executed);
                    self.push(now + latency, Ev::Finish(i, job.id));
                }
                // A little jitter, as real pollers drift apart.
                let jitter = self.rng.random_range(0..=t.poll_ms / 5);
                self.push(now + t.poll_ms + jitter, Ev::Poll(i));
            }
            Ev::Finish(i, job) => {
                if let Some(executed) = self.nodes[i].running.remove(&job) {
                    self.nodes[i].core.finish(executed);
                }
                if self.nodes[i].state == NodeState::Stopping && self.nodes[i].running.is_empty() {
                    self.complete_stop(i);
                }
            }
            Ev::Renew(i) => {
                self.nodes[i].core.renew();
                self.push(now + t.renew_ms, Ev::Renew(i));
            }
            Ev::Heartbeat(i) => {
                let core = &self.nodes[i].core;
                if let Err(Error::NotFound { .. }) = core.heartbeat() {
                    let _ = core.register();
                }
                self.push(now + t.heartbeat_ms, Ev::Heartbeat(i));
            }
            Ev::StopDeadline(i) => {
                if self.nodes[i].state == NodeState::Stopping {
                    self.complete_stop(i);
                }
            }
            Ev::Resume(i) => self.resume_node(i),
            Ev::Generate => {
                let stop_at = self
                    .options
                    .duration_ms
                    .map(|d| self.options.start_at + d * 85 / 100);
                if stop_at.is_none_or(|s| now < s) {
                    self.generator.tick(&self.store, now);
                    self.push(now + self.options.generate_every_ms, Ev::Generate);
                }
            }
            Ev::Sample => {
                self.sample();
                // Once a second, or once a generator tick when the generator ticks slower.
                let every = self.options.generate_every_ms.max(1_000);
                self.push(now + every, Ev::Sample);
            }
            Ev::Script(k) => {
                if let Some((_, fault)) = self.scenario.script.get(k).cloned() {
                    // A stall aimed at a writer waits (up to two seconds) for an
                    // authority to be executing a long-lived claim, so the scenario shows
                    // what it is about: a late write meeting a newer generation.
                    let waiting = matches!(
                        &fault,
                        Fault::Pause {
                            target: Target::Stallable,
                            ..
                        }
                    ) && !self
                        .running()
                        .into_iter()
                        .any(|i| self.stall_weight(i).0 > 0);
                    let tries = self.script_waits.entry(k).or_insert(0);
                    if waiting && *tries < 40 {
                        *tries += 1;
                        self.push(now + 50, Ev::Script(k));
                    } else {
                        let _ = self.apply(&fault);
                    }
                }
            }
            Ev::OutageEnd => self.backend.set_outage(false),
            Ev::HandlerFaultsEnd => self.faults.clear(),
            Ev::Replace { old, build } => {
                let _ = self.add_node(&build);
                self.stop_node(old);
            }
            Ev::Restart(i) => self.try_register(i),
        }
    }
}
