//! Invariant 4 (docs/ARCHITECTURE.md#checker): a duplicate stable external event never becomes two
//! semantic events. The journal is bounded (`RETENTION.journal_events`), so the set of ids
//! kept while scanning it is bounded too.

use std::collections::HashMap;

use super::codes::DUPLICATE_SEMANTIC_EVENT;
use super::{Counts, Findings};
use crate::error::Result;
use crate::model::JournalEvent;
use crate::store::Store;

/// The first journal seq of each stable `(source, externalEventId)`.
pub(super) type Seen = HashMap<(String, String), i64>;

/// No two journal events share a stable `(source, externalEventId)`. Events without one
/// (`unidentified`) are at-least-once by design and exempt.
pub(super) fn one_semantic_event(event: &JournalEvent, seen: &mut Seen, findings: &mut Findings) {
    let (Some(source), Some(external)) = (&event.source, &event.external_id) else {
        return;
    };
    if source.is_empty() || external.is_empty() {
        return;
    }
    let key = (source.clone(), external.clone());
    match seen.get(&key) {
        Some(first) => findings.push(
            DUPLICATE_SEMANTIC_EVENT,
            vec![source.clone(), external.clone()],
            format!(
                "event {external} from {source} ({}) was journalled twice, as seq {first} and seq {}",
                event.event_type, event.seq
            ),
        ),
        None => {
            seen.insert(key, event.seq);
        }
    }
}

/// Pages through the journal.
pub(super) fn scan(
    store: &Store,
    page: usize,
    findings: &mut Findings,
    counts: &mut Counts,
) -> Result<()> {
    let mut seen = Seen::new();
    let mut after = 0;
    loop {
        let rows = store.read(|tx| tx.journal_after(after, None, page))?;
        for event in &rows {
            counts.journal_events += 1;
            one_semantic_event(event, &mut seen, findings);
        }
        match rows.last() {
            Some(last) if rows.len() >= page => after = last.seq,
            _ => return Ok(()),
        }
    }
}
