//! What needs a person beyond the work lists, summed once for `inspect overview` and the
//! dashboard: how many outcomes the authorities hold in recovery, as they publish them on
//! their registration rows (stopped and gone authorities included: theirs are exactly
//! what a person must settle), and which writes wait on the store's write lock now, as
//! the waiting processes post them ([`crate::store::Store::write_stalls`]), each named
//! by the running authorities of that process.

use serde::Serialize;

use crate::clock::{Millis, format_duration};
use crate::model::Authority;
use crate::rules::liveness::liveness;
use crate::store::stall::ProcessStall;

/// One write kept waiting on the store's lock.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StallRow {
    /// Who waits: the running authorities of the waiting process, else `pid N on HOST`.
    pub who: String,
    pub host: String,
    pub pid: u32,
    /// Since when (wall clock).
    pub since: Millis,
    /// Who holds the lock, when the store can tell.
    pub holder: Option<String>,
}

impl StallRow {
    /// `auth-1 waits 4.0s (holder pid 77)`.
    #[must_use]
    pub fn text(&self, now: Millis) -> String {
        let holder = self
            .holder
            .as_deref()
            .map_or_else(|| "holder unknown".to_owned(), |h| format!("holder {h}"));
        format!(
            "{} waits {} ({holder})",
            self.who,
            format_duration(now.saturating_sub(self.since))
        )
    }
}

/// The stall posted by `a`'s process, while `a` runs (a stopped or gone authority waits
/// for nothing).
#[must_use]
pub fn stall_of<'a>(
    a: &Authority,
    stalls: &'a [ProcessStall],
    now: Millis,
) -> Option<&'a ProcessStall> {
    if !liveness(a, now).is_running() {
        return None;
    }
    stalls.iter().find(|s| s.host == a.host && s.pid == a.pid)
}

/// The fleet's account.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PublishedView {
    /// Outcomes held in recovery, over every registration.
    pub in_recovery: u64,
    /// Writes waiting on the store's lock now, longest first.
    pub stalls: Vec<StallRow>,
}

impl PublishedView {
    /// From the registered `authorities` and the posted `stalls`, judged at `now`.
    #[must_use]
    pub fn read(authorities: &[Authority], stalls: &[ProcessStall], now: Millis) -> Self {
        let stalls = stalls
            .iter()
            .map(|s| {
                let names: Vec<&str> = authorities
                    .iter()
                    .filter(|a| stall_of(a, std::slice::from_ref(s), now).is_some())
                    .map(|a| a.instance_id.as_str())
                    .collect();
                StallRow {
                    who: if names.is_empty() {
                        format!("pid {} on {}", s.pid, s.host)
                    } else {
                        names.join(", ")
                    },
                    host: s.host.clone(),
                    pid: s.pid,
                    since: s.since,
                    holder: s.holder.clone(),
                }
            })
            .collect();
        Self {
            in_recovery: authorities.iter().map(|a| a.published.in_recovery).sum(),
            stalls,
        }
    }

    /// `in recovery 2; no write stalled` or `in recovery 0; stalled: auth-1 waits 4.0s
    /// (holder pid 77)`.
    #[must_use]
    pub fn line(&self, now: Millis) -> String {
        let stalls = self
            .stalls_text(now)
            .unwrap_or_else(|| "no write stalled".to_owned());
        format!("in recovery {}; {stalls}", self.in_recovery)
    }

    /// `stalled: auth-1 waits 4.0s (holder pid 77), …`, or `None` when no write waits.
    #[must_use]
    pub fn stalls_text(&self, now: Millis) -> Option<String> {
        (!self.stalls.is_empty()).then(|| {
            let waits: Vec<String> = self.stalls.iter().map(|s| s.text(now)).collect();
            format!("stalled: {}", waits.join(", "))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Published, Recovering};

    fn authority(id: &str, pid: u32, heartbeat_at: Millis, held: usize) -> Authority {
        let held = (0..held)
            .map(|i| Recovering {
                resource_id: format!("e{i}"),
                kind: "effect".into(),
                generation: 1,
                why: "unreadable".into(),
                since: 0,
            })
            .collect();
        Authority {
            instance_id: id.into(),
            compat: "c".into(),
            build: "v1".into(),
            config: r#"{"leaseDurationMs":3000,"heartbeatIntervalMs":1000}"#.into(),
            started_at: 0,
            heartbeat_at,
            stopped_at: None,
            host: "h".into(),
            pid,
            published: Published::of(held),
        }
    }

    fn stall(pid: u32, since: Millis) -> ProcessStall {
        ProcessStall {
            host: "h".into(),
            pid,
            since,
            holder: Some("pid 77".into()),
        }
    }

    #[test]
    fn recovery_counts_every_registration_and_stalls_name_running_authorities() {
        let now = 10_000;
        let authorities = [
            authority("live", 1, now - 500, 2),
            // Gone: its heartbeat is older than its lease; it waits for nothing.
            authority("gone", 2, 1_000, 3),
        ];
        let view = PublishedView::read(
            &authorities,
            &[stall(1, 6_000), stall(2, 7_000), stall(3, 8_000)],
            now,
        );
        assert_eq!(view.in_recovery, 5);
        let who: Vec<&str> = view.stalls.iter().map(|s| s.who.as_str()).collect();
        assert_eq!(who, ["live", "pid 2 on h", "pid 3 on h"]);
        assert_eq!(view.stalls[0].text(now), "live waits 4.0s (holder pid 77)");
        assert!(stall_of(&authorities[1], &[stall(2, 0)], now).is_none());
        assert_eq!(
            PublishedView::read(&[], &[], now).line(now),
            "in recovery 0; no write stalled"
        );
    }
}
