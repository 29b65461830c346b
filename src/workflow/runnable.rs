//! Whether anyone running can run an item or instance, judged from the running
//! authorities' registrations, for the operator's readers (the dashboard, `inspect`,
//! triage) and the checker alike. It lives beside [`crate::workflow::keys`], whose digests
//! it judges by, so that every layer from the checker on uses the one judgement.
//!
//! An authority registers the handlers it runs (name → semantic version) in its
//! registration's config. From those and the deployed definitions,
//! [`crate::workflow::keys::keys_of`] derives the digests it claims by, exactly as the
//! authority itself does (and as the checker and the cluster's deploy watch derive them).
//! An item is **runnable** when some running authority's set holds its digest; when
//! none does and no running authority has its handler at all it reads **no handler**: it
//! stays pending until an authority with the handler starts; otherwise (the handler runs
//! only at an incompatible version) it is **incompatible**.

use std::collections::{BTreeMap, BTreeSet};

use crate::model::{Authority, HandlerVersion, WorkflowDefinitionRow};
use crate::workflow::keys::keys_of;

/// What the running authorities can run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Runnable {
    /// The union of their claim keys.
    keys: BTreeSet<String>,
    /// Per handler name, the versions they declare.
    handlers: BTreeMap<String, BTreeSet<HandlerVersion>>,
    running: usize,
}

/// How an item stands against the running authorities.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Standing {
    /// Some running authority's keys hold its digest.
    Runnable,
    /// None does, and no running authority has its handler at all.
    NoHandler,
    /// No running authority may run it.
    Incompatible,
}

impl Runnable {
    /// From the authorities that are running (the caller judges liveness) and the deployed
    /// definitions.
    pub fn of<'a>(
        running: impl IntoIterator<Item = &'a Authority>,
        definitions: &[WorkflowDefinitionRow],
    ) -> Self {
        let mut runnable = Self::default();
        for authority in running {
            runnable.running += 1;
            runnable
                .keys
                .extend(keys_of(authority, definitions).iter().map(str::to_owned));
            for (name, version) in authority.handler_versions() {
                runnable.handlers.entry(name).or_default().insert(version);
            }
        }
        runnable
    }

    /// Whether some running authority may run an item or instance stamped `compat`.
    #[must_use]
    pub fn compatible(&self, compat: &str) -> bool {
        self.keys.contains(compat)
    }

    /// How an item of `handler` stamped `compat` stands.
    #[must_use]
    pub fn standing(&self, compat: &str, handler: &str) -> Standing {
        if self.keys.contains(compat) {
            Standing::Runnable
        } else if self.running > 0 && !self.handlers.contains_key(handler) {
            Standing::NoHandler
        } else {
            Standing::Incompatible
        }
    }

    /// The versions of `handler` the running authorities declare, sorted.
    #[must_use]
    pub fn versions(&self, handler: &str) -> Option<&BTreeSet<HandlerVersion>> {
        self.handlers.get(handler)
    }

    /// The running authorities' claim keys, sorted.
    pub fn digests(&self) -> impl Iterator<Item = &String> {
        self.keys.iter()
    }

    /// The handlers the running authorities have, sorted.
    pub fn handlers(&self) -> impl Iterator<Item = &String> {
        self.handlers.keys()
    }

    /// Whether no authority is running.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.running == 0
    }
}

/// [`Runnable::of`] for a reader that asks at every refresh (the dashboard): deriving the
/// keys parses every deployed definition once per running authority, a tenth of a
/// dashboard refresh's time on a store with workflows, while the answer changes only when
/// the running authorities' registrations or the deployed definitions do. So it is
/// derived again only then; otherwise the last answer is returned.
#[derive(Debug, Clone, Default)]
pub struct RunnableMemo {
    /// The registrations (in order, one per running authority) and the definitions the
    /// answer was derived from.
    inputs: Option<(Vec<String>, Vec<WorkflowDefinitionRow>)>,
    runnable: Runnable,
}

impl RunnableMemo {
    /// What `running` can run given `definitions`, as [`Runnable::of`] gives it.
    pub fn of<'a>(
        &mut self,
        running: impl IntoIterator<Item = &'a Authority>,
        definitions: &[WorkflowDefinitionRow],
    ) -> &Runnable {
        let running: Vec<&Authority> = running.into_iter().collect();
        let unchanged = self.inputs.as_ref().is_some_and(|(configs, defs)| {
            configs
                .iter()
                .map(String::as_str)
                .eq(running.iter().map(|a| a.config.as_str()))
                && defs.as_slice() == definitions
        });
        if !unchanged {
            self.runnable = Runnable::of(running.iter().copied(), definitions);
            self.inputs = Some((
                running.iter().map(|a| a.config.clone()).collect(),
                definitions.to_vec(),
            ));
        }
        &self.runnable
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::handler_key;

    fn authority(id: &str, config: &str) -> Authority {
        Authority {
            instance_id: id.into(),
            compat: "label".into(),
            build: "v1".into(),
            config: config.into(),
            started_at: 0,
            heartbeat_at: 0,
            stopped_at: None,
            host: "h".into(),
            pid: 1,
            published: crate::model::Published::default(),
        }
    }

    fn key(handler: &str, version: &str) -> String {
        handler_key(handler, &HandlerVersion::parse(version).expect(version))
    }

    /// How an item of `handler` made for `version` stands against `runnable`.
    fn standing(runnable: &Runnable, handler: &str, version: &str) -> Standing {
        runnable.standing(&key(handler, version), handler)
    }

    #[test]
    fn an_item_needs_its_handler_at_a_compatible_version() {
        let a = authority("a", r#"{"handlers":{"send-email":"1.4.0"}}"#);
        let runnable = Runnable::of([&a], &[]);
        for (handler, version, expected) in [
            ("send-email", "1.0.0", Standing::Runnable),
            ("send-email", "1.9.9", Standing::Runnable),
            ("send-email", "2.0.0", Standing::Incompatible),
            ("charge-card", "1.0.0", Standing::NoHandler),
        ] {
            assert_eq!(
                standing(&runnable, handler, version),
                expected,
                "{handler} {version}"
            );
        }
        assert!(runnable.compatible(&key("send-email", "1.9.9")));
        assert_eq!(
            standing(&Runnable::of([], &[]), "send-email", "1.0.0"),
            Standing::Incompatible,
            "nobody running"
        );
    }

    #[test]
    fn running_authorities_pool_their_handlers() {
        let a = authority("a", r#"{"handlers":{"a":"1.0.0"}}"#);
        let b = authority("b", r#"{"handlers":{"b":"2.0.0"}}"#);
        let runnable = Runnable::of([&a, &b], &[]);
        for (handler, version, expected) in [
            ("a", "1.0.0", Standing::Runnable),
            ("b", "2.1.0", Standing::Runnable),
            ("c", "1.0.0", Standing::NoHandler),
        ] {
            assert_eq!(
                standing(&runnable, handler, version),
                expected,
                "{handler} {version}"
            );
        }
        assert_eq!(runnable.versions("b").map(BTreeSet::len), Some(1));
    }

    /// The memo answers as `Runnable::of` does, and follows every change of its inputs: a
    /// new registration, an authority more or less, a definition deployed.
    #[test]
    fn the_memo_follows_registrations_and_definitions() {
        let text = crate::workflow::SHIPPED_DEFINITIONS[0].1;
        let def = crate::workflow::parse_definition(text).expect("shipped");
        let deployed = [WorkflowDefinitionRow {
            workflow_id: def.id.clone(),
            fingerprint: crate::workflow::semantic_fingerprint(
                &def,
                &crate::workflow::Catalog::demo(),
            ),
            definition: text.into(),
            deployed_at: 0,
        }];
        // `a` runs every action of the deployed workflow, so the definition adds a key.
        let handlers: Vec<String> = crate::workflow::keys::action_handlers(&def)
            .into_iter()
            .map(|h| format!("\"{h}\":\"1.0.0\""))
            .collect();
        let a = authority(
            "a",
            &format!(r#"{{"handlers":{{{}}}}}"#, handlers.join(",")),
        );
        let upgraded = authority("a", r#"{"handlers":{"send-email":"2.0.0"}}"#);
        let b = authority("b", r#"{"handlers":{"charge-card":"1.0.0"}}"#);
        assert!(
            Runnable::of([&a], &deployed).digests().count()
                > Runnable::of([&a], &[]).digests().count(),
            "the deployed definition is one of a's keys"
        );
        let mut memo = RunnableMemo::default();
        let steps: [(Vec<&Authority>, &[WorkflowDefinitionRow]); 8] = [
            (vec![&a], &[]),
            (vec![&a], &[]),
            (vec![&a], &deployed),
            (vec![&upgraded], &deployed),
            (vec![&upgraded, &b], &deployed),
            (vec![&upgraded, &b], &[]),
            (vec![&a, &b], &deployed),
            (vec![], &deployed),
        ];
        for (i, (running, definitions)) in steps.into_iter().enumerate() {
            let fresh = Runnable::of(running.iter().copied(), definitions);
            assert_eq!(
                memo.of(running.iter().copied(), definitions),
                &fresh,
                "step {i}"
            );
        }
    }
}
