//! Durable work items and compatibility: durable retry state and retry floors, terminal
//! items, group commit, incompatible items; and the helpers the other work cases share
//! (`work_claims`, `work_fencing`, `work_enqueue`).

use std::collections::BTreeSet;

use crate::model::work::{NewWork, WorkFilter};
use crate::model::{Failure, FailureClass, PageRequest, WorkItem, WorkKind, WorkState};
use crate::rules::work::{Backoff, Retry};
use crate::store::Completion;

use super::{Harness, K, K_OTHER, ok, refused};

pub fn effect(id: &str) -> NewWork {
    NewWork::effect(id, "send-email", format!("{{\"to\":\"{id}@example.com\"}}"))
}

pub fn retryable(code: &str) -> Failure {
    Failure {
        class: FailureClass::Retryable,
        code: code.into(),
        message: format!("{code} happened"),
    }
}

pub fn terminal(code: &str) -> Failure {
    Failure {
        class: FailureClass::Terminal,
        code: code.into(),
        message: format!("{code} happened"),
    }
}

pub fn item(h: &dyn Harness, id: &str) -> WorkItem {
    ok("read item", h.store().work(id)).unwrap_or_else(|| panic!("no work item {id}"))
}

pub(super) fn ids(items: &[WorkItem]) -> BTreeSet<String> {
    items.iter().map(|i| i.id.clone()).collect()
}

/// Durable retry state — attempt number, last attempt time, nextEligibleAt, the last
/// failure's class — survives a reopen, and the item is not claimable before it is due.
pub fn retry_state_survives_reopen(h: &dyn Harness) {
    let s = h.store();
    ok(
        "enqueue",
        s.enqueue(
            NewWork {
                max_attempts: 3,
                ..effect("e")
            },
            K,
        ),
    );
    let claimed = ok("claim", s.claim("e", "a", K, 5_000));
    h.clock().advance(40);
    let failed = ok(
        "fail",
        s.fail("e", "a", claimed.generation, retryable("E_TIMEOUT")),
    );
    assert_eq!(failed.state, WorkState::Retry);
    assert_eq!(failed.attempt_number, 1);
    assert_eq!(failed.last_attempt_at, claimed.claimed_at);
    assert_eq!(
        failed.next_eligible_at,
        s.now() + Backoff::default().delay(1)
    );
    assert_eq!(
        failed
            .last_failure
            .as_ref()
            .map(|f| (f.class, f.code.as_str())),
        Some((FailureClass::Retryable, "E_TIMEOUT"))
    );

    let s = h.reopen();
    assert_eq!(item(h, "e"), failed, "the whole retry state is durable");
    assert_eq!(
        refused("claim before nextEligibleAt", s.claim("e", "b", K, 5_000)),
        "WORK_NOT_CLAIMABLE"
    );
    assert!(
        ok(
            "batch before nextEligibleAt",
            s.claim_batch("b", K, 10, 5_000)
        )
        .is_empty()
    );
    h.clock().set(failed.next_eligible_at);
    let second = ok("claim when due", s.claim("e", "b", K, 5_000));
    assert_eq!((second.attempt_number, second.generation), (2, 2));
    let failed2 = ok("fail again", s.fail("e", "b", 2, retryable("E_TIMEOUT")));
    assert_eq!(
        failed2.next_eligible_at,
        s.now() + Backoff::default().delay(2),
        "backoff grows"
    );

    let s = h.reopen();
    h.clock().set(failed2.next_eligible_at);
    let third = ok("third attempt", s.claim_batch("c", K, 10, 5_000))
        .pop()
        .expect("due");
    assert_eq!(third.attempt_number, 3);
    let exhausted = ok(
        "fail the last attempt",
        s.fail("e", "c", third.generation, retryable("E_TIMEOUT")),
    );
    assert_eq!(
        exhausted.state,
        WorkState::Failed,
        "the retry budget is spent"
    );
    assert_eq!(h.reopen().work("e").expect("read").expect("row"), exhausted);

    // A terminal classification ends it at once, attempts left or not.
    ok("enqueue", s.enqueue(effect("bad-input"), K));
    let x = ok("claim", s.claim("bad-input", "a", K, 5_000));
    let dead = ok(
        "terminal failure",
        s.fail("bad-input", "a", x.generation, terminal("E_INVALID")),
    );
    assert_eq!(dead.state, WorkState::Failed);
    assert_eq!(
        dead.last_failure.map(|f| f.class),
        Some(FailureClass::Terminal)
    );
}

/// A terminal item answers `already-terminal` to every later write and claim, forever.
pub fn terminal_items_answer_already_terminal(h: &dyn Harness) {
    let s = h.store();
    ok("enqueue", s.enqueue(effect("ok"), K));
    ok("enqueue", s.enqueue(effect("dead"), K));
    let a = ok("claim", s.claim("ok", "a", K, 1_000));
    let done = ok(
        "complete",
        s.complete("ok", "a", a.generation, Some("1".into())),
    );
    let d = ok("claim", s.claim("dead", "a", K, 1_000));
    let dead = ok(
        "fail terminally",
        s.fail("dead", "a", d.generation, terminal("E_BAD")),
    );
    h.clock().advance(100_000);
    let s = h.reopen();
    for (id, generation, expected) in [("ok", a.generation, &done), ("dead", d.generation, &dead)] {
        assert_eq!(
            refused("complete again", s.complete(id, "a", generation, None)),
            "already-terminal"
        );
        assert_eq!(
            refused("fail again", s.fail(id, "a", generation, retryable("E"))),
            "already-terminal"
        );
        assert_eq!(
            refused("renew", s.renew_claim(id, "a", generation, 1_000)),
            "already-terminal"
        );
        assert_eq!(
            refused("yield", s.yield_back(id, "a", generation, s.now())),
            "already-terminal"
        );
        assert_eq!(
            refused("claim", s.claim(id, "b", K, 1_000)),
            "already-terminal"
        );
        assert_eq!(
            refused("other owner", s.complete(id, "b", generation + 1, None)),
            "already-terminal"
        );
        assert_eq!(&item(h, id), expected, "nothing changed");
    }
    assert!(ok("batch", s.claim_batch("b", K, 10, 1_000)).is_empty());
    let results = ok(
        "group commit",
        s.complete_batch(&[Completion {
            id: "ok".into(),
            owner: "a".into(),
            generation: 1,
            outcome: Ok(None),
            retry: Retry::default(),
        }]),
    );
    assert_eq!(results.len(), 1);
    assert_eq!(
        results[0].as_ref().err().map(crate::Error::code),
        Some("already-terminal")
    );
}

/// Group commit: one transaction, each entry fenced on its own; a stale generation refuses
/// only its own entry, and the whole batch is one revision.
pub fn group_commit_refuses_only_the_stale_entry(h: &dyn Harness) {
    let s = h.store();
    for id in ["g1", "g2", "g3"] {
        ok("enqueue", s.enqueue(effect(id), K));
    }
    let claimed = ok("a claims all", s.claim_batch("a", K, 3, 1_000));
    assert_eq!(claimed.len(), 3);
    h.clock().advance(1_000 + Backoff::default().delay(1));
    let b = ok("b reclaims g2", h.reopen().claim("g2", "b", K, 1_000));
    let before = ok("revision", s.revision());
    let batch = [
        Completion {
            id: "g1".into(),
            owner: "a".into(),
            generation: 1,
            outcome: Ok(Some("\"r1\"".into())),
            retry: Retry::default(),
        },
        Completion {
            id: "g2".into(),
            owner: "a".into(),
            generation: 1,
            outcome: Ok(None),
            retry: Retry::default(),
        },
        Completion {
            id: "g3".into(),
            owner: "a".into(),
            generation: 1,
            outcome: Err(retryable("E_429")),
            retry: Retry::default(),
        },
    ];
    let results: Vec<Result<WorkState, &str>> = ok("group commit", s.complete_batch(&batch))
        .into_iter()
        .map(|r| r.map(|i| i.state).map_err(|e| e.code()))
        .collect();
    assert_eq!(
        results,
        vec![
            Ok(WorkState::Succeeded),
            Err("WORK_FENCED"),
            Ok(WorkState::Retry)
        ]
    );
    let after = ok("revision", s.revision());
    assert_eq!(after, before + 1, "one commit for the whole batch");
    assert_eq!(item(h, "g2"), b, "the stale entry changed nothing");
    assert_eq!(item(h, "g1").result.as_deref(), Some("\"r1\""));

    let (_, writes) = ok("history", s.ownership_history(None, before, 100));
    let logged: Vec<(&str, &str, bool)> = writes
        .iter()
        .map(|w| (w.resource_id.as_str(), w.verb.as_str(), w.accepted))
        .collect();
    assert_eq!(
        logged,
        vec![
            ("g1", "complete", true),
            ("g2", "complete", false),
            ("g3", "fail", true)
        ]
    );
    assert!(writes.iter().all(|w| w.revision == after));

    let mixed = ok(
        "unknown entry",
        s.complete_batch(&[
            Completion {
                id: "missing".into(),
                owner: "b".into(),
                generation: 1,
                outcome: Ok(None),
                retry: Retry::default(),
            },
            Completion {
                id: "g2".into(),
                owner: "b".into(),
                generation: b.generation,
                outcome: Ok(None),
                retry: Retry::default(),
            },
        ]),
    );
    let codes: Vec<Result<WorkState, &str>> = mixed
        .into_iter()
        .map(|r| r.map(|i| i.state).map_err(|e| e.code()))
        .collect();
    assert_eq!(codes, vec![Err("NOT_FOUND"), Ok(WorkState::Succeeded)]);
    assert!(ok("empty batch", s.complete_batch(&[])).is_empty());
}

/// An item made by another build is never claimed by this one — `claim_batch` skips it, a
/// direct claim is `INCOMPATIBLE_AUTHORITY` — and it stays visible, pending, never
/// auto-failed, in the counts and through the compat filter, until a compatible
/// authority takes it.
pub fn incompatible_items_are_never_claimed_and_stay_visible(h: &dyn Harness) {
    let s = h.store();
    ok("enqueue old", s.enqueue(effect("old-1"), K_OTHER));
    ok("enqueue old", s.enqueue(effect("old-2"), K_OTHER));
    ok("enqueue mine", s.enqueue(effect("mine"), K));
    for _ in 0..3 {
        h.clock().advance(3_600_000);
        let got = ok("batch", s.claim_batch("new-build", K, 100, 1_000));
        assert_eq!(
            ids(&got)
                .into_iter()
                .filter(|i| i.starts_with("old"))
                .count(),
            0,
            "never another build's items"
        );
    }
    assert_eq!(
        refused("direct claim", s.claim("old-1", "new-build", K, 1_000)),
        "INCOMPATIBLE_AUTHORITY"
    );
    let old = item(h, "old-1");
    assert_eq!(
        (old.state, old.attempt_number, old.generation),
        (WorkState::Pending, 0, 0),
        "never auto-failed"
    );

    let overview = ok("overview", h.reopen().overview());
    let cell = overview.work.iter().find(|c| {
        c.compat == K_OTHER && c.state == WorkState::Pending && c.kind == WorkKind::Effect
    });
    assert_eq!(
        cell.map(|c| c.count),
        Some(2),
        "visible in the counts: {:?}",
        overview.work
    );
    let filter = WorkFilter {
        compats: vec![K_OTHER.into()],
        ..WorkFilter::default()
    };
    let listed = ok(
        "list by compat",
        s.list_work(&filter, &PageRequest::first(10)),
    );
    assert_eq!(
        listed
            .rows
            .iter()
            .map(|w| w.id.as_str())
            .collect::<Vec<_>>(),
        vec!["old-1", "old-2"]
    );
    let filter = WorkFilter {
        compats: vec![K.into()],
        ..WorkFilter::default()
    };
    let listed = ok(
        "list by compat",
        s.list_work(&filter, &PageRequest::first(10)),
    );
    assert_eq!(
        listed
            .rows
            .iter()
            .map(|w| w.id.as_str())
            .collect::<Vec<_>>(),
        vec!["mine"]
    );

    let taken = ok(
        "a compatible authority",
        s.claim_batch("old-build", K_OTHER, 10, 1_000),
    );
    assert_eq!(
        ids(&taken),
        BTreeSet::from(["old-1".to_owned(), "old-2".to_owned()])
    );
    let (grants, _) = ok("history", s.ownership_history(None, 0, 1_000));
    assert!(
        grants
            .iter()
            .filter(|g| g.how == "claim")
            .all(|g| g.owner_compat == g.item_compat),
        "claims only by matching builds"
    );
}

/// A retry floor the handler asked for holds the retry back until `now + floor` when that
/// is later than the backoff, alone or in a group commit; a shorter floor changes nothing.
pub fn a_retry_floor_holds_the_retry_back(h: &dyn Harness) {
    let s = h.store();
    for id in ["solo", "grouped", "short"] {
        ok("enqueue", s.enqueue(effect(id), K));
    }
    let solo = ok("claim", s.claim("solo", "a", K, 5_000));
    let floored = ok(
        "fail with a floor",
        s.fail_with_floor("solo", "a", solo.generation, retryable("E_429"), 7_000),
    );
    assert_eq!(
        (floored.state, floored.next_eligible_at),
        (WorkState::Retry, s.now() + 7_000)
    );
    let grouped = ok("claim", s.claim("grouped", "a", K, 5_000));
    let short = ok("claim", s.claim("short", "a", K, 5_000));
    let answers = ok(
        "group commit",
        s.complete_batch(&[
            Completion {
                id: "grouped".into(),
                owner: "a".into(),
                generation: grouped.generation,
                outcome: Err(retryable("E_429")),
                retry: Retry::with_floor(9_000),
            },
            Completion {
                id: "short".into(),
                owner: "a".into(),
                generation: short.generation,
                outcome: Err(retryable("E_429")),
                retry: Retry::with_floor(1),
            },
        ]),
    );
    let eligible: Vec<_> = answers
        .into_iter()
        .map(|a| ok("fenced on its own", a).next_eligible_at)
        .collect();
    assert_eq!(
        eligible,
        [s.now() + 9_000, s.now() + Backoff::default().delay(1)]
    );
    let s = h.reopen();
    assert_eq!(item(h, "solo"), floored, "the floor is durable");
    h.clock().set(floored.next_eligible_at - 1);
    assert_eq!(
        refused("claim before the floor", s.claim("solo", "b", K, 5_000)),
        "WORK_NOT_CLAIMABLE"
    );
    h.clock().set(floored.next_eligible_at);
    ok("claim at the floor", s.claim("solo", "b", K, 5_000));
}
