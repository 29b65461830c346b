//! Pause, resume and delete of the selected schedule, from the schedules view, and pause
//! and resume of the selected work item's handler, fleet-wide, from the work view: the key
//! opens a confirmation (with an optional reason), and the change and its audit entry go
//! through [`crate::store::Store::control_schedule`] or
//! [`crate::store::Store::control_handler`], exactly as `leasehold schedule
//! pause|resume|delete ID` and `leasehold handler pause|resume NAME` do. An unknown
//! schedule (deleted meanwhile) comes back refused on the status line.

use super::{Act, App, Role, ViewId};
use crate::rules::handler::HandlerControl;
use crate::rules::schedule::Control;

impl App {
    pub(super) fn ask_schedule(&mut self, control: Control) {
        self.ask_on_row(
            Act::Schedule(control),
            ViewId::Schedules,
            "select a schedule (:schedules)",
        );
    }
}

impl App {
    pub(super) fn ask_handler(&mut self, control: HandlerControl) {
        if self.refused_read_only() {
            return;
        }
        let handler = (self.view == ViewId::Work)
            .then(|| self.selected_row().and_then(|r| r.handler.clone()))
            .flatten();
        match handler {
            Some(handler) => self.ask(Act::Handler(control), handler),
            None => self.say("select a work item of the handler (:work)", Role::Warning),
        }
    }
}
