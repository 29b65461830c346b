//! Whether an authority's poll would find anything to do, asked in a read snapshot before
//! it takes the write lock.
//!
//! Every poll is a write transaction, and on a store shared by many authorities the write
//! lock is the one thing they queue for: a poll that fires nothing and claims nothing still
//! takes a turn, and with short poll intervals idle or saturated authorities fill the lock
//! with such turns while the busy ones wait behind them. An authority whose last poll found
//! nothing, or that has no free slot, first reads whether a poll could act now — with the
//! very reads the claim makes (`fair_share::claim_candidates` behind the same handler gate,
//! the workflow engine's runnable instances, due schedules, waiting intake) — and takes the
//! lock only if so. The read sees the store as it was a moment before the write would have:
//! what commits after it is found by the next poll, as it would have been had the poll
//! come a moment earlier.

use super::fair_share::{Rotation, claim_candidates};
use super::handler_control::gate;
use super::{ClaimBudget, Store};
use crate::error::Result;
use crate::model::compat::CompatSet;

/// What a poll could do with the slots it has.
pub(crate) enum Probe<'a> {
    /// No free slot: only due schedules would be fired.
    SchedulesOnly,
    /// Free slots: schedules, waiting intake, and work items and workflow instances for
    /// `keys` (work items within `budget`).
    Everything {
        owner: &'a str,
        keys: &'a CompatSet,
        budget: &'a ClaimBudget,
    },
}

impl Store {
    /// Whether a poll described by `probe` would fire, move or claim anything now.
    ///
    /// # Errors
    /// A store failure.
    pub(crate) fn poll_would_act(&self, probe: &Probe<'_>) -> Result<bool> {
        let now = self.now();
        let rotation = match probe {
            Probe::Everything { owner, .. } => self.rotations.get(owner).unwrap_or_default(),
            Probe::SchedulesOnly => Rotation::default(),
        };
        self.read(|tx| {
            if !tx.due_schedules(now, 1)?.is_empty() {
                return Ok(true);
            }
            let Probe::Everything { keys, budget, .. } = probe else {
                return Ok(false);
            };
            if tx.intake_counts()?.waiting > 0 {
                return Ok(true);
            }
            for compat in keys.iter() {
                if !tx.runnable_instances(compat, now, 1)?.is_empty() {
                    return Ok(true);
                }
            }
            let gated = gate(tx, now, budget)?;
            let (candidates, _) = claim_candidates(tx, keys, now, &gated, &rotation)?;
            Ok(!candidates.is_empty())
        })
    }
}
