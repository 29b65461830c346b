//! Requeue, discard and retry-now of the selected work item: the key opens a confirmation
//! (a discard also needs a reason, typed in the dialog's field), and the change and its
//! audit entry go through [`crate::store::Store::triage_work`], exactly as `leasehold work
//! requeue|discard|retry-now ID` does. Whether the verb applies is judged by the store
//! inside its transaction; a refusal comes back on the status line in its words.

use super::cancel_dialog::edit_reason;
use super::{Action, App, Command, Overlay, Role, ViewId};
use crate::ops::triage::Verb;
use crate::tui::text::clean;

impl App {
    pub(super) fn ask_triage(&mut self, verb: Verb) {
        if self.refused_read_only() {
            return;
        }
        let item = match self.view {
            ViewId::Work => self.selected_row().map(|r| r.key.clone()),
            _ => None,
        };
        let Some(item) = item else {
            self.say("select a work item (4 for work)", Role::Warning);
            return;
        };
        self.overlay = Some(Overlay::ConfirmTriage {
            verb,
            item,
            reason: String::new(),
            editing: verb == Verb::Discard,
        });
    }

    pub(super) fn triage_dialog_action(&mut self, action: Action, out: &mut Vec<Command>) {
        let Some(Overlay::ConfirmTriage {
            verb,
            item,
            reason,
            editing,
        }) = &mut self.overlay
        else {
            return;
        };
        match action {
            Action::Confirm if *verb == Verb::Discard && reason.trim().is_empty() => {
                *editing = true;
                self.say(
                    "a discard needs a reason, for the item and the audit log",
                    Role::Warning,
                );
            }
            Action::Confirm => {
                let (verb, item, reason) = (*verb, item.clone(), reason.trim().to_owned());
                self.overlay = None;
                self.say(
                    format!("{} {}…", verb.action(), clean(&item, 40)),
                    Role::Accent,
                );
                out.push(Command::Triage { verb, item, reason });
            }
            Action::Input('a') if !*editing => {
                let (verb, reason) = (*verb, reason.clone());
                self.ask_bulk(verb, reason, out);
            }
            Action::Dismiss | Action::Quit => {
                self.overlay = None;
                self.say("nothing was changed", Role::Muted);
            }
            other => edit_reason(&other, reason, editing),
        }
    }
}
