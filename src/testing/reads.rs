//! The store revision, keyset-paged reads and the incremental counts.

use std::collections::{BTreeMap, BTreeSet};

use crate::Store;
use crate::model::event::NewEvent;
use crate::model::schedule::{CatchUp, Trigger};
use crate::model::work::{NewWork, WorkFilter};
use crate::model::{Authority, Page, PageRequest, WorkItem, WorkKind, WorkState};
use crate::ops::claims::{ClaimStanding, OwnedClaims};
use crate::store::{Keyed, WorkOrder};

use super::work::{effect, retryable, terminal};
use super::{Harness, K, K_OTHER, ok, refused};

const NO_KEY: Keyed<'static> = Keyed { key: None };

fn authority(id: &str) -> Authority {
    Authority {
        instance_id: id.into(),
        compat: K.into(),
        build: "test".into(),
        config: "{}".into(),
        started_at: 0,
        heartbeat_at: 0,
        stopped_at: None,
        host: "localhost".into(),
        pid: 1,
        published: crate::model::Published::default(),
    }
}

/// Every committed write advances the revision by exactly one, whatever it touched; reads,
/// a refusal that writes nothing and a keyed replay leave it where it is; a refusal that is
/// recorded for the checker is a commit and advances it. Another handle sees the change.
#[expect(
    clippy::too_many_lines,
    reason = "a scripted scenario: its steps in the order they happen"
)]
pub fn every_commit_advances_the_revision(h: &dyn Harness) {
    let s = h.store();
    let watcher = h.reopen();
    let mut rev = ok("revision", s.revision());
    let mut token = ok("change token", watcher.change_token());
    let mut commit = |what: &str, s: &Store| {
        let next = ok("revision", s.revision());
        assert_eq!(next, rev + 1, "{what}: one commit, one revision");
        let t = ok("change token", watcher.change_token());
        assert_ne!(t, token, "{what}: another handle notices the commit");
        assert_eq!(ok("revision seen elsewhere", watcher.revision()), next);
        (rev, token) = (next, t);
    };

    let lease = ok("acquire", s.acquire("r", "a", 1_000.0, NO_KEY));
    commit("acquire", &s);
    ok(
        "renew",
        s.renew("r", &lease.token, lease.generation, 1_000.0),
    );
    commit("renew", &s);
    ok(
        "checkpoint",
        s.save_checkpoint("r", "a", &lease.token, lease.generation, "x", NO_KEY),
    );
    commit("checkpoint", &s);
    let keyed = ok(
        "keyed acquire",
        s.acquire("k", "a", 600_000.0, Keyed { key: Some("key") }),
    );
    commit("keyed acquire", &s);
    ok("enqueue", s.enqueue(effect("e1"), K));
    commit("enqueue", &s);
    ok(
        "enqueue batch",
        s.enqueue_batch((2..12).map(|i| effect(&format!("e{i}"))).collect(), K),
    );
    commit("enqueue batch (ten items, one commit)", &s);
    let claimed = ok("claim batch", s.claim_batch("a", K, 5, 1_000));
    commit("claim batch (five items, one commit)", &s);
    ok(
        "complete",
        s.complete(&claimed[0].id, "a", claimed[0].generation, None),
    );
    commit("complete", &s);
    ok(
        "ingest",
        s.ingest(&NewEvent {
            event_type: "t".into(),
            source: Some("s".into()),
            external_id: Some("1".into()),
            payload: serde_json::json!({}),
        }),
    );
    commit("ingest", &s);
    ok(
        "schedule",
        s.create_schedule(
            "tick",
            Trigger::Interval { every_ms: 1_000 },
            CatchUp::Latest,
            "h",
            "{}",
            K,
        ),
    );
    commit("create schedule", &s);
    h.clock().advance(1_000);
    assert_eq!(ok("fire", s.fire_due_schedules(K, 10)), 1);
    commit("fire schedules", &s);
    ok("subscription", s.create_subscription("sub", "t", "h", K));
    commit("create subscription", &s);
    ok("register", s.register_authority(&authority("auth-1")));
    commit("register authority", &s);
    ok(
        "heartbeat",
        s.heartbeat(&authority("auth-1").incarnation(), false),
    );
    commit("heartbeat", &s);
    ok("audit", s.audit("op@host", "cancel", "wf-1", "ok"));
    commit("audit", &s);
    assert_eq!(
        refused(
            "stale renew",
            s.renew("r", "forged", lease.generation, 1_000.0)
        ),
        "WORK_FENCED"
    );
    commit("a refused fenced write (recorded for the checker)", &s);
    ok(
        "release",
        s.release("r", "a", &lease.token, lease.generation, NO_KEY),
    );
    commit("release", &s);

    // Nothing committed: the revision stays.
    let still = |what: &str, s: &Store| {
        assert_eq!(
            ok("revision", s.revision()),
            rev,
            "{what} must not advance the revision"
        );
    };
    ok("read lease", s.lease("r"));
    ok("read work", s.work("e1"));
    ok(
        "list",
        s.list_work(&WorkFilter::default(), &PageRequest::first(100)),
    );
    ok("overview", s.overview());
    ok("history", s.ownership_history(None, 0, 100));
    ok("journal", s.journal_after(0, None, 10));
    ok(
        "ownership",
        s.check_ownership("k", &keyed.token, keyed.generation),
    );
    still("reads", &s);
    assert_eq!(
        refused(
            "acquire over a live lease",
            s.acquire("k", "b", 1_000.0, NO_KEY)
        ),
        "WORK_IN_PROGRESS"
    );
    still("a refused acquire", &s);
    assert_eq!(
        refused(
            "capped acquire",
            s.clone()
                .with_owner_cap(1)
                .acquire("z", "a", 1_000.0, NO_KEY)
        ),
        "LEASE_CAP_REACHED"
    );
    still("a capped acquire", &s);
    assert_eq!(
        ok(
            "keyed replay",
            s.acquire("k", "a", 600_000.0, Keyed { key: Some("key") })
        ),
        keyed
    );
    still("a keyed replay", &s);
    assert!(ok("empty claim", s.claim_batch("a", K_OTHER, 10, 1_000)).is_empty());
    still("an empty claim batch", &s);
    assert_eq!(ok("fire nothing", s.fire_due_schedules(K, 10)), 0);
    still("a poll with nothing due", &s);
    assert_eq!(
        ok("revision after reopen", h.reopen().revision()),
        rev,
        "the revision is durable"
    );
}

/// Follows `next` forward from the first page; returns every key in the order read.
fn forward<T>(
    limit: usize,
    fetch: impl Fn(&PageRequest) -> Page<T>,
    key: impl Fn(&T) -> String,
) -> Vec<String> {
    let mut keys = Vec::new();
    let mut request = PageRequest::first(limit);
    for _ in 0..10_000 {
        let page = fetch(&request);
        assert!(
            page.rows.len() <= limit,
            "a page holds at most `limit` rows"
        );
        let page_keys: Vec<String> = page.rows.iter().map(&key).collect();
        assert!(
            page_keys.windows(2).all(|w| w[0] < w[1]),
            "rows ascend within a page: {page_keys:?}"
        );
        keys.extend(page_keys);
        match page.next {
            Some(next) => request = PageRequest::after(next, limit),
            None => return keys,
        }
    }
    panic!("paging forward never ended");
}

/// Follows `next` backwards from the last page; returns every key, ascending.
fn backward<T>(
    limit: usize,
    fetch: impl Fn(&PageRequest) -> Page<T>,
    key: impl Fn(&T) -> String,
) -> Vec<String> {
    let mut pages: Vec<Vec<String>> = Vec::new();
    let mut request = PageRequest::last(limit);
    for _ in 0..10_000 {
        let page = fetch(&request);
        assert!(
            page.rows.len() <= limit,
            "a page holds at most `limit` rows"
        );
        let page_keys: Vec<String> = page.rows.iter().map(&key).collect();
        assert!(
            page_keys.windows(2).all(|w| w[0] < w[1]),
            "rows ascend within a page: {page_keys:?}"
        );
        pages.push(page_keys);
        match page.next {
            Some(next) => request = PageRequest::before(next, limit),
            None => return pages.into_iter().rev().flatten().collect(),
        }
    }
    panic!("paging backwards never ended");
}

/// Checks that forward and backward paging at several page sizes return exactly `all`.
fn every_row_once<T>(
    what: &str,
    all: &[String],
    fetch: impl Fn(&PageRequest) -> Page<T>,
    key: impl Fn(&T) -> String,
) {
    for limit in [1, 2, 3, 5, 7, all.len().max(1), all.len() + 1] {
        assert_eq!(
            forward(limit, &fetch, &key),
            all,
            "{what}: forward pages of {limit}"
        );
        assert_eq!(
            backward(limit, &fetch, &key),
            all,
            "{what}: backward pages of {limit}"
        );
    }
}

/// Keyset paging — forwards, backwards, continuing from each page's key, with and without a
/// filter — returns every row exactly once, in key order.
#[expect(
    clippy::too_many_lines,
    reason = "a scripted scenario: its steps in the order they happen"
)]
pub fn paging_returns_every_row_exactly_once(h: &dyn Harness) {
    let s = h.store();
    let all_work: Vec<String> = (0..23).map(|i| format!("w-{i:02}")).collect();
    ok(
        "enqueue",
        s.enqueue_batch(all_work.iter().map(|id| effect(id)).collect(), K),
    );
    let claimed: BTreeSet<String> = ok("claim", s.claim_batch("a", K, 7, 60_000))
        .into_iter()
        .map(|w| w.id)
        .collect();
    let resources: Vec<String> = (0..12).map(|i| format!("r-{i:02}")).collect();
    for r in &resources {
        ok("acquire", s.acquire(r, "a", 1_000.0, NO_KEY));
    }
    for i in 0..15 {
        let id = format!("evt-{}", i % 11);
        ok(
            "ingest",
            s.ingest(&NewEvent {
                event_type: "t".into(),
                source: Some("s".into()),
                external_id: Some(id),
                payload: serde_json::json!({"i": i}),
            }),
        );
    }
    let schedules: Vec<String> = (0..5).map(|i| format!("s-{i}")).collect();
    for id in &schedules {
        ok(
            "schedule",
            s.create_schedule(
                id,
                Trigger::Interval { every_ms: 60_000 },
                CatchUp::Latest,
                "h",
                "{}",
                K,
            ),
        );
    }
    let subscriptions: Vec<String> = (0..4).map(|i| format!("sub-{i}")).collect();
    for id in &subscriptions {
        ok("subscription", s.create_subscription(id, "t", "h", K));
    }
    let s = h.reopen();

    let mut every_item = all_work.clone();
    every_item.extend(
        subscriptions
            .iter()
            .map(|id| crate::model::Subscription::work_id(id)),
    );
    every_item.sort();
    every_row_once(
        "work",
        &every_item,
        |p| ok("list", s.list_work(&WorkFilter::default(), p)),
        |w| w.id.clone(),
    );
    let filter = WorkFilter {
        states: vec![WorkState::Claimed],
        ..WorkFilter::default()
    };
    let claimed: Vec<String> = claimed.into_iter().collect();
    every_row_once(
        "claimed work",
        &claimed,
        |p| ok("list", s.list_work(&filter, p)),
        |w| w.id.clone(),
    );
    let filter = WorkFilter {
        kind: Some(WorkKind::Effect),
        owner: Some("a".into()),
        ..WorkFilter::default()
    };
    every_row_once(
        "work owned by a",
        &claimed,
        |p| ok("list", s.list_work(&filter, p)),
        |w| w.id.clone(),
    );
    // An id prefix is a key range: it pages like any filter, alone or under an index.
    let teens: Vec<String> = all_work
        .iter()
        .filter(|id| id.starts_with("w-1"))
        .cloned()
        .collect();
    let filter = WorkFilter {
        id_prefix: Some("w-1".into()),
        ..WorkFilter::default()
    };
    every_row_once(
        "work with an id prefix",
        &teens,
        |p| ok("list", s.list_work(&filter, p)),
        |w| w.id.clone(),
    );
    let filter = WorkFilter {
        id_prefix: Some("w-0".into()),
        states: vec![WorkState::Claimed],
        ..WorkFilter::default()
    };
    let claimed_zeros: Vec<String> = claimed
        .iter()
        .filter(|id| id.starts_with("w-0"))
        .cloned()
        .collect();
    every_row_once(
        "claimed work with an id prefix",
        &claimed_zeros,
        |p| ok("list", s.list_work(&filter, p)),
        |w| w.id.clone(),
    );
    for (prefix, expected) in [("cursor", subscriptions.len()), ("w-2", 3), ("x", 0)] {
        let filter = WorkFilter {
            id_prefix: Some(prefix.into()),
            ..WorkFilter::default()
        };
        let got = ok("list", s.list_work(&filter, &PageRequest::first(100)));
        assert_eq!(got.rows.len(), expected, "prefix {prefix}");
    }
    // Ordered by an indexed column (state, kind), then id: one seek per group.
    let everything = ok(
        "all",
        s.list_work(&WorkFilter::default(), &PageRequest::first(1_000)),
    )
    .rows;
    for (order, column) in [
        (
            WorkOrder::State,
            (|w: &WorkItem| w.state.as_str()) as fn(&WorkItem) -> &'static str,
        ),
        (WorkOrder::Kind, |w: &WorkItem| w.kind.as_str()),
    ] {
        for filter in [
            WorkFilter::default(),
            WorkFilter {
                owner: Some("a".into()),
                ..WorkFilter::default()
            },
            WorkFilter {
                states: vec![WorkState::Pending, WorkState::Claimed],
                id_prefix: Some("w-1".into()),
                ..WorkFilter::default()
            },
        ] {
            let mut expected: Vec<String> = everything
                .iter()
                .filter(|w| filter.owner.is_none() || w.owner_id == filter.owner)
                .filter(|w| filter.states.is_empty() || filter.states.contains(&w.state))
                .filter(|w| {
                    filter
                        .id_prefix
                        .as_deref()
                        .is_none_or(|p| w.id.starts_with(p))
                })
                .map(|w| format!("{}|{}", column(w), w.id))
                .collect();
            expected.sort();
            every_row_once(
                &format!("work by {order:?} where {filter:?}"),
                &expected,
                |p| ok("ordered", s.list_work_ordered(&filter, order, p)),
                |w| format!("{}|{}", column(w), w.id),
            );
        }
    }
    every_row_once(
        "leases",
        &resources,
        |p| ok("list", s.list_leases(p)),
        |l| l.resource_id.clone(),
    );
    every_row_once(
        "schedules",
        &schedules,
        |p| ok("list", s.list_schedules(p)),
        |x| x.schedule_id.clone(),
    );
    every_row_once(
        "subscriptions",
        &subscriptions,
        |p| ok("list", s.list_subscriptions(p)),
        |x| x.subscription_id.clone(),
    );
    let ingestions: Vec<String> = ok("all", s.list_ingestions(&PageRequest::first(1_000)))
        .rows
        .iter()
        .map(|i| format!("{:020}", i.id))
        .collect();
    assert_eq!(ingestions.len(), 15);
    every_row_once(
        "ingestions",
        &ingestions,
        |p| ok("list", s.list_ingestions(p)),
        |i| format!("{:020}", i.id),
    );

    let beyond = ok(
        "after the end",
        s.list_work(&WorkFilter::default(), &PageRequest::after("zzz", 5)),
    );
    assert!(beyond.rows.is_empty() && beyond.next.is_none());
    let before = ok(
        "before the start",
        s.list_work(&WorkFilter::default(), &PageRequest::before("a", 5)),
    );
    assert!(before.rows.is_empty() && before.next.is_none());
}

/// Asserts that the incremental counts in `overview()` equal the rows they count — work
/// items by (kind, state, build), a person's discards apart from the other failures (as
/// `state:discarded` and `state:failed` list them), instances by status, ingestions by
/// outcome — and returns the items with their count by cell.
pub fn counts_match_rows(store: &Store) -> (Vec<WorkItem>, WorkCells) {
    let overview = ok("overview", store.overview());
    let items = ok(
        "items",
        store.list_work(&WorkFilter::default(), &PageRequest::first(10_000)),
    )
    .rows;
    let mut expected = WorkCells::new();
    for it in &items {
        *expected
            .entry((it.kind, it.count_name(), it.compat.clone()))
            .or_default() += 1;
    }
    let counted: WorkCells = overview
        .work
        .iter()
        .filter(|c| c.count > 0)
        .map(|c| ((c.kind, c.name(), c.compat.clone()), c.count))
        .collect();
    assert_eq!(counted, expected, "work counts");

    let instances = ok(
        "instances",
        store.list_instances(None, &PageRequest::first(10_000)),
    )
    .rows;
    let by_status = tally(instances.iter().map(|i| i.status.as_str()));
    assert_eq!(nonzero(&overview.workflows), by_status, "instance counts");

    let ingestions = ok(
        "ingestions",
        store.list_ingestions(&PageRequest::first(10_000)),
    )
    .rows;
    let by_outcome = tally(ingestions.iter().map(|i| i.outcome.as_str()));
    assert_eq!(nonzero(&overview.events), by_outcome, "event counts");
    (items, expected)
}

/// How many times each name occurs.
fn tally<'a>(names: impl Iterator<Item = &'a str>) -> BTreeMap<String, u64> {
    let mut counts = BTreeMap::new();
    for name in names {
        *counts.entry(name.to_owned()).or_default() += 1;
    }
    counts
}

/// The counts above zero, by name.
fn nonzero(counts: &[(String, u64)]) -> BTreeMap<String, u64> {
    counts.iter().filter(|(_, n)| *n > 0).cloned().collect()
}

/// Work counts by (kind, state or `discarded`, build).
pub type WorkCells = BTreeMap<(WorkKind, &'static str, String), u64>;

/// After a mixed workload, the incremental counts in `overview()` equal what the items, the
/// history and the ingestions say, on this handle and after a reopen.
#[expect(
    clippy::too_many_lines,
    reason = "a scripted scenario: its steps in the order they happen"
)]
pub fn overview_counts_match_the_items(h: &dyn Harness) {
    let s = h.store();
    ok(
        "enqueue",
        s.enqueue_batch((0..30).map(|i| effect(&format!("e-{i:02}"))).collect(), K),
    );
    ok(
        "enqueue old",
        s.enqueue_batch(
            (0..4).map(|i| effect(&format!("old-{i}"))).collect(),
            K_OTHER,
        ),
    );
    ok(
        "enqueue later",
        s.enqueue(
            NewWork {
                not_before: Some(s.now() + 50_000),
                ..effect("later")
            },
            K,
        ),
    );
    ok(
        "schedule",
        s.create_schedule(
            "tick",
            Trigger::Interval { every_ms: 1_000 },
            CatchUp::All,
            "h",
            "{}",
            K,
        ),
    );
    ok("subscription", s.create_subscription("sub", "t", "h", K));
    let claimed = ok("claim", s.claim_batch("a", K, 20, 1_000));
    for (i, it) in claimed.iter().enumerate() {
        match i % 5 {
            0 | 1 => drop(ok("complete", s.complete(&it.id, "a", it.generation, None))),
            2 => drop(ok(
                "retry",
                s.fail(&it.id, "a", it.generation, retryable("E")),
            )),
            3 => drop(ok(
                "dead",
                s.fail(&it.id, "a", it.generation, terminal("E")),
            )),
            _ => {}
        }
    }
    // A person's decisions: a failure discarded, a pending item discarded, and a discard
    // undone by a requeue — each moves its item between the counts.
    let dead = &claimed[3].id;
    ok(
        "discard a failure",
        s.discard_work(dead, "op", "not needed"),
    );
    ok(
        "discard pending",
        s.discard_work("e-29", "op", "not needed"),
    );
    ok("discard again", s.discard_work("old-0", "op", "wrong"));
    ok(
        "requeue the discard",
        s.requeue_work("old-0", "op", "after all"),
    );
    h.clock().advance(3_000);
    ok("fire", s.fire_due_schedules(K, 10));
    let b = h.reopen();
    let reclaimed = ok("b claims", b.claim_batch("b", K, 12, 1_000));
    for it in reclaimed.iter().take(4) {
        ok("b completes", b.complete(&it.id, "b", it.generation, None));
    }
    for it in &claimed {
        let _ = s.complete(&it.id, "a", it.generation, None); // some refused, some already terminal
    }
    for i in 0..5 {
        let id = format!("x-{}", i % 3);
        ok(
            "ingest",
            s.ingest(&NewEvent {
                event_type: "t".into(),
                source: Some("s".into()),
                external_id: Some(id),
                payload: serde_json::json!({"i": i % 4}),
            }),
        );
    }

    for store in [h.store(), h.reopen()] {
        let overview = ok("overview", store.overview());
        let (items, expected) = counts_match_rows(&store);
        assert!(
            expected
                .keys()
                .map(|(_, st, _)| *st)
                .collect::<BTreeSet<_>>()
                .len()
                >= 5,
            "a mixed workload: {expected:?}"
        );
        assert_eq!(
            expected.get(&(WorkKind::Effect, "discarded", K.to_owned())),
            Some(&2),
            "the two discards, apart from the failures: {expected:?}"
        );

        let (grants, writes) = ok("history", store.ownership_history(None, 0, 100_000));
        assert_eq!(
            overview.claims,
            grants.iter().filter(|g| g.how == "claim").count() as u64,
            "claims"
        );
        assert_eq!(
            overview.writes_accepted,
            writes.iter().filter(|w| w.accepted).count() as u64,
            "accepted writes"
        );
        assert_eq!(
            overview.writes_refused,
            writes.iter().filter(|w| !w.accepted).count() as u64,
            "refused writes"
        );
        assert!(overview.writes_refused > 0);

        let oldest = items
            .iter()
            .filter(|i| matches!(i.state, WorkState::Pending | WorkState::Retry))
            .map(|i| i.next_eligible_at)
            .min();
        assert_eq!(overview.oldest_waiting, oldest, "oldest waiting");
        assert_eq!(overview.revision, ok("revision", store.revision()));
    }
}

/// An owner's claim counts are the store's own: every claimed item in its name, a claim
/// whose lease lapsed (`leaseExpiresAt <= now`) counted as expired, a completed item no
/// longer counted, another owner's claims apart — the same as counting its claimed items
/// one by one.
pub fn claim_counts_match_the_claimed_items(h: &dyn Harness) {
    let s = h.store();
    for n in 1..=5 {
        ok("enqueue", s.enqueue(effect(&format!("e-{n}")), K));
    }
    let e2 = ok("a claims e-2", s.claim("e-2", "a", K, 1_000));
    for id in ["e-1", "e-3"] {
        ok("a claims", s.claim(id, "a", K, 1_000));
    }
    ok("b claims e-4", s.claim("e-4", "b", K, 5_000));
    let counts = |owner: &str| {
        let claims = ok("owned", OwnedClaims::read(&s, owner, s.now()));
        (claims.claimed, claims.expired)
    };
    assert_eq!(counts("a"), (3, 0));
    h.clock().advance(1_000);
    assert_eq!(counts("a"), (3, 3), "a lease lapses at its expiry instant");
    ok("b claims e-5", s.claim("e-5", "b", K, 5_000));
    ok(
        "a completes e-2",
        s.complete("e-2", "a", e2.generation, None),
    );
    assert_eq!(counts("a"), (2, 2), "a completed item leaves a's count");
    assert_eq!(counts("b"), (2, 0));
    assert_eq!(counts("nobody"), (0, 0));
    let now = s.now();
    for owner in ["a", "b"] {
        let filter = WorkFilter {
            states: vec![WorkState::Claimed],
            owner: Some(owner.into()),
            ..WorkFilter::default()
        };
        let items = ok("list", s.list_work(&filter, &PageRequest::first(100))).rows;
        let expired = items
            .iter()
            .filter_map(|w| ClaimStanding::of_work(w, now))
            .filter(|c| c.is_expired())
            .count();
        assert_eq!(
            counts(owner),
            (items.len(), expired),
            "{owner}'s items, one by one"
        );
    }
}

/// The grant history read up to a revision: exactly the rows of the full history in
/// `(after, through]`, in order; a page that reaches its limit still ends at the end of
/// the last revision it reached, and never passes `through`.
pub fn grants_through_a_revision_are_a_slice_of_the_history(h: &dyn Harness) {
    let store = h.store();
    // Revisions of one, four and two grants (claim batches), with an enqueue between each.
    for (batch, n) in [("a", 1), ("b", 4), ("c", 2)] {
        let specs = (0..n).map(|i| effect(&format!("{batch}-{i}"))).collect();
        ok("enqueue", store.enqueue_batch(specs, K));
        let got = ok("claim", store.claim_batch("owner", K, n, 60_000));
        assert_eq!(got.len(), n);
    }
    let all = ok("history", store.ownership_history(None, 0, 1_000)).0;
    let revisions: Vec<u64> = all
        .iter()
        .map(|g| g.revision)
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let [r1, r2, r3] = revisions[..] else {
        panic!("three claim revisions: {all:?}");
    };
    let through = |after, through, limit| {
        ok(
            "grants through",
            store.grants_through(after, through, limit),
        )
    };
    let slice = |from: u64, to: u64| -> Vec<_> {
        all.iter()
            .filter(|g| g.revision > from && g.revision <= to)
            .cloned()
            .collect()
    };
    assert_eq!(through(0, r3, 1_000), all);
    assert_eq!(through(0, r2, 1_000), slice(0, r2));
    assert_eq!(
        through(r1, r2, 1_000),
        slice(r1, r2),
        "the second batch alone"
    );
    assert_eq!(through(r1, r3 - 1, 1_000), slice(r1, r2));
    // A limit inside the second batch: the page ends with that batch, not inside it, and
    // the third is not read.
    assert_eq!(through(0, r3, 2), slice(0, r2));
    assert_eq!(through(r2, r2, 1_000), Vec::new(), "an empty range");
    assert_eq!(
        through(r3, u64::MAX, 1_000),
        Vec::new(),
        "nothing after the last"
    );
}
