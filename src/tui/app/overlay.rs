//! The popups over a view and how keys act on them. Kept apart from the update function
//! because an overlay takes the keyboard: while one is open, keys go here, not to the view.

use super::{Action, App, Command, Confirmation};
use crate::ops::bulk::Tally;
use crate::rules::triage::Verb;
use crate::tui::describe::Describe;

/// A popup over the view.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Overlay {
    Help {
        scroll: u16,
    },
    /// Every field of one record.
    Describe(Describe),
    /// Confirm one act on one subject (a cancel, a work item's triage, an authority's
    /// release or forget).
    Confirm(Confirmation),
    /// Confirm a triage verb over every item a filter matches: the store's preview, the
    /// count typed so far, the reason; `editing` while the reason field has the keyboard.
    ConfirmBulk {
        verb: Verb,
        tally: Tally,
        typed: String,
        reason: String,
        editing: bool,
    },
}

impl App {
    pub(super) fn overlay_action(
        &mut self,
        overlay: Overlay,
        action: Action,
        out: &mut Vec<Command>,
    ) {
        match (overlay, action) {
            (Overlay::Confirm(_), action) => self.confirm_action(action, out),
            (Overlay::ConfirmBulk { .. }, action) => self.bulk_dialog_action(action, out),
            (Overlay::Describe(d), action) => self.describe_action(d, action, out),
            (Overlay::Help { scroll }, Action::Up | Action::ScrollUp) => {
                self.scroll_help(scroll.saturating_sub(1));
            }
            (Overlay::Help { scroll }, Action::Down | Action::ScrollDown) => {
                self.scroll_help(scroll.saturating_add(1));
            }
            (Overlay::Help { scroll }, Action::PageDown) => {
                self.scroll_help(scroll.saturating_add(10));
            }
            (Overlay::Help { scroll }, Action::PageUp) => {
                self.scroll_help(scroll.saturating_sub(10));
            }
            (_, Action::Dismiss | Action::Back | Action::ToggleHelp | Action::Quit) => {
                self.overlay = None;
            }
            _ => {}
        }
    }

    pub(super) fn scroll_help(&mut self, to: u16) {
        if let Some(Overlay::Help { scroll }) = &mut self.overlay {
            *scroll = to.min(500);
        }
    }
}
