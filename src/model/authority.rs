//! Authority registrations: who is running, which handler versions, under which build
//! label, how recently alive.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::HandlerVersion;
use crate::clock::Millis;

/// One authority's registration row.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Authority {
    pub instance_id: String,
    /// A label of the code it runs: one digest over its handlers' keys (what it can run is
    /// read from the handler versions its config declares, [`Authority::handler_versions`]).
    pub compat: String,
    /// Human build tag (`--build`).
    pub build: String,
    /// The runtime knobs it runs with, JSON text.
    pub config: String,
    pub started_at: Millis,
    pub heartbeat_at: Millis,
    /// Set on clean shutdown.
    pub stopped_at: Option<Millis>,
    pub host: String,
    pub pid: u32,
    /// What it tells operators it cannot settle by itself (outcomes held in recovery),
    /// written with its heartbeat.
    #[serde(default)]
    pub published: Published,
}

/// Outcomes held in recovery listed at most per authority; the count says how many in all.
pub const RECOVERY_LISTED: usize = 100;

/// An authority's own account of what needs a person, kept on its registration row so it
/// outlives the process: a stopped or gone authority's held outcomes are exactly what
/// somebody must look at. With it, how often it stood aside from a crowded write lock,
/// which says why an authority with free slots claimed nothing while work waited.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Published {
    /// Outcomes held in recovery, oldest first, at most [`RECOVERY_LISTED`].
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub recovery: Vec<Recovering>,
    /// How many outcomes are held in recovery in all (the list may be cut).
    #[serde(default)]
    pub in_recovery: u64,
    /// Polls that stood aside from a crowded write lock since the process started (its
    /// metrics page's `lock_step_asides_total`).
    #[serde(default)]
    pub steps_aside: u64,
}

impl Published {
    /// A bounded account of `held` (any order).
    #[must_use]
    pub fn of(mut held: Vec<Recovering>) -> Self {
        held.sort_by(|a, b| (a.since, &a.resource_id).cmp(&(b.since, &b.resource_id)));
        let in_recovery = held.len() as u64;
        held.truncate(RECOVERY_LISTED);
        Self {
            recovery: held,
            in_recovery,
            steps_aside: 0,
        }
    }

    /// The same account, telling `n` polls that stood aside.
    #[must_use]
    pub fn with_steps_aside(self, n: u64) -> Self {
        Self {
            steps_aside: n,
            ..self
        }
    }

    /// Whether there is nothing to tell.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.in_recovery == 0
    }

    /// The same account without the listed outcomes on `resources` (their claims were
    /// handed back, so nothing of them is left to recover here).
    #[must_use]
    pub fn without(mut self, resources: &[&str]) -> Self {
        let before = self.recovery.len();
        self.recovery
            .retain(|r| !resources.contains(&r.resource_id.as_str()));
        let gone = (before - self.recovery.len()) as u64;
        self.in_recovery = self.in_recovery.saturating_sub(gone);
        self
    }
}

/// One job whose outcome nobody can yet say committed: neither run nor written again until
/// a read-back decides.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Recovering {
    /// The work item or workflow instance.
    pub resource_id: String,
    /// `effect`, `schedule`, `cursor`, … or `workflow`.
    pub kind: String,
    /// The generation its claim was held under.
    pub generation: u64,
    /// Why the read-back could not decide.
    pub why: String,
    /// When it was first held.
    pub since: Millis,
}

/// The key of the registering process's mark in [`Authority::config`]: its boot id and
/// start time (`crate::foundation::process`), which tell a crashed authority's pid from the same
/// pid reused. Kept in the registered config rather than a column of its own, so that
/// stores written before it read as registrations without a mark (judged as before: the id
/// stays taken until the holder's lease runs out).
pub const PROCESS_MARK: &str = "processMark";

impl Authority {
    /// A registration planted in the registry without running an authority (tests and
    /// the conformance suite): `config` is the JSON text of the runtime knobs it registers
    /// (its lease, heartbeat and handler versions), its last heartbeat at `heartbeat_at`.
    #[cfg(any(test, feature = "testing"))]
    #[must_use]
    pub fn planted(instance_id: &str, config: &str, heartbeat_at: Millis) -> Self {
        Self {
            instance_id: instance_id.into(),
            compat: "label".into(),
            build: "v1".into(),
            config: config.into(),
            started_at: heartbeat_at,
            heartbeat_at,
            stopped_at: None,
            host: "host-1".into(),
            pid: 42,
            published: Published::default(),
        }
    }

    /// The handler versions it registered (the `handlers` of its registered config, name →
    /// version); a version that does not parse is left out: nothing can be claimed under it.
    #[must_use]
    pub fn handler_versions(&self) -> BTreeMap<String, HandlerVersion> {
        let Ok(config) = serde_json::from_str::<serde_json::Value>(&self.config) else {
            return BTreeMap::new();
        };
        let Some(handlers) = config.get("handlers").and_then(|h| h.as_object()) else {
            return BTreeMap::new();
        };
        handlers
            .iter()
            .filter_map(|(name, version)| {
                let version = HandlerVersion::parse(version.as_str()?).ok()?;
                Some((name.clone(), version))
            })
            .collect()
    }

    /// The mark of the process that registered this row, if it recorded one.
    #[must_use]
    pub fn process_mark(&self) -> Option<String> {
        let config: serde_json::Value = serde_json::from_str(&self.config).ok()?;
        config.get(PROCESS_MARK)?.as_str().map(str::to_owned)
    }

    /// This registration's incarnation: which start of which process wrote it.
    #[must_use]
    pub fn incarnation(&self) -> Incarnation {
        Incarnation {
            instance_id: self.instance_id.clone(),
            host: self.host.clone(),
            pid: self.pid,
            started_at: self.started_at,
        }
    }
}

/// One start of one authority: its instance id plus the host, pid and start instant of
/// the process that registered it. A second start under the same id is another
/// incarnation, so a heartbeat from the first can tell that the row is no longer its own.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Incarnation {
    pub instance_id: String,
    pub host: String,
    pub pid: u32,
    pub started_at: Millis,
}

impl Incarnation {
    /// Whether `row` was written by this incarnation.
    #[must_use]
    pub fn owns(&self, row: &Authority) -> bool {
        row.instance_id == self.instance_id
            && row.host == self.host
            && row.pid == self.pid
            && row.started_at == self.started_at
    }
}
