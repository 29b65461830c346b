//! The work list's row facets ([`crate::model::work::WorkFacets`]: ending, handler, failure class and code),
//! which no index holds. The indexed fields of the filter are read as always, a page at a
//! time, and each row is tested; a page request examines at most [`FACET_ROWS`] rows,
//! so a facet that matches little never turns one request into a scan of the store. A
//! page cut there ends early and its continuation key is the last row examined, so paging
//! on goes through every match, a bounded read at a time.

use super::Tx;
use super::reads::paged;
use crate::error::Result;
use crate::model::work::WorkFilter;
use crate::model::{Page, PageRequest, WorkItem};

/// Rows examined per page request at most when facets narrow.
pub const FACET_ROWS: usize = 10_000;

/// A page of `filter`'s matches: the provider's indexed read, then the facets.
pub(super) fn list(
    tx: &mut dyn Tx,
    filter: &WorkFilter,
    page: &PageRequest,
) -> Result<Page<WorkItem>> {
    if filter.facets.is_empty() {
        return Ok(paged(tx.list_work(filter, page)?, page, |w| w.id.clone()));
    }
    let limit = page.limit.max(1);
    let read = limit.clamp(100, 1_000);
    let mut kept: Vec<WorkItem> = Vec::new();
    let mut after = page.after.clone();
    let mut examined = 0;
    loop {
        let request = PageRequest {
            after: after.clone(),
            limit: read,
            backwards: page.backwards,
        };
        let mut rows = tx.list_work(filter, &request)?;
        let exhausted = rows.len() < read;
        // Nearest the cursor first, whichever way the page reads.
        if page.backwards {
            rows.reverse();
        }
        for row in rows {
            examined += 1;
            after = Some(row.id.clone());
            if filter.facets.admits(&row) {
                kept.push(row);
                if kept.len() == limit {
                    return Ok(finish(kept, page, after));
                }
            }
        }
        if exhausted {
            return Ok(finish(kept, page, None));
        }
        if examined >= FACET_ROWS {
            return Ok(finish(kept, page, after));
        }
    }
}

/// The kept rows in ascending order, and where the next page starts (`None`: no more).
fn finish(mut kept: Vec<WorkItem>, page: &PageRequest, next: Option<String>) -> Page<WorkItem> {
    if page.backwards {
        kept.reverse();
    }
    Page { rows: kept, next }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::clock::ManualClock;
    use crate::ids::SeededIds;
    use crate::model::work::{NewWork, WorkFacets};
    use crate::store::Store;
    use crate::store::memory::MemoryBackend;

    /// Every page of a faceted list, forward then backward, one way of reading each.
    fn pages(store: &Store, filter: &WorkFilter, backwards: bool) -> (Vec<String>, usize) {
        let mut ids = Vec::new();
        let mut request = if backwards {
            PageRequest::before("~", 3)
        } else {
            PageRequest::first(3)
        };
        let mut reads = 0;
        loop {
            let page = store.list_work(filter, &request).unwrap();
            reads += 1;
            assert!(page.rows.len() <= 3);
            ids.extend(page.rows.iter().map(|w| w.id.clone()));
            match page.next {
                Some(next) if backwards => request = PageRequest::before(next, 3),
                Some(next) => request = PageRequest::after(next, 3),
                None => break,
            }
        }
        ids.sort();
        (ids, reads)
    }

    /// A memory store with `n` effects `w-…` (ids padded to `width`), those `rare` picks
    /// on handler `rare`, the rest on `h`.
    fn store_with(n: usize, width: usize, rare: impl Fn(usize) -> bool) -> Store {
        let store = Store::new(
            Arc::new(MemoryBackend::new()),
            Arc::new(ManualClock::new(1_000)),
            Arc::new(SeededIds::new(1)),
        );
        let specs: Vec<NewWork> = (0..n)
            .map(|i| {
                let handler = if rare(i) { "rare" } else { "h" };
                NewWork::effect(format!("w-{i:0width$}"), handler, "{}")
            })
            .collect();
        store.enqueue_batch(specs, "k").unwrap();
        store
    }

    /// The filter of `facets` alone.
    fn faceted(facets: WorkFacets) -> WorkFilter {
        WorkFilter {
            facets,
            ..WorkFilter::default()
        }
    }

    /// A facet narrows the rows the indexed read yields, and paging on reaches every match
    /// either way; a page never examines more than its bound.
    #[test]
    fn facets_page_through_every_match() {
        let store = store_with(40, 2, |i| i % 7 == 0);
        let filter = faceted(WorkFacets {
            handlers: vec!["rare".into()],
            ..WorkFacets::default()
        });
        let want: Vec<String> = (0..40)
            .filter(|i| i % 7 == 0)
            .map(|i| format!("w-{i:02}"))
            .collect();
        assert_eq!(pages(&store, &filter, false).0, want);
        assert_eq!(pages(&store, &filter, true).0, want);
        let none = faceted(WorkFacets {
            codes: vec!["NOPE".into()],
            ..WorkFacets::default()
        });
        assert_eq!(pages(&store, &none, false), (Vec::new(), 1));
    }

    /// A facet that matches little ends a page at its bound rather than reading on: the
    /// page says where to go on from.
    #[test]
    fn a_page_examines_a_bounded_number_of_rows() {
        let n = FACET_ROWS + 500;
        let store = store_with(n, 6, |i| i + 1 == n);
        let filter = faceted(WorkFacets {
            handlers: vec!["rare".into()],
            ..WorkFacets::default()
        });
        let first = store.list_work(&filter, &PageRequest::first(10)).unwrap();
        assert!(first.rows.is_empty());
        let next = first.next.expect("more to read");
        let second = store
            .list_work(&filter, &PageRequest::after(next, 10))
            .unwrap();
        assert_eq!(second.rows.len(), 1);
        assert_eq!(second.next, None);
    }
}
