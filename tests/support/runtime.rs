//! Fixtures of the authority-runtime suites (`tests/runtime.rs`, `tests/logs.rs`): a memory
//! store on a manual clock, the build's compatibility digest, fast knobs, and the items in
//! one state.

use std::sync::Arc;
use std::time::Duration;

use leasehold::Store;
use leasehold::authority::workload;
use leasehold::authority::{
    Attempt, AttemptContext, AuthorityConfig, AuthorityCore, HandlerOutcome, Pace, Workload,
};
use leasehold::clock::ManualClock;
use leasehold::ids::SeededIds;
use leasehold::model::HandlerVersion;
use leasehold::model::work::WorkFilter;
use leasehold::model::{PageRequest, WorkItem, WorkState};
use leasehold::store::faults::FaultyBackend;
use leasehold::store::memory::MemoryBackend;

/// How long a runtime in this process gets to reach a state the test waits for.
pub const RUNNING: Duration = Duration::from_secs(60);

/// Where the manual clocks of these suites start.
pub const T0: i64 = 1_767_225_600_000;

/// A fresh memory store on `clock`, with seeded ids.
pub fn store(clock: &ManualClock) -> Store {
    Store::new(
        Arc::new(MemoryBackend::new()),
        Arc::new(clock.clone()),
        Arc::new(SeededIds::new(11)),
    )
}

/// A fresh SQLite store in `dir` on the system clock, with seeded ids, and the path of its
/// file: for the suites whose second connection holds the file's real write lock.
pub fn sqlite_store(dir: &tempfile::TempDir) -> (Store, String) {
    let path = dir.path().join("store.db").display().to_string();
    let backend = leasehold::store::sqlite::SqliteBackend::open(
        std::path::Path::new(&path),
        leasehold::store::url::OpenMode::ReadWrite,
    )
    .expect("opens");
    let s = Store::new(
        Arc::new(backend),
        Arc::new(leasehold::clock::SystemClock),
        Arc::new(SeededIds::new(5)),
    );
    (s, path)
}

/// The version every handler of the workloads [`config`] runs with is at: `&compat()` as
/// the keys of an enqueue stamps work these authorities claim.
pub fn compat() -> HandlerVersion {
    super::demo()
}

/// A schedule `tick` of the workload's schedule handler, due every minute (the latest
/// firing only), keyed for the authorities' version.
pub fn every_minute(s: &Store) {
    let handler = workload::SCHEDULE_HANDLER;
    s.create_schedule(
        "tick",
        leasehold::model::schedule::Trigger::Interval { every_ms: 60_000 },
        leasehold::model::schedule::CatchUp::Latest,
        handler,
        "{}",
        &leasehold::model::handler_key(handler, &compat()),
    )
    .expect("creates");
}

/// Knobs that poll, renew and beat fast, under a long lease.
pub fn config(id: &str) -> AuthorityConfig {
    AuthorityConfig {
        poll_interval_ms: 10,
        renew_interval_ms: 50,
        heartbeat_interval_ms: 100,
        lease_duration_ms: 30_000,
        ..AuthorityConfig::new(id, "v1")
    }
}

/// Authority `solo` running the `fast` workload on `s` with `workers` workers, stepped by
/// hand, registered.
pub fn solo(s: &Store, workers: usize) -> AuthorityCore {
    let cfg = AuthorityConfig {
        worker_concurrency: workers,
        ..config("solo")
    };
    let core = AuthorityCore::new(
        s.clone(),
        cfg,
        workload::named("fast", 1).expect("fast"),
        Pace::Virtual,
    )
    .expect("valid");
    core.register().expect("registers");
    core
}

/// Handlers that panic on the payload they cannot read: `parse` (blocking, panicking with
/// `unparsable payload: <payload>`) and `parse-async` (async, whose `expect("a number")`
/// on a payload that is not one panics with `a number: <the parse error>`).
pub fn panicking_parsers() -> Workload {
    let mut w = Workload::new("panics", 1).with("parse", |a: &AttemptContext| {
        panic!("unparsable payload: {}", a.payload)
    });
    let async_parse = |a: Attempt| async move {
        let n: u64 = a
            .payload
            .as_str()
            .unwrap_or_default()
            .parse()
            .expect("a number");
        HandlerOutcome::Succeeded(Some(n.into()))
    };
    w.register_async("parse-async", compat(), Arc::new(async_parse));
    w
}

/// A store over the fault-injecting backend, and that backend.
pub fn faulty_store(clock: &ManualClock) -> (Arc<FaultyBackend>, Store) {
    let backend = Arc::new(FaultyBackend::new(Arc::new(MemoryBackend::new())));
    let s = Store::new(
        backend.clone(),
        Arc::new(clock.clone()),
        Arc::new(SeededIds::new(11)),
    );
    (backend, s)
}

/// Every item in `state`.
pub fn work_in(store: &Store, state: WorkState) -> Vec<WorkItem> {
    let filter = WorkFilter {
        states: vec![state],
        ..WorkFilter::default()
    };
    store
        .list_work(&filter, &PageRequest::first(10_000))
        .expect("lists")
        .rows
}

/// Two registered authorities `a` and `b` on `s`, stepped by hand in virtual time, running
/// the `fast` workload under a 1 s lease: the pair a takeover test needs.
pub fn two_short_lease_cores(s: &Store) -> (AuthorityCore, AuthorityCore) {
    let fast = workload::named("fast", 1).expect("fast");
    let short = |id: &str| AuthorityConfig {
        lease_duration_ms: 1_000,
        renew_interval_ms: 300,
        ..AuthorityConfig::new(id, "v1")
    };
    let a = AuthorityCore::new(s.clone(), short("a"), fast.clone(), Pace::Virtual).expect("a");
    let b = AuthorityCore::new(s.clone(), short("b"), fast, Pace::Virtual).expect("b");
    a.register().expect("registers");
    b.register().expect("registers");
    (a, b)
}

/// Holds a handler's attempts until opened: a long attempt the test ends when it chooses.
/// Opened when the [`OpenOnDrop`] guard goes, so a failing test never leaves an attempt
/// waiting.
#[derive(Clone, Default)]
pub struct Gate(Arc<(std::sync::Mutex<bool>, std::sync::Condvar)>);

impl Gate {
    /// Blocks until the gate is open.
    pub fn wait(&self) {
        let (open, turned) = &*self.0;
        let mut open = open.lock().expect("the gate's lock");
        while !*open {
            open = turned.wait(open).expect("the gate's lock");
        }
    }

    /// Lets every waiting and later attempt through.
    pub fn open(&self) {
        let (open, turned) = &*self.0;
        *open.lock().expect("the gate's lock") = true;
        turned.notify_all();
    }

    /// A guard that opens the gate when dropped.
    #[must_use]
    pub fn open_on_drop(&self) -> OpenOnDrop {
        OpenOnDrop(self.clone())
    }
}

/// Opens its [`Gate`] when dropped.
pub struct OpenOnDrop(Gate);

impl Drop for OpenOnDrop {
    fn drop(&mut self) {
        self.0.open();
    }
}
