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
