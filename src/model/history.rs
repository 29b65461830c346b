//! The durable history the invariant checker reads: every ownership grant and every fenced
//! write, accepted or refused, stamped with the store revision that committed it (a total
//! order that does not depend on anyone's clock). Bounded: see [`crate::store::RETENTION`].

use serde::{Deserialize, Serialize};

use crate::clock::Millis;

/// One ownership grant: an acquire, a claim or a handoff minted `generation` for `owner`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Grant {
    pub revision: u64,
    pub resource_id: String,
    pub generation: u64,
    pub owner_id: String,
    /// `acquire`, `claim`, `handoff`.
    pub how: String,
    /// Compat digest of the grantee (for work claims: must equal the item's).
    pub owner_compat: Option<String>,
    pub item_compat: Option<String>,
    pub at: Millis,
}

/// One fenced write attempt and whether the store accepted it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WriteRecord {
    pub revision: u64,
    pub resource_id: String,
    pub generation: u64,
    pub owner_id: String,
    /// `complete`, `fail`, `retry`, `cursor`, `renew`, `release`, `checkpoint`, `transition`…
    pub verb: String,
    pub accepted: bool,
    /// Why it was refused (`WORK_FENCED`, `stale-sequence`, …).
    pub refusal: Option<String>,
    /// Verb-specific facts the checker needs (logical effect id, cursor sequence…), JSON.
    pub detail: String,
    pub at: Millis,
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
