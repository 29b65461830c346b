//! Invariant 11 (docs/ARCHITECTURE.md#checker): no event wait reaches back past the retained
//! journal. The judgement is [`crate::workflow::engine::lost_waits`], shared with the
//! triage list; this file words the finding.

use super::Findings;
use super::codes::WAIT_PAST_RETENTION;
use crate::model::InstanceRow;
pub(super) use crate::workflow::engine::lost_waits::JournalWindow;
use crate::workflow::engine::lost_waits::{LostWait, lost_wait};

/// A waiting instance's `sinceEventSeq` is not below the trimmed part of the journal.
pub(super) fn wait_within_retention(
    row: &InstanceRow,
    journal: JournalWindow,
    findings: &mut Findings,
) {
    let Some(LostWait {
        event,
        since_event_seq,
    }) = lost_wait(row, journal)
    else {
        return;
    };
    findings.push(
        WAIT_PAST_RETENTION,
        vec![row.instance_id.clone()],
        format!(
            "workflow instance {} waits for a {event} event after journal seq {since_event_seq}, but the journal was trimmed through seq {}: events {} to {} are gone, the one it waits for may be among them",
            row.instance_id,
            journal.trimmed_through,
            since_event_seq + 1,
            journal.trimmed_through
        ),
    );
}
