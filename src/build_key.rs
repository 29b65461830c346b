//! The compatibility keys of executable meaning (docs/ARCHITECTURE.md#compatibility).
//!
//! Every durable item records the digest of the key of the code that will run it, and an
//! authority claims only items whose digest is in its set ([`crate::model::CompatSet`]).
//! The key follows what executes, not a build's name:
//!
//! - a work item (effect, schedule firing, cursor) carries [`handler_key`] of its handler:
//!   the handler's name and the compatibility part of its declared semantic version
//!   ([`HandlerVersion::compatibility_part`]), so a patch or minor release of a handler
//!   (`1.2.0` → `1.3.0`) runs the old build's items and a major bump (`1.x` → `2.0.0`, or
//!   `0.3` → `0.4`) does not;
//! - a workflow instance carries [`workflow_key`] of its pinned definition's semantic
//!   fingerprint and the versions of the handlers its actions need, so only an authority
//!   that has that definition and every one of those handlers claims it.
//!
//! An authority's set ([`claim_keys`]) holds one key per handler it registers and one per
//! deployed definition all of whose actions it has handlers for. The human `--build` tag
//! is a label shown to people and enters no key.

use std::collections::BTreeMap;

use sha2::{Digest, Sha256};

use crate::authority::handlers::HandlerVersion;
use crate::model::{CompatSet, CompatibilityKey, WorkflowDefinitionRow};
use crate::workflow::{StepKind, WorkflowDef, parse_definition};

/// The build tag used when none is given.
pub const DEFAULT_BUILD_TAG: &str = "v1";

/// The schema version this build reads and writes.
pub const SCHEMA_VERSION: u32 = 1;

/// Identifies the durable schema this build expects (bumped with any layout change).
pub const SCHEMA_FINGERPRINT: &str = "leasehold-schema-1";

/// The contract between authorities and the store.
pub const SERVER_CONTRACT: &str = "leasehold.v1";

fn key_of(semantic_fingerprint: String) -> CompatibilityKey {
    CompatibilityKey {
        schema_version: SCHEMA_VERSION,
        schema_fingerprint: SCHEMA_FINGERPRINT.to_owned(),
        server_contract: SERVER_CONTRACT.to_owned(),
        semantic_fingerprint,
    }
}

fn hash_fields<'a>(domain: &str, fields: impl IntoIterator<Item = &'a str>) -> String {
    let mut hasher = Sha256::new();
    hasher.update(domain.as_bytes());
    hasher.update([0u8]);
    for field in fields {
        hasher.update(field.as_bytes());
        hasher.update([0u8]);
    }
    hex::encode(hasher.finalize())
}

/// The digest of the key of `handler`'s work at `version`: the semantic fingerprint hashes
/// the name and the version's compatibility part.
#[must_use]
pub fn handler_key(handler: &str, version: &HandlerVersion) -> String {
    key_of(hash_fields(
        "handler",
        [handler, version.compatibility_part()],
    ))
    .digest()
}

/// The digest of the key of an instance of the definition whose semantic fingerprint is
/// `definition_fingerprint`, run with `versions` (every handler its actions need, by
/// name): the semantic fingerprint hashes the definition's and each handler's name and
/// compatibility part.
#[must_use]
pub fn workflow_key(
    definition_fingerprint: &str,
    versions: &BTreeMap<String, HandlerVersion>,
) -> String {
    let fields = std::iter::once(definition_fingerprint).chain(
        versions
            .iter()
            .flat_map(|(name, v)| [name.as_str(), v.compatibility_part()]),
    );
    key_of(hash_fields("workflow", fields)).digest()
}

/// The handlers `def`'s actions need (the engine runs action `a` with the handler `a`).
#[must_use]
pub fn action_handlers(def: &WorkflowDef) -> Vec<&str> {
    let mut names: Vec<&str> = def
        .steps
        .iter()
        .filter_map(|step| match &step.kind {
            StepKind::Action(action) => Some(action.action.as_str()),
            _ => None,
        })
        .collect();
    names.sort_unstable();
    names.dedup();
    names
}

/// The key of an instance of `def` (semantic fingerprint `fingerprint`) run by code with
/// the handler `versions`; `None` when one of its actions has no handler there.
#[must_use]
pub fn instance_key(
    def: &WorkflowDef,
    fingerprint: &str,
    versions: &BTreeMap<String, HandlerVersion>,
) -> Option<String> {
    let needed = action_handlers(def)
        .into_iter()
        .map(|name| Some((name.to_owned(), versions.get(name)?.clone())))
        .collect::<Option<BTreeMap<_, _>>>()?;
    Some(workflow_key(fingerprint, &needed))
}

/// The set an authority with the handler `versions` claims by, given the deployed
/// `definitions`: one key per handler, one per definition it can run whole (a stored
/// definition that no longer parses contributes nothing).
#[must_use]
pub fn claim_keys(
    versions: &BTreeMap<String, HandlerVersion>,
    definitions: &[WorkflowDefinitionRow],
) -> CompatSet {
    let mut keys = CompatSet::new(versions.iter().map(|(name, v)| handler_key(name, v)));
    for row in definitions {
        if let Some(key) = parse_definition(&row.definition)
            .ok()
            .and_then(|def| instance_key(&def, &row.fingerprint, versions))
        {
            keys.insert(key);
        }
    }
    keys
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(text: &str) -> HandlerVersion {
        HandlerVersion::parse(text).expect(text)
    }

    #[test]
    fn a_minor_release_keeps_the_key_a_major_one_changes_it() {
        let key = |version| handler_key("send-email", &v(version));
        assert_eq!(key("1.2.0"), key("1.3.0"));
        assert_eq!(key("1.2.0"), key("1.2.9"));
        assert_ne!(key("1.9.0"), key("2.0.0"));
        assert_ne!(key("0.3.0"), key("0.4.0"));
        assert_eq!(key("0.3.0"), key("0.3.5"));
        assert_ne!(key("2.0.0-rc.1"), key("2.0.0-rc.2"));
        assert_ne!(key("1.0.0"), handler_key("charge-card", &v("1.0.0")));
    }

    #[test]
    fn an_instance_key_needs_every_action_handler() {
        let def = parse_definition(crate::workflow::SHIPPED_DEFINITIONS[0].1).expect("shipped");
        let needed = action_handlers(&def);
        assert!(!needed.is_empty());
        let at = |version: &str| -> BTreeMap<String, HandlerVersion> {
            needed
                .iter()
                .map(|n| ((*n).to_owned(), v(version)))
                .collect()
        };
        let key = instance_key(&def, "fp", &at("1.0.0")).expect("has all");
        assert_eq!(instance_key(&def, "fp", &at("1.4.0")), Some(key.clone()));
        assert_ne!(instance_key(&def, "fp", &at("2.0.0")), Some(key.clone()));
        assert_ne!(instance_key(&def, "fp2", &at("1.0.0")), Some(key));
        let mut missing = at("1.0.0");
        missing.remove(needed[0]);
        assert_eq!(instance_key(&def, "fp", &missing), None);
    }
}
