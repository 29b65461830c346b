//! A writer that queues behind another connection's `BEGIN IMMEDIATE` for longer than the
//! lease it asks for is granted a lease that outlives the wait.

use leasehold::clock::ManualClock;
use leasehold::store::url::OpenMode;

use crate::support::lock_wait::grants_outlive_a_lock_wait_longer_than_the_lease;
use crate::support::{START, open_sqlite};

#[test]
fn a_grant_after_a_sqlite_lock_wait_longer_than_the_lease_is_not_already_expired() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.db");
    let clock = ManualClock::new(START);
    let store = open_sqlite(&path, &clock, OpenMode::ReadWrite).unwrap();
    let outside = path.clone();
    grants_outlive_a_lock_wait_longer_than_the_lease(
        &store,
        &clock,
        move || {
            let conn = rusqlite::Connection::open(&outside).unwrap();
            conn.execute_batch("BEGIN IMMEDIATE").unwrap();
            Box::new(move || conn.execute_batch("COMMIT").unwrap())
        },
        // A writer waiting past the stall bound posts a stall file beside the store.
        || !store.write_stalls().unwrap().is_empty(),
    );
}
