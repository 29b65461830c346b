//! A work item's checkpoint: resume state saved under the claim's fence, read by whoever
//! holds the next attempt. It lives as long as the item does — across a lapse, a reclaim
//! and a retry — and is dropped when the item ends or is requeued.

use crate::clock::Clock;
use crate::model::work::NewWork;
use crate::model::{WorkItem, WorkState, WriteRecord, WriteVerb};
use crate::rules::work::{Backoff, MAX_CHECKPOINT_BYTES};

use super::work::{effect, item, retryable, terminal};
use super::{Harness, K, ok, refused};

/// The write history of `id`, oldest first.
fn writes(h: &dyn Harness, id: &str) -> Vec<WriteRecord> {
    ok("history", h.store().ownership_history(Some(id), 0, 1_000)).1
}

/// Enqueues `id` and claims it for `owner`.
fn claimed(h: &dyn Harness, id: &str, owner: &str) -> WorkItem {
    let s = h.store();
    ok("enqueue", s.enqueue(effect(id), K));
    ok("claim", s.claim(id, owner, K, 1_000))
}

/// Lets `item`'s claim lapse and the retry backoff after it pass: it is claimable again.
fn lapse_and_back_off(h: &dyn Harness, item: &WorkItem) {
    let lease_left = item.lease_expires_at.expect("claimed") - h.clock().now();
    h.clock()
        .advance(lease_left + Backoff::default().delay(item.attempt_number));
}

/// Lets `item`'s claim lapse and its backoff pass, then `owner` claims it in a batch.
fn reclaimed(h: &dyn Harness, item: &WorkItem, owner: &str) -> WorkItem {
    lapse_and_back_off(h, item);
    let mut batch = ok("reclaim", h.reopen().claim_batch(owner, K, 10, 1_000));
    assert_eq!(batch.len(), 1, "the lapsed item is reclaimed");
    batch.pop().expect("reclaimed")
}

/// Saved under the claim, the checkpoint is on the item the store answers with and on
/// every later read (another handle too); a second save replaces it. Saving is not renewing,
/// and each save is an accepted fenced write in the history.
pub fn a_checkpoint_saved_under_the_claim_is_visible(h: &dyn Harness) {
    let s = h.store();
    let a = claimed(h, "e", "a");
    assert_eq!(a.checkpoint, None, "a new item has none");
    h.clock().advance(10);
    let saved = ok(
        "save",
        s.save_work_checkpoint("e", "a", a.generation, "{\"page\":1}"),
    );
    assert_eq!(saved.checkpoint.as_deref(), Some("{\"page\":1}"));
    assert_eq!(saved.lease_expires_at, a.lease_expires_at, "not a renewal");
    assert_eq!((saved.state, saved.generation), (WorkState::Claimed, 1));
    assert_eq!(ok("read", h.reopen().work("e")), Some(saved));

    let replaced = ok(
        "save again",
        s.save_work_checkpoint("e", "a", a.generation, "{\"page\":2}"),
    );
    assert_eq!(item(h, "e").checkpoint.as_deref(), Some("{\"page\":2}"));
    assert_eq!(item(h, "e"), replaced);

    let saves: Vec<_> = writes(h, "e")
        .into_iter()
        .filter(|w| w.verb == WriteVerb::Checkpoint)
        .collect();
    assert_eq!(saves.len(), 2);
    assert!(
        saves
            .iter()
            .all(|w| w.accepted && w.owner_id == "a" && w.generation == 1),
        "{saves:?}"
    );
}

/// After a reclaim the old owner's save is `WORK_FENCED`, recorded as a refused write with
/// the holder then, and changes nothing; an unknown item is `NOT_FOUND`, a finished one
/// `already-terminal`.
pub fn a_stale_checkpoint_is_fenced_and_changes_nothing(h: &dyn Harness) {
    let s = h.store();
    let a = claimed(h, "e", "a");
    ok(
        "a saves",
        s.save_work_checkpoint("e", "a", a.generation, "a-1"),
    );
    let b = reclaimed(h, &item(h, "e"), "b");
    let before = item(h, "e");
    assert_eq!(before, b);
    assert_eq!(
        refused(
            "a's save after the reclaim",
            s.save_work_checkpoint("e", "a", a.generation, "a-2")
        ),
        "WORK_FENCED"
    );
    assert_eq!(
        refused(
            "right generation, wrong owner",
            s.save_work_checkpoint("e", "a", b.generation, "a-3")
        ),
        "WORK_FENCED"
    );
    assert_eq!(item(h, "e"), before, "the stale owner changed nothing");
    let refusals: Vec<_> = writes(h, "e")
        .into_iter()
        .filter(|w| w.verb == WriteVerb::Checkpoint && !w.accepted)
        .collect();
    assert_eq!(refusals.len(), 2, "{refusals:?}");
    for w in &refusals {
        assert_eq!(w.refusal.as_deref(), Some("WORK_FENCED"));
        let holder = w.holder.as_ref().expect("the holder is recorded");
        assert_eq!(
            (holder.owner_id.as_deref(), holder.generation),
            (Some("b"), b.generation)
        );
    }

    assert_eq!(
        refused(
            "an unknown item",
            s.save_work_checkpoint("nope", "a", 1, "x")
        ),
        "NOT_FOUND"
    );
    ok("b completes", s.complete("e", "b", b.generation, None));
    assert_eq!(
        refused(
            "after the end",
            s.save_work_checkpoint("e", "b", b.generation, "late")
        ),
        "already-terminal"
    );
}

/// The owner whose claim lapsed left a checkpoint: the next owner reads it from the item
/// it claims — by a batch or by name — and resumes from it.
pub fn a_checkpoint_is_carried_to_the_next_owner_after_a_lapse(h: &dyn Harness) {
    let s = h.store();
    let first = claimed(h, "e", "a");
    ok(
        "a saves",
        s.save_work_checkpoint("e", "a", first.generation, "{\"row\":40}"),
    );
    let second = reclaimed(h, &item(h, "e"), "b");
    assert_eq!(
        (second.owner_id.as_deref(), second.generation),
        (Some("b"), 2)
    );
    assert_eq!(second.uncertain_attempts, 1, "the lapse counted");
    assert_eq!(second.checkpoint.as_deref(), Some("{\"row\":40}"));
    ok(
        "b saves",
        s.save_work_checkpoint("e", "b", second.generation, "{\"row\":80}"),
    );

    lapse_and_back_off(h, &item(h, "e"));
    let third = ok("c claims by name", h.reopen().claim("e", "c", K, 1_000));
    assert_eq!(third.checkpoint.as_deref(), Some("{\"row\":80}"));
}

/// A retryable failure keeps the checkpoint, so the next attempt resumes from it.
pub fn a_checkpoint_is_kept_across_a_retry(h: &dyn Harness) {
    let s = h.store();
    let a = claimed(h, "e", "a");
    ok(
        "a saves",
        s.save_work_checkpoint("e", "a", a.generation, "half"),
    );
    let retry = ok("fail", s.fail("e", "a", a.generation, retryable("E")));
    assert_eq!(
        (retry.state, retry.checkpoint.as_deref()),
        (WorkState::Retry, Some("half"))
    );
    h.clock().advance(Backoff::default().delay(1));
    let again = ok("attempt 2", h.reopen().claim("e", "b", K, 1_000));
    assert_eq!(
        (again.attempt_number, again.checkpoint.as_deref()),
        (2, Some("half"))
    );
}

/// An item that ends drops its checkpoint: succeeded, failed for good, discarded, dead
/// lettered; and a requeued item starts its fresh budget without one.
pub fn a_checkpoint_is_cleared_when_the_item_ends(h: &dyn Harness) {
    let s = h.store();
    let save = |id: &str, w: &WorkItem| {
        ok(
            "save",
            s.save_work_checkpoint(
                id,
                w.owner_id.as_deref().expect("owner"),
                w.generation,
                "cp",
            ),
        )
    };

    let done = claimed(h, "done", "a");
    save("done", &done);
    let done = ok("complete", s.complete("done", "a", done.generation, None));
    assert_eq!((done.state, done.checkpoint), (WorkState::Succeeded, None));

    let failed = claimed(h, "failed", "a");
    save("failed", &failed);
    let failed = ok(
        "terminal failure",
        s.fail("failed", "a", failed.generation, terminal("BAD")),
    );
    assert_eq!((failed.state, failed.checkpoint), (WorkState::Failed, None));

    let discarded = claimed(h, "discarded", "a");
    save("discarded", &discarded);
    let discarded = ok("discard", s.discard_work("discarded", "ops", "poison"))
        .item
        .expect("the item");
    assert_eq!(
        (discarded.state, discarded.checkpoint),
        (WorkState::Failed, None)
    );

    ok(
        "enqueue",
        s.enqueue(
            NewWork {
                max_attempts: 1,
                ..effect("dead")
            },
            K,
        ),
    );
    let dead = ok("claim", s.claim("dead", "a", K, 1_000));
    save("dead", &dead);
    // Taken over once a retry's backoff after the expiry has passed (500 ms after a first
    // attempt), and dead-lettered by that takeover.
    h.clock().advance(1_500);
    assert!(ok("take over", s.claim_batch("b", K, 10, 1_000)).is_empty());
    let dead = item(h, "dead");
    assert!(dead.is_dead_letter(), "{dead:?}");
    assert_eq!(dead.checkpoint, None);

    for id in ["failed", "discarded", "dead"] {
        let requeued = ok("requeue", s.requeue_work(id, "ops", "retry it"))
            .item
            .expect("the item");
        assert_eq!(
            (requeued.state, requeued.checkpoint),
            (WorkState::Pending, None),
            "{id}"
        );
    }
    for id in ["done", "failed", "discarded", "dead"] {
        assert_eq!(item(h, id).checkpoint, None, "{id}");
    }
}

/// Over 64 KiB is `INVALID` in one line, and nothing is written: not the item, not the
/// history, not the revision. Exactly 64 KiB is accepted.
pub fn an_oversize_checkpoint_is_refused_and_changes_nothing(h: &dyn Harness) {
    let s = h.store();
    let a = claimed(h, "e", "a");
    let full = "x".repeat(MAX_CHECKPOINT_BYTES);
    ok(
        "exactly the limit",
        s.save_work_checkpoint("e", "a", a.generation, &full),
    );
    let before = item(h, "e");
    let revision = ok("revision", s.revision());
    let history = writes(h, "e").len();
    assert_eq!(
        refused(
            "one byte over",
            s.save_work_checkpoint("e", "a", a.generation, &format!("{full}x"))
        ),
        "INVALID"
    );
    assert_eq!(item(h, "e"), before);
    assert_eq!(ok("revision", s.revision()), revision, "nothing committed");
    assert_eq!(writes(h, "e").len(), history, "no write recorded");
    assert_eq!(MAX_CHECKPOINT_BYTES, 64 * 1024);
}
