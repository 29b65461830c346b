//! Event dedup and the journal; subscription cursors.

use crate::model::event::NewEvent;
use crate::model::{DedupOutcome, PageRequest, Subscription, WorkKind, WorkState};
use serde_json::json;

use super::{Harness, K, ok, refused};

fn event(source: Option<&str>, id: Option<&str>, payload: serde_json::Value) -> NewEvent {
    NewEvent {
        event_type: "order.paid".into(),
        source: source.map(str::to_owned),
        external_id: id.map(str::to_owned),
        payload,
    }
}

/// Every dedup outcome — accepted, duplicate (also with keys in another order),
/// `EVENT_ID_CONFLICT`, unidentified (no source, no id, an empty id) — and a journal whose
/// store-global `seq` strictly increases, holds exactly the accepted and unidentified
/// events, and survives a reopen.
#[expect(
    clippy::too_many_lines,
    reason = "a scripted scenario: its steps in the order they happen"
)]
pub fn every_dedup_outcome_and_a_monotone_journal(h: &dyn Harness) {
    let s = h.store();
    let payload = json!({"amount": 100, "order": {"id": "o-1", "lines": [1, 2]}});
    let reordered = json!({"order": {"lines": [1, 2], "id": "o-1"}, "amount": 100});
    let outcome = |e: &NewEvent| ok("ingest", s.ingest(e));

    let first = outcome(&event(Some("stripe"), Some("evt_1"), payload.clone()));
    assert_eq!(first.outcome, DedupOutcome::Accepted);
    let seq1 = first.seq.expect("accepted events are journalled");

    let dup = outcome(&event(Some("stripe"), Some("evt_1"), payload.clone()));
    assert_eq!(
        (dup.outcome, dup.seq),
        (DedupOutcome::Duplicate, Some(seq1))
    );
    let dup2 = outcome(&event(Some("stripe"), Some("evt_1"), reordered));
    assert_eq!(
        (dup2.outcome, dup2.seq),
        (DedupOutcome::Duplicate, Some(seq1)),
        "canonical JSON ignores key order"
    );

    let conflict = outcome(&event(
        Some("stripe"),
        Some("evt_1"),
        json!({"amount": 101}),
    ));
    assert_eq!(conflict.outcome, DedupOutcome::Conflict);
    assert_eq!(conflict.outcome.as_str(), "EVENT_ID_CONFLICT");
    assert_eq!(
        ok("high water", s.journal_high_water()),
        seq1,
        "neither duplicates nor conflicts are journalled"
    );

    let other_source = outcome(&event(Some("adyen"), Some("evt_1"), payload.clone()));
    assert_eq!(
        other_source.outcome,
        DedupOutcome::Accepted,
        "dedup is per (source, externalEventId)"
    );

    let mut unidentified = Vec::new();
    for (source, id) in [
        (None, None),
        (Some("stripe"), None),
        (None, Some("evt_9")),
        (Some("stripe"), Some("")),
        (Some(""), Some("evt_9")),
    ] {
        for _ in 0..2 {
            let got = outcome(&event(source, id, payload.clone()));
            assert_eq!(
                got.outcome,
                DedupOutcome::Unidentified,
                "source {source:?} id {id:?}"
            );
            unidentified.push(
                got.seq
                    .expect("unidentified events are journalled (at-least-once)"),
            );
        }
    }

    let s = h.reopen();
    let after_reopen = ok(
        "ingest",
        s.ingest(&event(Some("stripe"), Some("evt_1"), payload.clone())),
    );
    assert_eq!(
        (after_reopen.outcome, after_reopen.seq),
        (DedupOutcome::Duplicate, Some(seq1)),
        "dedup is durable"
    );
    let fresh = ok(
        "ingest",
        s.ingest(&event(Some("stripe"), Some("evt_2"), payload.clone())),
    );
    assert_eq!(fresh.outcome, DedupOutcome::Accepted);

    let mut expected = vec![seq1, other_source.seq.expect("seq")];
    expected.extend(&unidentified);
    expected.push(fresh.seq.expect("seq"));
    assert!(
        expected.windows(2).all(|w| w[0] < w[1]),
        "seq strictly increases: {expected:?}"
    );
    let journal = ok("journal", s.journal_after(0, None, 1_000));
    assert_eq!(journal.iter().map(|e| e.seq).collect::<Vec<_>>(), expected);
    assert_eq!(
        ok("high water", s.journal_high_water()),
        *expected.last().expect("seq")
    );
    for e in &journal {
        assert_eq!(
            e.payload,
            crate::rules::dedup::canonical_json(&payload),
            "the canonical payload is journalled"
        );
    }
    // Never a synthesised id: an unidentified event keeps exactly what it arrived with.
    let none = journal
        .iter()
        .find(|e| e.seq == unidentified[0])
        .expect("journalled");
    assert_eq!(
        (none.source.as_deref(), none.external_id.as_deref()),
        (None, None)
    );
    assert_eq!(
        ok(
            "journal after",
            s.journal_after(seq1, Some("order.paid"), 2)
        )
        .len(),
        2
    );
    assert!(
        ok(
            "other types",
            s.journal_after(0, Some("order.refunded"), 10)
        )
        .is_empty()
    );

    let ingestions = ok("ingestions", s.list_ingestions(&PageRequest::first(100))).rows;
    assert_eq!(ingestions.len(), 17);
    let count = |o: DedupOutcome| ingestions.iter().filter(|i| i.outcome == o).count() as u64;
    let overview = ok("overview", s.overview());
    for o in [
        DedupOutcome::Accepted,
        DedupOutcome::Duplicate,
        DedupOutcome::Conflict,
        DedupOutcome::Unidentified,
    ] {
        let counted = overview
            .events
            .iter()
            .find(|(name, _)| name == o.as_str())
            .map_or(0, |(_, n)| *n);
        assert_eq!(counted, count(o), "{} count", o.as_str());
    }
    assert_eq!(
        (
            count(DedupOutcome::Accepted),
            count(DedupOutcome::Duplicate),
            count(DedupOutcome::Conflict)
        ),
        (3, 3, 1)
    );
}

/// Cursor writes are fenced on the cursor item's claim and strictly forward:
/// `stale-sequence` for a repeat or a step back, `WORK_FENCED` once another owner took the
/// cursor, and the refused writes change nothing.
#[expect(
    clippy::too_many_lines,
    reason = "a scripted scenario: its steps in the order they happen"
)]
pub fn cursor_writes_are_fenced_and_monotone(h: &dyn Harness) {
    let store = h.store();
    assert!(ok(
        "create",
        store.create_subscription("billing", "order.paid", "bill", K)
    ));
    assert!(
        !ok(
            "create again",
            store.create_subscription("billing", "order.paid", "bill", K)
        ),
        "idempotent"
    );
    let work_id = Subscription::work_id("billing");
    let cursor_item = ok("item", store.work(&work_id)).expect("the cursor's work item");
    assert_eq!(
        (cursor_item.kind, cursor_item.state),
        (WorkKind::Cursor, WorkState::Pending)
    );

    assert_eq!(
        refused(
            "advance unclaimed",
            store.advance_cursor("billing", "a", 0, 1)
        ),
        "WORK_FENCED"
    );
    let a = ok("a claims the cursor", store.claim(&work_id, "a", K, 1_000));
    let moved = ok(
        "advance to 5",
        store.advance_cursor("billing", "a", a.generation, 5),
    );
    assert_eq!(
        (
            moved.sequence,
            moved.generation,
            moved.updated_by.as_deref()
        ),
        (5, a.generation, Some("a"))
    );
    assert_eq!(
        refused(
            "repeat 5",
            store.advance_cursor("billing", "a", a.generation, 5)
        ),
        "stale-sequence"
    );
    assert_eq!(
        refused(
            "back to 3",
            store.advance_cursor("billing", "a", a.generation, 3)
        ),
        "stale-sequence"
    );
    ok(
        "forward to 7",
        store.advance_cursor("billing", "a", a.generation, 7),
    );

    h.clock().advance(1_000);
    let b = ok(
        "b takes the cursor over",
        h.reopen().claim_batch("b", K, 10, 1_000),
    )
    .pop()
    .expect("cursor reclaimed");
    assert_eq!(
        (b.id.as_str(), b.generation),
        (work_id.as_str(), a.generation + 1)
    );
    assert_eq!(
        refused(
            "a after the takeover",
            store.advance_cursor("billing", "a", a.generation, 8)
        ),
        "WORK_FENCED"
    );
    assert_eq!(
        refused(
            "b, not forward",
            store.advance_cursor("billing", "b", b.generation, 7)
        ),
        "stale-sequence"
    );
    let sub = ok("read", store.subscription("billing")).expect("subscription");
    assert_eq!(
        (sub.sequence, sub.generation, sub.updated_by.as_deref()),
        (7, a.generation, Some("a")),
        "refusals changed nothing"
    );
    let by_b = ok(
        "b advances",
        store.advance_cursor("billing", "b", b.generation, 9),
    );
    assert_eq!(
        (by_b.sequence, by_b.generation, by_b.updated_by.as_deref()),
        (9, b.generation, Some("b"))
    );

    // Yield hands the cursor back; whoever claims it next continues from 9.
    ok(
        "b yields",
        store.yield_back(&work_id, "b", b.generation, store.now()),
    );
    assert_eq!(
        refused(
            "b after yielding",
            store.advance_cursor("billing", "b", b.generation, 10)
        ),
        "WORK_FENCED"
    );
    let c = ok("c claims", store.claim(&work_id, "c", K, 1_000));
    assert_eq!(c.generation, b.generation + 1);
    assert_eq!(
        ok(
            "c advances",
            store.advance_cursor("billing", "c", c.generation, 10)
        )
        .sequence,
        10
    );

    assert_eq!(
        refused(
            "unknown subscription",
            store.advance_cursor("nope", "c", 1, 1)
        ),
        "NOT_FOUND"
    );
    let (_, writes) = ok("history", store.ownership_history(Some(&work_id), 0, 100));
    let refusals: Vec<&str> = writes
        .iter()
        .filter(|w| !w.accepted)
        .filter_map(|w| w.refusal.as_deref())
        .collect();
    assert!(
        refusals.contains(&"stale-sequence") && refusals.contains(&"WORK_FENCED"),
        "{refusals:?}"
    );
}

/// Reconnect resumes from the durable cursor through any authority: after the owner dies
/// and the store is reopened, another owner takes the cursor and continues from exactly the
/// last durable sequence, replaying the journal from there.
pub fn cursor_resumes_from_the_durable_cursor_after_reopen(h: &dyn Harness) {
    let s = h.store();
    ok(
        "create",
        s.create_subscription("ship", "order.paid", "ship", K),
    );
    let mut seqs = Vec::new();
    for i in 0..6 {
        let got = ok(
            "ingest",
            s.ingest(&event(
                Some("shop"),
                Some(&format!("o-{i}")),
                json!({"n": i}),
            )),
        );
        seqs.push(got.seq.expect("seq"));
    }
    let work_id = Subscription::work_id("ship");
    let a = ok("a claims", s.claim(&work_id, "a", K, 1_000));
    let delivered = ok("journal", s.journal_after(0, Some("order.paid"), 3));
    let last = u64::try_from(delivered.last().expect("events").seq).expect("positive");
    ok(
        "a advances",
        s.advance_cursor("ship", "a", a.generation, last),
    );
    drop(s);

    // a dies; another process starts and takes over once the lease has lapsed.
    h.clock().advance(5_000);
    let s = h.reopen();
    let b = ok("b claims", s.claim_batch("b", K, 10, 1_000))
        .into_iter()
        .find(|i| i.id == work_id)
        .expect("cursor");
    let durable = ok("read", s.subscription("ship")).expect("subscription");
    assert_eq!(
        (durable.sequence, durable.updated_by.as_deref()),
        (last, Some("a")),
        "resume from the durable cursor"
    );
    let rest = ok(
        "journal",
        s.journal_after(
            i64::try_from(durable.sequence).expect("fits"),
            Some("order.paid"),
            100,
        ),
    );
    assert_eq!(
        rest.iter().map(|e| e.seq).collect::<Vec<_>>(),
        seqs[3..].to_vec(),
        "nothing skipped, nothing repeated"
    );
    let end = u64::try_from(rest.last().expect("events").seq).expect("positive");
    ok(
        "b advances",
        s.advance_cursor("ship", "b", b.generation, end),
    );
    assert_eq!(
        ok("read", h.reopen().subscription("ship")).map(|s| (s.sequence, s.generation)),
        Some((end, b.generation))
    );
    assert_eq!(
        refused(
            "a wakes up",
            h.reopen()
                .advance_cursor("ship", "a", a.generation, end + 1)
        ),
        "WORK_FENCED"
    );
}

/// A cursor as operators are told about it (`ops::cursors`), read the same on every
/// provider: its owner and claim generation, its position against the newest event of its
/// own type (not the journal's: other types never make it look behind), lag 0 once caught
/// up, and its claims over the last minute.
pub fn cursor_status_reads_the_same_on_every_provider(h: &dyn Harness) {
    use crate::ops::cursors::status;

    let s = h.store();
    ok(
        "create",
        s.create_subscription("ship", "order.paid", "ship", K),
    );
    let other = |i: usize| NewEvent {
        event_type: "order.viewed".into(),
        ..event(Some("shop"), Some(&format!("v-{i}")), json!({ "v": i }))
    };
    let mut last_paid = 0;
    for i in 0..3 {
        let got = ok(
            "ingest",
            s.ingest(&event(
                Some("shop"),
                Some(&format!("p-{i}")),
                json!({ "n": i }),
            )),
        );
        last_paid = got.seq.expect("seq");
        ok("ingest", s.ingest(&other(i)));
    }
    let sub = |s: &crate::Store| ok("read", s.subscription("ship")).expect("subscription");
    let before = ok("status", status(&s, &sub(&s), s.now()));
    assert_eq!(
        (
            before.owner_id.as_deref(),
            before.generation,
            before.position
        ),
        (None, 0, 0)
    );
    let high_water = u64::try_from(last_paid).expect("positive");
    assert_eq!((before.high_water, before.lag), (high_water, high_water));
    assert!(before.claims_per_sec.abs() < f64::EPSILON);

    let work_id = Subscription::work_id("ship");
    let a = ok("a claims", s.claim(&work_id, "a", K, 1_000));
    ok(
        "a advances",
        s.advance_cursor("ship", "a", a.generation, high_water),
    );
    let caught_up = ok("status", status(&s, &sub(&s), s.now()));
    assert_eq!(
        (caught_up.owner_id.as_deref(), caught_up.generation),
        (Some("a"), a.generation)
    );
    assert_eq!((caught_up.position, caught_up.lag), (high_water, 0));
    assert!(
        ok("journal", s.journal_high_water()) > last_paid,
        "the journal itself is further on"
    );

    h.clock().advance(5_000);
    let b = ok("b claims", s.claim(&work_id, "b", K, 1_000));
    let moved = ok("status", status(&s, &sub(&s), s.now()));
    assert_eq!(
        (moved.owner_id.as_deref(), moved.generation),
        (Some("b"), b.generation)
    );
    assert!(
        (moved.claims_per_sec - 2.0 / 60.0).abs() < 1e-9,
        "{moved:?}"
    );
}
