//! What `compatible` means, defined once for every view.
//!
//! A work item or workflow instance is **compatible** when at least one *running*
//! authority (live or silent, see [`crate::rules::liveness`]) runs under the item's
//! compatibility-key digest, i.e. someone could claim it now. A gone authority's claims are
//! reclaimable and it can no longer be counted on; a stopped one left. An item that is not
//! compatible is shown as **incompatible**: it waits for a compatible build and is never
//! failed for it.

use crate::clock::Millis;
use crate::error::Result;
use crate::model::PageRequest;
use crate::model::work::WorkFilter;
use crate::ops::attention::{Fleet, FleetView};
use crate::ops::filter::Filter;
use crate::ops::runnable::Standing;
use crate::rules::liveness::{Liveness, liveness};
use crate::store::Store;

/// Registrations read per page, and pages at most: the registry is small, and this bounds
/// the read even for a store full of stale registrations.
const PAGE: usize = 500;
const MAX_PAGES: usize = 20;

/// The compat digests (and handlers) some live authority runs, read once per command.
#[derive(Debug, Clone, Default)]
pub struct LiveBuilds {
    fleet: FleetView,
    /// How many authorities are live (heartbeating on time).
    pub live: usize,
    /// How many are silent (missed heartbeats, not yet gone): they still count as running.
    pub silent: usize,
    /// How many registrations were read.
    pub registered: usize,
    /// The running authorities' registrations.
    running: Vec<crate::model::Authority>,
    definitions: Vec<crate::model::WorkflowDefinitionRow>,
}

impl LiveBuilds {
    /// Reads the authority registry (paged, bounded) and keeps the running ones' digests.
    ///
    /// # Errors
    /// A store failure.
    pub fn load(store: &Store, now: Millis) -> Result<Self> {
        let mut builds = Self::default();
        let mut page = PageRequest::first(PAGE);
        let mut all = Vec::new();
        for _ in 0..MAX_PAGES {
            let rows = store.list_authorities(&page)?;
            for authority in rows.rows {
                let state = liveness(&authority, now);
                builds.live += usize::from(state == Liveness::Live);
                builds.silent += usize::from(state == Liveness::Silent);
                all.push(authority);
            }
            match rows.next {
                Some(next) => page = PageRequest::after(next, PAGE),
                None => break,
            }
        }
        builds.registered = all.len();
        builds.definitions = store.deployed_definitions()?;
        builds.fleet = FleetView::of(&all, now, &builds.definitions);
        builds.running = all
            .into_iter()
            .filter(|a| liveness(a, now).is_running())
            .collect();
        Ok(builds)
    }

    /// Whether a running authority runs under `compat`.
    #[must_use]
    pub fn compatible(&self, compat: &str) -> bool {
        self.fleet.compatible(compat)
    }

    /// How an item of `handler` under `compat` stands (see [`crate::ops::runnable`]).
    #[must_use]
    pub fn standing(&self, compat: &str, handler: &str) -> Standing {
        self.fleet.standing(compat, handler)
    }

    /// The builds of the running authorities against the unfinished work of `store`
    /// ([`crate::ops::builds`]).
    ///
    /// # Errors
    /// A store failure.
    pub fn matrix(&self, store: &Store) -> Result<crate::ops::builds::Matrix> {
        let running: Vec<&crate::model::Authority> = self.running.iter().collect();
        let counts = store.overview()?.work;
        crate::ops::builds::matrix(&running, &self.definitions, &counts, |compat| {
            let filter = WorkFilter {
                compats: vec![compat.to_owned()],
                ..WorkFilter::default()
            };
            let sample = store.list_work(&filter, &PageRequest::first(1))?;
            Ok(sample.rows.first().map(|item| item.handler.clone()))
        })
    }

    /// The fleet as triage judges it ([`crate::ops::attention`]).
    #[must_use]
    pub fn fleet(&self) -> &FleetView {
        &self.fleet
    }

    /// The store's [`WorkFilter`] for `filter` ([`Filter::work_filter`]), `compat:` terms
    /// judged against the running builds and the digests the store holds — read from its
    /// counters, never a scan. `None` when it can match nothing.
    ///
    /// # Errors
    /// A store failure.
    pub fn work_filter(&self, store: &Store, filter: &Filter) -> Result<Option<WorkFilter>> {
        let present: Vec<String> = if filter.compat.is_some() {
            let mut d: Vec<String> = store
                .overview()?
                .work
                .into_iter()
                .map(|c| c.compat)
                .collect();
            d.sort();
            d.dedup();
            d
        } else {
            Vec::new()
        };
        Ok(filter.work_filter(&present, |d| self.compatible(d)))
    }

    /// The running authorities' claim keys.
    pub fn digests(&self) -> impl Iterator<Item = &String> {
        self.fleet.digests()
    }

    /// The versions of `handler` the running authorities declare, sorted.
    #[must_use]
    pub fn versions(&self, handler: &str) -> Vec<crate::model::HandlerVersion> {
        self.fleet
            .versions(handler)
            .map(|v| v.iter().cloned().collect())
            .unwrap_or_default()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::clock::{Clock, ManualClock};
    use crate::ids::SeededIds;
    use crate::model::Authority;
    use crate::store::memory::MemoryBackend;

    /// An authority that runs one handler, named `handler`, at the built-in version.
    fn authority(id: &str, handler: &str, heartbeat_at: Millis, lease_ms: Millis) -> Authority {
        Authority {
            instance_id: id.into(),
            compat: "label".into(),
            build: "v1".into(),
            config: format!(
                r#"{{"leaseDurationMs":{lease_ms},"handlers":{{"{handler}":"1.0.0"}}}}"#
            ),
            started_at: 0,
            heartbeat_at,
            stopped_at: None,
            host: "h".into(),
            pid: 1,
            published: crate::model::Published::default(),
        }
    }

    fn key(handler: &str) -> String {
        crate::model::handler_key(handler, &crate::model::HandlerVersion::demo())
    }

    #[test]
    fn only_running_authorities_make_items_compatible() {
        let clock = ManualClock::new(100_000);
        let store = Store::new(
            Arc::new(MemoryBackend::new()),
            Arc::new(clock.clone()),
            Arc::new(SeededIds::new(1)),
        );
        store
            .register_authority(&authority("a-1", "live", 95_000, 30_000))
            .unwrap();
        store
            .register_authority(&authority("a-2", "stale", 60_000, 30_000))
            .unwrap();
        store
            .register_authority(&authority("a-3", "short", 90_000, 5_000))
            .unwrap();
        let mut stopped = authority("a-4", "stopped", 99_000, 30_000);
        stopped.stopped_at = Some(99_500);
        store.register_authority(&stopped).unwrap();

        let builds = LiveBuilds::load(&store, clock.now()).unwrap();
        assert!(builds.compatible(&key("live")));
        assert!(
            !builds.compatible(&key("stale")),
            "silent for longer than the 30 s default window"
        );
        assert!(
            !builds.compatible(&key("short")),
            "its own 5 s window has passed"
        );
        assert!(!builds.compatible(&key("stopped")));
        assert_eq!(builds.versions("live").len(), 1);
        assert_eq!((builds.live, builds.silent, builds.registered), (1, 0, 4));
    }
}
