//! Unsafe knobs are refused at construction, and by the runtime before it touches the store.

use leasehold::authority::workload::{self};
use leasehold::authority::{AuthorityConfig, AuthorityCore, Finished, Pace, run_authority};
use leasehold::clock::ManualClock;
use leasehold::model::work::NewWork;
use leasehold::model::{PageRequest, WorkState};

use crate::support::runtime::{T0, compat, store, two_short_lease_cores};

#[test]
fn unsafe_knobs_are_refused_at_construction() {
    let clock = ManualClock::new(T0);
    let cases = [
        AuthorityConfig::new("a", "v1").with_timing(10_000, 10_000),
        AuthorityConfig::new("a", "v1").with_timing(10_000, 20_000),
        AuthorityConfig {
            renew_interval_ms: 0,
            ..AuthorityConfig::new("a", "v1")
        },
        AuthorityConfig {
            poll_interval_ms: 0,
            ..AuthorityConfig::new("a", "v1")
        },
        AuthorityConfig {
            worker_concurrency: 0,
            ..AuthorityConfig::new("a", "v1")
        },
        AuthorityConfig {
            claim_batch_size: 0,
            ..AuthorityConfig::new("a", "v1")
        },
        AuthorityConfig {
            lease_duration_ms: 0,
            ..AuthorityConfig::new("a", "v1")
        },
        AuthorityConfig::new("", "v1"),
        // Above the longest lease: refused, never cut to 30 days behind the caller's back.
        AuthorityConfig::new("a", "v1")
            .with_timing(leasehold::rules::lease::MAX_LEASE_MS + 1, 10_000),
    ];
    for config in cases {
        let err = AuthorityCore::new(
            store(&clock),
            config.clone(),
            workload::default_workload(1),
            Pace::Virtual,
        )
        .expect_err("refused");
        assert_eq!(err.code(), "INVALID", "{config:?}");
    }
    let err = AuthorityConfig::new("a", "v1")
        .with_timing(1_000, 1_000)
        .validate()
        .expect_err("refused");
    assert!(
        err.to_string()
            .contains("renewIntervalMs (1000) must be less than leaseDurationMs (1000)"),
        "{err}"
    );
    assert!(AuthorityConfig::new("a", "v1").validate().is_ok());
}

#[tokio::test]
async fn the_runtime_refuses_an_unsafe_config_before_touching_the_store() {
    let clock = ManualClock::new(T0);
    let s = store(&clock);
    let bad = AuthorityConfig::new("a", "v1").with_timing(5_000, 5_000);
    let err = run_authority(
        s.clone(),
        bad,
        workload::default_workload(1),
        None,
        std::future::pending(),
    )
    .await
    .expect_err("refused");
    assert_eq!(err.code(), "INVALID");
    assert!(
        s.list_authorities(&PageRequest::first(10))
            .expect("lists")
            .rows
            .is_empty()
    );
}

#[test]
fn a_stale_owners_completion_is_fenced_and_its_renewal_marks_the_job_lost() {
    let clock = ManualClock::new(T0);
    let s = store(&clock);
    s.enqueue(NewWork::effect("e1", "send-email", "{}"), &compat())
        .expect("enqueues");
    let (a, b) = two_short_lease_cores(&s);

    let jobs = a.poll().expect("polls");
    assert_eq!(jobs.len(), 1);
    let executed = a.execute(&jobs[0]);
    // a stalls past its lease; b reclaims (a new generation) and is still working.
    clock.advance(1_500);
    let taken = b.poll().expect("polls");
    assert_eq!(taken.len(), 1);
    assert_eq!(taken[0].generation(), 2);
    assert_eq!(b.stats().reclaims, 1);
    assert_eq!(b.stats().reclaim_latencies_ms, vec![500]);

    // a wakes: its completion is refused, counted, never retried as success.
    assert_eq!(a.finish(executed), Finished::Refused("WORK_FENCED".into()));
    assert_eq!(a.stats().fenced_writes_refused, 1);
    assert_eq!(a.stats().completions, 0);
    assert_eq!(
        s.work("e1").expect("reads").expect("exists").state,
        WorkState::Claimed
    );

    // b finishes; a later renewal by a would be fenced too (nothing of a's is left).
    assert_eq!(b.finish(b.execute(&taken[0])), Finished::Completed);
    assert_eq!(a.renew().lost, 0);
    assert_eq!(
        s.work("e1").expect("reads").expect("exists").state,
        WorkState::Succeeded
    );
}
