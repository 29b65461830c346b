//! Schedule firings as a running authority makes them: an every-1 s schedule polled at the
//! default interval fires every boundary, though each poll reads the clock a little after
//! its tick and so sometimes sees two boundaries pass since the one before.

use leasehold::authority::handlers::Workload;
use leasehold::authority::{AuthorityConfig, AuthorityCore, HandlerOutcome, Pace};
use leasehold::clock::ManualClock;
use leasehold::model::schedule::{CatchUp, Trigger, firing_id};
use leasehold::model::work::WorkFilter;
use leasehold::model::{PageRequest, WorkKind};

use crate::support::runtime::{T0, store};

/// Every schedule firing in the store, by id.
fn firings(s: &leasehold::Store) -> Vec<String> {
    let filter = WorkFilter {
        kind: Some(WorkKind::Schedule),
        ..WorkFilter::default()
    };
    let mut ids: Vec<String> = s
        .list_work(&filter, &PageRequest::first(1_000))
        .expect("lists")
        .rows
        .into_iter()
        .map(|w| w.id)
        .collect();
    ids.sort();
    ids
}

#[test]
fn an_every_second_schedule_polled_every_second_fires_every_boundary() {
    let clock = ManualClock::new(T0);
    let s = store(&clock);
    let core = AuthorityCore::new(
        s.clone(),
        AuthorityConfig::new("solo", "v1"),
        Workload::new("ticks", 0).with("tick", |_: &_| HandlerOutcome::Succeeded(None)),
        Pace::Virtual,
    )
    .expect("valid");
    core.register().expect("registers");
    let every = 1_000;
    assert!(
        s.create_schedule(
            "tick",
            Trigger::Interval { every_ms: every },
            CatchUp::Latest,
            "tick",
            "{}",
            "v1",
        )
        .expect("creates")
    );
    // The poll timer ticks every `pollIntervalMs` from a start 999 ms into a second; each
    // poll reads the clock 0 to 2 ms after its tick (the flush before it, the blocking pool).
    let poll = core.config().poll_interval_ms;
    let lag = [0, 2, 1, 0, 2, 2, 0, 1];
    for (k, lag) in (1..=40).zip(lag.iter().cycle()) {
        clock.set(T0 + 999 + k * poll + lag);
        let jobs = core.poll().expect("polls");
        core.finish_all(jobs.iter().map(|j| core.execute(j)).collect());
    }
    let last = (T0 + 999 + 40 * poll + 2) / every * every;
    let expected: Vec<String> = (1..=(last - T0) / every)
        .map(|i| firing_id("tick", T0 + i * every))
        .collect();
    let fired = firings(&s);
    let dropped: Vec<&String> = expected.iter().filter(|id| !fired.contains(id)).collect();
    assert!(dropped.is_empty(), "boundaries never fired: {dropped:?}");
}
