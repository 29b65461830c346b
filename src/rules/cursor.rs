//! Subscription cursors: fenced and monotone advancement.

use crate::clock::Millis;
use crate::error::{Error, Result};
use crate::model::{Subscription, WorkItem};
use crate::rules::work::check_claim;

/// Moves the cursor to `sequence` for the owner of the cursor item at `generation`.
///
/// # Errors
/// `Fenced` (the claim moved on; `already-terminal` never applies to a cursor item) or
/// `StaleSequence` (not strictly forward).
pub fn advance(
    sub: &Subscription,
    item: &WorkItem,
    owner: &str,
    generation: u64,
    sequence: u64,
    now: Millis,
) -> Result<Subscription> {
    check_claim(item, owner, generation)?;
    if sequence <= sub.sequence {
        return Err(Error::StaleSequence {
            subscription: sub.subscription_id.clone(),
            presented: sequence,
            current: sub.sequence,
        });
    }
    Ok(Subscription {
        sequence,
        generation,
        updated_at: now,
        updated_by: Some(owner.to_owned()),
        ..sub.clone()
    })
}
