//! The handlers a definition's actions are judged against: the application's, never an
//! assumed list.
//!
//! An action step runs the handler of its name, so a definition is executable only where
//! some authority has that handler. Which handlers an application has is known in two
//! places: the handler config its authorities are started with (`--config FILE`) and the
//! registry, where every authority records the handlers and versions it runs. A
//! [`HandlerSet`] is the union of whichever of those (and, when asked for by name, a
//! built-in demo workload) the caller gives, and remembers where each part came from, so
//! the operator is told what the actions were judged against.
//!
//! Event types have no registry (any producer may publish any type), so a set built from
//! a config or the fleet leaves them unchecked; only a built-in workload, whose events are
//! known, checks them.

use std::collections::{BTreeMap, BTreeSet};

use super::Catalog;
use crate::model::HandlerVersion;

/// Where part of a [`HandlerSet`] came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// A handler config file, as it was named.
    Config(String),
    /// The authorities' registrations in the store.
    Fleet,
    /// A built-in demo workload, by name.
    Workload(String),
}

/// The handlers (each at the versions its sources declare) that actions are judged
/// against, with the account of where they came from.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HandlerSet {
    handlers: BTreeMap<String, BTreeSet<HandlerVersion>>,
    /// Each source given, with how many handlers it declared.
    sources: Vec<(Source, usize)>,
    /// The event types known, or `None` when some source cannot tell (any type passes).
    events: Option<BTreeSet<String>>,
}

impl HandlerSet {
    /// The set with the handlers of `source` added (a name already present gains the
    /// versions given here). A source that declares no handler is still recorded, so the
    /// account says it was consulted.
    #[must_use]
    pub fn with(
        mut self,
        source: Source,
        handlers: impl IntoIterator<Item = (String, HandlerVersion)>,
    ) -> Self {
        let mut names = BTreeSet::new();
        for (name, version) in handlers {
            names.insert(name.clone());
            self.handlers.entry(name).or_default().insert(version);
        }
        let events = match &source {
            Source::Workload(_) => Some(Catalog::demo().events),
            Source::Config(_) | Source::Fleet => None,
        };
        self.events = match (self.sources.is_empty(), self.events.take(), events) {
            (true, _, events) => events,
            (false, Some(mut have), Some(more)) => {
                have.extend(more);
                Some(have)
            }
            _ => None,
        };
        self.sources.push((source, names.len()));
        self
    }

    /// Whether no source declared any handler.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.handlers.is_empty()
    }

    /// Whether no source was given at all.
    #[must_use]
    pub fn is_unset(&self) -> bool {
        self.sources.is_empty()
    }

    /// The handler names, sorted.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.handlers.keys().map(String::as_str)
    }

    /// What the actions were judged against, in words: `actions judged against 2 handlers
    /// from handlers.toml and 3 registered by the fleet`.
    #[must_use]
    pub fn describe(&self) -> String {
        format!("actions judged against {}", self.account())
    }

    /// Each source and how many handlers it gave: `2 handlers from handlers.toml and 3
    /// registered by the fleet`.
    #[must_use]
    pub fn account(&self) -> String {
        let parts: Vec<String> = self
            .sources
            .iter()
            .map(|(source, n)| {
                let handlers = if *n == 1 { "handler" } else { "handlers" };
                match source {
                    Source::Config(file) => format!("{n} {handlers} from {file}"),
                    Source::Fleet if *n == 0 => "none registered by the fleet".to_owned(),
                    Source::Fleet => format!("{n} registered by the fleet"),
                    Source::Workload(name) => {
                        format!("{n} {handlers} of the built-in `{name}` workload")
                    }
                }
            })
            .collect();
        match parts.split_last() {
            None => "no handler".to_owned(),
            Some((last, [])) => last.clone(),
            Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
        }
    }

    /// The validator's catalog of this set. Each action's handler enters the semantic
    /// fingerprint at the compatibility part of its newest version here (`1.4.2` → `1`,
    /// as the built-in catalog's `1`): the same definition judged against a config, the
    /// fleet or both fingerprints alike while they agree on the major version, and the
    /// versions that decide who runs an instance are in its compatibility key anyway.
    #[must_use]
    pub fn catalog(&self) -> Catalog {
        Catalog {
            actions: self
                .handlers
                .iter()
                .filter_map(|(name, versions)| {
                    let newest = versions.iter().max_by_key(|v| release_order(v))?;
                    Some((name.clone(), newest.compatibility_part().to_owned()))
                })
                .collect(),
            any_event: self.events.is_none(),
            events: self.events.clone().unwrap_or_default(),
            accept_unknown: false,
        }
    }
}

/// A version's release order: its dotted parts, numbers compared as numbers (`10.0.0`
/// after `9.1.0`), so "newest" does not depend on how the text sorts.
fn release_order(version: &HandlerVersion) -> Vec<(u64, String)> {
    version
        .as_str()
        .split(['.', '-', '+'])
        .map(|part| (part.parse().unwrap_or(0), part.to_owned()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(text: &str) -> HandlerVersion {
        HandlerVersion::parse(text).expect(text)
    }

    #[test]
    fn the_account_names_every_source_and_the_union_is_judged() {
        let set = HandlerSet::default()
            .with(
                Source::Config("handlers.toml".into()),
                [
                    ("send-email".to_owned(), v("1.0.0")),
                    ("resize-image".to_owned(), v("1.2.0")),
                ],
            )
            .with(
                Source::Fleet,
                [
                    ("resize-image".to_owned(), v("1.4.0")),
                    ("charge-card".to_owned(), v("2.0.0")),
                ],
            );
        assert_eq!(
            set.describe(),
            "actions judged against 2 handlers from handlers.toml and 2 registered by the fleet"
        );
        assert_eq!(
            set.names().collect::<Vec<_>>(),
            ["charge-card", "resize-image", "send-email"]
        );
        let catalog = set.catalog();
        assert_eq!(catalog.actions["resize-image"], "1");
        assert_eq!(catalog.actions["charge-card"], "2");
        let upgraded = set.with(Source::Fleet, [("charge-card".to_owned(), v("10.0.0"))]);
        assert_eq!(
            upgraded.catalog().actions["charge-card"],
            "10",
            "numbers, not text"
        );
        assert!(catalog.has_event("anything-an-application-publishes"));
        assert!(!catalog.has_action("resize-images"));
    }

    #[test]
    fn only_a_built_in_workload_knows_its_events() {
        let demo = HandlerSet::default().with(
            Source::Workload("default".into()),
            [("reserve-stock".to_owned(), v("1.0.0"))],
        );
        assert!(demo.catalog().has_event("payment-received"));
        assert!(!demo.catalog().has_event("payment-recieved"));
        assert_eq!(
            demo.describe(),
            "actions judged against 1 handler of the built-in `default` workload"
        );
        let with_fleet = demo.with(Source::Fleet, []);
        assert!(with_fleet.catalog().has_event("payment-recieved"));
        assert!(!with_fleet.is_empty() && !with_fleet.is_unset());
        assert!(HandlerSet::default().is_unset());
    }
}
