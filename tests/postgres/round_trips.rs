//! How many round trips a write holds the write lock across. Every statement of a write
//! transaction is time the lock is held while the server waits for the client, so the
//! writes an authority makes all the time — a claim, a batch of completions, a lone
//! enqueue — must send few, whatever their size.

use std::time::Instant;

use leasehold::model::work::NewWork;
use leasehold::rules::retry::Retry;
use leasehold::store::url::{self, OpenMode};
use leasehold::store::witness::Witness;
use leasehold::store::{Completion, RoundTrips, Store};

use crate::support::authorities::{HANDLER, compat, enqueue};
use crate::support::postgres::database;

/// The round trips of the one write `write` makes. The time it held the write lock is
/// counted beside them: some, and no more than the whole call took.
fn round_trips_of(store: &Store, write: impl FnOnce()) -> u64 {
    let before = store.write_round_trips().expect("PostgreSQL counts them");
    let started = Instant::now();
    write();
    let took = started.elapsed();
    let after: RoundTrips = store.write_round_trips().expect("PostgreSQL counts them");
    assert_eq!(after.writes, before.writes + 1, "one write transaction");
    let held = after.held_micros - before.held_micros;
    assert!(
        held > 0 && u128::from(held) <= took.as_micros(),
        "the lock held {held} µs in a call of {took:?}"
    );
    after.round_trips - before.round_trips
}

#[test]
fn a_claim_a_completion_batch_and_an_enqueue_each_send_a_handful_of_statements() {
    let db = database();
    let store = url::open(db.url(), OpenMode::ReadWrite).unwrap();
    enqueue(&store, 300);
    let compat = compat();

    // The lock (with the store's id, the pauses, the next schedule and the waiting
    // instances), the lapsed claims with the lanes and their items, the rows of every
    // table in one statement, the commit.
    let mut claimed = Vec::new();
    let claim = round_trips_of(&store, || {
        claimed = store.claim_batch("rt-1", &compat, 200, 30_000).unwrap();
    });
    assert_eq!(claimed.len(), 200);
    assert!(claim <= 4, "a claim of 200 sent {claim} statements");

    // The lock with the items by id, the rows in one statement, the commit.
    let completions: Vec<_> = claimed
        .iter()
        .map(|w| Completion {
            id: w.id.clone(),
            owner: "rt-1".into(),
            generation: w.generation,
            outcome: Ok(None),
            retry: Retry::default(),
        })
        .collect();
    let complete = round_trips_of(&store, || {
        let done = store.complete_batch(&completions).unwrap();
        assert!(done.iter().all(Result::is_ok));
    });
    assert!(complete <= 3, "200 completions sent {complete} statements");

    // The lock, then the row with the commit.
    let one = round_trips_of(&store, || {
        store
            .enqueue(NewWork::effect("rt-lone", HANDLER, "{}"), &compat)
            .unwrap();
    });
    assert!(one <= 2, "a lone enqueue sent {one} statements");
}

/// An id the server cannot hold (a NUL byte) cannot go with the lock's statement as a
/// literal: the transaction reads the items itself, and the batch fails whole, as it did
/// before the items went with the lock: nothing is committed, no other item of it is
/// touched.
#[test]
fn a_completion_batch_naming_an_impossible_id_fails_whole() {
    let db = database();
    let store = url::open(db.url(), OpenMode::ReadWrite).unwrap();
    enqueue(&store, 1);
    let claimed = store.claim_batch("rt-1", compat(), 1, 30_000).unwrap();
    let completion = |id: &str, generation| Completion {
        id: id.into(),
        owner: "rt-1".into(),
        generation,
        outcome: Ok(None),
        retry: Retry::default(),
    };
    let batch = [
        completion(&claimed[0].id, claimed[0].generation),
        completion("fx-\0", 1),
    ];
    let before = store.revision().unwrap();
    assert!(store.complete_batch(&batch).is_err());
    assert_eq!(store.revision().unwrap(), before, "nothing committed");
    let item = store.work(&claimed[0].id).unwrap().unwrap();
    assert_eq!(item.state, leasehold::model::WorkState::Claimed);
}

/// Every write compares the store with what this host's witness saw last: the chain's link
/// at the revision this process last committed. With several writers on one store that is
/// rarely the newest link, which the lock's statement reads anyway; it is read with the
/// lock too, so a claim behind another writer's commit sends no more than one alone.
#[test]
fn a_write_behind_another_writers_commit_reads_the_witnessed_link_with_the_lock() {
    let db = database();
    let state = tempfile::tempdir().unwrap();
    let plain = url::open(db.url(), OpenMode::ReadWrite).unwrap();
    let witnessed = Witness::open(state.path(), &plain)
        .map(|w| {
            url::open(db.url(), OpenMode::ReadWrite)
                .unwrap()
                .with_witness(w)
        })
        .unwrap();
    enqueue(&witnessed, 300);
    let compat = compat();

    let claim_100 = || {
        round_trips_of(&witnessed, || {
            let claimed = witnessed.claim_batch("rt-1", &compat, 100, 30_000).unwrap();
            assert_eq!(claimed.len(), 100);
        })
    };
    let alone = claim_100();
    // Another writer commits: the newest link is no longer the one this host saw last.
    plain
        .enqueue(NewWork::effect("rt-other", HANDLER, "{}"), &compat)
        .unwrap();
    let behind = claim_100();
    assert_eq!(behind, alone, "a claim behind another writer's commit");
    assert!(witnessed.witness().unwrap().seen().is_some());
}
