//! The claim step: fire due schedules, hand held cursors their next look, then claim
//! workflow instances and work items up to the free concurrency, noting takeovers. The
//! free slots are shared in thirds between cursor looks, instances and items; the slots
//! that do not divide evenly go to each in turn, and what one leaves unused goes to the
//! others, so an authority with one free worker serves all three in turn instead of
//! whichever is asked first.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::{AuthorityCore, InFlight, Job, Task};
use crate::authority::handlers::LeaseSignal;
use crate::authority::log;
use crate::clock::Millis;
use crate::error::Result;
use crate::store::ClaimBudget;

/// Schedules examined per poll.
const SCHEDULES_PER_POLL: usize = 64;

impl AuthorityCore {
    /// Fires due schedules, hands held cursors due for a look their next look, and claims
    /// up to the free concurrency: each of looks, workflow instances and work items (at
    /// most `claimBatchSize` of each claim) takes its share ([`shares`]); items also take
    /// what looks and instances left, then instances and looks what items left.
    ///
    /// # Errors
    /// A store failure (nothing half-claimed: each claim is one transaction).
    pub fn poll(&self) -> Result<Vec<Job>> {
        let out = self.poll_inner();
        self.note_store_error(&out);
        out
    }

    pub(super) fn poll_inner(&self) -> Result<Vec<Job>> {
        let now = self.store.now();
        let (mut looks, free, handler_room, share) = {
            let mut st = self.state();
            if st.stopping {
                return Ok(Vec::new());
            }
            let executing = st.inflight.values().filter(|f| !f.held).count();
            let free = self.config.worker_concurrency.saturating_sub(executing);
            let share = shares(free, st.share_turn);
            if free > 0 {
                st.share_turn = st.share_turn.wrapping_add(1);
            }
            let looks = take_due_cursors(&mut st.inflight, now, share.looks);
            let room = handler_room(&self.config.handler_limits, &st.inflight);
            (looks, free, room, share)
        };
        self.refresh_keys(now)?;
        let fired = self
            .store
            .fire_due_schedules(&self.workload, SCHEDULES_PER_POLL)?;
        self.state().stats.schedules_fired += fired as u64;
        if free == looks.len() {
            return Ok(looks);
        }
        let lease = self.config.lease_duration_ms;
        let batch = self.config.claim_batch_size;

        // Workflow instances, then work items, then instances for what the items left,
        // each claim noting a takeover (failover).
        let wf_limit = share.instances.min(batch);
        let mut instances = if wf_limit > 0 {
            self.engine.claim_noting_takeovers(wf_limit, lease)?
        } else {
            Vec::new()
        };
        let work_limit = free
            .saturating_sub(looks.len() + instances.len())
            .min(batch);
        let items = if work_limit > 0 {
            let budget = ClaimBudget {
                limit: work_limit,
                per_handler: handler_room,
            };
            self.store.claim_work_within(
                &self.config.instance_id,
                self.claim_keys(),
                &budget,
                lease,
            )?
        } else {
            Vec::new()
        };
        let left = free.saturating_sub(looks.len() + instances.len() + items.len());
        if left > 0 && instances.len() == wf_limit && items.len() < work_limit {
            let more = self.engine.claim_noting_takeovers(left.min(batch), lease)?;
            instances.extend(more);
        }
        let left = free.saturating_sub(looks.len() + instances.len() + items.len());
        if left > 0 && looks.len() == share.looks {
            looks.extend(take_due_cursors(&mut self.state().inflight, now, left));
        }

        let mut st = self.state();
        let mut jobs = looks;
        jobs.reserve(instances.len() + items.len());
        let tasks = instances
            .into_iter()
            .map(|(c, expired)| (expired, Task::Workflow(Arc::new(c))))
            .chain(
                items
                    .into_iter()
                    .map(|c| (c.took_over_expired_at, Task::Work(Arc::new(c.item)))),
            );
        for (expired, task) in tasks {
            st.stats.claims += 1;
            if matches!(task, Task::Workflow(_)) {
                st.stats.workflow_claims += 1;
            }
            let lapsed = expired.map(|expired_at| (now - expired_at).max(0));
            if let Some(lapsed) = lapsed {
                st.stats.reclaims += 1;
                st.stats.reclaim_latencies_ms.push(lapsed);
            }
            st.next_job += 1;
            let job = Job {
                id: st.next_job,
                task,
                claimed_at: now,
                lease: LeaseSignal::default(),
            };
            log::claimed(self.id(), &job, lapsed);
            st.inflight.insert(job.id, InFlight::new(job.clone()));
            jobs.push(job);
        }
        Ok(jobs)
    }
}

/// How one poll's free slots are shared out at first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Shares {
    looks: usize,
    instances: usize,
}

/// `free` slots in thirds between cursor looks, instances and items (the items' share is
/// the rest); the one or two slots that do not divide go to the three in turn, starting
/// with the `turn`th.
fn shares(free: usize, turn: usize) -> Shares {
    let (base, extra) = (free / 3, free % 3);
    let gets = |who: usize| base + usize::from((who + 3 - turn % 3) % 3 < extra);
    Shares {
        looks: gets(0),
        instances: gets(1),
    }
}

/// The free slots of each handler with a limit: its limit less the items of it this
/// authority holds (executing or held between looks), so a claim never takes it past the
/// limit.
fn handler_room(
    limits: &BTreeMap<String, usize>,
    inflight: &BTreeMap<u64, InFlight>,
) -> BTreeMap<String, usize> {
    let mut room = limits.clone();
    for f in inflight.values() {
        if let Task::Work(item) = &f.job.task {
            if let Some(n) = room.get_mut(&item.handler) {
                *n = n.saturating_sub(1);
            }
        }
    }
    room
}

/// Marks up to `n` held cursors due by `now` (longest waiting first) as executing again and
/// returns their jobs: the same claim, the same generation.
pub(super) fn take_due_cursors(
    inflight: &mut BTreeMap<u64, InFlight>,
    now: Millis,
    n: usize,
) -> Vec<Job> {
    let mut due: Vec<&mut InFlight> = inflight
        .values_mut()
        .filter(|f| f.held && !f.lost && f.look_at <= now)
        .collect();
    due.sort_by_key(|f| f.look_at);
    due.into_iter()
        .take(n)
        .map(|f| {
            f.held = false;
            f.job.clone()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One free slot goes to looks, instances and items in turn; seven split 3-2-2 with the
    /// extra slot rotating; the shares never exceed what is free.
    #[test]
    fn shares_rotate_the_slots_that_do_not_divide() {
        let one: Vec<(usize, usize)> = (0..3)
            .map(|turn| {
                let s = shares(1, turn);
                (s.looks, s.instances)
            })
            .collect();
        assert_eq!(one, [(1, 0), (0, 1), (0, 0)]);
        for turn in 0..6 {
            let s = shares(7, turn);
            let items = 7 - s.looks - s.instances;
            let mut split = [s.looks, s.instances, items];
            split.sort_unstable();
            assert_eq!(split, [2, 2, 3], "turn {turn}");
        }
        assert_eq!(
            shares(0, 4),
            Shares {
                looks: 0,
                instances: 0
            }
        );
    }
}
