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
//! went before it, and no more than the commits the store counted since this authority's
//! last turn (time alone would take a machine short of CPU, or another program's long
//! transaction, for a crowd). An authority that holds work sheds with a probability that
//! brings the expected number of claimers back to [`MAX_AHEAD`] + 1; one arriving with
//! nothing in hand joins only a queue shorter than [`JOIN_AHEAD`] (the lock has slack), so
//! that the claimers do not change at every round. A step aside lasts about two rounds of
//! the queue as it was seen, jittered, doubling while the queue stays long, and never
//! longer than [`MAX_ASIDE`]: an authority that left is back within that bound whatever
//! happens to those that stayed (work they leave behind is reclaimed as it would be
//! anyway).
//!
//! Waits shorter than [`MIN_QUEUE_WAIT`] are never a queue: a lone authority's writes on a
//! busy machine must not read as a crowd. Nor are waits of [`STALLED_WAIT`] or longer: a
//! holder stopped or stalled mid-write (a process under `SIGSTOP`, a long transaction of
//! another program) keeps every writer waiting whatever the queue, and an authority that
//! took such a wait for a crowd would stand aside at every turn for as long as the stall
//! lasts — claiming nothing, reclaiming nothing, so that a stopped authority's lapsed work
//! would never be taken over. After such a wait an authority claims as if nobody stood
//! ahead.
//!
//! By default on SQLite only (`AuthorityConfig::step_aside`), where it was measured to keep
//! both the tail and the drain (docs/SCALING.md): six authorities' p99 came to about twice
//! one authority's, and beside two busy loops the drain held. On PostgreSQL it shortens the
//! tail as much on a machine with cores to spare, but a few claimers sharing their cores
//! with other programs lost most of the drain (the fleet got a far smaller share of the
//! cores: see docs/SCALING.md), so there it is the operator's choice (`--step-aside on`);
//! the memory store's holds are microseconds.

use std::time::{Duration, Instant};

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

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

/// A wait for the lock this long is a stalled holder, not a queue of claimers: the host's
/// queue of SQLite writers (`store/sqlite/queue.rs`) bounds a turn by the same second and
/// takes a longer one for a holder stopped mid-transaction.
pub(super) const STALLED_WAIT: Duration = Duration::from_secs(1);

/// The longest an authority stays aside at a time.
pub(super) const MAX_ASIDE: Duration = Duration::from_secs(1);

/// How much of a new hold the running estimate takes in.
const HOLD_WEIGHT: f64 = 0.25;

/// The commits counted at a grant of the lock: the store's revision, and how many of them
/// this authority made (its polls, renewals, heartbeats, finished work), counted on its own
/// handle even where authorities of one process share a store
/// (`Store::counting_own_commits`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Commits {
    pub(super) store: u64,
    pub(super) own: u64,
}

impl Commits {
    /// The commits others made between `before` and `self`.
    fn others_since(self, before: Self) -> u64 {
        let all = self.store.saturating_sub(before.store);
        all.saturating_sub(self.own.saturating_sub(before.own))
    }
}

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

/// One authority's view of the write lock's queue, from its own polls.
#[derive(Debug)]
pub(super) struct Turns {
    /// How long this authority's polls hold the lock, a moving average.
    held: Option<Duration>,
    /// Until when it claims nothing.
    aside_until: Option<Instant>,
    /// Steps aside in a row: each doubles the next one's length.
    in_a_row: u32,
    /// The commits counted at this authority's last grant of the lock.
    last_grant: Option<Commits>,
    rng: SmallRng,
}

impl Turns {
    /// A view with no history, its jitter drawn from `seed`.
    pub(super) fn new(seed: u64) -> Self {
        Self {
            held: None,
            aside_until: None,
            in_a_row: 0,
            last_grant: None,
            rng: SmallRng::seed_from_u64(seed),
        }
    }

    /// Whether this authority is standing aside at `at`: its polls claim nothing.
    pub(super) fn aside(&self, at: Instant) -> bool {
        self.aside_until.is_some_and(|until| at < until)
    }

    /// Whether a wait of `waited` for the lock tells of a queue: neither short nor stalled.
    fn queued(waited: Duration) -> bool {
        (MIN_QUEUE_WAIT..STALLED_WAIT).contains(&waited)
    }

    /// How many writers went before a write that waited `waited` for the lock, by this
    /// authority's own holds, and no more than the `others` commits since its last turn
    /// (when known); 0 while it has no hold to compare with, or the wait was short or
    /// stalled.
    pub(super) fn ahead(&self, waited: Duration, others: Option<u64>) -> f64 {
        let timed = match self.held {
            Some(held) if Self::queued(waited) && !held.is_zero() => {
                waited.as_secs_f64() / held.as_secs_f64()
            }
            _ => 0.0,
        };
        others.map_or(timed, |n| timed.min(n as f64))
    }

    /// Decides, at a poll's grant of the lock after waiting `waited`, with the commits
    /// counted at `now`, what the poll claims. The commits others made between this
    /// authority's last grant and this one are the most writers that can have gone ahead.
    /// `holding` says whether the authority has work in hand (it is finishing items in
    /// this poll, or still running some): such an authority is one of the queue's claimers
    /// and sheds with a probability; one arriving empty-handed joins only a queue shorter
    /// than one writer, so that the claimers do not change at every round. A poll that
    /// claims nothing starts a step aside.
    pub(super) fn at_grant(
        &mut self,
        waited: Duration,
        now: Commits,
        holding: bool,
        at: Instant,
    ) -> Turn {
        let others = self.last_grant.replace(now).map(|b| now.others_since(b));
        let ahead = self.ahead(waited, others);
        let turn = if self.aside(at) {
            Turn::Aside
        } else if self.held.is_none() {
            // No hold of its own to read the wait by: a long wait is a queue of unknown
            // length, so a small claim, whose hold is then the measure.
            if Self::queued(waited) {
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

    /// Commits far past any before them, none of them this authority's: every grant in
    /// these tests finds the store written by many others since the last, so the time
    /// decides, as in a real queue.
    fn crowd() -> Commits {
        use std::sync::atomic::{AtomicU64, Ordering};
        static NEXT: AtomicU64 = AtomicU64::new(0);
        Commits {
            store: NEXT.fetch_add(1_000, Ordering::Relaxed),
            own: 0,
        }
    }

    /// The store at `store` commits, `own` of them this authority's.
    fn counted(store: u64, own: u64) -> Commits {
        Commits { store, own }
    }

    fn holding_for(held: Duration) -> Turns {
        let mut turns = Turns::new(7);
        turns.held(held);
        turns
    }

    /// A wait under the floor is no queue: a lone authority on a slow machine claims.
    /// With no hold of its own yet, a short wait claims in full and a long one probes.
    #[test]
    fn short_waits_are_no_queue_and_a_first_long_wait_probes() {
        let at = Instant::now();
        let mut tiny = holding_for(Duration::from_micros(20));
        assert!(tiny.ahead(ms(9), None).abs() < f64::EPSILON);
        assert_eq!(tiny.at_grant(ms(9), crowd(), false, at), Turn::Claim);
        assert_eq!(
            Turns::new(1).at_grant(ms(9), crowd(), false, at),
            Turn::Claim
        );
        assert_eq!(
            Turns::new(1).at_grant(ms(500), crowd(), true, at),
            Turn::Probe
        );
        assert_eq!(Turn::Probe.limit(256), 32);
        assert_eq!(Turn::Probe.limit(3), 1);
        assert_eq!(Turn::Aside.limit(256), 0);
    }

    /// An empty-handed arrival joins a lock with slack and steps aside behind a writer,
    /// for about two rounds of the queue as it saw it, jittered, never past the bound.
    #[test]
    fn an_arrival_joins_only_a_lock_with_slack() {
        let at = Instant::now();
        assert_eq!(
            holding_for(ms(20)).at_grant(ms(15), crowd(), false, at),
            Turn::Claim
        );
        let mut behind = holding_for(ms(20));
        assert_eq!(behind.at_grant(ms(40), crowd(), false, at), Turn::Aside);
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
        assert_eq!(turns.at_grant(ms(100), crowd(), false, at), Turn::Aside);
        assert_eq!(
            turns.at_grant(Duration::ZERO, crowd(), true, at + ms(1)),
            Turn::Aside
        );
        assert_eq!(
            turns.at_grant(Duration::ZERO, crowd(), false, at + MAX_ASIDE),
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
            assert_eq!(turns.at_grant(ms(60), crowd(), false, at), Turn::Aside);
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
        assert!((0..200).all(|_| turns.at_grant(ms(40), crowd(), true, at) == Turn::Claim));
        let trials = 4_000_u32;
        let shed = (0..trials)
            .filter(|i| {
                let mut turns = Turns::new(u64::from(*i));
                turns.held(ms(20));
                turns.at_grant(ms(100), crowd(), true, at) == Turn::Aside
            })
            .count();
        let share = f64::from(u32::try_from(shed).expect("small")) / f64::from(trials);
        assert!((share - 0.5).abs() < 0.04, "shed {share}");
    }

    /// A wait of the stall bound or more is a holder stopped mid-write, not a queue: an
    /// authority with or without work in hand claims in full after it, however short its
    /// own holds, and after it again (a stopped holder keeps every wait that long).
    #[test]
    fn a_stalled_holder_is_no_queue() {
        let at = Instant::now();
        let mut turns = holding_for(ms(2));
        for waited in [STALLED_WAIT, STALLED_WAIT + ms(5), Duration::from_secs(30)] {
            assert!(turns.ahead(waited, None).abs() < f64::EPSILON);
            assert_eq!(turns.at_grant(waited, crowd(), false, at), Turn::Claim);
            assert_eq!(turns.at_grant(waited, crowd(), true, at), Turn::Claim);
        }
        assert_eq!(
            Turns::new(1).at_grant(STALLED_WAIT, crowd(), false, at),
            Turn::Claim
        );
        // Just under the bound it is a queue, read by the holds as before.
        assert_eq!(turns.at_grant(ms(999), crowd(), false, at), Turn::Aside);
    }

    /// Long waits with nobody else committing between this authority's turns (a machine
    /// short of CPU, another program's long transaction) are no queue: however long the
    /// wait against the hold, the writers ahead are at most the commits counted.
    #[test]
    fn the_writers_ahead_are_at_most_the_commits_between_turns() {
        let at = Instant::now();
        let mut lone = holding_for(ms(2));
        assert_eq!(lone.at_grant(ms(1), counted(100, 7), true, at), Turn::Claim);
        // Its own poll, a renewal and a heartbeat were the commits since: nobody ahead,
        // empty-handed or not.
        assert_eq!(
            lone.at_grant(ms(300), counted(103, 10), false, at),
            Turn::Claim
        );
        assert_eq!(
            lone.at_grant(ms(300), counted(104, 11), true, at),
            Turn::Claim
        );
        // Two others committed: a holder keeps claiming behind two writers.
        assert!((lone.ahead(ms(300), Some(2)) - 2.0).abs() < f64::EPSILON);
        assert_eq!(
            lone.at_grant(ms(300), counted(107, 12), true, at),
            Turn::Claim
        );
        // Five did, and the wait says five too: the queue is long.
        assert!((lone.ahead(ms(10), Some(5)) - 5.0).abs() < f64::EPSILON);
        assert!((lone.ahead(ms(10), Some(50)) - 5.0).abs() < f64::EPSILON);
        assert_eq!(
            lone.at_grant(ms(300), counted(200, 13), false, at),
            Turn::Aside
        );
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
