//! The Postgres provider of the harness: a store over a database of its own on the test
//! server (`postgres.rs`), dropped with the harness.

use std::sync::Arc;

use leasehold::Store;
use leasehold::clock::ManualClock;
use leasehold::ids::SeededIds;
use leasehold::store::postgres::PostgresBackend;
use leasehold::store::url::OpenMode;

use super::{Harness, START, next_seed, postgres as server};

/// The Postgres provider over a database of its own, dropped with the harness.
pub struct PostgresHarness {
    // Dropped first: the handles close before the database goes.
    primary: Store,
    clock: ManualClock,
    db: server::Database,
}

/// A fresh Postgres store in its own database.
pub fn postgres() -> Box<dyn Harness> {
    Box::new(postgres_harness())
}

/// [`postgres`], typed (for tests that need the database itself).
pub fn postgres_harness() -> PostgresHarness {
    let db = server::database();
    let clock = ManualClock::new(START);
    let primary =
        open_postgres(db.url(), &clock, OpenMode::ReadWrite).expect("open a fresh Postgres store");
    PostgresHarness { primary, clock, db }
}

/// A store over the Postgres database at `url` reading `clock`, with seeded ids.
///
/// # Errors
/// Whatever the provider's open says.
pub fn open_postgres(url: &str, clock: &ManualClock, mode: OpenMode) -> leasehold::Result<Store> {
    let backend = PostgresBackend::open(url, mode)?;
    Ok(Store::new(
        Arc::new(backend),
        Arc::new(clock.clone()),
        Arc::new(SeededIds::new(next_seed())),
    ))
}

impl PostgresHarness {
    pub fn database(&self) -> &server::Database {
        &self.db
    }
}

impl Harness for PostgresHarness {
    fn provider(&self) -> &'static str {
        "postgres"
    }

    fn clock(&self) -> &ManualClock {
        &self.clock
    }

    fn store(&self) -> Store {
        self.primary.clone()
    }

    fn reopen(&self) -> Store {
        open_postgres(self.db.url(), &self.clock, OpenMode::ReadWrite)
            .expect("reopen the Postgres store")
    }
}
