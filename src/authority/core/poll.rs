//! The claim step: fire due schedules, hand held cursors their next look, then claim
//! workflow instances and work items up to the free concurrency, noting takeovers. The
//! free slots are shared in thirds between cursor looks, instances and items; the slots
//! that do not divide evenly go to each in turn, and what one leaves unused goes to the
//! others, so an authority with one free worker serves all three in turn instead of
//! whichever is asked first.
//!
//! A poll's schedule firings and every claim it makes are one store transaction, and a poll
//! that follows a finished batch records the batch's plain outcomes in it first
//! (`finish_all_and_poll`): the slots they free are filled at the cost of one commit, and a
//! failed commit neither records the outcomes nor claims, so the authority never holds more
//! than its concurrency.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::turns::{Commits, Turn};
use super::{AuthorityCore, InFlight, Job, Task};
use crate::authority::handlers::LeaseSignal;
use crate::authority::log;
use crate::clock::Millis;
use crate::error::Result;
use crate::model::WorkItem;
use crate::rules::schedule::on_time_window;
use crate::store::{
    Claim, ClaimBudget, Completion, Probe, Tx, complete_in, completed_ids, fire_due_in,
};
use crate::workflow::engine::Claimed;

/// Schedules examined per poll.
const SCHEDULES_PER_POLL: usize = 64;

impl AuthorityCore {
    /// Fires due schedules, hands held cursors due for a look their next look, and claims
    /// up to the free concurrency: each of looks, workflow instances and work items (at
    /// most `claimBatchSize` of each claim) takes its share of the free slots; items also
    /// take what looks and instances left, then instances and looks what items left.
    ///
    /// # Errors
    /// A store failure (nothing fired or claimed: the poll is one transaction).
    pub fn poll(&self) -> Result<Vec<Job>> {
        let out = self
            .poll_inner(&Finishing::default())
            .map(|polled| polled.jobs);
        self.note_store_error(&out);
        out
    }

    /// One poll as one write transaction: the outcomes in `finishing` (jobs that have just
    /// run, whose slots the claims may fill), then the claims. A store failure commits none
    /// of it: the outcomes are deferred by the caller and nothing is claimed, so the
    /// authority never holds more than its concurrency.
    pub(super) fn poll_inner(&self, finishing: &Finishing) -> Result<Polled> {
        let now = self.store.now();
        // Looks are counted now and taken last, so that a store failure on the way leaves
        // every held cursor held.
        let (due_looks, looks_waiting, free, handler_room, in_flight, share, idle, holding) = {
            let mut st = self.state();
            if st.stopping {
                drop(st);
                return self.record_only(finishing);
            }
            let executing = st.inflight.values().filter(|f| !f.held).count();
            let free = self
                .config
                .worker_concurrency
                .saturating_sub(executing.saturating_sub(finishing.job_ids.len()));
            let share = shares(free, st.share_turn);
            if free > 0 {
                st.share_turn = st.share_turn.wrapping_add(1);
            }
            let waiting = due_cursors(&st.inflight, now);
            let due = waiting.min(share.looks);
            let room = handler_room(&self.config.handler_limits, &st.inflight, finishing);
            let running = running_by_handler(&st.inflight, finishing);
            let holding = executing > 0;
            (due, waiting, free, room, running, share, st.idle, holding)
        };
        self.refresh_keys(now)?;
        let lease = self.config.lease_duration_ms;
        let batch = self.config.claim_batch_size;
        let owner = self.config.instance_id.as_str();
        let keys = self.claim_keys();
        // Workflow instances, then work items, then instances for what the items left,
        // each claim noting a takeover (failover).
        let wf_limit = share.instances.min(batch);
        let on_time = on_time_window(self.config.poll_interval_ms);
        let quiet = finishing.completions.is_empty() && looks_waiting == 0;
        if quiet && self.standing_aside() {
            return Ok(Polled::default());
        }
        if quiet
            && (free == 0 || idle)
            && !self.would_act(free, &keys, &handler_room, &in_flight)?
        {
            self.state().idle = true;
            return Ok(Polled::default());
        }
        let workload = &self.workload;
        // `granted` is the instant the claims were decided at, inside the write lock: a job's
        // claim → complete time starts there, not when this poll began to wait for the lock.
        let reads = completed_ids(&finishing.completions);
        let asked = Instant::now();
        let (fired, completed, instances, claimed, granted, lock_at, turn) =
            self.store.write_reading(&reads, |tx, now| {
                let lock_at = Instant::now();
                let turn = self.turn_at_grant(tx, lock_at - asked, holding, lock_at)?;
                let free = due_looks + turn.limit(free.saturating_sub(due_looks));
                let fired = fire_due_in(tx, now, &workload, SCHEDULES_PER_POLL, on_time)?;
                let completed = complete_in(tx, now, &finishing.completions)?;
                let mut instances = if wf_limit > 0 && free > due_looks {
                    self.engine.claim_in(tx, now, wf_limit, lease)?
                } else {
                    Vec::new()
                };
                let work_limit = free.saturating_sub(due_looks + instances.len()).min(batch);
                let claimed = if work_limit > 0 {
                    let budget = self.claim_budget(work_limit, &handler_room, &in_flight);
                    Some(
                        self.store
                            .claim_work_in(tx, now, owner, &keys, &budget, lease)?,
                    )
                } else {
                    None
                };
                let items = claimed.as_ref().map_or(0, |c| c.claims.len());
                let left = free.saturating_sub(due_looks + instances.len() + items);
                if left > 0 && instances.len() == wf_limit {
                    instances.extend(self.engine.claim_in(tx, now, left.min(batch), lease)?);
                }
                Ok((fired, completed, instances, claimed, now, lock_at, turn))
            })?;
        self.note_turn(turn, lock_at, fired);
        let items = match claimed {
            Some(claimed) => {
                self.store.keep_rotation(owner, claimed.rotation);
                self.state()
                    .stats
                    .settled(&claimed.claims, &claimed.dead_letters);
                for dead in &claimed.dead_letters {
                    log::dead_lettered(self.id(), dead);
                }
                claimed.claims
            }
            None => Vec::new(),
        };
        // The looks: their share, or every slot the claims left when they took all of it.
        let claimed = instances.len() + items.len();
        let look_limit = if due_looks == share.looks {
            free.saturating_sub(claimed)
        } else {
            due_looks
        };
        let jobs = self.start_jobs(granted, look_limit, instances, items);
        self.state().idle = fired == 0 && completed.is_empty() && jobs.is_empty();
        Ok(Polled { completed, jobs })
    }

    /// A stopping authority's poll: the outcomes in `finishing` recorded, nothing claimed.
    fn record_only(&self, finishing: &Finishing) -> Result<Polled> {
        let completed = match finishing.completions.as_slice() {
            [] => Vec::new(),
            completions => self
                .store
                .write_reading(&completed_ids(completions), |tx, now| {
                    complete_in(tx, now, completions)
                })?,
        };
        Ok(Polled {
            completed,
            jobs: Vec::new(),
        })
    }

    /// Whether this authority stands aside from a crowded lock now (`turns.rs`): a poll
    /// with nothing to write then takes no turn at all.
    fn standing_aside(&self) -> bool {
        self.turns().is_some_and(|t| t.aside(Instant::now()))
    }

    /// What a poll granted the lock at `at` in `tx` after waiting `waited` claims:
    /// everything free where authorities do not step aside.
    fn turn_at_grant(
        &self,
        tx: &mut dyn Tx,
        waited: Duration,
        holding: bool,
        at: Instant,
    ) -> Result<Turn> {
        if self.turns.is_none() {
            return Ok(Turn::Claim);
        }
        // Counted before the view is locked: the view is never held across a store call.
        let now = Commits {
            store: tx.revision()?,
            own: self.store.commits_made(),
        };
        Ok(self
            .turns()
            .map_or(Turn::Claim, |mut t| t.at_grant(waited, now, holding, at)))
    }

    /// Counts what a poll written at `lock_at` fired and whether it stepped aside, and
    /// takes its hold of the lock into the queue's view unless it did.
    fn note_turn(&self, turn: Turn, lock_at: Instant, fired: usize) {
        let aside = turn == Turn::Aside;
        if let (false, Some(mut turns)) = (aside, self.turns()) {
            turns.held(lock_at.elapsed());
        }
        let mut st = self.state();
        st.stats.schedules_fired += fired as u64;
        st.stats.lock_step_asides += u64::from(aside);
    }

    /// Whether a poll with `free` slots would fire, move or claim anything now, asked in a
    /// read without the write lock (`store/idle_probe.rs`).
    fn would_act(
        &self,
        free: usize,
        keys: &crate::model::CompatSet,
        handler_room: &BTreeMap<String, usize>,
        in_flight: &BTreeMap<String, usize>,
    ) -> Result<bool> {
        // The budget the claim would have: a smaller one reads fewer lapsed claims, and the
        // few it reads may all be inside their reclaim grace while later ones are not.
        let limit = free.min(self.config.claim_batch_size);
        let budget = self.claim_budget(limit, handler_room, in_flight);
        let probe = if free == 0 {
            Probe::SchedulesOnly
        } else {
            Probe::Everything {
                owner: &self.config.instance_id,
                keys,
                budget: &budget,
            }
        };
        self.store.poll_would_act(&probe)
    }

    /// What a claim of up to `limit` work items may take: the handlers' free slots and
    /// what each has in flight, their fleet-wide rates, and the reclaim grace.
    fn claim_budget(
        &self,
        limit: usize,
        handler_room: &BTreeMap<String, usize>,
        in_flight: &BTreeMap<String, usize>,
    ) -> ClaimBudget {
        ClaimBudget {
            limit,
            per_handler: handler_room.clone(),
            in_flight: in_flight.clone(),
            rates: self.config.handler_rates.clone(),
            reclaim: self.config.reclaim_backoff(),
        }
    }

    /// Turns up to `look_limit` due cursor looks and the claims made into jobs in flight,
    /// counting claims and takeovers.
    fn start_jobs(
        &self,
        now: Millis,
        look_limit: usize,
        instances: Vec<(Claimed, Option<Millis>)>,
        items: Vec<Claim>,
    ) -> Vec<Job> {
        let mut st = self.state();
        let mut jobs = take_due_cursors(&mut st.inflight, now, look_limit);
        jobs.reserve(instances.len() + items.len());
        let tasks = instances
            .into_iter()
            .map(|(c, expired)| (expired, Task::Workflow(Arc::new(c))))
            .chain(
                items
                    .into_iter()
                    .map(|c| (c.took_over_expired_at, Task::Work(c.item))),
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
        jobs
    }
}

/// Jobs that have just run, whose plain outcomes the poll that refills their slots records
/// first, in the poll's transaction.
#[derive(Debug, Default)]
pub(super) struct Finishing {
    /// Their in-flight ids: their slots, and their handlers' room, count as free.
    pub job_ids: Vec<u64>,
    /// Their outcomes, in the order the answers come back.
    pub completions: Vec<Completion>,
}

/// What one poll did: the answers to the outcomes it recorded, in order, and the jobs it
/// started.
#[derive(Default)]
pub(super) struct Polled {
    pub completed: Vec<Result<Arc<WorkItem>>>,
    pub jobs: Vec<Job>,
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
/// authority holds (executing or held between looks) other than those `finishing`, so a
/// claim never takes it past the limit.
fn handler_room(
    limits: &BTreeMap<String, usize>,
    inflight: &BTreeMap<u64, InFlight>,
    finishing: &Finishing,
) -> BTreeMap<String, usize> {
    let mut room = limits.clone();
    if room.is_empty() {
        return room;
    }
    for f in inflight.values() {
        if let Task::Work(item) = &f.job.task {
            if finishing.job_ids.contains(&f.job.id) {
                continue;
            }
            if let Some(n) = room.get_mut(&item.handler) {
                *n = n.saturating_sub(1);
            }
        }
    }
    room
}

/// How many items of each handler this authority is running (held cursors between looks
/// take no worker; those `finishing` have ended): what each handler occupies of its slots,
/// by which the claim shares them (`store/fair_share.rs`).
fn running_by_handler(
    inflight: &BTreeMap<u64, InFlight>,
    finishing: &Finishing,
) -> BTreeMap<String, usize> {
    let mut running: BTreeMap<String, usize> = BTreeMap::new();
    let mut count = |f: &InFlight, by: isize| {
        if let (false, Task::Work(item)) = (f.held, &f.job.task) {
            let n = running.entry(item.handler.clone()).or_default();
            *n = n.saturating_add_signed(by);
        }
    };
    for f in inflight.values() {
        count(f, 1);
    }
    for f in finishing.job_ids.iter().filter_map(|id| inflight.get(id)) {
        count(f, -1);
    }
    running.retain(|_, n| *n > 0);
    running
}

/// Whether `f` is a held cursor due for a look at `now`.
fn due_look(f: &InFlight, now: Millis) -> bool {
    f.held && !f.lost && f.look_at <= now
}

/// How many held cursors are due for a look at `now`.
fn due_cursors(inflight: &BTreeMap<u64, InFlight>, now: Millis) -> usize {
    inflight.values().filter(|f| due_look(f, now)).count()
}

/// Marks up to `n` held cursors due by `now` (longest waiting first) as executing again and
/// returns their jobs: the same claim, the same generation.
fn take_due_cursors(inflight: &mut BTreeMap<u64, InFlight>, now: Millis, n: usize) -> Vec<Job> {
    let mut due: Vec<&mut InFlight> = inflight.values_mut().filter(|f| due_look(f, now)).collect();
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
