//! The incremental counters: every name the store keeps a count under, built and read back
//! by one type. Providers store the name as text (`work|effect|pending|<compat>`, …), so
//! the text of each key is fixed: existing stores keep their counts.
//!
//! A failed item a person discarded is counted apart (`work|<kind>|discarded|<compat>`)
//! from the failures nobody decided: the overview, the metrics and the `state:failed`
//! filter then name the same items (SQLite schema 12 and PostgreSQL schema 11 moved the
//! counts of older stores).

use super::Tx;
use crate::error::{Error, Result};
use crate::model::{DedupOutcome, InstanceStatus, WorkGroup, WorkItem, WorkKind, WorkState};
use crate::rules::triage::is_discarded;

/// One counter. A count changes in the same transaction as the rows it counts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Counter {
    /// Work items of one (kind, state, build): `work|<kind>|<state>|<compat>`, where a
    /// discarded item's state is named `discarded` ([`WorkGroup::count_name`]).
    Work {
        kind: WorkKind,
        state: WorkState,
        /// Failed items a person discarded, apart from the other failures.
        discarded: bool,
        compat: String,
    },
    /// Workflow instances of one (status, build): `wf|<status>|<compat>`.
    Workflows {
        status: InstanceStatus,
        compat: String,
    },
    /// Ingestions by dedup outcome: `events|<outcome>`.
    Events(DedupOutcome),
    /// Claims granted, of work items: `claims`.
    Claims,
    /// Fenced writes, accepted or refused: `writes|accepted`, `writes|refused`.
    Writes { accepted: bool },
}

impl Counter {
    /// The cell `item` is counted in.
    #[must_use]
    pub fn work(item: &WorkItem) -> Self {
        Self::Work {
            kind: item.kind,
            state: item.state,
            discarded: is_discarded(item),
            compat: item.compat.clone(),
        }
    }

    /// The stored name.
    #[must_use]
    pub fn key(&self) -> String {
        match self {
            Self::Work {
                kind,
                state,
                discarded,
                compat,
            } => Self::work_key(*kind, WorkGroup::count_name(*state, *discarded), compat),
            // Joined rather than formatted: a key is built at every change of a count.
            Self::Workflows { status, compat } => ["wf|", status.as_str(), "|", compat].concat(),
            Self::Events(outcome) => format!("events|{}", outcome.as_str()),
            Self::Claims => "claims".into(),
            Self::Writes { accepted: true } => "writes|accepted".into(),
            Self::Writes { accepted: false } => "writes|refused".into(),
        }
    }

    /// The stored name of [`Self::Work`], without a copy of `compat` to build it from;
    /// `state` is what [`WorkGroup::count_name`] names.
    #[must_use]
    pub fn work_key(kind: WorkKind, state: &str, compat: &str) -> String {
        ["work|", kind.as_str(), "|", state, "|", compat].concat()
    }

    /// The name prefix every work counter of `kind` starts with: read them with
    /// [`Tx::counters`] without reading the rest.
    #[must_use]
    pub fn work_prefix(kind: WorkKind) -> String {
        format!("work|{}|", kind.as_str())
    }

    /// Reads a stored name back.
    ///
    /// # Errors
    /// `STORE_CORRUPT` naming the counter when this build does not know it: a count is
    /// never dropped without a word.
    pub fn parse(key: &str) -> Result<Self> {
        let parsed = match key.split_once('|') {
            Some(("work", rest)) => {
                let mut parts = rest.splitn(3, '|');
                let kind = parts.next().and_then(WorkKind::parse);
                let state = parts.next().and_then(|name| match name {
                    "discarded" => Some((WorkState::Failed, true)),
                    name => WorkState::parse(name).map(|state| (state, false)),
                });
                kind.zip(state)
                    .zip(parts.next())
                    .map(|((kind, (state, discarded)), compat)| Self::Work {
                        kind,
                        state,
                        discarded,
                        compat: compat.into(),
                    })
            }
            Some(("wf", rest)) => rest.split_once('|').and_then(|(status, compat)| {
                InstanceStatus::parse(status).map(|status| Self::Workflows {
                    status,
                    compat: compat.into(),
                })
            }),
            Some(("events", outcome)) => DedupOutcome::parse(outcome).map(Self::Events),
            Some(("writes", "accepted")) => Some(Self::Writes { accepted: true }),
            Some(("writes", "refused")) => Some(Self::Writes { accepted: false }),
            None if key == "claims" => Some(Self::Claims),
            _ => None,
        };
        parsed.ok_or_else(|| Error::Corrupt(format!("unknown counter {key:?}")))
    }

    /// Adds `delta` to this counter inside `tx`.
    ///
    /// # Errors
    /// A store failure.
    pub(crate) fn adjust(&self, tx: &mut dyn Tx, delta: i64) -> Result<()> {
        tx.adjust_counter(&self.key(), delta)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every counter with the exact name stores already hold.
    fn every_counter() -> Vec<(Counter, &'static str)> {
        vec![
            (
                Counter::Work {
                    kind: WorkKind::Effect,
                    state: WorkState::Pending,
                    discarded: false,
                    compat: "c1".into(),
                },
                "work|effect|pending|c1",
            ),
            (
                Counter::Work {
                    kind: WorkKind::Cursor,
                    state: WorkState::Succeeded,
                    discarded: false,
                    compat: "c|2".into(),
                },
                "work|cursor|succeeded|c|2",
            ),
            (
                Counter::Work {
                    kind: WorkKind::Effect,
                    state: WorkState::Failed,
                    discarded: true,
                    compat: "c1".into(),
                },
                "work|effect|discarded|c1",
            ),
            (
                Counter::Workflows {
                    status: InstanceStatus::Waiting,
                    compat: "c1".into(),
                },
                "wf|waiting|c1",
            ),
            (
                Counter::Events(DedupOutcome::Conflict),
                "events|EVENT_ID_CONFLICT",
            ),
            (Counter::Claims, "claims"),
            (Counter::Writes { accepted: true }, "writes|accepted"),
            (Counter::Writes { accepted: false }, "writes|refused"),
        ]
    }

    #[test]
    fn every_name_is_the_stored_text_and_reads_back() {
        for (counter, key) in every_counter() {
            assert_eq!(counter.key(), key);
            assert_eq!(Counter::parse(key).expect(key), counter);
        }
        assert!(
            Counter::work(&WorkItem::new(
                crate::model::work::NewWork::effect("e", "h", "{}"),
                "c1",
                0
            ))
            .key()
            .starts_with(&Counter::work_prefix(WorkKind::Effect))
        );
    }

    #[test]
    fn an_unknown_name_is_a_corrupt_store_naming_it() {
        for key in [
            "",
            "claim",
            "work|effect|pending",
            "work|job|pending|c1",
            "work|effect|lost|c1",
            "wf|sleeping|c1",
            "wf|running",
            "events|maybe",
            "writes|lost",
            "test|killed",
        ] {
            let err = Counter::parse(key).expect_err(key);
            assert_eq!(err.code(), "STORE_CORRUPT", "{key}");
            assert!(err.to_string().contains(&format!("{key:?}")), "{err}");
        }
    }
}
