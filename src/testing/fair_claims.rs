//! Fair claiming under a backlog: a claim batch shares its budget across the kinds of work
//! and the handlers that have items due (reclaims first), so a deep backlog of one handler
//! never holds back a due schedule firing, a cursor or another handler's effect; a handler
//! limit caps that handler's share; priorities order one handler's items, then due time.

use std::collections::BTreeMap;

use crate::model::WorkKind;
use crate::model::schedule::{CatchUp, Trigger};
use crate::model::work::NewWork;
use crate::rules::work::Backoff;
use crate::store::ClaimBudget;

use super::{Harness, K, MemoryHarness, ok};

const FLOOD: &str = "flood";

/// Enqueues `n` effects of the flooding handler, all due now.
fn flood(h: &dyn Harness, n: usize) {
    let specs: Vec<NewWork> = (0..n)
        .map(|i| NewWork::effect(format!("flood-{i:05}"), FLOOD, "{}"))
        .collect();
    assert_eq!(ok("flood", h.store().enqueue_batch(specs, K)), n);
}

/// How many of each (kind, handler) a batch holds.
fn lanes_of(items: &[crate::model::WorkItem]) -> BTreeMap<(WorkKind, String), usize> {
    let mut out = BTreeMap::new();
    for w in items {
        *out.entry((w.kind, w.handler.clone())).or_default() += 1;
    }
    out
}

/// With hundreds of older effects of one handler due, one batch of eight still takes the
/// due schedule firing, the cursor and the other handler's effects — and hands the flood
/// only the rest of its budget.
pub fn a_batch_under_a_deep_backlog_takes_every_lane(h: &dyn Harness) {
    let s = h.store();
    flood(h, 600);
    h.clock().advance(60_000);
    ok(
        "schedule",
        s.create_schedule(
            "tick",
            Trigger::Interval { every_ms: 5_000 },
            CatchUp::Latest,
            "tick",
            "{}",
            K,
        ),
    );
    ok(
        "cursor",
        s.create_subscription("orders", "order", "deliver", K),
    );
    for i in 0..3 {
        ok(
            "other handler",
            s.enqueue(NewWork::effect(format!("mail-{i}"), "mail", "{}"), K),
        );
    }
    h.clock().advance(5_000);
    assert_eq!(ok("fire", s.fire_due_schedules(K, 10)), 1);

    let batch = ok("claim", s.claim_batch("a", K, 8, 30_000));
    let lanes = lanes_of(&batch);
    assert_eq!(batch.len(), 8);
    assert_eq!(lanes.get(&(WorkKind::Schedule, "tick".into())), Some(&1));
    assert_eq!(lanes.get(&(WorkKind::Cursor, "deliver".into())), Some(&1));
    assert_eq!(lanes.get(&(WorkKind::Effect, "mail".into())), Some(&3));
    assert_eq!(
        lanes.get(&(WorkKind::Effect, FLOOD.into())),
        Some(&3),
        "the flood takes what the other lanes left: {lanes:?}"
    );
    // Whatever the lanes, the flood's own items still go oldest first.
    let flood_ids: Vec<&str> = batch
        .iter()
        .filter(|w| w.handler == FLOOD)
        .map(|w| w.id.as_str())
        .collect();
    assert_eq!(flood_ids, ["flood-00000", "flood-00001", "flood-00002"]);
}

/// Batches of one — an authority with one free slot — still reach every lane within a
/// couple of batches per lane (which kind, and which handler of it, goes first rotates with
/// each batch), never only after the flood drained.
pub fn batches_of_one_rotate_over_the_lanes(h: &dyn Harness) {
    let s = h.store();
    flood(h, 200);
    h.clock().advance(1_000);
    ok(
        "mail",
        s.enqueue(NewWork::effect("mail-0", "mail", "{}"), K),
    );
    ok(
        "cursor",
        s.create_subscription("orders", "order", "deliver", K),
    );
    let mut claimed = Vec::new();
    for _ in 0..6 {
        claimed.extend(ok("claim one", s.claim_batch("a", K, 1, 30_000)));
    }
    let lanes = lanes_of(&claimed);
    assert_eq!(
        lanes.get(&(WorkKind::Effect, "mail".into())),
        Some(&1),
        "{lanes:?}"
    );
    assert_eq!(
        lanes.get(&(WorkKind::Cursor, "deliver".into())),
        Some(&1),
        "{lanes:?}"
    );
}

/// Owners claiming in turn through one store handle (authorities an application embeds
/// side by side, the embedded cluster) each rotate over every lane on their own: with
/// four deep lanes and batches of one, each of two alternating owners takes from all four
/// within eight of its batches — however its batches interleave with the other's.
pub fn claimers_sharing_a_handle_each_serve_every_lane(h: &dyn Harness) {
    let s = h.store();
    let handlers = ["h-a", "h-b", "h-c", "h-d"];
    for handler in handlers {
        let specs: Vec<NewWork> = (0..20)
            .map(|i| NewWork::effect(format!("{handler}-{i:02}"), handler, "{}"))
            .collect();
        assert_eq!(ok("enqueue", s.enqueue_batch(specs, K)), 20);
    }
    h.clock().advance(1_000);
    let mut served: BTreeMap<&str, Vec<crate::model::WorkItem>> = BTreeMap::new();
    for _ in 0..8 {
        for owner in ["one", "two"] {
            let batch = ok("claim one", s.claim_batch(owner, K, 1, 30_000));
            served.entry(owner).or_default().extend(batch);
        }
    }
    for (owner, items) in &served {
        let lanes = lanes_of(items);
        for handler in handlers {
            assert!(
                lanes.contains_key(&(WorkKind::Effect, handler.to_owned())),
                "{owner} never served {handler}: {lanes:?}"
            );
        }
    }
}

/// Reclaims come before every lane, and a lane's share never repeats an item.
pub fn reclaims_come_first_then_the_lanes(h: &dyn Harness) {
    let s = h.store();
    flood(h, 50);
    ok(
        "mail",
        s.enqueue(NewWork::effect("mail-0", "mail", "{}"), K),
    );
    ok("dead claims", s.claim("flood-00040", "dead", K, 1_000));
    h.clock().advance(5_000);
    let batch = ok("claim", s.claim_batch("heir", K, 3, 30_000));
    let ids: Vec<&str> = batch.iter().map(|w| w.id.as_str()).collect();
    assert_eq!(ids[0], "flood-00040", "the reclaim first: {ids:?}");
    assert!(ids.contains(&"mail-0"), "{ids:?}");
    let mut unique = ids.clone();
    unique.sort_unstable();
    unique.dedup();
    assert_eq!(unique.len(), ids.len(), "no item twice: {ids:?}");
}

/// A lapse still in its reclaim grace (its backoff grows with its attempts) may lead the
/// reclaims, ahead of one past its grace; a batch of one takes the one past, not nothing,
/// and leaves the one in grace to its owner.
pub fn a_lapse_in_its_grace_does_not_hold_up_one_past_it(h: &dyn Harness) {
    let s = h.store();
    let reclaim = Backoff {
        initial_ms: 1_000,
        max_ms: 600_000,
        ..Backoff::default()
    };
    assert!(reclaim.delay(2) > reclaim.delay(1) + 1, "{reclaim:?}");
    let one = ClaimBudget::new(1).with_reclaim(reclaim);
    ok("enqueue", s.enqueue(NewWork::effect("early", "h", "{}"), K));
    let first = ok("a claims", s.claim("early", "a", K, 1_000));
    h.clock()
        .set(first.lease_expires_at.expect("claimed") + reclaim.delay(1));
    let taken = ok("b reclaims", s.claim_work_within("b", K, &one, 1_000));
    assert_eq!(taken.len(), 1, "{taken:?}");
    let early = taken[0].item.lease_expires_at.expect("claimed");
    // Claimed later, on its first attempt: due after `early`, its grace over before.
    ok("enqueue", s.enqueue(NewWork::effect("late", "h", "{}"), K));
    h.clock().advance(1);
    ok("c claims", s.claim("late", "c", K, 1_000));
    h.clock().set(early + 1 + reclaim.delay(1));
    let batch = ok("claim", s.claim_work_within("d", K, &one, 30_000));
    let ids: Vec<&str> = batch.iter().map(|c| c.item.id.as_str()).collect();
    assert_eq!(ids, ["late"], "on {}", h.provider());
    let held = ok("read", s.work("early")).expect("exists");
    assert_eq!(held.owner_id.as_deref(), Some("b"), "still in b's grace");
}

/// Lapses of a handler that may take nothing (paused, at its limit) may lead the reclaims;
/// they stay with their owner and do not hold up another handler's lapse behind them.
pub fn lapses_of_a_handler_without_room_do_not_hold_up_anothers(h: &dyn Harness) {
    let s = h.store();
    for (id, handler) in [("a-1", "a"), ("a-2", "a"), ("b-1", "b")] {
        ok("enqueue", s.enqueue(NewWork::effect(id, handler, "{}"), K));
        ok("dead claims", s.claim(id, "dead", K, 1_000));
        h.clock().advance(1);
    }
    h.clock().advance(60_000);
    let budget = ClaimBudget::new(2).with_handler("a", 0);
    let batch = ok("claim", s.claim_work_within("heir", K, &budget, 30_000));
    let ids: Vec<&str> = batch.iter().map(|c| c.item.id.as_str()).collect();
    assert_eq!(ids, ["b-1"], "on {}", h.provider());
    for id in ["a-1", "a-2"] {
        let held = ok("read", s.work(id)).expect("exists");
        assert_eq!(held.owner_id.as_deref(), Some("dead"), "{id}");
    }
}

/// A handler limit caps that handler's claims in a batch, and the budget it leaves goes to
/// the other lanes; a limit of zero claims none of it.
pub fn a_handler_limit_caps_that_handler_only(h: &dyn Harness) {
    let s = h.store();
    flood(h, 40);
    for i in 0..10 {
        ok(
            "mail",
            s.enqueue(NewWork::effect(format!("mail-{i}"), "mail", "{}"), K),
        );
    }
    let budget = ClaimBudget::new(8).with_handler(FLOOD, 2);
    let batch = ok("claim", s.claim_work_within("a", K, &budget, 30_000));
    let lanes = lanes_of(&batch.iter().map(|c| (*c.item).clone()).collect::<Vec<_>>());
    assert_eq!(lanes.get(&(WorkKind::Effect, FLOOD.into())), Some(&2));
    assert_eq!(lanes.get(&(WorkKind::Effect, "mail".into())), Some(&6));
    let none = ClaimBudget::new(8)
        .with_handler(FLOOD, 0)
        .with_handler("mail", 0);
    assert!(ok("claim", s.claim_work_within("a", K, &none, 30_000)).is_empty());
}

/// The budget's `in_flight` shares the slots by occupancy: eight slots, the slow handler
/// running seven with more due, and each free slot goes to the fast handler's backlog,
/// batch after batch, until the two hold the same; once the fast handler has nothing due
/// the slow one takes every free slot.
pub fn a_handler_holding_more_waits_for_the_others(h: &dyn Harness) {
    let s = h.store();
    let specs: Vec<NewWork> = (0..20)
        .map(|i| NewWork::effect(format!("slow-{i:02}"), "slow", "{}"))
        .chain((0..6).map(|i| NewWork::effect(format!("fast-{i:02}"), "fast", "{}")))
        .collect();
    assert_eq!(ok("enqueue", s.enqueue_batch(specs, K)), 26);
    h.clock().advance(1_000);
    let claim = |limit: usize, slow: usize, fast: usize| {
        let budget = ClaimBudget::new(limit)
            .with_in_flight("slow", slow)
            .with_in_flight("fast", fast);
        let batch = ok("claim", s.claim_work_within("a", K, &budget, 30_000));
        let mut by_handler: BTreeMap<String, usize> = BTreeMap::new();
        for c in &batch {
            *by_handler.entry(c.item.handler.clone()).or_default() += 1;
        }
        by_handler
    };
    let only = |handler: &str, n: usize| BTreeMap::from([(handler.to_owned(), n)]);
    // The fast items finish at once: the slow handler still holds seven, then four.
    assert_eq!(claim(1, 7, 0), only("fast", 1));
    assert_eq!(claim(1, 7, 0), only("fast", 1), "not the slow one's turn");
    assert_eq!(claim(4, 4, 0), only("fast", 4), "the fast handler's share");
    assert_eq!(
        claim(4, 4, 4),
        only("slow", 4),
        "nothing else due: every slot"
    );
}

/// Within one handler: higher priority first, then earlier due, then id; an item not yet
/// due waits whatever its priority.
pub fn priorities_order_one_handlers_claims(h: &dyn Harness) {
    let s = h.store();
    let now = s.now();
    let spec = |id: &str, priority: i32, not_before: Option<i64>| NewWork {
        not_before,
        priority,
        ..NewWork::effect(id, "mail", "{}")
    };
    ok(
        "old low",
        s.enqueue(spec("old-low", 0, Some(now - 9_000)), K),
    );
    ok("new high", s.enqueue(spec("new-high", 5, None), K));
    ok(
        "old high",
        s.enqueue(spec("old-high", 5, Some(now - 1_000)), K),
    );
    ok(
        "negative",
        s.enqueue(spec("negative", -3, Some(now - 60_000)), K),
    );
    ok(
        "later top",
        s.enqueue(spec("later-top", 99, Some(now + 60_000)), K),
    );
    let batch = ok("claim", s.claim_batch("a", K, 10, 30_000));
    let ids: Vec<&str> = batch.iter().map(|w| w.id.as_str()).collect();
    assert_eq!(ids, ["old-high", "new-high", "old-low", "negative"]);
    assert_eq!(
        ok("read", s.work("new-high")).expect("exists").priority,
        5,
        "the priority is stored with the item"
    );
}

/// The overview's waiting lanes — what `ops::lateness` states — agree with the items
/// themselves: each lane's oldest pending / retry `nextEligibleAt`, read back from the
/// list of items; claimed and finished items are not waiting, and lateness is now − that.
pub fn lateness_per_lane_matches_the_items(h: &dyn Harness) {
    let s = h.store();
    flood(h, 30);
    h.clock().advance(45_000);
    ok(
        "mail",
        s.enqueue(NewWork::effect("mail-0", "mail", "{}"), K),
    );
    let later = s.now() + 60_000;
    ok(
        "not yet due",
        s.enqueue(
            NewWork {
                not_before: Some(later),
                ..NewWork::effect("cron-0", "cron", "{}")
            },
            K,
        ),
    );
    h.clock().advance(2_000);
    // The oldest flood item is claimed: the lane's oldest waiting one is the next.
    ok("claim", s.claim("flood-00000", "a", K, 30_000));
    let overview = ok("overview", s.overview());
    let items = ok(
        "list",
        s.list_work(
            &crate::model::work::WorkFilter::default(),
            &crate::model::PageRequest::first(1_000),
        ),
    )
    .rows;
    let mut expected: BTreeMap<(&'static str, String), i64> = BTreeMap::new();
    for w in items.iter().filter(|w| {
        matches!(
            w.state,
            crate::model::WorkState::Pending | crate::model::WorkState::Retry
        )
    }) {
        let at = expected
            .entry((w.kind.as_str(), w.handler.clone()))
            .or_insert(w.next_eligible_at);
        *at = (*at).min(w.next_eligible_at);
    }
    let listed: BTreeMap<(&'static str, String), i64> = overview
        .waiting_lanes
        .iter()
        .map(|(lane, at)| ((lane.kind.as_str(), lane.handler.clone()), *at))
        .collect();
    assert_eq!(listed, expected);
    assert_eq!(overview.oldest_waiting, expected.values().min().copied());

    let now = s.now();
    let late = crate::rules::lateness::lanes(&overview.waiting_lanes, now);
    let seen: Vec<(&str, i64)> = late
        .iter()
        .map(|l| (l.handler.as_str(), l.late_ms))
        .collect();
    let flood_due = ok("read", s.work("flood-00001"))
        .expect("exists")
        .next_eligible_at;
    assert_eq!(
        seen,
        [(FLOOD, now - flood_due), ("mail", 2_000)],
        "the flood's lateness grows; a lane not due yet is not late"
    );
}

/// Claims over many lanes of uneven depth — a lane shorter than its share, lanes deeper
/// than it, priorities, items not yet due, lapsed claims in and past their reclaim grace,
/// handler limits, batches that do not divide by the lanes — take exactly the items the
/// memory reference takes, in the same order. (A provider that reads a claim's lanes and
/// their items ahead, in fewer statements, must answer as the lane-by-lane reads would.)
pub fn claims_over_uneven_lanes_match_the_memory_reference(h: &dyn Harness) {
    let reference = MemoryHarness::new();
    reference.clock().set(h.store().now());
    let both = [h.store(), reference.store()];
    let depths = [("a", 1), ("b", 3), ("c", 40), ("d", 7), ("e", 90)];
    for s in &both {
        let now = s.now();
        let specs: Vec<NewWork> = depths
            .iter()
            .flat_map(|&(handler, depth)| {
                (0..depth).map(move |i: usize| NewWork {
                    priority: i32::try_from(i % 3).unwrap_or(0) - 1,
                    not_before: (i % 11 == 10).then_some(now + 60_000),
                    ..NewWork::effect(format!("{handler}-{i:03}"), handler, "{}")
                })
            })
            .collect();
        assert_eq!(ok("enqueue", s.enqueue_batch(specs, K)), 141);
        for id in ["c-005", "e-017", "d-002", "e-040"] {
            ok("dead claims", s.claim(id, "dead", K, 1_000));
        }
    }
    let advance = |ms| {
        h.clock().advance(ms);
        reference.clock().advance(ms);
    };
    advance(1_500);
    let budgets = [
        ClaimBudget::new(7),
        ClaimBudget::new(23).with_handler("e", 4),
        ClaimBudget::new(1),
        ClaimBudget::new(64).with_in_flight("c", 9),
        ClaimBudget::new(5)
            .with_handler("c", 0)
            .with_handler("e", 0),
        ClaimBudget::new(200),
    ];
    for (n, budget) in budgets.iter().enumerate() {
        let owner = format!("claimer-{n}");
        let [got, want] = [&both[0], &both[1]].map(|s| {
            ok("claim", s.claim_work_within(&owner, K, budget, 30_000))
                .iter()
                .map(|c| c.item.id.clone())
                .collect::<Vec<_>>()
        });
        assert_eq!(got, want, "batch {n} ({budget:?}) on {}", h.provider());
        advance(10_000);
    }
}
