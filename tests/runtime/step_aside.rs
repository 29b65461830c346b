//! A SQLite authority that waited long for the write lock behind another writer, with
//! nothing in hand, claims nothing at that turn and stands aside: its polls meanwhile take
//! no turn at all, and once the step aside is over (at most a second) it claims again. The
//! wait is a real one: a second connection holds the lock until the store posts the poll's
//! stall, seconds against the milliseconds the authority's own first poll held it.

use std::sync::Arc;
use std::time::Duration;

use leasehold::model::WorkState;
use leasehold::model::work::NewWork;
use leasehold::store::url::OpenMode;

use crate::support::runtime::{compat, solo, sqlite_store, work_in};
use crate::support::wait::{wait_until, within};

#[test]
fn a_sqlite_authority_that_waited_behind_a_writer_stands_aside_then_claims_again() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (s, path) = sqlite_store(&dir);
    let core = Arc::new(solo(&s, 4));
    let enqueue = |from: usize| {
        let items = (from..from + 4)
            .map(|i| NewWork::effect(format!("e{i}"), "send-email", "{}"))
            .collect();
        s.enqueue_batch(items, &compat()).expect("enqueues");
    };
    // Claims until `n` are taken (a poll standing aside takes none), running and finishing
    // what it claims, so that nothing is left in hand.
    let claim_all = |n: usize| {
        let mut claimed = 0;
        wait_until(
            "the items to be claimed",
            within(Duration::from_secs(60)),
            || {
                let jobs = core.poll().expect("polls");
                claimed += jobs.len();
                core.finish_all(jobs.iter().map(|job| core.execute(job)).collect());
                claimed == n
            },
        );
    };

    // First turns with nobody ahead: they give the authority holds of its own to read later
    // waits by.
    enqueue(0);
    claim_all(4);
    let before = core.stats().lock_step_asides;

    enqueue(4);
    let reader = leasehold::store::url::open(&path, OpenMode::ReadOnly).expect("opens");
    let holder = rusqlite::Connection::open(&path).expect("a second connection");
    holder
        .execute_batch("BEGIN IMMEDIATE")
        .expect("takes the write lock");
    let polling = {
        let core = core.clone();
        std::thread::spawn(move || {
            // Polls until one takes a turn: a poll standing aside returns at once.
            let mut jobs = Vec::new();
            wait_until(
                "a poll to take a turn",
                within(Duration::from_secs(120)),
                || {
                    jobs = core.poll().expect("polls");
                    !jobs.is_empty() || core.stats().lock_step_asides > before
                },
            );
            jobs
        })
    };
    wait_until(
        "the poll to wait on the lock past the stall threshold",
        within(Duration::from_secs(60)),
        || !reader.write_stalls().expect("lists").is_empty(),
    );
    holder.execute_batch("ROLLBACK").expect("lets go");
    let jobs = polling.join().expect("the poll returns");
    assert!(jobs.is_empty(), "claimed behind a long queue: {jobs:?}");
    assert!(core.stats().lock_step_asides > before);
    assert_eq!(
        work_in(&s, WorkState::Pending).len(),
        4,
        "what it did not claim stays claimable"
    );

    // Back within the bound: later polls claim the rest.
    claim_all(4);
}
