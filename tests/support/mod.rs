//! The one test-support layer every suite includes (`#[path = "support/mod.rs"] mod support;`):
//!
//! - this file: the providers of the [`Harness`] the store conformance suite exports
//!   (`leasehold::testing`) — per provider, [`Store`] handles over one store with
//!   an injected [`ManualClock`] and seeded ids, a *reopen* (a process restart: a new
//!   connection over the same file, or for memory a new handle over the same
//!   `MemoryBackend`) and cleanup on drop (the temp dir of a SQLite file);
//!   `postgres_store.rs` is the Postgres one, over a database of its own on the test server
//!   (`postgres.rs`: a throwaway server per test binary, or the one `LEASEHOLD_TEST_PG_URL`
//!   names);
//! - `per_provider.rs`: the macro that runs a case on every provider;
//! - `wait.rs`: the one way to wait for something another thread or process does;
//! - `authorities.rs`: real `leasehold authority` processes;
//! - `faults.rs`: memory and SQLite stores under the fault-injecting wrapper;
//! - `lock_wait.rs`: a grant answered after a wait for a write lock held from outside;
//! - `failure.rs`: the command line's one-line failure contract.

#![allow(dead_code, unused_macros, clippy::unwrap_used)]

pub mod authorities;
pub mod failure;
pub mod faults;
pub mod lock_wait;
pub mod metrics;
#[macro_use]
mod per_provider;
#[cfg(feature = "postgres")]
pub mod postgres;
#[cfg(feature = "postgres")]
mod postgres_store;
pub mod runtime;
pub mod trimmed;
pub mod wait;

// Each test binary uses a part of the harness, like the dead-code allowance above.
#[cfg(feature = "postgres")]
#[allow(unused_imports)]
pub use postgres_store::{PostgresHarness, open_postgres, postgres, postgres_harness};

use std::path::{Path, PathBuf};
use std::sync::Arc;

use leasehold::Store;
use leasehold::clock::{ManualClock, Millis};
use leasehold::ids::SeededIds;
use leasehold::store::memory::MemoryBackend;
use leasehold::store::sqlite::SqliteBackend;
use leasehold::store::url::OpenMode;
// The harness and the shared fixtures the store conformance suite exports; each test binary
// uses a part of them.
#[allow(unused_imports)]
pub use leasehold::testing::{
    BASE, Harness, K, K_OTHER, MemoryHarness, START, next_seed, ok, refused, retry_contention,
};

/// The built-in handlers' version, which the default workload runs: work stamped with it
/// (`&demo()` as the keys of an enqueue) is what the authorities the tests start claim.
pub fn demo() -> leasehold::model::HandlerVersion {
    leasehold::model::HandlerVersion::demo()
}

/// The key of `handler`'s work at the built-in version.
pub fn key(handler: &str) -> String {
    leasehold::model::handler_key(handler, &demo())
}

/// [`key`] of `send-email`, for fixtures that stamp all their work with one key the
/// authorities they register (declaring `send-email` at the built-in version) run.
pub fn send_email_key() -> &'static str {
    static KEY: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| key("send-email"));
    &KEY
}

/// Dead letters (`uncertain-exhausted`): each item's one attempt lapses uncertain, and the
/// next claim finds its attempts spent.
pub fn dead_letters(store: &Store, clock: &ManualClock, ids: &[&str]) {
    for id in ids {
        let spec = leasehold::model::work::NewWork {
            max_attempts: 1,
            ..leasehold::model::work::NewWork::effect(*id, "send-email", "{}")
        };
        store.enqueue(spec, send_email_key()).unwrap();
        store.claim(id, "auth-x", send_email_key(), 1_000).unwrap();
    }
    clock.advance(2_000);
    for id in ids {
        store
            .claim(id, "auth-y", send_email_key(), 1_000)
            .unwrap_err();
    }
}

/// Every handler of the default workload at the built-in version: what a workflow start
/// for those authorities passes ([`leasehold::workflow::engine::StartKey::Versions`]).
pub fn demo_versions() -> std::collections::BTreeMap<String, leasehold::model::HandlerVersion> {
    leasehold::authority::workload::default_workload(0).handler_versions()
}

/// The handlers `workflow`'s deployed definition needs, each at the built-in version:
/// what a start passes for authorities that register them at that version.
pub fn actions_at_demo(
    store: &Store,
    workflow: &str,
) -> std::collections::BTreeMap<String, leasehold::model::HandlerVersion> {
    store
        .workflow_actions(workflow)
        .unwrap()
        .into_iter()
        .map(|name| (name, demo()))
        .collect()
}

/// Runs the `leasehold` binary to the end, without the caller's `LEASEHOLD_STORE` (a test
/// names its store).
pub fn leasehold(args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_leasehold"))
        .env("LEASEHOLD_STATE_DIR", authorities::witnesses())
        .args(args)
        .env_remove("LEASEHOLD_STORE")
        .output()
        .expect("run leasehold")
}

/// A memory store on a manual clock at `at`, ids seeded by `seed`, with its backend (to
/// plant rows below the validator, or to make its reads fail).
pub fn memory_store_at(at: Millis, seed: u64) -> (Store, ManualClock, MemoryBackend) {
    let backend = MemoryBackend::new();
    let clock = ManualClock::new(at);
    let store = Store::new(
        Arc::new(backend.clone()),
        Arc::new(clock.clone()),
        Arc::new(SeededIds::new(seed)),
    );
    (store, clock, backend)
}

/// `leasehold inspect VIEW --store PATH --json`, which must succeed: one JSON value per
/// line.
pub fn inspect(view: &str, path: &str) -> Vec<serde_json::Value> {
    let o = leasehold(&["inspect", view, "--store", path, "--json"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect()
}

/// Enqueues `n` send-email effects named `PREFIX-000`, `PREFIX-001` … in one batch.
pub fn effects(store: &Store, prefix: &str, n: usize) {
    let specs = (0..n)
        .map(|i| {
            leasehold::model::work::NewWork::effect(format!("{prefix}-{i:03}"), "send-email", "{}")
        })
        .collect();
    store.enqueue_batch(specs, send_email_key()).unwrap();
}

/// A fresh memory store.
pub fn memory() -> Box<dyn Harness> {
    Box::new(MemoryHarness::new())
}

/// The SQLite provider over a file in a temp dir that is removed on drop.
pub struct SqliteHarness {
    // Dropped last: the handles close before the directory goes.
    primary: Store,
    clock: ManualClock,
    path: PathBuf,
    _dir: tempfile::TempDir,
}

/// A fresh SQLite store in its own temp dir.
pub fn sqlite() -> Box<dyn Harness> {
    let dir = tempfile::Builder::new()
        .prefix("leasehold-store-")
        .tempdir()
        .expect("temp dir");
    sqlite_in(dir)
}

/// A fresh SQLite store on a RAM-backed file system when there is one (`/dev/shm`), else in
/// the temp dir: the same provider code, without paying an `fsync` per commit. For the
/// long property-based runs, whose subject is the rules, not durability (the conformance
/// suite and the process tests use the real temp dir).
pub fn sqlite_in_memory_fs() -> Box<dyn Harness> {
    let shm = Path::new("/dev/shm");
    let dir = if shm.is_dir() {
        tempfile::Builder::new()
            .prefix("leasehold-model-")
            .tempdir_in(shm)
            .ok()
    } else {
        None
    };
    sqlite_in(dir.unwrap_or_else(|| {
        tempfile::Builder::new()
            .prefix("leasehold-model-")
            .tempdir()
            .expect("temp dir")
    }))
}

fn sqlite_in(dir: tempfile::TempDir) -> Box<dyn Harness> {
    let path = dir.path().join("store.db");
    let clock = ManualClock::new(START);
    let primary =
        open_sqlite(&path, &clock, OpenMode::ReadWrite).expect("open a fresh SQLite store");
    Box::new(SqliteHarness {
        primary,
        clock,
        path,
        _dir: dir,
    })
}

/// A store over the SQLite file at `path` reading `clock`, with seeded ids.
///
/// # Errors
/// Whatever the provider's open says.
pub fn open_sqlite(path: &Path, clock: &ManualClock, mode: OpenMode) -> leasehold::Result<Store> {
    let backend = SqliteBackend::open(path, mode)?;
    Ok(Store::new(
        Arc::new(backend),
        Arc::new(clock.clone()),
        Arc::new(SeededIds::new(next_seed())),
    ))
}

impl SqliteHarness {
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Harness for SqliteHarness {
    fn provider(&self) -> &'static str {
        "sqlite"
    }

    fn clock(&self) -> &ManualClock {
        &self.clock
    }

    fn store(&self) -> Store {
        self.primary.clone()
    }

    fn reopen(&self) -> Store {
        open_sqlite(&self.path, &self.clock, OpenMode::ReadWrite).expect("reopen the SQLite store")
    }
}

/// The current instant of a store's clock.
pub fn now(store: &Store) -> Millis {
    store.clock().now()
}
