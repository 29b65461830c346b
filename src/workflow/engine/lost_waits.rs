//! Event waits that reach back past the retained journal, judged once for the checker's
//! invariant (`wait-past-retention`) and the triage list. A waiting instance matches journal
//! events with `seq > sinceEventSeq`; once the journal has trimmed events above that seq
//! (it keeps the newest `RETENTION.journal_events`), the event the instance waits for may
//! be gone, and a replay after a failover could never find it.

use serde::Deserialize;

use crate::error::Result;
use crate::model::InstanceRow;
use crate::store::Store;
use crate::workflow::machine::Waiting;

/// How far the journal has been trimmed, read once before the instances: every seq at or
/// below `trimmed_through` is gone. The journal only ever trims more, so a window read
/// earlier than an instance can miss a lost wait but never report one that is not.
#[derive(Debug, Clone, Copy)]
pub struct JournalWindow {
    pub trimmed_through: i64,
}

impl JournalWindow {
    /// The oldest event kept (one seek on the journal's `seq` key) and, for an empty
    /// journal, the high-water mark: everything ever appended is then gone.
    ///
    /// # Errors
    /// A store failure.
    pub fn read(store: &Store) -> Result<Self> {
        store.read(|tx| {
            let trimmed_through = match tx.journal_after(0, None, 1)?.first() {
                Some(oldest) => oldest.seq - 1,
                None => tx.journal_high_water()?,
            };
            Ok(Self { trimmed_through })
        })
    }
}

/// An unfinished instance waiting for an event the journal may no longer hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LostWait {
    /// The event type it waits for.
    pub event: String,
    /// It matches events after this seq.
    pub since_event_seq: i64,
}

/// The part of an instance's machine state the judgement needs.
#[derive(Deserialize)]
struct Parked {
    waiting: Option<Waiting>,
}

/// Whether `row` waits for an event after a seq `journal` has trimmed through.
#[must_use]
pub fn lost_wait(row: &InstanceRow, journal: JournalWindow) -> Option<LostWait> {
    if row.status.is_terminal() {
        return None;
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
        return None;
    };
    (since_event_seq < journal.trimmed_through).then_some(LostWait {
        event,
        since_event_seq,
    })
}
