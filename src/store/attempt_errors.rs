//! The errors of an item's attempts (`model/attempt_error.rs`): written in the transaction
//! that records a failure or settles a lapse, bounded per item, read by `work show` and the
//! dashboard's describe.

use super::{Store, Tx};
use crate::clock::Millis;
use crate::error::Result;
use crate::model::attempt_error::{ATTEMPT_ERRORS_KEPT, LAPSED_CODE};
use crate::model::{AttemptError, Failure, FailureClass, WorkItem, WorkKind};

/// Records the failure `failed` (an item as a fenced failure left it) of the attempt that
/// `owner` ran under `generation`.
pub(super) fn record_failure(
    tx: &mut dyn Tx,
    failed: &WorkItem,
    owner: &str,
    generation: u64,
    now: Millis,
) -> Result<()> {
    let Some(failure) = &failed.last_failure else {
        return Ok(());
    };
    let error = AttemptError::of(failed, owner, generation, failure, now);
    tx.add_attempt_error(&error, ATTEMPT_ERRORS_KEPT)
}

/// The attempt a lapsed claim held, as its takeover found it, before the claim settled it.
pub(super) struct Lapsed {
    owner: String,
    generation: u64,
}

impl Lapsed {
    /// The lapsed attempt of `item`, if it is a claim that a takeover would settle (a
    /// cursor's turns are no attempts).
    pub(super) fn of(item: &WorkItem) -> Option<Self> {
        (item.state == crate::model::WorkState::Claimed && item.kind != WorkKind::Cursor).then(
            || Self {
                owner: item.owner_id.clone().unwrap_or_default(),
                generation: item.generation,
            },
        )
    }

    /// Records it once `taker` has settled it into `settled` (claimed again, or the dead
    /// letter that ended it).
    pub(super) fn record(
        self,
        tx: &mut dyn Tx,
        settled: &WorkItem,
        taker: &str,
        now: Millis,
    ) -> Result<()> {
        let failure = match (&settled.last_failure, settled.state.is_terminal()) {
            (Some(dead), true) => dead.clone(),
            _ => Failure {
                class: FailureClass::Retryable,
                code: LAPSED_CODE.into(),
                message: format!(
                    "claimed by {} under generation {}, lapsed without a recorded outcome; taken over by {taker}",
                    self.owner, self.generation
                ),
            },
        };
        // A claim that ran again numbers the next attempt: the lapsed one is the one before.
        let attempt = if settled.state.is_terminal() {
            settled.attempt_number
        } else {
            settled.attempt_number.saturating_sub(1)
        };
        let error = AttemptError {
            attempt,
            ..AttemptError::of(settled, &self.owner, self.generation, &failure, now)
        };
        tx.add_attempt_error(&error, ATTEMPT_ERRORS_KEPT)
    }
}

impl Store {
    /// The errors of item `id`'s attempts, newest first, at most
    /// [`ATTEMPT_ERRORS_KEPT`]; none for an unknown item.
    ///
    /// # Errors
    /// A store failure.
    pub fn attempt_errors(&self, id: &str) -> Result<Vec<AttemptError>> {
        self.read(|tx| tx.attempt_errors(id))
    }
}
