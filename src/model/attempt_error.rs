//! The errors of an item's attempts: a bounded list per work item, newest kept, so a
//! person sees how its attempts failed, not only how the last one did.

use serde::{Deserialize, Serialize};

use crate::clock::Millis;
use crate::model::{Failure, FailureClass, WorkItem};

/// How many attempt errors an item keeps: the newest, the older ones dropped as new
/// ones are written.
pub const ATTEMPT_ERRORS_KEPT: usize = 20;

/// The longest message an attempt error keeps, in bytes; a longer one is cut at a
/// character boundary and marked with `…`.
pub const MAX_ATTEMPT_ERROR_MESSAGE_BYTES: usize = 2_048;

/// The failure code of an attempt whose claim lapsed without a recorded outcome and was
/// taken over with attempts left (the last one's is the dead letter's own code).
pub const LAPSED_CODE: &str = "LAPSED";

/// One failed (or lapsed) attempt of a work item. Keyed by the item and the attempt's
/// generation, which is unique per attempt and only grows, so a requeue's attempts,
/// numbered from 1 again, never collide with the ones before it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AttemptError {
    pub work_id: String,
    /// The claim generation the attempt ran under.
    pub generation: u64,
    /// The attempt's number in the item's budget (1-based).
    pub attempt: u32,
    /// Who ran it.
    pub owner_id: String,
    /// When its failure was recorded (or its lapse settled).
    pub at: Millis,
    pub class: FailureClass,
    pub code: String,
    /// At most [`MAX_ATTEMPT_ERROR_MESSAGE_BYTES`].
    pub message: String,
}

impl AttemptError {
    /// The error of the attempt `item` held under `owner` and `generation` (the item as it
    /// was claimed for that attempt, or as its failure left it), failed with `failure` at
    /// `at`.
    #[must_use]
    pub fn of(
        item: &WorkItem,
        owner: &str,
        generation: u64,
        failure: &Failure,
        at: Millis,
    ) -> Self {
        Self {
            work_id: item.id.clone(),
            generation,
            attempt: item.attempt_number,
            owner_id: owner.to_owned(),
            at,
            class: failure.class,
            code: failure.code.clone(),
            message: truncated(&failure.message),
        }
    }
}

/// `message` cut to [`MAX_ATTEMPT_ERROR_MESSAGE_BYTES`] at a character boundary.
fn truncated(message: &str) -> String {
    if message.len() <= MAX_ATTEMPT_ERROR_MESSAGE_BYTES {
        return message.to_owned();
    }
    let mut end = MAX_ATTEMPT_ERROR_MESSAGE_BYTES - '…'.len_utf8();
    while !message.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &message[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_messages_are_cut_at_a_character_boundary() {
        let long = "é".repeat(MAX_ATTEMPT_ERROR_MESSAGE_BYTES);
        let cut = truncated(&long);
        assert!(
            cut.len() <= MAX_ATTEMPT_ERROR_MESSAGE_BYTES,
            "{}",
            cut.len()
        );
        assert!(cut.ends_with('…'));
        assert_eq!(truncated("short"), "short");
    }
}
