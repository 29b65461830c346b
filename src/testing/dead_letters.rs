//! Poison pills end as dead letters, and an operator's triage verbs: a claim that lapses
//! without an outcome counts against `maxAttempts` and backs off like a retry; the lapse
//! that spends the budget leaves the item `failed` / `uncertain-exhausted`; `requeue` and
//! `discard` are fenced on the item's state, idempotent and audited with actor and reason.

use crate::model::work::{NewWork, WorkFilter};
use crate::model::{AuditEntry, FailureClass, PageRequest, WorkItem, WorkState};
use crate::rules::triage::{Verb, Verdict};
use crate::rules::work::Backoff;
use crate::store::{BulkPage, Store, Triaged};

use super::work::{effect, item};
use super::{Harness, K, K_OTHER, ok, refused};

const LEASE: i64 = 1_000;
const ACTOR: &str = "alice@ops-1";

fn poison(id: &str, max_attempts: u32) -> NewWork {
    NewWork {
        logical_effect_id: Some(format!("intent-{id}")),
        idempotency_key: Some(format!("idem-{id}")),
        max_attempts,
        ..effect(id)
    }
}

/// Claims `id` under a new owner for each of `max` attempts, each claim lapsing unrecorded
/// (the handler crashed its process), until the item is a dead letter. A claimer that finds
/// a lapse inside a retry's backoff from the expiry writes nothing; once the backoff has
/// passed, the next claim takes the lapsed claim over (a failover) and counts its attempt in
/// the same write — the last one as a dead letter, under the taker's new generation.
fn crash_every_attempt(h: &dyn Harness, id: &str, max: u32) {
    let s = h.store();
    let mut due = s.now();
    for attempt in 1..=max {
        h.clock().set(due);
        let owner = format!("auth-{attempt}");
        let claims = ok("claim", s.claim_work(&owner, K, 10, LEASE));
        let claim = claims
            .iter()
            .find(|c| c.item.id == id)
            .unwrap_or_else(|| panic!("attempt {attempt} of {id} claimed"));
        assert_eq!(
            (claim.item.attempt_number, claim.item.uncertain_attempts),
            (attempt, attempt - 1)
        );
        assert_eq!(claim.item.idempotency_key, format!("idem-{id}"));
        if attempt > 1 {
            assert!(
                claim.took_over_expired_at.is_some(),
                "a reclaim takes over the lapsed claim (a failover)"
            );
        }
        let held = (*claim.item).clone();
        let expiry = held.lease_expires_at.expect("a claim has a lease");
        due = expiry + Backoff::default().delay(attempt);
        h.clock().set(due - 1);
        let early = ok(
            "claim inside the backoff",
            h.reopen().claim_batch("late", K, 10, LEASE),
        );
        assert!(early.iter().all(|w| w.id != id), "never reclaimed early");
        assert_eq!(item(h, id), held, "a lapse nobody took over is untouched");
    }
    h.clock().set(due);
    assert_eq!(
        refused(
            "the taker finds the budget spent",
            s.claim(id, "heir", K, LEASE)
        ),
        "already-terminal"
    );
}

fn audit(s: &Store) -> Vec<AuditEntry> {
    let mut rows = ok("audit", s.list_audit(&PageRequest::first(100))).rows;
    rows.sort_by_key(|a| a.id);
    rows
}

/// The items the overview counts as `failed` (a person's discards are counted apart).
fn failed_count(s: &Store) -> u64 {
    ok("overview", s.overview())
        .work
        .iter()
        .filter(|c| c.name() == "failed")
        .map(|c| c.count)
        .sum()
}

/// A claim that lapses `maxAttempts` times ends `failed` / `uncertain-exhausted` — a dead
/// letter, listed and counted as failed — with the same logical id and idempotency key
/// throughout, decided by the claimer that found the last lapse; it is never handed out
/// again, and the last owner's late completion is refused.
pub fn a_poison_pill_ends_as_a_dead_letter(h: &dyn Harness) {
    let s = h.store();
    ok("enqueue", s.enqueue(poison("p", 3), K));
    crash_every_attempt(h, "p", 3);

    let dead = item(h, "p");
    assert!(dead.is_dead_letter(), "{dead:?}");
    assert_eq!(
        (dead.state, dead.attempt_number, dead.uncertain_attempts),
        (WorkState::Failed, 3, 3)
    );
    assert_eq!(
        (dead.generation, dead.owner_id.as_deref()),
        (4, Some("heir")),
        "dead-lettered by the claim that took it over, under a new generation"
    );
    let (grants, _) = ok("history", s.ownership_history(Some("p"), 0, 100));
    let taken = grants.last().expect("grants");
    assert_eq!(
        (taken.generation, taken.owner_id.as_str()),
        (4, "heir"),
        "the takeover is granted like any claim"
    );
    assert_eq!(
        taken.took_over.as_ref().map(|t| t.from_owner.as_str()),
        Some("auth-3"),
        "and recorded as a failover"
    );
    assert_eq!(
        dead.last_failure.as_ref().map(|f| f.class),
        Some(FailureClass::UncertainExhausted)
    );
    assert_eq!(
        (
            dead.logical_effect_id.as_str(),
            dead.idempotency_key.as_str()
        ),
        ("intent-p", "idem-p")
    );
    assert_eq!(
        refused(
            "the last owner completes late",
            s.complete("p", "auth-3", 3, None)
        ),
        "already-terminal"
    );
    h.clock().advance(3_600_000);
    assert!(
        ok(
            "claim much later",
            h.reopen().claim_batch("z", K, 10, LEASE)
        )
        .is_empty()
    );
    assert_eq!(
        refused("claim the dead letter", s.claim("p", "z", K, LEASE)),
        "already-terminal"
    );
    let failed = ok(
        "list failed",
        s.list_work(
            &WorkFilter {
                states: vec![WorkState::Failed],
                ..WorkFilter::default()
            },
            &PageRequest::first(10),
        ),
    );
    let listed: Vec<&WorkItem> = failed.rows.iter().collect();
    assert_eq!(listed.len(), 1);
    assert!(listed[0].is_dead_letter());
    assert_eq!(
        failed_count(&h.reopen()),
        1,
        "the counts agree with the rows"
    );
}

/// Requeue gives a dead letter a fresh budget — pending now, same keys — once: a repeat is
/// a no-op answer; other states are refused with the reason; every attempt is audited with
/// the actor and the reason.
pub fn requeue_gives_a_fresh_budget_once(h: &dyn Harness) {
    let s = h.store();
    ok("enqueue", s.enqueue(poison("p", 2), K));
    let later = NewWork {
        not_before: Some(s.now() + 86_400_000),
        ..effect("fresh")
    };
    ok("enqueue pending", s.enqueue(later, K));
    crash_every_attempt(h, "p", 2);
    let dead = item(h, "p");

    let first = ok("requeue", s.requeue_work("p", ACTOR, "fixed the handler"));
    assert_eq!(first.verdict, Verdict::Done);
    let requeued = item(h, "p");
    assert_eq!(first.item.as_ref(), Some(&requeued));
    assert_eq!(
        (
            requeued.state,
            requeued.attempt_number,
            requeued.uncertain_attempts,
            requeued.next_eligible_at
        ),
        (WorkState::Pending, 0, 0, s.now())
    );
    assert_eq!(
        (
            requeued.idempotency_key.as_str(),
            requeued.logical_effect_id.as_str(),
            requeued.generation
        ),
        ("idem-p", "intent-p", dead.generation)
    );
    assert_eq!(failed_count(&s), 0);
    let again = ok(
        "requeue again",
        h.reopen().requeue_work("p", ACTOR, "again"),
    );
    assert_eq!(again.verdict, Verdict::AlreadyDone);
    assert_eq!(item(h, "p"), requeued, "a repeat changes nothing");

    // A fresh budget: two more lapses before it is dead again.
    crash_every_attempt(h, "p", 2);
    assert!(item(h, "p").is_dead_letter());

    let not_failed = ok("requeue pending", s.requeue_work("fresh", ACTOR, ""));
    assert!(not_failed.verdict.refused(), "{not_failed:?}");
    let unknown = ok("requeue unknown", s.requeue_work("nope", ACTOR, "r"));
    assert_eq!(unknown.verdict, Verdict::Unknown);

    let said: Vec<(String, String, String, String)> = audit(&s)
        .into_iter()
        .map(|a| (a.actor, a.action, a.target, a.outcome))
        .collect();
    let entry = |target: &str, outcome: &str| {
        (
            ACTOR.to_owned(),
            "requeue-work".to_owned(),
            target.to_owned(),
            outcome.to_owned(),
        )
    };
    assert_eq!(
        said,
        [
            entry("p", "requeued; reason: fixed the handler"),
            entry("p", "already requeued; reason: again"),
            entry("fresh", "refused: pending — only a failed item is requeued"),
            entry("nope", "refused: no such work item; reason: r"),
        ]
    );
}

/// A bulk run's page requeues its items in one transaction with the run's audit entry
/// (made from the page's answers), and records the run's selection with each change: a
/// later run of that selection finds exactly those items, never one requeued on its own,
/// by another selection or by another verb.
pub fn a_bulk_page_records_its_selection_with_each_change(h: &dyn Harness) {
    let s = h.store();
    for id in ["p1", "p2", "p3"] {
        ok("enqueue", s.enqueue(poison(id, 1), K));
        crash_every_attempt(h, id, 1);
    }
    let outcome = |answers: &[Triaged]| format!("{} answered", answers.len());
    let page = BulkPage {
        selection: "requeue-work filter p",
        action: "bulk-requeue-work",
        target: "filter p",
        outcome: &outcome,
    };
    let answers = ok(
        "requeue a page",
        s.triage_work_page(Verb::Requeue, &["p1", "p2"], ACTOR, "r", &page),
    );
    assert!(answers.iter().all(|a| a.verdict == Verdict::Done));
    ok("requeue alone", s.requeue_work("p3", ACTOR, "r"));
    let run = audit(&s)
        .into_iter()
        .find(|a| a.action == "bulk-requeue-work")
        .map(|a| (a.target, a.outcome));
    assert_eq!(run, Some(("filter p".into(), "2 answered".into())));

    let r = h.reopen();
    let by =
        |verb, selection, ids: &[&str]| ok("read", r.changed_by_selection(verb, selection, ids));
    assert_eq!(
        by(
            Verb::Requeue,
            "requeue-work filter p",
            &["p1", "p2", "p3", "nope"]
        ),
        [true, true, false, false]
    );
    assert_eq!(by(Verb::Requeue, "requeue-work filter q", &["p1"]), [false]);
    assert_eq!(by(Verb::Discard, "requeue-work filter p", &["p1"]), [false]);
    assert_eq!(
        by(Verb::RetryNow, "requeue-work filter p", &["p1"]),
        [false]
    );
}

/// Discard needs a reason, ends the item for good with the reason on it (fencing out a live
/// claim's holder), answers a repeat without a second change, refuses a succeeded item,
/// and is audited with the actor and the reason.
pub fn discard_needs_a_reason_and_spares_success(h: &dyn Harness) {
    let s = h.store();
    for id in ["live", "done"] {
        ok("enqueue", s.enqueue(effect(id), K));
    }
    let held = ok("claim", s.claim("live", "auth-a", K, 60_000));
    let done = ok("claim done", s.claim("done", "auth-a", K, 60_000));
    ok(
        "complete",
        s.complete("done", "auth-a", done.generation, None),
    );
    let before = audit(&s).len();

    assert_eq!(
        refused("no reason", s.discard_work("live", ACTOR, "  ")),
        "INVALID"
    );
    assert_eq!(
        audit(&s).len(),
        before,
        "a malformed request reaches nothing"
    );
    assert_eq!(item(h, "live").state, WorkState::Claimed);

    let first = ok(
        "discard",
        s.discard_work("live", ACTOR, "customer cancelled"),
    );
    assert_eq!(first.verdict, Verdict::Done);
    let discarded = item(h, "live");
    assert_eq!(discarded.state, WorkState::Failed);
    assert_eq!(
        discarded.last_failure.as_ref().map(|f| f.message.as_str()),
        Some("discarded by alice@ops-1: customer cancelled")
    );
    assert_eq!(
        refused(
            "the holder completes",
            s.complete("live", "auth-a", held.generation, None)
        ),
        "already-terminal"
    );
    let again = ok(
        "discard again",
        h.reopen().discard_work("live", ACTOR, "dup"),
    );
    assert_eq!(again.verdict, Verdict::AlreadyDone);
    assert_eq!(item(h, "live"), discarded, "a repeat changes nothing");

    let spared = ok("discard succeeded", s.discard_work("done", ACTOR, "oops"));
    assert!(spared.verdict.refused());
    assert_eq!(item(h, "done").state, WorkState::Succeeded);

    let said: Vec<(String, String, String)> = audit(&s)[before..]
        .iter()
        .map(|a| (a.action.clone(), a.target.clone(), a.outcome.clone()))
        .collect();
    assert_eq!(
        said,
        [
            (
                "discard-work".into(),
                "live".into(),
                "discarded; reason: customer cancelled".into()
            ),
            (
                "discard-work".into(),
                "live".into(),
                "already discarded; reason: dup".into()
            ),
            (
                "discard-work".into(),
                "done".into(),
                "refused: succeeded — a finished effect is not discarded; reason: oops".into()
            ),
        ]
    );
    assert!(audit(&s).iter().all(|a| a.actor == ACTOR));
}

/// Only a claimer of the item's own build settles its lapsed claim: another build never
/// backs off or dead-letters work it may not run (it stays visible as incompatible).
pub fn another_builds_lapsed_claim_is_left_alone(h: &dyn Harness) {
    let s = h.store();
    ok("enqueue", s.enqueue(poison("x", 1), K_OTHER));
    ok("its build claims", s.claim("x", "old", K_OTHER, LEASE));
    h.clock().advance(LEASE + 60_000);
    assert_eq!(
        refused("another build", s.claim("x", "new", K, LEASE)),
        "INCOMPATIBLE_AUTHORITY"
    );
    assert!(ok("another build's batch", s.claim_batch("new", K, 10, LEASE)).is_empty());
    let x = item(h, "x");
    assert_eq!((x.state, x.uncertain_attempts), (WorkState::Claimed, 0));
    assert_eq!(
        refused("its own build", s.claim("x", "old-2", K_OTHER, LEASE)),
        "already-terminal"
    );
    assert!(item(h, "x").is_dead_letter(), "settled by its own build");
}
