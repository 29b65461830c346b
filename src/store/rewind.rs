//! Accepting a rewound store: the operator's answer to `STORE_REWOUND`.

use serde::Serialize;

use super::witness::{AtWitnessed, Seen, Trimmed, Witness, judge};
use super::{Store, epoch};
use crate::error::{Error, Result};
use crate::model::{AuditEntry, ChainCounts};

/// The audit action of an accepted rewind.
pub const ACCEPT_REWIND_ACTION: &str = "accept-rewind";

/// What [`Store::accept_rewind`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AcceptedRewind {
    /// The new store epoch.
    pub epoch: u64,
    /// Every generation minted from now on is above this one.
    pub generation_floor: u64,
    /// Leases and work items whose generation was raised to the floor.
    pub raised: u64,
    /// The revision the acceptance committed as.
    pub revision: u64,
    /// What this host's witness held before (`None`: no witness, or it had seen nothing).
    pub witnessed: Option<Seen>,
}

/// What accepting the store as it is would give up, as far as this host can tell: the
/// store as it is now against what this host's witness saw of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RewindCost {
    /// What the store shows now.
    pub store: Seen,
    /// What this host's witness holds (`None`: no witness, or it had seen nothing).
    pub witnessed: Option<Seen>,
    /// Commits this host saw acknowledged that the store no longer holds (the witnessed
    /// revision less the store's), when the store is the one the witness saw, in its epoch.
    pub lost_commits: Option<u64>,
    /// Acknowledged completions and generations minted that this host saw and the store
    /// lacks, from the chain's counts: `None` when the witness kept no counts (written by
    /// an older build) or saw another store or epoch.
    pub lost: Option<LostWork>,
    /// Whether there is a rewind to accept: the writers on this host refuse the store, or
    /// this host has no record to judge it by. `false` once a rewind was accepted and the
    /// witness moved with it.
    pub rewound: bool,
}

/// What a rewound store lacks of the history a host saw, counted from the chain.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LostWork {
    /// The counts this host saw less the store's at the last link both share (the store's
    /// head, for a store behind what this host saw), or at a link past it.
    pub counts: ChainCounts,
    /// `true` when the last shared link is not known (the store went on along another
    /// history): the store's counts were taken at or after the divergence, so the
    /// numbers are a floor.
    pub at_least: bool,
}

impl LostWork {
    /// "3 acknowledged completion(s) and 5 generation(s)", with "at least" when a floor.
    #[must_use]
    pub fn phrase(&self) -> String {
        format!(
            "{}{} acknowledged completion(s) and {} generation(s) minted",
            if self.at_least { "at least " } else { "" },
            self.counts.completions,
            self.counts.generations
        )
    }
}

impl RewindCost {
    /// One line for people: what is lost, and what this host cannot count.
    #[must_use]
    pub fn line(&self) -> String {
        let at = format!(
            "the store is at revision {} (epoch {})",
            self.store.revision, self.store.epoch
        );
        let again = "each may run or be granted again under the new epoch";
        match (self.witnessed, self.lost_commits, self.lost) {
            (None, ..) => format!(
                "{at}; this host has no record of it, so it cannot tell how many acknowledged commits it lacks"
            ),
            (Some(w), Some(commits), Some(lost)) if commits > 0 => format!(
                "{at}, this host saw revision {}: {commits} commit(s) are lost, holding {} — {again}",
                w.revision,
                lost.phrase()
            ),
            (Some(w), _, Some(lost)) => format!(
                "{at}, this host saw revision {} and the store's history diverges at or before it: the store lacks {} that this host saw — {again}",
                w.revision,
                lost.phrase()
            ),
            (Some(w), Some(commits), None) => format!(
                "{at}, this host saw revision {}: {commits} commit(s) are lost; this host's record predates the chain's counts, so it cannot count the completions and grants (generations) among them — {again}",
                w.revision
            ),
            (Some(w), None, None) => format!(
                "{at}, this host saw revision {} of epoch {}: it is not the same store in the same epoch, so the commits lost cannot be counted",
                w.revision, w.epoch
            ),
        }
    }
}

impl Store {
    /// What accepting the store now would give up, judged by this handle's witness (see
    /// [`RewindCost`]); writes nothing.
    ///
    /// # Errors
    /// `STORE_CORRUPT` for a store without an identity, or a store failure.
    pub fn rewind_cost(&self) -> Result<RewindCost> {
        // The record that refuses the store, else the first one there is.
        let mut judged = Vec::new();
        for seen in self.witnesses().filter_map(Witness::seen) {
            let (store, at) = Seen::against(self, Some(&seen))?;
            let refused = judge(Some(seen), store, at.as_ref()).is_err();
            judged.push((seen, store, at, refused));
        }
        let pick = judged
            .iter()
            .position(|j| j.3)
            .or((!judged.is_empty()).then_some(0));
        let Some((seen, store, at, refused)) = pick.map(|i| judged.swap_remove(i)) else {
            return Ok(RewindCost {
                store: Seen::of(self)?,
                witnessed: None,
                lost_commits: None,
                lost: None,
                rewound: true,
            });
        };
        let same = seen.store_id == store.store_id && seen.epoch == store.epoch;
        let lost_commits =
            (same && store.revision < seen.revision).then(|| seen.revision - store.revision);
        let lost = seen.counts.filter(|_| same && refused).map(|saw| {
            let (shared, at_least) = match &at {
                // Trimmed past the witnessed revision, the store diverged at or below its
                // oldest kept link's counts.
                Some(
                    AtWitnessed::Link(l)
                    | AtWitnessed::Trimmed(Trimmed {
                        oldest: Some(l), ..
                    }),
                ) => (l.counts, true),
                _ => (
                    store.counts.unwrap_or_default(),
                    store.revision >= seen.revision,
                ),
            };
            LostWork {
                counts: saw.beyond(shared),
                at_least,
            }
        });
        Ok(RewindCost {
            store,
            witnessed: Some(seen),
            lost_commits,
            lost,
            rewound: refused,
        })
    }

    /// Accepts the store as it is now: starts the next epoch (every lease's and work item's
    /// generation raised to its floor, so a generation handed out before the rewind is never
    /// handed out again; see `store/epoch.rs`), audits it under `actor` with `reason`, and
    /// makes this handle's witnesses, if any, adopt the store. The one write that skips the
    /// witness check: the store is behind it by definition.
    ///
    /// # Errors
    /// `STORE_CORRUPT` for a damaged store or an epoch out of range, `STORE_UNAVAILABLE`
    /// when the witness cannot be written, or a store failure.
    pub fn accept_rewind(&self, actor: &str, reason: Option<&str>) -> Result<AcceptedRewind> {
        let now = self.clock.now();
        let witnessed = self.witnesses().find_map(Witness::seen);
        let mut out = None;
        self.backend.write(&mut |tx| {
            let before = Seen::read(tx)?;
            let (next, raised) = epoch::advance(tx)?;
            let outcome = serde_json::json!({
                "epoch": next,
                "fromRevision": before.revision,
                "witnessedRevision": witnessed.map(|w| w.revision),
                "raised": raised,
                "reason": reason,
            });
            tx.add_audit(&AuditEntry {
                id: 0,
                at: now,
                actor: actor.into(),
                action: ACCEPT_REWIND_ACTION.into(),
                target: self.describe(),
                outcome: outcome.to_string(),
            })?;
            self.chain(tx, before.revision)?;
            out = Some(AcceptedRewind {
                epoch: next,
                generation_floor: epoch::floor(next)?,
                raised,
                revision: tx.revision()?,
                witnessed,
            });
            Ok(())
        })?;
        let accepted = out.ok_or_else(|| {
            Error::OutcomeUnknown("the acceptance committed without an answer".into())
        })?;
        let now = Seen::of(self)?;
        for w in self.witnesses() {
            w.adopt(now)?;
        }
        Ok(accepted)
    }
}
