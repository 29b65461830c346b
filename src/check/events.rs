//! Invariant 4 (docs/ARCHITECTURE.md#checker): a duplicate stable external event never becomes two
//! semantic events within its source's dedup window. The journal is bounded
//! (`RETENTION.journal_events`), so the set of ids kept while scanning it is bounded too.
//!
//! Once an id has been out of its window (`store/retention.rs`) it is accepted again by
//! design, so a second journal event at least one window after the first is no violation.
//! The window is the shortest any registered authority trims that source by: a shorter
//! window could only have forgotten the id sooner.

use std::collections::HashMap;

use super::codes::DUPLICATE_SEMANTIC_EVENT;
use super::{Counts, Findings};
use crate::clock::Millis;
use crate::error::Result;
use crate::model::{JournalEvent, PageRequest};
use crate::store::{RetentionPolicy, Store};

/// The first journal seq, and its instant, of each stable `(source, externalEventId)`
/// since it was last accepted.
pub(super) type Seen = HashMap<(String, String), (i64, Millis)>;

/// The dedup policies of the registered authorities (the defaults when none is).
pub(super) struct Windows(Vec<RetentionPolicy>);

impl Windows {
    /// Every registered authority's policy, read from its registration row.
    pub(super) fn read(store: &Store, page: usize) -> Result<Self> {
        let mut policies = Vec::new();
        let mut request = PageRequest::first(page);
        loop {
            let rows = store.list_authorities(&request)?;
            policies.extend(rows.rows.iter().map(RetentionPolicy::registered_by));
            match rows.next {
                Some(next) => request = PageRequest::after(next, page),
                None => break,
            }
        }
        if policies.is_empty() {
            policies.push(RetentionPolicy::default());
        }
        Ok(Self(policies))
    }

    /// The shortest dedup window of `source`.
    fn shortest(&self, source: &str) -> Millis {
        self.0
            .iter()
            .map(|p| p.dedup_window(source))
            .min()
            .unwrap_or(RetentionPolicy::DEFAULT_DEDUP_MS)
    }
}

/// No two journal events share a stable `(source, externalEventId)` within its dedup
/// window. Events without one (`unidentified`) are at-least-once by design and exempt.
pub(super) fn one_semantic_event(
    event: &JournalEvent,
    windows: &Windows,
    seen: &mut Seen,
    findings: &mut Findings,
) {
    let (Some(source), Some(external)) = (&event.source, &event.external_id) else {
        return;
    };
    if source.is_empty() || external.is_empty() {
        return;
    }
    let key = (source.clone(), external.clone());
    match seen.get(&key) {
        Some((_, first_at)) if event.at - first_at >= windows.shortest(source) => {
            seen.insert(key, (event.seq, event.at));
        }
        Some((first, _)) => findings.push(
            DUPLICATE_SEMANTIC_EVENT,
            vec![source.clone(), external.clone()],
            format!(
                "event {external} from {source} ({}) was journalled twice, as seq {first} and seq {}",
                event.event_type, event.seq
            ),
        ),
        None => {
            seen.insert(key, (event.seq, event.at));
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
    let windows = Windows::read(store, page)?;
    let mut seen = Seen::new();
    let mut after = 0;
    loop {
        let rows = store.read(|tx| tx.journal_after(after, None, page))?;
        for event in &rows {
            counts.journal_events += 1;
            one_semantic_event(event, &windows, &mut seen, findings);
        }
        match rows.last() {
            Some(last) if rows.len() >= page => after = last.seq,
            _ => return Ok(()),
        }
    }
}
