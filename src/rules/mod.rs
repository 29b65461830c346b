//! The coordination rules as pure functions: current row + request + `now` → new row or a
//! refusal. No I/O, no clock reads, no async. Every store provider runs these same
//! functions inside its write transaction, which is why memory, SQLite and PostgreSQL
//! agree by construction and the conformance suite only has to prove the plumbing.

pub mod cursor;
pub mod dedup;
pub mod handler;
pub mod lateness;
pub mod lease;
pub mod liveness;
pub mod retry;
pub mod schedule;
pub mod triage;
pub mod work;
