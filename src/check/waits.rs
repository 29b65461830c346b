//! Invariant 11 (docs/ARCHITECTURE.md#checker): no event wait reaches back past the retained
//! journal. A waiting instance matches journal events with `seq > sinceEventSeq`; once the
//! journal has trimmed events above that seq (it keeps the newest
//! `RETENTION.journal_events`), the event the instance waits for may be gone, and a replay
//! after a failover could never find it.

use serde::Deserialize;

use super::Findings;
use super::codes::WAIT_PAST_RETENTION;
use crate::error::Result;
use crate::model::InstanceRow;
use crate::store::Store;
use crate::workflow::machine::Waiting;

/// How far the journal has been trimmed, read once before the instances: every seq at or
/// below `trimmed_through` is gone. The journal only ever trims more, so a window read
/// earlier than an instance can miss a lost wait but never report one that is not.
#[derive(Debug, Clone, Copy)]
pub(super) struct JournalWindow {
    trimmed_through: i64,
}

impl JournalWindow {
    /// The oldest event kept (one seek on the journal's `seq` key) and, for an empty
    /// journal, the high-water mark: everything ever appended is then gone.
    pub(super) fn read(store: &Store) -> Result<Self> {
        store.read(|tx| {
            let trimmed_through = match tx.journal_after(0, None, 1)?.first() {
                Some(oldest) => oldest.seq - 1,
                None => tx.journal_high_water()?,
            };
            Ok(Self { trimmed_through })
        })
    }
}

/// The part of an instance's machine state this check needs.
#[derive(Deserialize)]
struct Parked {
    waiting: Option<Waiting>,
}

/// A waiting instance's `sinceEventSeq` is not below the trimmed part of the journal.
pub(super) fn wait_within_retention(
    row: &InstanceRow,
    journal: JournalWindow,
    findings: &mut Findings,
) {
    if row.status.is_terminal() {
        return;
    }
    let Ok(Parked {
        waiting:
            Some(Waiting::Event {
                event,
                since_event_seq,
                ..
            }),
    }) = serde_json::from_str(&row.state)
    else {
        return;
    };
    if since_event_seq >= journal.trimmed_through {
        return;
    }
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
