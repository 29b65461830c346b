//! A handler's fleet-wide controls: an operator's pause and resume
//! ([`crate::rules::handler::control`] decides), and the gate every claim passes through —
//! paused handlers take no room, rate-limited handlers the room left in their window —
//! with the window charged for what the claim took. The paused set and the windows are
//! read inside the claiming transaction, so a pause or a claim by any authority is seen by
//! the next claim of every other: there is nothing cached to invalidate.

use super::fair_share::ClaimBudget;
use super::work::Claim;
use super::{Store, Tx, record_audit};
use crate::clock::Millis;
use crate::error::{Error, Result};
use crate::ids::check_id;
use crate::model::{HandlerPause, PausedHandler, WorkItem};
use crate::rules::handler::{self as rules, Controlled, HandlerControl};

/// The answer of [`Store::control_handler`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HandlerControlled {
    /// The handler's pause as it stands afterwards (`None`: it runs).
    pub pause: Option<HandlerPause>,
    /// Whether anything changed (`false`: it was already paused, or was not paused).
    pub changed: bool,
}

impl Store {
    /// Pauses or resumes `handler` fleet-wide, audited as `actor` with `reason` (which may
    /// be empty). While paused, no authority claims its work items (a lapsed claim of it
    /// is not taken over either); attempts in flight finish as usual. The name need not be
    /// one any authority runs yet. A repeated pause, or a resume of a running handler,
    /// changes nothing and answers `changed: false` (audited as such).
    ///
    /// # Errors
    /// `INVALID` for a malformed handler name (nothing written); a store failure.
    pub fn control_handler(
        &self,
        handler: &str,
        control: HandlerControl,
        actor: &str,
        reason: &str,
    ) -> Result<HandlerControlled> {
        check_id("handler", handler)?;
        self.write(|tx, now| {
            let current = tx
                .handler_pauses()?
                .into_iter()
                .find(|p| p.handler == handler);
            let verdict = rules::control(handler, current.as_ref(), control, actor, reason, now);
            let (outcome, pause, changed) = match verdict {
                Controlled::Already => (format!("already {}", control.done()), current, false),
                Controlled::Changed(next) => {
                    tx.commit_revision()?;
                    match &next {
                        Some(pause) => tx.put_handler_pause(pause)?,
                        None => {
                            tx.delete_handler_pause(handler)?;
                        }
                    }
                    (control.done().to_owned(), next, true)
                }
            };
            record_audit(tx, now, actor, control.action(), handler, &outcome, reason)?;
            Ok(HandlerControlled { pause, changed })
        })
    }

    /// Every paused handler, by name, with how many of its items wait.
    ///
    /// # Errors
    /// A store failure.
    pub fn paused_handlers(&self) -> Result<Vec<PausedHandler>> {
        self.read(paused_in)
    }
}

/// [`Store::paused_handlers`] inside a read the caller makes more of (the overview).
pub(crate) fn paused_in(tx: &mut dyn Tx) -> Result<Vec<PausedHandler>> {
    tx.handler_pauses()?
        .into_iter()
        .map(|pause| {
            let waiting = tx.waiting_count(&pause.handler)?;
            Ok(PausedHandler { pause, waiting })
        })
        .collect()
}

/// Why a claim of `item` by name is refused while its handler is paused, if it is.
pub(crate) fn paused_refusal(tx: &mut dyn Tx, item: &WorkItem) -> Result<Option<Error>> {
    let paused = tx
        .handler_pauses()?
        .iter()
        .any(|p| p.handler == item.handler);
    Ok(paused.then(|| Error::NotClaimable {
        id: item.id.clone(),
        state: "held: its handler is paused".into(),
    }))
}

/// `budget` narrowed by the fleet's state at `now`: no room for a paused handler, and for
/// a rate-limited one no more than its window has left.
pub(crate) fn gate(tx: &mut dyn Tx, now: Millis, budget: &ClaimBudget) -> Result<ClaimBudget> {
    let mut gated = budget.clone();
    for pause in tx.handler_pauses()? {
        gated.per_handler.insert(pause.handler, 0);
    }
    for (handler, rate) in &budget.rates {
        let left = rules::room(*rate, tx.rate_window(handler)?.as_ref(), now);
        let room = gated.per_handler.entry(handler.clone()).or_insert(left);
        *room = (*room).min(left);
    }
    Ok(gated)
}

/// Counts `claimed` against the windows of the rate-limited handlers among them.
pub(crate) fn charge(
    tx: &mut dyn Tx,
    now: Millis,
    budget: &ClaimBudget,
    claimed: &[Claim],
) -> Result<()> {
    for (handler, rate) in &budget.rates {
        let n = claimed
            .iter()
            .filter(|c| c.item.handler == *handler)
            .count() as u64;
        if n == 0 {
            continue;
        }
        let window = tx.rate_window(handler)?;
        tx.commit_revision()?;
        tx.put_rate_window(&rules::charge(handler, *rate, window.as_ref(), n, now))?;
    }
    Ok(())
}
