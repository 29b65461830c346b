//! The store conformance suite, for a store provider of one's own (the `testing` feature).
//!
//! Every case is a plain `fn case(h: &dyn Harness)` in one of the submodules, named after
//! the rule of docs/ARCHITECTURE.md it pins; the memory, SQLite and PostgreSQL providers
//! all pass every one. A provider written outside this crate (a [`Backend`] of its own)
//! implements [`Harness`] — a fresh store per test over an injected [`ManualClock`], a
//! reopen as after a process restart, cleanup on drop — and expands
//! [`store_conformance_suite!`](crate::store_conformance_suite) once in a test target: one
//! `#[test]` per case, named `<provider>::<case>`, so a failure names its rule.
//!
//! ```
//! use leasehold::testing::{self, Harness};
//!
//! // A provider's harness; here the memory provider stands in for one's own backend.
//! fn my_store() -> Box<dyn Harness> {
//!     Box::new(testing::MemoryHarness::new())
//! }
//!
//! // In a test target (`tests/conformance.rs`): `my_store::<case>`, one test per case.
//! leasehold::store_conformance_suite!(my_store => crate::my_store);
//! # fn main() {}
//! ```
//!
//! Enable the feature for tests only:
//! `[dev-dependencies] leasehold = { version = "…", features = ["testing"] }`.
//!
//! The cases assert and unwrap: a failed expectation is a failed test.

// A case's whole job is to assert; an unwrap states "this call must succeed here".
#![allow(
    clippy::unwrap_used,
    clippy::missing_panics_doc,
    reason = "the suite's cases are tests: a failed expectation panics"
)]

pub mod attempt_errors;
pub mod capabilities;
pub mod chain;
pub mod compat_sets;
pub mod copy;
pub mod dead_letters;
pub mod events;
pub mod fair_claims;
pub mod handler_control;
pub mod horizon;
pub mod incidents;
pub mod keys;
pub mod leases;
pub mod published;
pub mod reads;
pub mod registry;
pub mod release;
pub mod replay;
pub mod retention;
pub mod schedule_control;
pub mod schedules;
pub mod work;
pub mod work_checkpoints;
pub mod work_claims;
pub mod work_enqueue;
pub mod work_fencing;

mod suite;

use std::fmt::Debug;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::clock::{ManualClock, Millis};
use crate::ids::SeededIds;
use crate::store::Store;
use crate::store::memory::MemoryBackend;

#[cfg(doc)]
use crate::store::Backend;

/// Where every manual clock starts: a whole second plus 250 ms, so interval boundaries
/// (epoch-aligned multiples of whole seconds) are never "now" by accident.
pub const BASE: Millis = 1_700_000_000_000;
/// [`BASE`] plus 250 ms: where a harness's clock starts.
pub const START: Millis = BASE + 250;

/// The compatibility digest of "this build" and of another, incompatible one.
pub const K: &str = "compat-this-build";
/// See [`K`].
pub const K_OTHER: &str = "compat-other-build";

/// A provider under test: fresh store, injected clock and ids, reopen, cleanup on drop.
pub trait Harness: Send + Sync {
    /// `memory`, `sqlite`, …
    fn provider(&self) -> &'static str;
    /// The injected clock every handle of this harness reads.
    fn clock(&self) -> &ManualClock;
    /// The primary handle (cheap: clones share the provider connection).
    fn store(&self) -> Store;
    /// A new handle as after a process restart: for SQLite a new connection over the same
    /// file; for memory a new `Store` over the same `MemoryBackend`. Each call has its own
    /// seeded id source (see [`next_seed`]), so tokens never repeat across handles.
    fn reopen(&self) -> Store;
}

/// A seed no other handle of this process was given: ids and tokens never repeat across
/// the handles of one harness, nor across harnesses.
pub fn next_seed() -> u64 {
    static SEED: AtomicU64 = AtomicU64::new(0x5eed);
    SEED.fetch_add(1, Ordering::Relaxed)
}

/// The memory provider: the semantic reference, and the model of a harness.
pub struct MemoryHarness {
    backend: MemoryBackend,
    clock: ManualClock,
    primary: Store,
}

impl MemoryHarness {
    /// A fresh memory store on a clock at [`START`].
    pub fn new() -> Self {
        let backend = MemoryBackend::new();
        let clock = ManualClock::new(START);
        let primary = Store::new(
            Arc::new(backend.clone()),
            Arc::new(clock.clone()),
            Arc::new(SeededIds::new(next_seed())),
        );
        MemoryHarness {
            backend,
            clock,
            primary,
        }
    }
}

impl Default for MemoryHarness {
    fn default() -> Self {
        Self::new()
    }
}

impl Harness for MemoryHarness {
    fn provider(&self) -> &'static str {
        "memory"
    }

    fn clock(&self) -> &ManualClock {
        &self.clock
    }

    fn store(&self) -> Store {
        self.primary.clone()
    }

    fn reopen(&self) -> Store {
        Store::new(
            Arc::new(self.backend.clone()),
            Arc::new(self.clock.clone()),
            Arc::new(SeededIds::new(next_seed())),
        )
    }
}

/// The stable code of a refusal; panics (naming `what`) when the call succeeded or the
/// error text spans lines.
#[track_caller]
pub fn refused<T: Debug>(what: &str, result: crate::Result<T>) -> &'static str {
    match result {
        Ok(v) => panic!("{what}: expected a refusal, got {v:?}"),
        Err(e) => {
            let text = e.to_string();
            assert!(
                !text.contains('\n'),
                "{what}: error text spans lines: {text:?}"
            );
            e.code()
        }
    }
}

/// Unwraps an answer that must be a success, naming `what` when it is not.
#[track_caller]
pub fn ok<T>(what: &str, result: crate::Result<T>) -> T {
    match result {
        Ok(v) => v,
        Err(e) => panic!("{what}: expected success, got {} ({e})", e.code()),
    }
}

/// Runs `op` again while the store reports physical contention (the only retryable store
/// failure a caller may see), counting the retries in `contention`.
///
/// # Errors
/// The first answer of `op` that is not contention.
pub fn retry_contention<T>(
    contention: &AtomicU64,
    mut op: impl FnMut() -> crate::Result<T>,
) -> crate::Result<T> {
    loop {
        match op() {
            Err(e) if e.code() == "STORE_CONTENTION" => {
                contention.fetch_add(1, Ordering::Relaxed);
            }
            other => return other,
        }
    }
}
