//! Store epochs: how a store that went back in time (an older copy restored, a database
//! failed over to a replica that lost commits) is kept from handing out a generation twice.
//!
//! Every store carries two meta rows beside its revision: `store_id`, a random number fixed
//! when the store is created (a copy restored from backup keeps it, a new store under the
//! same name does not), and `store_epoch`, 0 until an operator accepts a rewind
//! (`leasehold store accept-rewind`). Accepting one bumps the epoch and raises every
//! lease's and work item's generation to the epoch's *floor*, `epoch << 32`; leases and
//! items created afterwards start there too. So every generation minted in epoch `e` is
//! above `e << 32`, above every generation of an earlier epoch — whatever the lost part of
//! the history had minted — as long as no resource is granted 2³² times within one epoch.

use super::Tx;
use crate::error::{Error, Result};
use crate::model::WorkItem;

/// The meta row holding the store's identity.
pub const STORE_ID: &str = "store_id";
/// The meta row holding the store's epoch.
pub const STORE_EPOCH: &str = "store_epoch";
/// Generations of epoch `e` start above `e << EPOCH_SHIFT`.
pub const EPOCH_SHIFT: u32 = 32;

/// The lowest generation of `epoch`: every generation minted in it is above this one.
///
/// # Errors
/// `STORE_CORRUPT` for an epoch too large to order generations by.
pub fn floor(epoch: u64) -> Result<u64> {
    epoch
        .checked_mul(1 << EPOCH_SHIFT)
        .filter(|f| i64::try_from(*f).is_ok())
        .ok_or_else(|| Error::Corrupt(format!("store epoch {epoch} is out of range")))
}

/// The store's epoch as this transaction sees it (0 for a store that never had one).
///
/// # Errors
/// `STORE_CORRUPT` for a negative epoch, or a store failure.
pub fn epoch(tx: &mut dyn Tx) -> Result<u64> {
    match tx.meta_value(STORE_EPOCH)? {
        None => Ok(0),
        Some(e) => u64::try_from(e)
            .map_err(|_| Error::Corrupt(format!("the store epoch is negative ({e})"))),
    }
}

/// The current epoch's floor: see [`floor`].
///
/// # Errors
/// As [`epoch`] and [`floor`].
pub fn generation_floor(tx: &mut dyn Tx) -> Result<u64> {
    floor(epoch(tx)?)
}

/// `item` as it is inserted in an epoch whose floor is `floor`: its first claim mints a
/// generation above every earlier epoch's.
#[must_use]
pub fn floored(item: &WorkItem, floor: u64) -> Option<WorkItem> {
    (item.generation < floor).then(|| WorkItem {
        generation: floor,
        ..item.clone()
    })
}

/// Starts the next epoch inside a write transaction: bumps `store_epoch` and raises every
/// existing generation to its floor. Returns the new epoch and how many rows were raised.
///
/// # Errors
/// `STORE_CORRUPT` for an epoch out of range, or a store failure.
pub fn advance(tx: &mut dyn Tx) -> Result<(u64, u64)> {
    let next = epoch(tx)? + 1;
    let floor = floor(next)?;
    tx.commit_revision()?;
    tx.set_meta_value(STORE_EPOCH, i64::try_from(next).unwrap_or(i64::MAX))?;
    let raised = tx.raise_generations(floor)?;
    Ok((next, raised))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floors_order_epochs_and_refuse_overflow() {
        assert_eq!(floor(0).ok(), Some(0));
        assert_eq!(floor(1).ok(), Some(1 << 32));
        assert!(floor(2).ok() > floor(1).ok().map(|f| f + u64::from(u32::MAX)));
        assert_eq!(
            floor(1 << 31).err().map(|e| e.code()),
            Some("STORE_CORRUPT")
        );
    }
}
