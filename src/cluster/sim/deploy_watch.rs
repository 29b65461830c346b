//! The rolling-deploy watch: how much non-terminal work sat *held* (its build run by no
//! running authority) while a deploy was under way, and which items, so the report can
//! say whether they drained; and when only the new build ran, so the report can say
//! whether schedules kept firing under it with nothing stranded. Kept apart because it
//! observes the simulation and never changes it.

use std::collections::BTreeSet;

use super::{Node, NodeState, Sim};
use crate::clock::Millis;
use crate::error::Result;
use crate::model::work::WorkFilter;
use crate::model::{PageRequest, WorkKind, WorkState};

/// What the rolling-deploy watch saw.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[allow(clippy::struct_field_names)] // each field counts "held" items in its own way
pub(in crate::cluster) struct DeployWatch {
    /// Most non-terminal items at once whose build no running authority had.
    pub held_max: u64,
    /// Samples that saw held items.
    pub held_samples: u64,
    /// Effects and schedule firings seen held (the first time anything was held).
    pub held_ids: BTreeSet<String>,
    /// The span in which the first build had no running authority after a deploy.
    pub new_build_alone: Option<NewBuildAlone>,
}

/// From the first sample after a deploy at which no running authority had the first
/// build, until the first later sample at which one had it again (`None`: to the end).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(in crate::cluster) struct NewBuildAlone {
    pub since: Millis,
    pub until: Option<Millis>,
    /// The compat digests running at `since`: the only keys work created meanwhile can
    /// be claimed under.
    pub compats: BTreeSet<String>,
}

impl Sim {
    fn running_nodes(&self) -> impl Iterator<Item = &Node> {
        self.nodes
            .iter()
            .filter(|n| matches!(n.state, NodeState::Running | NodeState::Stopping))
    }

    /// The keys some running authority claims by ([`crate::workflow::keys::claim_keys`], as
    /// each authority derives them).
    pub(in crate::cluster) fn running_compats(&self) -> BTreeSet<String> {
        self.running_nodes()
            .flat_map(|n| {
                n.core
                    .claim_keys()
                    .iter()
                    .map(str::to_owned)
                    .collect::<Vec<_>>()
            })
            .collect()
    }

    /// Non-terminal work whose build no running authority has.
    pub(in crate::cluster) fn held_count(&self) -> Result<(u64, BTreeSet<String>)> {
        let live = self.running_compats();
        let overview = self.store.overview()?;
        let mut held = 0;
        let mut compats = BTreeSet::new();
        for c in overview.work {
            if !c.state.is_terminal() && !live.contains(&c.compat) && c.count > 0 {
                held += c.count;
                compats.insert(c.compat);
            }
        }
        Ok((held, compats))
    }

    /// Notes when the first build stopped running after a deploy, and when it came back.
    fn watch_new_build_alone(&mut self) {
        if self.generator.build() == self.options.build {
            return;
        }
        let live = self.running_compats();
        let first_runs = self.running_nodes().any(|n| n.build == self.options.build);
        let now = self.store.now();
        match &mut self.deploy.new_build_alone {
            None if !first_runs && !live.is_empty() => {
                self.deploy.new_build_alone = Some(NewBuildAlone {
                    since: now,
                    until: None,
                    compats: live,
                });
            }
            Some(alone) if first_runs && alone.until.is_none() => alone.until = Some(now),
            _ => {}
        }
    }

    /// Schedule firings created while only the new build ran: how many, and how many of
    /// them carry a key no authority running then had (stranded until the old build
    /// returns, if it ever does). `None` when the first build never stopped running.
    pub(in crate::cluster) fn firings_under_new_build(&self) -> Result<Option<(u64, u64)>> {
        let Some(alone) = &self.deploy.new_build_alone else {
            return Ok(None);
        };
        let filter = WorkFilter {
            kind: Some(WorkKind::Schedule),
            ..WorkFilter::default()
        };
        let (mut created, mut stranded) = (0, 0);
        let mut page = PageRequest::first(1_000);
        loop {
            let listed = self.store.list_work(&filter, &page)?;
            for w in &listed.rows {
                if w.created_at >= alone.since && alone.until.is_none_or(|u| w.created_at < u) {
                    created += 1;
                    stranded += u64::from(!alone.compats.contains(&w.compat));
                }
            }
            match listed.next {
                Some(after) => page = PageRequest::resume(Some(&after), 1_000),
                None => return Ok(Some((created, stranded))),
            }
        }
    }

    pub(super) fn sample(&mut self) {
        self.watch_new_build_alone();
        let Ok((held, compats)) = self.held_count() else {
            return;
        };
        if held == 0 {
            return;
        }
        self.deploy.held_max = self.deploy.held_max.max(held);
        self.deploy.held_samples += 1;
        if self.deploy.held_ids.is_empty() {
            let filter = WorkFilter {
                states: vec![WorkState::Pending, WorkState::Retry, WorkState::Claimed],
                kind: None,
                owner: None,
                compats: compats.into_iter().collect(),
                ..WorkFilter::default()
            };
            if let Ok(page) = self.store.list_work(&filter, &PageRequest::first(5_000)) {
                self.deploy.held_ids = page
                    .rows
                    .into_iter()
                    .filter(|w| w.kind != WorkKind::Cursor)
                    .map(|w| w.id)
                    .collect();
            }
        }
    }
}
