//! The query the reader should answer: built from the view, its page, sort and filter,
//! and published again (with a new sequence number) only when it changed. Kept apart
//! because it is the app's whole contract with the reader task.

use super::{App, PageRequest, Query, StoreOrder, ViewId, WorkQuick, store_filter, views};

impl App {
    pub(super) fn build_query(&self, seq: u64) -> Query {
        let limit = self.page_size();
        let page = match self.view {
            ViewId::Overview | ViewId::WorkflowDetail => PageRequest::first(limit),
            _ => {
                let mut p = self
                    .tables
                    .get(&self.view)
                    .and_then(|t| t.page.clone())
                    .unwrap_or_else(|| PageRequest::first(limit));
                p.limit = limit;
                p
            }
        };
        Query {
            seq,
            store: self.store,
            view: self.view,
            page,
            work: if self.view == ViewId::Work {
                self.work_quick
            } else {
                WorkQuick::All
            },
            instance: if self.view == ViewId::WorkflowDetail {
                self.instance.clone()
            } else {
                None
            },
            resource: if self.view == ViewId::Timeline {
                self.resource.clone()
            } else {
                None
            },
            filter: self.store_filter(),
            order: self.store_order(),
            replay: if self.view == ViewId::Replay {
                self.replay_query().map(Box::new)
            } else {
                None
            },
            paused: self.paused,
            window: self.incident_window,
        }
    }

    /// The order the store pages the current view in, when the sort asks for one it can
    /// give through an index (work ascending by state or kind, workflows by status). Any
    /// other sort orders only the rows of the page.
    #[must_use]
    pub fn store_order(&self) -> Option<StoreOrder> {
        let (col, desc) = self.tables.get(&self.view)?.sort?;
        let columns = match self.view {
            ViewId::Work => views::work::COLUMNS,
            ViewId::Workflows => views::workflows::COLUMNS,
            _ => return None,
        };
        StoreOrder::for_sort(self.view, columns.get(col)?.name, desc)
    }

    /// The current view's `/` filter when its read applies it (work, workflows, audit).
    pub(super) fn store_filter(&self) -> Option<crate::ops::filter::Filter> {
        let text = self.tables.get(&self.view).map(|t| t.filter.as_str())?;
        store_filter::parse(self.view, text)
            .ok()
            .filter(|f| f.subject.read_filtered() && !f.is_empty())
    }

    pub(super) fn sync_query(&mut self, force: bool) -> Option<Query> {
        let candidate = self.build_query(self.query.seq);
        if candidate == self.query && !force {
            return None;
        }
        // Pausing or resuming alone does not need a new read, only a new instruction.
        let only_pause = Query {
            paused: self.query.paused,
            ..candidate.clone()
        } == self.query;
        let seq = if only_pause && !force {
            self.query.seq
        } else {
            self.query.seq + 1
        };
        self.query = Query { seq, ..candidate };
        Some(self.query.clone())
    }
}
