//! The authority as step functions: no tokio, no sleeping, time from the store's clock.
//!
//! A driver calls, on its own cadence: [`AuthorityCore::poll`] (fire due schedules, claim
//! work and runnable workflow instances up to free concurrency), then for each [`Job`]
//! [`AuthorityCore::execute`] (run the handler — possibly on another thread) and
//! [`AuthorityCore::finish`] (record the outcome under the fence); [`AuthorityCore::renew`]
//! on the renew cadence, [`AuthorityCore::heartbeat`], [`AuthorityCore::flush`] (retry
//! outcomes a store failure deferred) and finally [`AuthorityCore::shutdown`]. The tokio
//! runtime ([`super::runtime`]) and the simulated cluster (`cluster/`) are two
//! drivers over this one implementation.
//!
//! Every write is fenced in the store; this file only decides what to present. A refusal
//! (`WORK_FENCED`, `already-terminal`, …) is counted and never retried as success — as a
//! fenced write and a lost lease when another claim had taken the item over (see
//! `fencing.rs`); a fenced renewal marks the job lost, and a lost job's outcome is
//! dropped. A subscription cursor is kept once claimed: after each look (deliver what is
//! new, or nothing) it stays owned and renewed, and a later poll looks again, so its
//! generation moves only when its ownership does. Each claim, outcome and lost lease is a
//! `tracing` event ([`super::log`]).
//!
//! This file holds the core's state and its read access; the steps live beside it, one
//! file each: `poll.rs` (claim), `execute.rs` (run), `finish.rs` (route and account for
//! outcomes) over `commit.rs` (the fenced store writes), and `lifecycle.rs` (register,
//! heartbeat, renew, shutdown, crash), `trim.rs` (retention). `job.rs` holds what passes between them.

mod commit;
mod execute;
mod finish;
mod job;
mod lifecycle;
mod poll;
mod trim;
mod turns;

pub use execute::{HandlerCall, Prepared};
pub use job::{Exec, Executed, Finished, Job, Renewed, Task};

use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard};

use super::config::AuthorityConfig;
use super::handlers::{Pace, Workload};
use super::stats::{ExecLog, Stats};
use crate::clock::Millis;
use crate::error::Result;
use crate::foundation::actor::host_name;
use crate::model::{CompatSet, Recovering};
use crate::store::Store;
use crate::store::capability::WORK_MODEL;
use crate::workflow::engine::Engine;
use crate::workflow::keys::{ActionsMemo, claim_keys, claim_keys_with};

struct InFlight {
    job: Job,
    lost: bool,
    deferred: Option<Executed>,
    /// Why the deferred outcome's read-back could not decide whether it committed, and
    /// since when: held (neither run nor written again) until a later read-back decides.
    recovery: Option<Recovering>,
    /// A held cursor between looks: owned, renewed, but not executing.
    held: bool,
    /// When a held cursor is due for its next look.
    look_at: Millis,
}

impl InFlight {
    fn new(job: Job) -> Self {
        Self {
            job,
            lost: false,
            deferred: None,
            recovery: None,
            held: false,
            look_at: 0,
        }
    }
}

#[derive(Default)]
struct CoreState {
    next_job: u64,
    inflight: BTreeMap<u64, InFlight>,
    stopping: bool,
    stats: Stats,
    /// When this process last registered: with the host and pid, the incarnation its
    /// heartbeats present.
    started_at: Millis,
    /// When the deployed definitions were last read into the claim keys.
    keys_read_at: Option<Millis>,
    /// The handlers each deployed definition needs, kept between those reads.
    actions: ActionsMemo,
    /// Polls that had free slots to share so far: which of cursor looks, workflow instances and
    /// work items gets the slots that do not divide evenly rotates with it (`poll.rs`).
    share_turn: usize,
    /// Whether the last poll fired, recorded and claimed nothing: the next one asks in a
    /// read first whether it would find anything (`store/idle_probe.rs`).
    idle: bool,
}

/// How often an authority re-reads the deployed definitions: a definition deployed while
/// it runs adds its key to the set within this long.
pub const KEYS_REFRESH_MS: Millis = 2_000;

/// One authority's logic over a store. All methods take `&self`; share it in an `Arc`.
pub struct AuthorityCore {
    store: Store,
    config: AuthorityConfig,
    /// The label of the code it runs (its handlers' keys): what its registration shows.
    compat: String,
    engine: Engine,
    workload: Workload,
    pace: Pace,
    exec_log: Option<ExecLog>,
    /// Where this authority's events go, when not to the default subscriber.
    log: Option<tracing::Dispatch>,
    host: String,
    state: Mutex<CoreState>,
    /// The write lock's queue as this authority's polls see it (`turns.rs`), on a store
    /// where stepping aside from it is kept (SQLite): locked only for a moment, and never
    /// while waiting for the store.
    turns: Option<Mutex<turns::Turns>>,
}

impl AuthorityCore {
    /// An authority over `store` (whose clock it reads) with `config`, running `workload`.
    ///
    /// # Errors
    /// `INVALID` for an unsafe config (see [`AuthorityConfig::validate`]);
    /// `CAPABILITY_MISSING` for a store that does not keep the whole work model.
    pub fn new(
        store: Store,
        config: AuthorityConfig,
        workload: Workload,
        pace: Pace,
    ) -> Result<Self> {
        config.validate()?;
        store.require(&WORK_MODEL)?;
        // Its own count of its commits, whoever else writes through clones of this handle.
        let store = store.counting_own_commits();
        let handler_keys = claim_keys(&workload.handler_versions(), &[]);
        let compat = handler_keys.digest();
        let engine = Engine::new(store.clone(), &config.instance_id, handler_keys);
        let stats = Stats::for_handlers(&config.instance_id, &config.build, workload.names());
        let steps_aside = config.step_aside.applies_to(store.kind());
        // Each process draws its own jitter, so authorities that step aside together do
        // not come back together.
        let seed = std::hash::BuildHasher::hash_one(
            &std::collections::hash_map::RandomState::new(),
            &config.instance_id,
        );
        Ok(Self {
            store,
            compat,
            engine,
            workload,
            pace,
            exec_log: None,
            log: None,
            host: host_name(),
            config,
            state: Mutex::new(CoreState {
                stats,
                ..CoreState::default()
            }),
            turns: steps_aside.then(|| Mutex::new(turns::Turns::new(seed))),
        })
    }

    /// Writes one JSON line per physical attempt to `log`.
    #[must_use]
    pub fn with_exec_log(mut self, log: ExecLog) -> Self {
        self.exec_log = Some(log);
        self
    }

    /// Sends this authority's events to `dispatch` (see [`Self::log_scope`]).
    #[must_use]
    pub fn with_log(mut self, dispatch: tracing::Dispatch) -> Self {
        self.log = Some(dispatch);
        self
    }

    /// Runs `f` with this authority's subscriber, if it has one, as the thread's default:
    /// a driver wraps every call into the core (on any thread) in it.
    pub fn log_scope<T>(&self, f: impl FnOnce() -> T) -> T {
        match &self.log {
            Some(dispatch) => tracing::dispatcher::with_default(dispatch, f),
            None => f(),
        }
    }

    /// Reports `host` in the registration instead of this machine's name.
    #[must_use]
    pub fn with_host(mut self, host: impl Into<String>) -> Self {
        self.host = host.into();
        self
    }

    fn state(&self) -> MutexGuard<'_, CoreState> {
        // The state is plain counters and maps; a panic elsewhere cannot leave it torn.
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn turns(&self) -> Option<MutexGuard<'_, turns::Turns>> {
        // A moving average and an instant: nothing a panic could leave torn either.
        let turns = self.turns.as_ref()?;
        Some(
            turns
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        )
    }

    #[must_use]
    pub fn config(&self) -> &AuthorityConfig {
        &self.config
    }

    #[must_use]
    pub fn id(&self) -> &str {
        &self.config.instance_id
    }

    /// The label of the code this authority runs: one digest over its handlers' keys.
    #[must_use]
    pub fn compat(&self) -> &str {
        &self.compat
    }

    /// The digests this authority claims by: one per handler it runs, one per deployed
    /// definition it has every action handler for (as last read).
    #[must_use]
    pub fn claim_keys(&self) -> CompatSet {
        self.engine.keys()
    }

    /// The workload it runs.
    #[must_use]
    pub fn workload(&self) -> &Workload {
        &self.workload
    }

    /// Re-reads the deployed definitions into the claim keys when the last read is older
    /// than [`KEYS_REFRESH_MS`] (or there was none).
    ///
    /// # Errors
    /// A store failure (the keys stay as they were).
    pub(super) fn refresh_keys(&self, now: Millis) -> Result<()> {
        let due = self
            .state()
            .keys_read_at
            .is_none_or(|at| now.saturating_sub(at) >= KEYS_REFRESH_MS);
        if !due {
            return Ok(());
        }
        let definitions = self.store.deployed_definitions()?;
        let versions = self.workload.handler_versions();
        let mut state = self.state();
        let keys = claim_keys_with(&versions, &definitions, &mut state.actions);
        state.keys_read_at = Some(now);
        drop(state);
        self.engine.set_keys(keys);
        Ok(())
    }

    #[must_use]
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// A snapshot of the counters.
    #[must_use]
    pub fn stats(&self) -> Stats {
        Stats {
            write_round_trips: self.store.write_round_trips(),
            ..self.state().stats.clone()
        }
    }

    /// Jobs owned right now (claimed and not yet finished, lost or released).
    #[must_use]
    pub fn inflight(&self) -> usize {
        self.state().inflight.len()
    }

    /// The jobs owned right now (claimed and not yet finished, lost or released).
    #[must_use]
    pub fn owned(&self) -> Vec<Job> {
        self.state()
            .inflight
            .values()
            .filter(|f| !f.lost)
            .map(|f| f.job.clone())
            .collect()
    }

    /// Whether [`Self::shutdown`] has begun.
    #[must_use]
    pub fn is_stopping(&self) -> bool {
        self.state().stopping
    }

    /// Stops claiming; owned jobs still finish. [`Self::shutdown`] implies it.
    pub fn stop_claiming(&self) {
        self.state().stopping = true;
    }

    /// Records one store call of `verb` that took `took` (the runtime times its calls).
    pub fn record_store_call(&self, verb: &str, took: std::time::Duration) {
        let ms = Millis::try_from(took.as_millis()).unwrap_or(Millis::MAX);
        self.state()
            .stats
            .store_call_ms
            .entry(verb.to_owned())
            .or_default()
            .record(ms);
    }

    fn note_store_error<T>(&self, result: &Result<T>) {
        if let Err(e) = result {
            self.note_failure(e);
        }
    }

    /// Counts `e` if it is a store failure (the poll that met it goes on with what it has).
    fn note_failure(&self, e: &crate::error::Error) {
        if e.is_store_failure() {
            self.state().stats.store_errors += 1;
        }
    }
}

impl std::fmt::Debug for AuthorityCore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuthorityCore")
            .field("instance", &self.config.instance_id)
            .field("build", &self.config.build)
            .field("compat", &self.compat)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::authority::config::StepAside;
    use crate::authority::workload;
    use crate::clock::ManualClock;
    use crate::ids::SeededIds;
    use crate::store::memory::MemoryBackend;

    fn core(store: &Store, id: &str) -> AuthorityCore {
        core_with(store, AuthorityConfig::new(id, "v1"))
    }

    fn core_with(store: &Store, config: AuthorityConfig) -> AuthorityCore {
        let core = AuthorityCore::new(
            store.clone(),
            config,
            workload::named("fast", 1).expect("fast"),
            Pace::Virtual,
        )
        .expect("valid");
        core.register().expect("registers");
        core
    }

    fn memory() -> Store {
        Store::new(
            Arc::new(MemoryBackend::new()),
            Arc::new(ManualClock::new(1_767_225_600_000)),
            Arc::new(SeededIds::new(3)),
        )
    }

    /// `step_aside` decides whether an authority reads the lock's queue at all: by default
    /// on SQLite only, everywhere when on, nowhere when off.
    #[test]
    fn the_setting_decides_whether_an_authority_steps_aside() {
        let dir = tempfile::tempdir().expect("tempdir");
        let backend = crate::store::sqlite::SqliteBackend::open(
            dir.path().join("store.db"),
            crate::store::url::OpenMode::ReadWrite,
        )
        .expect("opens");
        let sqlite = Store::new(
            Arc::new(backend),
            Arc::new(crate::clock::SystemClock),
            Arc::new(SeededIds::new(3)),
        );
        let steps_aside = |store: &Store, when: StepAside| {
            let config = AuthorityConfig {
                step_aside: when,
                ..AuthorityConfig::new(format!("a-{}", when.as_str()), "v1")
            };
            core_with(store, config).turns.is_some()
        };
        let memory = memory();
        let seen = StepAside::ALL.map(|w| (steps_aside(&sqlite, w), steps_aside(&memory, w)));
        assert_eq!(seen, [(true, false), (true, true), (false, false)]);
    }

    /// An authority's registration row tells how often it stood aside, as its metrics page
    /// does, with every heartbeat and at its stop (the row outlives the process).
    #[test]
    fn the_registration_publishes_how_often_the_authority_stood_aside() {
        let store = memory();
        let a = core(&store, "a");
        let published = || {
            store
                .list_authorities(&crate::model::PageRequest::first(10))
                .expect("lists")
                .rows
                .into_iter()
                .find(|r| r.instance_id == "a")
                .expect("registered")
                .published
        };
        assert_eq!(published().steps_aside, 0);
        a.state().stats.lock_step_asides = 3;
        a.heartbeat().expect("beats");
        assert_eq!(published().steps_aside, 3);
        a.state().stats.lock_step_asides = 5;
        a.shutdown().expect("stops");
        assert_eq!(published().steps_aside, 5);
    }

    /// Two authorities of one process, given clones of one handle, count their commits
    /// apart: what one commits is, to the other, a writer that went before it.
    #[test]
    fn authorities_sharing_a_handle_count_only_their_own_commits() {
        let store = memory();
        let a = core(&store, "a");
        let b = core(&store, "b");
        let (a_before, b_before) = (a.store().commits_made(), b.store().commits_made());
        a.heartbeat().expect("beats");
        a.heartbeat().expect("beats");
        assert_eq!(a.store().commits_made(), a_before + 2, "a counts its own");
        assert_eq!(b.store().commits_made(), b_before, "b does not count a's");
    }
}
