//! What only the Postgres provider has to prove (the shared suites run in `store.rs` and
//! `workflows.rs`): opening and recognising databases, secrets kept out of every text, a
//! commit whose answer is lost (`postgres/lost_answer.rs`, through a relay that cuts it), a
//! session killed inside a transaction, and real `leasehold authority` processes riding out
//! SIGKILL, SIGSTOP, killed sessions and a server restart with a clean `leasehold check`.
//!
//! Every test gets a database of its own on the throwaway server of this test binary
//! (`support/postgres.rs`; `LEASEHOLD_TEST_PG_URL` points at an existing server instead);
//! the restart test starts a server of its own.

#![cfg(feature = "postgres")]
#![allow(clippy::unwrap_used)]

#[path = "support/mod.rs"]
mod support;

use leasehold::store::url::{self, OpenMode};

#[path = "postgres/authorities.rs"]
mod authorities;
#[path = "postgres/drain.rs"]
mod drain;
#[path = "postgres/intake.rs"]
mod intake;
#[path = "postgres/lock_wait.rs"]
mod lock_wait;
#[path = "postgres/lost_answer.rs"]
mod lost_answer;
#[path = "postgres/opening.rs"]
mod opening;
#[path = "postgres/queries.rs"]
mod queries;
#[path = "postgres/rewind.rs"]
mod rewind;
#[path = "postgres/round_trips.rs"]
mod round_trips;
#[path = "postgres/schema.rs"]
mod schema;
#[path = "postgres/server_identity.rs"]
mod server_identity;
#[path = "postgres/sessions.rs"]
mod sessions;
#[path = "postgres/trimmed.rs"]
mod trimmed;
#[path = "postgres/verify.rs"]
mod verify;

fn open_err(url: &str, mode: OpenMode) -> leasehold::Error {
    match url::open(url, mode) {
        Ok(store) => panic!("{url}: expected a refusal, opened {}", store.describe()),
        Err(e) => e,
    }
}
