//! The one vocabulary of where a work item stands, as people name it: each name is a
//! filter term (`state:NAME`), a triage group and what the views and `inspect` print. A
//! plain `failed` would not tell a handler's refusal from a dead letter or from an item a
//! person discarded on purpose, and those call for different actions, so each has a name
//! of its own; `failed` is the failures no person decided (discarded items are named
//! only by `discarded`, so a requeue by `state:failed` never sweeps them up).

use super::vocab::vocabulary;
use super::work::{Ending, WorkItem, WorkState};

vocabulary! {
    /// A named group of work items.
    pub enum WorkGroup("work group") {
        Pending = "pending",
        Claimed = "claimed",
        Retry = "retry",
        Succeeded = "succeeded",
        /// Ended by a failure no person decided: retries exhausted, terminal or a dead
        /// letter.
        Failed = "failed",
        /// Retryable failures used up its attempts.
        RetriesExhausted = "retries-exhausted",
        /// Its handler said no retry can fix it.
        Terminal = "terminal",
        /// Every attempt lapsed without a recorded outcome (uncertain-exhausted).
        DeadLetter = "dead-letter",
        /// A person ended it (`work discard`).
        Discarded = "discarded",
        /// Unfinished, and no running authority may claim it.
        Stranded = "stranded",
        /// Stranded, though its handler runs (at another compatibility part), or stranded
        /// with no authority running at all.
        Incompatible = "incompatible",
        /// Stranded, and no running authority has its handler at all.
        NoHandler = "no-handler",
    }
}

/// The unfinished states: what can be stranded.
const UNFINISHED: &[WorkState] = &[WorkState::Pending, WorkState::Retry, WorkState::Claimed];

impl WorkGroup {
    /// The stored states its items are in.
    #[must_use]
    pub fn states(self) -> &'static [WorkState] {
        match self {
            Self::Pending => &[WorkState::Pending],
            Self::Claimed => &[WorkState::Claimed],
            Self::Retry => &[WorkState::Retry],
            Self::Succeeded => &[WorkState::Succeeded],
            Self::Failed
            | Self::RetriesExhausted
            | Self::Terminal
            | Self::DeadLetter
            | Self::Discarded => &[WorkState::Failed],
            Self::Stranded | Self::Incompatible | Self::NoHandler => UNFINISHED,
        }
    }

    /// The endings a failed item of the group has (empty: the group holds no failed item
    /// or holds every one, by [`Self::states`]).
    #[must_use]
    pub fn endings(self) -> &'static [Ending] {
        match self {
            Self::Failed => &[
                Ending::RetriesExhausted,
                Ending::Terminal,
                Ending::UncertainExhausted,
            ],
            Self::RetriesExhausted => &[Ending::RetriesExhausted],
            Self::Terminal => &[Ending::Terminal],
            Self::DeadLetter => &[Ending::UncertainExhausted],
            Self::Discarded => &[Ending::Discarded],
            _ => &[],
        }
    }

    /// The name items in `state` are counted and shown under: the state's, but
    /// `discarded` for failed items a person discarded (apart from the failures nobody
    /// decided, as `state:failed` names them).
    #[must_use]
    pub fn count_name(state: WorkState, discarded: bool) -> &'static str {
        if discarded {
            Self::Discarded.as_str()
        } else {
            state.as_str()
        }
    }

    /// Whether membership also depends on the running authorities (what they can run),
    /// not on the item alone.
    #[must_use]
    pub fn needs_fleet(self) -> bool {
        matches!(self, Self::Stranded | Self::Incompatible | Self::NoHandler)
    }

    /// Whether `item` belongs to the group, for a group that needs no fleet
    /// ([`Self::needs_fleet`] groups answer `false`).
    #[must_use]
    pub fn holds(self, item: &WorkItem) -> bool {
        !self.needs_fleet()
            && self.states().contains(&item.state)
            && item
                .ending()
                .is_none_or(|e| self.endings().is_empty() || self.endings().contains(&e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::work::{DISCARDED_CODE, NewWork};
    use crate::model::{Failure, FailureClass};

    /// Every failed item is in exactly one ending group, and in `failed` unless a person
    /// discarded it.
    #[test]
    fn failed_items_fall_in_one_ending_group() {
        let item = |class, code: &str| WorkItem {
            state: WorkState::Failed,
            last_failure: Some(Failure {
                class,
                code: code.into(),
                message: "m".into(),
            }),
            ..WorkItem::new(NewWork::effect("e", "h", "{}"), "c", 0)
        };
        for (w, group, failed) in [
            (
                item(FailureClass::Retryable, "X"),
                WorkGroup::RetriesExhausted,
                true,
            ),
            (item(FailureClass::Terminal, "X"), WorkGroup::Terminal, true),
            (
                item(FailureClass::UncertainExhausted, "X"),
                WorkGroup::DeadLetter,
                true,
            ),
            (
                item(FailureClass::Terminal, DISCARDED_CODE),
                WorkGroup::Discarded,
                false,
            ),
        ] {
            let endings: Vec<WorkGroup> = WorkGroup::ALL
                .iter()
                .copied()
                .filter(|g| !g.endings().is_empty() && *g != WorkGroup::Failed)
                .filter(|g| g.holds(&w))
                .collect();
            assert_eq!(endings, vec![group]);
            assert_eq!(WorkGroup::Failed.holds(&w), failed, "{group}");
            assert!(!WorkGroup::Pending.holds(&w) && !WorkGroup::Stranded.holds(&w));
        }
    }
}
