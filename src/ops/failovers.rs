//! Failovers as the operator is told them: every grant that took a resource from a holder
//! that had not released it — dead, stopped, slow or live — within a time window, newest
//! first. Read from the facts the store recorded in the granting transaction, so the
//! dashboard and `inspect failovers` list exactly the failovers the grant history holds.

use serde::Serialize;

use super::window::{Listing, Window};
use crate::clock::{Millis, format_duration};
use crate::error::Result;
use crate::model::{Grant, GrantKind, HistoryPosition};
use crate::store::Store;

/// One failover.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FailoverRow {
    /// When the resource was taken.
    pub at: Millis,
    pub resource: String,
    /// The holder that lost it, and the generation it lost.
    pub from: String,
    pub from_generation: u64,
    /// The new holder and the generation it was granted.
    pub to: String,
    pub generation: u64,
    /// How long the lost holder's lease had been over (zero or less: taken while live).
    pub lapsed_ms: Millis,
    /// `claim` (work, workflow instance) or `acquire` (lease).
    pub how: GrantKind,
    pub revision: u64,
    /// Where the row sits in the list (the page key).
    #[serde(skip)]
    pub position: HistoryPosition,
}

impl FailoverRow {
    /// The row of a failover grant; `None` for a grant that was no failover.
    #[must_use]
    pub fn of(position: HistoryPosition, grant: &Grant) -> Option<Self> {
        let took = grant.took_over.as_ref()?;
        Some(Self {
            at: grant.at,
            resource: grant.resource_id.clone(),
            from: took.from_owner.clone(),
            from_generation: took.from_generation,
            to: grant.owner_id.clone(),
            generation: grant.generation,
            lapsed_ms: took.lapsed_ms,
            how: grant.how,
            revision: grant.revision,
            position,
        })
    }

    /// How long the lease had lapsed, for people: `1.5s`, or `live (0.3s left)` for a
    /// take from a holder whose lease had not run out.
    #[must_use]
    pub fn lapsed_label(&self) -> String {
        if self.lapsed_ms < 0 {
            format!("live ({} left)", format_duration(-self.lapsed_ms))
        } else {
            format_duration(self.lapsed_ms)
        }
    }
}

/// Failovers in `window` (ending `now`), newest first, from `before` on, at most `limit`.
///
/// # Errors
/// A store failure.
pub fn failovers(
    store: &Store,
    window: Window,
    now: Millis,
    before: Option<HistoryPosition>,
    limit: usize,
) -> Result<Listing<FailoverRow>> {
    let since = window.since(now);
    let page = store.failovers(since, before, limit)?;
    Ok(Listing::of(window, since, &page, FailoverRow::of))
}
