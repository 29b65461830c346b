//! Handler limits: one poll never claims a limited handler past its free slots, and a running
//! authority never runs more of it at once, on every provider.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use leasehold::authority::{
    AttemptContext, AuthorityConfig, AuthorityCore, Finished, HandlerOutcome, Pace, Workload,
    run_authority,
};
use leasehold::clock::ManualClock;
use leasehold::model::WorkState;
use leasehold::model::work::NewWork;

use crate::support::wait::within;

use crate::support::runtime::{RUNNING, T0, compat, config, store, work_in};

/// An authority with a handler limit never claims that handler past its free slots: the
/// other handlers' items take the rest of the workers, and a finished item frees exactly
/// one slot.
#[test]
fn a_handler_limit_caps_what_one_poll_claims_of_that_handler() {
    let clock = ManualClock::new(T0);
    let s = store(&clock);
    let c = compat();
    let items: Vec<NewWork> = (0..4)
        .flat_map(|i| {
            [
                NewWork::effect(format!("slow-{i}"), "slow", "{}"),
                NewWork::effect(format!("fast-{i}"), "fast", "{}"),
            ]
        })
        .collect();
    s.enqueue_batch(items, &c).expect("enqueues");
    let ok = |_: &AttemptContext| HandlerOutcome::Succeeded(None);
    let handlers = Workload::new("limited", 1)
        .with("slow", ok)
        .with("fast", ok);
    let cfg = AuthorityConfig {
        worker_concurrency: 4,
        ..config("a").with_handler_limit("slow", 1)
    };
    let a = AuthorityCore::new(s.clone(), cfg, handlers, Pace::Virtual).expect("a");
    let handler_of = |job: &leasehold::authority::Job| match &job.task {
        leasehold::authority::Task::Work(item) => item.handler.clone(),
        leasehold::authority::Task::Workflow(_) => "workflow".into(),
    };
    let first = a.poll().expect("polls");
    let slow: Vec<_> = first.iter().filter(|j| handler_of(j) == "slow").collect();
    assert_eq!((first.len(), slow.len()), (4, 1), "one slow, three fast");
    for job in first.iter().filter(|j| handler_of(j) == "fast") {
        assert_eq!(a.finish(a.execute(job)), Finished::Completed);
    }
    let second = a.poll().expect("polls");
    assert!(
        second.iter().all(|j| handler_of(j) == "fast"),
        "the slow slot is still taken"
    );
    assert_eq!(second.len(), 1, "the last fast item");
    assert_eq!(a.finish(a.execute(slow[0])), Finished::Completed);
    let third = a.poll().expect("polls");
    assert_eq!(
        third.iter().filter(|j| handler_of(j) == "slow").count(),
        1,
        "a finished slow item frees one slot"
    );
}

/// A running authority never runs more items of a limited handler at once than its limit,
/// on every provider, while the rest of its workers drain the other handler. The store is
/// opened and watched outside the authority's runtime (a blocking client cannot be driven
/// from inside one).
fn a_running_authority_respects_its_handler_limit(harness: &dyn crate::support::Harness) {
    const EACH: usize = 24;
    let s = harness.store();
    let digest = compat();
    let items: Vec<NewWork> = (0..EACH)
        .flat_map(|i| {
            [
                NewWork::effect(format!("slow-{i:02}"), "slow", "{}"),
                NewWork::effect(format!("fast-{i:02}"), "fast", "{}"),
            ]
        })
        .collect();
    s.enqueue_batch(items, &digest).expect("enqueues");
    let running = Arc::new(AtomicUsize::new(0));
    let most = Arc::new(AtomicUsize::new(0));
    let (now_running, high_water) = (running.clone(), most.clone());
    let handlers = Workload::new("limited", 1)
        .with("slow", move |_: &AttemptContext| {
            let now = now_running.fetch_add(1, Ordering::SeqCst) + 1;
            high_water.fetch_max(now, Ordering::SeqCst);
            // Long enough that the workers overlap if the limit let them.
            std::thread::sleep(Duration::from_millis(5));
            now_running.fetch_sub(1, Ordering::SeqCst);
            HandlerOutcome::Succeeded(None)
        })
        .with("fast", |_: &AttemptContext| HandlerOutcome::Succeeded(None));
    let cfg = AuthorityConfig {
        worker_concurrency: 8,
        ..config("limited").with_handler_limit("slow", 2)
    };
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let store = s.clone();
    let authority = std::thread::spawn(move || {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("a runtime")
            .block_on(run_authority(store, cfg, handlers, None, async move {
                let _ = stop_rx.await;
            }))
    });
    crate::support::wait::wait_until("every item to succeed", within(RUNNING), || {
        work_in(&s, WorkState::Succeeded).len() == 2 * EACH
    });
    let _ = stop_tx.send(());
    authority.join().expect("joins").expect("runs");
    let most = most.load(Ordering::SeqCst);
    assert!((1..=2).contains(&most), "{most} slow items ran at once");
}

#[test]
fn a_running_authority_respects_its_handler_limit_on_memory() {
    a_running_authority_respects_its_handler_limit(&*crate::support::memory());
}

#[test]
fn a_running_authority_respects_its_handler_limit_on_sqlite() {
    a_running_authority_respects_its_handler_limit(&*crate::support::sqlite());
}

#[cfg(feature = "postgres")]
#[test]
fn a_running_authority_respects_its_handler_limit_on_postgres() {
    a_running_authority_respects_its_handler_limit(&*crate::support::postgres());
}
