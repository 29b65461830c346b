//! Work listed in the order of an indexed column other than the key: by state or by kind,
//! then by id. Both columns have a small, known set of values and a `(column, id)` index,
//! so a page is a short walk over the groups — one keyset seek per group, in the group's
//! order — on every provider, never a sort of the table.
//!
//! The page key stays the item id. Its group is read back from the item (one point read),
//! so a row that changed group between two pages carries the cursor with it: paging over
//! live data in a mutable order can skip or repeat such a row, as any keyset paging over a
//! changing column can.

use super::Store;
use super::reads::paged;
use crate::error::Result;
use crate::model::work::WorkFilter;
use crate::model::{Page, PageRequest, WorkItem, WorkKind, WorkState};

/// The indexed column a work list is ordered by (then by id).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WorkOrder {
    State,
    Kind,
}

impl WorkOrder {
    /// The column's name, as the tables title it.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::State => "state",
            Self::Kind => "kind",
        }
    }

    /// The column's values the filter allows, in ascending text order (the order a sort
    /// on the column's text gives).
    fn groups(self, filter: &WorkFilter) -> Vec<&'static str> {
        let mut groups: Vec<&'static str> = match self {
            Self::State => WorkState::ALL
                .into_iter()
                .filter(|s| filter.states.is_empty() || filter.states.contains(s))
                .map(WorkState::as_str)
                .collect(),
            Self::Kind => WorkKind::ALL
                .into_iter()
                .filter(|k| filter.kind.is_none_or(|want| want == *k))
                .map(WorkKind::as_str)
                .collect(),
        };
        groups.sort_unstable();
        groups
    }

    fn group_of(self, item: &WorkItem) -> &'static str {
        match self {
            Self::State => item.state.as_str(),
            Self::Kind => item.kind.as_str(),
        }
    }

    /// `filter` narrowed to one value of the column.
    fn narrow(self, filter: &WorkFilter, group: &str) -> WorkFilter {
        let mut f = filter.clone();
        match self {
            Self::State => f.states = WorkState::parse(group).into_iter().collect(),
            Self::Kind => f.kind = WorkKind::parse(group),
        }
        f
    }
}

impl Store {
    /// Work items matching `filter`, ordered by `order`'s column, then by id. Forward pages
    /// continue after the page key; backward pages (PageUp, End) end before it. A key that
    /// no longer names an item starts from the first (forward) or last (backward) group.
    ///
    /// # Errors
    /// A store failure.
    pub fn list_work_ordered(
        &self,
        filter: &WorkFilter,
        order: WorkOrder,
        page: &PageRequest,
    ) -> Result<Page<WorkItem>> {
        let groups = order.groups(filter);
        let limit = page.limit.max(1);
        self.read(|tx| {
            let cursor = match &page.after {
                Some(id) => tx
                    .work(id)?
                    .and_then(|w| groups.iter().position(|g| *g == order.group_of(&w)))
                    .map(|at| (at, id.clone())),
                None => None,
            };
            let after_in = |at: usize| {
                cursor
                    .as_ref()
                    .filter(|(c, _)| *c == at)
                    .map(|(_, id)| id.clone())
            };
            let mut rows: Vec<WorkItem> = Vec::new();
            if page.backwards {
                // Walk the groups down from the cursor's, then put the chunks back in order.
                let from = cursor.as_ref().map_or(groups.len(), |(at, _)| at + 1);
                let mut chunks: Vec<Vec<WorkItem>> = Vec::new();
                let mut taken = 0;
                for at in (0..from).rev() {
                    let request = PageRequest {
                        after: after_in(at),
                        limit: limit - taken,
                        backwards: true,
                    };
                    let got = tx.list_work(&order.narrow(filter, groups[at]), &request)?;
                    taken += got.len();
                    chunks.push(got);
                    if taken >= limit {
                        break;
                    }
                }
                rows = chunks.into_iter().rev().flatten().collect();
            } else {
                let from = cursor.as_ref().map_or(0, |(at, _)| *at);
                for (at, group) in groups.iter().enumerate().skip(from) {
                    let request = PageRequest {
                        after: after_in(at),
                        limit: limit - rows.len(),
                        backwards: false,
                    };
                    rows.extend(tx.list_work(&order.narrow(filter, group), &request)?);
                    if rows.len() >= limit {
                        break;
                    }
                }
            }
            Ok(paged(rows, page, |w| w.id.clone()))
        })
    }
}
