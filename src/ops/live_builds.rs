//! The one reader of which builds the fleet runs, for every operator's reader: the
//! dashboard (its facts, its compatibility marks, its cancel), `inspect`, `cancel` and the
//! commands that stamp work with the fleet's handler versions. Each reads the registry the
//! same way, bounded at `REGISTRATIONS_READ` (10,000) rows ([`Store::registrations`]), so no two
//! of them can judge the fleet from different rows.
//!
//! What `compatible` means, defined once for every view: a work item or workflow instance
//! is **compatible** when at least one *running* authority (live or silent, see
//! [`crate::rules::liveness`]) runs under the item's compatibility-key digest, i.e. someone
//! could claim it now. A gone authority's claims are reclaimable and it can no longer be
//! counted on; a stopped one left. An item that is not compatible is shown as
//! **incompatible**: it waits for a compatible build and is never failed for it.

use crate::clock::Millis;
use crate::error::Result;
use crate::model::work::{WorkCount, WorkFilter};
use crate::model::{Authority, PageRequest, WorkflowDefinitionRow};
use crate::ops::attention::{Fleet, FleetView};
use crate::ops::filter::Filter;
use crate::rules::liveness::{Liveness, liveness};
use crate::store::Store;
use crate::workflow::runnable::{RunnableMemo, Standing};

/// The registry as read at one instant: every registration, and what the running ones
/// can run.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LiveBuilds {
    fleet: FleetView,
    /// How many authorities are live (heartbeating on time).
    pub live: usize,
    /// How many are silent (missed heartbeats, not yet gone): they still count as running.
    pub silent: usize,
    /// Every registration read, by id: running, gone or stopped alike.
    registrations: Vec<Authority>,
    /// When they were judged.
    at: Millis,
    definitions: Vec<WorkflowDefinitionRow>,
}

impl LiveBuilds {
    /// Reads the authority registry and the deployed definitions, and judges each
    /// registration at `now`.
    ///
    /// # Errors
    /// A store failure.
    pub fn load(store: &Store, now: Millis) -> Result<Self> {
        Self::load_cached(store, now, &mut RunnableMemo::default())
    }

    /// [`Self::load`] for a reader that asks at every refresh (the dashboard): what the
    /// running authorities can run is derived again only when their registrations or the
    /// deployed definitions changed since `memo` last saw them.
    ///
    /// # Errors
    /// A store failure.
    pub fn load_cached(store: &Store, now: Millis, memo: &mut RunnableMemo) -> Result<Self> {
        let registrations = store.registrations()?;
        let definitions = store.deployed_definitions()?;
        let states: Vec<Liveness> = registrations.iter().map(|a| liveness(a, now)).collect();
        let running = registrations
            .iter()
            .zip(&states)
            .filter(|(_, state)| state.is_running())
            .map(|(a, _)| a);
        let runnable = memo.of(running, &definitions).clone();
        Ok(Self {
            fleet: FleetView::of(&registrations, now, runnable),
            live: states.iter().filter(|s| **s == Liveness::Live).count(),
            silent: states.iter().filter(|s| **s == Liveness::Silent).count(),
            registrations,
            at: now,
            definitions,
        })
    }

    /// Every registration read, by id.
    #[must_use]
    pub fn registrations(&self) -> &[Authority] {
        &self.registrations
    }

    /// How many registrations are in `state`, judged when they were read.
    #[must_use]
    pub fn in_state(&self, state: Liveness) -> usize {
        self.registrations
            .iter()
            .filter(|a| liveness(a, self.at) == state)
            .count()
    }

    /// How many registrations were read.
    #[must_use]
    pub fn registered(&self) -> usize {
        self.registrations.len()
    }

    /// The running authorities' registrations (live or silent), by id.
    pub fn running(&self) -> impl Iterator<Item = &Authority> {
        self.registrations
            .iter()
            .filter(|a| liveness(a, self.at).is_running())
    }

    /// The deployed workflow definitions the keys were derived from.
    #[must_use]
    pub fn definitions(&self) -> &[WorkflowDefinitionRow] {
        &self.definitions
    }

    /// Whether any authority is running.
    #[must_use]
    pub fn any_running(&self) -> bool {
        self.fleet.any_running()
    }

    /// Whether a running authority runs under `compat`.
    #[must_use]
    pub fn compatible(&self, compat: &str) -> bool {
        self.fleet.compatible(compat)
    }

    /// How an item of `handler` under `compat` stands (see [`crate::workflow::runnable`]).
    #[must_use]
    pub fn standing(&self, compat: &str, handler: &str) -> Standing {
        self.fleet.standing(compat, handler)
    }

    /// The builds of the running authorities against the unfinished work `counts` holds
    /// ([`crate::ops::builds`]); a key no running build registers is named by one of its
    /// items in `store`.
    ///
    /// # Errors
    /// A store failure.
    pub fn matrix(
        &self,
        store: &Store,
        counts: &[WorkCount],
    ) -> Result<crate::ops::builds::Matrix> {
        let running: Vec<&Authority> = self.running().collect();
        crate::ops::builds::matrix(&running, &self.definitions, counts, |compat| {
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
    /// and the stranded groups judged against the running builds and the digests the store holds — read from its
    /// counters, never a scan. `None` when it can match nothing.
    ///
    /// # Errors
    /// A store failure.
    pub fn work_filter(&self, store: &Store, filter: &Filter) -> Result<Option<WorkFilter>> {
        let by_digest = filter.compat.is_some() || filter.groups.iter().any(|g| g.needs_fleet());
        let present: Vec<String> = if by_digest {
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
        Ok(filter.work_filter(&present, &self.fleet))
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
    use crate::store::memory::MemoryBackend;

    /// An authority that runs one handler, named `handler`, at the built-in version.
    fn authority(id: &str, handler: &str, heartbeat_at: Millis, lease_ms: Millis) -> Authority {
        let config =
            serde_json::json!({"leaseDurationMs": lease_ms, "handlers": {handler: "1.0.0"}});
        Authority::planted(id, &config.to_string(), heartbeat_at)
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
        assert_eq!((builds.live, builds.silent, builds.registered()), (1, 0, 4));
    }
}
