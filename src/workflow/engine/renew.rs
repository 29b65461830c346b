//! An authority renews the lease of an instance it is advancing, and the instance's parked
//! instant moves with the lease: a claim parks an instance until its lease can lapse, so
//! an action that outlives one lease window would otherwise sit at the head of the
//! runnable query while its lease is live, taking places in every other authority's claim
//! (with as many such instances as a claim's limit, those claims return nothing).

use super::{Claimed, Engine, instance_resource};
use crate::clock::Millis;
use crate::error::Result;
use crate::model::{InstanceRow, Lease};

impl Engine {
    /// Extends the lease of `claimed` by `lease_ms` from now and, in the same transaction,
    /// moves the instance's parked instant to the new expiry when it is still parked at the
    /// old one (a wake-up an event fanout wrote meanwhile is kept). Returns the renewed lease.
    ///
    /// # Errors
    /// `WORK_FENCED` when the lease is no longer the caller's; `LEASE_CAP_REACHED` as for
    /// any renewal of a lapsed lease; a store failure.
    pub fn renew(&self, claimed: &Claimed, lease_ms: Millis) -> Result<Lease> {
        let instance_id = &claimed.row.instance_id;
        // Whole milliseconds, far inside f64's exact range.
        #[allow(clippy::cast_precision_loss)]
        let duration = lease_ms as f64;
        self.store.renew_then(
            &instance_resource(instance_id),
            &claimed.lease.token,
            claimed.lease.generation,
            duration,
            |tx, before, after| {
                let Some(row) = tx.instance(instance_id)? else {
                    return Ok(());
                };
                if row.next_eligible_at == Some(before.expires_at) {
                    tx.update_instance(&InstanceRow {
                        next_eligible_at: Some(after.expires_at),
                        ..row
                    })?;
                }
                Ok(())
            },
        )
    }
}
