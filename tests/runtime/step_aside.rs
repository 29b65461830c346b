//! A SQLite authority kept waiting for the write lock by a stalled writer is not behind a
//! queue of claimers, and does not step aside from one: a second connection holds the lock
//! until the store posts the poll's stall (seconds, against the milliseconds the
//! authority's own first poll held it, and nobody else committing meanwhile), and the poll,
//! once granted the lock, claims what is there. An authority that took such a wait for a
//! crowd stood aside at every turn for as long as a stopped process held the lock, and the
//! work of a stopped authority was never taken over.

use std::sync::Arc;
use std::time::Duration;

use leasehold::model::WorkState;
use leasehold::model::work::NewWork;
use leasehold::store::url::OpenMode;

use crate::support::runtime::{compat, solo, sqlite_store, work_in};
use crate::support::wait::{wait_until, within};

#[test]
fn a_sqlite_authority_kept_waiting_by_a_stalled_writer_claims_at_its_turn() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (s, path) = sqlite_store(&dir);
    let core = Arc::new(solo(&s, 4));
    let enqueue = |from: usize| {
        let items = (from..from + 4)
            .map(|i| NewWork::effect(format!("e{i}"), "send-email", "{}"))
            .collect();
        s.enqueue_batch(items, &compat()).expect("enqueues");
    };

    // First turns with nobody ahead: they give the authority holds of its own to read later
    // waits by, and nothing is left in hand.
    enqueue(0);
    let mut claimed = 0;
    wait_until(
        "the first items to be claimed",
        within(Duration::from_secs(60)),
        || {
            let jobs = core.poll().expect("polls");
            claimed += jobs.len();
            core.finish_all(jobs.iter().map(|job| core.execute(job)).collect());
            claimed == 4
        },
    );
    let before = core.stats().lock_step_asides;

    enqueue(4);
    let reader = leasehold::store::url::open(&path, OpenMode::ReadOnly).expect("opens");
    let holder = rusqlite::Connection::open(&path).expect("a second connection");
    holder
        .execute_batch("BEGIN IMMEDIATE")
        .expect("takes the write lock");
    let polling = {
        let core = core.clone();
        std::thread::spawn(move || core.poll().expect("polls"))
    };
    wait_until(
        "the poll to wait on the lock past the stall threshold",
        within(Duration::from_secs(60)),
        || !reader.write_stalls().expect("lists").is_empty(),
    );
    holder.execute_batch("ROLLBACK").expect("lets go");
    let jobs = polling.join().expect("the poll returns");
    assert_eq!(jobs.len(), 4, "claimed at its turn after the stall");
    assert_eq!(core.stats().lock_step_asides, before, "no step aside");
    assert!(work_in(&s, WorkState::Pending).is_empty());
    core.finish_all(jobs.iter().map(|job| core.execute(job)).collect());
}
