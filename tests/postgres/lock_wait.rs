//! A writer that queues behind another session holding the store's write lock (its
//! advisory lock) for longer than the lease it asks for is granted a lease that outlives
//! the wait.

use std::sync::Mutex;

use leasehold::clock::ManualClock;
use leasehold::store::url::OpenMode;

use crate::support::lock_wait::grants_outlive_a_lock_wait_longer_than_the_lease;
use crate::support::postgres::database;
use crate::support::{START, open_postgres};

/// The store's write lock, as a session takes it.
const TAKE_WRITE_LOCK: &str = "BEGIN; SELECT pg_advisory_xact_lock(7810756276994469740)";

#[test]
fn a_grant_after_a_postgres_lock_wait_longer_than_the_lease_is_not_already_expired() {
    let db = database();
    let clock = ManualClock::new(START);
    let store = open_postgres(db.url(), &clock, OpenMode::ReadWrite).unwrap();
    let watcher = Mutex::new(postgres::Client::connect(db.url(), postgres::NoTls).unwrap());
    let url = db.url().to_owned();
    grants_outlive_a_lock_wait_longer_than_the_lease(
        &store,
        &clock,
        move || {
            let mut holder = postgres::Client::connect(&url, postgres::NoTls).unwrap();
            holder.batch_execute(TAKE_WRITE_LOCK).unwrap();
            Box::new(move || holder.batch_execute("COMMIT").unwrap())
        },
        // Both calls wait on the advisory lock (each on a pooled session of its own).
        || {
            let row = watcher
                .lock()
                .unwrap()
                .query_one(
                    "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted",
                    &[],
                )
                .unwrap();
            row.get::<_, i64>(0) >= 2
        },
    );
}
