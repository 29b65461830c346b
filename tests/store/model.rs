//! The property-based state-machine test: random sequences of acquire / renew / release /
//! handoff / checkpoint / claim / claim-batch / complete / fail / renew-claim / a work
//! checkpoint / an operator's requeue and discard / clock advances across three owners,
//! three resources and four work items, applied both to the real [`Store`] and to an
//! independent shadow model written here from docs/ARCHITECTURE.md (plain structs; nothing
//! from `leasehold::rules`). After every step the outcome code, and every lease's and
//! item's owner, generation, expiry, state and checkpoint must agree — a claim that lapsed
//! unrecorded included: its owner may still renew and finish it until a retry's backoff
//! after the expiry has passed; then a claim takes it over, counting the lapsed attempt,
//! and dead-letters it under the taker's new generation once its budget is spent.
//!
//! The shadow's constants are written out again on purpose: if the library's documented
//! window or backoff drifts, this test says so.

use std::collections::HashMap;
use std::marker::PhantomData;

use leasehold::Store;
use leasehold::clock::{Clock, ManualClock};
use leasehold::model::work::{NewWork, WorkFilter};
use leasehold::model::{Failure, FailureClass, PageRequest, WorkItem, WorkState};
use leasehold::rules::triage::{Verdict, is_discarded};
use leasehold::store::{Keyed, Triaged};
use proptest::prelude::*;
use proptest::test_runner::Config;
use proptest_state_machine::{ReferenceStateMachine, StateMachineTest, prop_state_machine};

use crate::support::{self, Harness, K, K_OTHER, START};

// --- the documented numbers, restated (not imported) -------------------------------------------

const MIN_LEASE: i64 = 100;
const MAX_LEASE: i64 = 30 * 24 * 3_600_000;
const DEFAULT_LEASE: i64 = 30_000;
const OWNER_CAP: u64 = 2;

const OWNERS: [&str; 3] = ["alice", "bob", "carol"];
const RESOURCES: [&str; 3] = ["res-0", "res-1", "res-2"];
/// Items 0–2 were made by this build; item 3 by another one.
const ITEMS: [&str; 4] = ["item-0", "item-1", "item-2", "item-x"];
const MAX_ATTEMPTS: [u32; 4] = [2, 3, 5, 5];

const DURATIONS: [f64; 8] = [
    f64::NAN,
    f64::INFINITY,
    -1.0,
    0.0,
    40.0,
    300.0,
    1_000.0,
    1e18,
];
const WORK_LEASES: [i64; 4] = [150, 400, 1_000, 2_500];
const ADVANCES: [i64; 7] = [1, 99, 100, 250, 1_000, 3_000, 40_000];

fn clamp(requested: f64) -> i64 {
    if requested.is_nan() || requested.is_infinite() || requested <= 0.0 {
        DEFAULT_LEASE
    } else if requested >= MAX_LEASE as f64 {
        MAX_LEASE
    } else {
        (requested.trunc() as i64).clamp(MIN_LEASE, MAX_LEASE)
    }
}

/// Default retry backoff: 500 ms doubling per attempt, at most 30 s.
fn backoff(attempt: u32) -> i64 {
    let mut delay: i64 = 500;
    for _ in 1..attempt.min(31) {
        delay = (delay * 2).min(30_000);
    }
    delay.min(30_000)
}

// --- the shadow model ---------------------------------------------------------------------

#[derive(Debug, Clone, PartialEq, Eq)]
struct ShadowLease {
    owner: usize,
    generation: u64,
    expires_at: i64,
    released: bool,
    checkpoint: Option<u8>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum St {
    Pending,
    Claimed,
    Retry,
    Succeeded,
    Failed,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct ShadowItem {
    ours: bool,
    state: St,
    owner: Option<usize>,
    generation: u64,
    lease_expires_at: Option<i64>,
    attempt: u32,
    uncertain: u32,
    max_attempts: u32,
    next_eligible_at: i64,
    /// Failed because its last attempt lapsed with the budget spent.
    dead_letter: bool,
    /// Failed because an operator discarded it.
    discarded: bool,
    /// Saved under a claim; kept while the item lives, dropped when it ends or is requeued.
    checkpoint: Option<u8>,
}

/// A triage verb's answers other than a change, as outcome codes.
const ALREADY: &str = "triage: already done";
const TRIAGE_REFUSED: &str = "triage: refused";

/// What one step answered: success, a refusal code, or the items a batch claimed.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Outcome {
    Ok,
    Refused(&'static str),
    Batch(Vec<usize>),
}

#[derive(Debug, Clone)]
pub struct Shadow {
    now: i64,
    leases: [Option<ShadowLease>; 3],
    items: [ShadowItem; 4],
    /// The generation each owner last obtained per resource / item (0: never).
    lease_gen: [[u64; 3]; 3],
    item_gen: [[u64; 4]; 3],
    last: Outcome,
}

#[derive(Debug, Clone)]
pub enum Step {
    Acquire {
        owner: usize,
        res: usize,
        dur: usize,
    },
    Renew {
        owner: usize,
        res: usize,
        dur: usize,
    },
    RenewForged {
        owner: usize,
        res: usize,
    },
    Release {
        owner: usize,
        res: usize,
    },
    Handoff {
        owner: usize,
        res: usize,
        to: usize,
        dur: usize,
    },
    Checkpoint {
        owner: usize,
        res: usize,
        data: u8,
    },
    Claim {
        owner: usize,
        item: usize,
        lease: usize,
    },
    ClaimBatch {
        owner: usize,
        limit: usize,
        lease: usize,
    },
    Complete {
        owner: usize,
        item: usize,
    },
    Fail {
        owner: usize,
        item: usize,
        retryable: bool,
    },
    RenewClaim {
        owner: usize,
        item: usize,
        lease: usize,
    },
    /// A claim holder saves resume state on a work item.
    WorkCheckpoint {
        owner: usize,
        item: usize,
        data: u8,
    },
    /// An operator's requeue of an item.
    Requeue {
        item: usize,
    },
    /// An operator's discard of an item.
    Discard {
        item: usize,
    },
    Advance {
        by: usize,
    },
}

impl Shadow {
    fn live(&self, res: usize) -> bool {
        self.leases[res]
            .as_ref()
            .is_some_and(|l| !l.released && l.expires_at > self.now)
    }

    fn held_by(&self, owner: usize) -> u64 {
        (0..3)
            .filter(|&r| self.live(r) && self.leases[r].as_ref().is_some_and(|l| l.owner == owner))
            .count() as u64
    }

    /// The holder check: the presented generation must be the current, unreleased one.
    /// (Tokens are per acquisition, so "my token for generation g" is right iff g is current.)
    fn holder(
        &self,
        res: usize,
        presented: u64,
        forged: bool,
    ) -> Result<ShadowLease, &'static str> {
        let lease = self.leases[res].clone().ok_or("NOT_FOUND")?;
        if forged || lease.released || lease.generation != presented {
            return Err("WORK_FENCED");
        }
        Ok(lease)
    }

    /// When a claimed item's lapse may be taken over: a retry's backoff after its expiry.
    fn reclaim_at(&self, i: usize) -> Option<i64> {
        let it = &self.items[i];
        (it.state == St::Claimed)
            .then_some(it.lease_expires_at)
            .flatten()
            .map(|e| e + backoff(it.attempt))
    }

    /// Pending / retry items of this build that are due, with their due instant.
    fn item_due(&self, i: usize) -> Option<i64> {
        let it = &self.items[i];
        (it.ours && matches!(it.state, St::Pending | St::Retry) && it.next_eligible_at <= self.now)
            .then_some(it.next_eligible_at)
    }

    fn claim_item(&mut self, owner: usize, i: usize, lease: i64) -> Result<(), &'static str> {
        let now = self.now;
        let reclaim_at = self.reclaim_at(i);
        let it = &mut self.items[i];
        if !it.ours {
            return Err("INCOMPATIBLE_AUTHORITY");
        }
        match it.state {
            St::Succeeded | St::Failed => return Err("already-terminal"),
            // Live, or lapsed while its owner may still finish: nothing is written.
            St::Claimed if reclaim_at.is_none_or(|at| at > now) => {
                return Err("WORK_IN_PROGRESS");
            }
            // A takeover: the lapsed attempt counts as uncertain and against the budget;
            // with none left the taker ends the item as a dead letter, under its generation.
            St::Claimed => {
                it.uncertain += 1;
                if it.attempt >= it.max_attempts {
                    it.state = St::Failed;
                    it.owner = Some(owner);
                    it.generation += 1;
                    it.lease_expires_at = None;
                    it.dead_letter = true;
                    it.checkpoint = None;
                    return Err("already-terminal");
                }
                it.next_eligible_at = reclaim_at.unwrap_or(now);
            }
            St::Pending | St::Retry if it.next_eligible_at > now => {
                return Err("WORK_NOT_CLAIMABLE");
            }
            St::Pending | St::Retry => {}
        }
        it.state = St::Claimed;
        it.owner = Some(owner);
        it.generation += 1;
        it.lease_expires_at = Some(now + lease);
        it.attempt += 1;
        self.item_gen[owner][i] = it.generation;
        Ok(())
    }

    /// Requeue: a failed item is pending now with a fresh budget (same generation); the
    /// item its own requeue left (claimed before, no attempt since) answers a repeat.
    fn requeue(&mut self, i: usize) -> Outcome {
        let now = self.now;
        let it = &mut self.items[i];
        match it.state {
            St::Failed => {
                it.state = St::Pending;
                it.attempt = 0;
                it.uncertain = 0;
                it.next_eligible_at = now;
                it.lease_expires_at = None;
                it.dead_letter = false;
                it.discarded = false;
                it.checkpoint = None;
                Outcome::Ok
            }
            St::Pending if it.generation > 0 && it.attempt == 0 => Outcome::Refused(ALREADY),
            _ => Outcome::Refused(TRIAGE_REFUSED),
        }
    }

    /// Discard: anything but a succeeded item ends failed for good; a repeat is answered.
    fn discard(&mut self, i: usize) -> Outcome {
        let it = &mut self.items[i];
        match it.state {
            St::Succeeded => Outcome::Refused(TRIAGE_REFUSED),
            St::Failed if it.discarded => Outcome::Refused(ALREADY),
            _ => {
                it.state = St::Failed;
                it.lease_expires_at = None;
                it.dead_letter = false;
                it.discarded = true;
                it.checkpoint = None;
                Outcome::Ok
            }
        }
    }

    fn claim_check(&self, owner: usize, i: usize) -> Result<(), &'static str> {
        let it = &self.items[i];
        if matches!(it.state, St::Succeeded | St::Failed) {
            return Err("already-terminal");
        }
        if it.state != St::Claimed
            || it.owner != Some(owner)
            || it.generation != self.item_gen[owner][i]
        {
            return Err("WORK_FENCED");
        }
        Ok(())
    }

    #[expect(
        clippy::too_many_lines,
        reason = "a scripted scenario: its steps in the order they happen"
    )]
    fn step(&mut self, step: &Step) -> Outcome {
        let now = self.now;
        let done = |r: Result<(), &'static str>| r.map_or_else(Outcome::Refused, |()| Outcome::Ok);
        match *step {
            Step::Acquire { owner, res, dur } => done((|| {
                if self.held_by(owner) >= OWNER_CAP {
                    return Err("LEASE_CAP_REACHED");
                }
                if self.live(res) {
                    return Err("WORK_IN_PROGRESS");
                }
                let prev = self.leases[res].clone();
                let lease = ShadowLease {
                    owner,
                    generation: prev.as_ref().map_or(0, |l| l.generation) + 1,
                    expires_at: now + clamp(DURATIONS[dur]),
                    released: false,
                    checkpoint: prev.and_then(|l| l.checkpoint),
                };
                self.lease_gen[owner][res] = lease.generation;
                self.leases[res] = Some(lease);
                Ok(())
            })()),
            Step::Renew { owner, res, dur } => done((|| {
                let l = self.holder(res, self.lease_gen[owner][res], false)?;
                // Only a live lease renews cap-exempt; a lapsed one is a new hold.
                if !self.live(res) && self.held_by(l.owner) >= OWNER_CAP {
                    return Err("LEASE_CAP_REACHED");
                }
                self.leases[res] = Some(ShadowLease {
                    expires_at: now + clamp(DURATIONS[dur]),
                    ..l
                });
                Ok(())
            })()),
            Step::RenewForged { owner, res } => done(
                self.holder(res, self.lease_gen[owner][res], true)
                    .map(|_| ()),
            ),
            Step::Release { owner, res } => done(
                self.holder(res, self.lease_gen[owner][res], false)
                    .map(|l| {
                        self.leases[res] = Some(ShadowLease {
                            released: true,
                            checkpoint: None,
                            ..l
                        });
                    }),
            ),
            Step::Handoff {
                owner,
                res,
                to,
                dur,
            } => done((|| {
                let holder = self.holder(res, self.lease_gen[owner][res], false);
                if holder.as_ref().is_ok_and(|l| l.owner == to) {
                    return Err("LEASE_SELF_HANDOFF");
                }
                if self.held_by(to) >= OWNER_CAP {
                    return Err("LEASE_CAP_REACHED");
                }
                let l = holder?;
                let moved = ShadowLease {
                    owner: to,
                    generation: l.generation + 1,
                    expires_at: now + clamp(DURATIONS[dur]),
                    released: false,
                    ..l
                };
                self.lease_gen[to][res] = moved.generation;
                self.leases[res] = Some(moved);
                Ok(())
            })()),
            Step::Checkpoint { owner, res, data } => done(
                self.holder(res, self.lease_gen[owner][res], false)
                    .map(|l| {
                        self.leases[res] = Some(ShadowLease {
                            checkpoint: Some(data),
                            ..l
                        });
                    }),
            ),
            Step::Claim { owner, item, lease } => {
                done(self.claim_item(owner, item, WORK_LEASES[lease]))
            }
            Step::ClaimBatch {
                owner,
                limit,
                lease,
            } => {
                // Reclaims first: the first `limit` lapsed claims past their backoff, by
                // expiry, are taken (a dead-lettered one takes its place in the batch all
                // the same); those inside it are left to their owners and take no room,
                // however many lead. Then the due backlog (claims are in no lane), earliest
                // first, for the room left.
                let mut lapsed: Vec<(i64, &str, usize)> = (0..4)
                    .filter(|&i| self.reclaim_at(i).is_some_and(|at| at <= now))
                    .filter_map(|i| {
                        let it = &self.items[i];
                        (it.ours && it.state == St::Claimed)
                            .then_some(it.lease_expires_at)
                            .flatten()
                            .map(|e| (e, ITEMS[i], i))
                    })
                    .collect();
                lapsed.sort_unstable();
                let takeovers: Vec<usize> =
                    lapsed.into_iter().take(limit).map(|(_, _, i)| i).collect();
                let mut due: Vec<(i64, &str, usize)> = (0..4)
                    .filter_map(|i| self.item_due(i).map(|d| (d, ITEMS[i], i)))
                    .collect();
                due.sort_unstable();
                let room = limit - takeovers.len();
                let chosen: Vec<usize> = takeovers
                    .into_iter()
                    .chain(due.into_iter().take(room).map(|(_, _, i)| i))
                    .collect();
                let mut picked = Vec::new();
                for i in chosen {
                    if self.claim_item(owner, i, WORK_LEASES[lease]).is_ok() {
                        picked.push(i);
                    }
                }
                Outcome::Batch(picked)
            }
            Step::Complete { owner, item } => done(self.claim_check(owner, item).map(|()| {
                let it = &mut self.items[item];
                it.state = St::Succeeded;
                it.lease_expires_at = None;
                it.checkpoint = None;
            })),
            Step::Fail {
                owner,
                item,
                retryable,
            } => done(self.claim_check(owner, item).map(|()| {
                let it = &mut self.items[item];
                let retry = retryable && it.attempt < it.max_attempts;
                it.state = if retry { St::Retry } else { St::Failed };
                if retry {
                    it.next_eligible_at = now + backoff(it.attempt);
                } else {
                    it.checkpoint = None;
                }
                it.lease_expires_at = None;
            })),
            Step::RenewClaim { owner, item, lease } => {
                done(self.claim_check(owner, item).map(|()| {
                    self.items[item].lease_expires_at = Some(now + WORK_LEASES[lease]);
                }))
            }
            Step::WorkCheckpoint { owner, item, data } => {
                done(self.claim_check(owner, item).map(|()| {
                    self.items[item].checkpoint = Some(data);
                }))
            }
            Step::Requeue { item } => self.requeue(item),
            Step::Discard { item } => self.discard(item),
            Step::Advance { by } => {
                self.now += ADVANCES[by];
                Outcome::Ok
            }
        }
    }
}

pub struct ShadowMachine;

impl ReferenceStateMachine for ShadowMachine {
    type State = Shadow;
    type Transition = Step;

    fn init_state() -> BoxedStrategy<Shadow> {
        let item = |i: usize| ShadowItem {
            ours: i < 3,
            state: St::Pending,
            owner: None,
            generation: 0,
            lease_expires_at: None,
            attempt: 0,
            uncertain: 0,
            max_attempts: MAX_ATTEMPTS[i],
            next_eligible_at: START,
            dead_letter: false,
            discarded: false,
            checkpoint: None,
        };
        Just(Shadow {
            now: START,
            leases: [None, None, None],
            items: [item(0), item(1), item(2), item(3)],
            lease_gen: [[0; 3]; 3],
            item_gen: [[0; 4]; 3],
            last: Outcome::Ok,
        })
        .boxed()
    }

    fn transitions(_: &Shadow) -> BoxedStrategy<Step> {
        let owners = 0..3usize;
        let resources = 0..3usize;
        let items = 0..4usize;
        let durations = 0..DURATIONS.len();
        let leases = 0..WORK_LEASES.len();
        prop_oneof![
            4 => (owners.clone(), resources.clone(), durations.clone()).prop_map(|(owner, res, dur)| Step::Acquire { owner, res, dur }),
            2 => (owners.clone(), resources.clone(), durations.clone()).prop_map(|(owner, res, dur)| Step::Renew { owner, res, dur }),
            1 => (owners.clone(), resources.clone()).prop_map(|(owner, res)| Step::RenewForged { owner, res }),
            2 => (owners.clone(), resources.clone()).prop_map(|(owner, res)| Step::Release { owner, res }),
            2 => (owners.clone(), resources.clone(), 0..3usize, durations).prop_map(|(owner, res, k, dur)| Step::Handoff { owner, res, to: (owner + k) % 3, dur }),
            1 => (owners.clone(), resources, any::<u8>()).prop_map(|(owner, res, data)| Step::Checkpoint { owner, res, data }),
            3 => (owners.clone(), items.clone(), leases.clone()).prop_map(|(owner, item, lease)| Step::Claim { owner, item, lease }),
            3 => (owners.clone(), 0..4usize, leases.clone()).prop_map(|(owner, limit, lease)| Step::ClaimBatch { owner, limit, lease }),
            3 => (owners.clone(), items.clone()).prop_map(|(owner, item)| Step::Complete { owner, item }),
            2 => (owners.clone(), items.clone(), any::<bool>()).prop_map(|(owner, item, retryable)| Step::Fail { owner, item, retryable }),
            1 => (owners.clone(), items.clone(), leases).prop_map(|(owner, item, lease)| Step::RenewClaim { owner, item, lease }),
            2 => (owners, items.clone(), any::<u8>()).prop_map(|(owner, item, data)| Step::WorkCheckpoint { owner, item, data }),
            1 => items.clone().prop_map(|item| Step::Requeue { item }),
            1 => items.prop_map(|item| Step::Discard { item }),
            4 => (0..ADVANCES.len()).prop_map(|by| Step::Advance { by }),
        ]
        .boxed()
    }

    fn apply(mut state: Shadow, step: &Step) -> Shadow {
        state.last = state.step(step);
        state
    }
}

// --- the system under test ----------------------------------------------------------------

/// How the machine gets a fresh provider per case.
pub trait Provider {
    fn fresh() -> Box<dyn Harness>;
}

pub struct Memory;
impl Provider for Memory {
    fn fresh() -> Box<dyn Harness> {
        support::memory()
    }
}

pub struct Sqlite;
impl Provider for Sqlite {
    fn fresh() -> Box<dyn Harness> {
        support::sqlite_in_memory_fs()
    }
}

#[cfg(feature = "postgres")]
pub struct Postgres;
#[cfg(feature = "postgres")]
impl Provider for Postgres {
    fn fresh() -> Box<dyn Harness> {
        support::postgres()
    }
}

pub struct Real {
    store: Store,
    clock: ManualClock,
    /// What each owner (a client) remembers: its (token, generation) per resource and its
    /// generation per item, learned only from the store's answers.
    tokens: HashMap<(usize, usize), (String, u64)>,
    item_gen: [[u64; 4]; 3],
    _harness: Box<dyn Harness>,
}

pub struct Machine<P>(PhantomData<P>);

const OPERATOR: &str = "operator@model";

fn triaged(r: &leasehold::Result<Triaged>) -> Outcome {
    match r {
        Ok(t) => match t.verdict {
            Verdict::Done => Outcome::Ok,
            Verdict::AlreadyDone => Outcome::Refused(ALREADY),
            Verdict::Refused { .. } | Verdict::Unknown => Outcome::Refused(TRIAGE_REFUSED),
        },
        Err(e) => panic!("triage failed: {e}"),
    }
}

fn code<T>(r: &leasehold::Result<T>) -> Outcome {
    match r {
        Ok(_) => Outcome::Ok,
        Err(e) => {
            assert!(
                !e.is_store_failure(),
                "a store failure in the model test: {e}"
            );
            Outcome::Refused(e.code())
        }
    }
}

impl Real {
    fn token(&self, owner: usize, res: usize) -> (String, u64) {
        self.tokens
            .get(&(owner, res))
            .cloned()
            .unwrap_or_else(|| ("never-held".into(), 0))
    }

    fn remember_item(&mut self, owner: usize, item: &WorkItem) {
        let i = ITEMS
            .iter()
            .position(|id| *id == item.id)
            .expect("a known item");
        self.item_gen[owner][i] = item.generation;
    }

    #[expect(
        clippy::too_many_lines,
        reason = "a scripted scenario: its steps in the order they happen"
    )]
    fn step(&mut self, step: &Step) -> Outcome {
        let no_key = Keyed { key: None };
        let s = self.store.clone();
        match *step {
            Step::Acquire { owner, res, dur } => {
                let r = s.acquire(RESOURCES[res], OWNERS[owner], DURATIONS[dur], no_key);
                if let Ok(l) = &r {
                    self.tokens
                        .insert((owner, res), (l.token.clone(), l.generation));
                }
                code(&r)
            }
            Step::Renew { owner, res, dur } => {
                let (token, generation) = self.token(owner, res);
                code(&s.renew(RESOURCES[res], &token, generation, DURATIONS[dur]))
            }
            Step::RenewForged { owner, res } => {
                let (_, generation) = self.token(owner, res);
                code(&s.renew(RESOURCES[res], "forged-token", generation, 1_000.0))
            }
            Step::Release { owner, res } => {
                let (token, generation) = self.token(owner, res);
                code(&s.release(RESOURCES[res], OWNERS[owner], &token, generation, no_key))
            }
            Step::Handoff {
                owner,
                res,
                to,
                dur,
            } => {
                let (token, generation) = self.token(owner, res);
                let r = s.handoff(
                    RESOURCES[res],
                    OWNERS[owner],
                    &token,
                    generation,
                    OWNERS[to],
                    DURATIONS[dur],
                    no_key,
                );
                if let Ok(l) = &r {
                    assert_eq!(l.owner_id, OWNERS[to]);
                    self.tokens
                        .insert((to, res), (l.token.clone(), l.generation));
                }
                code(&r)
            }
            Step::Checkpoint { owner, res, data } => {
                let (token, generation) = self.token(owner, res);
                code(&s.save_checkpoint(
                    RESOURCES[res],
                    OWNERS[owner],
                    &token,
                    generation,
                    &data.to_string(),
                    no_key,
                ))
            }
            Step::Claim { owner, item, lease } => {
                // This authority is always "this build": item-x answers INCOMPATIBLE_AUTHORITY.
                let r = s.claim(ITEMS[item], OWNERS[owner], K, WORK_LEASES[lease]);
                if let Ok(it) = &r {
                    self.remember_item(owner, it);
                }
                code(&r)
            }
            Step::ClaimBatch {
                owner,
                limit,
                lease,
            } => match s.claim_batch(OWNERS[owner], K, limit, WORK_LEASES[lease]) {
                Ok(items) => {
                    let mut picked = Vec::new();
                    for it in &items {
                        self.remember_item(owner, it);
                        picked.push(ITEMS.iter().position(|id| *id == it.id).expect("known"));
                    }
                    Outcome::Batch(picked)
                }
                Err(e) => panic!("claim_batch failed: {e}"),
            },
            Step::Complete { owner, item } => code(&s.complete(
                ITEMS[item],
                OWNERS[owner],
                self.item_gen[owner][item],
                Some("done".into()),
            )),
            Step::Fail {
                owner,
                item,
                retryable,
            } => {
                let class = if retryable {
                    FailureClass::Retryable
                } else {
                    FailureClass::Terminal
                };
                let failure = Failure {
                    class,
                    code: "E_MODEL".into(),
                    message: "model".into(),
                };
                code(&s.fail(
                    ITEMS[item],
                    OWNERS[owner],
                    self.item_gen[owner][item],
                    failure,
                ))
            }
            Step::RenewClaim { owner, item, lease } => code(&s.renew_claim(
                ITEMS[item],
                OWNERS[owner],
                self.item_gen[owner][item],
                WORK_LEASES[lease],
            )),
            Step::WorkCheckpoint { owner, item, data } => code(&s.save_work_checkpoint(
                ITEMS[item],
                OWNERS[owner],
                self.item_gen[owner][item],
                &data.to_string(),
            )),
            Step::Requeue { item } => triaged(&s.requeue_work(ITEMS[item], OPERATOR, "model")),
            Step::Discard { item } => triaged(&s.discard_work(ITEMS[item], OPERATOR, "model")),
            Step::Advance { by } => {
                self.clock.advance(ADVANCES[by]);
                Outcome::Ok
            }
        }
    }

    #[expect(
        clippy::too_many_lines,
        reason = "a scripted scenario: its steps in the order they happen"
    )]
    fn check(&self, shadow: &Shadow) {
        assert_eq!(self.clock.now(), shadow.now);
        // Two paged reads per step (cheaper on SQLite than one read per row).
        let mut leases: HashMap<String, leasehold::model::Lease> = self
            .store
            .list_leases(&PageRequest::first(16))
            .expect("list leases")
            .rows
            .into_iter()
            .map(|l| (l.resource_id.clone(), l))
            .collect();
        let mut items: HashMap<String, WorkItem> = self
            .store
            .list_work(&WorkFilter::default(), &PageRequest::first(16))
            .expect("list work")
            .rows
            .into_iter()
            .map(|w| (w.id.clone(), w))
            .collect();
        assert_eq!(items.len(), ITEMS.len(), "no work item appears or vanishes");
        for (r, expected) in shadow.leases.iter().enumerate() {
            let actual = leases.remove(RESOURCES[r]);
            match (expected, actual) {
                (None, None) => {}
                (Some(e), Some(a)) => {
                    let view = (
                        a.owner_id.as_str(),
                        a.generation,
                        a.expires_at,
                        a.released_at.is_some(),
                        a.checkpoint.as_ref().map(|c| c.data.clone()),
                    );
                    let want = (
                        OWNERS[e.owner],
                        e.generation,
                        e.expires_at,
                        e.released,
                        e.checkpoint.map(|d| d.to_string()),
                    );
                    assert_eq!(
                        view, want,
                        "{}: (owner, generation, expiresAt, released, checkpoint)",
                        RESOURCES[r]
                    );
                    // The client that holds the current generation holds the current token.
                    assert_eq!(
                        self.token(e.owner, r),
                        (a.token.clone(), a.generation),
                        "{}: holder's token",
                        RESOURCES[r]
                    );
                }
                (e, a) => panic!("{}: shadow {e:?}, store {a:?}", RESOURCES[r]),
            }
        }
        assert!(
            leases.is_empty(),
            "lease rows the shadow does not know: {leases:?}"
        );
        for (i, e) in shadow.items.iter().enumerate() {
            let a = items.remove(ITEMS[i]).expect("item exists");
            let state = match a.state {
                WorkState::Pending => St::Pending,
                WorkState::Claimed => St::Claimed,
                WorkState::Retry => St::Retry,
                WorkState::Succeeded => St::Succeeded,
                WorkState::Failed => St::Failed,
            };
            let owner = a
                .current_owner()
                .map(|o| OWNERS.iter().position(|x| *x == o).expect("known owner"));
            let view = (
                state,
                owner,
                a.generation,
                a.lease_expires_at,
                a.attempt_number,
                a.uncertain_attempts,
                a.next_eligible_at,
                a.checkpoint.clone(),
            );
            let want = (
                e.state,
                if e.state == St::Claimed {
                    e.owner
                } else {
                    None
                },
                e.generation,
                e.lease_expires_at,
                e.attempt,
                e.uncertain,
                e.next_eligible_at,
                e.checkpoint.map(|d| d.to_string()),
            );
            assert_eq!(
                view, want,
                "{}: (state, owner, generation, leaseExpiresAt, attempt, uncertain, nextEligibleAt, checkpoint)",
                ITEMS[i]
            );
            assert_eq!(
                (a.is_dead_letter(), is_discarded(&a)),
                (e.dead_letter, e.discarded),
                "{}: (dead letter, discarded)",
                ITEMS[i]
            );
        }
        assert_eq!(
            self.item_gen, shadow.item_gen,
            "what each owner learned from the store"
        );
    }
}

impl<P: Provider> StateMachineTest for Machine<P> {
    type SystemUnderTest = Real;
    type Reference = ShadowMachine;

    fn init_test(_: &Shadow) -> Real {
        let harness = P::fresh();
        let store = harness.store().with_owner_cap(OWNER_CAP);
        let clock = harness.clock().clone();
        for (i, id) in ITEMS.iter().enumerate() {
            let compat = if i < 3 { K } else { K_OTHER };
            store
                .enqueue(
                    NewWork {
                        max_attempts: MAX_ATTEMPTS[i],
                        ..NewWork::effect(*id, "model", "{}")
                    },
                    compat,
                )
                .expect("enqueue");
        }
        Real {
            store,
            clock,
            tokens: HashMap::new(),
            item_gen: [[0; 4]; 3],
            _harness: harness,
        }
    }

    fn apply(mut real: Real, shadow: &Shadow, step: Step) -> Real {
        let outcome = real.step(&step);
        assert_eq!(outcome, shadow.last, "outcome of {step:?}");
        real
    }

    fn check_invariants(real: &Real, shadow: &Shadow) {
        real.check(shadow);
    }
}

fn config() -> Config {
    Config {
        cases: 256,
        failure_persistence: None,
        ..Config::default()
    }
}

prop_state_machine! {
    #![proptest_config(config())]

    #[test]
    fn shadow_model_agrees_on_memory(sequential 50 => Machine<Memory>);

    #[test]
    fn shadow_model_agrees_on_sqlite(sequential 50 => Machine<Sqlite>);

    #[cfg(feature = "postgres")]
    #[test]
    fn shadow_model_agrees_on_postgres(sequential 50 => Machine<Postgres>);
}
