//! Several attached stores: the one on screen lives in the app's own fields; every other
//! keeps what it had — its last snapshot, table pages, selection, replay cursor, samples —
//! parked here and refreshed by its own reader, so `:ctx NAME` swaps it in at once and
//! shows its last snapshot while the new query is read. Each store's staleness is judged
//! the same way: silent for too long, or failing, it is stale by the age of its last good
//! read, and its last snapshot stays on screen.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use super::{App, Role, Sample, Snapshot, StoreError, TableUi, TreeUi, ViewId};
use crate::clock::Millis;
use crate::tui::app::ReplayUi;
use crate::tui::snapshot::{Published, Query};
use crate::tui::stores::find;

/// What one store holds of the dashboard while another is on screen.
#[derive(Debug, Clone, Default)]
pub(super) struct Parked {
    snapshot: Option<Arc<Snapshot>>,
    last_contact: Option<Millis>,
    last_good: Option<Millis>,
    error: Option<StoreError>,
    tables: HashMap<ViewId, TableUi>,
    instance: Option<String>,
    resource: Option<String>,
    flash: HashMap<String, Millis>,
    versions: HashMap<String, String>,
    version_scope: Option<Query>,
    samples: VecDeque<Sample>,
    tree: TreeUi,
    replay: Option<ReplayUi>,
}

/// One attached store and where its data is.
#[derive(Debug, Clone)]
pub(super) struct Slot {
    pub(super) name: String,
    pub(super) given: String,
    /// Empty for the store on screen (its data is in the app's fields).
    parked: Parked,
}

/// How the header shows one attached store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreBadge {
    pub name: String,
    /// The store on screen.
    pub current: bool,
    /// How old its last good read is, when it is stale.
    pub stale_for: Option<Millis>,
}

/// Whether a store is stale, and by how much: silent past `limit`, or failing, it is as
/// old as its last good read.
fn staleness(
    wall: Millis,
    limit: Millis,
    last_contact: Option<Millis>,
    last_good: Option<Millis>,
    failing: bool,
) -> Option<Millis> {
    let silent = wall - last_contact? > limit;
    (silent || failing).then(|| wall - last_good.unwrap_or(0))
}

impl App {
    /// Attaches several stores by (short name, argument as given), the first on screen.
    /// With one store (or none) the dashboard shows no store badges.
    #[must_use]
    pub fn with_stores(mut self, stores: Vec<(String, String)>) -> Self {
        self.stores = stores
            .into_iter()
            .map(|(name, given)| Slot {
                name,
                given,
                parked: Parked::default(),
            })
            .collect();
        self.store = 0;
        self.query = self.build_query(self.query.seq);
        self
    }

    /// The index of the store on screen (0 with one store).
    #[must_use]
    pub fn store_index(&self) -> usize {
        self.store
    }

    /// The attached stores' names, in order (empty with one store).
    #[must_use]
    pub fn store_names(&self) -> Vec<String> {
        self.stores.iter().map(|s| s.name.clone()).collect()
    }

    /// How long reads may be silent before a store is stale.
    pub(super) fn stale_limit(&self) -> Millis {
        i64::try_from(self.options.refresh_ms.saturating_mul(4))
            .unwrap_or(i64::MAX)
            .max(2_000)
    }

    /// The on-screen store's staleness (never while paused).
    pub(super) fn current_staleness(&self) -> Option<Millis> {
        if self.paused {
            return None;
        }
        staleness(
            self.wall,
            self.stale_limit(),
            self.last_contact,
            self.last_good,
            self.error.is_some(),
        )
    }

    /// Every attached store as the header shows it (empty with one store).
    #[must_use]
    pub fn store_badges(&self) -> Vec<StoreBadge> {
        if self.stores.len() < 2 {
            return Vec::new();
        }
        self.stores
            .iter()
            .enumerate()
            .map(|(i, slot)| {
                let current = i == self.store;
                let stale_for = if current {
                    self.current_staleness()
                } else {
                    let p = &slot.parked;
                    staleness(
                        self.wall,
                        self.stale_limit(),
                        p.last_contact,
                        p.last_good,
                        p.error.is_some(),
                    )
                };
                StoreBadge {
                    name: slot.name.clone(),
                    current,
                    stale_for,
                }
            })
            .collect()
    }

    /// A read of a store not on screen: kept for when it is switched to.
    pub(super) fn on_background(&mut self, store: usize, read: Published) {
        let wall = self.wall;
        let Some(p) = self
            .stores
            .get_mut(store)
            .filter(|_| store != self.store)
            .map(|s| &mut s.parked)
        else {
            return;
        };
        match read {
            Published::Nothing => return,
            Published::Fresh => {}
            Published::Snapshot(snapshot) => {
                push_sample(&mut p.samples, wall, &snapshot);
                p.snapshot = Some(snapshot);
            }
            Published::Error {
                message,
                retry_in_ms,
                failures,
            } => {
                p.last_contact = Some(wall);
                p.error = Some(StoreError {
                    message,
                    retry_in_ms,
                    failures,
                });
                return;
            }
        }
        p.last_contact = Some(wall);
        p.last_good = Some(wall);
        p.error = None;
    }

    /// `:ctx NAME` switches to a store; `:ctx` alone lists them with their state.
    pub(super) fn ctx_command(&mut self, rest: &[&str]) {
        if self.stores.len() < 2 {
            self.say(
                "one store is attached (leasehold attach A B … attaches several)",
                Role::Muted,
            );
            return;
        }
        let Some(word) = rest.first() else {
            let listed: Vec<String> = self
                .store_badges()
                .iter()
                .map(|b| match (b.current, b.stale_for) {
                    (true, _) => format!("{} (on screen)", b.name),
                    (false, None) => format!("{} live", b.name),
                    (false, Some(ms)) => format!("{} stale {}s", b.name, ms / 1000),
                })
                .collect();
            self.say(format!("stores: {}", listed.join(", ")), Role::Accent);
            return;
        };
        let pairs: Vec<(String, String)> = self
            .stores
            .iter()
            .map(|s| (s.name.clone(), s.given.clone()))
            .collect();
        match find(&pairs, word) {
            Some(i) => {
                self.switch_store(i);
                let name = self
                    .stores
                    .get(i)
                    .map(|s| s.name.clone())
                    .unwrap_or_default();
                self.say(format!("store: {name}"), Role::Accent);
            }
            None => self.say(
                format!(
                    "no store named {} (:ctx lists them)",
                    crate::tui::text::clean(word, 40)
                ),
                Role::Error,
            ),
        }
    }

    /// Puts the on-screen store's state away and brings store `i`'s in.
    pub(super) fn switch_store(&mut self, i: usize) {
        if i == self.store || i >= self.stores.len() {
            return;
        }
        let current = self.store;
        self.exchange(current);
        self.exchange(i);
        self.store = i;
        self.rebuild();
    }

    /// Swaps the app's per-store fields with slot `i`'s parked ones.
    fn exchange(&mut self, i: usize) {
        let Some(slot) = self.stores.get_mut(i) else {
            return;
        };
        let p = &mut slot.parked;
        std::mem::swap(&mut self.snapshot, &mut p.snapshot);
        std::mem::swap(&mut self.last_contact, &mut p.last_contact);
        std::mem::swap(&mut self.last_good, &mut p.last_good);
        std::mem::swap(&mut self.error, &mut p.error);
        std::mem::swap(&mut self.tables, &mut p.tables);
        std::mem::swap(&mut self.instance, &mut p.instance);
        std::mem::swap(&mut self.resource, &mut p.resource);
        std::mem::swap(&mut self.flash, &mut p.flash);
        std::mem::swap(&mut self.versions, &mut p.versions);
        std::mem::swap(&mut self.version_scope, &mut p.version_scope);
        std::mem::swap(&mut self.samples, &mut p.samples);
        std::mem::swap(&mut self.tree, &mut p.tree);
        std::mem::swap(&mut self.replay, &mut p.replay);
    }
}

/// Adds a snapshot's counters to a store's sparkline samples (one per dashboard instant,
/// at most [`super::SAMPLES`]).
pub(super) fn push_sample(samples: &mut VecDeque<Sample>, wall: Millis, s: &Snapshot) {
    let sample = Sample {
        wall,
        claims: s.overview.claims,
        refused: s.overview.writes_refused,
        accepted: s.overview.writes_accepted,
    };
    if samples.back().is_some_and(|last| last.wall == sample.wall) {
        samples.pop_back();
    }
    samples.push_back(sample);
    while samples.len() > super::SAMPLES {
        samples.pop_front();
    }
}
