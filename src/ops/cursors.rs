//! A subscription cursor as operators see it — who holds it, under which generation, where
//! it is, how far behind its events and how often it changes hands — defined once here and
//! stated by both `inspect cursors` and the dashboard's cursors view.
//!
//! A cursor's ownership is the claim on its work item (`cursor:<subscriptionId>`). The
//! authority holding it keeps and renews that claim while it is idle, so the generation
//! moves only when the ownership does, and the claim rate is near zero on a healthy store.

use serde::Serialize;

use crate::clock::Millis;
use crate::error::Result;
use crate::model::{Page, PageRequest, Subscription, WorkItem, WorkState};
use crate::store::Store;

/// The window over which [`CursorStatus::claims_per_sec`] counts claims.
pub const CLAIM_RATE_WINDOW_MS: Millis = 60_000;
/// At most this many recent claims are read per cursor; a rate at this cap means "at least".
pub const CLAIM_RATE_CAP: usize = 120;

/// One subscription cursor.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CursorStatus {
    pub subscription_id: String,
    pub event_type: String,
    /// The authority whose claim on the cursor item stands (it may have lapsed: see
    /// `leaseExpiresAt`); none while nobody holds it.
    pub owner_id: Option<String>,
    /// The generation of the cursor item's claim: it moves only when ownership moves.
    pub generation: u64,
    /// The last journal seq delivered.
    pub position: u64,
    /// The newest journal seq of this subscription's event type.
    pub high_water: u64,
    /// `highWater − position`, 0 once the cursor has caught up.
    pub lag: u64,
    /// Claims of the cursor item per second over the last [`CLAIM_RATE_WINDOW_MS`].
    pub claims_per_sec: f64,
    /// The cursor item's state (`claimed`, `pending`, `retry`, …), when it exists.
    pub state: Option<&'static str>,
    /// When the holder's claim lapses unless renewed.
    pub lease_expires_at: Option<Millis>,
    /// When the position last moved, and by whom.
    pub updated_at: Millis,
    pub updated_by: Option<String>,
    /// The cursor item's compatibility digest (who may claim it).
    #[serde(skip)]
    pub compat: Option<String>,
}

impl CursorStatus {
    /// The status of `sub`, given its cursor item, its event type's journal high-water and
    /// the cursor item's recent grants (newest first).
    #[must_use]
    pub fn new(
        sub: &Subscription,
        item: Option<&WorkItem>,
        high_water: i64,
        recent_claims: &[Millis],
        now: Millis,
    ) -> Self {
        let high_water = u64::try_from(high_water).unwrap_or(0);
        let claimed = item.filter(|w| w.state == WorkState::Claimed);
        Self {
            subscription_id: sub.subscription_id.clone(),
            event_type: sub.event_type.clone(),
            owner_id: claimed.and_then(|w| w.owner_id.clone()),
            generation: item.map_or(sub.generation, |w| w.generation),
            position: sub.sequence,
            high_water,
            lag: high_water.saturating_sub(sub.sequence),
            claims_per_sec: claim_rate(recent_claims, now),
            state: item.map(|w| w.state.as_str()),
            lease_expires_at: claimed.and_then(|w| w.lease_expires_at),
            updated_at: sub.updated_at,
            updated_by: sub.updated_by.clone(),
            compat: item.map(|w| w.compat.clone()),
        }
    }
}

/// Claims per second over the window ending at `now`, from claim instants.
#[must_use]
pub fn claim_rate(claims: &[Millis], now: Millis) -> f64 {
    let recent = claims
        .iter()
        .filter(|at| **at > now - CLAIM_RATE_WINDOW_MS && **at <= now)
        .count();
    // Small counts over a fixed window: exact in f64.
    #[allow(clippy::cast_precision_loss)]
    let rate = recent as f64 * 1_000.0 / CLAIM_RATE_WINDOW_MS as f64;
    rate
}

/// A claim rate as both the table and the dashboard print it.
#[must_use]
pub fn rate_text(per_sec: f64) -> String {
    format!("{per_sec:.2}")
}

/// One page of cursors, each with its item, high-water and recent claims: a page read, then
/// three index seeks per row.
///
/// # Errors
/// A store failure.
pub fn page(store: &Store, request: &PageRequest, now: Millis) -> Result<Page<CursorStatus>> {
    let Page { rows, next } = store.list_subscriptions(request)?;
    let rows = rows
        .iter()
        .map(|sub| status(store, sub, now))
        .collect::<Result<Vec<_>>>()?;
    Ok(Page { rows, next })
}

/// The status of one subscription, read now.
///
/// # Errors
/// A store failure.
pub fn status(store: &Store, sub: &Subscription, now: Millis) -> Result<CursorStatus> {
    let resource = Subscription::work_id(&sub.subscription_id);
    let (item, high_water, claims) = store.read(|tx| {
        Ok((
            tx.work(&resource)?,
            tx.journal_type_high_water(&sub.event_type)?,
            tx.latest_grants(&resource, CLAIM_RATE_CAP)?,
        ))
    })?;
    let instants: Vec<Millis> = claims.iter().map(|g| g.at).collect();
    Ok(CursorStatus::new(
        sub,
        item.as_ref(),
        high_water,
        &instants,
        now,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sub(sequence: u64) -> Subscription {
        Subscription {
            subscription_id: "orders".into(),
            event_type: "order-placed".into(),
            sequence,
            generation: 1,
            updated_at: 0,
            updated_by: None,
        }
    }

    #[test]
    fn lag_is_zero_once_caught_up_and_never_negative() {
        assert_eq!(CursorStatus::new(&sub(7), None, 10, &[], 0).lag, 3);
        assert_eq!(CursorStatus::new(&sub(10), None, 10, &[], 0).lag, 0);
        // The type's newest events were trimmed from the journal.
        assert_eq!(CursorStatus::new(&sub(10), None, 0, &[], 0).lag, 0);
    }

    #[test]
    fn the_claim_rate_counts_the_window_only() {
        let now = 1_000_000;
        let claims = [now, now - 1_000, now - CLAIM_RATE_WINDOW_MS, now + 5];
        assert!((claim_rate(&claims, now) - 2.0 / 60.0).abs() < 1e-9);
        assert!(claim_rate(&[], now).abs() < f64::EPSILON);
    }
}
