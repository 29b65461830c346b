//! Which items one claim batch takes: reclaims of lapsed claims first, then the batch's
//! budget shared across the handlers with items due by what each already holds, so a
//! handler's share of an authority's slots follows its occupancy, not its claim count.
//!
//! Sharing claims evenly is not sharing slots evenly: a handler whose attempts take seconds
//! keeps each slot it is given, one whose attempts take milliseconds hands its slots back at
//! once, and if each freed slot went to the handlers in turn the slow one would soon hold
//! nearly all of them and the fast one's backlog would drain at the slow one's pace. So the
//! budget carries what the claimer has in flight of each handler
//! ([`ClaimBudget::in_flight`]), and each item of the batch goes to a handler that holds the
//! least (in flight plus what the batch has given it) among those with items due and room:
//! progressive filling, which leaves every handler with its max-min fair share of the
//! slots (the slots over the active handlers, what a handler with less due leaves going to
//! the others). It is work-conserving — a handler alone takes every free slot, and a slot
//! no lower handler can use goes to a higher one — and takes nothing back: a handler above
//! its share keeps what it holds and gets no more until the others catch up.
//!
//! Among handlers that hold the same, the batch goes round-robin across the kinds of work
//! that have items due (schedule firings, cursors, effects) and, within a kind, across its
//! lanes (one per handler), so with nothing in flight a backlog of one handler, however
//! deep, never delays another handler's or another kind's due work by more than a share of
//! one batch. Within a lane (one kind, one handler) items go in claim order: higher
//! priority first, then earlier due. Per-handler caps (`per_handler`) bound what the
//! sharing may give.
//!
//! A claimer runs a set of compatibility digests (one per handler it has); reclaims and
//! lanes are read for each digest in the set, and since a lane is one (digest, kind,
//! handler), a set of one digest per handler reads no more lanes than a single digest did.
//! Everything is read inside the claiming transaction through indexes: the lanes by a
//! skip-scan (one seek per lane), each lane's head by a range of its own. The first pass
//! reads an even share of each lane; a lane that filled its share and was emptied is read
//! again, for the whole budget left, when the batch needs more of it. Which kind and which
//! lane go first rotates with each batch an owner claims: the store handle remembers, per
//! owner, the kind its last batch served first and the lane of each kind it served last
//! ([`Rotation`]), and the next batch starts just after them — by name, not by position, so
//! lanes that come and go between batches (a schedule falling due, a lane drained) never
//! make the rotation skip one. A batch smaller than the number of lanes — one free worker —
//! still serves every lane of the handlers holding the least in turn, whatever else claims
//! through the same handle.

use std::collections::{BTreeMap, HashSet, VecDeque};
use std::sync::Arc;

use super::Tx;
use crate::clock::Millis;
use crate::error::Result;
use crate::model::work::WorkLane;
use crate::model::{CompatSet, Rate, WorkItem};
use crate::rules::work::{Backoff, reclaim_at};

/// What one claim batch may take: at most `limit` items, and of each handler named in
/// `per_handler` at most that many (an authority's free slots for a handler it limits); of
/// each handler named in `rates`, no more than the fleet's window of that rate has left
/// (`store/handler_control.rs`); how it shares them: `in_flight` is how many items of each
/// handler the claimer is running, so the batch goes to the handlers holding the least
/// first; and when it may take over a claim that lapsed: `reclaim` is the backoff after the
/// lease expiry during which the owner nobody replaced may still renew and finish
/// ([`crate::rules::work::reclaim_at`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClaimBudget {
    pub limit: usize,
    pub per_handler: BTreeMap<String, usize>,
    pub in_flight: BTreeMap<String, usize>,
    pub rates: BTreeMap<String, Rate>,
    pub reclaim: Backoff,
}

impl ClaimBudget {
    /// Up to `limit` items of any handler.
    #[must_use]
    pub fn new(limit: usize) -> Self {
        Self {
            limit,
            per_handler: BTreeMap::new(),
            in_flight: BTreeMap::new(),
            rates: BTreeMap::new(),
            reclaim: Backoff::default(),
        }
    }

    /// The same budget leaving a lapsed claim's owner `reclaim` to finish.
    #[must_use]
    pub fn with_reclaim(mut self, reclaim: Backoff) -> Self {
        self.reclaim = reclaim;
        self
    }

    /// The same budget taking at most `n` items of `handler`.
    #[must_use]
    pub fn with_handler(mut self, handler: impl Into<String>, n: usize) -> Self {
        self.per_handler.insert(handler.into(), n);
        self
    }

    /// The same budget for a claimer running `n` items of `handler`.
    #[must_use]
    pub fn with_in_flight(mut self, handler: impl Into<String>, n: usize) -> Self {
        self.in_flight.insert(handler.into(), n);
        self
    }

    /// The same budget claiming `handler` no faster than `rate`, fleet-wide.
    #[must_use]
    pub fn with_rate(mut self, handler: impl Into<String>, rate: Rate) -> Self {
        self.rates.insert(handler.into(), rate);
        self
    }
}

/// The budget left while a batch is assembled.
#[derive(Clone)]
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
    items: VecDeque<Arc<WorkItem>>,
    /// The last read got all it asked for: the lane may hold more.
    full: bool,
    /// Its handler's place in the batch's occupancy ([`occupancy`]).
    holder: usize,
}

/// The lanes of one kind, which of them is served next, and which this batch served last.
struct KindTurn {
    lanes: Vec<LaneQueue>,
    next: usize,
    served: Option<usize>,
}

impl KindTurn {
    fn kind(&self) -> &'static str {
        self.lanes[0].lane.kind.as_str()
    }
}

/// Where one owner's round-robin stands after a batch: the kind it served first, and of
/// each kind the lane (handler, digest) it served last.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Rotation {
    first_kind: Option<&'static str>,
    last_lane: BTreeMap<&'static str, (String, String)>,
}

impl Rotation {
    /// This rotation moved on by a batch dealt from `kinds`, which served `first` first.
    fn after(mut self, kinds: &[KindTurn], first: Option<&'static str>) -> Self {
        if first.is_some() {
            self.first_kind = first;
        }
        for k in kinds {
            if let Some(i) = k.served {
                let q = &k.lanes[i];
                self.last_lane
                    .insert(k.kind(), (q.lane.handler.clone(), q.compat.clone()));
            }
        }
        self
    }
}

/// The items one claim batch considers, in the order they are claimed, and where its
/// owner's rotation stands after it (`rotation` is where it stood before).
pub(crate) fn claim_candidates(
    tx: &mut dyn Tx,
    keys: &CompatSet,
    now: Millis,
    budget: &ClaimBudget,
    rotation: &Rotation,
) -> Result<(Vec<Arc<WorkItem>>, Rotation)> {
    let mut room = Room {
        left: budget.limit,
        per_handler: budget.per_handler.clone(),
    };
    let mut lapsed = Vec::new();
    for compat in keys.iter() {
        lapsed.extend(lapses_to_take(tx, compat, now, budget, &room)?);
    }
    // Each key's reclaims come due-first (the providers' order); merged the same way.
    lapsed.sort_by(|a, b| (a.due_at(), &a.id).cmp(&(b.due_at(), &b.id)));
    lapsed.truncate(budget.limit);
    let mut chosen: Vec<Arc<WorkItem>> = lapsed
        .into_iter()
        .filter(|item| room.take(&item.handler))
        .collect();
    if room.left == 0 {
        return Ok((chosen, rotation.clone()));
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
        return Ok((chosen, rotation.clone()));
    }
    let share = room.left.div_ceil(lanes.len());
    let mut kinds = by_kind(lanes, rotation);
    let mut held = occupancy(&mut kinds, &budget.in_flight, &chosen);
    for queue in kinds.iter_mut().flat_map(|k| k.lanes.iter_mut()) {
        refill(tx, now, queue, share, &chosen)?;
    }
    // Room for what was read, not for the budget (a caller may ask for any number).
    let read: usize = kinds
        .iter()
        .flat_map(|k| &k.lanes)
        .map(|q| q.items.len())
        .sum();
    chosen.reserve(read.min(room.left));
    let mut first = None;
    loop {
        first = first.or(deal(&mut kinds, &mut room, &mut held, &mut chosen));
        // The deal stops early at a lane it emptied that may hold more: read it again.
        let mut refilled = false;
        for queue in kinds.iter_mut().flat_map(|k| k.lanes.iter_mut()) {
            if queue.items.is_empty() && queue.full && room.allows(&queue.lane.handler) {
                refill(tx, now, queue, room.left, &chosen)?;
                refilled = true;
            }
        }
        if !refilled {
            break;
        }
    }
    let next = rotation.clone().after(&kinds, first);
    Ok((chosen, next))
}

/// The reclaims of `compat` due by `now` that a claim with `room` may take now, due-first.
/// A lapse whose owner may still finish it (inside its reclaim backoff), or whose handler
/// has no room left (paused, at its limit), is passed over and takes no room, and the read
/// goes on past as many of them as it met: a backoff grows with its attempts and a pause
/// may last, so such lapses may lead the reclaim index ahead of others that may be taken,
/// and however many do, those are served. Each further read asks for twice as many.
fn lapses_to_take(
    tx: &mut dyn Tx,
    compat: &str,
    now: Millis,
    budget: &ClaimBudget,
    room: &Room,
) -> Result<Vec<Arc<WorkItem>>> {
    let mut want = room.left;
    loop {
        let read = tx.lapsed_claims(compat, now, want)?;
        let full = read.len() == want;
        let mut left = room.clone();
        let mut passed = 0;
        let take: Vec<Arc<WorkItem>> = (read.into_iter())
            .filter(|item| {
                let takes = may_take(item, budget.reclaim, now) && left.take(&item.handler);
                passed += usize::from(!takes);
                takes
            })
            .collect();
        if !full || passed == 0 || left.left == 0 {
            return Ok(take);
        }
        want = want.saturating_mul(2);
    }
}

/// Whether a claim may take `item` now as far as its current claim goes: unclaimed, or a
/// lapse past its reclaim instant. (A retry a lapse left backing off, written by an earlier
/// build, is due by the index already.)
fn may_take(item: &WorkItem, reclaim: Backoff, now: Millis) -> bool {
    reclaim_at(item, reclaim).is_none_or(|at| at <= now)
}

/// Groups lanes (in [`WorkLane::sort_key`] order, then digest) by kind; the first kind is
/// the one after the kind `rotation` served first, and each kind starts at the lane after
/// the one `rotation` served last (both wrapping).
fn by_kind(mut lanes: Vec<(String, WorkLane)>, rotation: &Rotation) -> Vec<KindTurn> {
    lanes.sort_by(|(a_key, a), (b_key, b)| (a.sort_key(), a_key).cmp(&(b.sort_key(), b_key)));
    let mut kinds: Vec<KindTurn> = Vec::new();
    for (compat, lane) in lanes {
        let queue = LaneQueue {
            compat,
            lane,
            items: VecDeque::new(),
            full: false,
            holder: 0,
        };
        match kinds.last_mut() {
            Some(k) if k.lanes[0].lane.kind == queue.lane.kind => k.lanes.push(queue),
            _ => kinds.push(KindTurn {
                lanes: vec![queue],
                next: 0,
                served: None,
            }),
        }
    }
    for k in &mut kinds {
        if let Some((handler, compat)) = rotation.last_lane.get(k.kind()) {
            let last = (handler.as_str(), compat.as_str());
            k.next = k
                .lanes
                .iter()
                .position(|q| (q.lane.handler.as_str(), q.compat.as_str()) > last)
                .unwrap_or(0);
        }
    }
    if let Some(first) = rotation.first_kind {
        let start = kinds.iter().position(|k| k.kind() > first).unwrap_or(0);
        kinds.rotate_left(start);
    }
    kinds
}

/// Reads up to `n` of the lane's due items not chosen yet: the lane's head, and as many
/// more as the batch already holds of this lane and the read may meet again (a retry a
/// lapse left backing off, which sits in its lane as well as among the reclaims, or an item
/// of a first pass), left out. Every item a lane holds may be taken: claims, and so lapses
/// still in their grace, are in no lane.
fn refill(
    tx: &mut dyn Tx,
    now: Millis,
    queue: &mut LaneQueue,
    n: usize,
    chosen: &[Arc<WorkItem>],
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
    queue.items = (items.into_iter())
        .filter(|w| !ours.contains(w.id.as_str()))
        .collect();
    Ok(())
}

/// Numbers the handlers of the lanes (setting each lane's `holder`) and answers what each
/// holds before the deal: its items in flight and the reclaims already `chosen`.
fn occupancy(
    kinds: &mut [KindTurn],
    in_flight: &BTreeMap<String, usize>,
    chosen: &[Arc<WorkItem>],
) -> Vec<usize> {
    let mut numbers: BTreeMap<&str, usize> = BTreeMap::new();
    let holders: Vec<usize> = kinds
        .iter()
        .flat_map(|k| &k.lanes)
        .map(|q| {
            let next = numbers.len();
            *numbers.entry(q.lane.handler.as_str()).or_insert(next)
        })
        .collect();
    let mut held = vec![0; numbers.len()];
    for (handler, n) in in_flight {
        if let Some(i) = numbers.get(handler.as_str()) {
            held[*i] += n;
        }
    }
    for item in chosen {
        if let Some(i) = numbers.get(item.handler.as_str()) {
            held[*i] += 1;
        }
    }
    let queues = kinds.iter_mut().flat_map(|k| k.lanes.iter_mut());
    for (queue, holder) in queues.zip(holders) {
        queue.holder = holder;
    }
    held
}

/// The least any handler that may still take an item holds: one with room and a lane
/// holding items read, or emptied but maybe holding more (read again before the batch
/// takes anything of a handler holding more).
fn lowest_wanting(kinds: &[KindTurn], room: &Room, held: &[usize]) -> Option<usize> {
    kinds
        .iter()
        .flat_map(|k| &k.lanes)
        .filter(|q| (!q.items.is_empty() || q.full) && room.allows(&q.lane.handler))
        .map(|q| held[q.holder])
        .min()
}

/// Each round gives every kind one item, from its next lane (in turn) whose handler holds
/// the least of those that may still take one (`held`, counted up as items are given),
/// until the budget is spent, no lane has anything left, or the handler holding the least
/// has nothing read. Returns the kind served first, if any was.
fn deal(
    kinds: &mut [KindTurn],
    room: &mut Room,
    held: &mut [usize],
    chosen: &mut Vec<Arc<WorkItem>>,
) -> Option<&'static str> {
    let mut first = None;
    loop {
        let mut progressed = false;
        for k in 0..kinds.len() {
            let Some(level) = lowest_wanting(kinds, room, held) else {
                return first;
            };
            let kind = &mut kinds[k];
            let n = kind.lanes.len();
            for step in 0..n {
                let i = (kind.next + step) % n;
                let queue = &mut kind.lanes[i];
                if queue.items.is_empty()
                    || held[queue.holder] > level
                    || !room.take(&queue.lane.handler)
                {
                    continue;
                }
                if let Some(item) = queue.items.pop_front() {
                    chosen.push(item);
                    held[queue.holder] += 1;
                    first = first.or(Some(kind.kind()));
                    kind.served = Some(i);
                    kind.next = (i + 1) % n;
                    progressed = true;
                    break;
                }
            }
        }
        if !progressed || room.left == 0 {
            return first;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::WorkKind;
    use crate::model::work::NewWork;

    fn lanes(names: &[(WorkKind, &str)]) -> Vec<(String, WorkLane)> {
        names
            .iter()
            .map(|(k, h)| ("k".to_owned(), WorkLane::new(*k, *h)))
            .collect()
    }

    /// The lanes each of `batches` batches of one serves, carrying the rotation from one
    /// batch to the next; `present(batch)` says which of `all` have due work in that batch.
    fn served_in_turn(
        all: &[(WorkKind, &str)],
        batches: usize,
        present: impl Fn(usize) -> Vec<usize>,
    ) -> Vec<(WorkKind, String)> {
        let mut rotation = Rotation::default();
        let mut served = Vec::new();
        for batch in 0..batches {
            let here: Vec<(WorkKind, &str)> = present(batch).into_iter().map(|i| all[i]).collect();
            let mut kinds = by_kind(lanes(&here), &rotation);
            for q in kinds.iter_mut().flat_map(|k| k.lanes.iter_mut()) {
                let item = WorkItem::new(
                    NewWork::effect(format!("{}-{batch}", q.lane.handler), &q.lane.handler, "{}"),
                    "k",
                    0,
                );
                q.items.push_back(Arc::new(item));
            }
            let mut room = Room {
                left: 1,
                per_handler: BTreeMap::new(),
            };
            let mut chosen = Vec::new();
            let mut held = occupancy(&mut kinds, &BTreeMap::new(), &chosen);
            let first = deal(&mut kinds, &mut room, &mut held, &mut chosen);
            rotation = rotation.after(&kinds, first);
            let lane = kinds
                .iter()
                .find_map(|k| k.served.map(|i| k.lanes[i].lane.clone()))
                .expect("a batch of one serves one lane");
            served.push((lane.kind, lane.handler));
        }
        served
    }

    const LANES: [(WorkKind, &str); 5] = [
        (WorkKind::Effect, "a"),
        (WorkKind::Effect, "b"),
        (WorkKind::Effect, "c"),
        (WorkKind::Effect, "d"),
        (WorkKind::Schedule, "s"),
    ];

    /// With room for one item per batch, the kinds alternate and each kind's lanes go in
    /// turn: five lanes of two kinds are all served within eight batches.
    #[test]
    fn the_first_lane_rotates_over_every_lane() {
        let served = served_in_turn(&LANES, 8, |_| (0..LANES.len()).collect());
        let distinct: std::collections::BTreeSet<_> = served.iter().collect();
        assert_eq!(distinct.len(), LANES.len(), "{served:?}");
    }

    /// Lanes that come and go between batches (a schedule due every third batch, one
    /// handler drained for a while) never make the rotation skip a lane that stays: each
    /// of the four effect lanes is served again within five of its kind's batches.
    #[test]
    fn lanes_coming_and_going_never_starve_one() {
        let present = |batch: usize| {
            let mut here = vec![0, 1, 2, 3];
            if batch.is_multiple_of(3) {
                here.push(4);
            }
            if (4..7).contains(&batch) {
                here.retain(|i| *i != 1);
            }
            here
        };
        let served = served_in_turn(&LANES, 40, present);
        for (kind, handler) in &LANES[..4] {
            let at: Vec<usize> = served
                .iter()
                .enumerate()
                .filter(|(_, s)| s.0 == *kind && s.1 == *handler)
                .map(|(i, _)| i)
                .collect();
            assert!(at.len() >= 5, "{handler} served at {at:?} of {served:?}");
            assert!(
                at.windows(2).all(|w| w[1] - w[0] <= 8),
                "{handler} waited too long: {at:?}"
            );
        }
    }

    /// What one batch of `room` deals to the effect lanes of `backlogs` (handler, items
    /// due) for a claimer running `in_flight`: how many of each handler.
    fn dealt(
        backlogs: &[(&str, usize)],
        in_flight: &[(&str, usize)],
        room: usize,
    ) -> BTreeMap<String, usize> {
        let names: Vec<(WorkKind, &str)> = backlogs
            .iter()
            .map(|(h, _)| (WorkKind::Effect, *h))
            .collect();
        let mut kinds = by_kind(lanes(&names), &Rotation::default());
        for q in kinds.iter_mut().flat_map(|k| k.lanes.iter_mut()) {
            let due = backlogs
                .iter()
                .find(|(h, _)| *h == q.lane.handler)
                .map_or(0, |b| b.1);
            for i in 0..due {
                let new = NewWork::effect(format!("{}-{i}", q.lane.handler), &q.lane.handler, "{}");
                q.items.push_back(Arc::new(WorkItem::new(new, "k", 0)));
            }
        }
        let running: BTreeMap<String, usize> = in_flight
            .iter()
            .map(|(h, n)| ((*h).to_owned(), *n))
            .collect();
        let mut room = Room {
            left: room,
            per_handler: BTreeMap::new(),
        };
        let mut chosen = Vec::new();
        let mut held = occupancy(&mut kinds, &running, &chosen);
        deal(&mut kinds, &mut room, &mut held, &mut chosen);
        let mut out = BTreeMap::new();
        for item in chosen {
            *out.entry(item.handler.clone()).or_default() += 1;
        }
        out
    }

    /// Eight slots, the slow handler running seven with more due: the free slot goes to
    /// the fast handler's backlog, and so does every slot until the two hold the same; what
    /// one handler cannot use goes to the other.
    #[test]
    fn the_batch_goes_to_the_handler_holding_the_least() {
        let of = |pairs: &[(&str, usize)]| -> BTreeMap<String, usize> {
            pairs.iter().map(|(h, n)| ((*h).to_owned(), *n)).collect()
        };
        let backlogs = [("fast", 20), ("slow", 20)];
        assert_eq!(dealt(&backlogs, &[("slow", 7)], 1), of(&[("fast", 1)]));
        assert_eq!(dealt(&backlogs, &[("slow", 4)], 4), of(&[("fast", 4)]));
        assert_eq!(
            dealt(&backlogs, &[("slow", 3), ("fast", 1)], 4),
            of(&[("fast", 3), ("slow", 1)]),
            "max-min: four each"
        );
        assert_eq!(
            dealt(&[("fast", 2), ("slow", 20)], &[("slow", 4)], 4),
            of(&[("fast", 2), ("slow", 2)]),
            "what the fast handler cannot use goes to the slow one"
        );
        assert_eq!(
            dealt(&[("slow", 20)], &[("slow", 7)], 1),
            of(&[("slow", 1)]),
            "a handler alone takes every free slot"
        );
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
