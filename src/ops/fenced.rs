//! Refused (fenced) writes as the operator is told them: which write was refused, from
//! whom, under which generation, and who held the resource at that moment — recorded by
//! the store in the refusing transaction, listed by time, newest first.

use serde::Serialize;

use super::window::{Listing, Window};
use crate::clock::Millis;
use crate::error::Result;
use crate::model::{HistoryPosition, WriteRecord, WriteVerb};
use crate::store::Store;

/// One refused write.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FencedRow {
    pub at: Millis,
    pub resource: String,
    /// Who wrote, and the generation it presented.
    pub writer: String,
    pub writer_generation: u64,
    /// Who held the resource then (`null`: nobody held it, or not recorded — see
    /// `holderGeneration`).
    pub holder: Option<String>,
    /// The resource's generation then; `null` only for writes recorded before stores kept
    /// the holder.
    pub holder_generation: Option<u64>,
    pub verb: WriteVerb,
    /// Why it was refused (`WORK_FENCED`, `already-terminal`, …).
    pub refusal: String,
    pub revision: u64,
    #[serde(skip)]
    pub position: HistoryPosition,
}

impl FencedRow {
    /// The row of a refused write; `None` for an accepted one.
    #[must_use]
    pub fn of(position: HistoryPosition, write: &WriteRecord) -> Option<Self> {
        if write.accepted {
            return None;
        }
        Some(Self {
            at: write.at,
            resource: write.resource_id.clone(),
            writer: write.owner_id.clone(),
            writer_generation: write.generation,
            holder: write.holder.as_ref().and_then(|h| h.owner_id.clone()),
            holder_generation: write.holder.as_ref().map(|h| h.generation),
            verb: write.verb,
            refusal: write.refusal.clone().unwrap_or_default(),
            revision: write.revision,
            position,
        })
    }

    /// The holder for people: its id, `nobody` (released or finished), or `not recorded`.
    #[must_use]
    pub fn holder_label(&self) -> String {
        match (&self.holder, self.holder_generation) {
            (Some(h), _) => h.clone(),
            (None, Some(_)) => "nobody".into(),
            (None, None) => "not recorded".into(),
        }
    }

    /// The holder's generation for people, `?` when not recorded.
    #[must_use]
    pub fn holder_generation_label(&self) -> String {
        self.holder_generation
            .map_or_else(|| "?".into(), |g| g.to_string())
    }
}

/// Refused writes in `window` (ending `now`), newest first, from `before` on.
///
/// # Errors
/// A store failure.
pub fn fenced(
    store: &Store,
    window: Window,
    now: Millis,
    before: Option<HistoryPosition>,
    limit: usize,
) -> Result<Listing<FencedRow>> {
    let since = window.since(now);
    let page = store.refused_writes(since, before, limit)?;
    Ok(Listing::of(window, since, &page, FencedRow::of))
}
