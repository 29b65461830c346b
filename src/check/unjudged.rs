//! What the checker names but cannot judge from the store: a change of the server under
//! it (`store/server_record.rs`), and history a host's witness saw that retention has
//! trimmed (`store/witness.rs`). Commits may have been lost there, or not; the findings
//! are warnings (`gaps`, exit 0), never silence.

use super::{Violation, gap_codes};
use crate::store::server_record::ServerChange;
use crate::store::witness::BeyondHistory;

/// The finding of one change of server. Ids: `[was, is, lastRevisionOnTheOldServer]`
/// (the last empty while no writer has written on the new server).
#[must_use]
pub fn server_changed(change: &ServerChange) -> Violation {
    Violation {
        invariant: gap_codes::SERVER_CHANGED,
        ids: vec![
            change.was.to_string(),
            change.is.to_string(),
            change
                .after_revision
                .map(|r| r.to_string())
                .unwrap_or_default(),
        ],
        sentence: change.sentence(),
    }
}

/// The finding of a witnessed revision the store no longer keeps history for.
/// Ids: `[witnessedRevision, oldestKeptRevision]`.
#[must_use]
pub fn witness_beyond_history(beyond: &BeyondHistory) -> Violation {
    Violation {
        invariant: gap_codes::WITNESS_BEYOND_HISTORY,
        ids: vec![beyond.witnessed.to_string(), beyond.oldest.to_string()],
        sentence: beyond.sentence(),
    }
}
