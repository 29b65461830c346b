//! Retry shapes: the backoff a failed attempt waits before the next one, and a handler's
//! retry policy (docs/ARCHITECTURE.md#durable-work).

use serde::{Deserialize, Serialize};

use crate::clock::Millis;
use crate::error::{Error, Result};

/// How much longer each retry waits than the one before: a finite factor of at least 1
/// (1 keeps the delay constant). Compared by its bits, so a configuration holding one is
/// equal to itself whatever it holds.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Multiplier(f64);

impl PartialEq for Multiplier {
    fn eq(&self, other: &Self) -> bool {
        self.0.to_bits() == other.0.to_bits()
    }
}

impl Eq for Multiplier {}

impl Multiplier {
    /// Doubling, the default.
    pub const DOUBLE: Self = Self(2.0);

    /// A factor of `value`.
    ///
    /// # Errors
    /// `INVALID` for a value below 1, infinite or not a number.
    pub fn new(value: f64) -> Result<Self> {
        Self(value).checked()
    }

    /// The factor.
    #[must_use]
    pub fn get(self) -> f64 {
        self.0
    }

    fn checked(self) -> Result<Self> {
        if self.0.is_finite() && self.0 >= 1.0 {
            Ok(self)
        } else {
            Err(Error::Invalid(format!(
                "multiplier must be a number of at least 1, got {}",
                self.0
            )))
        }
    }
}

/// The durable backoff shape for retried work: `initial * multiplier^(attempt-1)`, capped
/// at `max_ms`, and never below `floor_ms` (what a handler asked for, e.g. a rate limit's
/// retry-after).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    pub initial_ms: Millis,
    pub multiplier: Multiplier,
    pub max_ms: Millis,
    pub floor_ms: Millis,
}

impl Default for Backoff {
    /// 500 ms doubling to 30 s: a handler without a policy of its own, and the reclaim grace
    /// of a claimer that names none.
    fn default() -> Self {
        Self {
            initial_ms: 500,
            multiplier: Multiplier::DOUBLE,
            max_ms: 30_000,
            floor_ms: 0,
        }
    }
}

impl Backoff {
    /// The same backoff, never shorter than `floor_ms` (the cap does not apply to it).
    #[must_use]
    pub fn with_floor(self, floor_ms: Millis) -> Self {
        Self {
            floor_ms: floor_ms.max(0),
            ..self
        }
    }

    /// The delay after the `attempt`-th failed attempt (1-based), rounded to the
    /// millisecond. However many attempts were made it reaches the cap and stays there.
    #[must_use]
    pub fn delay(self, attempt: u32) -> Millis {
        let steps = attempt.saturating_sub(1).min(1_024) as i32;
        let grown = self.initial_ms as f64 * self.multiplier.get().powi(steps);
        // Not below the cap (a factor grown past every float counts as above it).
        let capped = if grown < self.max_ms as f64 {
            grown.round() as Millis
        } else {
            self.max_ms
        };
        capped.max(self.floor_ms)
    }
}

/// The longest delay a retry policy may name: 30 days.
pub const MAX_RETRY_DELAY_MS: Millis = 30 * 86_400_000;

/// One handler's retry policy: its backoff and, optionally, a cap on its items' attempts.
///
/// The cap lowers an item's budget, never raises it: a failure recorded under the policy
/// writes `min(item's maxAttempts, max_attempts)` into the item (never below the attempts
/// it has already made), and the retry decision reads the item's stored value. So the
/// budget an item shows is the one that was applied, it only ever shrinks (until an
/// operator's requeue gives a fresh one), and two authorities with different caps can
/// only end an item sooner, never revive one the other ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RetryPolicy {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_attempts: Option<u32>,
    pub initial_delay_ms: Millis,
    pub multiplier: Multiplier,
    pub max_delay_ms: Millis,
}

impl Default for RetryPolicy {
    /// The store-wide default ([`Backoff::default`]) and no cap.
    fn default() -> Self {
        let backoff = Backoff::default();
        Self {
            max_attempts: None,
            initial_delay_ms: backoff.initial_ms,
            multiplier: backoff.multiplier,
            max_delay_ms: backoff.max_ms,
        }
    }
}

impl RetryPolicy {
    /// Refuses a policy that cannot be meant: no attempt at all, a shrinking multiplier, a
    /// negative delay, a cap below the first delay or beyond [`MAX_RETRY_DELAY_MS`].
    ///
    /// # Errors
    /// `INVALID`, one line naming the handler's key.
    pub fn validate(&self, handler: &str) -> Result<()> {
        let invalid = |why: String| Err(Error::Invalid(format!("retry.{handler}: {why}")));
        if self.max_attempts == Some(0) {
            return invalid("max_attempts must be at least 1, got 0".into());
        }
        if let Err(Error::Invalid(why)) = self.multiplier.checked() {
            return invalid(why);
        }
        if self.initial_delay_ms < 0 {
            return invalid(format!(
                "initial_delay must not be negative, got {} ms",
                self.initial_delay_ms
            ));
        }
        if self.max_delay_ms < self.initial_delay_ms {
            return invalid(format!(
                "max_delay ({} ms) must not be less than initial_delay ({} ms)",
                self.max_delay_ms, self.initial_delay_ms
            ));
        }
        if self.max_delay_ms > MAX_RETRY_DELAY_MS {
            return invalid(format!(
                "max_delay must be at most {MAX_RETRY_DELAY_MS} ms (30 days), got {}",
                self.max_delay_ms
            ));
        }
        Ok(())
    }

    /// What a failure under this policy applies, never retried sooner than `floor_ms`.
    #[must_use]
    pub fn retry(&self, floor_ms: Millis) -> Retry {
        Retry {
            backoff: Backoff {
                initial_ms: self.initial_delay_ms,
                multiplier: self.multiplier,
                max_ms: self.max_delay_ms,
                floor_ms: 0,
            }
            .with_floor(floor_ms),
            max_attempts: self.max_attempts,
        }
    }

    /// The policy in a few words: `2.0s ×3 to 10.0s, at most 4 attempts`.
    #[must_use]
    pub fn describe(&self) -> String {
        let mut text = format!(
            "{} ×{} to {}",
            crate::clock::format_duration(self.initial_delay_ms),
            self.multiplier.get(),
            crate::clock::format_duration(self.max_delay_ms)
        );
        if let Some(n) = self.max_attempts {
            text.push_str(&format!(", at most {n} attempts"));
        }
        text
    }
}

/// What a failing write applies ([`crate::rules::work::fail`]): the backoff of the next
/// retry and the cap on the item's attempts, if the handler's policy sets one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Retry {
    pub backoff: Backoff,
    pub max_attempts: Option<u32>,
}

impl Retry {
    /// The default backoff, uncapped, never retried sooner than `floor_ms`.
    #[must_use]
    pub fn with_floor(floor_ms: Millis) -> Self {
        Self {
            backoff: Backoff::default().with_floor(floor_ms),
            max_attempts: None,
        }
    }

    /// The budget an item of `max_attempts` that has made `attempts` has under this: the
    /// smaller of the two, never below what was already made.
    #[must_use]
    pub fn budget(&self, max_attempts: u32, attempts: u32) -> u32 {
        self.max_attempts
            .map_or(max_attempts, |cap| max_attempts.min(cap.max(attempts)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(initial: Millis, multiplier: f64, max: Millis) -> RetryPolicy {
        RetryPolicy {
            max_attempts: None,
            initial_delay_ms: initial,
            multiplier: Multiplier::new(multiplier).expect("valid"),
            max_delay_ms: max,
        }
    }

    /// 2 s tripled up to 10 s: 2, 6, 10, 10 s.
    #[test]
    fn a_policy_grows_by_its_multiplier_up_to_its_cap() {
        let backoff = policy(2_000, 3.0, 10_000).retry(0).backoff;
        let delays: Vec<Millis> = (1..=4).map(|n| backoff.delay(n)).collect();
        assert_eq!(delays, [2_000, 6_000, 10_000, 10_000]);
        assert_eq!(backoff.delay(u32::MAX), 10_000);
        let gentle = policy(1_000, 1.5, 60_000).retry(0).backoff;
        assert_eq!(
            (1..=4).map(|n| gentle.delay(n)).collect::<Vec<_>>(),
            [1_000, 1_500, 2_250, 3_375]
        );
        assert_eq!(policy(700, 1.0, 700).retry(0).backoff.delay(9), 700);
    }

    #[test]
    fn meaningless_policies_are_refused_in_one_line() {
        let cases = [
            (
                RetryPolicy {
                    max_attempts: Some(0),
                    ..RetryPolicy::default()
                },
                "max_attempts",
            ),
            (
                RetryPolicy {
                    multiplier: Multiplier(0.5),
                    ..RetryPolicy::default()
                },
                "multiplier",
            ),
            (
                RetryPolicy {
                    multiplier: Multiplier(f64::NAN),
                    ..RetryPolicy::default()
                },
                "multiplier",
            ),
            (policy(5_000, 2.0, 1_000), "max_delay"),
            (policy(-1, 2.0, 1_000), "initial_delay"),
            (policy(1, 2.0, MAX_RETRY_DELAY_MS + 1), "30 days"),
        ];
        for (bad, names) in cases {
            let e = bad.validate("charge").expect_err("refused");
            assert_eq!(e.code(), "INVALID");
            let text = e.to_string();
            assert!(
                text.contains("retry.charge") && text.contains(names),
                "{text}"
            );
            assert!(!text.contains('\n'), "{text}");
        }
        assert!(RetryPolicy::default().validate("charge").is_ok());
        assert!(Multiplier::new(0.99).is_err() && Multiplier::new(1.0).is_ok());
    }

    /// A cap lowers the budget to itself, but never below the attempts already made.
    #[test]
    fn a_cap_only_lowers_the_budget() {
        let capped = RetryPolicy {
            max_attempts: Some(3),
            ..RetryPolicy::default()
        }
        .retry(0);
        assert_eq!(capped.budget(5, 1), 3);
        assert_eq!(capped.budget(2, 1), 2, "never raised");
        assert_eq!(capped.budget(5, 4), 4, "never below what was made");
        assert_eq!(Retry::default().budget(5, 1), 5);
    }

    #[test]
    fn the_default_policy_is_the_default_backoff() {
        assert_eq!(RetryPolicy::default().retry(0), Retry::default());
        assert_eq!(
            RetryPolicy::default().retry(7_000),
            Retry::with_floor(7_000)
        );
        assert_eq!(
            policy(2_000, 3.0, 10_000).describe(),
            "2.0s ×3 to 10.0s".to_owned()
        );
    }
}
