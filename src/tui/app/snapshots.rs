//! Taking in what the reader sends: a new snapshot (which rows changed and flash, a short
//! backwards page) and the counter samples behind the sparklines. Kept apart because it
//! is the one place data enters the model.

use std::collections::HashMap;
use std::sync::Arc;

use super::{App, FLASH_MS, PageRequest, Query, Snapshot, TimeFmt, ViewId, views};

impl App {
    /// Takes a new snapshot; returns true when a follow-up read is needed.
    pub(super) fn on_snapshot(&mut self, snapshot: Arc<Snapshot>) -> bool {
        self.last_contact = Some(self.wall);
        self.last_good = Some(self.wall);
        self.error = None;
        self.now = self.now.max(snapshot.at);
        // Flash rows whose data changed since the last snapshot of the same page.
        let scope = Query {
            seq: 0,
            paused: false,
            ..snapshot.query.clone()
        };
        let same_scope = self.version_scope.as_ref() == Some(&scope);
        let at_read = TimeFmt::new(snapshot.at, self.options.zone);
        if let Some(data) = views::table(&snapshot, at_read) {
            let versions: HashMap<String, String> = data
                .rows
                .iter()
                .map(|r| (r.key.clone(), row_version(r)))
                .collect();
            if same_scope {
                for (key, v) in &versions {
                    if self.versions.get(key) != Some(v) {
                        self.flash.insert(key.clone(), self.wall + FLASH_MS);
                    }
                }
            } else {
                self.flash.clear();
            }
            self.versions = versions;
        }
        self.version_scope = Some(scope);
        self.sample(&snapshot);
        // A backwards page that ran into the start: show the first full page instead.
        let page = &snapshot.query.page;
        let short_backwards = page.backwards
            && page.after.is_some()
            && snapshot.query.seq == self.query.seq
            && { views::table(&snapshot, at_read).is_some_and(|d| d.fetched < page.limit) };
        let view = snapshot.query.view;
        self.snapshot = Some(snapshot);
        if self.view == ViewId::WorkflowDetail
            && self.tree.selected.is_empty()
            && let Some(first) = self.tree_paths().first()
        {
            self.tree.selected.clone_from(first);
        }
        self.adopt_replay();
        if short_backwards {
            let limit = self.page_size();
            self.tables.entry(view).or_default().page = Some(PageRequest::first(limit));
        }
        self.rebuild();
        false
    }

    pub(super) fn sample(&mut self, s: &Snapshot) {
        super::stores::push_sample(&mut self.samples, self.wall, s);
    }
}

pub(super) fn row_version(row: &views::Row) -> String {
    row.version.clone()
}
