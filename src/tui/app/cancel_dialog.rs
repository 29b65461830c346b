//! Cancel, state-aware: `C` opens the confirmation only for an instance that can still be
//! cancelled (the snapshot on screen says its status); otherwise the footer says why, in
//! the words of [`crate::ops::cancel::offer`]. The dialog has an optional reason field
//! (Tab, or just start typing after Tab, to edit it); the cancel itself and its audit
//! entry go through [`crate::ops::cancel::cancel`], exactly as `leasehold cancel` does.

use super::{Action, App, Command, Overlay, Role, ViewData, ViewId};
use crate::ops::cancel::offer;
use crate::tui::text::clean;

/// The longest reason the field takes.
const REASON_MAX: usize = 200;

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
                self.overlay = Some(Overlay::ConfirmCancel {
                    instance,
                    reason: String::new(),
                    editing: false,
                });
            }
            Err(why) => self.say(why, Role::Warning),
        }
    }

    pub(super) fn cancel_dialog_action(&mut self, action: Action, out: &mut Vec<Command>) {
        let Some(Overlay::ConfirmCancel {
            instance,
            reason,
            editing,
        }) = &mut self.overlay
        else {
            return;
        };
        match action {
            Action::Confirm => {
                let (instance, reason) = (instance.clone(), reason.trim().to_owned());
                self.overlay = None;
                self.say(
                    format!("cancelling {}…", clean(&instance, 40)),
                    Role::Accent,
                );
                out.push(Command::Cancel { instance, reason });
            }
            Action::Dismiss | Action::Quit => {
                self.overlay = None;
                self.say("nothing was cancelled", Role::Muted);
            }
            other => edit_reason(&other, reason, editing),
        }
    }
}

/// A dialog's reason field: Tab gives it the keyboard (and takes it back); while it has
/// it, characters and Backspace edit the reason.
pub(super) fn edit_reason(action: &Action, reason: &mut String, editing: &mut bool) {
    match action {
        Action::Complete => *editing = !*editing,
        Action::Input(c) if *editing && reason.chars().count() < REASON_MAX && !c.is_control() => {
            reason.push(*c);
        }
        Action::Backspace if *editing => {
            reason.pop();
        }
        _ => {}
    }
}
