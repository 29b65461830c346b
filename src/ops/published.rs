//! What the authorities publish about themselves, summed once for `inspect overview` and
//! the dashboard: how many outcomes are held in recovery (stopped and gone authorities
//! included: theirs are exactly what a person must settle) and which writes wait on the
//! store's write lock now (running authorities only: a dead process waits for nothing).

use serde::Serialize;

use crate::clock::{Millis, format_duration};
use crate::model::Authority;
use crate::ops::liveness::liveness;

/// One authority's write kept waiting on the store's lock.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StallRow {
    /// Who waits.
    pub instance_id: String,
    /// Since when.
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
            self.instance_id,
            format_duration(now.saturating_sub(self.since))
        )
    }
}

/// The fleet's published account.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PublishedView {
    /// Outcomes held in recovery, over every registration.
    pub in_recovery: u64,
    /// Writes waiting on the store's lock now, longest first.
    pub stalls: Vec<StallRow>,
}

impl PublishedView {
    /// From the registered `authorities`, judged at `now`.
    #[must_use]
    pub fn read(authorities: &[Authority], now: Millis) -> Self {
        let mut stalls: Vec<StallRow> = authorities
            .iter()
            .filter(|a| liveness(a, now).is_running())
            .filter_map(|a| {
                a.published.stall.as_ref().map(|s| StallRow {
                    instance_id: a.instance_id.clone(),
                    since: s.since,
                    holder: s.holder.clone(),
                })
            })
            .collect();
        stalls.sort_by(|a, b| (a.since, &a.instance_id).cmp(&(b.since, &b.instance_id)));
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
    use crate::model::{Published, Recovering, WriteStall};

    fn authority(id: &str, heartbeat_at: Millis, published: Published) -> Authority {
        Authority {
            instance_id: id.into(),
            compat: "c".into(),
            build: "v1".into(),
            config: r#"{"leaseDurationMs":3000,"heartbeatIntervalMs":1000}"#.into(),
            started_at: 0,
            heartbeat_at,
            stopped_at: None,
            host: "h".into(),
            pid: 1,
            published,
        }
    }

    fn held(n: usize) -> Vec<Recovering> {
        (0..n)
            .map(|i| Recovering {
                resource_id: format!("e{i}"),
                kind: "effect".into(),
                generation: 1,
                why: "unreadable".into(),
                since: 0,
            })
            .collect()
    }

    #[test]
    fn recovery_counts_every_registration_and_stalls_only_running_ones() {
        let stall = |since| {
            Some(WriteStall {
                since,
                holder: Some("pid 77".into()),
            })
        };
        let now = 10_000;
        let view = PublishedView::read(
            &[
                authority("live", now - 500, Published::of(held(2), stall(6_000))),
                // Gone: its heartbeat is older than its lease; its stall is over.
                authority("gone", 1_000, Published::of(held(3), stall(500))),
            ],
            now,
        );
        assert_eq!(view.in_recovery, 5);
        assert_eq!(view.stalls.len(), 1);
        assert_eq!(
            view.line(now),
            "in recovery 5; stalled: live waits 4.0s (holder pid 77)"
        );
        assert_eq!(
            PublishedView::read(&[], now).line(now),
            "in recovery 0; no write stalled"
        );
    }
}
