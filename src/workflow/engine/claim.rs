//! An authority takes the lease of runnable instances whose digest is one of its keys,
//! granted as every lease is ([`crate::Store`]'s `grant_lease_in`): its duration clamped,
//! its owner's live leases capped.

use super::transition::decode_state;
use super::{Claimed, Engine, instance_resource};
use crate::clock::Millis;
use crate::error::{Error, Result};
use crate::model::{Grant, GrantKind, InstanceRow, Takeover};
use crate::store::{Logged, Tx};

impl Engine {
    /// Takes the lease of up to `limit` runnable instances this engine may run, for
    /// `lease_ms` clamped like any lease's; none once the owner holds its cap of live leases.
    ///
    /// # Errors
    /// A store failure.
    pub fn claim(&self, limit: usize, lease_ms: Millis) -> Result<Vec<Claimed>> {
        Ok(self
            .claim_noting_takeovers(limit, lease_ms)?
            .into_iter()
            .map(|(claimed, _)| claimed)
            .collect())
    }

    /// [`Self::claim`], with when the lease each claim took over had expired, for the
    /// claims that took over an unreleased, expired lease (a failover).
    ///
    /// # Errors
    /// A store failure.
    pub fn claim_noting_takeovers(
        &self,
        limit: usize,
        lease_ms: Millis,
    ) -> Result<Vec<(Claimed, Option<Millis>)>> {
        self.store
            .write(|tx, now| self.claim_in(tx, now, limit, lease_ms))
    }

    /// [`Self::claim_noting_takeovers`] inside a transaction the caller may write more in
    /// (an authority's poll claims instances and work items in one).
    ///
    /// # Errors
    /// A store failure (then the caller's transaction commits nothing).
    pub(crate) fn claim_in(
        &self,
        tx: &mut dyn Tx,
        now: Millis,
        limit: usize,
        lease_ms: Millis,
    ) -> Result<Vec<(Claimed, Option<Millis>)>> {
        let keys = self.keys();
        let mut runnable = Vec::new();
        for compat in keys.iter() {
            runnable.extend(tx.runnable_instances(compat, now, limit)?);
        }
        runnable.sort_by(|a, b| {
            (a.next_eligible_at, &a.instance_id).cmp(&(b.next_eligible_at, &b.instance_id))
        });
        runnable.truncate(limit);
        // Whole milliseconds; a request too large for f64 to hold exactly is clamped anyway.
        #[allow(clippy::cast_precision_loss)]
        let duration = lease_ms as f64;
        let mut claimed = Vec::new();
        for row in runnable {
            let res = instance_resource(&row.instance_id);
            let current = tx.lease(&res)?;
            // Granted as every lease is: clamped, and charged against the owner's cap.
            let lease = match self.store.grant_lease_in(
                tx,
                now,
                current.as_ref(),
                &res,
                &self.owner,
                duration,
            )? {
                Logged::Done(lease) => lease,
                // At the cap, no further instance can be granted either.
                Logged::Refused(Error::LeaseCap { .. }) => break,
                Logged::Refused(_) => continue,
            };
            let revision = tx.commit_revision()?;
            tx.put_lease(&lease)?;
            // Parked until the lease expires: other authorities skip it meanwhile, and
            // if this owner dies it becomes runnable again exactly when reclaimable.
            tx.update_instance(&InstanceRow {
                next_eligible_at: Some(lease.expires_at),
                ..row.clone()
            })?;
            tx.add_grant(Grant {
                revision,
                resource_id: res,
                generation: lease.generation,
                owner_id: self.owner.clone(),
                how: GrantKind::Claim,
                owner_compat: Some(row.compat.clone()),
                item_compat: Some(row.compat.clone()),
                at: now,
                took_over: Takeover::of_lease(current.as_ref(), &self.owner, now),
            })?;
            let took_over = current
                .filter(|l| l.released_at.is_none())
                .map(|l| l.expires_at);
            let (_, state) = decode_state(&row)?;
            claimed.push((Claimed { row, state, lease }, took_over));
        }
        Ok(claimed)
    }
}
