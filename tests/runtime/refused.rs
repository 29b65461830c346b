//! A store that refuses the authority for good (a revoked grant, a changed password) stops
//! it with that error, as an untrusted store does, rather than being waited for like an
//! outage.

use leasehold::authority::workload::{self, EFFECT_HANDLERS};
use leasehold::authority::{RunOptions, run_authority_with};
use leasehold::clock::ManualClock;
use leasehold::model::WorkState;
use leasehold::model::work::NewWork;
use leasehold::store::faults::{Fault, FaultPlan};

use crate::support::runtime::{RUNNING, T0, compat, config, faulty_store, work_in};
use crate::support::wait::{wait_until_async, within};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_that_refuses_the_authority_stops_it_with_the_reason() {
    let clock = ManualClock::new(T0);
    let (backend, s) = faulty_store(&clock);
    let effects = (0..10)
        .map(|i| NewWork::effect(format!("fx-{i}"), EFFECT_HANDLERS[0], "{}"))
        .collect::<Vec<_>>();
    s.enqueue_batch(effects, &compat()).expect("enqueues");
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
    backend.plan(FaultPlan {
        after: backend.writes(),
        until: None,
        rules: vec![(1, Fault::Refuse)],
    });

    let stopped = tokio::time::timeout(RUNNING, runtime)
        .await
        .expect("the authority stops by itself")
        .expect("joins");
    let err = stopped.expect_err("a refusing store is an error");
    assert_eq!(err.code(), "STORE_REFUSED", "{err}");
    assert!(err.to_string().contains("refuses this process"), "{err}");
    assert!(backend.injected().refusals >= 1);
}
