//! The errors of an item's attempts (`model/attempt_error.rs`): written in the transaction
//! that records a failure or settles a lapse (or a force-release), bounded per item, read by `work show` and the
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

/// The attempt a lapsed (or force-released) claim held, as the write that settles it found
/// it, before it was settled.
pub(super) struct Lapsed {
    owner: String,
    generation: u64,
    attempt: u32,
}

impl Lapsed {
    /// The unfinished attempt of `item`, if it is a claim that a takeover or a release
    /// would settle (a cursor's turns are no attempts).
    pub(super) fn of(item: &WorkItem) -> Option<Self> {
        (item.state == crate::model::WorkState::Claimed && item.kind != WorkKind::Cursor).then(
            || Self {
                owner: item.owner_id.clone().unwrap_or_default(),
                generation: item.generation,
                attempt: item.attempt_number,
            },
        )
    }

    /// Records it once it was settled into `settled` (claimed again, pending again, or the
    /// dead letter that ended it); `how` says by whom (`taken over by b`).
    pub(super) fn record(
        self,
        tx: &mut dyn Tx,
        settled: &WorkItem,
        how: &str,
        now: Millis,
    ) -> Result<()> {
        let failure = match (&settled.last_failure, settled.state.is_terminal()) {
            (Some(dead), true) => dead.clone(),
            _ => Failure {
                class: FailureClass::Retryable,
                code: LAPSED_CODE.into(),
                message: format!(
                    "claimed by {} under generation {}, ended without a recorded outcome; {how}",
                    self.owner, self.generation
                ),
            },
        };
        let error = AttemptError {
            attempt: self.attempt,
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
