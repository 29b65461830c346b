//! Which items one claim batch takes: reclaims of lapsed claims first, then the batch's
//! budget shared round-robin across the kinds of work that have items due (schedule
//! firings, cursors, effects) and, within a kind, across its handlers — so a backlog of
//! one handler, however deep, never delays another handler's or another kind's due work
//! by more than a share of one batch. Within a lane (one kind, one handler) items go in
//! claim order: higher priority first, then earlier due.
//!
//! A claimer runs a set of compatibility digests (one per handler it has); reclaims and
//! lanes are read for each digest in the set, and since a lane is one (digest, kind,
//! handler), a set of one digest per handler reads no more lanes than a single digest did.
//! Everything is read inside the claiming transaction through indexes: the lanes by a
//! skip-scan (one seek per lane), each lane's head by a range of its own. The first pass
//! reads an even share of each lane; only a lane that filled its share is read again for
//! the budget the short lanes left over. Which kind and which handler go first rotates
//! with each batch a store handle claims (its turn), so a batch smaller than the number of
//! lanes — one free worker — still serves every lane in turn.

use std::collections::{BTreeMap, HashSet, VecDeque};

use super::Tx;
use crate::clock::Millis;
use crate::error::Result;
use crate::model::work::WorkLane;
use crate::model::{CompatSet, WorkItem};

/// What one claim batch may take: at most `limit` items, and of each handler named in
/// `per_handler` at most that many (an authority's free slots for a handler it limits).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClaimBudget {
    pub limit: usize,
    pub per_handler: BTreeMap<String, usize>,
}

impl ClaimBudget {
    /// Up to `limit` items of any handler.
    #[must_use]
    pub fn new(limit: usize) -> Self {
        Self {
            limit,
            per_handler: BTreeMap::new(),
        }
    }

    /// The same budget taking at most `n` items of `handler`.
    #[must_use]
    pub fn with_handler(mut self, handler: impl Into<String>, n: usize) -> Self {
        self.per_handler.insert(handler.into(), n);
        self
    }
}

/// The budget left while a batch is assembled.
struct Room {
    left: usize,
    per_handler: BTreeMap<String, usize>,
}

impl Room {
    fn allows(&self, handler: &str) -> bool {
        self.left > 0 && self.per_handler.get(handler).is_none_or(|n| *n > 0)
    }

    /// Takes one slot for `handler` if the budget allows it.
    fn take(&mut self, handler: &str) -> bool {
        if !self.allows(handler) {
            return false;
        }
        self.left -= 1;
        if let Some(n) = self.per_handler.get_mut(handler) {
            *n -= 1;
        }
        true
    }
}

/// One lane's due items read and not yet chosen.
struct LaneQueue {
    /// The digest whose lane this is.
    compat: String,
    lane: WorkLane,
    items: VecDeque<WorkItem>,
    /// The last read got all it asked for: the lane may hold more.
    full: bool,
}

/// The lanes of one kind, and which of them is served next.
struct KindTurn {
    lanes: Vec<LaneQueue>,
    next: usize,
}

/// The items one claim batch — the `turn`th of its store handle — considers, in the order
/// they are claimed.
pub(crate) fn claim_candidates(
    tx: &mut dyn Tx,
    keys: &CompatSet,
    now: Millis,
    budget: &ClaimBudget,
    turn: u64,
) -> Result<Vec<WorkItem>> {
    let mut room = Room {
        left: budget.limit,
        per_handler: budget.per_handler.clone(),
    };
    let mut lapsed = Vec::new();
    for compat in keys.iter() {
        lapsed.extend(tx.lapsed_claims(compat, now, budget.limit)?);
    }
    // Each key's reclaims come due-first (the providers' order); merged the same way.
    lapsed.sort_by(|a, b| (a.due_at(), &a.id).cmp(&(b.due_at(), &b.id)));
    lapsed.truncate(budget.limit);
    let mut chosen: Vec<WorkItem> = lapsed
        .into_iter()
        .filter(|item| room.take(&item.handler))
        .collect();
    if room.left == 0 {
        return Ok(chosen);
    }
    let mut lanes: Vec<(String, WorkLane)> = Vec::new();
    for compat in keys.iter() {
        lanes.extend(
            tx.claim_lanes(compat)?
                .into_iter()
                .filter(|lane| room.allows(&lane.handler))
                .map(|lane| (compat.to_owned(), lane)),
        );
    }
    if lanes.is_empty() {
        return Ok(chosen);
    }
    let share = room.left.div_ceil(lanes.len());
    let mut kinds = by_kind(lanes, turn);
    for queue in kinds.iter_mut().flat_map(|k| k.lanes.iter_mut()) {
        refill(tx, now, queue, share, &chosen)?;
    }
    deal(&mut kinds, &mut room, &mut chosen);
    if room.left > 0 {
        for queue in kinds.iter_mut().flat_map(|k| k.lanes.iter_mut()) {
            if queue.full && room.allows(&queue.lane.handler) {
                refill(tx, now, queue, room.left, &chosen)?;
            }
        }
        deal(&mut kinds, &mut room, &mut chosen);
    }
    Ok(chosen)
}

/// Groups lanes (in [`WorkLane::sort_key`] order) by kind; the kind that goes first and
/// the handler each kind serves first rotate with `turn`.
fn by_kind(mut lanes: Vec<(String, WorkLane)>, turn: u64) -> Vec<KindTurn> {
    lanes.sort_by(|(a_key, a), (b_key, b)| (a.sort_key(), a_key).cmp(&(b.sort_key(), b_key)));
    let mut kinds: Vec<KindTurn> = Vec::new();
    for (compat, lane) in lanes {
        let queue = LaneQueue {
            compat,
            lane,
            items: VecDeque::new(),
            full: false,
        };
        match kinds.last_mut() {
            Some(k) if k.lanes[0].lane.kind == queue.lane.kind => k.lanes.push(queue),
            _ => kinds.push(KindTurn {
                lanes: vec![queue],
                next: 0,
            }),
        }
    }
    let n = kinds.len() as u64;
    for k in &mut kinds {
        k.next = usize::try_from((turn / n) % k.lanes.len() as u64).unwrap_or(0);
    }
    kinds.rotate_left(usize::try_from(turn % n).unwrap_or(0));
    kinds
}

/// Reads up to `n` of the lane's due items not chosen yet: the lane's head, as many more
/// as the batch already holds of this lane (a reclaim, or a first pass) that the read may
/// meet again, left out.
fn refill(
    tx: &mut dyn Tx,
    now: Millis,
    queue: &mut LaneQueue,
    n: usize,
    chosen: &[WorkItem],
) -> Result<()> {
    let lane = &queue.lane;
    let ours: HashSet<&str> = chosen
        .iter()
        .filter(|w| w.compat == queue.compat && w.kind == lane.kind && w.handler == lane.handler)
        .map(|w| w.id.as_str())
        .collect();
    let want = n + ours.len();
    let items = tx.lane_claimable(&queue.compat, lane, now, want)?;
    queue.full = items.len() == want;
    queue.items = items
        .into_iter()
        .filter(|w| !ours.contains(w.id.as_str()))
        .collect();
    Ok(())
}

/// Round-robin: each round gives every kind one item, from its next handler that has one
/// (and room), until the budget is spent or no lane has anything left.
fn deal(kinds: &mut [KindTurn], room: &mut Room, chosen: &mut Vec<WorkItem>) {
    loop {
        let mut progressed = false;
        for kind in kinds.iter_mut() {
            let n = kind.lanes.len();
            for step in 0..n {
                let i = (kind.next + step) % n;
                let queue = &mut kind.lanes[i];
                if queue.items.is_empty() || !room.take(&queue.lane.handler) {
                    continue;
                }
                if let Some(item) = queue.items.pop_front() {
                    chosen.push(item);
                    kind.next = (i + 1) % n;
                    progressed = true;
                    break;
                }
            }
        }
        if !progressed || room.left == 0 {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::WorkKind;

    fn lanes(names: &[(WorkKind, &str)]) -> Vec<(String, WorkLane)> {
        names
            .iter()
            .map(|(k, h)| ("k".to_owned(), WorkLane::new(*k, *h)))
            .collect()
    }

    fn first_served(turn: u64) -> (WorkKind, String) {
        let kinds = by_kind(
            lanes(&[
                (WorkKind::Effect, "a"),
                (WorkKind::Effect, "b"),
                (WorkKind::Schedule, "s"),
            ]),
            turn,
        );
        let k = &kinds[0];
        let lane = &k.lanes[k.next].lane;
        (lane.kind, lane.handler.clone())
    }

    /// With room for one item per batch, every lane is served within a few turns: the kind
    /// and, within it, the handler served first both rotate.
    #[test]
    fn the_first_lane_rotates_over_every_lane() {
        let served: std::collections::BTreeSet<_> = (0..4).map(first_served).collect();
        assert_eq!(served.len(), 3, "{served:?}");
    }

    #[test]
    fn a_handler_limit_stops_that_handler_only() {
        let mut room = Room {
            left: 3,
            per_handler: BTreeMap::from([("slow".to_owned(), 1)]),
        };
        assert!(room.take("slow"));
        assert!(!room.take("slow"));
        assert!(room.take("fast"));
        assert!(room.take("fast"));
        assert!(!room.take("fast"), "the batch is full");
    }
}
