//! Moving between views by content: Enter opens a workflow's detail (or describes the
//! row), `t` / `:timeline` opens a resource's generation history. Kept apart from the
//! table and tree state because it decides which view shows next, not what is selected.

use super::{App, Command, TreeUi, ViewId};

impl App {
    pub(super) fn enter(&mut self, out: &mut Vec<Command>) {
        if self.view == ViewId::Replay {
            self.replay_inspect();
            return;
        }
        if self.view == ViewId::WorkflowDetail {
            let sel = self.tree.selected.last().cloned();
            if let Some(id) = sel
                && !self.tree.closed.remove(&id)
            {
                self.tree.closed.insert(id);
            }
            return;
        }
        let Some(row) = self.selected_row().cloned() else {
            return;
        };
        if let Some(instance) = row.instance.filter(|_| self.view == ViewId::Workflows) {
            self.open_instance(instance);
            return;
        }
        if let Some(filter) = row.filter {
            // A triage group: its work, listed by the store under the group's filter.
            self.switch(ViewId::Work);
            self.apply_filter(&filter);
            return;
        }
        self.open_describe(out);
    }

    pub(super) fn open_instance(&mut self, instance: String) {
        if self.instance.as_deref() != Some(&instance) {
            self.tree = TreeUi::default();
        }
        self.instance = Some(instance);
        self.switch(ViewId::WorkflowDetail);
    }

    pub(super) fn open_timeline(&mut self, resource: String) {
        if self.resource.as_deref() != Some(&resource) {
            self.tables.entry(ViewId::Timeline).or_default().page = None;
        }
        self.resource = Some(resource);
        self.switch(ViewId::Timeline);
    }
}
