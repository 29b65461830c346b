//! Schedule firings: derived ids `"<scheduleId>@<dueInstant>"`, epoch-aligned, one
//! firing per due instant however many pollers, and each `catchUp` policy after an outage.

use std::collections::BTreeSet;
use std::sync::Barrier;
use std::sync::atomic::AtomicU64;

use crate::clock::Millis;
use crate::model::schedule::{CatchUp, Trigger, firing_id};
use crate::model::work::WorkFilter;
use crate::model::{PageRequest, WorkKind, WorkState};
use crate::store::{SCHEDULE_ON_TIME_MS, SCHEDULE_UPDATE_ACTION};

use super::{BASE, Harness, K, K_OTHER, START, ok, refused, retry_contention};

fn firings(h: &dyn Harness) -> BTreeSet<String> {
    let filter = WorkFilter {
        kind: Some(WorkKind::Schedule),
        ..WorkFilter::default()
    };
    ok(
        "list firings",
        h.store().list_work(&filter, &PageRequest::first(10_000)),
    )
    .rows
    .into_iter()
    .map(|w| w.id)
    .collect()
}

fn ids(schedule: &str, dues: impl IntoIterator<Item = Millis>) -> BTreeSet<String> {
    dues.into_iter().map(|d| firing_id(schedule, d)).collect()
}

/// `pollers` threads on their own handles each call `fire_due_schedules` several times at
/// one instant; returns how many new firings they created in total.
fn poll_concurrently(h: &dyn Harness, pollers: usize) -> usize {
    let contention = AtomicU64::new(0);
    let barrier = Barrier::new(pollers);
    let handles: Vec<_> = (0..pollers).map(|_| h.reopen()).collect();
    std::thread::scope(|scope| {
        let joins: Vec<_> = handles
            .into_iter()
            .map(|store| {
                let (barrier, contention) = (&barrier, &contention);
                scope.spawn(move || {
                    barrier.wait();
                    (0..4)
                        .map(|_| {
                            retry_contention(contention, || store.fire_due_schedules(K, 100))
                                .expect("fire")
                        })
                        .sum::<usize>()
                })
            })
            .collect();
        joins.into_iter().map(|j| j.join().expect("poller")).sum()
    })
}

/// Any number of pollers yield exactly one firing per due instant (insert-if-absent on the
/// derived id, in one transaction), epoch-aligned, eligible at its due instant.
pub fn one_firing_per_due_instant_across_pollers(h: &dyn Harness) {
    let s = h.store();
    assert!(ok(
        "create",
        s.create_schedule(
            "tick",
            Trigger::Interval { every_ms: 1_000 },
            CatchUp::Latest,
            "tick",
            "{}",
            K
        )
    ));
    assert!(!ok(
        "create again",
        s.create_schedule(
            "tick",
            Trigger::Interval { every_ms: 5 },
            CatchUp::All,
            "x",
            "{}",
            K
        )
    ));
    let sched = ok("read", s.schedule("tick")).expect("schedule");
    assert_eq!(
        sched.next_due,
        BASE + 1_000,
        "the first epoch-aligned boundary after now"
    );
    assert_eq!(
        poll_concurrently(h, 6),
        0,
        "nothing is due before the first boundary"
    );

    let mut expected = BTreeSet::new();
    for k in 1..=3 {
        h.clock().set(BASE + k * 1_000);
        assert_eq!(
            poll_concurrently(h, 6),
            1,
            "boundary {k}: one firing however many pollers"
        );
        expected.insert(firing_id("tick", BASE + k * 1_000));
        assert_eq!(firings(h), expected);
        h.clock().advance(999);
        assert_eq!(poll_concurrently(h, 3), 0, "nothing new between boundaries");
    }
    let firing = ok("read", s.work(&firing_id("tick", BASE + 2_000))).expect("firing");
    assert_eq!(
        (firing.kind, firing.state, firing.next_eligible_at),
        (WorkKind::Schedule, WorkState::Pending, BASE + 2_000)
    );
    assert_eq!(
        (firing.handler.as_str(), firing.compat.as_str()),
        ("tick", K)
    );
    let sched = ok("read", h.reopen().schedule("tick")).expect("schedule");
    assert_eq!(
        (sched.last_due, sched.next_due),
        (Some(BASE + 3_000), BASE + 4_000)
    );
}

/// Observes an interval schedule after a 5-boundary outage (from `START` to `BASE + 5_750`)
/// with `catch_up`, through a reopened handle (another authority), and returns the firings.
fn after_outage(h: &dyn Harness, catch_up: CatchUp) -> (usize, BTreeSet<String>) {
    let s = h.store();
    ok(
        "create",
        s.create_schedule(
            "s",
            Trigger::Interval { every_ms: 1_000 },
            catch_up,
            "h",
            "{}",
            K,
        ),
    );
    assert_eq!(s.now(), START);
    assert_eq!(ok("fire at start", s.fire_due_schedules(K, 10)), 0);
    h.clock().set(BASE + 5_750);
    let s = h.reopen();
    let fired = ok("fire after the outage", s.fire_due_schedules(K, 10));
    assert_eq!(
        ok("fire again", s.fire_due_schedules(K, 10)),
        0,
        "an observation is not repeated"
    );
    let out = (fired, firings(h));
    h.clock().set(BASE + 6_000);
    assert_eq!(
        ok("next boundary", h.reopen().fire_due_schedules(K, 10)),
        1,
        "back to one per boundary"
    );
    assert!(firings(h).contains(&firing_id("s", BASE + 6_000)));
    let sched = ok("read", s.schedule("s")).expect("schedule");
    assert_eq!(
        (sched.last_due, sched.next_due),
        (Some(BASE + 6_000), BASE + 7_000)
    );
    out
}

/// `catchUp: latest` enqueues the most recent boundary and any other found on time (at
/// most [`SCHEDULE_ON_TIME_MS`] old, here the one 1 750 ms old); the older ones are dropped.
pub fn catch_up_latest_after_an_outage(h: &dyn Harness) {
    let (fired, got) = after_outage(h, CatchUp::Latest);
    assert_eq!(SCHEDULE_ON_TIME_MS, 2_000);
    assert_eq!((fired, got), (2, ids("s", [BASE + 4_000, BASE + 5_000])));
}

/// `catchUp: all` enqueues every missed boundary.
pub fn catch_up_all_after_an_outage(h: &dyn Harness) {
    let (fired, got) = after_outage(h, CatchUp::All);
    assert_eq!(
        (fired, got),
        (5, ids("s", (1..=5).map(|k| BASE + k * 1_000)))
    );
}

/// `catchUp: N` enqueues at most the N most recent missed boundaries.
pub fn catch_up_last_n_after_an_outage(h: &dyn Harness) {
    let (fired, got) = after_outage(h, CatchUp::Last(3));
    assert_eq!(
        (fired, got),
        (3, ids("s", [BASE + 3_000, BASE + 4_000, BASE + 5_000]))
    );
}

/// A delay schedule fires exactly once, at its instant, whoever polls and whenever.
pub fn delay_schedule_fires_once(h: &dyn Harness) {
    let s = h.store();
    let at = START + 2_000;
    ok(
        "create",
        s.create_schedule(
            "once",
            Trigger::Delay { after_ms: at },
            CatchUp::Latest,
            "h",
            "{}",
            K,
        ),
    );
    h.clock().advance(1_999);
    assert_eq!(poll_concurrently(h, 4), 0, "not before its instant");
    h.clock().advance(1);
    assert_eq!(poll_concurrently(h, 4), 1, "once at its instant");
    h.clock().advance(86_400_000);
    assert_eq!(poll_concurrently(h, 4), 0, "never again");
    assert_eq!(ok("reopened", h.reopen().fire_due_schedules(K, 10)), 0);
    assert_eq!(firings(h), ids("once", [at]));
}

fn every_second(h: &dyn Harness, id: &str, handler: &str, created_by: &str) {
    assert!(ok(
        "create",
        h.store().create_schedule(
            id,
            Trigger::Interval { every_ms: 1_000 },
            CatchUp::Latest,
            handler,
            "{}",
            created_by
        )
    ));
}

/// A firing is work of the authority that observes the schedule: after a deploy retired
/// the build that created the schedule, the new build's firings carry the new build's key
/// and the new build claims them; the retired key gets nothing.
pub fn a_firing_carries_the_observers_key(h: &dyn Harness) {
    every_second(h, "tick", "tick", K);
    h.clock().set(BASE + 1_000);
    assert_eq!(
        ok("v2 observes", h.reopen().fire_due_schedules(K_OTHER, 10)),
        1
    );
    let firing = ok("read", h.store().work(&firing_id("tick", BASE + 1_000))).expect("firing");
    assert_eq!(firing.compat, K_OTHER, "stamped with the observer's key");
    assert!(
        ok("v1 claims", h.store().claim_batch("a-v1", K, 10, 5_000)).is_empty(),
        "the retired build's key claims nothing"
    );
    let claimed = ok(
        "v2 claims",
        h.store().claim_batch("a-v2", K_OTHER, 10, 5_000),
    );
    assert_eq!(
        claimed.iter().map(|w| w.id.as_str()).collect::<Vec<_>>(),
        [firing_id("tick", BASE + 1_000).as_str()]
    );
}

/// Two observers with different keys see the same due instant: one firing, stamped with
/// the key of whoever enqueued it first; the second adds nothing.
pub fn two_observers_of_one_instant_create_one_firing(h: &dyn Harness) {
    every_second(h, "tick", "tick", K);
    h.clock().set(BASE + 1_000);
    assert_eq!(ok("v1 observes", h.reopen().fire_due_schedules(K, 10)), 1);
    assert_eq!(
        ok("v2 observes", h.reopen().fire_due_schedules(K_OTHER, 10)),
        0
    );
    assert_eq!(firings(h), ids("tick", [BASE + 1_000]));
    let firing = ok("read", h.store().work(&firing_id("tick", BASE + 1_000))).expect("firing");
    assert_eq!(firing.compat, K, "the first observer's firing stands");
}

/// An update replaces the trigger, catch-up, handler and payload of the next firings;
/// firings already enqueued keep what they were created with. It is audited, and an
/// unknown schedule is refused without writing anything.
pub fn update_changes_the_next_firings_not_past_ones(h: &dyn Harness) {
    let s = h.store();
    every_second(h, "tick", "old", K);
    h.clock().set(BASE + 1_000);
    assert_eq!(ok("fire", s.fire_due_schedules(K, 10)), 1);
    let updated = ok(
        "update",
        s.update_schedule(
            "tick",
            Trigger::Interval { every_ms: 5_000 },
            CatchUp::All,
            "new",
            r#"{"v":2}"#,
            "alice@host",
        ),
    );
    assert_eq!(
        (updated.next_due, updated.last_due, updated.handler.as_str()),
        (BASE + 5_000, Some(BASE + 1_000), "new")
    );
    assert_eq!(ok("read", s.schedule("tick")), Some(updated));
    h.clock().set(BASE + 4_999);
    assert_eq!(
        ok("between", s.fire_due_schedules(K, 10)),
        0,
        "the old 1s boundaries are gone"
    );
    h.clock().set(BASE + 5_000);
    assert_eq!(ok("new boundary", s.fire_due_schedules(K, 10)), 1);
    let past = ok("read", s.work(&firing_id("tick", BASE + 1_000))).expect("past firing");
    let next = ok("read", s.work(&firing_id("tick", BASE + 5_000))).expect("next firing");
    assert_eq!(
        (past.handler.as_str(), past.payload.as_str()),
        ("old", "{}")
    );
    assert_eq!(
        (next.handler.as_str(), next.payload.as_str()),
        ("new", r#"{"v":2}"#)
    );
    assert_eq!(firings(h), ids("tick", [BASE + 1_000, BASE + 5_000]));
    let audit = ok("audit", s.list_audit(&PageRequest::first(100))).rows;
    let entry = audit
        .iter()
        .find(|a| a.action == SCHEDULE_UPDATE_ACTION)
        .expect("the update is audited");
    assert_eq!(
        (entry.actor.as_str(), entry.target.as_str()),
        ("alice@host", "tick")
    );
    assert!(entry.outcome.contains("every 5s"), "{}", entry.outcome);

    let revision = ok("revision", s.revision());
    let unknown = s.update_schedule(
        "nope",
        Trigger::Interval { every_ms: 5_000 },
        CatchUp::All,
        "new",
        "{}",
        "alice@host",
    );
    assert_eq!(refused("unknown", unknown), "NOT_FOUND");
    assert_eq!(ok("revision", s.revision()), revision, "nothing written");
}

/// A cron trigger is stored with its zone and read back the same on every provider: a
/// weekday 09:00 in Paris fires at 08:00 UTC in winter, skips the weekend, and a
/// malformed expression or an unknown zone is refused, one line, with nothing written.
pub fn a_cron_schedule_fires_at_its_zones_instants(h: &dyn Harness) {
    let s = h.store();
    let weekdays = ok("cron", Trigger::cron("0 9 * * MON-FRI", "Europe/Paris"));
    assert!(ok(
        "create",
        s.create_schedule("paris", weekdays.clone(), CatchUp::Latest, "h", "{}", K)
    ));
    let stored = ok("read", s.schedule("paris")).expect("schedule");
    assert_eq!(stored.trigger, weekdays);
    // Wednesday 2023-11-15 09:00 CET.
    let wednesday = 1_700_035_200_000;
    assert_eq!(stored.next_due, wednesday);
    h.clock().set(wednesday);
    assert_eq!(ok("fire", s.fire_due_schedules(K, 10)), 1);
    let day = 86_400_000;
    assert_eq!(
        ok("read", s.schedule("paris")).expect("schedule").next_due,
        wednesday + day
    );
    h.clock().set(wednesday + 2 * day);
    s.fire_due_schedules(K, 10).expect("fire friday");
    assert_eq!(
        ok("read", s.schedule("paris")).expect("schedule").next_due,
        wednesday + 5 * day,
        "Friday's next is Monday"
    );
    assert!(firings(h).contains(&firing_id("paris", wednesday + 2 * day)));

    let revision = ok("revision", s.revision());
    for (expr, tz) in [("0 25 * * *", "UTC"), ("0 9 * * *", "Europe/Atlantis")] {
        let bad = Trigger::Cron {
            expr: expr.into(),
            tz: tz.into(),
        };
        assert_eq!(
            refused(
                expr,
                s.create_schedule("bad", bad, CatchUp::Latest, "h", "{}", K)
            ),
            "INVALID"
        );
    }
    assert_eq!(ok("revision", s.revision()), revision, "nothing written");
}
