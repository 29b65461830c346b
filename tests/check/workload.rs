//! A clean, realistic run through the public API reports nothing, on memory and SQLite, in
//! tiny pages and in passes over shares of the resources.

use leasehold::check::{CheckOptions, Report, check, codes, render_text};
use leasehold::clock::Clock;
use leasehold::model::event::NewEvent;
use leasehold::model::schedule::{CatchUp, Trigger};
use leasehold::model::work::NewWork;
use leasehold::model::{Failure, FailureClass, WorkKind};
use leasehold::store::{Completion, Keyed};
use serde_json::json;

use super::{
    Fixture, LEASE, T0, V1, assert_codes, assert_reported, authority, fixture, k1, k2,
    sqlite_fixture,
};

// --- a clean, realistic run through the public API

/// Claims, completions, retries, a crash and reclaim after expiry with fenced refusals,
/// group commit, schedule firings polled by two authorities, event dedup, a cursor handed
/// between authorities, leases with renew / handoff / release, and a second build whose
/// authority is refused the first build's work.
#[allow(clippy::too_many_lines)]
fn mixed_workload(f: &Fixture) {
    let s = &f.store;
    for (id, version) in [("a-1", V1), ("a-2", V1), ("a-3", "2.0.0")] {
        s.register_authority(&authority(id, version, T0)).unwrap();
    }
    let specs: Vec<NewWork> = (0..8)
        .map(|n| NewWork::effect(format!("e-{n}"), "send-email", "{}"))
        .collect();
    assert_eq!(s.enqueue_batch(specs, k1()).unwrap(), 8);
    assert!(
        !s.enqueue(NewWork::effect("e-0", "send-email", "{}"), k1())
            .unwrap(),
        "idempotent enqueue"
    );

    // a-1 claims five in one transaction; completes two, fails one retryably.
    let first = s.claim_batch("a-1", k1(), 5, LEASE).unwrap();
    assert_eq!(first.len(), 5);
    s.complete(&first[0].id, "a-1", first[0].generation, Some("{}".into()))
        .unwrap();
    s.complete(&first[1].id, "a-1", first[1].generation, None)
        .unwrap();
    let retryable = Failure {
        class: FailureClass::Retryable,
        code: "SMTP_DOWN".into(),
        message: "try later".into(),
    };
    s.fail(&first[2].id, "a-1", first[2].generation, retryable)
        .unwrap();
    assert!(
        s.claim("e-5", "a-3", k2(), LEASE).is_err(),
        "another build never claims"
    );

    // a-1 stalls past its lease; a-2 reclaims everything still open.
    f.clock.advance(LEASE + 60_000);
    let second = s.claim_batch("a-2", k1(), 32, LEASE).unwrap();
    assert!(second.len() >= 5, "reclaimed {}", second.len());
    // The stale owner wakes up: every write is fenced.
    let stale = s
        .complete(&first[3].id, "a-1", first[3].generation, None)
        .unwrap_err();
    assert_eq!(stale.code(), "WORK_FENCED");
    assert!(
        s.renew_claim(&first[4].id, "a-1", first[4].generation, LEASE)
            .is_err()
    );
    // A late duplicate completion of a finished item is `already-terminal`.
    assert!(
        s.complete(&first[0].id, "a-1", first[0].generation, None)
            .is_err()
    );

    // a-2 group-commits, with one stale entry that refuses only itself.
    let mut batch: Vec<Completion> = second
        .iter()
        .map(|w| Completion {
            id: w.id.clone(),
            owner: "a-2".into(),
            generation: w.generation,
            outcome: Ok(None),
            retry: leasehold::rules::retry::Retry::default(),
        })
        .collect();
    batch.push(Completion {
        id: first[3].id.clone(),
        owner: "a-1".into(),
        generation: first[3].generation,
        outcome: Ok(None),
        retry: leasehold::rules::retry::Retry::default(),
    });
    let answers = s.complete_batch(&batch).unwrap();
    assert_eq!(answers.iter().filter(|a| a.is_err()).count(), 1);

    // Schedules: two pollers observe the same instant, one firing each boundary.
    s.create_schedule(
        "tick",
        Trigger::Interval { every_ms: 60_000 },
        CatchUp::Latest,
        "tick",
        "{}",
        k1(),
    )
    .unwrap();
    f.clock.advance(61_000);
    let fired = s.fire_due_schedules(k1(), 16).unwrap();
    assert!(fired >= 1);
    assert_eq!(fired + s.fire_due_schedules(k1(), 16).unwrap(), fired);
    for w in s.claim_batch("a-1", k1(), 32, LEASE).unwrap() {
        s.complete(&w.id, "a-1", w.generation, None).unwrap();
        assert!(s.complete(&w.id, "a-2", w.generation, None).is_err());
    }

    // Events: accepted, duplicate, conflict, unidentified.
    let event = |id: Option<&str>, amount: u64| NewEvent {
        event_type: "payment.captured".into(),
        source: id.map(|_| "stripe".into()),
        external_id: id.map(Into::into),
        payload: json!({"amount": amount}),
    };
    for e in [
        event(Some("evt-1"), 10),
        event(Some("evt-1"), 10),
        event(Some("evt-1"), 11),
        event(Some("evt-2"), 5),
        event(None, 1),
        event(None, 1),
    ] {
        s.ingest(&e).unwrap();
    }

    // A cursor: a-1 moves it, stalls; a-2 takes over; a-1's late write is fenced.
    s.create_subscription("s-1", "payment.captured", "deliver", k1())
        .unwrap();
    let c1 = s.claim("cursor:s-1", "a-1", k1(), LEASE).unwrap();
    s.advance_cursor("s-1", "a-1", c1.generation, 1).unwrap();
    assert_eq!(
        s.advance_cursor("s-1", "a-1", c1.generation, 1)
            .unwrap_err()
            .code(),
        "stale-sequence"
    );
    f.clock.advance(LEASE + 1);
    let c2 = s.claim("cursor:s-1", "a-2", k1(), LEASE).unwrap();
    assert_eq!(
        s.advance_cursor("s-1", "a-1", c1.generation, 2)
            .unwrap_err()
            .code(),
        "WORK_FENCED"
    );
    s.advance_cursor("s-1", "a-2", c2.generation, 3).unwrap();
    s.yield_back("cursor:s-1", "a-2", c2.generation, f.clock.now() + 1_000)
        .unwrap();

    // Leases: acquire, renew, expiry and takeover (the old holder is fenced), handoff, release.
    let keyed = Keyed { key: None };
    let l1 = s.acquire("leader", "a-1", 10_000.0, keyed).unwrap();
    s.renew("leader", &l1.token, l1.generation, 10_000.0)
        .unwrap();
    f.clock.advance(20_001);
    let l2 = s.acquire("leader", "a-2", 10_000.0, keyed).unwrap();
    assert!(
        s.renew("leader", &l1.token, l1.generation, 10_000.0)
            .is_err()
    );
    let l3 = s
        .handoff(
            "leader",
            "a-2",
            &l2.token,
            l2.generation,
            "a-1",
            10_000.0,
            keyed,
        )
        .unwrap();
    s.release("leader", "a-1", &l3.token, l3.generation, keyed)
        .unwrap();
    assert!(
        s.release("leader", "a-2", &l2.token, l2.generation, keyed)
            .is_err()
    );

    // Finish what is left, as healthy authorities would.
    for w in s.claim_batch("a-1", k1(), 32, LEASE).unwrap() {
        if w.kind == WorkKind::Cursor {
            s.yield_back(&w.id, "a-1", w.generation, f.clock.now() + 1_000)
                .unwrap();
        } else {
            s.complete(&w.id, "a-1", w.generation, None).unwrap();
        }
    }
    for id in ["a-1", "a-2", "a-3"] {
        s.heartbeat(&authority(id, V1, T0).incarnation(), false)
            .unwrap();
    }
}

#[test]
fn a_realistic_mixed_workload_is_clean() {
    let f = fixture();
    mixed_workload(&f);
    let report = f.run();
    assert!(report.is_clean(), "{}", render_text(&report));
    let c = report.checked;
    assert!(
        c.grants >= 15 && c.writes >= 20 && c.items >= 10 && c.journal_events == 4,
        "{c:?}"
    );
    assert!(report.oldest_revision.is_some() && !report.history_may_be_trimmed);

    // Tiny pages read exactly the same history (claim batches put many grants in one
    // revision: the pager must neither skip nor repeat them).
    let paged = f.run_with(2);
    assert_eq!(paged, report);
}

#[test]
fn the_same_workload_is_clean_on_sqlite_and_a_planted_violation_is_found() {
    let f = sqlite_fixture();
    mixed_workload(&f);
    let report = f.run();
    assert!(report.is_clean(), "{}", render_text(&report));
    assert_eq!(f.run_with(2), report);
    let memory = fixture();
    mixed_workload(&memory);
    assert_eq!(memory.run().checked, report.checked);

    f.grant("e-0", 1, "intruder");
    let report = f.run_with(3);
    assert_codes(&report, &[codes::TWO_OWNERS_ONE_GENERATION]);
    assert_reported(
        &report,
        codes::TWO_OWNERS_ONE_GENERATION,
        &["e-0", "a-1", "intruder"],
    );
}

#[test]
fn tiny_pages_still_find_a_violation_after_a_busy_history() {
    let f = fixture();
    mixed_workload(&f);
    // e-0 was claimed and completed by a-1 under generation 1, long ago: found by reading
    // e-0's grants back, whatever the page size.
    f.grant("e-0", 1, "intruder");
    for page in [1, 2, 3, 7] {
        let report = f.run_with(page);
        assert_codes(&report, &[codes::TWO_OWNERS_ONE_GENERATION]);
        assert_reported(
            &report,
            codes::TWO_OWNERS_ONE_GENERATION,
            &["e-0", "a-1", "intruder"],
        );
    }
    let e1 = f.store.work("e-1").unwrap().unwrap();
    f.grant("e-1", e1.generation, "intruder");
    let report = f.run_with(3);
    assert_reported(
        &report,
        codes::TWO_OWNERS_ONE_GENERATION,
        &["e-1", e1.owner_id.as_deref().unwrap(), "intruder"],
    );
    assert_eq!(report.violations.len(), 2, "{}", render_text(&report));
}

/// A store with more resources than one pass may keep is checked in several passes over
/// disjoint shares of them (bounded memory): together they find exactly what one pass finds,
/// read every record once, and name the same range — however small the share.
#[test]
fn passes_over_shares_of_the_resources_find_what_one_pass_finds() {
    let f = fixture();
    mixed_workload(&f);
    // One of each per-resource violation, on resources of their own: a grant is a row
    // without a verb, a write names the logical effect id and the state it leaves.
    let planted = [
        ("e-0", 1, "intruder", "", ""),
        ("x-1", 1, "a-1", "", ""),
        ("x-1", 2, "a-2", "", ""),
        ("x-1", 1, "a-1", "complete", "x-1 succeeded"),
        ("x-2", 1, "a-1", "", ""),
        ("x-2", 1, "a-1", "fail", "intent-1 retry"),
        ("x-2", 2, "a-2", "", ""),
        ("x-2", 2, "a-2", "complete", "intent-1b succeeded"),
        ("x-3", 1, "a-1", "", ""),
        ("x-3", 1, "a-1", "complete", "x-3 succeeded"),
        ("x-3", 2, "a-2", "", ""),
        ("x-3", 2, "a-2", "fail", "x-3 failed"),
        ("x-4", 1, "a-1", "", ""),
        ("x-4", 1, "a-1", "renew", "intent-4 claimed"),
    ];
    f.item("x-4", WorkKind::Effect);
    for (resource, generation, owner, verb, effect) in planted {
        if verb.is_empty() {
            f.grant(resource, generation, owner);
        } else {
            let (logical, state) = effect.split_once(' ').unwrap();
            let detail =
                json!({"logicalEffectId": logical, "idempotencyKey": logical, "state": state});
            f.write(resource, generation, owner, verb, true, detail);
        }
    }

    let sorted = |report: &Report| {
        let mut all: Vec<String> = report
            .violations
            .iter()
            .chain(&report.gaps)
            .map(|v| format!("{} {:?} {}", v.invariant, v.ids, v.sentence))
            .collect();
        all.sort();
        all
    };
    let whole = f.run();
    // The mixed workload's late item waits while a live authority keeps claiming its
    // build's work (the planted grants): a backlog, which every share must see too — the
    // claims that excuse it are noted from every resource, not only the share's.
    assert_eq!(whole.violations.len(), 5, "{}", render_text(&whole));
    assert_eq!(whole.backlogged_items, 1, "{}", render_text(&whole));
    for per_pass in [1, 2, 3, 5, 8] {
        let options = CheckOptions {
            resources_per_pass: per_pass,
            page_size: 4,
            ..CheckOptions::at(f.clock.now())
        };
        let parts = check(&f.store, &options).expect("check");
        assert_eq!(sorted(&parts), sorted(&whole), "{per_pass} a pass");
        assert_eq!(parts.checked, whole.checked, "{per_pass} a pass");
        assert_eq!(
            (
                parts.incompatible_items,
                parts.backlogged_items,
                parts.oldest_revision,
                parts.history_from
            ),
            (
                whole.incompatible_items,
                whole.backlogged_items,
                whole.oldest_revision,
                whole.history_from
            ),
        );
    }
}

/// A pass keeps state only for the resources the history names, so a store of many items
/// and little history is read in one pass, however few resources a pass may keep (it used
/// to be cut into as many passes as its items needed, each reading every item again).
#[test]
fn many_items_with_little_history_are_checked_in_one_pass() {
    let f = fixture();
    // Enqueued, so that the store's counts know them.
    let idle: Vec<NewWork> = (0..60)
        .map(|n| NewWork::effect(format!("idle-{n:02}"), "noop", "{}"))
        .collect();
    f.store.enqueue_batch(idle, k1()).expect("enqueue");
    f.grant("idle-07", 1, "a-1");
    f.grant("idle-07", 1, "a-2");
    let options = CheckOptions {
        resources_per_pass: 4,
        page_size: 8,
        ..CheckOptions::at(f.clock.now())
    };
    let mut phases: Vec<String> = Vec::new();
    let report = leasehold::check::check_showing(&f.store, &options, &mut |phase, _, _| {
        if phases.last().is_none_or(|last| last != phase) {
            phases.push(phase.to_owned());
        }
    })
    .expect("check");
    assert!(
        phases.iter().all(|p| !p.contains("part")),
        "one pass: {phases:?}"
    );
    // The whole-history reads that count nothing as they go are named before they start.
    assert_eq!(
        phases.first().map(String::as_str),
        Some(leasehold::check::ORDER_PHASE),
        "{phases:?}"
    );
    assert_eq!(report.checked.items, 60);
    assert_eq!(
        report.of(codes::TWO_OWNERS_ONE_GENERATION).count(),
        1,
        "{}",
        render_text(&report)
    );
}
