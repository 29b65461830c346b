//! An authority stops by itself when its instance id is taken over, when an operator forgot
//! it, or when its store cannot be trusted.

use std::time::Duration;

use leasehold::Store;
use leasehold::authority::workload::{self, EFFECT_HANDLERS};
use leasehold::authority::{RunOptions, run_authority_with};
use leasehold::clock::{Clock, ManualClock};
use leasehold::model::work::NewWork;
use leasehold::model::{PageRequest, WorkState};

use crate::support::wait::{wait_until_async, within};

use crate::support::runtime::{RUNNING, T0, compat, config, store, work_in};

/// Runs one authority on `s` until it stops by itself, after `meanwhile` acted on its
/// registration (passed in) while it read as gone; returns how it ended.
async fn run_until_it_steps_down(
    clock: &ManualClock,
    s: &Store,
    mut meanwhile: impl FnMut(&leasehold::model::Authority) -> leasehold::Result<()>,
) -> leasehold::Result<leasehold::authority::Stats> {
    let cfg = config("a-dup");
    let lease = cfg.lease_duration_ms;
    let run = tokio::spawn(run_authority_with(
        s.clone(),
        cfg,
        workload::named("fast", 1).expect("fast"),
        RunOptions::default(),
        std::future::pending::<()>(),
    ));
    wait_until_async("the registration", within(RUNNING), || {
        registration(s).is_some()
    })
    .await;
    // Past its lease on the store's clock it reads as gone (as if it had been paused). A
    // heartbeat landing in between makes it live again: then move on another lease.
    loop {
        clock.advance(lease + 1);
        match meanwhile(&registration(s).expect("registered")) {
            Err(e) if e.code() == "INSTANCE_IN_USE" => {}
            done => break done.expect("acts on a gone registration"),
        }
    }
    tokio::time::timeout(Duration::from_secs(60), run)
        .await
        .expect("the authority stops by itself")
        .expect("joins")
}

fn registration(s: &Store) -> Option<leasehold::model::Authority> {
    s.list_authorities(&PageRequest::first(10))
        .expect("lists")
        .rows
        .into_iter()
        .find(|a| a.instance_id == "a-dup")
}

/// An authority whose registration another start of its instance id took over stops at
/// its next heartbeat instead of overwriting the new holder's row.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_authority_whose_id_was_taken_over_stops() {
    let clock = ManualClock::new(T0);
    let s = store(&clock);
    let mut second = None;
    let outcome = run_until_it_steps_down(&clock, &s, |first| {
        let takeover = leasehold::model::Authority {
            pid: first.pid.wrapping_add(1),
            started_at: clock.now(),
            heartbeat_at: clock.now(),
            ..first.clone()
        };
        s.register_authority(&takeover)?;
        second = Some(takeover);
        Ok(())
    })
    .await;
    assert_eq!(
        outcome.expect_err("superseded").code(),
        "INSTANCE_SUPERSEDED"
    );
    assert_eq!(
        registration(&s),
        second,
        "the new holder's row is untouched"
    );
}

/// An authority an operator forgot while it read as gone stops instead of working unseen.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forgotten_authority_stops() {
    let clock = ManualClock::new(T0);
    let s = store(&clock);
    let outcome = run_until_it_steps_down(&clock, &s, |_| {
        s.forget_authority("a-dup", "ops@box", "").map(|_| ())
    })
    .await;
    assert_eq!(outcome.expect_err("forgotten").code(), "REGISTRATION_LOST");
    assert_eq!(registration(&s), None, "not registered again");
}

/// A store that cannot be trusted stops the authority: once a write finds the store damaged
/// (here a table dropped under it), the runtime stops claiming, logs it and returns that
/// error (the binary exits non-zero), and no write goes through its handle afterwards.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_untrusted_store_stops_the_authority_with_the_reason() {
    let clock = ManualClock::new(T0);
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("s.db");
    let s = crate::support::open_sqlite(&path, &clock, leasehold::store::url::OpenMode::ReadWrite)
        .expect("creates");
    let c = compat();
    let effects = (0..10)
        .map(|i| NewWork::effect(format!("fx-{i}"), EFFECT_HANDLERS[0], "{}"))
        .collect::<Vec<_>>();
    s.enqueue_batch(effects, &c).expect("enqueues");
    let runtime = tokio::spawn(run_authority_with(
        s.clone(),
        config("solo"),
        workload::named("fast", 1).expect("fast"),
        RunOptions::default(),
        std::future::pending::<()>(),
    ));
    wait_until_async("the first items to finish", within(RUNNING), || {
        work_in(&s, WorkState::Succeeded).len() == 10
    })
    .await;
    rusqlite::Connection::open(&path)
        .expect("opens")
        .execute_batch("DROP TABLE grants")
        .expect("drops");
    // The authority's next write (a heartbeat, a poll) links its commit to the history,
    // which reads the dropped table, and finds the damage.

    let stopped = tokio::time::timeout(RUNNING, runtime)
        .await
        .expect("the authority stops by itself")
        .expect("joins");
    let err = stopped.expect_err("an untrusted store is an error");
    assert_eq!(err.code(), "STORE_CORRUPT", "{err}");
    assert!(err.to_string().contains("grants"), "{err}");
    assert!(
        work_in(&s, WorkState::Claimed).is_empty(),
        "nothing was claimed"
    );
}
