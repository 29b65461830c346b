//! Schedule firings: which due instants an observation enqueues. Every authority derives
//! the same instants from the same definition, so N pollers converge on one firing id.
//!
//! A boundary found at most `on_time` after its instant is *on time* and always fires: an
//! observer polls at its own cadence and reads the clock a little after each tick, so two
//! boundaries of a schedule as frequent as its polls may pass between two observations
//! without any downtime. Only the older ones, *missed* while nobody observed, are what the
//! catch-up policy thins (docs/ARCHITECTURE.md#schedules).

use crate::clock::Millis;
use crate::foundation::cron::ZonedCron;
use crate::model::schedule::{CatchUp, Schedule, Trigger};

/// The outcome of observing a schedule at `now`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Observation {
    /// Due instants to enqueue as firings, oldest first.
    pub due: Vec<Millis>,
    /// The new high-water mark (latest boundary considered).
    pub last_due: Option<Millis>,
    /// The next boundary after it (`Millis::MAX` when a delay has fired).
    pub next_due: Millis,
}

/// The first boundary of a trigger at or after `from` (`Millis::MAX` for a cron trigger
/// that names no later instant, or whose stored text no longer reads).
#[must_use]
pub fn first_boundary(trigger: &Trigger, from: Millis) -> Millis {
    match trigger {
        Trigger::Interval { every_ms } => {
            let every = (*every_ms).max(1);
            from.div_euclid(every) * every
                + if from.rem_euclid(every) == 0 {
                    0
                } else {
                    every
                }
        }
        Trigger::Delay { after_ms } => *after_ms,
        Trigger::Cron { expr, tz } => ZonedCron::parse(expr, tz)
            .ok()
            .and_then(|cron| cron.next_after(from.saturating_sub(1)))
            .unwrap_or(Millis::MAX),
    }
}

/// The on-time window of an observer polling every `poll_interval_ms`: two polls, so a
/// poll that comes late by up to a whole interval still finds every boundary on time.
#[must_use]
pub fn on_time_window(poll_interval_ms: Millis) -> Millis {
    poll_interval_ms.max(1).saturating_mul(2)
}

/// Which firings are due at `now`: every boundary found within `on_time` of its instant,
/// and of the older ones as many as the catch-up policy keeps, most recent first.
#[must_use]
pub fn observe(schedule: &Schedule, now: Millis, on_time: Millis) -> Observation {
    let unchanged = Observation {
        due: Vec::new(),
        last_due: schedule.last_due,
        next_due: schedule.next_due,
    };
    if schedule.next_due > now {
        return unchanged;
    }
    match &schedule.trigger {
        Trigger::Delay { after_ms } => Observation {
            due: vec![*after_ms],
            last_due: Some(*after_ms),
            next_due: Millis::MAX,
        },
        Trigger::Cron { expr, tz } => match ZonedCron::parse(expr, tz) {
            Ok(cron) => observe_cron(schedule, &cron, now, on_time),
            Err(_) => Observation {
                next_due: Millis::MAX,
                ..unchanged
            },
        },
        Trigger::Interval { every_ms } => {
            let every = (*every_ms).max(1);
            let latest = now.div_euclid(every) * every;
            let passed = (latest - schedule.next_due) / every + 1;
            let first_on_time = first_boundary(
                &schedule.trigger,
                now.saturating_sub(on_time.max(0)).max(schedule.next_due),
            );
            let on_time_count = if first_on_time <= latest {
                (latest - first_on_time) / every + 1
            } else {
                0
            };
            let keep = match schedule.catch_up {
                CatchUp::Latest => 1,
                CatchUp::All => passed,
                CatchUp::Last(n) => i64::from(n),
            }
            .max(on_time_count)
            .min(passed);
            let due = (0..keep).rev().map(|i| latest - i * every).collect();
            Observation {
                due,
                last_due: Some(latest),
                next_due: latest + every,
            }
        }
    }
}

/// [`observe`] for a cron trigger: its instants are not evenly spaced, so they are walked
/// back from `now`, as far as the policy and the on-time window reach.
fn observe_cron(
    schedule: &Schedule,
    cron: &ZonedCron,
    now: Millis,
    on_time: Millis,
) -> Observation {
    let policy = match schedule.catch_up {
        CatchUp::Latest => 1,
        CatchUp::All => usize::MAX,
        CatchUp::Last(n) => usize::try_from(n).unwrap_or(usize::MAX),
    };
    let latest = cron.at_or_before(now);
    let mut due = Vec::new();
    let mut at = latest;
    while let Some(boundary) = at.filter(|b| *b >= schedule.next_due) {
        if due.len() >= policy && boundary < now.saturating_sub(on_time.max(0)) {
            break;
        }
        due.push(boundary);
        at = cron.at_or_before(boundary - 1);
    }
    due.reverse();
    Observation {
        due,
        last_due: latest.or(schedule.last_due),
        next_due: cron.next_after(now).unwrap_or(Millis::MAX),
    }
}

/// An operator's change to a schedule's life (`leasehold schedule pause|resume|delete`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Control {
    /// Stop firing; the definition and its high-water mark stay.
    Pause,
    /// Fire again; the boundaries missed while paused go through the catch-up policy.
    Resume,
    /// Remove the definition; firings already enqueued stay and run.
    Delete,
}

impl Control {
    /// The audit action naming it.
    #[must_use]
    pub fn action(self) -> &'static str {
        match self {
            Self::Pause => "schedule-pause",
            Self::Resume => "schedule-resume",
            Self::Delete => "schedule-delete",
        }
    }

    /// What it is doing, for a status line: `pausing`, `resuming`, `deleting`.
    #[must_use]
    pub fn doing(self) -> &'static str {
        match self {
            Self::Pause => "pausing",
            Self::Resume => "resuming",
            Self::Delete => "deleting",
        }
    }

    /// What it did, for people: `paused`, `resumed`, `deleted`.
    #[must_use]
    pub fn done(self) -> &'static str {
        match self {
            Self::Pause => "paused",
            Self::Resume => "resumed",
            Self::Delete => "deleted",
        }
    }
}

/// The verdict of an operator's control on a row (a [`Control`] on a schedule, a
/// handler's pause or resume).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Controlled<T> {
    /// The row as it is to be stored, or `None` when it is removed.
    Changed(Option<T>),
    /// Nothing to do: pausing a paused one, resuming a running one.
    Already,
}

/// Judges `control` on `current` at `now`. Pausing keeps `next_due` where it was, so a
/// resume finds the boundaries passed meanwhile due and older than any on-time window:
/// missed, as after an outage, and thinned by the catch-up policy.
#[must_use]
pub fn control(current: &Schedule, control: Control, now: Millis) -> Controlled<Schedule> {
    let paused = current.paused_at.is_some();
    match control {
        Control::Pause if paused => Controlled::Already,
        Control::Resume if !paused => Controlled::Already,
        Control::Pause => Controlled::Changed(Some(Schedule {
            paused_at: Some(now),
            ..current.clone()
        })),
        Control::Resume => Controlled::Changed(Some(Schedule {
            paused_at: None,
            ..current.clone()
        })),
        Control::Delete => Controlled::Changed(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::schedule::Schedule;

    fn every(ms: Millis, catch_up: CatchUp, next_due: Millis) -> Schedule {
        Schedule {
            schedule_id: "s".into(),
            trigger: Trigger::Interval { every_ms: ms },
            catch_up,
            handler: "h".into(),
            payload: "{}".into(),
            compat: "k".into(),
            last_due: None,
            next_due,
            created_at: 0,
            paused_at: None,
        }
    }

    #[test]
    fn boundaries_are_epoch_aligned() {
        assert_eq!(
            first_boundary(&Trigger::Interval { every_ms: 1_000 }, 1_500),
            2_000
        );
        assert_eq!(
            first_boundary(&Trigger::Interval { every_ms: 1_000 }, 2_000),
            2_000
        );
    }

    #[test]
    fn catch_up_policies_choose_how_many_missed_firings() {
        assert_eq!(
            observe(&every(100, CatchUp::Latest, 100), 550, 0).due,
            vec![500]
        );
        assert_eq!(
            observe(&every(100, CatchUp::All, 100), 550, 0).due,
            vec![100, 200, 300, 400, 500]
        );
        assert_eq!(
            observe(&every(100, CatchUp::Last(2), 100), 550, 0).due,
            vec![400, 500]
        );
        assert_eq!(
            observe(&every(100, CatchUp::All, 100), 550, 0).next_due,
            600
        );
        assert!(
            observe(&every(100, CatchUp::All, 600), 550, 0)
                .due
                .is_empty()
        );
    }

    #[test]
    fn boundaries_found_on_time_fire_whatever_the_policy() {
        // Two boundaries passed since the last observation, the older found 1 001 ms late:
        // on time within a 2 s window, so `latest` fires both.
        assert_eq!(
            observe(&every(1_000, CatchUp::Latest, 2_000), 3_001, 2_000).due,
            vec![2_000, 3_000]
        );
        // After an outage only the on-time ones count beyond the policy's own number.
        assert_eq!(
            observe(&every(1_000, CatchUp::Latest, 1_000), 60_500, 2_000).due,
            vec![59_000, 60_000]
        );
        assert_eq!(
            observe(&every(1_000, CatchUp::Last(5), 1_000), 60_500, 2_000).due,
            vec![56_000, 57_000, 58_000, 59_000, 60_000]
        );
        assert_eq!(
            observe(&every(100, CatchUp::Latest, 500), 550, 2_000).due,
            vec![500]
        );
    }

    #[test]
    fn a_paused_schedule_resumes_into_its_catch_up_policy() {
        let running = every(1_000, CatchUp::Last(2), 2_000);
        let Controlled::Changed(Some(paused)) = control(&running, Control::Pause, 2_500) else {
            panic!("pauses");
        };
        assert_eq!((paused.paused_at, paused.next_due), (Some(2_500), 2_000));
        assert_eq!(control(&paused, Control::Pause, 3_000), Controlled::Already);
        let Controlled::Changed(Some(resumed)) = control(&paused, Control::Resume, 9_500) else {
            panic!("resumes");
        };
        assert_eq!(resumed.paused_at, None);
        assert_eq!(
            control(&resumed, Control::Resume, 9_500),
            Controlled::Already
        );
        // Seven boundaries passed while paused; `last 2` keeps two, and so does the window.
        assert_eq!(observe(&resumed, 9_500, 2_000).due, vec![8_000, 9_000]);
        assert_eq!(
            control(&resumed, Control::Delete, 9_500),
            Controlled::Changed(None)
        );
    }

    #[test]
    fn a_cron_schedule_catches_up_like_an_interval() {
        // Every 10 minutes (UTC), last fired at 00:00; observed at 01:05 after an outage.
        let cron = Schedule {
            trigger: Trigger::cron("*/10 * * * *", "UTC").expect("valid"),
            ..every(1, CatchUp::Last(2), 600_000)
        };
        let seen = observe(&cron, 3_900_000, 2_000);
        assert_eq!(seen.due, vec![3_000_000, 3_600_000]);
        assert_eq!((seen.last_due, seen.next_due), (Some(3_600_000), 4_200_000));
        let all = Schedule {
            catch_up: CatchUp::All,
            ..cron.clone()
        };
        assert_eq!(observe(&all, 3_900_000, 2_000).due.len(), 6);
        // Three boundaries passed, one of them on time: `last 2` keeps the two newest.
        assert_eq!(
            observe(&cron, 1_801_000, 2_000).due,
            vec![1_200_000, 1_800_000]
        );
    }
}
