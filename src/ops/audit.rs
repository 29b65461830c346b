//! The audit log as the operator reads it: newest first, narrowed to one actor and one
//! action (`actor:NAME`, `action:NAME`, exact), the one read behind `inspect audit` and the
//! dashboard's audit view.
//!
//! The store keeps the log by id and no index by actor or action, so a filter is applied
//! to the rows the id order yields: a page examines at most [`SCAN_ROWS`] entries and,
//! when it runs out of them before the page is full, ends early with the key it reached,
//! so the next page continues from there (as the work view's unindexed facets do).

use super::filter::Filter;
use crate::error::Result;
use crate::model::{AuditEntry, PageRequest};
use crate::store::Store;

/// The most entries one page examines for its filter.
pub const SCAN_ROWS: usize = 10_000;

/// Entries read from the store at a time while filling a filtered page.
const CHUNK: usize = 500;

/// One page of the audit log, newest first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditPage {
    pub rows: Vec<AuditEntry>,
    /// Where the next page in the direction read starts (older for a forward request,
    /// newer for a backward one); `None` when the log ends there.
    pub resume: Option<String>,
}

/// The page key of an entry: its id, zero-padded so keys order as ids do.
#[must_use]
pub fn key(entry: &AuditEntry) -> String {
    format!("{:020}", entry.id)
}

/// Whether `entry` is one `filter` keeps: the actor and the action, each compared whole.
#[must_use]
pub fn matches(filter: &Filter, entry: &AuditEntry) -> bool {
    filter.actor.as_deref().is_none_or(|a| a == entry.actor)
        && filter.action.as_deref().is_none_or(|a| a == entry.action)
}

/// The page of the log `request` asks for, newest first: forward, the entries older than
/// its key (from the newest without one); backward, the entries newer than its key (from
/// the oldest without one, for End). Only entries `filter` keeps.
///
/// # Errors
/// A store failure.
pub fn page(store: &Store, filter: &Filter, request: &PageRequest) -> Result<AuditPage> {
    let limit = request.limit.max(1);
    // Newest first is the store's order backwards, so a forward request reads backwards.
    let older = !request.backwards;
    let mut at = request.after.clone();
    let mut rows = Vec::new();
    let mut examined = 0;
    let resume = loop {
        let chunk = PageRequest {
            after: at.clone(),
            limit: CHUNK,
            backwards: older,
        };
        let mut read = store.list_audit(&chunk)?.rows;
        if older {
            read.reverse();
        }
        let ended = read.len() < CHUNK;
        let mut stopped = false;
        for entry in read {
            examined += 1;
            at = Some(key(&entry));
            if matches(filter, &entry) {
                rows.push(entry);
            }
            if rows.len() == limit || examined >= SCAN_ROWS {
                stopped = true;
                break;
            }
        }
        if stopped {
            break at;
        }
        if ended {
            break None;
        }
    };
    if !older {
        rows.reverse();
    }
    Ok(AuditPage { rows, resume })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::clock::ManualClock;
    use crate::ids::SeededIds;
    use crate::ops::filter::Subject;
    use crate::store::memory::MemoryBackend;

    fn store(entries: usize) -> Store {
        let store = Store::new(
            Arc::new(MemoryBackend::new()),
            Arc::new(ManualClock::new(1_000)),
            Arc::new(SeededIds::new(1)),
        );
        for i in 0..entries {
            let actor = if i % 3 == 0 { "ana@ops" } else { "bo@ops" };
            let action = if i % 2 == 0 {
                "requeue-work"
            } else {
                "discard-work"
            };
            store
                .audit(actor, action, &format!("item-{i}"), "done")
                .unwrap();
        }
        store
    }

    fn ids(page: &AuditPage) -> Vec<i64> {
        page.rows.iter().map(|a| a.id).collect()
    }

    #[test]
    fn pages_run_newest_first_both_ways_under_a_filter() {
        let s = store(1_200);
        let filter = Filter::parse(Subject::Audit, "actor:ana@ops action:requeue-work").unwrap();
        let all: Vec<i64> = s
            .list_audit(&PageRequest::first(10_000))
            .unwrap()
            .rows
            .into_iter()
            .rev()
            .filter(|a| matches(&filter, a))
            .map(|a| a.id)
            .collect();
        assert_eq!(all.len(), 200);
        let mut seen = Vec::new();
        let mut request = PageRequest::first(30);
        loop {
            let p = page(&s, &filter, &request).unwrap();
            seen.extend(ids(&p));
            match p.resume {
                Some(k) => request = PageRequest::after(k, 30),
                None => break,
            }
        }
        assert_eq!(seen, all, "forward pages: every match once, newest first");
        let second = page(&s, &filter, &PageRequest::after(key_of(all[29]), 30)).unwrap();
        assert_eq!(ids(&second), all[30..60]);
        let back = page(&s, &filter, &PageRequest::before(key_of(all[30]), 30)).unwrap();
        assert_eq!(
            ids(&back),
            all[..30],
            "PageUp: the page before, newest first"
        );
        let end = page(&s, &filter, &PageRequest::last(30)).unwrap();
        assert_eq!(ids(&end), all[170..], "End: the oldest page");
    }

    #[test]
    fn a_page_examines_a_bounded_number_of_entries() {
        let s = store(SCAN_ROWS + 50);
        let filter = Filter::parse(Subject::Audit, "actor:nobody@nowhere").unwrap();
        let p = page(&s, &filter, &PageRequest::first(10)).unwrap();
        assert!(p.rows.is_empty());
        let resume = p.resume.expect("ends early with where it reached");
        let next = page(&s, &filter, &PageRequest::after(resume, 10)).unwrap();
        assert_eq!(
            (next.rows.len(), next.resume),
            (0, None),
            "the rest, to the end"
        );
    }

    fn key_of(id: i64) -> String {
        format!("{id:020}")
    }
}
