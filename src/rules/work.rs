//! Work items: claiming, fenced completion, durable retry, uncertain attempts.

use crate::clock::Millis;
use crate::error::{Error, Result};
use crate::model::{Failure, FailureClass, WorkItem, WorkState};

/// The durable backoff shape for retried work: `initial * 2^(attempt-1)`, capped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    pub initial_ms: Millis,
    pub max_ms: Millis,
}

impl Default for Backoff {
    fn default() -> Self {
        Self {
            initial_ms: 500,
            max_ms: 30_000,
        }
    }
}

impl Backoff {
    /// The delay after the `attempt`-th failed attempt (1-based).
    #[must_use]
    pub fn delay(self, attempt: u32) -> Millis {
        let shift = attempt.saturating_sub(1).min(30);
        self.initial_ms.saturating_mul(1 << shift).min(self.max_ms)
    }
}

/// Is the item claimable now by an authority with compat digest `compat`?
#[must_use]
pub fn claimable(item: &WorkItem, compat: &str, now: Millis) -> bool {
    item.compat == compat && item.due_at().is_some_and(|due| due <= now)
}

/// Claims the item for `owner`: a new generation, a lease window, a new attempt. A reclaim
/// of an item still `claimed` (its owner vanished without recording an outcome) counts an
/// uncertain attempt; the idempotency key is untouched so the retry reuses it.
///
/// # Errors
/// `Incompatible` for another build's item, `AlreadyTerminal`, `LeaseHeld` while the claim
/// is live, `NotClaimable` before `nextEligibleAt`.
pub fn claim(
    item: &WorkItem,
    owner: &str,
    compat: &str,
    token: String,
    lease_ms: Millis,
    now: Millis,
) -> Result<WorkItem> {
    if item.compat != compat {
        return Err(Error::Incompatible {
            id: item.id.clone(),
            required: item.compat.clone(),
            have: compat.to_owned(),
        });
    }
    let reclaim = match item.state {
        WorkState::Succeeded | WorkState::Failed => {
            return Err(Error::AlreadyTerminal {
                id: item.id.clone(),
                state: item.state.as_str().into(),
            });
        }
        WorkState::Claimed => {
            let expires = item.lease_expires_at.unwrap_or(Millis::MAX);
            if expires > now {
                return Err(Error::LeaseHeld {
                    resource: item.id.clone(),
                    owner: item.owner_id.clone().unwrap_or_default(),
                    expires_at: expires,
                });
            }
            true
        }
        WorkState::Pending | WorkState::Retry => {
            if item.next_eligible_at > now {
                return Err(Error::NotClaimable {
                    id: item.id.clone(),
                    state: item.state.as_str().into(),
                });
            }
            false
        }
    };
    Ok(WorkItem {
        state: WorkState::Claimed,
        owner_id: Some(owner.to_owned()),
        token: Some(token),
        generation: item.generation + 1,
        claimed_at: Some(now),
        lease_expires_at: Some(
            now.saturating_add(crate::rules::lease::clamp_duration(lease_ms as f64)),
        ),
        attempt_number: item.attempt_number + 1,
        uncertain_attempts: item.uncertain_attempts + u32::from(reclaim),
        last_attempt_at: Some(now),
        updated_at: now,
        ..item.clone()
    })
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

/// Records success: the item becomes `succeeded`, for good.
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
        updated_at: now,
        ..item.clone()
    })
}

/// Records a failed attempt: a retryable failure with attempts left schedules a durable
/// retry at `now + backoff`; anything else is terminal `failed`.
///
/// # Errors
/// As [`check_claim`].
pub fn fail(
    item: &WorkItem,
    owner: &str,
    generation: u64,
    failure: Failure,
    backoff: Backoff,
    now: Millis,
) -> Result<WorkItem> {
    check_claim(item, owner, generation)?;
    let retry = failure.class == FailureClass::Retryable && item.attempt_number < item.max_attempts;
    Ok(WorkItem {
        state: if retry {
            WorkState::Retry
        } else {
            WorkState::Failed
        },
        next_eligible_at: if retry {
            now.saturating_add(backoff.delay(item.attempt_number))
        } else {
            item.next_eligible_at
        },
        last_failure: Some(failure),
        lease_expires_at: None,
        updated_at: now,
        ..item.clone()
    })
}

/// Hands a long-lived item (a subscription cursor) back to `pending`, eligible again at
/// `next_at`: its owner is done for now and any authority may take it next.
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

    #[test]
    fn reclaim_of_unrecorded_attempt_is_uncertain_and_keeps_the_key() {
        let first = claim(&item(), "a", "k", "t1".into(), 100, 0).expect("pending");
        let second = claim(&first, "b", "k", "t2".into(), 100, 100).expect("expired");
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

    #[test]
    fn expiry_without_reclaim_does_not_fence() {
        let first = claim(&item(), "a", "k", "t1".into(), 100, 0).expect("pending");
        assert!(complete(&first, "a", 1, None, 10_000).is_ok());
    }

    #[test]
    fn retryable_failures_back_off_until_the_budget_is_spent() {
        let mut it = WorkItem {
            max_attempts: 2,
            ..item()
        };
        let failure = Failure {
            class: FailureClass::Retryable,
            code: "E".into(),
            message: "m".into(),
        };
        it = claim(&it, "a", "k", "t".into(), 100, 0).expect("pending");
        it = fail(&it, "a", 1, failure.clone(), Backoff::default(), 10).expect("holder");
        assert_eq!((it.state, it.next_eligible_at), (WorkState::Retry, 510));
        assert!(claim(&it, "a", "k", "t".into(), 100, 509).is_err());
        it = claim(&it, "a", "k", "t".into(), 100, 510).expect("due");
        it = fail(&it, "a", 2, failure, Backoff::default(), 520).expect("holder");
        assert_eq!(it.state, WorkState::Failed);
    }

    #[test]
    fn terminal_items_answer_already_terminal() {
        let done = complete(
            &claim(&item(), "a", "k", "t".into(), 100, 0).expect("pending"),
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
            claim(&done, "b", "k", "t".into(), 100, 2)
                .expect_err("refused")
                .code(),
            "already-terminal"
        );
    }
}
