//! Triage of failed work, in one vocabulary for the library, `leasehold work` and the
//! audit log: `requeue` gives a failed item (a dead letter included) a fresh attempt
//! budget, `discard` ends an item for good with a person's reason, `retry-now` skips a
//! waiting item's backoff or delay. Each decision is a pure
//! function of the item as the store holds it inside the writing transaction
//! ([`requeue`], [`discard`]), so the change is conditional on the state it was judged on;
//! a repeat finds its own earlier change and answers [`Verdict::AlreadyDone`] without
//! writing again. Every attempt that reaches the store is audited under [`Verb::action`]
//! with the operator's reason, refusals included.

use crate::clock::Millis;
use crate::error::Error;
use crate::model::history::with_reason;
use crate::model::{Ending, Failure, FailureClass, WorkItem, WorkState};

use crate::model::work::DISCARDED_CODE;

/// An operator's triage verb.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verb {
    Requeue,
    Discard,
    RetryNow,
}

impl Verb {
    /// The audit log's action name.
    #[must_use]
    pub fn action(self) -> &'static str {
        match self {
            Self::Requeue => "requeue-work",
            Self::Discard => "discard-work",
            Self::RetryNow => "retry-now-work",
        }
    }

    /// Judges `item` as it stands at `now`: the verdict, and the row to write when it
    /// changes. `actor` and `reason` are what a discard records on the item.
    #[must_use]
    pub fn judge(
        self,
        item: &WorkItem,
        actor: &str,
        reason: &str,
        now: Millis,
    ) -> (Verdict, Option<WorkItem>) {
        match self {
            Self::Requeue => requeue(item, now),
            Self::Discard => discard(item, actor, reason, now),
            Self::RetryNow => retry_now(item, now),
        }
    }

    /// What a change by this verb is called: `requeued`, `discarded`.
    #[must_use]
    pub fn done(self) -> &'static str {
        match self {
            Self::Requeue => "requeued",
            Self::Discard => "discarded",
            Self::RetryNow => "due now",
        }
    }
}

/// What a triage attempt came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// The item changed.
    Done,
    /// A repeat: the item already shows this verb's change; nothing was written.
    AlreadyDone,
    /// Refused: the item's state does not allow the verb. The error is the refusal's
    /// stable code for scripts — `already-terminal` for a finished item,
    /// `WORK_STATE_MISMATCH` for one in a state the verb does not act on — and the words
    /// say why, for people and the audit log.
    Refused { error: Error, why: String },
    /// Refused: no work item has this id.
    Unknown,
}

impl Verdict {
    /// The outcome in words for `verb`: `requeued`, `already requeued`, `refused: succeeded
    /// — nothing to requeue`, `refused: no such work item`.
    #[must_use]
    pub fn words(&self, verb: Verb) -> String {
        match self {
            Self::Done => verb.done().into(),
            Self::AlreadyDone => format!("already {}", verb.done()),
            Self::Refused { why, .. } => format!("refused: {why}"),
            Self::Unknown => "refused: no such work item".into(),
        }
    }

    /// Whether the item was left as it was because the verb does not apply to it.
    #[must_use]
    pub fn refused(&self) -> bool {
        matches!(self, Self::Refused { .. } | Self::Unknown)
    }

    /// The refusal of a verb on `item`, which has finished: `already-terminal`.
    fn finished(item: &WorkItem, why: &str) -> Self {
        Self::refusal(item, why, |id, state| Error::AlreadyTerminal { id, state })
    }

    /// The refusal of a verb on `item`, which is unfinished but in a state the verb does
    /// not act on: `WORK_STATE_MISMATCH`.
    fn mismatch(item: &WorkItem, why: &str) -> Self {
        Self::refusal(item, why, |id, state| Error::WorkStateMismatch {
            id,
            state,
        })
    }

    /// A refusal of a verb on `item`: the `error` of its id and state, and why after its
    /// state (`succeeded — nothing to requeue`).
    fn refusal(item: &WorkItem, why: &str, error: fn(String, String) -> Error) -> Self {
        let state = item.state.as_str();
        Self::Refused {
            error: error(item.id.clone(), state.into()),
            why: format!("{state} — {why}"),
        }
    }
}

/// The audit log's outcome text: the verdict's words, then the reason.
#[must_use]
pub fn audit_outcome(verb: Verb, verdict: &Verdict, reason: &str) -> String {
    with_reason(verdict.words(verb), reason)
}

/// Requeue: a failed item (a dead letter, a terminal failure, a discarded item) becomes
/// `pending` now with a fresh attempt budget — attempt and uncertain counters back to zero
/// — keeping its logical id, idempotency key and generation. A fresh budget starts clean:
/// no checkpoint and no last failure from an earlier attempt (a pending item showing one
/// would read as failing now, and `code:` would still match it); why it had failed stays
/// in its attempt errors. The item it answers with is the row to write, `None` when
/// nothing changes.
#[must_use]
pub fn requeue(item: &WorkItem, now: Millis) -> (Verdict, Option<WorkItem>) {
    match item.state {
        WorkState::Failed => (
            Verdict::Done,
            Some(WorkItem {
                state: WorkState::Pending,
                owner_id: None,
                token: None,
                lease_expires_at: None,
                attempt_number: 0,
                uncertain_attempts: 0,
                next_eligible_at: now,
                last_failure: None,
                result: None,
                checkpoint: None,
                updated_at: now,
                ..item.clone()
            }),
        ),
        // Claimed before (a generation) yet no attempt since: this verb's own change.
        WorkState::Pending if item.generation > 0 && item.attempt_number == 0 => {
            (Verdict::AlreadyDone, None)
        }
        WorkState::Succeeded => (Verdict::finished(item, "nothing to requeue"), None),
        _ => (
            Verdict::mismatch(item, "only a failed item is requeued"),
            None,
        ),
    }
}

/// Discard: the item ends `failed` for good, whatever it was doing (a live claim's holder
/// is fenced out: its completion answers already-terminal), with `discarded by <actor>:
/// <reason>` as its last failure so every listing shows why, and its checkpoint dropped.
/// A succeeded item is refused: its effect happened.
#[must_use]
pub fn discard(
    item: &WorkItem,
    actor: &str,
    reason: &str,
    now: Millis,
) -> (Verdict, Option<WorkItem>) {
    match item.state {
        WorkState::Succeeded => (
            Verdict::finished(item, "a finished effect is not discarded"),
            None,
        ),
        WorkState::Failed if is_discarded(item) => (Verdict::AlreadyDone, None),
        _ => (
            Verdict::Done,
            Some(WorkItem {
                state: WorkState::Failed,
                lease_expires_at: None,
                checkpoint: None,
                last_failure: Some(Failure {
                    class: FailureClass::Terminal,
                    code: DISCARDED_CODE.into(),
                    message: format!("discarded by {actor}: {}", reason.trim()),
                }),
                updated_at: now,
                ..item.clone()
            }),
        ),
    }
}

/// Retry now: an item waiting out a retry's backoff (or a pending one enqueued with a
/// delay) becomes due at once — nothing else changes: not its attempt budget, not its
/// failure. One already due answers [`Verdict::AlreadyDone`]; a claimed item is running
/// and a finished one has nothing to wait for, so both are refused.
#[must_use]
pub fn retry_now(item: &WorkItem, now: Millis) -> (Verdict, Option<WorkItem>) {
    match item.state {
        WorkState::Retry | WorkState::Pending if item.next_eligible_at > now => (
            Verdict::Done,
            Some(WorkItem {
                next_eligible_at: now,
                updated_at: now,
                ..item.clone()
            }),
        ),
        WorkState::Retry | WorkState::Pending => (Verdict::AlreadyDone, None),
        WorkState::Claimed => (Verdict::mismatch(item, "it is running now"), None),
        WorkState::Failed => (
            Verdict::finished(item, "requeue it for a fresh budget"),
            None,
        ),
        WorkState::Succeeded => (Verdict::finished(item, "nothing to retry"), None),
    }
}

/// Whether an operator discarded the item.
#[must_use]
pub fn is_discarded(item: &WorkItem) -> bool {
    item.ending() == Some(Ending::Discarded)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::work::NewWork;

    fn failed() -> WorkItem {
        WorkItem {
            state: WorkState::Failed,
            last_failure: Some(Failure {
                class: FailureClass::Retryable,
                code: "BOOM".into(),
                message: "m".into(),
            }),
            generation: 3,
            attempt_number: 3,
            uncertain_attempts: 3,
            ..WorkItem::new(NewWork::effect("e", "h", "{}"), "k", 0)
        }
    }

    #[test]
    fn retry_now_skips_only_a_wait() {
        let waiting = WorkItem {
            state: WorkState::Retry,
            next_eligible_at: 500,
            ..failed()
        };
        let (verdict, next) = retry_now(&waiting, 100);
        assert_eq!(verdict, Verdict::Done);
        let next = next.expect("a change");
        assert_eq!((next.next_eligible_at, next.attempt_number), (100, 3));
        assert_eq!(retry_now(&next, 100).0, Verdict::AlreadyDone);
        assert!(retry_now(&failed(), 100).0.refused());
        let claimed = WorkItem {
            state: WorkState::Claimed,
            ..failed()
        };
        assert!(retry_now(&claimed, 100).0.refused());
    }

    /// A refusal carries its stable code: `already-terminal` for a finished item,
    /// `WORK_STATE_MISMATCH` for an unfinished one the verb does not act on.
    #[test]
    fn a_refusal_says_whether_the_item_finished() {
        let code = |(verdict, _): (Verdict, Option<WorkItem>)| match verdict {
            Verdict::Refused { error, .. } => error.code(),
            other => panic!("not refused: {other:?}"),
        };
        let done = WorkItem {
            state: WorkState::Succeeded,
            ..failed()
        };
        let claimed = WorkItem {
            state: WorkState::Claimed,
            ..failed()
        };
        let fresh = WorkItem::new(NewWork::effect("f", "h", "{}"), "k", 0);
        assert_eq!(code(requeue(&done, 1)), "already-terminal");
        assert_eq!(code(discard(&done, "a", "r", 1)), "already-terminal");
        assert_eq!(code(retry_now(&failed(), 1)), "already-terminal");
        assert_eq!(code(requeue(&fresh, 1)), "WORK_STATE_MISMATCH");
        assert_eq!(code(retry_now(&claimed, 1)), "WORK_STATE_MISMATCH");
        assert_eq!(
            retry_now(&claimed, 1).0.words(Verb::RetryNow),
            "refused: claimed — it is running now"
        );
    }

    #[test]
    fn requeue_resets_the_budget_once() {
        let (verdict, next) = requeue(&failed(), 50);
        let next = next.expect("changed");
        assert_eq!(verdict, Verdict::Done);
        assert_eq!(
            (
                next.state,
                next.attempt_number,
                next.uncertain_attempts,
                next.generation
            ),
            (WorkState::Pending, 0, 0, 3)
        );
        assert_eq!(
            next.last_failure, None,
            "no failure is current while pending"
        );
        assert_eq!(requeue(&next, 60), (Verdict::AlreadyDone, None));
        let fresh = WorkItem::new(NewWork::effect("f", "h", "{}"), "k", 0);
        assert!(requeue(&fresh, 60).0.refused());
    }

    #[test]
    fn discard_refuses_success_and_repeats_quietly() {
        let (verdict, next) = discard(&failed(), "al@h", " dup ", 5);
        let next = next.expect("changed");
        assert_eq!(verdict, Verdict::Done);
        assert_eq!(
            next.last_failure.map(|f| f.message),
            Some("discarded by al@h: dup".into())
        );
        let again = discard(&failed(), "al@h", "x", 5).1.expect("changed");
        assert_eq!(
            discard(&again, "bo@h", "y", 6),
            (Verdict::AlreadyDone, None)
        );
        assert_eq!(again.state_text(), "discarded");
        assert!(is_discarded(&again) && !is_discarded(&failed()));
        let done = WorkItem {
            state: WorkState::Succeeded,
            ..failed()
        };
        assert_eq!(
            audit_outcome(Verb::Discard, &discard(&done, "a", "r", 1).0, "r"),
            "refused: succeeded — a finished effect is not discarded; reason: r"
        );
    }
}
