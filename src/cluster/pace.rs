//! A workload made to be watched: every attempt takes seconds of simulated work, so each
//! authority always holds leases and any fault visibly moves work.
//!
//! The shipped handlers finish in milliseconds, which is right for benchmarks and for
//! headless scenarios that cover minutes of history, but on a live dashboard it means a
//! killed or paused authority owns nothing worth reclaiming. [`WorkPace`] wraps every
//! handler so an attempt spends a seeded 1–5 s (one in eight runs longer), and
//! [`WorkPace::rates`] thins the generator so that many authorities keep up with it
//! instead of piling up a backlog.

use std::sync::Arc;

use rand::Rng;

use super::workload::Rates;
use crate::authority::handlers::{AttemptContext, BlockingHandler, HandlerOutcome};
use crate::clock::Millis;

/// How long simulated work takes, and how much of it arrives.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WorkPace {
    /// Most attempts take between these many milliseconds (uniform).
    pub work_ms: (Millis, Millis),
    /// One attempt in `long_every` takes up to `long_ms` instead.
    pub long_every: u32,
    pub long_ms: Millis,
    /// Multiplier over the watchable arrival rates (1.0: about what three authorities
    /// keep up with).
    pub size: f64,
}

impl Default for WorkPace {
    /// 1–5 s per attempt, one in eight up to 12 s, at size 1.
    fn default() -> Self {
        Self {
            work_ms: (1_000, 5_000),
            long_every: 8,
            long_ms: 12_000,
            size: 1.0,
        }
    }
}

impl WorkPace {
    /// The generator rates for this pace: a steady trickle of every kind (effects,
    /// workflows, events) that `authorities` authorities of four workers drain, times
    /// [`Self::size`].
    #[must_use]
    pub fn rates(&self, authorities: usize) -> Rates {
        let base = Rates::default();
        // Three authorities × four workers at ~3.5 s per attempt finish ~3.4 attempts a
        // second; aim at about half of that so queues stay short but never empty.
        #[allow(clippy::cast_precision_loss)] // a handful of authorities
        let fleet = (authorities.max(1) as f64 / 3.0) * self.size.max(0.0);
        let scale = |v: f64, f: f64| (v * f * fleet).clamp(0.0, 1.0);
        Rates {
            effects: base.effects * 0.4 * fleet,
            orders: scale(base.orders, 0.6),
            other_workflows: scale(base.other_workflows, 0.6),
            events: scale(base.events, 0.5),
            ..base
        }
    }

    /// The time one attempt spends, drawn from the attempt's own seeded generator (so a
    /// retry of the same item draws again, and a run with a seed replays exactly).
    #[must_use]
    pub fn draw(&self, attempt: &AttemptContext) -> Millis {
        let mut rng = attempt.rng("pace");
        let (lo, hi) = (
            self.work_ms.0.min(self.work_ms.1).max(0),
            self.work_ms.0.max(self.work_ms.1).max(0),
        );
        if self.long_every > 0 && rng.random_range(0..self.long_every) == 0 && self.long_ms > hi {
            return rng.random_range(hi..=self.long_ms);
        }
        if hi > lo {
            rng.random_range(lo..=hi)
        } else {
            lo
        }
    }

    /// Wraps `inner` so every attempt first spends [`Self::draw`].
    #[must_use]
    pub fn wrap(self, inner: Arc<dyn BlockingHandler>) -> Arc<dyn BlockingHandler> {
        Arc::new(Paced { inner, pace: self })
    }
}

/// A handler that does its simulated work, then runs its inner handler.
struct Paced {
    inner: Arc<dyn BlockingHandler>,
    pace: WorkPace,
}

impl BlockingHandler for Paced {
    fn run(&self, attempt: &AttemptContext) -> HandlerOutcome {
        attempt.spend(self.pace.draw(attempt));
        self.inner.run(attempt)
    }
}
