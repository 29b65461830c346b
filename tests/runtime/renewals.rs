//! Renewals keep their cadence however busy the authority is: a stream of finished
//! handlers must not hold back the renewal of a long attempt (the loop serves renewals
//! before the work), and one renewal round is one transaction for every item held.

use leasehold::authority::{
    AttemptContext, AuthorityConfig, HandlerOutcome, Workload, run_authority,
};
use leasehold::clock::ManualClock;
use leasehold::model::WorkState;
use leasehold::model::work::NewWork;
use leasehold::store::Store;

use crate::support::runtime::{Gate, RUNNING, T0, compat, config, store, work_in};
use crate::support::wait::{wait_until_async, within};

/// Accepted renewals of `id` recorded by the store, and the revisions they committed at.
fn renewals(s: &Store, id: &str) -> Vec<u64> {
    let (_, writes) = s
        .ownership_history(Some(id), 0, 1_000_000)
        .expect("the history reads");
    writes
        .iter()
        .filter(|w| w.verb == "renew" && w.accepted)
        .map(|w| w.revision)
        .collect()
}

/// One long attempt held open while thousands of instant ones stream through the other
/// slots: every turn of the loop finds a finished handler to record, and the renewals of
/// the long attempt must still come at their cadence, before the stream has drained.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_of_finished_handlers_never_holds_back_a_renewal() {
    const FAST: usize = 6_000;
    let clock = ManualClock::new(T0);
    let s = store(&clock);
    let items: Vec<NewWork> = std::iter::once(NewWork::effect("long", "long", "{}"))
        .chain((0..FAST).map(|i| NewWork::effect(format!("fast-{i:05}"), "fast", "{}")))
        .collect();
    s.enqueue_batch(items, &compat()).expect("enqueues");
    let gate = Gate::default();
    let _open_on_exit = gate.open_on_drop();
    let held = gate.clone();
    let handlers = Workload::new("long-and-fast", 1)
        .with("long", move |_: &AttemptContext| {
            held.wait();
            HandlerOutcome::Succeeded(None)
        })
        .with("fast", |_: &AttemptContext| HandlerOutcome::Succeeded(None));
    let cfg = AuthorityConfig {
        worker_concurrency: 16,
        claim_batch_size: 16,
        renew_interval_ms: 5,
        ..config("busy")
    };
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let runtime = tokio::spawn(run_authority(s.clone(), cfg, handlers, None, async move {
        let _ = stop_rx.await;
    }));
    let fast_done = || {
        work_in(&s, WorkState::Succeeded)
            .iter()
            .filter(|w| w.handler == "fast")
            .count()
    };
    wait_until_async("the long attempt to be renewed", within(RUNNING), || {
        !renewals(&s, "long").is_empty()
    })
    .await;
    let done = fast_done();
    assert!(
        done < FAST,
        "the first renewal of the long attempt came only after the whole stream of {FAST} \
         had been recorded ({done} done): renewals waited behind finished handlers"
    );
    gate.open();
    wait_until_async("everything to succeed", within(RUNNING), || {
        fast_done() == FAST && work_in(&s, WorkState::Succeeded).len() == FAST + 1
    })
    .await;
    let _ = stop_tx.send(());
    runtime.await.expect("joins").expect("runs");
}

/// A renewal round renews every held item in one transaction: the renewals of one round
/// share one revision.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_renewal_round_is_one_transaction_for_every_item_held() {
    const HELD: usize = 8;
    let clock = ManualClock::new(T0);
    let s = store(&clock);
    let items: Vec<NewWork> = (0..HELD)
        .map(|i| NewWork::effect(format!("held-{i}"), "long", "{}"))
        .collect();
    s.enqueue_batch(items, &compat()).expect("enqueues");
    let gate = Gate::default();
    let _open_on_exit = gate.open_on_drop();
    let held = gate.clone();
    let handlers = Workload::new("long", 1).with("long", move |_: &AttemptContext| {
        held.wait();
        HandlerOutcome::Succeeded(None)
    });
    let cfg = AuthorityConfig {
        worker_concurrency: HELD,
        ..config("holder")
    };
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let runtime = tokio::spawn(run_authority(s.clone(), cfg, handlers, None, async move {
        let _ = stop_rx.await;
    }));
    wait_until_async("every held item to be renewed", within(RUNNING), || {
        (0..HELD).all(|i| !renewals(&s, &format!("held-{i}")).is_empty())
    })
    .await;
    let first: Vec<u64> = (0..HELD)
        .map(|i| renewals(&s, &format!("held-{i}"))[0])
        .collect();
    assert!(
        first.iter().all(|r| *r == first[0]),
        "the first renewals of the {HELD} held items committed at revisions {first:?}: one \
         transaction each, not one for the round"
    );
    gate.open();
    wait_until_async("the held items to succeed", within(RUNNING), || {
        work_in(&s, WorkState::Succeeded).len() == HELD
    })
    .await;
    let _ = stop_tx.send(());
    runtime.await.expect("joins").expect("runs");
}
