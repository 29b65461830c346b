//! The in-memory store's lane indexes, keyed like the SQL providers' `work_lane` and
//! `work_lane_waiting`: the claim order of each (compat, kind, handler) lane, and the
//! waiting items of each (kind, handler) lane by when they became eligible. Lanes are found
//! by a skip-scan (one range seek per lane), as the SQL providers find them.

use std::cmp::Reverse;
use std::collections::BTreeSet;

use crate::clock::Millis;
use crate::model::work::WorkLane;
use crate::model::{WorkItem, WorkKind, WorkState};

/// (compat, kind, handler, priority descending, due instant, id) of every non-terminal item.
pub(super) type LaneKey = (String, WorkKind, String, Reverse<i32>, Millis, String);

/// (kind, handler, `nextEligibleAt`, id) of every pending / retry item.
pub(super) type WaitKey = (WorkKind, String, Millis, String);

pub(super) fn lane_key(item: &WorkItem) -> Option<LaneKey> {
    item.due_at().map(|due| {
        (
            item.compat.clone(),
            item.kind,
            item.handler.clone(),
            Reverse(item.priority),
            due,
            item.id.clone(),
        )
    })
}

/// Whether `item` has a [`WaitKey`]: it is pending or in retry.
pub(super) fn wait_key_holds(item: &WorkItem) -> bool {
    matches!(item.state, WorkState::Pending | WorkState::Retry)
}

pub(super) fn wait_key(item: &WorkItem) -> Option<WaitKey> {
    wait_key_holds(item).then(|| {
        (
            item.kind,
            item.handler.clone(),
            item.next_eligible_at,
            item.id.clone(),
        )
    })
}

/// The least handler name greater than `handler`: a seek from it skips the rest of the
/// lane of `handler`.
fn after(handler: &str) -> String {
    format!("{handler}\0")
}

/// The first key at or after `(kind, handler)` of `compat`.
fn lane_start(compat: &str, kind: WorkKind, handler: String) -> LaneKey {
    (
        compat.to_owned(),
        kind,
        handler,
        Reverse(i32::MAX),
        Millis::MIN,
        String::new(),
    )
}

/// The lanes of `compat`, in [`WorkLane::sort_key`] order.
pub(super) fn lanes(index: &BTreeSet<LaneKey>, compat: &str) -> Vec<WorkLane> {
    let mut out = Vec::new();
    let mut from = lane_start(compat, WorkKind::ALL[0], String::new());
    while let Some((c, k, h, ..)) = index.range(from..).next() {
        if c != compat {
            break;
        }
        out.push(WorkLane::new(*k, h.clone()));
        from = lane_start(compat, *k, after(h));
    }
    out.sort_by(|a, b| a.sort_key().cmp(&b.sort_key()));
    out
}

/// The ids of `lane`'s items of `compat` due by `now`, in claim order, at most `limit`.
pub(super) fn due(
    index: &BTreeSet<LaneKey>,
    compat: &str,
    lane: &WorkLane,
    now: Millis,
    limit: usize,
) -> Vec<String> {
    index
        .range(lane_start(compat, lane.kind, lane.handler.clone())..)
        .take_while(|(c, k, h, ..)| c == compat && *k == lane.kind && *h == lane.handler)
        .filter(|(_, _, _, _, due, _)| *due <= now)
        .take(limit)
        .map(|(.., id)| id.clone())
        .collect()
}

/// Per lane, the earliest `nextEligibleAt` of its waiting items.
pub(super) fn waiting(index: &BTreeSet<WaitKey>) -> Vec<(WorkLane, Millis)> {
    let mut out = Vec::new();
    let mut from = (WorkKind::ALL[0], String::new(), Millis::MIN, String::new());
    while let Some((k, h, at, _)) = index.range(from..).next() {
        out.push((WorkLane::new(*k, h.clone()), *at));
        from = (*k, after(h), Millis::MIN, String::new());
    }
    out.sort_by(|a, b| a.0.sort_key().cmp(&b.0.sort_key()));
    out
}
