//! Cancelling a workflow instance, as the dashboard and `leasehold cancel` offer it: when
//! it is offered at all ([`offer`]) and who may cancel what ([`Builds`]). The verdict, its
//! words and the audited cancel itself are the engine's
//! (`workflow/engine/cancel.rs`: `judge`, `Verdict`, `Store::cancel_workflow_audited`), so
//! both front ends and a dry run judge alike and audit in the cancel's own transaction.
//!
//! A cancel is refused from another build than the instance's. The instance's own key
//! decides: it carries the workflow key of the definition it pins and the handler versions
//! it was started for, so it is the fleet's when some build the registry holds — one
//! authority's registered handler versions, read by [`LiveBuilds`] as every operator's
//! reader reads them — yields that key for that definition.
//! `--handler-version V` replaces the fleet with one build running every handler at `V`.

use std::collections::BTreeMap;

use crate::error::Result;
use crate::model::HandlerVersion;
use crate::model::{CompatSet, InstanceRow, InstanceStatus, WorkflowDefinitionRow};
use crate::ops::live_builds::LiveBuilds;
use crate::store::Store;
use crate::workflow::engine::decode_state;
use crate::workflow::keys::{action_handlers, claim_keys};
use crate::workflow::parse_definition;

/// Whether a cancel should be offered for an instance whose status is `status` (`None`:
/// no such instance); otherwise the one line that says why not, e.g. `completed — nothing
/// to cancel`.
///
/// # Errors
/// The line to show instead of a confirmation.
pub fn offer(instance: &str, status: Option<&str>) -> std::result::Result<(), String> {
    match status {
        None => Err(format!("no such workflow instance: {instance}")),
        Some(s) if InstanceStatus::parse(s).is_some_and(InstanceStatus::is_terminal) => {
            Err(format!("{s} — nothing to cancel"))
        }
        Some(_) => Ok(()),
    }
}

/// The builds a one-shot caller (the command line, the dashboard) judges a cancel by, and
/// the keys they run: an instance is cancellable when its key is among them.
#[derive(Debug, Clone)]
pub struct Builds {
    each: Vec<Build>,
    definitions: Vec<WorkflowDefinitionRow>,
    keys: CompatSet,
}

/// One build: handler versions, and who runs them.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Build {
    versions: BTreeMap<String, HandlerVersion>,
    /// The registrations that declared exactly these versions, or what the build stands
    /// for when nobody registered it.
    by: Vec<String>,
}

/// The builds shown in a refusal at most, so the line stays one line.
const BUILDS_SHOWN: usize = 4;

impl Builds {
    /// The fleet's builds: each distinct set of handler versions the registry holds
    /// (running, gone or stopped registrations alike — a build does not stop being the
    /// fleet's because its authorities are down for a restart), as `live` read it. A
    /// registry that holds none is judged by the versions a producer stamps without a
    /// fleet (every handler at [`HandlerVersion::DEMO`], as `workflow start` does), so the
    /// instances started before the first authority registered can be cancelled.
    #[must_use]
    pub fn fleet(live: &LiveBuilds) -> Self {
        let definitions = live.definitions().to_vec();
        let mut builds: Vec<Build> = Vec::new();
        for authority in live.registrations() {
            let versions = authority.handler_versions();
            let id = authority.instance_id.clone();
            match builds.iter_mut().find(|b| b.versions == versions) {
                Some(build) => build.by.push(id),
                None => builds.push(Build {
                    versions,
                    by: vec![id],
                }),
            }
        }
        if builds.is_empty() {
            builds.push(Build {
                versions: every_handler(&definitions, &HandlerVersion::demo()),
                by: vec!["no authority registered: the producers' default".into()],
            });
        }
        Self::of(builds, definitions)
    }

    /// One build that runs every handler at `version` (`--handler-version`): the
    /// operator's word replaces the fleet's.
    ///
    /// # Errors
    /// A store failure.
    pub fn at_version(store: &Store, version: &HandlerVersion) -> Result<Self> {
        let definitions = store.deployed_definitions()?;
        let build = Build {
            versions: every_handler(&definitions, version),
            by: vec!["--handler-version".into()],
        };
        Ok(Self::of(vec![build], definitions))
    }

    fn of(builds: Vec<Build>, definitions: Vec<WorkflowDefinitionRow>) -> Self {
        let mut keys = CompatSet::new(std::iter::empty::<String>());
        for build in &builds {
            for key in claim_keys(&build.versions, &definitions).iter() {
                keys.insert(key.to_owned());
            }
        }
        Self {
            each: builds,
            definitions,
            keys,
        }
    }

    /// The keys of every build: what a cancel passes the store, which refuses an instance
    /// whose key is not among them.
    #[must_use]
    pub fn keys(&self) -> &CompatSet {
        &self.keys
    }

    /// Whether some build yields `instance`'s key for the definition it pins.
    #[must_use]
    pub fn may_cancel(&self, instance: &InstanceRow) -> bool {
        self.keys.contains(&instance.compat)
    }

    /// The builds checked, as the refusal of `instance` shows them: each build's versions
    /// of the handlers its definition needs, and who runs them — `resize-image 2.0.0,
    /// send-email 2.0.0 (poly-1, poly-2)`.
    #[must_use]
    pub fn checked(&self, instance: &InstanceRow) -> String {
        let needed: Vec<String> = decode_state(instance)
            .ok()
            .and_then(|(fingerprint, _)| {
                self.definitions
                    .iter()
                    .find(|row| row.fingerprint == fingerprint)
            })
            .and_then(|row| parse_definition(&row.definition).ok())
            .map(|def| {
                action_handlers(&def)
                    .into_iter()
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default();
        let mut shown: Vec<String> = self
            .each
            .iter()
            .take(BUILDS_SHOWN)
            .map(|build| {
                let versions: Vec<String> = needed
                    .iter()
                    .map(|h| match build.versions.get(h) {
                        Some(v) => format!("{h} {v}"),
                        None => format!("{h} missing"),
                    })
                    .collect();
                let versions = if versions.is_empty() {
                    "no handler of its definition".to_owned()
                } else {
                    versions.join(", ")
                };
                format!("{versions} ({})", build.by.join(", "))
            })
            .collect();
        if self.each.len() > BUILDS_SHOWN {
            shown.push(format!("{} more", self.each.len() - BUILDS_SHOWN));
        }
        shown.join("; ")
    }
}

/// Every handler the deployed `definitions` need, at `version`.
fn every_handler(
    definitions: &[WorkflowDefinitionRow],
    version: &HandlerVersion,
) -> BTreeMap<String, HandlerVersion> {
    definitions
        .iter()
        .filter_map(|row| parse_definition(&row.definition).ok())
        .flat_map(|def| {
            action_handlers(&def)
                .into_iter()
                .map(str::to_owned)
                .collect::<Vec<_>>()
        })
        .map(|name| (name, version.clone()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offered_only_for_unfinished_instances() {
        assert_eq!(offer("wf-1", Some("running")), Ok(()));
        assert_eq!(offer("wf-1", Some("waiting")), Ok(()));
        assert_eq!(
            offer("wf-1", Some("completed")),
            Err("completed — nothing to cancel".into())
        );
        assert_eq!(
            offer("wf-1", Some("cancelled")),
            Err("cancelled — nothing to cancel".into())
        );
        assert_eq!(
            offer("wf-9", None),
            Err("no such workflow instance: wf-9".into())
        );
    }
}
