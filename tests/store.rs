//! The store conformance suite (`leasehold::testing`, written once and run unchanged on every
//! provider) on the memory, SQLite and PostgreSQL providers: `store_conformance_suite!`
//! expands one `#[test]` per case and provider, so `cargo test --test store` shows
//! `memory::<case>`, `sqlite::<case>` and `postgres::<case>` side by side and a failure names
//! its rule and its provider.
//!
//! Also here: the property-based state-machine test against an independent shadow model
//! (`model`), the SQLite bad-input tests (`bad_input`), and what an authority makes of a
//! store without the work model (`capabilities`).

#![allow(clippy::unwrap_used)]

#[macro_use]
#[path = "support/mod.rs"]
mod support;

#[path = "store/bad_input.rs"]
mod bad_input;
#[path = "store/capabilities.rs"]
mod capabilities;
#[path = "store/hostile_ids.rs"]
mod hostile_ids;
#[path = "store/lock_wait.rs"]
mod lock_wait;
#[path = "store/malformed_work.rs"]
mod malformed_work;
#[path = "store/model.rs"]
mod model;
#[path = "store/rewind.rs"]
mod rewind;
#[path = "store/trimmed.rs"]
mod trimmed;
#[path = "store/unknown_outcomes.rs"]
mod unknown_outcomes;

leasehold::store_conformance_suite!(memory => crate::support::memory);
leasehold::store_conformance_suite!(sqlite => crate::support::sqlite);
#[cfg(feature = "postgres")]
leasehold::store_conformance_suite!(postgres => crate::support::postgres);
