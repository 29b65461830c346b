//! Refused (fenced) writes as the operator is told them: which write was refused, from
//! whom, under which generation, and who held the resource at that moment — recorded by
//! the store in the refusing transaction, listed by time, newest first. A write refused
//! because its item had ended names who ended it, from the item's own row.

use serde::Serialize;

use super::window::{Listing, Window};
use crate::clock::Millis;
use crate::error::Result;
use crate::model::{HistoryPosition, WriteVerb};
use crate::store::{RefusedWrite, Store};

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
    /// For an `already-terminal` refusal, the owner whose own outcome had ended the item
    /// (`null` when the item has moved on since, or a person or a lapse ended it).
    pub finished_by: Option<String>,
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
    pub fn of(position: HistoryPosition, refused: &RefusedWrite) -> Option<Self> {
        let write = &refused.write;
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
            finished_by: refused.finished_by.clone(),
            verb: write.verb,
            refusal: write.refusal.clone().unwrap_or_default(),
            revision: write.revision,
            position,
        })
    }

    /// The holder for people: its id, `done by ID` (nobody held it: that owner had
    /// finished the item), `nobody` (released, or ended by a person or a lapse), or
    /// `not recorded`.
    #[must_use]
    pub fn holder_label(&self) -> String {
        match (&self.holder, self.holder_generation, &self.finished_by) {
            (Some(h), _, _) => h.clone(),
            (None, Some(_), Some(f)) => format!("done by {f}"),
            (None, Some(_), None) => "nobody".into(),
            (None, None, _) => "not recorded".into(),
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
