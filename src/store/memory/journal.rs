//! The memory store's event journal: events by their store-global `seq`, bounded by count
//! (`RETENTION.journal_events`). The last seq handed out is kept beside the rows, not read
//! from them: a seq is never reused, even once its event is trimmed.

use std::collections::BTreeMap;
use std::ops::Bound;

use crate::model::JournalEvent;
use crate::store::RETENTION;

#[derive(Default)]
pub(super) struct Journal {
    events: BTreeMap<i64, JournalEvent>,
    /// The last seq handed out (or set by a copy).
    seq: i64,
}

/// What one append changed: the undo log's way back.
pub(super) struct Appended {
    pub(super) seq: i64,
    /// The event a copy had put under that seq, if any.
    replaced: Option<JournalEvent>,
    /// The oldest events the append pushed out of the kept count.
    trimmed: Vec<(i64, JournalEvent)>,
}

impl Journal {
    /// Appends `event` under the next seq, and trims the oldest events past the kept count.
    pub(super) fn append(&mut self, event: &JournalEvent) -> Appended {
        self.seq += 1;
        let seq = self.seq;
        let stored = JournalEvent {
            seq,
            ..event.clone()
        };
        let replaced = self.events.insert(seq, stored);
        let floor = seq - RETENTION.journal_events;
        let mut trimmed = Vec::new();
        while let Some(entry) = self.events.first_entry() {
            if *entry.key() > floor {
                break;
            }
            trimmed.push(entry.remove_entry());
        }
        Appended {
            seq,
            replaced,
            trimmed,
        }
    }

    /// Takes an append back: the trimmed events return, the seq is handed out again.
    pub(super) fn undo_append(&mut self, appended: Appended) {
        self.put_back(appended.seq, appended.replaced);
        self.events.extend(appended.trimmed);
        self.seq = appended.seq - 1;
    }

    /// Stores a copied event under its own seq; returns the event it replaced.
    pub(super) fn import(&mut self, event: &JournalEvent) -> Option<JournalEvent> {
        self.events.insert(event.seq, event.clone())
    }

    /// Puts `old` back under `seq`, or leaves the seq empty: an import undone.
    pub(super) fn put_back(&mut self, seq: i64, old: Option<JournalEvent>) {
        match old {
            Some(old) => self.events.insert(seq, old),
            None => self.events.remove(&seq),
        };
    }

    /// Events after `after` (of `event_type`, when given), oldest first, at most `limit`.
    pub(super) fn after(
        &self,
        after: i64,
        event_type: Option<&str>,
        limit: usize,
    ) -> Vec<JournalEvent> {
        (self.events)
            .range((Bound::Excluded(after), Bound::Unbounded))
            .map(|(_, e)| e)
            .filter(|e| event_type.is_none_or(|t| e.event_type == t))
            .take(limit)
            .cloned()
            .collect()
    }

    /// The last seq handed out.
    pub(super) fn high_water(&self) -> i64 {
        self.seq
    }

    /// Sets the last seq handed out (a copy's); returns the one it replaces.
    pub(super) fn set_high_water(&mut self, seq: i64) -> i64 {
        std::mem::replace(&mut self.seq, seq)
    }

    /// The seq of the newest kept event of `event_type`, 0 when none is kept.
    pub(super) fn type_high_water(&self, event_type: &str) -> i64 {
        (self.events.values())
            .rev()
            .find(|e| e.event_type == event_type)
            .map_or(0, |e| e.seq)
    }
}
