//! Failovers and refused writes, as the operator's incident lists read them: a failover
//! is a grant that took a resource from a holder that had not released it; a refused
//! write names who held the resource then. Both are recorded in the transaction that
//! granted or refused, and listed by time, newest first, paged, with a count.

use std::collections::BTreeSet;

use crate::model::{Grant, Holder, Takeover, WriteRecord};
use crate::rules::work::Backoff;
use crate::store::{Incidents, Keyed, RefusedWrite, Store};

use super::work::{effect, retryable};
use super::{Harness, K, ok, refused};

const NO_KEY: Keyed<'static> = Keyed { key: None };

fn failovers(s: &Store, since: i64) -> Incidents<Grant> {
    ok("failovers", s.failovers(since, None, 1_000))
}

fn rows_of<T: Clone>(list: &Incidents<T>) -> Vec<T> {
    list.rows.iter().map(|(_, row)| row.clone()).collect()
}

/// The refused writes of a page, without what the list adds to them.
fn writes_of(list: &Incidents<RefusedWrite>) -> Vec<WriteRecord> {
    list.rows.iter().map(|(_, r)| r.write.clone()).collect()
}

/// The grants the checker's history holds, in revision order.
fn grants(s: &Store) -> Vec<Grant> {
    ok("history", s.ownership_history(None, 0, 10_000)).0
}

/// A work claim and a lease acquire that take over an expired, unreleased holder are
/// failovers, with the holder, its generation and how long its lease had lapsed — the
/// same rows the grant history holds.
pub fn a_reclaim_after_expiry_is_a_failover(h: &dyn Harness) {
    let store = h.store();
    let t0 = store.now();
    ok("enqueue", store.enqueue(effect("e"), K));
    let a = ok("a claims", store.claim("e", "a", K, 1_000));
    let lease = ok("a acquires", store.acquire("r", "a", 1_000.0, NO_KEY));
    h.clock().advance(1_500);
    let b = ok("b reclaims", h.reopen().claim_batch("b", K, 10, 1_000));
    assert_eq!(b.len(), 1);
    h.clock().advance(250);
    let c = ok(
        "c reclaims the lease",
        store.acquire("r", "c", 1_000.0, NO_KEY),
    );

    let list = failovers(&store, t0);
    assert_eq!(list.total, 2);
    assert_eq!(list.next, None);
    let rows = rows_of(&list);
    let [lease_failover, work_failover] = &rows[..] else {
        panic!("two failovers, newest first: {list:?}");
    };
    assert_eq!(
        (
            lease_failover.resource_id.as_str(),
            lease_failover.owner_id.as_str()
        ),
        ("r", "c")
    );
    assert_eq!(lease_failover.generation, c.generation);
    assert_eq!(
        lease_failover.took_over,
        Some(Takeover {
            from_owner: "a".into(),
            from_generation: lease.generation,
            lapsed_ms: 750,
        })
    );
    assert_eq!(
        (
            work_failover.resource_id.as_str(),
            work_failover.owner_id.as_str()
        ),
        ("e", "b")
    );
    assert_eq!(work_failover.generation, a.generation + 1);
    assert_eq!(
        work_failover.took_over,
        Some(Takeover {
            from_owner: "a".into(),
            from_generation: a.generation,
            lapsed_ms: 500,
        })
    );
    assert_eq!(work_failover.at, t0 + 1_500);

    let history: Vec<Grant> = grants(&store)
        .into_iter()
        .filter(|g| g.took_over.is_some())
        .rev()
        .collect();
    assert_eq!(history, rows, "the list is the history's failovers");
}

/// Moves the holder agreed to are no failovers: a grant after a release, after a failed
/// or yielded attempt, a handoff, and the holder taking back its own expired lease.
pub fn release_then_claim_and_handoff_are_not_failovers(h: &dyn Harness) {
    let s = h.store();
    let t0 = s.now();
    let a = ok("a acquires", s.acquire("r", "a", 1_000.0, NO_KEY));
    ok(
        "a releases",
        s.release("r", "a", &a.token, a.generation, NO_KEY),
    );
    ok(
        "b acquires after the release",
        s.acquire("r", "b", 1_000.0, NO_KEY),
    );

    let a2 = ok("a acquires r2", s.acquire("r2", "a", 1_000.0, NO_KEY));
    ok(
        "a hands r2 to b",
        s.handoff("r2", "a", &a2.token, a2.generation, "b", 1_000.0, NO_KEY),
    );

    ok("a acquires r3", s.acquire("r3", "a", 1_000.0, NO_KEY));
    h.clock().advance(2_000);
    ok(
        "a takes back its own expired lease",
        s.acquire("r3", "a", 1_000.0, NO_KEY),
    );

    ok("enqueue", s.enqueue(effect("e1"), K));
    ok("enqueue", s.enqueue(effect("e2"), K));
    let e1 = ok("a claims e1", s.claim("e1", "a", K, 1_000));
    let e2 = ok("a claims e2", s.claim("e2", "a", K, 1_000));
    ok(
        "a fails e1",
        s.fail("e1", "a", e1.generation, retryable("E")),
    );
    ok(
        "a yields e2",
        s.yield_back("e2", "a", e2.generation, s.now()),
    );
    h.clock().advance(3_600_000);
    assert_eq!(
        ok("b claims both", s.claim_batch("b", K, 10, 1_000)).len(),
        2
    );

    assert_eq!(
        failovers(&s, t0),
        Incidents {
            rows: vec![],
            total: 0,
            next: None
        }
    );
    assert!(grants(&s).iter().all(|g| g.took_over.is_none()));
}

/// A refused write records the writer and its generation and who held the resource at
/// that moment, with that holder's generation — whatever the refusal.
pub fn a_refused_write_records_the_holder_then(h: &dyn Harness) {
    let s = h.store();
    let t0 = s.now();
    ok("enqueue", s.enqueue(effect("e"), K));
    let a = ok("a claims", s.claim("e", "a", K, 1_000));
    h.clock().advance(1_001 + Backoff::default().delay(1));
    let b = ok("b reclaims", s.claim("e", "b", K, 1_000));
    assert_eq!(
        refused("a completes late", s.complete("e", "a", a.generation, None)),
        "WORK_FENCED"
    );
    ok("b completes", s.complete("e", "b", b.generation, None));
    assert_eq!(
        refused(
            "a fails after b finished",
            s.fail("e", "a", a.generation, retryable("E"))
        ),
        "already-terminal"
    );
    let lease = ok("c acquires", s.acquire("r", "c", 1_000.0, NO_KEY));
    assert_eq!(
        refused(
            "renew under a stale generation",
            s.renew("r", &lease.token, 0, 1_000.0)
        ),
        "WORK_FENCED"
    );

    let list = ok("refused", s.refused_writes(t0, None, 100));
    assert_eq!(list.total, 3);
    let finishers: Vec<Option<String>> =
        rows_of(&list).into_iter().map(|r| r.finished_by).collect();
    assert_eq!(
        finishers,
        [None, Some("b".into()), None],
        "the late failure names b, whose completion ended the item; no other row names one"
    );
    let rows = writes_of(&list);
    let [renew, fail, complete] = &rows[..] else {
        panic!("three refused writes, newest first: {list:?}");
    };
    assert_eq!(
        (
            complete.resource_id.as_str(),
            complete.owner_id.as_str(),
            complete.generation
        ),
        ("e", "a", a.generation)
    );
    assert_eq!(complete.verb, "complete");
    assert_eq!(complete.refusal.as_deref(), Some("WORK_FENCED"));
    assert_eq!(
        complete.holder,
        Some(Holder {
            owner_id: Some("b".into()),
            generation: b.generation,
        })
    );
    assert_eq!(fail.verb, "fail");
    assert_eq!(fail.refusal.as_deref(), Some("already-terminal"));
    assert_eq!(
        fail.holder,
        Some(Holder {
            owner_id: None,
            generation: b.generation,
        }),
        "nobody held the finished item"
    );
    assert_eq!((renew.resource_id.as_str(), renew.generation), ("r", 0));
    assert_eq!(
        renew.holder,
        Some(Holder {
            owner_id: Some("c".into()),
            generation: lease.generation,
        })
    );
    let history: Vec<_> = ok("history", s.ownership_history(None, 0, 10_000))
        .1
        .into_iter()
        .filter(|w| !w.accepted)
        .rev()
        .collect();
    assert_eq!(history, rows, "the list is the history's refusals");
}

/// The window is by time: rows before `since` are left out, the count covers the whole
/// window, and pages continue newest first without losing or repeating a row — also
/// through many failovers made in one claim batch at one instant.
pub fn the_window_excludes_older_rows_and_pages_newest_first(h: &dyn Harness) {
    let s = h.store();
    let t0 = s.now();
    for i in 0..4 {
        ok("enqueue", s.enqueue(effect(&format!("e{i}")), K));
        ok("a claims", s.claim(&format!("e{i}"), "a", K, 1_000));
    }
    h.clock().advance(1_000 + Backoff::default().delay(1));
    let first = ok("b reclaims one", s.claim("e0", "b", K, 60_000));
    h.clock().advance(10_000);
    let since = s.now();
    assert_eq!(
        ok(
            "c reclaims three at once",
            s.claim_batch("c", K, 10, 60_000)
        )
        .len(),
        3
    );
    h.clock().advance(1);
    for i in 0..2 {
        let r = format!("r{i}");
        ok("d acquires", s.acquire(&r, "d", 1_000.0, NO_KEY));
    }
    h.clock().advance(5_000);
    for i in 0..2 {
        ok(
            "e reclaims",
            s.acquire(&format!("r{i}"), "e", 1_000.0, NO_KEY),
        );
    }

    assert_eq!(failovers(&s, t0).total, 6);
    let list = failovers(&s, since);
    assert_eq!(list.total, 5, "the reclaim before the window is left out");
    let window = rows_of(&list);
    assert!(window.iter().all(|g| g.at >= since));
    assert!(
        !window.iter().any(|g| g.generation == first.generation
            && g.resource_id == "e0"
            && g.owner_id == "b")
    );
    assert!(
        window.windows(2).all(|w| w[0].at >= w[1].at),
        "newest first"
    );

    for limit in [1, 2, 3, 5, 6] {
        let mut seen = Vec::new();
        let mut before = None;
        loop {
            let page = ok("page", s.failovers(since, before, limit));
            assert_eq!(page.total, 5);
            assert!(page.rows.len() <= limit);
            seen.extend(rows_of(&page));
            match page.next {
                Some(next) => before = Some(next),
                None => break,
            }
        }
        assert_eq!(seen, window, "pages of {limit}");
        let distinct: BTreeSet<_> = seen
            .iter()
            .map(|g| (g.revision, g.resource_id.clone()))
            .collect();
        assert_eq!(distinct.len(), 5);
    }
}

/// A write against something that does not exist (a work item or a subscription deleted
/// under its claim, a typo) is refused and recorded like any fenced refusal, so the
/// store's history counts every write an authority was refused.
pub fn a_write_to_a_missing_resource_is_recorded(h: &dyn Harness) {
    let s = h.store();
    let t0 = s.now();
    assert_eq!(
        refused("complete a missing item", s.complete("gone", "a", 3, None)),
        "NOT_FOUND"
    );
    assert_eq!(
        refused(
            "yield a missing item",
            s.yield_back("gone", "a", 3, s.now())
        ),
        "NOT_FOUND"
    );
    assert_eq!(
        refused(
            "advance a missing cursor",
            s.advance_cursor("nobody-subscribed", "a", 2, 5)
        ),
        "NOT_FOUND"
    );
    let list = ok("refused", s.refused_writes(t0, None, 100));
    let seen: Vec<(String, String, u64, Option<String>)> = writes_of(&list)
        .into_iter()
        .rev()
        .map(|w| {
            (
                w.verb.as_str().to_owned(),
                w.owner_id,
                w.generation,
                w.refusal,
            )
        })
        .collect();
    let row = |verb: &str, generation| {
        (
            verb.to_owned(),
            "a".to_owned(),
            generation,
            Some("NOT_FOUND".to_owned()),
        )
    };
    assert_eq!(
        seen,
        [row("complete", 3), row("yield", 3), row("cursor", 2)]
    );
    assert!(
        rows_of(&list)
            .iter()
            .all(|w| w.write.holder == Some(Holder::nobody())),
        "nobody held a missing resource: {list:?}"
    );
}
