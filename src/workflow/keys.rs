//! The compatibility keys of workflow instances and the set an authority claims by
//! (docs/ARCHITECTURE.md#compatibility).
//!
//! A workflow instance carries [`instance_key`]: a key over its pinned definition's
//! semantic fingerprint and the versions of the handlers its actions need, so only an
//! authority that has that definition and every one of those handlers claims it. An
//! authority's set ([`claim_keys`]) holds one key per handler it registers
//! ([`crate::model::handler_key`]) and one per deployed definition all of whose actions it
//! has handlers for; [`keys_of`] derives the same set from a registration, so every reader
//! that asks "can a running authority run this?" answers as the authority itself would.

use std::collections::BTreeMap;

use super::{StepKind, WorkflowDef, parse_definition};
use crate::model::{
    Authority, CompatSet, CompatibilityKey, HandlerVersion, WorkflowDefinitionRow, handler_key,
};

/// The digest of the key of an instance of the definition whose semantic fingerprint is
/// `definition_fingerprint`, run with `versions` (every handler its actions need, by
/// name): the semantic fingerprint hashes the definition's and each handler's name and
/// compatibility part.
fn workflow_key(
    definition_fingerprint: &str,
    versions: &BTreeMap<String, HandlerVersion>,
) -> String {
    let fields = std::iter::once(definition_fingerprint).chain(
        versions
            .iter()
            .flat_map(|(name, v)| [name.as_str(), v.compatibility_part()]),
    );
    CompatibilityKey::of_meaning("workflow", fields).digest()
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

/// The digests the registered `authority` claims by, given the deployed `definitions`.
#[must_use]
pub fn keys_of(authority: &Authority, definitions: &[WorkflowDefinitionRow]) -> CompatSet {
    claim_keys(&authority.handler_versions(), definitions)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(text: &str) -> HandlerVersion {
        HandlerVersion::parse(text).expect(text)
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
