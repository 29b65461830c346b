//! An authority takes the lease of runnable instances whose digest is one of its keys.

use super::transition::decode_state;
use super::{Claimed, Engine, resource};
use crate::clock::Millis;
use crate::error::Result;
use crate::model::{Grant, GrantKind, InstanceRow, Takeover};
use crate::rules::lease as lease_rules;
use crate::store::Tx;

impl Engine {
    /// Takes the lease of up to `limit` runnable instances this engine may run.
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
        let mut claimed = Vec::new();
        for row in runnable {
            let res = resource(&row.instance_id);
            let current = tx.lease(&res)?;
            let floor = crate::store::epoch::generation_floor(tx)?;
            let Ok(lease) = lease_rules::acquire(
                floor,
                current.as_ref(),
                &res,
                &self.owner,
                self.store.ids().next_id("tok"),
                lease_ms,
                now,
            ) else {
                continue;
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
