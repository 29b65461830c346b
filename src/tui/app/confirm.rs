//! The confirmation of one operator act on one subject: cancel a workflow instance;
//! requeue, discard or retry-now a work item; release or forget a gone authority; pause,
//! resume or delete a schedule; pause or resume a handler fleet-wide. Each
//! act opens the same dialog (what will happen, who it is recorded as, an optional reason
//! field), and a yes sends the same kind of command to the writer, which goes through the
//! store exactly as the matching `leasehold` command does. Only what differs per act lives
//! in [`Act`]: its words, whether it needs a reason, the command it sends.

use super::{Action, App, AuthorityVerb, Command, Overlay, Role, ViewId};
use crate::rules::handler::HandlerControl;
use crate::rules::schedule::Control;
use crate::rules::triage::Verb;
use crate::tui::text::clean;

/// The longest reason the field takes.
const REASON_MAX: usize = 200;

/// What the operator is about to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Act {
    /// Cancel a workflow instance.
    Cancel,
    /// Requeue, discard or retry-now one work item.
    Triage(Verb),
    /// Release or forget one authority.
    Authority(AuthorityVerb),
    /// Pause, resume or delete one schedule.
    Schedule(Control),
    /// Pause or resume one handler, fleet-wide.
    Handler(HandlerControl),
}

impl Act {
    /// A discard must say why, for the item and the audit log; the others may.
    fn needs_reason(self) -> bool {
        self == Self::Triage(Verb::Discard)
    }

    /// The status line while the writer carries it out.
    fn doing(self) -> &'static str {
        match self {
            Self::Cancel => "cancelling",
            Self::Triage(verb) => verb.action(),
            Self::Authority(verb) => verb.word(),
            Self::Schedule(control) => control.doing(),
            Self::Handler(control) => control.doing(),
        }
    }

    /// The status line when the operator says no.
    fn kept(self) -> &'static str {
        match self {
            Self::Cancel => "nothing was cancelled",
            Self::Triage(_) | Self::Authority(_) | Self::Schedule(_) | Self::Handler(_) => {
                "nothing was changed"
            }
        }
    }

    fn command(self, subject: String, reason: String) -> Command {
        match self {
            Self::Cancel => Command::Cancel {
                instance: subject,
                reason,
            },
            Self::Triage(verb) => Command::Triage {
                verb,
                item: subject,
                reason,
            },
            Self::Authority(verb) => Command::Authority {
                verb,
                instance: subject,
                reason,
            },
            Self::Schedule(control) => Command::Schedule {
                control,
                schedule: subject,
                reason,
            },
            Self::Handler(control) => Command::Handler {
                control,
                handler: subject,
                reason,
            },
        }
    }
}

/// An act waiting for a yes: its subject (an instance, item, authority or schedule id, or a
/// handler's name), the reason
/// typed so far, and whether the reason field has the keyboard.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Confirmation {
    pub act: Act,
    pub subject: String,
    pub reason: String,
    pub editing: bool,
}

impl App {
    /// Opens the confirmation of `act` on `subject` (the reason field starts with the
    /// keyboard when the act needs one).
    pub(super) fn ask(&mut self, act: Act, subject: String) {
        self.overlay = Some(Overlay::Confirm(Confirmation {
            act,
            subject,
            reason: String::new(),
            editing: act.needs_reason(),
        }));
    }

    /// Opens the confirmation of `act` on the row selected in `view` (its key is the
    /// subject); elsewhere, or with nothing selected, says `hint` instead. Refused under
    /// `--read-only`.
    pub(super) fn ask_on_row(&mut self, act: Act, view: ViewId, hint: &'static str) {
        if self.refused_read_only() {
            return;
        }
        let subject = (self.view == view)
            .then(|| self.selected_row().map(|r| r.key.clone()))
            .flatten();
        match subject {
            Some(subject) => self.ask(act, subject),
            None => self.say(hint, Role::Warning),
        }
    }

    pub(super) fn confirm_action(&mut self, action: Action, out: &mut Vec<Command>) {
        let Some(Overlay::Confirm(c)) = &mut self.overlay else {
            return;
        };
        match action {
            Action::Confirm if c.act.needs_reason() && c.reason.trim().is_empty() => {
                c.editing = true;
                self.say(
                    "a discard needs a reason, for the item and the audit log",
                    Role::Warning,
                );
            }
            Action::Confirm => {
                let (act, subject, reason) = (c.act, c.subject.clone(), c.reason.trim().to_owned());
                self.overlay = None;
                self.say(
                    format!("{} {}…", act.doing(), clean(&subject, 40)),
                    Role::Accent,
                );
                out.push(act.command(subject, reason));
            }
            // From one item's triage to every item the filter matches.
            Action::Input('a') if !c.editing => {
                if let Act::Triage(verb) = c.act {
                    let reason = c.reason.clone();
                    self.ask_bulk(verb, reason, out);
                }
            }
            Action::Dismiss | Action::Quit => {
                let kept = c.act.kept();
                self.overlay = None;
                self.say(kept, Role::Muted);
            }
            other => edit_reason(&other, &mut c.reason, &mut c.editing),
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
