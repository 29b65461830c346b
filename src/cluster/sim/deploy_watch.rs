//! The rolling-deploy watch: how much non-terminal work sat *held* (its build run by no
//! running authority) while a deploy was under way, and which items, so the report can
//! say whether they drained. Kept apart because it observes the simulation and never
//! changes it.

use std::collections::BTreeSet;

use super::{NodeState, Sim};
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
}

impl Sim {
    /// Compat digests some running authority claims under.
    pub(in crate::cluster) fn running_compats(&self) -> BTreeSet<String> {
        self.nodes
            .iter()
            .filter(|n| matches!(n.state, NodeState::Running | NodeState::Stopping))
            .map(|n| n.compat.clone())
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

    pub(super) fn sample(&mut self) {
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
                id_prefix: None,
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
