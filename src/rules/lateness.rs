//! Lateness: how long the oldest due item of each lane (one kind of work, one handler) has
//! been waiting to be claimed — now − its due instant (`nextEligibleAt` of a pending or
//! retrying item) — and, per kind, the latest of its lanes. A lane whose waiting items are
//! all still in the future is not late and is left out. One backlog shows here as one late
//! lane while the others stay near zero; starvation shows as a lane whose figure only grows.
//!
//! The store keeps the oldest waiting instant of each lane behind an index of its own
//! (`Store::overview`), so the figure costs one seek per lane on any backlog.

use serde::Serialize;

use crate::clock::Millis;
use crate::model::WorkItem;
use crate::model::WorkKind;
use crate::model::work::WorkLane;

/// How late one lane runs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LaneLateness {
    pub kind: WorkKind,
    pub handler: String,
    /// The due instant of its oldest waiting item.
    pub oldest_due: Millis,
    /// now − `oldest_due`.
    pub late_ms: Millis,
}

/// How late one kind of work runs: its latest lane.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct KindLateness {
    pub kind: WorkKind,
    pub late_ms: Millis,
    /// The handler of that lane.
    pub handler: String,
}

/// How late one item is at `now`: now − the instant it became claimable (its due instant
/// while waiting, its lease's expiry once a claim lapsed), or `None` while it is not due
/// (or finished). A lane's figure is its oldest waiting item's; the checker's
/// stranded-work rule judges each item by this one.
#[must_use]
pub fn of_item(item: &WorkItem, now: Millis) -> Option<Millis> {
    item.due_at().filter(|due| *due <= now).map(|due| now - due)
}

/// The late lanes, latest first (then by kind name and handler), from each lane's oldest
/// waiting instant as the store lists them.
#[must_use]
pub fn lanes(waiting: &[(WorkLane, Millis)], now: Millis) -> Vec<LaneLateness> {
    let mut out: Vec<LaneLateness> = waiting
        .iter()
        .filter(|(_, due)| *due <= now)
        .map(|(lane, due)| LaneLateness {
            kind: lane.kind,
            handler: lane.handler.clone(),
            oldest_due: *due,
            late_ms: now - due,
        })
        .collect();
    out.sort_by(|a, b| {
        b.late_ms
            .cmp(&a.late_ms)
            .then_with(|| (a.kind.as_str(), &a.handler).cmp(&(b.kind.as_str(), &b.handler)))
    });
    out
}

/// Per kind with a late lane, its latest lane; latest first.
#[must_use]
pub fn by_kind(lanes: &[LaneLateness]) -> Vec<KindLateness> {
    let mut out: Vec<KindLateness> = Vec::new();
    // `lanes` is latest first, so a kind's first lane is its latest.
    for lane in lanes {
        if !out.iter().any(|k| k.kind == lane.kind) {
            out.push(KindLateness {
                kind: lane.kind,
                late_ms: lane.late_ms,
                handler: lane.handler.clone(),
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lane(kind: WorkKind, handler: &str, due: Millis) -> (WorkLane, Millis) {
        (WorkLane::new(kind, handler), due)
    }

    #[test]
    fn only_due_lanes_are_late_and_the_latest_comes_first() {
        let now = 100_000;
        let waiting = [
            lane(WorkKind::Effect, "flood", now - 2_700_000),
            lane(WorkKind::Effect, "mail", now - 1_000),
            lane(WorkKind::Schedule, "tick", now - 2_000),
            lane(WorkKind::Cursor, "deliver", now + 5_000),
        ];
        let late = lanes(&waiting, now);
        let seen: Vec<(&str, Millis)> = late
            .iter()
            .map(|l| (l.handler.as_str(), l.late_ms))
            .collect();
        assert_eq!(
            seen,
            [("flood", 2_700_000), ("tick", 2_000), ("mail", 1_000)]
        );
        let kinds = by_kind(&late);
        let kinds: Vec<(WorkKind, Millis, &str)> = kinds
            .iter()
            .map(|k| (k.kind, k.late_ms, k.handler.as_str()))
            .collect();
        assert_eq!(
            kinds,
            [
                (WorkKind::Effect, 2_700_000, "flood"),
                (WorkKind::Schedule, 2_000, "tick")
            ],
            "a cursor not due yet is not late"
        );
    }

    #[test]
    fn an_item_due_right_now_is_zero_late() {
        let late = lanes(&[lane(WorkKind::Effect, "h", 5)], 5);
        assert_eq!(late[0].late_ms, 0);
    }
}
