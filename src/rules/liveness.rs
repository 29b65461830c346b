//! Whether an authority is running, judged from its registration row alone.
//!
//! Each authority is judged by its own timing, read from the config it registered, so a
//! fleet on a 3 s lease is judged by 3 s and one on 30 s by 30 s:
//!
//! - **live**: its last heartbeat is at most 1.5 heartbeat intervals old: it is beating on
//!   time (half an interval of slack for a slow store or a busy host);
//! - **silent**: older than that, but not older than its lease duration. It missed a
//!   heartbeat: it may be dead, paused or cut off, and whatever it claimed is still
//!   fenced to it until those claims lapse;
//! - **gone**: its heartbeat is older than its lease duration, so every claim it held has
//!   lapsed and is reclaimable;
//! - **stopped**: it recorded a clean stop (and released what it owned on the way out).
//!
//! A dead authority therefore turns `silent` within about 1.5 heartbeats and `gone` one
//! lease after its last heartbeat. Live and silent authorities count as *running*: they
//! make items compatible, hold their instance id against a duplicate start and cannot be
//! forgotten.

use serde::Serialize;

use crate::clock::Millis;
use crate::model::Authority;

/// The lease window an authority runs with unless told otherwise
/// (docs/ARCHITECTURE.md#authority-runtime), and so the one a registration that states none
/// is judged by.
pub const DEFAULT_LEASE_DURATION_MS: Millis = 30_000;
/// Default heartbeat cadence for the default lease; a shorter lease beats faster (see
/// [`default_heartbeat_interval`]).
pub const DEFAULT_HEARTBEAT_INTERVAL_MS: Millis = 10_000;

/// The heartbeat cadence for a lease of `lease_duration_ms`: at most a third of the lease
/// (and at most [`DEFAULT_HEARTBEAT_INTERVAL_MS`]). Liveness calls an authority `silent`
/// after 1.5 missed intervals and `gone` after one lease, so with this cadence a healthy
/// authority always reads `live` and a dead one reads `silent` at half its lease, well
/// before its claims lapse.
#[must_use]
pub fn default_heartbeat_interval(lease_duration_ms: Millis) -> Millis {
    (lease_duration_ms / 3).clamp(1, DEFAULT_HEARTBEAT_INTERVAL_MS)
}

/// An authority's liveness at one instant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Liveness {
    Live,
    Silent,
    Gone,
    Stopped,
}

impl Liveness {
    /// Every state, in the order the overview counts them.
    pub const ALL: [Self; 4] = [Self::Live, Self::Silent, Self::Gone, Self::Stopped];

    /// `live`, `silent`, `gone` or `stopped`.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Live => "live",
            Self::Silent => "silent",
            Self::Gone => "gone",
            Self::Stopped => "stopped",
        }
    }

    /// Live or silent: it may still be working, so its instance id is taken, it keeps its
    /// build's items compatible and it cannot be forgotten.
    #[must_use]
    pub fn is_running(self) -> bool {
        matches!(self, Self::Live | Self::Silent)
    }
}

impl std::fmt::Display for Liveness {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The two knobs liveness is judged by, as one authority registered them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Timing {
    pub heartbeat_interval_ms: Millis,
    pub lease_duration_ms: Millis,
}

impl Timing {
    /// The timing in `authority`'s registered config (`heartbeatIntervalMs`,
    /// `leaseDurationMs`). A registration that omits one gets the runtime's defaults for
    /// it: the default lease, and a heartbeat that follows the lease.
    #[must_use]
    pub fn of(authority: &Authority) -> Self {
        let config: serde_json::Value = serde_json::from_str(&authority.config).unwrap_or_default();
        let get = |key: &str| {
            config
                .get(key)
                .and_then(serde_json::Value::as_i64)
                .filter(|v| *v > 0)
        };
        let lease_duration_ms = get("leaseDurationMs").unwrap_or(DEFAULT_LEASE_DURATION_MS);
        Self {
            heartbeat_interval_ms: get("heartbeatIntervalMs")
                .unwrap_or_else(|| default_heartbeat_interval(lease_duration_ms)),
            lease_duration_ms,
        }
    }

    /// The heartbeat age past which an authority is no longer `live`: 1.5 intervals.
    #[must_use]
    pub fn silent_after_ms(self) -> Millis {
        self.heartbeat_interval_ms.saturating_mul(3) / 2
    }

    /// Liveness of an authority with this timing whose last heartbeat is `age_ms` old and
    /// that did (`stopped`) or did not record a clean stop.
    #[must_use]
    pub fn judge(self, age_ms: Millis, stopped: bool) -> Liveness {
        if stopped {
            Liveness::Stopped
        } else if age_ms > self.lease_duration_ms {
            Liveness::Gone
        } else if age_ms > self.silent_after_ms() {
            Liveness::Silent
        } else {
            Liveness::Live
        }
    }
}

/// `authority`'s liveness at `now`, by its own registered timing.
#[must_use]
pub fn liveness(authority: &Authority, now: Millis) -> Liveness {
    Timing::of(authority).judge(
        now.saturating_sub(authority.heartbeat_at),
        authority.stopped_at.is_some(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn registered(config: &str, heartbeat_at: Millis) -> Authority {
        Authority::planted("a-1", config, heartbeat_at)
    }

    /// The state at each edge of each window, for a fleet on `lease` ms with the runtime's
    /// default heartbeat (a third of the lease, at most 10 s).
    fn edges(lease: Millis, heartbeat: Millis) {
        let config = format!(r#"{{"leaseDurationMs":{lease},"heartbeatIntervalMs":{heartbeat}}}"#);
        let now = 1_000_000;
        let at_age = |age: Millis| liveness(&registered(&config, now - age), now);
        let silent_after = heartbeat * 3 / 2;
        assert_eq!(at_age(0), Liveness::Live);
        assert_eq!(at_age(heartbeat), Liveness::Live, "one interval: on time");
        assert_eq!(
            at_age(silent_after),
            Liveness::Live,
            "1.5 intervals: still live"
        );
        assert_eq!(at_age(silent_after + 1), Liveness::Silent);
        assert_eq!(
            at_age(lease),
            Liveness::Silent,
            "exactly one lease: not yet gone"
        );
        assert_eq!(at_age(lease + 1), Liveness::Gone);
        assert_eq!(
            at_age(-500),
            Liveness::Live,
            "a heartbeat from a clock ahead"
        );
        let mut stopped = registered(&config, now);
        stopped.stopped_at = Some(now);
        assert_eq!(
            liveness(&stopped, now),
            Liveness::Stopped,
            "fresh but stopped"
        );
        stopped.heartbeat_at = now - lease * 10;
        assert_eq!(
            liveness(&stopped, now),
            Liveness::Stopped,
            "old and stopped"
        );
    }

    #[test]
    fn a_3s_lease_is_judged_by_its_own_windows() {
        assert_eq!(default_heartbeat_interval(3_000), 1_000);
        edges(3_000, 1_000);
    }

    #[test]
    fn a_30s_lease_is_judged_by_its_own_windows() {
        assert_eq!(default_heartbeat_interval(30_000), 10_000);
        edges(30_000, 10_000);
    }

    #[test]
    fn missing_knobs_take_the_runtimes_defaults() {
        let now = 1_000_000;
        let plain = Timing::of(&registered("{}", now));
        assert_eq!(
            (plain.heartbeat_interval_ms, plain.lease_duration_ms),
            (10_000, 30_000)
        );
        let short = Timing::of(&registered(r#"{"leaseDurationMs":3000}"#, now));
        assert_eq!(
            (short.heartbeat_interval_ms, short.lease_duration_ms),
            (1_000, 3_000),
            "the heartbeat follows the lease"
        );
        let junk = Timing::of(&registered("not json", now));
        assert_eq!(junk, plain);
    }

    #[test]
    fn only_live_and_silent_are_running() {
        let running: Vec<_> = Liveness::ALL.iter().filter(|l| l.is_running()).collect();
        assert_eq!(running, [&Liveness::Live, &Liveness::Silent]);
    }
}
