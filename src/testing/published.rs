//! What an authority publishes about itself on its registration row (the outcomes it holds
//! in recovery): written with its heartbeat and fenced by its incarnation like
//! the heartbeat, read back exactly, bounded, and kept after a stop until its claims are
//! released or it is forgotten.

use crate::Store;
use crate::clock::Clock;
use crate::model::authority::RECOVERY_LISTED;
use crate::model::{Authority, PageRequest, Published, Recovering};
use crate::store::Forgot;

use super::work::effect;
use super::{Harness, K, ok, refused};

const ACTOR: &str = "alice@ops-1";
const LEASE: i64 = 3_000;

/// `id` started now by process `pid`, on a 3 s lease with a 1 s heartbeat.
fn started(h: &dyn Harness, id: &str, pid: u32) -> Authority {
    super::registry::started(id, pid, h.clock().now())
}

fn held(resource: &str, generation: u64, since: i64) -> Recovering {
    Recovering {
        resource_id: resource.into(),
        kind: "effect".into(),
        generation,
        why: "the read-back failed: store unavailable".into(),
        since,
    }
}

/// What the registry row of `id` publishes, as a reader sees it.
fn published(s: &Store, id: &str) -> Option<Published> {
    ok("list", s.list_authorities(&PageRequest::first(100)))
        .rows
        .into_iter()
        .find(|a| a.instance_id == id)
        .map(|a| a.published)
}

/// Published entries read back as written, through a reopened handle too; a
/// later heartbeat that publishes less clears what it no longer lists, and a plain
/// heartbeat leaves the account alone.
pub fn published_recovery_reads_back_and_clears(h: &dyn Harness) {
    let s = h.store();
    let a = started(h, "auth-1", 100);
    ok("register", s.register_authority(&a));
    assert_eq!(published(&s, "auth-1"), Some(Published::default()));

    let now = h.clock().now();
    let account = Published::of(vec![held("e2", 3, now - 10), held("e1", 1, now - 20)]);
    ok("publish", s.publish(&a.incarnation(), false, &account));
    let read = published(&h.reopen(), "auth-1").expect("registered");
    assert_eq!(read, account, "read back exactly");
    assert_eq!(read.in_recovery, 2);
    assert_eq!(
        read.recovery
            .iter()
            .map(|r| r.resource_id.as_str())
            .collect::<Vec<_>>(),
        ["e1", "e2"],
        "oldest first"
    );

    ok("plain heartbeat", s.heartbeat(&a.incarnation(), false));
    assert_eq!(published(&s, "auth-1"), Some(account));

    let decided = Published::of(vec![held("e2", 3, now - 10)]);
    ok("publish", s.publish(&a.incarnation(), false, &decided));
    assert_eq!(published(&s, "auth-1"), Some(decided));
    ok(
        "publish",
        s.publish(&a.incarnation(), false, &Published::default()),
    );
    assert!(published(&s, "auth-1").expect("registered").is_empty());
}

/// More held outcomes than the row lists: the oldest [`RECOVERY_LISTED`] are kept, the
/// count says how many there are in all.
pub fn published_recovery_is_bounded_with_a_count(h: &dyn Harness) {
    let s = h.store();
    let a = started(h, "auth-1", 100);
    ok("register", s.register_authority(&a));
    let now = h.clock().now();
    let many: Vec<Recovering> = (0..RECOVERY_LISTED + 50)
        .map(|i| {
            held(
                &format!("e{i:03}"),
                1,
                now - 1_000 + i64::try_from(i).unwrap(),
            )
        })
        .collect();
    ok(
        "publish",
        s.publish(&a.incarnation(), false, &Published::of(many)),
    );
    let read = published(&s, "auth-1").expect("registered");
    assert_eq!(read.in_recovery, (RECOVERY_LISTED + 50) as u64);
    assert_eq!(read.recovery.len(), RECOVERY_LISTED);
    assert_eq!(read.recovery[0].resource_id, "e000");
    assert_eq!(
        read.recovery[RECOVERY_LISTED - 1].resource_id,
        format!("e{:03}", RECOVERY_LISTED - 1)
    );
}

/// A superseded incarnation can neither clear nor replace the account of the start that
/// took its id over: its publish is refused like its heartbeat and changes nothing.
pub fn a_superseded_incarnation_cannot_publish(h: &dyn Harness) {
    let s = h.store();
    let first = started(h, "auth-1", 100);
    ok("register", s.register_authority(&first));
    h.clock().advance(LEASE * 2);
    let second = started(h, "auth-1", 200);
    ok(
        "a new start takes the gone id",
        s.register_authority(&second),
    );
    let now = h.clock().now();
    let own = Published::of(vec![held("e1", 2, now)]);
    ok("publish", s.publish(&second.incarnation(), false, &own));

    assert_eq!(
        refused(
            "stale clear",
            s.publish(&first.incarnation(), false, &Published::default())
        ),
        "INSTANCE_SUPERSEDED"
    );
    let stale = Published::of(vec![held("e9", 1, now)]);
    assert_eq!(
        refused("stale stop", s.publish(&first.incarnation(), true, &stale)),
        "INSTANCE_SUPERSEDED"
    );
    assert_eq!(published(&s, "auth-1"), Some(own));
}

/// A stopped authority's held outcomes stay listed; releasing its claims drops the entries
/// of the claims handed back (and only those), and forgetting it removes the rest.
pub fn held_outcomes_outlive_the_stop_until_release_or_forget(h: &dyn Harness) {
    let s = h.store();
    let a = started(h, "auth-1", 100);
    ok("register", s.register_authority(&a));
    ok("enqueue", s.enqueue(effect("e1"), K));
    let e1 = ok("claim", s.claim("e1", "auth-1", K, LEASE));
    let now = h.clock().now();
    let account = Published::of(vec![
        held("e1", e1.generation, now),
        // Already reclaimed by somebody else after a lapse: not this authority's claim.
        held("e7", 4, now),
    ]);
    ok("stop", s.publish(&a.incarnation(), true, &account));
    h.clock().advance(LEASE * 2);
    assert_eq!(published(&s, "auth-1"), Some(account.clone()));

    let released = ok("release", s.release_authority("auth-1", ACTOR, "drain"));
    assert_eq!(released.claims.len(), 1);
    let left = published(&s, "auth-1").expect("still registered");
    assert_eq!(left, account.without(&["e1"]));
    assert_eq!(
        left.recovery
            .iter()
            .map(|r| r.resource_id.as_str())
            .collect::<Vec<_>>(),
        ["e7"]
    );
    assert_eq!(left.in_recovery, 1);

    let forgot = ok("forget", s.forget_authority("auth-1", ACTOR, "gone"));
    assert!(matches!(forgot, Forgot::Now(..)), "{forgot:?}");
    assert_eq!(published(&s, "auth-1"), None);
}
