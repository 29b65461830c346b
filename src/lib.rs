//! # leasehold
//!
//! Leased, fenced durable work — and the terminal dashboard that watches it.
//!
//! N authority processes share one work store and execute outbox effects, schedule
//! firings, subscription cursors and durable workflows. Each item is owned by exactly one
//! authority at a time through a lease with a fencing generation: a stale owner that wakes
//! up after a takeover can never commit.
//!
//! ## Put your own work on it
//!
//! An application embeds an [`authority::Authority`]: a store, an instance id and the
//! knobs ([`authority::AuthorityConfig`]), and its handlers registered by name and semantic
//! version. Handlers are `async` functions of one [`authority::Attempt`]: the item's ids
//! and payload, its idempotency key (the same on every retry and after every failover),
//! the attempt number and claim generation, the checkpoint an earlier attempt saved, and a
//! lease-lost signal. The runtime renews the claim while a handler runs, however long; a
//! handler that panics has failed, retryably: its attempt is recorded as
//! `HANDLER_PANICKED` with the panic's message and retried under the same key.
//!
//! ```no_run
//! use leasehold::authority::{Attempt, Authority, AuthorityConfig, HandlerOutcome};
//! use leasehold::model::work::NewWork;
//! use leasehold::store::url::{OpenMode, open};
//!
//! async fn send_email(attempt: Attempt) -> HandlerOutcome {
//!     // Call the mail provider, passing `attempt.idempotency_key` so a retry never sends
//!     // twice; stop early if `attempt.lease_lost()` resolves.
//!     HandlerOutcome::Succeeded(None)
//! }
//!
//! # async fn run() -> leasehold::Result<()> {
//! // Store calls block: from async code, run them on the blocking pool. `ReadWrite` creates
//! // the store on a service's first start; `OpenMode::Existing` refuses a missing one.
//! let store = tokio::task::spawn_blocking(|| open("app.db", OpenMode::ReadWrite))
//!     .await
//!     .expect("joined")?;
//! let authority = Authority::builder(store.clone(), AuthorityConfig::new("app-1", "v1"))
//!     .handler("send-email", "1.0.0", send_email)
//!     .start()
//!     .await?;
//!
//! // The producer side is one call on the store per intent, stamped with the key of the
//! // handler's version (a compatible release of it claims the work, a major bump does not).
//! // A payload that is not JSON, or a handler this authority does not register, is refused.
//! let versions = authority.handler_versions();
//! let email = NewWork::effect("welcome:42", "send-email", r#"{"to":"ana@example.com"}"#);
//! tokio::task::spawn_blocking(move || store.enqueue(email, &versions))
//!     .await
//!     .expect("joined")?;
//!
//! // Readiness and liveness for the host's probes; a graceful stop on SIGTERM.
//! assert!(authority.health().ready);
//! authority.shutdown().await?;
//! # Ok(())
//! # }
//! ```
//!
//! A handler may have its own retry policy, given with its config
//! ([`authority::AuthorityConfig::with_retry`] and a [`authority::RetryPolicy`]: the first
//! wait, a multiplier, the longest wait, and a cap that lowers its items' attempt budget);
//! a handler without one retries at 500 ms doubling to 30 s. The errors of an item's last
//! attempts are kept with it ([`Store::attempt_errors`]).
//!
//! The producer calls are [`Store::enqueue`] (an effect, with its idempotency key, delay
//! and attempt budget), [`Store::create_schedule`] / [`Store::update_schedule`],
//! [`Store::ingest`] (an event, deduplicated on its source and external id),
//! [`Store::start_workflow`] and [`Store::cancel_workflow`]. Handlers in other languages
//! run through `leasehold authority --config handlers.toml` (`docs/HANDLERS.md`).
//! `examples/embedded_service.rs` is a whole service built this way.
//!
//! ## Layout
//! - [`clock`], [`ids`], [`error`]: injected time and ids (and the rule every identifier
//!   from outside obeys), the error vocabulary; [`foundation`]: small helpers that know
//!   nothing of the domain.
//! - [`model`]: plain data (leases, work items, events, cursors, schedules, authorities,
//!   handler versions and compatibility keys).
//! - [`rules`]: the coordination rules as pure functions over that data, and the
//!   judgements every reader shares (liveness, lateness, triage verdicts).
//! - [`store`]: the store API written once over a provider seam, the providers (memory,
//!   SQLite, PostgreSQL), and the copy of a whole store from one provider to another.
//! - [`workflow`]: durable workflow definitions, validation, fingerprint, engine.
//! - [`authority`], [`cluster`], [`check`]: the runtime, the embedded cluster, the checker.
//! - [`ops`]: what operators are told (failovers, fenced writes, filters, attention),
//!   defined once for the dashboard and the command line.
//! - `tui`, `cli`, `bench`: the dashboard, the command line, the benchmarks (the features
//!   `tui` and `cli`, both default; an application embedding the library leaves them out).
//! - `testing`: the store conformance suite, for a provider of one's own (the feature
//!   `testing`).

pub mod authority;
#[cfg(feature = "cli")]
pub mod bench;
pub mod canonical;
pub mod check;
#[cfg(feature = "cli")]
pub mod cli;
pub mod clock;
pub mod cluster;
pub mod error;
pub mod foundation;
pub mod ids;
pub mod model;
pub mod ops;
pub mod rules;
pub mod store;
#[cfg(feature = "testing")]
pub mod testing;
#[cfg(feature = "tui")]
pub mod tui;
pub mod workflow;

pub use error::{Error, Result};
pub use store::Store;
