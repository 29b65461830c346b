//! # leasehold
//!
//! Leased, fenced durable work — and the terminal dashboard that watches it.
//!
//! N authority processes share one work store and execute outbox effects, schedule
//! firings, subscription cursors and durable workflows. Each item is owned by exactly one
//! authority at a time through a lease with a fencing generation: a stale owner that wakes
//! up after a takeover can never commit.
//!
//! ## Layout
//! - [`clock`], [`ids`], [`error`]: injected time and ids (and the rule every identifier
//!   from outside obeys), the error vocabulary.
//! - [`model`]: plain data (leases, work items, events, cursors, schedules, authorities).
//! - [`rules`]: the coordination rules as pure functions over that data.
//! - [`store`]: the store API written once over a provider seam, the providers (memory,
//!   SQLite, PostgreSQL), and the copy of a whole store from one provider to another.
//! - [`workflow`]: durable workflow definitions, validation, fingerprint, engine.
//! - [`authority`], [`cluster`], [`check`]: the runtime, the embedded cluster, the checker.
//! - [`ops`]: what operators are told (liveness, failovers, fenced writes, filters), defined
//!   once for the dashboard and the command line.
//! - [`tui`], [`cli`], [`mod@bench`]: the dashboard, the command line, the benchmarks.

pub mod authority;
pub mod bench;
pub mod build_key;
pub mod canonical;
pub mod check;
pub mod cli;
pub mod clock;
pub mod cluster;
pub mod error;
pub mod ids;
pub mod model;
pub mod ops;
pub mod progress;
pub mod rules;
pub mod store;
pub mod tui;
pub mod workflow;

pub use error::{Error, Result};
pub use store::Store;
