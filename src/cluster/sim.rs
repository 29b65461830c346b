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

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use super::faults::{Fault, FaultRecord, HandlerFaults, Target};
use super::scenarios::{self, Scenario, Timing};
use super::workload::{Generator, Rates};
use crate::authority::{AuthorityConfig, AuthorityCore, Executed, Pace, Workload};
use crate::build_key::{DEFAULT_BUILD_TAG, compatibility_key};
use crate::clock::{Clock, ManualClock, Millis, SkewedClock};
use crate::error::{Error, Result};
use crate::ids::SeededIds;
use crate::model::work::WorkFilter;
use crate::model::{PageRequest, WorkKind, WorkState};
use crate::store::Store;
use crate::store::memory::MemoryBackend;

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
        }
    }

    /// An unbounded run whose virtual clock starts at `start_at` (the wall clock, for the
    /// dashboard).
    #[must_use]
    pub fn live(scenario: &str, seed: u64, authorities: usize, start_at: Millis) -> Self {
        Self {
            duration_ms: None,
            start_at,
            ..Self::headless(scenario, seed, authorities, 0)
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
    Replace { old: usize, build: String },
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
    pub compat: String,
    pub core: Arc<AuthorityCore>,
    pub clock: SkewedClock,
    pub state: NodeState,
    running: BTreeMap<u64, Executed>,
    deferred: Vec<Ev>,
}

/// What the rolling-deploy watch saw.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct DeployWatch {
    /// Most non-terminal items at once whose build no running authority had.
    pub held_max: u64,
    /// Samples that saw held items.
    pub held_samples: u64,
    /// Effects and schedule firings seen held (the first time anything was held).
    pub held_ids: BTreeSet<String>,
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
        let workload = crate::authority::workload::named(&options.workload, options.seed)?
            .wrapped(|h| faults.wrap(h));
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
        let t = self.options.timing;
        let config = AuthorityConfig {
            lease_duration_ms: t.lease_ms,
            renew_interval_ms: t.renew_ms,
            worker_concurrency: t.concurrency,
            claim_batch_size: t.batch,
            poll_interval_ms: t.poll_ms,
            heartbeat_interval_ms: t.heartbeat_ms,
            ..AuthorityConfig::new(&id, build)
        };
        let core = AuthorityCore::new(
            self.store.with_clock(Arc::new(clock.clone())),
            config,
            self.workload.clone(),
            Pace::Virtual,
        )?
        .with_host("memory-cluster");
        // A registration lost to an outage is retried by the heartbeat.
        let _ = core.register();
        self.nodes.push(Node {
            id: id.clone(),
            build: build.into(),
            compat: compatibility_key(build).digest(),
            core: Arc::new(core),
            clock,
            state: NodeState::Running,
            running: BTreeMap::new(),
            deferred: Vec::new(),
        });
        let now = self.clock.now();
        let jitter = self.rng.random_range(0..t.poll_ms.max(1));
        self.push(now + jitter, Ev::Poll(index));
        self.push(now + t.renew_ms, Ev::Renew(index));
        self.push(now + t.heartbeat_ms, Ev::Heartbeat(index));
        Ok(id)
    }

    fn handle(&mut self, ev: Ev) {
        if let Some(i) = ev.node() {
            match self.nodes[i].state {
                NodeState::Crashed | NodeState::Stopped => return,
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
                    self.push(now + Generator::TICK_MS, Ev::Generate);
                }
            }
            Ev::Sample => {
                self.sample();
                self.push(now + 1_000, Ev::Sample);
            }
            Ev::Script(k) => {
                if let Some((_, fault)) = self.scenario.script.get(k).cloned() {
                    // A stall aimed at long-lived claims waits (up to two seconds) for an
                    // authority to hold one, so the scenario shows what it is about.
                    let waiting = matches!(
                        &fault,
                        Fault::Pause {
                            target: Target::Stallable,
                            ..
                        }
                    ) && !self.nodes.iter().any(|n| {
                        n.state == NodeState::Running
                            && n.core
                                .owned()
                                .iter()
                                .any(|j| matches!(j.kind(), "cursor" | "workflow"))
                    });
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
        }
    }

    fn running(&self) -> Vec<usize> {
        (0..self.nodes.len())
            .filter(|&i| self.nodes[i].state == NodeState::Running)
            .collect()
    }

    fn resolve(&mut self, target: &Target) -> Option<usize> {
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
            Target::Stallable => running.iter().copied().max_by_key(|&i| {
                let owned = self.nodes[i].core.owned();
                let long_lived = owned
                    .iter()
                    .filter(|j| matches!(j.kind(), "cursor" | "workflow"))
                    .count();
                (long_lived, owned.len(), std::cmp::Reverse(i))
            }),
        }
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
                self.nodes[node.unwrap_or(0)].clock.set_offset(*offset_ms)
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
                self.generator.switch_build(&self.store, build);
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
    pub(super) fn crash_node(&mut self, i: usize) {
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
    pub(super) fn pause_node(&mut self, i: usize, for_ms: Option<Millis>) {
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
    pub(super) fn resume_node(&mut self, i: usize) {
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
    /// then releases the rest and records the stop.
    pub(super) fn stop_node(&mut self, i: usize) {
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

    fn complete_stop(&mut self, i: usize) {
        let node = &mut self.nodes[i];
        node.running.clear();
        let _ = node.core.shutdown();
        node.state = NodeState::Stopped;
    }

    /// Compat digests some running authority claims under.
    pub(super) fn running_compats(&self) -> BTreeSet<String> {
        self.nodes
            .iter()
            .filter(|n| matches!(n.state, NodeState::Running | NodeState::Stopping))
            .map(|n| n.compat.clone())
            .collect()
    }

    /// Non-terminal work whose build no running authority has.
    pub(super) fn held_count(&self) -> Result<(u64, BTreeSet<String>)> {
        let live = self.running_compats();
        let overview = self.store.overview()?;
        let mut held = 0;
        let mut compats = BTreeSet::new();
        for c in overview.work {
            if !c.state.is_terminal() && !live.contains(&c.compat) && c.count > 0 {
                held += c.count;
                compats.insert(c.compat);
            }
        }
        Ok((held, compats))
    }

    fn sample(&mut self) {
        let Ok((held, compats)) = self.held_count() else {
            return;
        };
        if held == 0 {
            return;
        }
        self.deploy.held_max = self.deploy.held_max.max(held);
        self.deploy.held_samples += 1;
        if self.deploy.held_ids.is_empty() {
            let filter = WorkFilter {
                states: vec![WorkState::Pending, WorkState::Retry, WorkState::Claimed],
                kind: None,
                owner: None,
                compats: compats.into_iter().collect(),
                id_prefix: None,
            };
            if let Ok(page) = self.store.list_work(&filter, &PageRequest::first(5_000)) {
                self.deploy.held_ids = page
                    .rows
                    .into_iter()
                    .filter(|w| w.kind != WorkKind::Cursor)
                    .map(|w| w.id)
                    .collect();
            }
        }
    }
}
