//! What `compatible` means, defined once for every view.
//!
//! A work item or workflow instance is **compatible** when at least one *live* authority
//! runs under the item's compatibility-key digest, i.e. someone could claim it now. An
//! authority is live when it has not stopped and its last heartbeat is within its lease
//! window ([`crate::model::Authority::state`] is not `gone`): after that, whatever it held
//! is reclaimable and it can no longer be counted on. An item that is not compatible is
//! shown as **incompatible**: it waits for a compatible build and is never failed for it.

use std::collections::BTreeSet;

use crate::clock::Millis;
use crate::error::Result;
use crate::model::{Authority, PageRequest};
use crate::store::Store;

/// The lease window assumed for an authority whose config does not say (SPEC §5 default).
pub const DEFAULT_LEASE_MS: Millis = 30_000;
/// The heartbeat interval assumed for an authority whose config does not say.
pub const DEFAULT_HEARTBEAT_MS: Millis = 10_000;
/// Registrations read per page, and pages at most: the registry is small, and this bounds
/// the read even for a store full of stale registrations.
const PAGE: usize = 500;
const MAX_PAGES: usize = 20;

/// An authority's lease window and heartbeat interval, from its registered config JSON
/// (`leaseDurationMs`, `heartbeatIntervalMs` or else `renewIntervalMs`).
#[must_use]
pub fn windows(authority: &Authority) -> (Millis, Millis) {
    let config: serde_json::Value = serde_json::from_str(&authority.config).unwrap_or_default();
    let get = |key: &str| {
        config
            .get(key)
            .and_then(serde_json::Value::as_i64)
            .filter(|v| *v > 0)
    };
    let lease = get("leaseDurationMs").unwrap_or(DEFAULT_LEASE_MS);
    let heartbeat = get("heartbeatIntervalMs")
        .or_else(|| get("renewIntervalMs"))
        .unwrap_or(DEFAULT_HEARTBEAT_MS);
    (lease, heartbeat)
}

/// `live`, `silent` or `gone` for one authority at `now`.
#[must_use]
pub fn authority_state(authority: &Authority, now: Millis) -> &'static str {
    let (lease, heartbeat) = windows(authority);
    authority.state(now, heartbeat, lease)
}

/// Whether the authority counts for compatibility: heartbeat within its lease window.
#[must_use]
pub fn is_live(authority: &Authority, now: Millis) -> bool {
    authority_state(authority, now) != "gone"
}

/// The compat digests some live authority runs under, read once per command.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LiveBuilds {
    digests: BTreeSet<String>,
    /// How many authorities are live.
    pub live: usize,
    /// How many registrations were read.
    pub registered: usize,
}

impl LiveBuilds {
    /// Reads the authority registry (paged, bounded) and keeps the live ones' digests.
    ///
    /// # Errors
    /// A store failure.
    pub fn load(store: &Store, now: Millis) -> Result<Self> {
        let mut builds = Self::default();
        let mut page = PageRequest::first(PAGE);
        for _ in 0..MAX_PAGES {
            let rows = store.list_authorities(&page)?;
            for authority in &rows.rows {
                builds.registered += 1;
                if is_live(authority, now) {
                    builds.live += 1;
                    builds.digests.insert(authority.compat.clone());
                }
            }
            match rows.next {
                Some(next) => page = PageRequest::after(next, PAGE),
                None => break,
            }
        }
        Ok(builds)
    }

    /// Whether a live authority runs under `compat`.
    #[must_use]
    pub fn compatible(&self, compat: &str) -> bool {
        self.digests.contains(compat)
    }

    /// The live digests.
    pub fn digests(&self) -> impl Iterator<Item = &String> {
        self.digests.iter()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::clock::{Clock, ManualClock};
    use crate::ids::SeededIds;
    use crate::store::memory::MemoryBackend;

    fn authority(id: &str, compat: &str, heartbeat_at: Millis, config: &str) -> Authority {
        Authority {
            instance_id: id.into(),
            compat: compat.into(),
            build: "v1".into(),
            config: config.into(),
            started_at: 0,
            heartbeat_at,
            stopped_at: None,
            host: "h".into(),
            pid: 1,
        }
    }

    #[test]
    fn only_authorities_within_their_lease_window_make_items_compatible() {
        let clock = ManualClock::new(100_000);
        let store = Store::new(
            Arc::new(MemoryBackend::new()),
            Arc::new(clock.clone()),
            Arc::new(SeededIds::new(1)),
        );
        store
            .register_authority(&authority("a-1", "live", 95_000, "{}"))
            .unwrap();
        store
            .register_authority(&authority("a-2", "stale", 60_000, "{}"))
            .unwrap();
        store
            .register_authority(&authority(
                "a-3",
                "short",
                90_000,
                r#"{"leaseDurationMs":5000}"#,
            ))
            .unwrap();
        let mut stopped = authority("a-4", "stopped", 99_000, "{}");
        stopped.stopped_at = Some(99_500);
        store.register_authority(&stopped).unwrap();

        let builds = LiveBuilds::load(&store, clock.now()).unwrap();
        assert!(builds.compatible("live"));
        assert!(
            !builds.compatible("stale"),
            "silent for longer than the 30 s default window"
        );
        assert!(!builds.compatible("short"), "its own 5 s window has passed");
        assert!(!builds.compatible("stopped"));
        assert_eq!((builds.live, builds.registered), (1, 4));
    }
}
