//! Work items: claiming, fenced completion, durable retry, uncertain attempts.

use crate::clock::{LATEST, Millis};
use crate::error::{Error, Result};
use crate::model::{CompatSet, Failure, FailureClass, WorkItem, WorkKind, WorkState};
pub use crate::rules::retry::{Backoff, Retry};

/// The failure code of a dead letter.
pub const DEAD_LETTER_CODE: &str = "ATTEMPTS_EXHAUSTED";

/// When a claim that lapsed without a recorded outcome may be taken over: its lease expiry
/// plus the backoff a retry of its attempt would wait (`reclaim`), or the expiry itself for
/// a cursor, whose claim is a turn of a long-lived delivery rather than an attempt. `None`
/// while the item is not claimed. Until that instant a claimer that finds the lapse writes
/// nothing, and its owner's renewal and completion still apply: expiry alone fences nothing,
/// and a handler that crashes its process is not rerun at every lease expiry.
#[must_use]
pub fn reclaim_at(item: &WorkItem, reclaim: Backoff) -> Option<Millis> {
    if item.state != WorkState::Claimed {
        return None;
    }
    let expired = item.lease_expires_at?;
    Some(if item.kind == WorkKind::Cursor {
        expired
    } else {
        expired.saturating_add(reclaim.delay(item.attempt_number))
    })
}

/// Settles a claim that lapsed without a recorded outcome once it may be taken over
/// ([`reclaim_at`]); `None` before that, or while the item is not such a claim. Only the
/// transaction that takes the item over writes this ([`claim`]), under the new generation.
#[must_use]
pub fn lapse(item: &WorkItem, reclaim: Backoff, now: Millis) -> Option<WorkItem> {
    reclaim_at(item, reclaim)
        .filter(|&at| at <= now)
        .map(|at| settle_unfinished(item, at, now))
}

/// The settlement of an unfinished claim (its owner crashed, hung, or was released by an
/// operator): the attempt may have run, so it counts as uncertain and against
/// `maxAttempts`, like a failure its owner never got to record. With attempts left the item
/// is in `retry`, eligible at `eligible_at`; with none left it is a dead letter, terminal
/// `failed` / `uncertain-exhausted`, never handed to a handler again. Its keys are
/// untouched; its checkpoint is kept for the next attempt, or dropped with the dead letter.
/// A cursor is never dead: it has no attempt budget.
#[must_use]
pub fn settle_unfinished(item: &WorkItem, eligible_at: Millis, now: Millis) -> WorkItem {
    let uncertain_attempts = item.uncertain_attempts + 1;
    if item.kind != WorkKind::Cursor && item.attempt_number >= item.max_attempts {
        return WorkItem {
            state: WorkState::Failed,
            uncertain_attempts,
            lease_expires_at: None,
            checkpoint: None,
            last_failure: Some(Failure {
                class: FailureClass::UncertainExhausted,
                code: DEAD_LETTER_CODE.into(),
                message: format!(
                    "attempts exhausted ({} of {}): the last, claimed by {} under generation \
                     {}, lapsed without a recorded outcome",
                    item.attempt_number,
                    item.max_attempts,
                    item.owner_id.as_deref().unwrap_or("-"),
                    item.generation
                ),
            }),
            updated_at: now,
            ..item.clone()
        };
    }
    WorkItem {
        state: WorkState::Retry,
        uncertain_attempts,
        next_eligible_at: eligible_at,
        updated_at: now,
        ..item.clone()
    }
}

/// What a claim made of an item.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Claimed {
    /// Claimed for the claimer to run: a new generation, a lease window, a new attempt.
    Run(WorkItem),
    /// A lapsed claim whose lapse spent the last attempt, taken over under a new generation
    /// and ended as a dead letter in the same write: nothing is left to run.
    DeadLetter(WorkItem),
}

impl Claimed {
    /// The item as the claim left it.
    #[must_use]
    pub fn into_item(self) -> WorkItem {
        match self {
            Self::Run(item) | Self::DeadLetter(item) => item,
        }
    }
}

/// Claims the item for `owner`: a new generation, a lease window, a new attempt. A claim
/// that lapsed is taken over only once [`reclaim_at`] (with the claimer's `reclaim`
/// backoff) has passed, and then settled by [`lapse`] in the same claim: the lapsed attempt
/// counted, and either claimed again at once or, with the budget spent, a dead letter under
/// the taker's new generation. The idempotency key is untouched so the retry reuses it.
///
/// # Errors
/// `Incompatible` for an item whose digest is not in `keys`, `AlreadyTerminal` (a dead
/// letter included), `LeaseHeld` while the claim is live or its owner may still finish it
/// (until its reclaim instant), `NotClaimable` before `nextEligibleAt`.
///
/// It takes the item by value and moves it into its claimed version: a claim is on the
/// store's hot path, and its caller has no further use for the item as it was.
pub fn claim(
    item: WorkItem,
    owner: &str,
    keys: &CompatSet,
    token: String,
    lease_ms: Millis,
    reclaim: Backoff,
    now: Millis,
) -> Result<Claimed> {
    if !keys.contains(&item.compat) {
        return Err(Error::Incompatible {
            id: item.id.clone(),
            required: item.compat.clone(),
            have: keys.to_string(),
        });
    }
    let item = match item.state {
        WorkState::Succeeded | WorkState::Failed => {
            return Err(Error::AlreadyTerminal {
                id: item.id.clone(),
                state: item.state.as_str().into(),
            });
        }
        WorkState::Claimed => {
            let until = reclaim_at(&item, reclaim).unwrap_or(Millis::MAX);
            if until > now {
                return Err(Error::LeaseHeld {
                    resource: item.id.clone(),
                    owner: item.owner_id.clone().unwrap_or_default(),
                    expires_at: until,
                });
            }
            let settled = settle_unfinished(&item, until, now);
            if settled.state == WorkState::Failed {
                return Ok(Claimed::DeadLetter(WorkItem {
                    owner_id: Some(owner.to_owned()),
                    token: None,
                    generation: item.generation + 1,
                    ..settled
                }));
            }
            settled
        }
        WorkState::Pending | WorkState::Retry => {
            if item.next_eligible_at > now {
                return Err(Error::NotClaimable {
                    id: item.id.clone(),
                    state: item.state.as_str().into(),
                });
            }
            item
        }
    };
    Ok(Claimed::Run(WorkItem {
        state: WorkState::Claimed,
        owner_id: Some(owner.to_owned()),
        token: Some(token),
        generation: item.generation + 1,
        claimed_at: Some(now),
        lease_expires_at: Some(
            now.saturating_add(crate::rules::lease::clamp_duration(lease_ms as f64)),
        ),
        attempt_number: item.attempt_number + 1,
        last_attempt_at: Some(now),
        updated_at: now,
        ..item
    }))
}

/// Checks that `(owner, generation)` is the item's current claim. A terminal item answers
/// `already-terminal` so a late duplicate completion is harmless and visible.
///
/// # Errors
/// `AlreadyTerminal` or `Fenced`.
pub fn check_claim(item: &WorkItem, owner: &str, generation: u64) -> Result<()> {
    if item.state.is_terminal() {
        return Err(Error::AlreadyTerminal {
            id: item.id.clone(),
            state: item.state.as_str().into(),
        });
    }
    if item.state != WorkState::Claimed
        || item.generation != generation
        || item.owner_id.as_deref() != Some(owner)
    {
        return Err(Error::Fenced {
            resource: item.id.clone(),
            presented: generation,
            current: item.generation,
        });
    }
    Ok(())
}

/// Extends the claim's lease window.
///
/// # Errors
/// As [`check_claim`].
pub fn renew(
    item: &WorkItem,
    owner: &str,
    generation: u64,
    lease_ms: Millis,
    now: Millis,
) -> Result<WorkItem> {
    check_claim(item, owner, generation)?;
    Ok(WorkItem {
        lease_expires_at: Some(
            now.saturating_add(crate::rules::lease::clamp_duration(lease_ms as f64)),
        ),
        ..item.clone()
    })
}

/// The largest checkpoint a work item holds, in bytes: resume state, not a payload store.
pub const MAX_CHECKPOINT_BYTES: usize = 64 * 1024;

/// Refuses a checkpoint over [`MAX_CHECKPOINT_BYTES`] before anything is read or written.
///
/// # Errors
/// `Invalid`, one line naming both sizes.
pub fn check_checkpoint_size(data: &str) -> Result<()> {
    if data.len() > MAX_CHECKPOINT_BYTES {
        return Err(Error::Invalid(format!(
            "a work checkpoint of {} bytes is over the {MAX_CHECKPOINT_BYTES}-byte limit",
            data.len()
        )));
    }
    Ok(())
}

/// Saves `data` as the item's checkpoint under the caller's claim, replacing the last one.
/// The lease is left as it is: saving is not renewing.
///
/// # Errors
/// As [`check_claim`], or [`check_checkpoint_size`].
pub fn checkpoint(
    item: &WorkItem,
    owner: &str,
    generation: u64,
    data: &str,
    now: Millis,
) -> Result<WorkItem> {
    check_checkpoint_size(data)?;
    check_claim(item, owner, generation)?;
    Ok(WorkItem {
        checkpoint: Some(data.to_owned()),
        updated_at: now,
        ..item.clone()
    })
}

/// Records success: the item becomes `succeeded`, for good, and its checkpoint is dropped.
///
/// # Errors
/// As [`check_claim`].
pub fn complete(
    item: &WorkItem,
    owner: &str,
    generation: u64,
    result: Option<String>,
    now: Millis,
) -> Result<WorkItem> {
    check_claim(item, owner, generation)?;
    Ok(WorkItem {
        state: WorkState::Succeeded,
        result,
        lease_expires_at: None,
        checkpoint: None,
        updated_at: now,
        ..item.clone()
    })
}

/// The failure code of an attempt stopped at its time limit (an `exec` command killed, an
/// HTTP request given up on). Whoever answers it — the runtime's external handlers or an
/// application's own — says the attempt may have acted: see [`may_have_acted`].
pub const TIMEOUT_CODE: &str = "TIMEOUT";

/// Whether a failed attempt may still have had its effect although it answered a failure:
/// one stopped at its time limit ([`TIMEOUT_CODE`]) may have charged the card before it was
/// killed, or its request may have been served after it was given up on. Such an attempt
/// is counted in `uncertain_attempts` like a lapsed one, so that count still bounds the
/// side effects a retry may repeat.
#[must_use]
pub fn may_have_acted(failure: &Failure) -> bool {
    failure.code == TIMEOUT_CODE
}

/// Records a failed attempt: a retryable failure with attempts left schedules a durable
/// retry at `now + backoff` and keeps the checkpoint, so the next attempt resumes from it;
/// anything else is terminal `failed` and drops it. An attempt that [`may_have_acted`]
/// counts one more uncertain attempt either way. A cap of the handler's policy is written
/// into the item's `maxAttempts` before the budget is judged ([`Retry::budget`]; a cursor,
/// which has no budget, is exempt).
///
/// # Errors
/// As [`check_claim`].
pub fn fail(
    item: &WorkItem,
    owner: &str,
    generation: u64,
    failure: Failure,
    policy: Retry,
    now: Millis,
) -> Result<WorkItem> {
    check_claim(item, owner, generation)?;
    let max_attempts = if item.kind == WorkKind::Cursor {
        item.max_attempts
    } else {
        policy.budget(item.max_attempts, item.attempt_number)
    };
    let retry = failure.class == FailureClass::Retryable && item.attempt_number < max_attempts;
    let uncertain_attempts = item.uncertain_attempts + u32::from(may_have_acted(&failure));
    Ok(WorkItem {
        uncertain_attempts,
        max_attempts,
        state: if retry {
            WorkState::Retry
        } else {
            WorkState::Failed
        },
        next_eligible_at: if retry {
            retry_at(now, policy.backoff.delay(item.attempt_number))
        } else {
            item.next_eligible_at
        },
        last_failure: Some(failure),
        lease_expires_at: None,
        checkpoint: if retry { item.checkpoint.clone() } else { None },
        updated_at: now,
        ..item.clone()
    })
}

/// `delay` after `now`, but never past [`LATEST`]: a store keeps no later instant, and
/// whatever floor a caller of the store asked for, the item stays due at a real one.
fn retry_at(now: Millis, delay: Millis) -> Millis {
    now.saturating_add(delay).min(LATEST)
}

/// Hands a long-lived item (a subscription cursor) back to `pending`, eligible again at
/// `next_at`: its owner is done for now and any authority may take it next, from its
/// checkpoint (kept: the item has not ended).
///
/// # Errors
/// As [`check_claim`].
pub fn yield_back(
    item: &WorkItem,
    owner: &str,
    generation: u64,
    next_at: Millis,
    now: Millis,
) -> Result<WorkItem> {
    check_claim(item, owner, generation)?;
    Ok(WorkItem {
        state: WorkState::Pending,
        next_eligible_at: next_at,
        lease_expires_at: None,
        updated_at: now,
        ..item.clone()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::work::NewWork;

    fn item() -> WorkItem {
        WorkItem::new(NewWork::effect("e1", "noop", "{}"), "k", 0)
    }

    /// [`claim`] with the default reclaim backoff, for a claim expected to run.
    fn claim_run(
        item: WorkItem,
        owner: &str,
        keys: &CompatSet,
        token: String,
        lease_ms: Millis,
        now: Millis,
    ) -> Result<WorkItem> {
        match claim(item, owner, keys, token, lease_ms, Backoff::default(), now)? {
            Claimed::Run(item) => Ok(item),
            Claimed::DeadLetter(item) => panic!("dead-lettered, not claimed: {item:?}"),
        }
    }

    #[test]
    fn reclaim_of_unrecorded_attempt_is_uncertain_and_keeps_the_key() {
        let first = claim_run(item(), "a", &"k".into(), "t1".into(), 100, 0).expect("pending");
        // Lapsed, but its owner may still renew and finish until the backoff has passed.
        let held =
            claim_run(first.clone(), "b", &"k".into(), "t2".into(), 100, 599).expect_err("grace");
        assert_eq!(held.code(), "WORK_IN_PROGRESS");
        let second =
            claim_run(first.clone(), "b", &"k".into(), "t2".into(), 100, 600).expect("backed off");
        assert_eq!(
            (
                second.generation,
                second.attempt_number,
                second.uncertain_attempts
            ),
            (2, 2, 1)
        );
        assert_eq!(second.idempotency_key, first.idempotency_key);
        assert_eq!(
            complete(&second, "a", 1, None, 101)
                .expect_err("refused")
                .code(),
            "WORK_FENCED"
        );
    }

    /// A handler that crashes its process every time: each reclaim waits out a retry's
    /// backoff from the expiry and counts the lapsed attempt in the same claim, and the
    /// reclaim that finds the budget spent takes the item over as a dead letter, keys
    /// unchanged. Before its reclaim instant a lapse is left as it is.
    #[test]
    fn lapsed_claims_back_off_then_dead_letter() {
        let mut it = WorkItem {
            max_attempts: 3,
            idempotency_key: "idem".into(),
            ..item()
        };
        let backoff = Backoff::default();
        let keys: CompatSet = "k".into();
        let mut now = 0;
        for attempt in 1..=3 {
            it = claim_run(it, &format!("o{attempt}"), &keys, "t".into(), 100, now).expect("due");
            assert_eq!(
                (it.attempt_number, it.uncertain_attempts),
                (attempt, attempt - 1)
            );
            let due = 100 + now + backoff.delay(attempt);
            assert_eq!(reclaim_at(&it, backoff), Some(due));
            assert!(
                lapse(&it, backoff, due - 1).is_none(),
                "its owner may still finish"
            );
            let early = claim(it.clone(), "b", &keys, "t".into(), 100, backoff, due - 1);
            assert_eq!(early.expect_err("not yet").code(), "WORK_IN_PROGRESS");
            now = due;
        }
        let Claimed::DeadLetter(dead) =
            claim(it.clone(), "b", &keys, "t".into(), 100, backoff, now).expect("taken over")
        else {
            panic!("the last lapse dead-letters the item");
        };
        assert_eq!(
            (
                dead.state,
                dead.uncertain_attempts,
                dead.idempotency_key.as_str()
            ),
            (WorkState::Failed, 3, "idem")
        );
        assert_eq!(
            (dead.generation, dead.owner_id.as_deref()),
            (it.generation + 1, Some("b")),
            "taken over under a new generation"
        );
        assert!(dead.is_dead_letter());
        assert_eq!(
            dead.last_failure.as_ref().map(|f| f.class),
            Some(FailureClass::UncertainExhausted)
        );
        assert_eq!(
            complete(&dead, "o3", it.generation, None, now)
                .expect_err("ended")
                .code(),
            "already-terminal"
        );
        assert_eq!(
            claim_run(dead, "c", &keys, "t".into(), 100, now + 60_000)
                .expect_err("dead letter")
                .code(),
            "already-terminal"
        );
    }

    /// The claimer's reclaim backoff decides: a longer one leaves the owner longer to finish.
    #[test]
    fn the_claimers_reclaim_backoff_sets_the_grace() {
        let held = claim_run(item(), "a", &"k".into(), "t".into(), 100, 0).expect("pending");
        let patient = Backoff {
            initial_ms: 60_000,
            max_ms: 60_000,
            ..Backoff::default()
        };
        assert_eq!(reclaim_at(&held, patient), Some(60_100));
        let refused = claim(
            held.clone(),
            "b",
            &"k".into(),
            "t".into(),
            100,
            patient,
            60_099,
        );
        assert_eq!(refused.expect_err("grace").code(), "WORK_IN_PROGRESS");
        assert!(
            complete(&held, "a", 1, None, 60_099).is_ok(),
            "nobody took it"
        );
    }

    #[test]
    fn a_lapsed_cursor_is_free_at_once_and_never_dead() {
        let cursor = WorkItem {
            kind: WorkKind::Cursor,
            max_attempts: 1,
            attempt_number: 40,
            ..item()
        };
        let held = claim_run(cursor, "a", &"k".into(), "t".into(), 100, 0).expect("due");
        let settled = lapse(&held, Backoff::default(), 100).expect("lapsed");
        assert_eq!(
            (settled.state, settled.next_eligible_at),
            (WorkState::Retry, 100)
        );
        assert!(claim_run(held, "b", &"k".into(), "t".into(), 100, 100).is_ok());
    }

    #[test]
    fn expiry_without_reclaim_does_not_fence() {
        let first = claim_run(item(), "a", &"k".into(), "t1".into(), 100, 0).expect("pending");
        assert!(complete(&first, "a", 1, None, 10_000).is_ok());
    }

    #[test]
    fn retryable_failures_back_off_until_the_budget_is_spent() {
        let mut it = WorkItem {
            max_attempts: 2,
            ..item()
        };
        let failure = failure(FailureClass::Retryable);
        it = claim_run(it.clone(), "a", &"k".into(), "t".into(), 100, 0).expect("pending");
        it = fail(&it, "a", 1, failure.clone(), Retry::default(), 10).expect("holder");
        assert_eq!((it.state, it.next_eligible_at), (WorkState::Retry, 510));
        assert!(claim_run(it.clone(), "a", &"k".into(), "t".into(), 100, 509).is_err());
        it = claim_run(it.clone(), "a", &"k".into(), "t".into(), 100, 510).expect("due");
        it = fail(&it, "a", 2, failure, Retry::default(), 520).expect("holder");
        assert_eq!(it.state, WorkState::Failed);
    }

    /// A handler's cap ends an item whose producer gave it more attempts, and the cap is
    /// written into the item; it never raises a smaller budget.
    #[test]
    fn a_policy_cap_is_written_into_the_item() {
        let capped = Retry {
            max_attempts: Some(2),
            ..Retry::default()
        };
        let failure = failure(FailureClass::Retryable);
        let mut it = claim_run(item(), "a", &"k".into(), "t".into(), 100, 0).expect("pending");
        it = fail(&it, "a", 1, failure.clone(), capped, 10).expect("holder");
        assert_eq!((it.state, it.max_attempts), (WorkState::Retry, 2));
        it = claim_run(it, "a", &"k".into(), "t".into(), 100, 510).expect("due");
        it = fail(&it, "a", 2, failure.clone(), capped, 520).expect("holder");
        assert_eq!((it.state, it.max_attempts), (WorkState::Failed, 2));
        let small = WorkItem {
            max_attempts: 1,
            ..item()
        };
        let held = claim_run(small, "a", &"k".into(), "t".into(), 100, 0).expect("pending");
        let wide = Retry {
            max_attempts: Some(9),
            ..Retry::default()
        };
        let ended = fail(&held, "a", 1, failure, wide, 10).expect("holder");
        assert_eq!((ended.state, ended.max_attempts), (WorkState::Failed, 1));
    }

    /// The checkpoint rides along while the item lives (a lapse, a retryable failure) and is
    /// dropped when it ends (success, terminal failure, a dead letter).
    #[test]
    fn checkpoints_outlive_attempts_but_not_the_item() {
        let held = claim_run(item(), "a", &"k".into(), "t".into(), 100, 0).expect("pending");
        let saved = checkpoint(&held, "a", 1, "{\"n\":1}", 5).expect("holder");
        assert_eq!(saved.checkpoint.as_deref(), Some("{\"n\":1}"));
        assert_eq!(
            saved.lease_expires_at, held.lease_expires_at,
            "not a renewal"
        );
        assert_eq!(
            checkpoint(&saved, "b", 1, "x", 6)
                .expect_err("fenced")
                .code(),
            "WORK_FENCED"
        );

        let lapsed = lapse(&saved, Backoff::default(), 600).expect("lapsed");
        assert_eq!(lapsed.checkpoint, saved.checkpoint);
        let next =
            claim_run(lapsed.clone(), "b", &"k".into(), "t".into(), 100, 600).expect("backed off");
        assert_eq!(next.checkpoint, saved.checkpoint);
        let retry = fail(
            &next,
            "b",
            2,
            failure(FailureClass::Retryable),
            Retry::default(),
            601,
        )
        .expect("holder");
        assert_eq!(
            (retry.state, retry.checkpoint.clone()),
            (WorkState::Retry, saved.checkpoint.clone())
        );

        assert_eq!(
            complete(&next, "b", 2, None, 601)
                .expect("holder")
                .checkpoint,
            None
        );
        let terminal = fail(
            &next,
            "b",
            2,
            failure(FailureClass::Terminal),
            Retry::default(),
            601,
        )
        .expect("holder");
        assert_eq!(terminal.checkpoint, None);
        let last = WorkItem {
            max_attempts: 2,
            ..next
        };
        let dead = lapse(&last, Backoff::default(), 1_700).expect("lapsed");
        assert!(dead.is_dead_letter());
        assert_eq!(dead.checkpoint, None);
    }

    /// A handler's floor lengthens the backoff, never shortens it, and is not capped.
    #[test]
    fn a_retry_floor_only_lengthens_the_backoff() {
        let backoff = Backoff::default();
        assert_eq!(backoff.with_floor(100).delay(1), backoff.delay(1));
        assert_eq!(backoff.with_floor(-5).delay(1), backoff.delay(1));
        assert_eq!(backoff.with_floor(7_000).delay(1), 7_000);
        assert_eq!(backoff.with_floor(90_000).delay(9), 90_000);
        let claimed = claim_run(item(), "a", &"k".into(), "t".into(), 100, 0).expect("pending");
        let failure = Failure {
            class: FailureClass::Retryable,
            code: "RATE_LIMITED".into(),
            message: "slow down".into(),
        };
        let retry = fail(
            &claimed,
            "a",
            claimed.generation,
            failure,
            Retry::with_floor(7_000),
            10,
        )
        .expect("holder");
        assert_eq!(
            (retry.state, retry.next_eligible_at),
            (WorkState::Retry, 7_010)
        );
    }

    /// However long a retry is asked to wait (a floor no handler bound applied, through the
    /// store's own API), the instant it is due at is a real one: at most
    /// [`LATEST`], never an overflow.
    #[test]
    fn a_retry_is_never_due_past_the_latest_instant() {
        let claimed = claim_run(item(), "a", &"k".into(), "t".into(), 100, 0).expect("pending");
        let failure = Failure {
            class: FailureClass::Retryable,
            code: "LATER".into(),
            message: String::new(),
        };
        for floor in [Millis::MAX, LATEST] {
            let retry = fail(
                &claimed,
                "a",
                claimed.generation,
                failure.clone(),
                Retry::with_floor(floor),
                10,
            )
            .expect("holder");
            assert_eq!(
                (retry.state, retry.next_eligible_at),
                (WorkState::Retry, LATEST),
                "floor {floor}"
            );
        }
    }

    #[test]
    fn oversize_checkpoints_are_invalid() {
        let held = claim_run(item(), "a", &"k".into(), "t".into(), 100, 0).expect("pending");
        let full = "x".repeat(MAX_CHECKPOINT_BYTES);
        assert!(checkpoint(&held, "a", 1, &full, 1).is_ok());
        let over = format!("{full}x");
        let e = checkpoint(&held, "a", 1, &over, 1).expect_err("too big");
        assert_eq!(e.code(), "INVALID");
        assert!(!e.to_string().contains('\n'), "{e}");
        // Size before fence: a stale caller with too much learns the limit too.
        assert_eq!(
            checkpoint(&held, "b", 9, &over, 1)
                .expect_err("too big")
                .code(),
            "INVALID"
        );
    }

    #[test]
    fn terminal_items_answer_already_terminal() {
        let done = complete(
            &claim_run(item(), "a", &"k".into(), "t".into(), 100, 0).expect("pending"),
            "a",
            1,
            None,
            1,
        )
        .expect("holder");
        assert_eq!(
            complete(&done, "a", 1, None, 2)
                .expect_err("refused")
                .code(),
            "already-terminal"
        );
        assert_eq!(
            claim_run(done.clone(), "b", &"k".into(), "t".into(), 100, 2)
                .expect_err("refused")
                .code(),
            "already-terminal"
        );
    }

    fn failure(class: FailureClass) -> Failure {
        Failure {
            class,
            code: "E".into(),
            message: "m".into(),
        }
    }

    /// The documented shape: 500 ms doubling per attempt, capped at 30 s, and no overflow
    /// however many attempts were made.
    #[test]
    fn the_backoff_doubles_per_attempt_up_to_its_cap() {
        let backoff = Backoff::default();
        let delays: Vec<Millis> = (1..=8).map(|attempt| backoff.delay(attempt)).collect();
        assert_eq!(
            delays,
            [500, 1_000, 2_000, 4_000, 8_000, 16_000, 30_000, 30_000]
        );
        assert_eq!(backoff.delay(u32::MAX), 30_000);
    }

    /// A claim stamps the new owner, its token and the instant on the item, with the lease
    /// window clamped like a lease's.
    #[test]
    fn a_claim_stamps_its_owner_token_and_instants() {
        let claimed = claim_run(item(), "a", &"k".into(), "t1".into(), 250, 7).expect("pending");
        assert_eq!(
            (claimed.owner_id.as_deref(), claimed.token.as_deref()),
            (Some("a"), Some("t1"))
        );
        assert_eq!(
            (
                claimed.claimed_at,
                claimed.last_attempt_at,
                claimed.lease_expires_at,
                claimed.updated_at
            ),
            (Some(7), Some(7), Some(257), 7)
        );
        let clamped = claim_run(item(), "a", &"k".into(), "t1".into(), 1, 7).expect("pending");
        assert_eq!(clamped.lease_expires_at, Some(107));
    }

    /// Until its lease ends a claim is held: another claimer is told who holds it.
    #[test]
    fn a_live_claim_refuses_another_claimer() {
        let held = claim_run(item(), "a", &"k".into(), "t1".into(), 100, 0).expect("pending");
        assert_eq!(
            claim_run(held.clone(), "b", &"k".into(), "t2".into(), 100, 99)
                .expect_err("live")
                .code(),
            "WORK_IN_PROGRESS"
        );
    }

    /// The same owner is fenced too once its generation is stale, and so is the right
    /// `(owner, generation)` once the item is no longer claimed.
    #[test]
    fn a_stale_generation_is_fenced_even_for_its_own_owner() {
        let first = claim_run(item(), "a", &"k".into(), "t1".into(), 100, 0).expect("pending");
        let lapsed = lapse(&first, Backoff::default(), 600).expect("lapsed");
        assert_eq!(
            complete(&lapsed, "a", 1, None, 601)
                .expect_err("not claimed")
                .code(),
            "WORK_FENCED"
        );
        let second =
            claim_run(lapsed.clone(), "a", &"k".into(), "t2".into(), 100, 600).expect("due");
        assert_eq!(
            complete(&second, "a", 1, None, 601)
                .expect_err("stale")
                .code(),
            "WORK_FENCED"
        );
    }

    /// A lapse stamps its instant; a retry keeps the lapsed expiry (the reclaim it waits
    /// for is a takeover), a dead letter has none.
    #[test]
    fn a_lapse_is_stamped_and_a_dead_letter_holds_no_lease() {
        let held = claim_run(item(), "a", &"k".into(), "t1".into(), 100, 0).expect("pending");
        let retry = lapse(&held, Backoff::default(), 650).expect("lapsed");
        assert_eq!((retry.updated_at, retry.lease_expires_at), (650, Some(100)));
        let last = WorkItem {
            max_attempts: 1,
            ..held
        };
        let dead = lapse(&last, Backoff::default(), 650).expect("lapsed");
        assert_eq!((dead.updated_at, dead.lease_expires_at), (650, None));
    }

    /// Renewing moves the claim's lease window from `now` (clamped) and nothing else.
    #[test]
    fn renewing_a_claim_moves_only_its_lease() {
        let held = claim_run(item(), "a", &"k".into(), "t1".into(), 100, 0).expect("pending");
        let renewed = renew(&held, "a", 1, 1_000, 50).expect("holder");
        assert_eq!(renewed.lease_expires_at, Some(1_050));
        assert_eq!(
            WorkItem {
                lease_expires_at: held.lease_expires_at,
                ..renewed
            },
            held
        );
        assert_eq!(
            renew(&held, "b", 1, 1_000, 50).expect_err("fenced").code(),
            "WORK_FENCED"
        );
    }

    /// The limit is the documented 64 KiB, counted in bytes.
    #[test]
    fn the_checkpoint_limit_is_64_kib() {
        assert!(check_checkpoint_size(&"x".repeat(64 * 1024)).is_ok());
        assert!(check_checkpoint_size(&"x".repeat(64 * 1024 + 1)).is_err());
        assert!(check_checkpoint_size(&"é".repeat(32 * 1024 + 1)).is_err());
    }

    /// Success keeps the handler's result and ends the lease; a failure of either class
    /// keeps the failure and ends the lease. Each is stamped with its instant.
    #[test]
    fn outcomes_are_recorded_and_end_the_lease() {
        let held = claim_run(item(), "a", &"k".into(), "t1".into(), 100, 0).expect("pending");
        let done = complete(&held, "a", 1, Some("{\"ok\":true}".into()), 40).expect("holder");
        assert_eq!(
            (
                done.state,
                done.result.as_deref(),
                done.lease_expires_at,
                done.updated_at
            ),
            (WorkState::Succeeded, Some("{\"ok\":true}"), None, 40)
        );
        for class in [FailureClass::Retryable, FailureClass::Terminal] {
            let failed = fail(&held, "a", 1, failure(class), Retry::default(), 40).expect("holder");
            assert_eq!(failed.last_failure, Some(failure(class)));
            assert_eq!((failed.lease_expires_at, failed.updated_at), (None, 40));
        }
    }

    /// A cursor's owner hands it back: pending again from `next_at`, no lease, its
    /// checkpoint kept, and the old claim no longer answers.
    #[test]
    fn yielding_hands_a_cursor_back_with_its_checkpoint() {
        let cursor = WorkItem {
            kind: WorkKind::Cursor,
            ..item()
        };
        let held = claim_run(cursor, "a", &"k".into(), "t1".into(), 1_000, 0).expect("pending");
        let saved = checkpoint(&held, "a", 1, "pos=9", 5).expect("holder");
        assert_eq!(saved.updated_at, 5);
        let back = yield_back(&saved, "a", 1, 2_000, 10).expect("holder");
        assert_eq!(
            (
                back.state,
                back.next_eligible_at,
                back.lease_expires_at,
                back.updated_at,
                back.checkpoint.as_deref()
            ),
            (WorkState::Pending, 2_000, None, 10, Some("pos=9"))
        );
        assert_eq!(
            yield_back(&back, "a", 1, 2_000, 11)
                .expect_err("not claimed")
                .code(),
            "WORK_FENCED"
        );
        assert_eq!(
            claim_run(back.clone(), "b", &"k".into(), "t2".into(), 1_000, 1_999)
                .expect_err("not yet")
                .code(),
            "WORK_NOT_CLAIMABLE"
        );
    }
}
