//! Whether anyone running can run an item: its build (compatibility digest) and its
//! handler, judged from the running authorities' registrations.
//!
//! An authority registers the handlers it runs (name → version) in its registration's
//! config. An item is **runnable** when some running authority has its digest and its
//! handler; with the digest but without the handler it reads **no handler**: it stays
//! pending (an authority that claims it hands it back without counting an attempt) until
//! an authority with the handler starts. A registration written before authorities
//! declared their handlers counts as having every handler.

use std::collections::{BTreeMap, BTreeSet};

use crate::model::Authority;

/// What the running authorities can run, by compatibility digest.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Runnable {
    /// Per digest, the union of the handlers declared; `None` once any authority under it
    /// declared none (it may run anything).
    by_compat: BTreeMap<String, Option<BTreeSet<String>>>,
}

/// How an item stands against the running authorities.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Standing {
    /// Some running authority has its build and its handler.
    Runnable,
    /// Some running authority has its build, none has its handler.
    NoHandler,
    /// No running authority has its build.
    Incompatible,
}

impl Runnable {
    /// From the authorities that are running (the caller judges liveness).
    pub fn of<'a>(running: impl IntoIterator<Item = &'a Authority>) -> Self {
        let mut by_compat: BTreeMap<String, Option<BTreeSet<String>>> = BTreeMap::new();
        for authority in running {
            let declared = declared_handlers(&authority.config);
            let entry = by_compat
                .entry(authority.compat.clone())
                .or_insert_with(|| Some(BTreeSet::new()));
            match (entry.as_mut(), declared) {
                (Some(union), Some(handlers)) => union.extend(handlers),
                (Some(_), None) => *entry = None,
                (None, _) => {}
            }
        }
        Self { by_compat }
    }

    /// Whether some running authority runs under `compat`.
    #[must_use]
    pub fn compatible(&self, compat: &str) -> bool {
        self.by_compat.contains_key(compat)
    }

    /// How an item of `handler` under `compat` stands.
    #[must_use]
    pub fn standing(&self, compat: &str, handler: &str) -> Standing {
        match self.by_compat.get(compat) {
            None => Standing::Incompatible,
            Some(Some(handlers)) if !handlers.contains(handler) => Standing::NoHandler,
            Some(_) => Standing::Runnable,
        }
    }

    /// The running digests, sorted.
    pub fn digests(&self) -> impl Iterator<Item = &String> {
        self.by_compat.keys()
    }

    /// Whether no authority is running.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.by_compat.is_empty()
    }
}

/// The handler names a registration's config declares, if it declares any.
fn declared_handlers(config: &str) -> Option<BTreeSet<String>> {
    let config: serde_json::Value = serde_json::from_str(config).ok()?;
    let handlers = config.get("handlers")?.as_object()?;
    Some(handlers.keys().cloned().collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn authority(compat: &str, config: &str) -> Authority {
        Authority {
            instance_id: format!("a-{compat}"),
            compat: compat.into(),
            build: "v1".into(),
            config: config.into(),
            started_at: 0,
            heartbeat_at: 0,
            stopped_at: None,
            host: "h".into(),
            pid: 1,
        }
    }

    #[test]
    fn an_item_needs_its_build_and_its_handler() {
        let declared = authority("k1", r#"{"handlers":{"send-email":"1.0.0"}}"#);
        let legacy = authority("k2", r#"{"leaseDurationMs":30000}"#);
        let runnable = Runnable::of([&declared, &legacy]);
        assert_eq!(runnable.standing("k1", "send-email"), Standing::Runnable);
        assert_eq!(runnable.standing("k1", "charge-card"), Standing::NoHandler);
        assert_eq!(
            runnable.standing("k2", "anything"),
            Standing::Runnable,
            "undeclared"
        );
        assert_eq!(
            runnable.standing("k3", "send-email"),
            Standing::Incompatible
        );
        assert!(runnable.compatible("k1") && !runnable.compatible("k3"));
    }

    #[test]
    fn authorities_of_one_build_pool_their_handlers() {
        let a = authority("k", r#"{"handlers":{"a":"1.0.0"}}"#);
        let b = authority("k", r#"{"handlers":{"b":"2.0.0"}}"#);
        let runnable = Runnable::of([&a, &b]);
        assert_eq!(runnable.standing("k", "a"), Standing::Runnable);
        assert_eq!(runnable.standing("k", "b"), Standing::Runnable);
        assert_eq!(runnable.standing("k", "c"), Standing::NoHandler);
    }
}
