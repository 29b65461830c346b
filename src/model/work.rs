//! Durable work items: outbox effects, schedule firings and subscription cursors, each
//! owned by at most one authority at a time through the claim embedded in the row.

use serde::{Deserialize, Serialize};

use crate::clock::Millis;

/// What kind of framework-owned work an item is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum WorkKind {
    /// An outbox effect; `logicalEffectId` is its intent id.
    Effect,
    /// One firing of a schedule, id `"<scheduleId>@<dueInstant>"`.
    Schedule,
    /// A subscription's delivery cursor; long-lived, handed between authorities.
    Cursor,
}

impl WorkKind {
    pub const ALL: [Self; 3] = [Self::Effect, Self::Schedule, Self::Cursor];

    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Effect => "effect",
            Self::Schedule => "schedule",
            Self::Cursor => "cursor",
        }
    }

    /// Parses the stored name.
    #[must_use]
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.as_str() == s)
    }
}

/// `pending → claimed(ownerId, generation) → succeeded | failed | retry(nextEligibleAt) → …`
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum WorkState {
    Pending,
    Claimed,
    Retry,
    Succeeded,
    Failed,
}

impl WorkState {
    pub const ALL: [Self; 5] = [
        Self::Pending,
        Self::Claimed,
        Self::Retry,
        Self::Succeeded,
        Self::Failed,
    ];

    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Claimed => "claimed",
            Self::Retry => "retry",
            Self::Succeeded => "succeeded",
            Self::Failed => "failed",
        }
    }

    #[must_use]
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.as_str() == s)
    }

    /// Succeeded and failed never change again.
    #[must_use]
    pub fn is_terminal(self) -> bool {
        matches!(self, Self::Succeeded | Self::Failed)
    }
}

/// Whether a failure may be retried: structured, never parsed out of a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FailureClass {
    Retryable,
    Terminal,
    /// Every attempt was claimed and lapsed without a recorded outcome (a handler that
    /// crashes its process or hangs): the item is a dead letter, parked for a person.
    UncertainExhausted,
}

impl FailureClass {
    /// Every class, in the order they are listed.
    pub const ALL: [Self; 3] = [Self::Retryable, Self::Terminal, Self::UncertainExhausted];

    /// Parses the stored name.
    #[must_use]
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|c| c.as_str() == s)
    }

    /// The stored name: `retryable`, `terminal`, `uncertain-exhausted`.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Retryable => "retryable",
            Self::Terminal => "terminal",
            Self::UncertainExhausted => "uncertain-exhausted",
        }
    }
}

/// The failure code an item an operator discarded carries (with `discarded by <actor>:
/// <reason>`): a terminal failure nobody's handler gave.
pub const DISCARDED_CODE: &str = "DISCARDED";

/// Why a failed item ended, the one rule every place that shows an item to a person
/// follows: a plain `failed` would not say whether a handler refused the work, kept
/// failing until its attempts ran out, never answered at all, or whether a person ended
/// it — four cases that call for different actions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Ending {
    /// Retryable failures used up `maxAttempts`.
    RetriesExhausted,
    /// A failure the handler said no retry can fix.
    Terminal,
    /// Every attempt lapsed without a recorded outcome: a dead letter.
    UncertainExhausted,
    /// An operator ended it (`work discard`).
    Discarded,
}

impl Ending {
    /// Every ending.
    pub const ALL: [Self; 4] = [
        Self::RetriesExhausted,
        Self::Terminal,
        Self::UncertainExhausted,
        Self::Discarded,
    ];

    /// How it reads where an item's state is shown: `failed (retries exhausted)`,
    /// `failed (terminal)`, `failed (uncertain-exhausted)`, `discarded`.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::RetriesExhausted => "failed (retries exhausted)",
            Self::Terminal => "failed (terminal)",
            Self::UncertainExhausted => "failed (uncertain-exhausted)",
            Self::Discarded => "discarded",
        }
    }

    /// Its name in JSON output: `retries-exhausted`, `terminal`, `uncertain-exhausted`,
    /// `discarded`.
    #[must_use]
    pub fn code(self) -> &'static str {
        match self {
            Self::RetriesExhausted => "retries-exhausted",
            Self::Terminal => "terminal",
            Self::UncertainExhausted => "uncertain-exhausted",
            Self::Discarded => "discarded",
        }
    }
}

/// The last failure of an item, as its handler classified it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Failure {
    pub class: FailureClass,
    pub code: String,
    pub message: String,
}

/// One durable work item. The claim (owner, token, generation, lease expiry) lives in the
/// row itself, so claiming and fencing are single-row conditional writes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkItem {
    pub id: String,
    pub kind: WorkKind,
    pub state: WorkState,
    /// The registered handler that executes it.
    pub handler: String,
    /// Handler input, JSON text.
    pub payload: String,
    /// Stable across retries: the semantic identity of the work.
    pub logical_effect_id: String,
    /// What an idempotent external provider dedups on; defaults to `logical_effect_id`.
    pub idempotency_key: String,
    /// Digest of the creating build's compatibility key.
    pub compat: String,
    pub owner_id: Option<String>,
    pub token: Option<String>,
    /// Current fencing generation; 0 until first claimed, then strictly increasing.
    pub generation: u64,
    pub claimed_at: Option<Millis>,
    pub lease_expires_at: Option<Millis>,
    /// Physical attempts started (a claim starts an attempt).
    pub attempt_number: u32,
    /// Attempts reclaimed without a recorded outcome: they may have run.
    pub uncertain_attempts: u32,
    pub max_attempts: u32,
    pub last_attempt_at: Option<Millis>,
    /// Not claimable before this instant (durable backoff floor).
    pub next_eligible_at: Millis,
    pub last_failure: Option<Failure>,
    /// Handler output of a successful attempt, JSON text.
    pub result: Option<String>,
    /// Resume state a handler saved under its claim's fence (opaque text, JSON by
    /// convention), so the next attempt picks up where the last one stopped. It is carried
    /// across a lapse and a reclaim and kept by a retryable failure; it is cleared when the
    /// item ends (succeeded, failed, discarded) and by a requeue, whose fresh attempt
    /// budget starts clean.
    #[serde(default)]
    pub checkpoint: Option<String>,
    /// Claim order among this item's handler's due items: higher first, then earlier due
    /// (see [`NewWork::priority`]). Fixed at enqueue.
    #[serde(default)]
    pub priority: i32,
    pub created_at: Millis,
    pub updated_at: Millis,
}

impl WorkItem {
    /// A fresh pending item; `idempotency_key` defaults to the logical effect id.
    #[must_use]
    pub fn new(spec: NewWork, compat: &str, now: Millis) -> Self {
        let logical = spec.logical_effect_id.unwrap_or_else(|| spec.id.clone());
        Self {
            idempotency_key: spec.idempotency_key.unwrap_or_else(|| logical.clone()),
            logical_effect_id: logical,
            id: spec.id,
            kind: spec.kind,
            state: WorkState::Pending,
            handler: spec.handler,
            payload: spec.payload,
            compat: compat.to_owned(),
            owner_id: None,
            token: None,
            generation: 0,
            claimed_at: None,
            lease_expires_at: None,
            attempt_number: 0,
            uncertain_attempts: 0,
            max_attempts: spec.max_attempts.max(1),
            last_attempt_at: None,
            next_eligible_at: spec.not_before.unwrap_or(now),
            last_failure: None,
            result: None,
            checkpoint: None,
            priority: spec.priority,
            created_at: now,
            updated_at: now,
        }
    }

    /// When the item is (or was) due to be claimed: its `nextEligibleAt` while pending or
    /// in retry, its claim's expiry while claimed, never once terminal. Every provider's
    /// claim index is keyed by this instant, and the checker's stranded-work clock starts
    /// at it.
    #[must_use]
    pub fn due_at(&self) -> Option<Millis> {
        match self.state {
            WorkState::Pending | WorkState::Retry => Some(self.next_eligible_at),
            WorkState::Claimed => self.lease_expires_at,
            WorkState::Succeeded | WorkState::Failed => None,
        }
    }

    /// When the claim of an owner that has recorded no outcome expires (or expired), while
    /// nobody has taken the item over: the item is still claimed, or its lapsed attempt was
    /// counted and it waits out its backoff in `retry`. Claiming the item now takes over that
    /// owner's claim (a failover, when another owner claims it).
    #[must_use]
    pub fn unfinished_claim_expiry(&self) -> Option<Millis> {
        match self.state {
            WorkState::Claimed | WorkState::Retry => self.lease_expires_at,
            _ => None,
        }
    }

    /// Whether the item is a dead letter: failed because every attempt lapsed unrecorded.
    #[must_use]
    pub fn is_dead_letter(&self) -> bool {
        self.state == WorkState::Failed
            && self
                .last_failure
                .as_ref()
                .is_some_and(|f| f.class == FailureClass::UncertainExhausted)
    }

    /// Why it ended, when it failed (`None` for any other state): read off its last
    /// failure's class and code. A failed item without a recorded failure cannot be
    /// retried either, so it reads terminal.
    #[must_use]
    pub fn ending(&self) -> Option<Ending> {
        if self.state != WorkState::Failed {
            return None;
        }
        Some(match &self.last_failure {
            Some(f) if f.class == FailureClass::UncertainExhausted => Ending::UncertainExhausted,
            Some(f) if f.code == DISCARDED_CODE => Ending::Discarded,
            Some(f) if f.class == FailureClass::Retryable => Ending::RetriesExhausted,
            _ => Ending::Terminal,
        })
    }

    /// The name it is counted under ([`super::WorkGroup::count_name`]): its state's, but
    /// `discarded` for a failed item a person discarded.
    #[must_use]
    pub fn count_name(&self) -> &'static str {
        super::WorkGroup::count_name(self.state, self.ending() == Some(Ending::Discarded))
    }

    /// Its state as a person is shown it: a failed item says why it ended
    /// ([`Self::ending`]), any other its state's name.
    #[must_use]
    pub fn state_text(&self) -> &'static str {
        self.ending()
            .map_or_else(|| self.state.as_str(), Ending::as_str)
    }

    /// The owner whose claim is current, if the item is claimed.
    #[must_use]
    pub fn current_owner(&self) -> Option<&str> {
        (self.state == WorkState::Claimed)
            .then_some(self.owner_id.as_deref())
            .flatten()
    }
}

/// What a caller supplies to enqueue work.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewWork {
    pub id: String,
    pub kind: WorkKind,
    pub handler: String,
    pub payload: String,
    pub logical_effect_id: Option<String>,
    pub idempotency_key: Option<String>,
    pub max_attempts: u32,
    pub not_before: Option<Millis>,
    /// Claim order within the item's handler (default 0): among the handler's items that
    /// are due, a higher priority is claimed first, then the earlier due instant, then the
    /// lower id. Priority orders one handler's queue only: every handler and every kind of
    /// work keeps its fair share of each claim batch whatever the priorities, and reclaims
    /// of lapsed claims come before everything.
    pub priority: i32,
}

impl NewWork {
    /// An effect with default retry budget (5 attempts).
    #[must_use]
    pub fn effect(
        id: impl Into<String>,
        handler: impl Into<String>,
        payload: impl Into<String>,
    ) -> Self {
        Self {
            id: id.into(),
            kind: WorkKind::Effect,
            handler: handler.into(),
            payload: payload.into(),
            logical_effect_id: None,
            idempotency_key: None,
            max_attempts: 5,
            not_before: None,
            priority: 0,
        }
    }
}

/// A claim lane: the work of one kind for one handler. Each claim batch shares its budget
/// across lanes (see `store/fair_share.rs`), and lateness is stated per lane.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkLane {
    pub kind: WorkKind,
    pub handler: String,
}

impl WorkLane {
    #[must_use]
    pub fn new(kind: WorkKind, handler: impl Into<String>) -> Self {
        Self {
            kind,
            handler: handler.into(),
        }
    }

    /// The lane of `item`.
    #[must_use]
    pub fn of(item: &WorkItem) -> Self {
        Self::new(item.kind, item.handler.clone())
    }

    /// The order every provider lists lanes in: by kind name, then handler (the lane
    /// indexes' key order).
    #[must_use]
    pub fn sort_key(&self) -> (&'static str, &str) {
        (self.kind.as_str(), &self.handler)
    }
}

/// Filter for listing work: every field narrows, `None` means any.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WorkFilter {
    /// Any of these states (empty: any state).
    pub states: Vec<WorkState>,
    pub kind: Option<WorkKind>,
    pub owner: Option<String>,
    /// Any of these compat digests (empty: any). The incompatible quick filter passes the
    /// digests no live authority has, read from the (small) counts table.
    pub compats: Vec<String>,
    /// Ids starting with this: a range over the key (`id >= prefix AND id < end`), so it
    /// combines with whichever `(column, id)` index leads.
    pub id_prefix: Option<String>,
    /// Row facets: these narrow the rows the fields above read, a bounded number of rows
    /// per page (`store/work_facets.rs`), since no index holds them.
    pub facets: WorkFacets,
}

/// What narrows a work list beyond its indexed fields: read off each row.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WorkFacets {
    /// A failed item matches only with one of these endings (empty: any); items in any
    /// other state are not narrowed by it.
    pub endings: Vec<Ending>,
    /// Any of these handlers (empty: any).
    pub handlers: Vec<String>,
    /// None of these handlers.
    pub not_handlers: Vec<String>,
    /// The last failure's class is one of these (empty: any).
    pub classes: Vec<FailureClass>,
    /// The last failure's code is one of these (empty: any).
    pub codes: Vec<String>,
}

impl WorkFacets {
    /// Whether nothing narrows.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }

    /// Whether `item` passes every facet.
    #[must_use]
    pub fn admits(&self, item: &WorkItem) -> bool {
        let failure = item.last_failure.as_ref();
        item.ending()
            .is_none_or(|e| self.endings.is_empty() || self.endings.contains(&e))
            && (self.handlers.is_empty() || self.handlers.contains(&item.handler))
            && !self.not_handlers.contains(&item.handler)
            && (self.classes.is_empty() || failure.is_some_and(|f| self.classes.contains(&f.class)))
            && (self.codes.is_empty() || failure.is_some_and(|f| self.codes.contains(&f.code)))
    }
}

/// The number of items in one (kind, state, compat) cell; kept incrementally by every write.
/// Failed items a person discarded have a cell of their own, apart from the failures
/// nobody decided (what `state:failed` names).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkCount {
    pub kind: WorkKind,
    /// The stored state: `failed` for the discarded cell too, so a count of the failures
    /// nobody decided is `name() == "failed"`, not `state == Failed`.
    pub state: WorkState,
    /// The cell of failed items a person discarded (`state` is then `failed`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub discarded: bool,
    pub compat: String,
    pub count: u64,
}

impl WorkCount {
    /// What the cell is called where counts are shown: its state's name, or `discarded`.
    #[must_use]
    pub fn name(&self) -> &'static str {
        super::WorkGroup::count_name(self.state, self.discarded)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The one due instant every claim index and the stranded-work check key on.
    #[test]
    fn due_at_follows_the_state() {
        let mut item = WorkItem::new(NewWork::effect("e", "h", "{}"), "c", 100);
        item.next_eligible_at = 250;
        item.lease_expires_at = Some(900);
        let due = |state| {
            let mut item = item.clone();
            item.state = state;
            item.due_at()
        };
        assert_eq!(due(WorkState::Pending), Some(250));
        assert_eq!(due(WorkState::Retry), Some(250));
        assert_eq!(due(WorkState::Claimed), Some(900));
        assert_eq!(due(WorkState::Succeeded), None);
        assert_eq!(due(WorkState::Failed), None);
    }

    /// A failed item says why it ended, by its last failure; no other state has an ending.
    #[test]
    fn a_failed_item_says_why_it_ended() {
        let item = WorkItem::new(NewWork::effect("e", "h", "{}"), "c", 100);
        let failed = |class, code: &str| WorkItem {
            state: WorkState::Failed,
            last_failure: Some(Failure {
                class,
                code: code.into(),
                message: "why".into(),
            }),
            ..item.clone()
        };
        for (ended, ending, text) in [
            (
                failed(FailureClass::Retryable, "RATE_LIMITED"),
                Ending::RetriesExhausted,
                "failed (retries exhausted)",
            ),
            (
                failed(FailureClass::Retryable, "BAD_ANSWER"),
                Ending::RetriesExhausted,
                "failed (retries exhausted)",
            ),
            (
                failed(FailureClass::Terminal, "CARD_DECLINED"),
                Ending::Terminal,
                "failed (terminal)",
            ),
            (
                failed(FailureClass::UncertainExhausted, "ATTEMPTS_EXHAUSTED"),
                Ending::UncertainExhausted,
                "failed (uncertain-exhausted)",
            ),
            (
                failed(FailureClass::Terminal, DISCARDED_CODE),
                Ending::Discarded,
                "discarded",
            ),
            (
                WorkItem {
                    state: WorkState::Failed,
                    ..item.clone()
                },
                Ending::Terminal,
                "failed (terminal)",
            ),
        ] {
            assert_eq!(ended.ending(), Some(ending), "{text}");
            assert_eq!(ended.state_text(), text);
            assert_eq!(ending.as_str(), text);
        }
        for state in [
            WorkState::Pending,
            WorkState::Claimed,
            WorkState::Retry,
            WorkState::Succeeded,
        ] {
            let open = WorkItem {
                state,
                ..failed(FailureClass::Terminal, "X")
            };
            assert_eq!(open.ending(), None, "{state:?}");
            assert_eq!(open.state_text(), state.as_str());
        }
    }
}
