//! Drain throughput, a measurement run by hand (`--ignored`).

use std::time::Instant;

use leasehold::store::url::{self, OpenMode};

use crate::support::authorities::{compat, enqueue};
use crate::support::postgres::{Server, database};

// --- measurement -----------------------------------------------------------------------------

/// Drain throughput: `LEASEHOLD_DRAIN_ITEMS` (20,000) effects claimed in batches of
/// `LEASEHOLD_DRAIN_BATCH` (64) and group-committed by `LEASEHOLD_DRAIN_THREADS` (4)
/// workers, on a server of its own with its data on disk (or on the server
/// `LEASEHOLD_TEST_PG_URL` names). A measurement, not a pass/fail bar: run it with
/// `cargo test --release --test postgres drain -- --ignored --nocapture`.
#[test]
#[ignore = "a measurement; run explicitly"]
fn drain_throughput() {
    let env = |name: &str, default: usize| {
        std::env::var(name)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    };
    let items = env("LEASEHOLD_DRAIN_ITEMS", 20_000);
    let threads = env("LEASEHOLD_DRAIN_THREADS", 4);
    let batch = env("LEASEHOLD_DRAIN_BATCH", 64);
    // An existing server when one is named, else one of our own with its data on disk.
    let server = std::env::var_os(crate::support::postgres::URL_VAR)
        .is_none()
        .then(Server::start_on_disk);
    let db = server.as_ref().map_or_else(database, Server::database);
    let store = url::open(db.url(), OpenMode::ReadWrite).unwrap();
    let started = Instant::now();
    enqueue(&store, items);
    eprintln!(
        "postgres enqueue: {items} items in batches of 500: {:.2?}, {:.0} items/s",
        started.elapsed(),
        items as f64 / started.elapsed().as_secs_f64()
    );
    let compat = compat();
    let started = Instant::now();
    let workers: Vec<_> = (0..threads)
        .map(|t| {
            let (store, compat) = (store.clone(), compat.clone());
            std::thread::spawn(move || {
                let owner = format!("drain-{t}");
                let mut done = 0usize;
                loop {
                    let claimed = store.claim_batch(&owner, &compat, batch, 30_000).unwrap();
                    if claimed.is_empty() {
                        return done;
                    }
                    let completions: Vec<_> = claimed
                        .iter()
                        .map(|w| leasehold::store::Completion {
                            id: w.id.clone(),
                            owner: owner.clone(),
                            generation: w.generation,
                            outcome: Ok(None),
                            retry: leasehold::rules::retry::Retry::default(),
                        })
                        .collect();
                    let results = store.complete_batch(&completions).unwrap();
                    done += results.iter().filter(|r| r.is_ok()).count();
                }
            })
        })
        .collect();
    let done: usize = workers.into_iter().map(|w| w.join().unwrap()).sum();
    let elapsed = started.elapsed();
    assert_eq!(done, items);
    eprintln!(
        "postgres drain: {items} items, {threads} threads, batch {batch}: {:.2?}, {:.0} items/s",
        elapsed,
        items as f64 / elapsed.as_secs_f64()
    );
    drop(store);
    drop(db);
}
