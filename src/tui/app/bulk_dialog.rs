//! The same triage verbs over everything the work view's `/` filter matches: `a` in the
//! single-item dialog asks the store how many items the filter matches and names the
//! first, then the bulk dialog asks for a confirmation — above [`TYPE_COUNT_ABOVE`]
//! matches, the count typed out, so a filter that matches more than the operator thinks
//! is caught before anything changes. The run is [`crate::ops::bulk`]'s, exactly as
//! `leasehold work requeue|discard|retry-now --filter` runs it, audited with the filter and
//! the counts.

use super::confirm::edit_reason;
use super::{Action, App, Command, Overlay, Role, WorkQuick};
use crate::ops::bulk::Tally;
use crate::rules::triage::Verb;

/// More matches than this need their count typed before Enter runs the action.
pub const TYPE_COUNT_ABOVE: usize = 10;

/// The longest count the field takes.
const COUNT_MAX: usize = 12;

impl App {
    /// Widens the single-item dialog of `verb` to every item the `/` filter matches: asks
    /// the store for the preview first.
    pub(super) fn ask_bulk(&mut self, verb: Verb, reason: String, out: &mut Vec<Command>) {
        let filter = self.table_ui().filter.trim().to_owned();
        if filter.is_empty() {
            self.say(
                "no / filter: type one first, then a acts on everything it matches",
                Role::Warning,
            );
            return;
        }
        if self.work_quick != WorkQuick::All {
            self.say(
                "a acts on the / filter alone: clear the quick filter first",
                Role::Warning,
            );
            return;
        }
        self.overlay = None;
        self.say(format!("counting what {filter} matches…"), Role::Muted);
        out.push(Command::BulkPreview {
            verb,
            filter,
            reason,
        });
    }

    /// The store's preview arrived: the bulk dialog opens on it (unless nothing matches),
    /// with the keyboard on the count when one must be typed — digits go there, Tab moves
    /// to the reason — and otherwise on the reason a discard still needs.
    pub(super) fn on_preview(&mut self, verb: Verb, reason: String, tally: Tally) {
        if tally.matched == 0 {
            self.say(format!("nothing matches {}", tally.filter), Role::Warning);
            return;
        }
        self.say(
            format!("{} items match {}", tally.matched, tally.filter),
            Role::Muted,
        );
        self.overlay = Some(Overlay::ConfirmBulk {
            verb,
            editing: tally.matched <= TYPE_COUNT_ABOVE
                && verb == Verb::Discard
                && reason.trim().is_empty(),
            reason,
            tally,
            typed: String::new(),
        });
    }

    pub(super) fn bulk_dialog_action(&mut self, action: Action, out: &mut Vec<Command>) {
        let Some(Overlay::ConfirmBulk {
            verb,
            tally,
            typed,
            reason,
            editing,
        }) = &mut self.overlay
        else {
            return;
        };
        let matched = tally.matched;
        match action {
            Action::Confirm if *verb == Verb::Discard && reason.trim().is_empty() => {
                *editing = true;
                self.say(
                    "a discard needs a reason, for the items and the audit log",
                    Role::Warning,
                );
            }
            Action::Confirm if matched > TYPE_COUNT_ABOVE && *typed != matched.to_string() => {
                self.say(
                    format!("type {matched} (the number of matches) to run it"),
                    Role::Warning,
                );
            }
            Action::Confirm => {
                let command = Command::Bulk {
                    verb: *verb,
                    filter: tally.filter.clone(),
                    reason: reason.trim().to_owned(),
                    confirmed: matched,
                };
                let running = format!("{} over {matched} items…", verb.action());
                self.overlay = None;
                self.say(running, Role::Accent);
                out.push(command);
            }
            Action::Input(c) if !*editing && c.is_ascii_digit() && typed.len() < COUNT_MAX => {
                typed.push(c);
            }
            Action::Backspace if !*editing => {
                typed.pop();
            }
            Action::Dismiss | Action::Quit => {
                self.overlay = None;
                self.say("nothing was changed", Role::Muted);
            }
            other => edit_reason(&other, reason, editing),
        }
    }
}
