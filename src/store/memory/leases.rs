//! The memory store's leases: the rows by resource and the (owner, resource) index the
//! owner cap counts through, kept in step by the two methods that write a row.
//!
//! Why the index: every acquire and every workflow instance claim counts its owner's live
//! leases under the store's one lock; read from the rows, that count would cost every
//! lease in the store instead of the owner's own.

use std::collections::{BTreeMap, BTreeSet};

use crate::clock::Millis;
use crate::model::Lease;

#[derive(Default)]
pub(super) struct LeaseTable {
    rows: BTreeMap<String, Lease>,
    /// (owner, resource) of every lease.
    owners: BTreeSet<(String, String)>,
}

impl LeaseTable {
    pub(super) fn get(&self, resource: &str) -> Option<&Lease> {
        self.rows.get(resource)
    }

    /// Every lease by resource.
    pub(super) fn rows(&self) -> &BTreeMap<String, Lease> {
        &self.rows
    }

    /// Stores `lease` under its resource, moving its owner index entry with it; returns
    /// the lease it replaced (see [`LeaseTable::restore`]).
    pub(super) fn put(&mut self, lease: Lease) -> Option<Lease> {
        let key = (lease.owner_id.clone(), lease.resource_id.clone());
        let old = self.rows.insert(lease.resource_id.clone(), lease);
        if let Some(old) = old.as_ref().filter(|old| old.owner_id != key.0) {
            (self.owners).remove(&(old.owner_id.clone(), old.resource_id.clone()));
        }
        self.owners.insert(key);
        old
    }

    /// Puts `old` back under `resource` (or leaves no lease there), its owner index entry
    /// with it: a put undone.
    pub(super) fn restore(&mut self, resource: String, old: Option<Lease>) {
        let current = match old {
            Some(old) => self.rows.insert(resource.clone(), old),
            None => self.rows.remove(&resource),
        };
        if let Some(current) = current {
            self.owners.remove(&(current.owner_id, current.resource_id));
        }
        if let Some(old) = self.rows.get(&resource) {
            self.owners.insert((old.owner_id.clone(), resource));
        }
    }

    /// How many of `owner`'s leases are live at `now`.
    pub(super) fn live_count(&self, owner: &str, now: Millis) -> u64 {
        (self.owners)
            .range((owner.to_owned(), String::new())..)
            .take_while(|(o, _)| o == owner)
            .filter_map(|(_, resource)| self.rows.get(resource))
            .filter(|l| l.is_live(now))
            .count() as u64
    }
}
