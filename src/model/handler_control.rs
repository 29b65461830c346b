//! What the fleet holds about a handler beyond its work: whether an operator paused it
//! (`leasehold handler pause`), and how far into its rate window the fleet's claims are.
//! Both are rows in the store, read by every claim inside its transaction, so one change
//! reaches every authority at its next poll.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::clock::{Millis, parse_duration};

/// A handler an operator paused: its work stays pending and nobody claims it until it is
/// resumed. The name need not be a handler anyone runs yet.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HandlerPause {
    pub handler: String,
    pub paused_at: Millis,
    /// Who paused it (`user@host`).
    pub paused_by: String,
    /// Why, as given (may be empty).
    pub reason: String,
}

/// A paused handler with how many items of it wait (pending or retry), for people.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PausedHandler {
    #[serde(flatten)]
    pub pause: HandlerPause,
    pub waiting: u64,
}

/// A fleet-wide claim rate of one handler: at most `claims` items claimed per `per_ms`,
/// across every authority on the store. Written `N/interval` (`10/1s`, `600/1m`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Rate {
    pub claims: u32,
    pub per_ms: Millis,
}

impl FromStr for Rate {
    type Err = String;

    /// Reads `N/interval`: N a whole number of at least 1, the interval a positive
    /// duration (`500ms`, `1s`, `1m`, `1h`).
    fn from_str(text: &str) -> Result<Self, String> {
        let bad = || format!("{text:?} is not a rate: write N/interval, such as 10/1s or 600/1m");
        let (n, interval) = text.split_once('/').ok_or_else(bad)?;
        let claims: u32 = n.trim().parse().ok().filter(|n| *n > 0).ok_or_else(bad)?;
        let per_ms = parse_duration(interval)
            .filter(|ms| *ms > 0)
            .ok_or_else(bad)?;
        Ok(Self { claims, per_ms })
    }
}

impl TryFrom<String> for Rate {
    type Error = String;
    fn try_from(text: String) -> Result<Self, String> {
        text.parse()
    }
}

impl From<Rate> for String {
    fn from(rate: Rate) -> Self {
        rate.to_string()
    }
}

impl fmt::Display for Rate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The largest unit that divides the interval, so the text reads back exactly.
        let ms = self.per_ms;
        let (n, unit) = [
            (86_400_000, "d"),
            (3_600_000, "h"),
            (60_000, "m"),
            (1_000, "s"),
        ]
        .into_iter()
        .find(|(unit, _)| ms % unit == 0)
        .map_or((ms, "ms"), |(unit, name)| (ms / unit, name));
        write!(f, "{}/{n}{unit}", self.claims)
    }
}

/// The fleet's claims of one handler in its current rate window: the window began at
/// `window_start` (a multiple of the rate's interval) and `claims` were made in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RateWindow {
    pub handler: String,
    pub window_start: Millis,
    pub claims: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rate_reads_and_prints_as_written() {
        let r: Rate = "10/1s".parse().expect("valid");
        assert_eq!((r.claims, r.per_ms), (10, 1_000));
        assert_eq!("600/1m".parse::<Rate>().expect("valid").per_ms, 60_000);
        assert_eq!(r.to_string(), "10/1s");
        assert_eq!(
            "5/1500ms".parse::<Rate>().expect("valid").to_string(),
            "5/1500ms"
        );
        for bad in ["", "10", "0/1s", "-1/1s", "10/0s", "10/fast", "x/1s", "10/"] {
            assert!(bad.parse::<Rate>().is_err(), "{bad}");
        }
    }
}
