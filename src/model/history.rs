//! The durable history the invariant checker reads: every ownership grant and every fenced
//! write, accepted or refused, stamped with the store revision that committed it (a total
//! order that does not depend on anyone's clock). Bounded: see `store/mod.rs::RETENTION`.

use serde::{Deserialize, Serialize};

use crate::clock::Millis;
use crate::model::vocab::vocabulary;
use crate::model::{Lease, WorkItem, WorkState};

vocabulary! {
    /// How a grant minted its generation.
    pub enum GrantKind("grant kind") {
        /// A lease taken with `acquire`.
        Acquire = "acquire",
        /// A work item or workflow instance claimed by an authority.
        Claim = "claim",
        /// A lease moved to a named recipient.
        Handoff = "handoff",
    }
}

vocabulary! {
    /// What a fenced write attempted.
    pub enum WriteVerb("write verb") {
        /// A lease or a work claim extended.
        Renew = "renew",
        Release = "release",
        Handoff = "handoff",
        Checkpoint = "checkpoint",
        Complete = "complete",
        Fail = "fail",
        /// A long-lived work item handed back to pending.
        Yield = "yield",
        /// A subscription cursor advanced.
        Cursor = "cursor",
        /// A workflow action's outcome recorded.
        ActionOutcome = "action-outcome",
        /// A workflow instance's transition.
        Transition = "transition",
        /// An operator gave a failed work item a fresh attempt budget (the writer is the
        /// operator, not a claim holder).
        Requeue = "requeue",
        /// An operator ended a work item for good (the writer is the operator).
        Discard = "discard",
        /// An operator handed a gone authority's claim back under a new generation (the
        /// writer is the operator).
        ForceRelease = "force-release",
    }
}

impl WriteVerb {
    /// Whether the write is an operator's triage of a work item rather than a claim
    /// holder's fenced write: no grant stands behind it.
    #[must_use]
    pub fn by_operator(self) -> bool {
        matches!(self, Self::Requeue | Self::Discard | Self::ForceRelease)
    }

    /// Whether an accepted write of this verb ends its writer's claim of a work item (it
    /// holds the item no longer, under the same generation).
    #[must_use]
    pub fn ends_a_claim(self) -> bool {
        matches!(self, Self::Complete | Self::Fail | Self::Yield)
    }
}

/// One ownership grant: an acquire, a claim or a handoff minted `generation` for `owner`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Grant {
    pub revision: u64,
    pub resource_id: String,
    pub generation: u64,
    pub owner_id: String,
    pub how: GrantKind,
    /// Compat digest of the grantee (for work claims: must equal the item's).
    pub owner_compat: Option<String>,
    pub item_compat: Option<String>,
    pub at: Millis,
    /// The holder this grant took the resource from without that holder releasing it:
    /// set exactly when the grant is a failover. `None` for a first grant, a grant after a
    /// release, a handoff — and for grants recorded before stores kept this fact.
    #[serde(default)]
    pub took_over: Option<Takeover>,
}

/// A failover's facts, recorded inside the granting transaction.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Takeover {
    /// The holder that lost the resource.
    pub from_owner: String,
    /// Its generation, fenced by this grant.
    pub from_generation: u64,
    /// How long its lease had been over when the grant was made (zero or negative for a
    /// take from a holder whose lease had not run out).
    pub lapsed_ms: Millis,
}

impl Takeover {
    /// What granting `current` to `owner` at `now` takes over: the unreleased lease of
    /// another owner. A release, or the same owner coming back, is no failover.
    #[must_use]
    pub fn of_lease(current: Option<&Lease>, owner: &str, now: Millis) -> Option<Self> {
        current
            .filter(|l| l.released_at.is_none() && l.owner_id != owner)
            .map(|l| Self {
                from_owner: l.owner_id.clone(),
                from_generation: l.generation,
                lapsed_ms: now.saturating_sub(l.expires_at),
            })
    }

    /// What claiming `item` (as it was before the claim) for `owner` at `now` takes over:
    /// another owner's claim that was never completed, failed or yielded.
    #[must_use]
    pub fn of_work(item: &WorkItem, owner: &str, now: Millis) -> Option<Self> {
        let from = item.owner_id.as_deref()?;
        (item.unfinished_claim_expiry().is_some() && from != owner).then(|| Self {
            from_owner: from.to_owned(),
            from_generation: item.generation,
            lapsed_ms: item
                .lease_expires_at
                .map_or(0, |expired| now.saturating_sub(expired)),
        })
    }
}

/// Who held a resource when a write against it was attempted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Holder {
    /// `None` when nobody held it (released, finished, never claimed).
    pub owner_id: Option<String>,
    /// The resource's current generation.
    pub generation: u64,
}

impl Holder {
    /// Nobody holds the resource: it does not exist (any more), so a write against it is
    /// refused and recorded with this holder.
    #[must_use]
    pub fn nobody() -> Self {
        Self {
            owner_id: None,
            generation: 0,
        }
    }

    /// The holder of a lease row: nobody once it was released.
    #[must_use]
    pub fn of_lease(lease: &Lease) -> Self {
        Self {
            owner_id: lease.released_at.is_none().then(|| lease.owner_id.clone()),
            generation: lease.generation,
        }
    }

    /// The holder of a work item: its claimant while claimed.
    #[must_use]
    pub fn of_work(item: &WorkItem) -> Self {
        Self {
            owner_id: (item.state == WorkState::Claimed)
                .then(|| item.owner_id.clone())
                .flatten(),
            generation: item.generation,
        }
    }
}

/// Where a history row sits in a newest-first incident list: its instant, then the order
/// it was added in. A page continues strictly before the last row's position.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HistoryPosition {
    pub at: Millis,
    pub seq: u64,
}

impl HistoryPosition {
    /// `AT.SEQ`: the page key people pass back (`--after`) and the dashboard pages by.
    #[must_use]
    pub fn key(self) -> String {
        format!("{}.{}", self.at, self.seq)
    }

    /// Reads [`Self::key`] back; `None` for anything else.
    #[must_use]
    pub fn parse_key(text: &str) -> Option<Self> {
        let (at, seq) = text.trim().rsplit_once('.')?;
        Some(Self {
            at: at.parse().ok()?,
            seq: seq.parse().ok()?,
        })
    }
}

/// One fenced write attempt and whether the store accepted it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WriteRecord {
    pub revision: u64,
    pub resource_id: String,
    pub generation: u64,
    pub owner_id: String,
    pub verb: WriteVerb,
    pub accepted: bool,
    /// Why it was refused (`WORK_FENCED`, `stale-sequence`, …).
    pub refusal: Option<String>,
    /// Verb-specific facts the checker needs (logical effect id, cursor sequence…), JSON.
    pub detail: String,
    pub at: Millis,
    /// Who held the resource when the write was attempted; `None` for records written
    /// before stores kept this fact.
    #[serde(default)]
    pub holder: Option<Holder>,
}

/// An operator action, kept so the audit view can say who did what.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AuditEntry {
    pub id: i64,
    pub at: Millis,
    /// `user@host`.
    pub actor: String,
    pub action: String,
    pub target: String,
    pub outcome: String,
}

/// An operator action's audit outcome: `words`, then `; reason: …` when a reason was given
/// (`refused: completed; reason: duplicate order`), in the same form for every action.
#[must_use]
pub fn with_reason(words: String, reason: &str) -> String {
    let reason = reason.trim();
    if reason.is_empty() {
        words
    } else {
        format!("{words}; reason: {reason}")
    }
}
