//! Whether a tour step's promised effect has happened, judged from the store's own
//! records (failovers, refused writes, registrations, claims) and the cluster's view of
//! its authorities — never from the tour's own bookkeeping.

use std::collections::BTreeMap;

use super::{Step, Tour};
use crate::clock::{Millis, format_duration};
use crate::cluster::control::{ClusterControl, DemoAuthority, DemoState};
use crate::error::Result;
use crate::model::work::WorkFilter;
use crate::model::{HistoryPosition, PageRequest, WorkState, WriteRecord, WriteVerb};
use crate::store::{Incidents, Store};

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
            Step::Pause | Step::Kill => every(|before| store.failovers(since, before, PAGE))?
                .into_iter()
                .find(|g| g.took_over.as_ref().is_some_and(|t| t.from_owner == who))
                .map(|g| {
                    let from = g.took_over.as_ref().map_or(0, |t| t.from_generation);
                    format!(
                        "{} reclaimed {} from {who}: generation {from} → {}",
                        g.owner_id, g.resource_id, g.generation
                    )
                }),
            Step::Resume => {
                let refused: Vec<WriteRecord> =
                    every(|before| store.refused_writes(since, before, PAGE))?
                        .into_iter()
                        .map(|r| r.write)
                        .filter(|w| w.owner_id == who)
                        .collect();
                late_write(who, &refused)
            }
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

/// How many incident records one read asks for.
const PAGE: usize = 500;

/// Every record of an incident list (failovers, refused writes), newest first, read a page
/// at a time: however busy the window, the record a step waits for is never past the end of
/// a page.
fn every<T>(read: impl Fn(Option<HistoryPosition>) -> Result<Incidents<T>>) -> Result<Vec<T>> {
    let mut all = Vec::new();
    let mut before = None;
    loop {
        let page = read(before)?;
        all.extend(page.rows.into_iter().map(|(_, r)| r));
        match page.next {
            Some(next) => before = Some(next),
            None => return Ok(all),
        }
    }
}

/// What the resumed authority's refused writes show, told by the one that tells the story
/// best: a late result refused `WORK_FENCED`, else a fenced renewal, else whatever the store
/// refused (a result for an item its new owner already ended is refused `already-terminal`).
/// Every refused write of the resumed authority counts, as the fenced-writes list shows them.
fn late_write(who: &str, refused: &[WriteRecord]) -> Option<String> {
    let rank = |w: &WriteRecord| {
        let fenced = w.refusal.as_deref() == Some("WORK_FENCED");
        match (fenced, w.verb == WriteVerb::Renew) {
            (true, false) => 0,
            (true, true) => 1,
            (false, _) => 2,
        }
    };
    let w = refused.iter().min_by_key(|w| (rank(w), w.revision))?;
    let all = match refused.len() {
        1 => String::new(),
        n => format!(" ({n} refused in all)"),
    };
    Some(format!(
        "{who}'s late {} of {} at generation {} was refused {}{all}",
        w.verb,
        w.resource_id,
        w.generation,
        w.refusal.as_deref().unwrap_or("by the store"),
    ))
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
