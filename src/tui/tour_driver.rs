//! Runs the guided tour ([`crate::cluster::tour::Tour`]) beside the dashboard: started by
//! `leasehold demo --tour` or the `T` key, ticked off the UI thread, its caption sent to
//! the app as an action. The event loop and the test harness share this one driver, so
//! what the tests drive is what people see.

use std::sync::{Mutex, MutexGuard, PoisonError};

use super::action::Action;
use crate::cluster::control::ClusterControl;
use crate::cluster::tour::Tour;
use crate::store::Store;

/// What the app asks of the tour.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TourCommand {
    /// Start (or restart) the tour; `manual` waits for `n` between steps.
    Start { manual: bool },
    /// Next step (manual mode), or skip the one under way.
    Next,
}

/// The tour, if one runs.
#[derive(Debug, Default)]
pub struct TourDriver {
    tour: Mutex<Option<Tour>>,
}

impl TourDriver {
    fn tour(&self) -> MutexGuard<'_, Option<Tour>> {
        self.tour.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Carries out `command`; returns the caption to show.
    pub fn command(&self, command: TourCommand, store: &Store) -> Action {
        let mut tour = self.tour();
        match command {
            TourCommand::Start { manual } => *tour = Some(Tour::new(manual)),
            TourCommand::Next => {
                if let Some(t) = tour.as_mut() {
                    t.next(store.now());
                }
            }
        }
        Action::Caption(tour.as_ref().map(Tour::caption))
    }

    /// Whether a tour runs.
    #[must_use]
    pub fn active(&self) -> bool {
        self.tour().is_some()
    }

    /// One tick of the tour; the caption to show (`None` when no tour runs). A store
    /// failure leaves the tour where it was, to try again on the next tick.
    pub fn tick(&self, cluster: &dyn ClusterControl, store: &Store) -> Option<Action> {
        let mut tour = self.tour();
        let t = tour.as_mut()?;
        let _ = t.tick(cluster, store);
        Some(Action::Caption(Some(t.caption())))
    }
}
