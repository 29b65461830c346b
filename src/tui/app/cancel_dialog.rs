//! Cancel, state-aware: `C` opens the confirmation only for an instance that can still be
//! cancelled (the snapshot on screen says its status); otherwise the footer says why, in
//! the words of [`crate::ops::cancel::offer`]. The dialog (`confirm.rs`) has an optional
//! reason field; the cancel itself and its audit entry go through
//! `Store::cancel_workflow_audited`, one transaction, exactly as `leasehold cancel` does.

use super::{Act, App, Role, ViewData, ViewId};
use crate::ops::cancel::offer;
use crate::tui::text::clean;

impl App {
    /// The status of `instance` according to the snapshot on screen (`None`: no such
    /// instance there).
    fn status_on_screen(&self, instance: &str) -> Option<String> {
        match self.snapshot.as_deref().map(|s| &s.data) {
            Some(ViewData::Detail { instance: row, .. }) => row
                .as_ref()
                .filter(|r| r.instance_id == instance)
                .map(|r| r.status.to_string()),
            Some(ViewData::Workflows(page)) => page
                .rows
                .iter()
                .find(|r| r.instance_id == instance)
                .map(|r| r.status.to_string()),
            _ => None,
        }
    }

    /// Under `--read-only`, says so and answers `true`: the action is not offered.
    pub(super) fn refused_read_only(&mut self) -> bool {
        if self.options.read_only {
            self.say(
                "read-only: actions are disabled (started with --read-only)",
                Role::Error,
            );
        }
        self.options.read_only
    }

    pub(super) fn ask_cancel(&mut self) {
        if self.refused_read_only() {
            return;
        }
        let instance = match self.view {
            ViewId::WorkflowDetail => self.instance.clone(),
            _ => self.selected_row().and_then(|r| r.instance.clone()),
        };
        let Some(instance) = instance else {
            self.say(
                "select a workflow instance to cancel (5 for workflows)",
                Role::Warning,
            );
            return;
        };
        if self.loading() {
            self.say("still reading the instance; try again", Role::Muted);
            return;
        }
        match offer(
            &clean(&instance, 60),
            self.status_on_screen(&instance).as_deref(),
        ) {
            Ok(()) => {
                self.ask(Act::Cancel, instance);
            }
            Err(why) => self.say(why, Role::Warning),
        }
    }
}
