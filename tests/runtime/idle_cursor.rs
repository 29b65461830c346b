//! An idle cursor is kept, not handed back every poll: its generation moves only with its
//! ownership.

use leasehold::Store;
use leasehold::authority::workload::{self};
use leasehold::authority::{AuthorityConfig, AuthorityCore, Pace};
use leasehold::clock::ManualClock;
use leasehold::model::event::NewEvent;
use leasehold::model::handler_key;
use serde_json::json;

use crate::support::runtime::{T0, compat, store};

/// An idle cursor is kept (renewed), not handed back and re-claimed every poll: its
/// generation holds while its owner lives, through deliveries too, and moves once when the
/// owner dies and another authority reclaims it.
#[test]
fn an_idle_cursor_keeps_its_generation_until_its_owner_dies() {
    let clock = ManualClock::new(T0);
    let s = store(&clock);
    let c = compat();
    s.create_subscription(
        "orders",
        "order-placed",
        workload::CURSOR_HANDLER,
        &handler_key(workload::CURSOR_HANDLER, &c),
    )
    .expect("subscribes");
    let fast = workload::named("fast", 1).expect("fast");
    let cfg = |id: &str| AuthorityConfig {
        poll_interval_ms: 100,
        lease_duration_ms: 3_000,
        renew_interval_ms: 1_000,
        ..AuthorityConfig::new(id, "v1")
    };
    let a = AuthorityCore::new(s.clone(), cfg("a"), fast.clone(), Pace::Virtual).expect("a");
    let b = AuthorityCore::new(s.clone(), cfg("b"), fast, Pace::Virtual).expect("b");
    let cursor = |s: &Store| {
        let sub = s.subscription("orders").expect("reads").expect("exists");
        leasehold::ops::cursors::status(s, &sub, s.now()).expect("reads")
    };
    // One tick of each living authority: renew on its cadence, poll, run, record.
    let tick = |cores: &[&AuthorityCore], n: i64| {
        for core in cores {
            if n % 10 == 0 {
                core.renew();
            }
            for job in core.poll().expect("polls") {
                core.finish(core.execute(&job));
            }
        }
        clock.advance(100);
    };

    for n in 0..200 {
        tick(&[&a, &b], n);
        if n == 100 {
            for i in 0..3 {
                let event = NewEvent {
                    event_type: "order-placed".into(),
                    source: Some("shop".into()),
                    external_id: Some(format!("o{i}")),
                    payload: json!({ "i": i }),
                };
                s.ingest(&event).expect("ingests");
            }
        }
    }
    let held = cursor(&s);
    let owner = held.owner_id.clone().expect("held");
    assert_eq!(held.generation, 1, "{held:?}");
    assert_eq!((held.position, held.high_water, held.lag), (3, 3, 0));
    let (dead, heir) = if owner == "a" { (&a, &b) } else { (&b, &a) };
    assert_eq!(dead.stats().claims, 1, "one claim in 200 polls");
    assert_eq!(dead.stats().events_delivered, 3);
    assert!(held.claims_per_sec < 0.02, "{held:?}");

    // Its owner is killed: the claim lapses and the other authority takes it, once.
    dead.crash();
    for n in 0..200 {
        tick(&[heir], n);
    }
    let moved = cursor(&s);
    assert_eq!(moved.owner_id.as_deref(), Some(heir.id()));
    assert_eq!(moved.generation, 2, "{moved:?}");
    assert_eq!(heir.stats().claims, 1);
    assert_eq!(heir.stats().reclaims, 1);
    let (grants, _) = s
        .ownership_history(Some("cursor:orders"), 0, 1_000)
        .expect("history");
    assert_eq!(grants.len(), 2, "{grants:?}");
}
