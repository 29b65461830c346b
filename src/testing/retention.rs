//! Retention: `Store::trim` removes only what its policy no longer keeps, in bounded
//! batches, keeps the counts equal to the rows, and is idempotent; the dedup window
//! forgets an event id, after which the same id is accepted again.

use std::collections::BTreeMap;

use crate::Store;
use crate::model::event::NewEvent;
use crate::model::work::WorkFilter;
use crate::model::{DedupOutcome, PageRequest, WorkState};
use crate::store::{Keyed, RetentionPolicy, TrimReport};

use super::reads::counts_match_rows;
use super::work::{effect, terminal};
use super::{Harness, K, ok};

const HOUR: i64 = 3_600_000;
const DAY: i64 = 24 * HOUR;

fn event(source: &str, id: &str) -> NewEvent {
    NewEvent {
        event_type: "order.paid".into(),
        source: Some(source.into()),
        external_id: Some(id.into()),
        payload: serde_json::json!({"id": id}),
    }
}

fn ids(s: &Store) -> Vec<String> {
    let page = PageRequest::first(1_000);
    let rows = ok("items", s.list_work(&WorkFilter::default(), &page)).rows;
    rows.into_iter().map(|w| w.id).collect()
}

/// Trims until a call removes nothing; returns every call's report.
fn drain(s: &Store, policy: &RetentionPolicy, batch: usize) -> Vec<TrimReport> {
    let mut reports = Vec::new();
    loop {
        let report = ok("trim", s.trim(policy, batch));
        reports.push(report);
        if report.total() == 0 {
            return reports;
        }
        assert!(reports.len() < 100, "trimming never ends: {reports:?}");
    }
}

/// Old succeeded items, old keyed answers, old ingestions and old audit entries go, at most
/// `batch` per table per call; pending and claimed items, failed ones (they wait for a
/// person) and recent succeeded ones stay, whatever their age; the counts equal the rows after every call; trimming again
/// removes nothing.
#[expect(
    clippy::too_many_lines,
    reason = "a scripted scenario: its steps in the order they happen"
)]
pub fn trim_removes_only_what_is_past_the_policy(h: &dyn Harness) {
    let s = h.store();
    let specs = (0..10).map(|i| effect(&format!("old-{i}"))).collect();
    ok("enqueue", s.enqueue_batch(specs, K));
    let claimed = ok("claim", s.claim_batch("a", K, 8, 60_000));
    for (i, it) in claimed.iter().enumerate() {
        match i {
            0..=3 => drop(ok("complete", s.complete(&it.id, "a", it.generation, None))),
            4 | 5 => drop(ok(
                "dead",
                s.fail(&it.id, "a", it.generation, terminal("E")),
            )),
            _ => {} // still claimed
        }
    }
    ok(
        "keyed",
        s.acquire("r-1", "op", 5_000.0, Keyed { key: Some("k-old") }),
    );
    ok("audit", s.audit("me", "cancel", "x", "ok"));
    for i in 0..3 {
        ok("ingest", s.ingest(&event("shop", &format!("e-{i}"))));
    }
    h.clock().advance(8 * DAY);
    ok("enqueue", s.enqueue(effect("new"), K));
    let new = ok("claim", s.claim_batch("b", K, 1, 60_000)).remove(0);
    ok("complete", s.complete(&new.id, "b", new.generation, None));
    ok("audit", s.audit("me", "cancel", "y", "ok"));
    ok("ingest", s.ingest(&event("shop", "e-new")));
    let live: Vec<String> = ids(&s)
        .into_iter()
        .filter(|id| {
            let item = ok("item", s.work(id)).expect("item");
            item.state != WorkState::Succeeded
        })
        .collect();
    assert_eq!(
        live.len(),
        6,
        "two pending, two claimed, two failed: {live:?}"
    );

    let policy = RetentionPolicy::default();
    let reports = drain(&s, &policy, 2);
    for report in &reports {
        for n in [report.work, report.dedup, report.idempotency, report.audit] {
            assert!(n <= 2, "a batch of 2 removed {n}: {report:?}");
        }
        assert!(report.ingestions <= 2, "{report:?}");
    }
    let removed = reports
        .iter()
        .fold(TrimReport::default(), |a, r| TrimReport {
            work: a.work + r.work,
            instances: a.instances + r.instances,
            dedup: a.dedup + r.dedup,
            idempotency: a.idempotency + r.idempotency,
            ingestions: a.ingestions + r.ingestions,
            audit: a.audit + r.audit,
        });
    assert_eq!(
        removed,
        TrimReport {
            work: 4,
            instances: 0,
            dedup: 3,
            idempotency: 1,
            ingestions: 3,
            audit: 0,
        }
    );
    let mut left = ids(&s);
    left.sort();
    let mut expected = live.clone();
    expected.push(new.id.clone());
    expected.sort();
    assert_eq!(left, expected, "only old succeeded items went");
    assert!(ok("item", s.work("new")).is_some());
    let (_, cells) = counts_match_rows(&s);
    assert!(cells.keys().any(|(_, st, _)| *st == "failed"));
    let targets = |s: &Store| {
        let audit = ok("audit", s.list_audit(&PageRequest::first(10))).rows;
        audit.into_iter().map(|a| a.target).collect::<Vec<_>>()
    };
    assert_eq!(targets(&s), ["x", "y"], "the audit is kept for 30 days");
    let ingestions = ok("ingestions", s.list_ingestions(&PageRequest::first(10))).rows;
    assert_eq!(ingestions.len(), 1);
    counts_match_rows(&h.reopen());

    assert_eq!(ok("again", s.trim(&policy, 100)), TrimReport::default());

    h.clock().advance(23 * DAY);
    let later = ok("trim", s.trim(&policy, 100));
    assert_eq!((later.work, later.audit), (1, 1), "{later:?}");
    assert_eq!(targets(&s), ["y"]);
    assert_eq!(
        left.len() - 1,
        ids(&s).len(),
        "the recent item went in its turn"
    );
    counts_match_rows(&s);
    assert_eq!(
        ok("another handle", h.reopen().trim(&policy, 100)),
        TrimReport::default()
    );
}

/// An event id inside its source's window is a duplicate; once the window has passed and a
/// trim ran, the same id is accepted again (a new journal event). A source with a window
/// of its own is trimmed by it, the others by the default.
pub fn an_event_id_past_its_dedup_window_is_accepted_again(h: &dyn Harness) {
    let s = h.store();
    let policy = RetentionPolicy {
        dedup_by_source: BTreeMap::from([("fast".to_owned(), HOUR)]),
        ..RetentionPolicy::default()
    };
    let first = ok("ingest", s.ingest(&event("shop", "e-1")));
    ok("ingest", s.ingest(&event("fast", "e-1")));
    h.clock().advance(2 * HOUR);
    ok("trim", s.trim(&policy, 10));
    let again = |source: &str| ok("ingest", s.ingest(&event(source, "e-1"))).outcome;
    assert_eq!(
        again("shop"),
        DedupOutcome::Duplicate,
        "inside the default window"
    );
    assert_eq!(again("fast"), DedupOutcome::Accepted, "past its own window");
    h.clock().advance(6 * DAY);
    ok("trim", s.trim(&policy, 10));
    assert_eq!(
        again("shop"),
        DedupOutcome::Duplicate,
        "still inside 7 days"
    );
    h.clock().advance(DAY);
    ok("trim", s.trim(&policy, 10));
    let resent = ok("ingest", s.ingest(&event("shop", "e-1")));
    assert_eq!(resent.outcome, DedupOutcome::Accepted, "past the window");
    assert!(resent.seq > first.seq, "a new journal event");
    assert_eq!(
        again("shop"),
        DedupOutcome::Duplicate,
        "the new record dedups again"
    );
}

/// A policy outside its bounds is refused before anything is removed.
pub fn a_policy_outside_its_bounds_is_refused(h: &dyn Harness) {
    let s = h.store();
    ok("enqueue", s.enqueue(effect("e"), K));
    let it = ok("claim", s.claim_batch("a", K, 1, 60_000)).remove(0);
    ok("complete", s.complete(&it.id, "a", it.generation, None));
    h.clock().advance(RetentionPolicy::MAX_MS + DAY);
    for policy in [
        RetentionPolicy {
            finished_ms: RetentionPolicy::MIN_MS - 1,
            ..RetentionPolicy::default()
        },
        RetentionPolicy {
            audit_ms: RetentionPolicy::MAX_MS + 1,
            ..RetentionPolicy::default()
        },
        RetentionPolicy {
            dedup_by_source: BTreeMap::from([("s".to_owned(), 0)]),
            ..RetentionPolicy::default()
        },
    ] {
        let err = s.trim(&policy, 10).expect_err("refused");
        assert_eq!(err.code(), "INVALID", "{err}");
    }
    assert_eq!(ids(&s), ["e"], "nothing was removed");
}
