//! Whether a tour step's promised effect has happened, judged from the store's own
//! records (failovers, refused writes, registrations, claims) and the cluster's view of
//! its authorities — never from the tour's own bookkeeping.

use std::collections::BTreeMap;

use super::{Step, Tour};
use crate::clock::{Millis, format_duration};
use crate::cluster::control::{ClusterControl, DemoAuthority, DemoState};
use crate::error::Result;
use crate::model::work::WorkFilter;
use crate::model::{PageRequest, WorkState};
use crate::store::Store;

impl Tour {
    /// The promised effect of the current step, if the store shows it.
    pub(super) fn effect(
        &self,
        cluster: &dyn ClusterControl,
        store: &Store,
        since: Millis,
    ) -> Result<Option<String>> {
        let who = self.subject.as_deref().unwrap_or_default();
        Ok(match self.step() {
            Step::Watch => {
                let claims = claims_by_owner(store)?;
                let running: Vec<DemoAuthority> = cluster
                    .authorities()
                    .into_iter()
                    .filter(|a| a.state == DemoState::Running)
                    .collect();
                running.iter().all(|a| claims.contains_key(&a.id)).then(|| {
                    format!(
                        "{} claims held across {} authorities",
                        claims.values().sum::<usize>(),
                        running.len()
                    )
                })
            }
            Step::Pause | Step::Kill => store
                .failovers(since, None, 500)?
                .rows
                .into_iter()
                .map(|(_, g)| g)
                .find(|g| g.took_over.as_ref().is_some_and(|t| t.from_owner == who))
                .map(|g| {
                    let from = g.took_over.as_ref().map_or(0, |t| t.from_generation);
                    format!(
                        "{} reclaimed {} from {who}: generation {from} → {}",
                        g.owner_id, g.resource_id, g.generation
                    )
                }),
            Step::Resume => store
                .refused_writes(since, None, 500)?
                .rows
                .into_iter()
                .map(|(_, w)| w)
                .find(|w| {
                    w.owner_id == who
                        && w.verb != "renew"
                        && w.refusal.as_deref() == Some("WORK_FENCED")
                })
                .map(|w| {
                    format!(
                        "{who}'s late write to {} at generation {} was refused WORK_FENCED",
                        w.resource_id, w.generation
                    )
                }),
            Step::Restart => cluster
                .authorities()
                .iter()
                .any(|a| a.id == who && a.state == DemoState::Running)
                .then(|| format!("{who} is back as a new incarnation")),
            Step::DeployCompatible | Step::DeployIncompatible => {
                let new: Vec<DemoAuthority> = cluster
                    .authorities()
                    .into_iter()
                    .filter(|a| !self.before.contains(&a.id))
                    .collect();
                let mut fact = None;
                for a in new {
                    let owned = store.list_work(
                        &WorkFilter {
                            owner: Some(a.id.clone()),
                            ..WorkFilter::default()
                        },
                        &PageRequest::first(1),
                    )?;
                    if let Some(w) = owned.rows.first() {
                        fact = Some(format!("{} (build {}) claimed {}", a.id, a.build, w.id));
                    }
                }
                fact
            }
            Step::Skew => store
                .list_authorities(&PageRequest::first(500))?
                .rows
                .into_iter()
                .find(|a| a.instance_id == who && a.heartbeat_at > store.now())
                .map(|a| {
                    format!(
                        "{who}'s heartbeat is stamped {} ahead of the store's clock",
                        format_duration(a.heartbeat_at - store.now())
                    )
                }),
            Step::End => None,
        })
    }
}

/// Claimed work by owner, as the store holds it now.
pub(super) fn claims_by_owner(store: &Store) -> Result<BTreeMap<String, usize>> {
    let claimed = store.list_work(
        &WorkFilter {
            states: vec![WorkState::Claimed],
            ..WorkFilter::default()
        },
        &PageRequest::first(5_000),
    )?;
    let mut by = BTreeMap::new();
    for w in claimed.rows {
        if let Some(owner) = w.owner_id {
            *by.entry(owner).or_insert(0) += 1;
        }
    }
    Ok(by)
}
