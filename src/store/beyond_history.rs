//! A store whose retention trimmed the history past the revision a host's witness saw
//! (`store/witness.rs`): the link there is gone, so the store is judged by what survives.
//!
//! Two things survive a trim. The chain's milestones (`chain.rs::MILESTONE`) keep their
//! links, and a witness keeps the link of the latest milestone at or below the revision it
//! saw (read when its revision crosses one, not on every write): a store whose link
//! differs there is a fork. The counts of the oldest link kept are cumulative along one
//! history, so on the witnessed history they are at least the witness's: fewer is a
//! rewind. Whatever lies between the milestone and the witnessed revision cannot be
//! compared; that is named (`BeyondHistory`: a writer logs `witness-beyond-history` once,
//! `leasehold check` reports it as a warning), never taken in silence.

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::chain::milestone_at_or_below;
use super::witness::{AtWitnessed, Seen, forked, judge, read_record, record_path};
use super::{Store, Tx};
use crate::error::Result;
use crate::model::{ChainLink, LinkHash};

/// A milestone's link, as a witness keeps it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Milestone {
    pub revision: u64,
    pub link: LinkHash,
}

impl Milestone {
    /// The link of the milestone at or below `revision`, when the store keeps one.
    ///
    /// # Errors
    /// A store failure.
    pub fn read(tx: &mut dyn Tx, revision: u64) -> Result<Option<Self>> {
        let at = milestone_at_or_below(revision);
        if at == 0 {
            return Ok(None);
        }
        Ok(tx.link(at)?.map(|l| Self {
            revision: l.revision,
            link: l.link,
        }))
    }
}

/// What a store trimmed past the witnessed revision still shows of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Trimmed {
    /// The first revision whose history it keeps.
    pub from: u64,
    /// Its oldest link from there on.
    pub oldest: Option<ChainLink>,
    /// Its link at the witness's milestone, if the witness has one and the store keeps it.
    pub milestone: Option<ChainLink>,
}

impl Trimmed {
    /// What `tx` shows of the history `seen` names, trimmed below `from`.
    ///
    /// # Errors
    /// A store failure.
    pub(super) fn read(tx: &mut dyn Tx, seen: &Seen, from: u64) -> Result<Self> {
        Ok(Self {
            from,
            oldest: tx.links(from.saturating_sub(1), 1)?.into_iter().next(),
            milestone: match seen.milestone {
                Some(m) => tx.link(m.revision)?,
                None => None,
            },
        })
    }

    /// Why a store showing `now` and this is not the history `seen` names, as far as what
    /// survived the trim can tell.
    pub(super) fn judge(&self, seen: &Seen, now: &Seen) -> std::result::Result<(), String> {
        if let (Some(was), Some(is)) = (seen.milestone, &self.milestone)
            && was.link != is.link
        {
            return Err(forked(
                seen,
                now,
                &format!(
                    "its link at milestone revision {} is {}, this host saw {} there",
                    was.revision,
                    is.link.short(),
                    was.link.short()
                ),
            ));
        }
        match (seen.counts, &self.oldest) {
            (Some(was), Some(oldest))
                if oldest.counts.generations < was.generations
                    || oldest.counts.completions < was.completions =>
            {
                Err(format!(
                    "at revision {} it counts {} generations and {} completions, fewer than the {} and {} this host saw at revision {}: commits were lost",
                    oldest.revision,
                    oldest.counts.generations,
                    oldest.counts.completions,
                    was.generations,
                    was.completions,
                    seen.revision
                ))
            }
            _ => Ok(()),
        }
    }
}

/// A witnessed revision the store keeps no history for any more, taken as far as the
/// milestone and the counts could judge it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BeyondHistory {
    /// The revision the witness saw.
    pub witnessed: u64,
    /// The first revision whose history the store keeps.
    pub oldest: u64,
    /// The milestone at which the store's link was compared (and matched).
    pub milestone: Option<u64>,
}

impl Store {
    /// Logs `witness-beyond-history` for `beyond`, once for each trim through this handle
    /// and its clones: the host's record and the one beside the store each judge the same
    /// trim, at open and at the next write, and an operator reads one line for it.
    pub(super) fn say_beyond_history(&self, beyond: &BeyondHistory) {
        let said = self
            .beyond_said
            .fetch_max(beyond.oldest, std::sync::atomic::Ordering::Relaxed);
        if said < beyond.oldest {
            tracing::warn!(
                store = self.describe().as_str(),
                witnessed = beyond.witnessed,
                oldest = beyond.oldest,
                detail = beyond.sentence().as_str(),
                "witness-beyond-history"
            );
        }
    }
}

impl BeyondHistory {
    pub(super) fn of(seen: &Seen, trimmed: &Trimmed) -> Self {
        Self {
            witnessed: seen.revision,
            oldest: trimmed.from,
            milestone: trimmed
                .milestone
                .as_ref()
                .filter(|_| seen.milestone.is_some())
                .map(|l| l.revision),
        }
    }

    /// One line for people.
    #[must_use]
    pub fn sentence(&self) -> String {
        let compared = match self.milestone {
            Some(m) => format!(
                "its link at milestone revision {m} and its counts match what this host saw, but a fork between revisions {m} and {} cannot be seen",
                self.witnessed
            ),
            None => format!(
                "only its counts could be compared (no milestone link this host saw is kept): a fork at or before revision {} cannot be seen",
                self.witnessed
            ),
        };
        format!(
            "this host saw revision {}, but the store keeps history only from revision {}: {compared}",
            self.witnessed, self.oldest
        )
    }

    /// Judges `store` by this host's witness in `dir` and by the record beside it, as
    /// [`super::witness::Rewound::find`] does: what the writers would take although it was
    /// trimmed past the revision a witness saw.
    ///
    /// # Errors
    /// As [`super::witness::Rewound::find`].
    pub fn find(dir: &Path, store: &Store) -> Result<Option<Self>> {
        let beside = store.backend.witness_beside();
        for path in std::iter::once(record_path(dir, store)).chain(beside) {
            let Some(witnessed) = read_record(&path)? else {
                continue;
            };
            let (now, at) = Seen::against(store, Some(&witnessed))?;
            if let Some(AtWitnessed::Trimmed(t)) = &at
                && judge(Some(witnessed), now, at.as_ref()).is_ok()
            {
                return Ok(Some(Self::of(&witnessed, t)));
            }
        }
        Ok(None)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::model::ChainCounts;

    fn link(revision: u64, byte: u8, generations: u64) -> ChainLink {
        ChainLink {
            revision,
            link: LinkHash([byte; 32]),
            nonce: "n".into(),
            counts: ChainCounts {
                generations,
                completions: 0,
            },
        }
    }

    /// What a host saw at revision 70,000, its milestone 65,536 with link byte 1.
    fn seen() -> Seen {
        let at = link(70_000, 7, 10);
        Seen {
            store_id: 7,
            epoch: 0,
            revision: at.revision,
            link: Some(at.link),
            counts: Some(at.counts),
            server: None,
            milestone: Some(Milestone {
                revision: 65_536,
                link: LinkHash([1; 32]),
            }),
        }
    }

    fn now() -> Seen {
        Seen {
            revision: 80_000,
            milestone: None,
            ..seen()
        }
    }

    fn trimmed(milestone: Option<ChainLink>, oldest_generations: u64) -> AtWitnessed {
        AtWitnessed::Trimmed(Trimmed {
            from: 75_000,
            oldest: Some(link(75_000, 9, oldest_generations)),
            milestone,
        })
    }

    #[test]
    fn a_store_trimmed_past_the_witness_is_judged_by_its_milestone_and_counts() {
        let same = trimmed(Some(link(65_536, 1, 5)), 12);
        assert!(judge(Some(seen()), now(), Some(&same)).is_ok());
        let AtWitnessed::Trimmed(t) = &same else {
            unreachable!()
        };
        let named = BeyondHistory::of(&seen(), t);
        assert_eq!(named.milestone, Some(65_536));
        assert!(
            named
                .sentence()
                .contains("between revisions 65536 and 70000")
        );

        let why = judge(
            Some(seen()),
            now(),
            Some(&trimmed(Some(link(65_536, 2, 5)), 12)),
        );
        assert!(why.unwrap_err().contains("at milestone revision 65536"));

        let why = judge(Some(seen()), now(), Some(&trimmed(None, 9)));
        assert!(why.unwrap_err().contains("commits were lost"));

        // The milestone not kept: only the counts are compared, and that is said.
        let counts_only = trimmed(None, 10);
        assert!(judge(Some(seen()), now(), Some(&counts_only)).is_ok());
        let AtWitnessed::Trimmed(t) = &counts_only else {
            unreachable!()
        };
        assert!(
            BeyondHistory::of(&seen(), t)
                .sentence()
                .contains("only its counts")
        );
    }

    #[test]
    fn a_witness_keeps_its_milestone_within_one_history_only() {
        let kept = judge(Some(seen()), now(), None).unwrap();
        assert_eq!(kept.milestone, seen().milestone);
        let next_epoch = Seen { epoch: 1, ..now() };
        assert_eq!(
            judge(Some(seen()), next_epoch, None).unwrap().milestone,
            None
        );
    }
}
