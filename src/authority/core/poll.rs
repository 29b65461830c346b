//! The claim step: fire due schedules, hand held cursors their next look, then claim
//! workflow instances and work items up to the free concurrency, noting takeovers.

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
    /// Fires due schedules and claims up to the free concurrency: workflow instances (up
    /// to half the free slots) and work items (the rest, at most `claimBatchSize`).
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
        let (looks, free, handler_room) = {
            let mut st = self.state();
            if st.stopping {
                return Ok(Vec::new());
            }
            let executing = st.inflight.values().filter(|f| !f.held).count();
            let free = self.config.worker_concurrency.saturating_sub(executing);
            // Held cursors due for a look take at most half the free slots.
            let looks = take_due_cursors(&mut st.inflight, now, free.div_ceil(2));
            let room = handler_room(&self.config.handler_limits, &st.inflight);
            (looks, free, room)
        };
        let free = free - looks.len();
        self.refresh_keys(now)?;
        let fired = self
            .store
            .fire_due_schedules(&self.workload, SCHEDULES_PER_POLL)?;
        self.state().stats.schedules_fired += fired as u64;
        if free == 0 {
            return Ok(looks);
        }
        let lease = self.config.lease_duration_ms;
        let batch = self.config.claim_batch_size;

        // Workflow instances, then work items, each claim noting a takeover (failover).
        let wf_limit = free.div_ceil(2).min(batch);
        let instances = self.engine.claim_noting_takeovers(wf_limit, lease)?;
        let work_limit = free.saturating_sub(instances.len()).min(batch);
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
