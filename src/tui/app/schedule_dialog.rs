//! Pause, resume and delete of the selected schedule, from the schedules view: the key
//! opens a confirmation (with an optional reason), and the change and its audit entry go
//! through [`crate::store::Store::control_schedule`], exactly as `leasehold schedule
//! pause|resume|delete ID` do. An unknown schedule (deleted meanwhile) comes back refused
//! on the status line.

use super::{Act, App, ViewId};
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
