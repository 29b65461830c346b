//! The compatibility matrix: the running builds (authorities grouped by build tag and the
//! handler versions they register) against the unfinished work by compatibility key and
//! kind — which build can run what, what no running build can run (stranded), and what
//! stopping one build would strand (work only it can run). Built from the registrations
//! and the incremental counts, the same facts [`crate::workflow::runnable`] judges by.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::error::Result;
use crate::model::handler_key;
use crate::model::work::WorkCount;
use crate::model::{Authority, CompatSet, WorkKind, WorkflowDefinitionRow};
use crate::workflow::keys::keys_of;

/// Authorities that run the same code under the same tag.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Build {
    /// `v1 · effect.noop 1.0.0, …`: the tag and the versions, what tells builds apart.
    pub label: String,
    pub authorities: Vec<String>,
    #[serde(skip)]
    keys: CompatSet,
}

/// Unfinished work of one kind under one key.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Cell {
    pub kind: WorkKind,
    /// The handler the key belongs to, when a build registers it or an item names it.
    pub handler: Option<String>,
    pub compat: String,
    /// Pending, claimed and retrying items.
    pub unfinished: u64,
    /// The labels of the builds that can run it.
    pub runnable_by: Vec<String>,
}

/// Builds × work.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Matrix {
    pub builds: Vec<Build>,
    pub cells: Vec<Cell>,
}

impl Matrix {
    /// Items no running build can run.
    #[must_use]
    pub fn stranded(&self) -> u64 {
        self.cells
            .iter()
            .filter(|c| c.runnable_by.is_empty())
            .map(|c| c.unfinished)
            .sum()
    }

    /// Items only `build` can run: what stopping it would strand.
    #[must_use]
    pub fn strands_if_stopped(&self, build: &str) -> u64 {
        self.cells
            .iter()
            .filter(|c| c.runnable_by == [build])
            .map(|c| c.unfinished)
            .sum()
    }
}

/// The matrix of the `running` authorities over the unfinished work of `counts`;
/// `handler_of` names the handler of a key no running build registers (from one of its
/// items).
///
/// # Errors
/// What `handler_of` returns.
pub fn matrix(
    running: &[&Authority],
    definitions: &[WorkflowDefinitionRow],
    counts: &[WorkCount],
    mut handler_of: impl FnMut(&str) -> Result<Option<String>>,
) -> Result<Matrix> {
    let mut builds: BTreeMap<String, Build> = BTreeMap::new();
    let mut names: BTreeMap<String, String> = BTreeMap::new();
    for authority in running {
        let versions = authority.handler_versions();
        for (name, version) in &versions {
            names.insert(handler_key(name, version), name.clone());
        }
        let listed: Vec<String> = versions.iter().map(|(n, v)| format!("{n} {v}")).collect();
        let label = format!("{} · {}", authority.build, listed.join(", "));
        builds
            .entry(label.clone())
            .or_insert_with(|| Build {
                label,
                authorities: Vec::new(),
                keys: keys_of(authority, definitions),
            })
            .authorities
            .push(authority.instance_id.clone());
    }
    let mut unfinished: BTreeMap<(WorkKind, String), u64> = BTreeMap::new();
    for count in counts
        .iter()
        .filter(|c| !c.state.is_terminal() && c.count > 0)
    {
        *unfinished
            .entry((count.kind, count.compat.clone()))
            .or_default() += count.count;
    }
    let mut cells = Vec::with_capacity(unfinished.len());
    for ((kind, compat), n) in unfinished {
        let handler = match names.get(&compat) {
            Some(name) => Some(name.clone()),
            None => handler_of(&compat)?,
        };
        let runnable_by = builds
            .values()
            .filter(|b| b.keys.contains(&compat))
            .map(|b| b.label.clone())
            .collect();
        cells.push(Cell {
            kind,
            handler,
            compat,
            unfinished: n,
            runnable_by,
        });
    }
    Ok(Matrix {
        builds: builds.into_values().collect(),
        cells,
    })
}
