//! A handler's share of an authority's slots follows what it occupies, not how often it is
//! claimed: while a slow handler's attempts hold their slots, the free ones go to a fast
//! handler's backlog, so that backlog drains at its own pace.

use leasehold::authority::{
    AttemptContext, AuthorityConfig, HandlerOutcome, Workload, run_authority,
};
use leasehold::clock::ManualClock;
use leasehold::model::WorkState;
use leasehold::model::work::NewWork;

use crate::support::runtime::{Gate, RUNNING, T0, compat, config, store, work_in};
use crate::support::wait::{wait_until_async, within};

/// Eight slots, a slow handler whose attempts do not end until the fast handler's whole
/// backlog has succeeded: shared by claim count, the slow attempts would soon hold every
/// slot and the fast backlog would wait for them; shared by occupancy, the fast handler
/// keeps its half of the slots and drains.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_handler_never_holds_a_fast_backlog_to_its_pace() {
    const SLOW: usize = 24;
    const FAST: usize = 200;
    let clock = ManualClock::new(T0);
    let s = store(&clock);
    let items: Vec<NewWork> = (0..SLOW)
        .map(|i| NewWork::effect(format!("slow-{i:03}"), "slow", "{}"))
        .chain((0..FAST).map(|i| NewWork::effect(format!("fast-{i:03}"), "fast", "{}")))
        .collect();
    s.enqueue_batch(items, &compat()).expect("enqueues");
    let gate = Gate::default();
    let _open_on_exit = gate.open_on_drop();
    let held = gate.clone();
    let handlers = Workload::new("slow-and-fast", 1)
        .with("slow", move |_: &AttemptContext| {
            held.wait();
            HandlerOutcome::Succeeded(None)
        })
        .with("fast", |_: &AttemptContext| HandlerOutcome::Succeeded(None));
    let cfg = AuthorityConfig {
        worker_concurrency: 8,
        ..config("fair")
    };
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let runtime = tokio::spawn(run_authority(s.clone(), cfg, handlers, None, async move {
        let _ = stop_rx.await;
    }));
    let handler_done = |handler: &str| {
        work_in(&s, WorkState::Succeeded)
            .iter()
            .filter(|w| w.handler == handler)
            .count()
    };
    wait_until_async(
        "the fast backlog to drain while the slow attempts run",
        within(RUNNING),
        || handler_done("fast") == FAST,
    )
    .await;
    assert_eq!(handler_done("slow"), 0, "the slow attempts were still held");
    gate.open();
    wait_until_async("the slow backlog to drain", within(RUNNING), || {
        handler_done("slow") == SLOW
    })
    .await;
    let _ = stop_tx.send(());
    runtime.await.expect("joins").expect("runs");
}
