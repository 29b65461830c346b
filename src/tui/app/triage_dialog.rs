//! Requeue, discard and retry-now of the selected work item: the key opens a confirmation
//! (a discard also needs a reason, typed in the dialog's field), and the change and its
//! audit entry go through [`crate::store::Store::triage_work`], exactly as `leasehold work
//! requeue|discard|retry-now ID` does. Whether the verb applies is judged by the store
//! inside its transaction; a refusal comes back on the status line in its words.

use super::{Act, App, ViewId};
use crate::rules::triage::Verb;

impl App {
    pub(super) fn ask_triage(&mut self, verb: Verb) {
        self.ask_on_row(
            Act::Triage(verb),
            ViewId::Work,
            "select a work item (4 for work)",
        );
    }
}
