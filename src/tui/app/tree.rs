//! The workflow detail's history tree: which nodes are folded and which is selected. Kept
//! apart from the table state because the detail view is a tree, not a paged table.

use std::collections::BTreeSet;

use super::{App, ViewData, workflow_detail};

/// Expansion and selection of the history tree.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TreeUi {
    pub closed: BTreeSet<String>,
    pub selected: Vec<String>,
}

impl App {
    pub(super) fn tree_paths(&self) -> Vec<Vec<String>> {
        match self.snapshot.as_deref().map(|s| &s.data) {
            Some(ViewData::Detail { history, .. }) => {
                workflow_detail::visible_paths(&workflow_detail::nodes(history), &self.tree.closed)
            }
            _ => Vec::new(),
        }
    }

    pub(super) fn tree_move(&mut self, delta: i64) {
        let paths = self.tree_paths();
        if paths.is_empty() {
            return;
        }
        let cur = paths
            .iter()
            .position(|p| *p == self.tree.selected)
            .map_or(-1, |i| i64::try_from(i).unwrap_or(0));
        let max = i64::try_from(paths.len() - 1).unwrap_or(0);
        let next = usize::try_from((cur + delta).clamp(0, max)).unwrap_or(0);
        if let Some(p) = paths.get(next) {
            self.tree.selected.clone_from(p);
        }
    }

    pub(super) fn tree_left(&mut self) {
        if let Some(id) = self.tree.selected.last().cloned() {
            if self.tree.selected.len() > 1 {
                self.tree.selected.pop();
            } else {
                self.tree.closed.insert(id);
            }
        }
    }

    pub(super) fn tree_right(&mut self) {
        if let Some(id) = self.tree.selected.last() {
            self.tree.closed.remove(id);
        }
    }
}
