//! Stepping aside from a crowded write lock.
//!
//! Every write of every authority on one store takes the store's one write lock in turn,
//! and an item claimed at one of an authority's turns is completed at its next: its claim →
//! complete time is one round of the queue. With six authorities each holding a full
//! batch, a round is six holds, and the fleet drains no faster than one authority could
//! (the lock is the bound), so every extra claimer lengthens every item's wait and adds
//! nothing. Smaller batches for everyone shorten the round but pay the commit's fixed cost
//! six times over.
//!
//! So an authority that finds the queue long steps aside instead: it finishes what it
//! holds, claims nothing for a while, and leaves full batches to the few ahead of it. The
//! queue's length is read from this authority's own turns, with nothing shared: the time a
//! write waited for the lock against the time its own polls hold it is how many writers
//! went before it. An authority that holds work sheds with a probability that brings the
//! expected number of claimers back to [`MAX_AHEAD`] + 1; one arriving with nothing in
//! hand joins only a queue shorter than [`JOIN_AHEAD`] (the lock has slack), so that the
//! claimers do not change at every round. A step aside lasts about two rounds of the queue
//! as it was seen, jittered, doubling while the queue stays long, and never longer than
//! [`MAX_ASIDE`]: an authority that left is back within that bound whatever happens to
//! those that stayed (work they leave behind is reclaimed as it would be anyway).
//!
//! Waits shorter than [`MIN_QUEUE_WAIT`] are never a queue: a lone authority's writes on a
//! busy machine must not read as a crowd.
//!
//! Kept on SQLite only ([`kept_on`]), where it was measured to keep both the tail and the
//! drain (docs/SCALING.md): six authorities' p99 came to about twice one authority's, and
//! beside two busy loops the drain held. On PostgreSQL the few claimers lost the drain
//! under CPU contention (to a quarter), so every authority claims there, as on the memory
//! store, whose holds are microseconds.

use std::time::{Duration, Instant};

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use crate::store::StoreKind;

/// Writers ahead in the lock's queue that an authority keeps claiming behind.
pub(super) const MAX_AHEAD: f64 = 2.0;

/// The queue an authority with nothing in hand joins: shorter than one writer, so that it
/// joins when the claimers leave the lock idle, not whenever one of them is out of it.
pub(super) const JOIN_AHEAD: f64 = 1.0;

/// A first claim behind a queue (no hold yet to read its length by) takes this share of a
/// batch: eight authorities started together do not all claim full batches at once.
pub(super) const PROBE_SHARE: usize = 8;

/// A wait for the lock shorter than this is not taken for a queue.
pub(super) const MIN_QUEUE_WAIT: Duration = Duration::from_millis(10);

/// The longest an authority stays aside at a time.
pub(super) const MAX_ASIDE: Duration = Duration::from_secs(1);

/// How much of a new hold the running estimate takes in.
const HOLD_WEIGHT: f64 = 0.25;

/// What a poll claims, decided at its grant of the lock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Turn {
    /// Up to its free slots.
    Claim,
    /// A [`PROBE_SHARE`]th of that.
    Probe,
    /// Nothing: the authority stands aside.
    Aside,
}

impl Turn {
    /// How many of `free` slots the poll may fill.
    pub(super) fn limit(self, free: usize) -> usize {
        match self {
            Self::Claim => free,
            Self::Probe => free.div_ceil(PROBE_SHARE),
            Self::Aside => 0,
        }
    }
}

/// Whether authorities on a store of `kind` step aside from a long queue.
pub(super) fn kept_on(kind: StoreKind) -> bool {
    kind == StoreKind::Sqlite
}

/// One authority's view of the write lock's queue, from its own polls.
#[derive(Debug)]
pub(super) struct Turns {
    /// How long this authority's polls hold the lock, a moving average.
    held: Option<Duration>,
    /// Until when it claims nothing.
    aside_until: Option<Instant>,
    /// Steps aside in a row: each doubles the next one's length.
    in_a_row: u32,
    rng: SmallRng,
}

impl Turns {
    /// A view with no history, its jitter drawn from `seed`.
    pub(super) fn new(seed: u64) -> Self {
        Self {
            held: None,
            aside_until: None,
            in_a_row: 0,
            rng: SmallRng::seed_from_u64(seed),
        }
    }

    /// Whether this authority is standing aside at `at`: its polls claim nothing.
    pub(super) fn aside(&self, at: Instant) -> bool {
        self.aside_until.is_some_and(|until| at < until)
    }

    /// How many writers went before a write that waited `waited` for the lock, by this
    /// authority's own holds; 0 while it has none to compare with, or the wait was short.
    pub(super) fn ahead(&self, waited: Duration) -> f64 {
        match self.held {
            Some(held) if waited >= MIN_QUEUE_WAIT && !held.is_zero() => {
                waited.as_secs_f64() / held.as_secs_f64()
            }
            _ => 0.0,
        }
    }

    /// Decides, at a poll's grant of the lock after waiting `waited`, what the poll claims.
    /// `holding` says whether the authority has work in hand (it is finishing items in
    /// this poll, or still running some): such an authority is one of the queue's claimers
    /// and sheds with a probability; one arriving empty-handed joins only a queue shorter
    /// than one writer, so that the claimers do not change at every round. A poll that
    /// claims nothing starts a step aside.
    pub(super) fn at_grant(&mut self, waited: Duration, holding: bool, at: Instant) -> Turn {
        let ahead = self.ahead(waited);
        let turn = if self.aside(at) {
            Turn::Aside
        } else if self.held.is_none() {
            // No hold of its own to read the wait by: a long wait is a queue of unknown
            // length, so a small claim, whose hold is then the measure.
            if waited >= MIN_QUEUE_WAIT {
                Turn::Probe
            } else {
                Turn::Claim
            }
        } else if holding {
            let shed =
                ahead > MAX_AHEAD && self.rng.random_bool((ahead - MAX_AHEAD) / (ahead + 1.0));
            if shed { Turn::Aside } else { Turn::Claim }
        } else if ahead >= JOIN_AHEAD {
            Turn::Aside
        } else {
            Turn::Claim
        };
        match turn {
            Turn::Aside if !self.aside(at) => {
                // One pass through the queue as this poll saw it, twice, then doubling.
                let round = waited + self.held.unwrap_or_default();
                let doubled = round.saturating_mul(2 << self.in_a_row.min(4));
                let length = doubled
                    .mul_f64(self.rng.random_range(0.5..1.5))
                    .min(MAX_ASIDE);
                self.aside_until = Some(at + length);
                self.in_a_row += 1;
            }
            Turn::Aside => {}
            Turn::Claim | Turn::Probe => {
                self.aside_until = None;
                self.in_a_row = 0;
            }
        }
        turn
    }

    /// Takes in how long a poll that claimed held the lock, from its grant to its commit's
    /// answer.
    pub(super) fn held(&mut self, held: Duration) {
        self.held = Some(match self.held {
            None => held,
            Some(before) => before.mul_f64(1.0 - HOLD_WEIGHT) + held.mul_f64(HOLD_WEIGHT),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    fn holding_for(held: Duration) -> Turns {
        let mut turns = Turns::new(7);
        turns.held(held);
        turns
    }

    /// Only SQLite's authorities step aside.
    #[test]
    fn kept_on_sqlite_only() {
        assert!(kept_on(StoreKind::Sqlite));
        assert!(!kept_on(StoreKind::Postgres));
        assert!(!kept_on(StoreKind::Memory));
    }

    /// A wait under the floor is no queue: a lone authority on a slow machine claims.
    /// With no hold of its own yet, a short wait claims in full and a long one probes.
    #[test]
    fn short_waits_are_no_queue_and_a_first_long_wait_probes() {
        let at = Instant::now();
        let mut tiny = holding_for(Duration::from_micros(20));
        assert!(tiny.ahead(ms(9)).abs() < f64::EPSILON);
        assert_eq!(tiny.at_grant(ms(9), false, at), Turn::Claim);
        assert_eq!(Turns::new(1).at_grant(ms(9), false, at), Turn::Claim);
        assert_eq!(Turns::new(1).at_grant(ms(500), true, at), Turn::Probe);
        assert_eq!(Turn::Probe.limit(256), 32);
        assert_eq!(Turn::Probe.limit(3), 1);
        assert_eq!(Turn::Aside.limit(256), 0);
    }

    /// An empty-handed arrival joins a lock with slack and steps aside behind a writer,
    /// for about two rounds of the queue as it saw it, jittered, never past the bound.
    #[test]
    fn an_arrival_joins_only_a_lock_with_slack() {
        let at = Instant::now();
        assert_eq!(holding_for(ms(20)).at_grant(ms(15), false, at), Turn::Claim);
        let mut behind = holding_for(ms(20));
        assert_eq!(behind.at_grant(ms(40), false, at), Turn::Aside);
        // A round seen: 40 ms waited + 20 ms held; twice that, times 0.5 to 1.5.
        assert!(behind.aside(at + ms(59)), "at least one round");
        assert!(!behind.aside(at + ms(181)), "at most three rounds");
    }

    /// While aside an authority claims nothing, even at an empty queue; once its time is
    /// up it claims again, and the run of steps aside starts over.
    #[test]
    fn aside_claims_nothing_until_its_time_is_up() {
        let at = Instant::now();
        let mut turns = holding_for(ms(20));
        assert_eq!(turns.at_grant(ms(100), false, at), Turn::Aside);
        assert_eq!(
            turns.at_grant(Duration::ZERO, true, at + ms(1)),
            Turn::Aside
        );
        assert_eq!(
            turns.at_grant(Duration::ZERO, false, at + MAX_ASIDE),
            Turn::Claim
        );
        assert_eq!(turns.in_a_row, 0);
    }

    /// Steps aside in a row double in length up to the bound.
    #[test]
    fn steps_aside_in_a_row_grow_to_the_bound() {
        let mut turns = holding_for(ms(20));
        let mut at = Instant::now();
        let mut lengths = Vec::new();
        for _ in 0..8 {
            assert_eq!(turns.at_grant(ms(60), false, at), Turn::Aside);
            let until = turns.aside_until.expect("aside");
            lengths.push(until - at);
            at = until;
        }
        assert!(lengths.iter().all(|l| *l <= MAX_ASIDE), "{lengths:?}");
        assert_eq!(lengths.last(), Some(&MAX_ASIDE), "{lengths:?}");
    }

    /// Claimers behind a long queue shed so that about `MAX_AHEAD + 1` keep claiming:
    /// behind five writers (six claimers), half step aside; behind two none do.
    #[test]
    fn claimers_shed_down_to_the_queue_kept() {
        let at = Instant::now();
        let mut turns = holding_for(ms(20));
        assert!((0..200).all(|_| turns.at_grant(ms(40), true, at) == Turn::Claim));
        let trials = 4_000_u32;
        let shed = (0..trials)
            .filter(|i| {
                let mut turns = Turns::new(u64::from(*i));
                turns.held(ms(20));
                turns.at_grant(ms(100), true, at) == Turn::Aside
            })
            .count();
        let share = f64::from(u32::try_from(shed).expect("small")) / f64::from(trials);
        assert!((share - 0.5).abs() < 0.04, "shed {share}");
    }

    /// The hold estimate follows the holds, a quarter at a time.
    #[test]
    fn the_hold_is_a_moving_average() {
        let mut turns = Turns::new(3);
        turns.held(ms(40));
        turns.held(ms(80));
        assert_eq!(turns.held, Some(ms(50)));
    }
}
