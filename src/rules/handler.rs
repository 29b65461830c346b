//! Fleet-wide rules of a handler: an operator's pause and resume, and its claim rate. A
//! rate is a *fixed window* aligned to the epoch: the window of `now` starts at the last
//! multiple of the interval, and the fleet may claim the rate's `claims` items of the
//! handler in it. Every authority derives the same window from its clock, and the count
//! lives in the store, so N authorities together claim at most `claims` per window (at
//! most twice that in one interval straddling a boundary, the price of a fixed window).

use crate::clock::Millis;
use crate::model::{HandlerPause, Rate, RateWindow};

pub use super::schedule::Controlled;

/// An operator's change to a handler, fleet-wide (`leasehold handler pause|resume`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HandlerControl {
    /// Nobody claims its work until it is resumed; attempts in flight finish.
    Pause,
    /// Its work is claimable again.
    Resume,
}

impl HandlerControl {
    /// The audit action naming it.
    #[must_use]
    pub fn action(self) -> &'static str {
        match self {
            Self::Pause => "handler-pause",
            Self::Resume => "handler-resume",
        }
    }

    /// What it is doing, for a status line: `pausing`, `resuming`.
    #[must_use]
    pub fn doing(self) -> &'static str {
        match self {
            Self::Pause => "pausing",
            Self::Resume => "resuming",
        }
    }

    /// What it did, for people: `paused`, `resumed`.
    #[must_use]
    pub fn done(self) -> &'static str {
        match self {
            Self::Pause => "paused",
            Self::Resume => "resumed",
        }
    }
}

/// Judges `control` of `handler` (whose pause is `current`, if paused) by `actor` at
/// `now`: pausing a paused handler or resuming a running one changes nothing, so the first
/// pause's who, when and why stand.
#[must_use]
pub fn control(
    handler: &str,
    current: Option<&HandlerPause>,
    control: HandlerControl,
    actor: &str,
    reason: &str,
    now: Millis,
) -> Controlled<HandlerPause> {
    match (control, current) {
        (HandlerControl::Pause, Some(_)) | (HandlerControl::Resume, None) => Controlled::Already,
        (HandlerControl::Pause, None) => Controlled::Changed(Some(HandlerPause {
            handler: handler.into(),
            paused_at: now,
            paused_by: actor.into(),
            reason: reason.into(),
        })),
        (HandlerControl::Resume, Some(_)) => Controlled::Changed(None),
    }
}

/// Where the rate window holding `now` starts.
#[must_use]
pub fn window_start(rate: Rate, now: Millis) -> Millis {
    now - now.rem_euclid(rate.per_ms)
}

/// How many more items of the handler the fleet may claim at `now`, given the stored
/// window (a window of an earlier interval counts nothing).
#[must_use]
pub fn room(rate: Rate, window: Option<&RateWindow>, now: Millis) -> usize {
    let used = window
        .filter(|w| w.window_start == window_start(rate, now))
        .map_or(0, |w| w.claims);
    usize::try_from(u64::from(rate.claims).saturating_sub(used)).unwrap_or(usize::MAX)
}

/// The window after `claimed` more claims of `handler` at `now`.
#[must_use]
pub fn charge(
    handler: &str,
    rate: Rate,
    window: Option<&RateWindow>,
    claimed: u64,
    now: Millis,
) -> RateWindow {
    let start = window_start(rate, now);
    let before = window
        .filter(|w| w.window_start == start)
        .map_or(0, |w| w.claims);
    RateWindow {
        handler: handler.into(),
        window_start: start,
        claims: before + claimed,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pause_keeps_its_first_author_and_a_resume_clears_it() {
        let paused = control("h", None, HandlerControl::Pause, "alice", "bad", 5);
        let Controlled::Changed(Some(p)) = paused else {
            panic!("pauses");
        };
        assert_eq!((p.paused_at, p.paused_by.as_str()), (5, "alice"));
        assert_eq!(
            control("h", Some(&p), HandlerControl::Pause, "bob", "", 9),
            Controlled::Already
        );
        assert_eq!(
            control("h", Some(&p), HandlerControl::Resume, "bob", "", 9),
            Controlled::Changed(None)
        );
        assert_eq!(
            control("h", None, HandlerControl::Resume, "bob", "", 9),
            Controlled::Already
        );
    }

    #[test]
    fn the_window_is_fixed_and_a_new_one_starts_empty() {
        let rate = Rate {
            claims: 3,
            per_ms: 1_000,
        };
        assert_eq!(room(rate, None, 1_500), 3);
        let w = charge("h", rate, None, 2, 1_500);
        assert_eq!((w.window_start, w.claims), (1_000, 2));
        assert_eq!(room(rate, Some(&w), 1_999), 1);
        let w = charge("h", rate, Some(&w), 1, 1_999);
        assert_eq!(room(rate, Some(&w), 1_999), 0);
        assert_eq!(room(rate, Some(&w), 2_000), 3, "the next window");
        assert_eq!(charge("h", rate, Some(&w), 1, 2_000).claims, 1);
    }
}
