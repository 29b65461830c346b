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

use std::collections::{BTreeMap, HashMap};

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
    key_needing(action_handlers(def), fingerprint, versions)
}

/// [`instance_key`] from the handlers the definition's actions need.
fn key_needing<'a>(
    needed: impl IntoIterator<Item = &'a str>,
    fingerprint: &str,
    versions: &BTreeMap<String, HandlerVersion>,
) -> Option<String> {
    let needed = needed
        .into_iter()
        .map(|name| Some((name.to_owned(), versions.get(name)?.clone())))
        .collect::<Option<BTreeMap<_, _>>>()?;
    Some(workflow_key(fingerprint, &needed))
}

/// The handlers each deployed definition's actions need, kept between calls of
/// [`claim_keys_with`]. An authority reads the deployed definitions again every few seconds
/// ([`crate::authority::core::KEYS_REFRESH_MS`]), and parsing every one of them each time
/// was most of what a quiet authority did (a third of a simulated week's run time). Kept by
/// the definition's text, which alone decides what it needs (a text parses to the same
/// definition every time): a text is parsed once while it stays deployed, however many
/// workflows deploy it and whatever fingerprints they carry (two texts of one fingerprint,
/// the same workflow formatted twice, are two entries, not one pushing the other out), and a
/// text that does not parse is kept as such. Only the texts deployed at the last call are
/// kept.
#[derive(Debug, Default)]
pub struct ActionsMemo {
    /// By definition text: the handlers it needs (`None`: it does not parse).
    needs: HashMap<String, Option<Vec<String>>>,
    /// How many texts were parsed: what the memo saves, for its tests.
    #[cfg(test)]
    parses: usize,
}

impl ActionsMemo {
    /// The handlers `row`'s definition needs: from this call's entries, else from `kept`
    /// (the last call's), else parsed; the entry moves into `self`.
    fn take(
        &mut self,
        kept: &mut HashMap<String, Option<Vec<String>>>,
        row: &WorkflowDefinitionRow,
    ) -> Option<&[String]> {
        if !self.needs.contains_key(&row.definition) {
            let needs = match kept.remove(&row.definition) {
                Some(needs) => needs,
                None => {
                    #[cfg(test)]
                    {
                        self.parses += 1;
                    }
                    parse_definition(&row.definition).ok().map(|def| {
                        action_handlers(&def)
                            .into_iter()
                            .map(str::to_owned)
                            .collect()
                    })
                }
            };
            self.needs.insert(row.definition.clone(), needs);
        }
        self.needs.get(&row.definition)?.as_deref()
    }
}

/// The set an authority with the handler `versions` claims by, given the deployed
/// `definitions`: one key per handler, one per definition it can run whole (a stored
/// definition that no longer parses contributes nothing).
#[must_use]
pub fn claim_keys(
    versions: &BTreeMap<String, HandlerVersion>,
    definitions: &[WorkflowDefinitionRow],
) -> CompatSet {
    claim_keys_with(versions, definitions, &mut ActionsMemo::default())
}

/// [`claim_keys`], parsing only the definitions `memo` did not hold from the last call.
#[must_use]
pub fn claim_keys_with(
    versions: &BTreeMap<String, HandlerVersion>,
    definitions: &[WorkflowDefinitionRow],
    memo: &mut ActionsMemo,
) -> CompatSet {
    let mut kept = std::mem::take(&mut memo.needs);
    let mut keys = CompatSet::new(versions.iter().map(|(name, v)| handler_key(name, v)));
    for row in definitions {
        if let Some(key) = memo.take(&mut kept, row).and_then(|names| {
            key_needing(names.iter().map(String::as_str), &row.fingerprint, versions)
        }) {
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

    fn row(id: &str, fingerprint: &str, definition: &str) -> WorkflowDefinitionRow {
        WorkflowDefinitionRow {
            workflow_id: id.into(),
            fingerprint: fingerprint.into(),
            definition: definition.into(),
            deployed_at: 0,
        }
    }

    /// Every handler the shipped definitions need, at `version`.
    fn all_handlers(version: &str) -> BTreeMap<String, HandlerVersion> {
        crate::workflow::SHIPPED_DEFINITIONS
            .iter()
            .flat_map(|(_, text)| {
                let def = parse_definition(text).expect("shipped");
                action_handlers(&def)
                    .into_iter()
                    .map(str::to_owned)
                    .collect::<Vec<_>>()
            })
            .map(|name| (name, v(version)))
            .collect()
    }

    /// Kept between calls, the memo answers what parsing every definition again answers,
    /// whatever the deployed set does from one call to the next: a definition added, one
    /// that does not parse, one withdrawn (and forgotten), the same text twice, another text
    /// under a kept fingerprint.
    #[test]
    fn the_memo_gives_the_keys_a_fresh_parse_gives() {
        let shipped = crate::workflow::SHIPPED_DEFINITIONS;
        let versions = all_handlers("1.0.0");
        let first = row("a", "fp-a", shipped[0].1);
        let second = row("b", "fp-b", shipped[1 % shipped.len()].1);
        let broken = row("c", "fp-c", "{ not a definition");
        let again = row("d", "fp-d", shipped[0].1);
        let mut memo = ActionsMemo::default();
        for deployed in [
            vec![first.clone()],
            vec![first.clone(), second.clone(), broken.clone()],
            vec![second.clone(), again.clone(), first.clone()],
            vec![second.clone()],
            vec![row("a", "fp-a", &broken.definition), second.clone()],
            vec![first.clone()],
            vec![],
        ] {
            assert_eq!(
                claim_keys_with(&versions, &deployed, &mut memo),
                claim_keys(&versions, &deployed),
                "{:?}",
                deployed.iter().map(|r| &r.workflow_id).collect::<Vec<_>>()
            );
            let kept: std::collections::BTreeSet<&str> =
                memo.needs.keys().map(String::as_str).collect();
            let deployed_now = deployed.iter().map(|r| r.definition.as_str()).collect();
            assert_eq!(kept, deployed_now, "only the deployed definitions are kept");
        }
        assert!(claim_keys(&versions, std::slice::from_ref(&first)).len() > versions.len());
        assert_eq!(
            claim_keys(&versions, &[broken]).len(),
            versions.len(),
            "a definition that does not parse adds no key"
        );
    }

    /// Two deployed texts under one fingerprint (one workflow formatted two ways) are each
    /// parsed once, then answered from the memo at every later refresh: neither pushes the
    /// other out.
    #[test]
    fn two_texts_of_one_fingerprint_are_parsed_once_each() {
        let shipped = crate::workflow::SHIPPED_DEFINITIONS[0].1;
        let versions = all_handlers("1.0.0");
        let reformatted = format!("{shipped}\n\n");
        let deployed = [row("a", "fp", shipped), row("b", "fp", &reformatted)];
        let mut memo = ActionsMemo::default();
        let keys = claim_keys_with(&versions, &deployed, &mut memo);
        assert_eq!(memo.parses, 2);
        for _refresh in 0..3 {
            assert_eq!(claim_keys_with(&versions, &deployed, &mut memo), keys);
        }
        assert_eq!(memo.parses, 2, "a refresh of the same texts parses nothing");
        assert_eq!(keys, claim_keys(&versions, &deployed));
    }
}
