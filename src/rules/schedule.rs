//! Schedule firings: which due instants an observation enqueues. Every authority derives
//! the same instants from the same definition, so N pollers converge on one firing id.

use crate::clock::Millis;
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

/// The first boundary of a trigger at or after `from`.
#[must_use]
pub fn first_boundary(trigger: Trigger, from: Millis) -> Millis {
    match trigger {
        Trigger::Interval { every_ms } => {
            let every = every_ms.max(1);
            from.div_euclid(every) * every
                + if from.rem_euclid(every) == 0 {
                    0
                } else {
                    every
                }
        }
        Trigger::Delay { after_ms } => after_ms,
    }
}

/// Which firings are due at `now`, honouring the catch-up policy.
#[must_use]
pub fn observe(schedule: &Schedule, now: Millis) -> Observation {
    let unchanged = Observation {
        due: Vec::new(),
        last_due: schedule.last_due,
        next_due: schedule.next_due,
    };
    if schedule.next_due > now {
        return unchanged;
    }
    match schedule.trigger {
        Trigger::Delay { after_ms } => Observation {
            due: vec![after_ms],
            last_due: Some(after_ms),
            next_due: Millis::MAX,
        },
        Trigger::Interval { every_ms } => {
            let every = every_ms.max(1);
            let latest = now.div_euclid(every) * every;
            let missed = (latest - schedule.next_due) / every + 1;
            let keep = match schedule.catch_up {
                CatchUp::Latest => 1,
                CatchUp::All => missed,
                CatchUp::Last(n) => missed.min(i64::from(n)),
            };
            let due = (0..keep).rev().map(|i| latest - i * every).collect();
            Observation {
                due,
                last_due: Some(latest),
                next_due: latest + every,
            }
        }
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
        }
    }

    #[test]
    fn boundaries_are_epoch_aligned() {
        assert_eq!(
            first_boundary(Trigger::Interval { every_ms: 1_000 }, 1_500),
            2_000
        );
        assert_eq!(
            first_boundary(Trigger::Interval { every_ms: 1_000 }, 2_000),
            2_000
        );
    }

    #[test]
    fn catch_up_policies_choose_how_many_missed_firings() {
        assert_eq!(
            observe(&every(100, CatchUp::Latest, 100), 550).due,
            vec![500]
        );
        assert_eq!(
            observe(&every(100, CatchUp::All, 100), 550).due,
            vec![100, 200, 300, 400, 500]
        );
        assert_eq!(
            observe(&every(100, CatchUp::Last(2), 100), 550).due,
            vec![400, 500]
        );
        assert_eq!(observe(&every(100, CatchUp::All, 100), 550).next_due, 600);
        assert!(observe(&every(100, CatchUp::All, 600), 550).due.is_empty());
    }
}
