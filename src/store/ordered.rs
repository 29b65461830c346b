//! Lists in the order of an indexed column other than the key: work by state or by kind,
//! workflow instances by status, then by id. Each column has a small, known set of values
//! and a `(column, id)` index,
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
use crate::model::{InstanceRow, InstanceStatus, Page, PageRequest, WorkItem, WorkKind, WorkState};

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

/// Walks `groups` from the cursor's (forward, or down from it backward), one keyset page
/// per group through `fetch`, until `limit` rows are read; rows come back in page order.
fn walk<T>(
    groups: &[&str],
    cursor: Option<(usize, String)>,
    page: &PageRequest,
    mut fetch: impl FnMut(&str, PageRequest) -> Result<Vec<T>>,
) -> Result<Vec<T>> {
    let limit = page.limit.max(1);
    let after_in = |at: usize| {
        cursor
            .as_ref()
            .filter(|(c, _)| *c == at)
            .map(|(_, id)| id.clone())
    };
    let order: Vec<usize> = if page.backwards {
        let from = cursor.as_ref().map_or(groups.len(), |(at, _)| at + 1);
        (0..from).rev().collect()
    } else {
        let from = cursor.as_ref().map_or(0, |(at, _)| *at);
        (from..groups.len()).collect()
    };
    let mut chunks: Vec<Vec<T>> = Vec::new();
    let mut taken = 0;
    for at in order {
        let request = PageRequest {
            after: after_in(at),
            limit: limit - taken,
            backwards: page.backwards,
        };
        let got = fetch(groups[at], request)?;
        taken += got.len();
        chunks.push(got);
        if taken >= limit {
            break;
        }
    }
    if page.backwards {
        // Walked down from the cursor: put the groups back in ascending order.
        chunks.reverse();
    }
    Ok(chunks.into_iter().flatten().collect())
}

impl Store {
    /// Work items matching `filter`, ordered by `order`'s column, then by id. Forward pages
    /// continue after the page key; backward pages (PageUp, End) end before it. A key that
    /// no longer names an item starts from the first (forward) or last (backward) group.
    /// A filter with row facets lists by id ([`Self::list_work`]): its bounded reads do not
    /// walk groups.
    ///
    /// # Errors
    /// A store failure.
    pub fn list_work_ordered(
        &self,
        filter: &WorkFilter,
        order: WorkOrder,
        page: &PageRequest,
    ) -> Result<Page<WorkItem>> {
        if !filter.facets.is_empty() {
            return self.list_work(filter, page);
        }
        let groups = order.groups(filter);
        self.read(|tx| {
            let cursor = match &page.after {
                Some(id) => tx
                    .work(id)?
                    .and_then(|w| groups.iter().position(|g| *g == order.group_of(&w)))
                    .map(|at| (at, id.clone())),
                None => None,
            };
            let rows = walk(&groups, cursor, page, |group, request| {
                tx.list_work(&order.narrow(filter, group), &request)
            })?;
            Ok(paged(rows, page, |w| w.id.clone()))
        })
    }

    /// Workflow instances ordered by status, then id (the `(status, instance_id)` index):
    /// only `status` and ids starting with `id_prefix` when given. Paged as
    /// [`Self::list_work_ordered`].
    ///
    /// # Errors
    /// A store failure.
    pub fn list_instances_by_status(
        &self,
        status: Option<InstanceStatus>,
        id_prefix: Option<&str>,
        page: &PageRequest,
    ) -> Result<Page<InstanceRow>> {
        // The index orders by the stored text.
        let mut groups: Vec<&str> = InstanceStatus::ALL
            .iter()
            .filter(|s| status.is_none_or(|want| want == **s))
            .map(|s| s.as_str())
            .collect();
        groups.sort_unstable();
        self.read(|tx| {
            let cursor = match &page.after {
                Some(id) => tx
                    .instance(id)?
                    .and_then(|i| groups.iter().position(|g| i.status == *g))
                    .map(|at| (at, id.clone())),
                None => None,
            };
            let rows = walk(&groups, cursor, page, |group, request| {
                tx.list_instances(Some(group), id_prefix, &request)
            })?;
            Ok(paged(rows, page, |i| i.instance_id.clone()))
        })
    }
}
