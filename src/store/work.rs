//! Work operations: enqueue, batched claim, fenced completion / retry / yield / checkpoint,
//! group commit. Counts by (kind, state, compat) are kept incrementally here, in the same
//! transaction as the change, so the dashboard never counts a million rows.

use std::sync::Arc;

use super::attempt_errors::{Lapsed, record_failure};
use super::fair_share::{ClaimBudget, Rotation, claim_candidates};
use super::handler_control::{charge, gate, paused_refusal};
use super::intake::move_intake;
use super::{Counter, HandlerKeys, Logged, Store, Tx, record_write};
use crate::clock::Millis;
use crate::error::{Error, Result};
use crate::ids::{check_id, check_new_id, check_opt_id};
use crate::model::work::NewWork;
use crate::model::{CompatSet, Failure, Grant, GrantKind, Holder, Takeover, WorkItem, WriteVerb};
use crate::rules::work::{self as rules, Backoff, Retry};

/// One finished attempt, for group commit: each is fenced on its own.
#[derive(Debug, Clone)]
pub struct Completion {
    pub id: String,
    pub owner: String,
    pub generation: u64,
    pub outcome: std::result::Result<Option<String>, Failure>,
    /// For a failure: the handler's backoff (with the least delay it asked for) and its cap
    /// on the item's attempts. See [`Store::fail_with_retry`].
    pub retry: Retry,
}

/// One claimed item, from [`Store::claim_work`].
#[derive(Debug, Clone)]
pub struct Claim {
    /// The item as claimed: the version the store holds, shared rather than copied.
    pub item: Arc<WorkItem>,
    /// When the claim this one took over had expired, if it took one over.
    pub took_over_expired_at: Option<Millis>,
    /// Whether this claim settled a claim that lapsed without an outcome: its write counted
    /// one more uncertain attempt ([`rules::settle_unfinished`]).
    pub settled_lapse: bool,
}

/// What one claim batch wrote ([`Store::claim_work_in`]): the items claimed to run, the
/// lapsed claims it found with no attempt left and ended as dead letters (granted to the
/// claimer, nothing to run), and where the claimer's rotation stands after them.
#[derive(Debug)]
pub(crate) struct ClaimBatch {
    pub claims: Vec<Claim>,
    pub dead_letters: Vec<Arc<WorkItem>>,
    pub rotation: Rotation,
}

/// What [`Store::offer_work`] came to: the item is new, or the store already holds the
/// effect offered, under its id or its idempotency key (then nothing was written).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Enqueued {
    Created,
    /// The existing item's id, which need not be the offered one: a key names one item
    /// whatever id each offer gives.
    Duplicate(String),
}

/// What inserting a new item came to.
enum Inserted {
    New,
    /// Not written: this item holds its idempotency key already.
    KeyHeld(Box<WorkItem>),
    /// Not written: another item (holding another key) has its id.
    IdTaken,
}

/// Inserts `item` unless its idempotency key or its id is taken, keeping the counts in
/// step. The key is looked up first, in the writing transaction (one seek of the key
/// index; the providers serialise writers), so a key is held by one item whatever ids its
/// offers carry. Every kind's default key is its logical id, and that is its id unless
/// given: schedule firings (`"<scheduleId>@<dueInstant>"`) and cursors key by their own
/// ids, so two of them never share a key. The revision advances only once the row is in
/// (an insert onto a taken id writes nothing), so a repeat commits nothing at all.
fn insert_new(tx: &mut dyn Tx, item: &WorkItem) -> Result<Inserted> {
    if let Some(holder) = tx.work_by_key(&item.idempotency_key)? {
        return Ok(Inserted::KeyHeld(Box::new(holder)));
    }
    if !tx.insert_work(item)? {
        return Ok(Inserted::IdTaken);
    }
    tx.commit_revision()?;
    tx.adjust_counter(
        &Counter::work_key(item.kind, item.count_name(), &item.compat),
        1,
    )?;
    Ok(Inserted::New)
}

/// Writes `next` over `prev`, keeping the counts in step. A new item (`prev` is `None`)
/// is written only if neither its id nor its idempotency key is taken (see
/// [`insert_new`]); the answer says whether it was.
pub(crate) fn save_work(tx: &mut dyn Tx, prev: Option<&WorkItem>, next: &WorkItem) -> Result<bool> {
    match prev {
        None => return Ok(matches!(insert_new(tx, next)?, Inserted::New)),
        Some(prev) => {
            debug_assert!(
                prev.kind == next.kind && prev.compat == next.compat,
                "a rule changed the kind or compat of {}",
                next.id
            );
            update_saved(tx, prev.count_name(), &Arc::new(next.clone()))?;
        }
    }
    Ok(true)
}

/// Writes `next` over the item it is the next version of, which was counted under `was`
/// ([`WorkItem::count_name`]), keeping the counts in step. For a version a rule made from the
/// item: rules never change an item's kind or compat, so only its state (or a discard)
/// moves it between counts.
fn update_saved(tx: &mut dyn Tx, was: &str, next: &Arc<WorkItem>) -> Result<()> {
    tx.commit_revision()?;
    tx.update_work(next)?;
    let now = next.count_name();
    if was != now {
        tx.adjust_counter(&Counter::work_key(next.kind, was, &next.compat), -1)?;
        tx.adjust_counter(&Counter::work_key(next.kind, now, &next.compat), 1)?;
    }
    Ok(())
}

impl Store {
    /// Enqueues one item stamped with the key `keys` gives its handler (a digest, or a
    /// producer's own version of the handler, see [`crate::model::handler_key`]): pending, claimable from `spec.not_before` (default now), with
    /// `spec.max_attempts` attempts (at least 1); its idempotency key defaults to its
    /// logical effect id, which defaults to its id. The producer's one call for an effect.
    ///
    /// Outcomes: `Ok(true)` — new; `Ok(false)` — a repeat, left exactly as it is
    /// (idempotent enqueue: one logical effect however often it is offered): an item
    /// already holds this idempotency key, whatever id this offer gives, or has this id,
    /// and it is the same effect — the same kind, handler and payload (as JSON: spacing
    /// and key order aside), and an explicit key is its key. [`Self::offer_work`] also
    /// names the item a repeat found. The first offer's delay, budget, priority and
    /// handler version stand.
    ///
    /// Durability: the call returns once the transaction holding the item committed.
    /// Concurrent calls through one handle (or its clones) share commits — *group commit*:
    /// calls that arrive while one commit runs are written together in the next, each
    /// answered on its own (of two concurrent calls with one id or key, exactly one is
    /// new), and a failed commit fails every call in it. A lone caller commits at once.
    ///
    /// # Errors
    /// `IDEMPOTENCY_CONFLICT` when the item found by the key or the id is another effect
    /// (nothing is written for this call); `INVALID` when the id, handler, logical effect
    /// id or idempotency key fails [`check_id`], `keys` has no key for a handler or an
    /// empty one, the payload is not JSON, `max_attempts` is 0 or `not_before` is past the
    /// end of the year 9999 (nothing is written); a store failure (`STORE_UNAVAILABLE`, `STORE_CONTENTION`,
    /// `STORE_READ_ONLY`, `OUTCOME_UNKNOWN`, …).
    pub fn enqueue(&self, spec: NewWork, keys: impl HandlerKeys) -> Result<bool> {
        Ok(self.offer_work(spec, keys)? == Enqueued::Created)
    }

    /// [`Self::enqueue`], answering which item a repeat found (`leasehold work enqueue`
    /// reports it).
    ///
    /// # Errors
    /// As [`Self::enqueue`].
    pub fn offer_work(&self, spec: NewWork, keys: impl HandlerKeys) -> Result<Enqueued> {
        let stamped = stamp(spec, &keys)?;
        self.enqueues
            .submit(stamped, |group| self.insert_stamped(&group))?
    }

    /// Enqueues many items in one transaction, each as [`Self::enqueue`] and stamped with
    /// the key `keys` gives its handler; returns how many were new. An item repeating an
    /// earlier one of the batch (by key or id) is a repeat of it.
    ///
    /// # Errors
    /// As [`Self::enqueue`]; one invalid spec refuses the whole batch before anything is
    /// written, and one `IDEMPOTENCY_CONFLICT` (with the store or within the batch)
    /// refuses the whole batch, nothing written.
    pub fn enqueue_batch(&self, specs: Vec<NewWork>, keys: impl HandlerKeys) -> Result<usize> {
        let stamped = stamp_all(specs, &keys)?;
        self.write(|tx, now| {
            move_intake(tx, now)?;
            let mut created = 0;
            for offered in offer_in(tx, now, &stamped)? {
                created += usize::from(offered? == Enqueued::Created);
            }
            Ok(created)
        })
    }

    /// Enqueues many items in one transaction and answers each on its own, as
    /// [`Self::offer_work`] would: new, a repeat naming the item found, or
    /// `IDEMPOTENCY_CONFLICT` for that item alone — nothing is written for a conflicting
    /// item and the others commit. A producer loading a file of items uses it, so one
    /// line that clashes with the store does not hold back the rest of its batch.
    ///
    /// # Errors
    /// One invalid spec refuses the whole batch before anything is written (as
    /// [`Self::enqueue_batch`]); a store failure fails the whole batch.
    pub fn offer_batch(
        &self,
        specs: Vec<NewWork>,
        keys: impl HandlerKeys,
    ) -> Result<Vec<Result<Enqueued>>> {
        let stamped = stamp_all(specs, &keys)?;
        self.insert_stamped(&stamped)
    }

    /// Writes stamped items in one transaction (a group commit of single-item calls); for
    /// each, what it came to. A conflict answers its own call only: the others commit.
    /// Committed intake requests are moved first: an application's request that committed
    /// before this call holds its key before this call's items do.
    fn insert_stamped(&self, stamped: &[(NewWork, String)]) -> Result<Vec<Result<Enqueued>>> {
        self.write(|tx, now| {
            move_intake(tx, now)?;
            offer_in(tx, now, stamped)
        })
    }

    /// Claims up to `limit` eligible items whose digest is one of `keys` for `owner`, atomically:
    /// each gets a fresh generation and a lease of `lease_ms`. Racing claimers never get
    /// the same item: the scan and the writes are one serialised transaction.
    ///
    /// # Errors
    /// A store failure.
    pub fn claim_batch(
        &self,
        owner: &str,
        keys: impl Into<CompatSet>,
        limit: usize,
        lease_ms: Millis,
    ) -> Result<Vec<WorkItem>> {
        Ok(self
            .claim_work(owner, keys, limit, lease_ms)?
            .into_iter()
            .map(|c| Arc::unwrap_or_clone(c.item))
            .collect())
    }

    /// [`Self::claim_batch`], also telling which claims took over an expired claim nobody
    /// released (a failover) and when that claim had expired — what an authority reports
    /// as reclaim latency, learnt in the claiming transaction itself.
    ///
    /// # Errors
    /// A store failure.
    pub fn claim_work(
        &self,
        owner: &str,
        keys: impl Into<CompatSet>,
        limit: usize,
        lease_ms: Millis,
    ) -> Result<Vec<Claim>> {
        self.claim_work_within(owner, keys, &ClaimBudget::new(limit), lease_ms)
    }

    /// [`Self::claim_work`] within `budget`: at most `budget.limit` items, at most its
    /// number of each handler it limits, none of a paused handler, and of a rate-limited
    /// handler no more than the fleet's window has left (`store/handler_control.rs`).
    /// Reclaims of lapsed claims come first; the rest of the budget is shared fairly across
    /// the kinds and handlers with due work (`store/fair_share.rs`), each handler's items by
    /// priority, then due time. Committed intake requests are moved into work first
    /// (`store/intake.rs`), so an effect an application enqueued in its own transaction is
    /// claimable by the first claim after its commit.
    ///
    /// # Errors
    /// A store failure.
    pub fn claim_work_within(
        &self,
        owner: &str,
        keys: impl Into<CompatSet>,
        budget: &ClaimBudget,
        lease_ms: Millis,
    ) -> Result<Vec<Claim>> {
        check_id("owner", owner)?;
        let keys = keys.into();
        let batch =
            self.write(|tx, now| self.claim_work_in(tx, now, owner, &keys, budget, lease_ms))?;
        self.keep_rotation(owner, batch.rotation);
        Ok(batch.claims)
    }

    /// [`Self::claim_work_within`] inside a transaction the caller writes more in (an
    /// authority's poll completes its last batch and claims in one). Returns the claims, the
    /// dead letters, and where `owner`'s rotation stands after them, for
    /// [`Self::keep_rotation`] once the transaction has committed: a rolled-back claim must
    /// not move it.
    ///
    /// # Errors
    /// A store failure.
    pub(crate) fn claim_work_in(
        &self,
        tx: &mut dyn Tx,
        now: Millis,
        owner: &str,
        keys: &CompatSet,
        budget: &ClaimBudget,
        lease_ms: Millis,
    ) -> Result<ClaimBatch> {
        move_intake(tx, now)?;
        let rotation = self.rotations.get(owner).unwrap_or_default();
        let gated = gate(tx, now, budget)?;
        let (candidates, rotated) = claim_candidates(tx, keys, now, &gated, &rotation)?;
        let mut batch = ClaimBatch {
            claims: Vec::with_capacity(candidates.len()),
            dead_letters: Vec::new(),
            rotation: rotated,
        };
        for found in candidates {
            let token = self.ids.next_id("tok");
            let terms = ClaimTerms {
                owner,
                keys,
                token,
                lease_ms,
                reclaim: budget.reclaim,
            };
            match claim_in(tx, found, &terms, now)? {
                Taken::Run(claim) => batch.claims.push(claim),
                Taken::DeadLetter(dead) => batch.dead_letters.push(dead),
                Taken::Refused(_) => {}
            }
        }
        charge(tx, now, budget, &batch.claims)?;
        Ok(batch)
    }

    /// Keeps `owner`'s claim rotation as a committed claim left it.
    pub(crate) fn keep_rotation(&self, owner: &str, rotation: Rotation) {
        self.rotations.set(owner, rotation);
    }

    /// Claims one named item.
    ///
    /// # Errors
    /// `INCOMPATIBLE_AUTHORITY`, `WORK_IN_PROGRESS`, `WORK_NOT_CLAIMABLE` (also while its
    /// handler is paused), `already-terminal`, `NOT_FOUND`.
    pub fn claim(
        &self,
        id: &str,
        owner: &str,
        keys: impl Into<CompatSet>,
        lease_ms: Millis,
    ) -> Result<WorkItem> {
        check_id("owner", owner)?;
        let keys = keys.into();
        self.write_logged(|tx, now| {
            let Some(found) = tx.work(id)? else {
                return Ok(Logged::Refused(not_found(id)));
            };
            if let Some(refused) = paused_refusal(tx, &found)? {
                return Ok(Logged::Refused(refused));
            }
            let terms = ClaimTerms {
                owner,
                keys: &keys,
                token: self.ids.next_id("tok"),
                lease_ms,
                reclaim: Backoff::default(),
            };
            Ok(match claim_in(tx, Arc::new(found), &terms, now)? {
                Taken::Run(claim) => Logged::Done(claim.item),
                Taken::DeadLetter(dead) => Logged::Refused(Error::AlreadyTerminal {
                    id: dead.id.clone(),
                    state: dead.state.as_str().into(),
                }),
                Taken::Refused(e) => Logged::Refused(e),
            })
        })
        .map(Arc::unwrap_or_clone)
    }

    /// Extends the lease of the caller's claim.
    ///
    /// # Errors
    /// `WORK_FENCED`, `already-terminal`.
    pub fn renew_claim(
        &self,
        id: &str,
        owner: &str,
        generation: u64,
        lease_ms: Millis,
    ) -> Result<WorkItem> {
        self.fenced(id, owner, generation, WriteVerb::Renew, |item, now| {
            rules::renew(item, owner, generation, lease_ms, now)
        })
    }

    /// Extends the leases of many of `owner`'s claims in one transaction, each fenced on its
    /// own (a stale generation refuses only its own entry), answered in order. An authority
    /// renews everything it holds at once: one turn at the write lock per round instead of
    /// one per item, taken ahead of the host's queued claim batches (see
    /// `Store::write_urgent`), so a busy fleet cannot starve the renewals that keep its
    /// claims alive.
    ///
    /// # Errors
    /// A store failure (then none is renewed).
    pub fn renew_claims(
        &self,
        owner: &str,
        claims: &[(&str, u64)],
        lease_ms: Millis,
    ) -> Result<Vec<Result<Arc<WorkItem>>>> {
        if claims.is_empty() {
            return Ok(Vec::new());
        }
        let ids: Vec<&str> = claims.iter().map(|(id, _)| *id).collect();
        self.write_urgent(&ids, |tx, now| {
            tx.prefetch_work(&ids)?;
            claims
                .iter()
                .map(|&(id, generation)| {
                    fenced_in(
                        tx,
                        now,
                        id,
                        owner,
                        generation,
                        WriteVerb::Renew,
                        |item, now| rules::renew(item, owner, generation, lease_ms, now),
                    )
                    .map(Logged::into_result)
                })
                .collect()
        })
    }

    /// Saves `data` (opaque text, JSON by convention) as the item's checkpoint under the
    /// caller's claim, fenced and recorded like [`Self::renew_claim`]; the lease is not
    /// extended. The next owner reads it from the item it claims after a lapse, and a
    /// retryable failure keeps it for the next attempt; it is cleared when the item ends
    /// and by a requeue (a fresh budget starts clean).
    ///
    /// # Errors
    /// `INVALID` over [`rules::MAX_CHECKPOINT_BYTES`] (nothing is read or written),
    /// `WORK_FENCED`, `already-terminal`, `NOT_FOUND`.
    pub fn save_work_checkpoint(
        &self,
        id: &str,
        owner: &str,
        generation: u64,
        data: &str,
    ) -> Result<WorkItem> {
        rules::check_checkpoint_size(data)?;
        self.fenced(id, owner, generation, WriteVerb::Checkpoint, |item, now| {
            rules::checkpoint(item, owner, generation, data, now)
        })
    }

    /// Records success under the caller's claim.
    ///
    /// # Errors
    /// `WORK_FENCED`, `already-terminal`.
    pub fn complete(
        &self,
        id: &str,
        owner: &str,
        generation: u64,
        result: Option<String>,
    ) -> Result<WorkItem> {
        self.fenced(id, owner, generation, WriteVerb::Complete, |item, now| {
            rules::complete(item, owner, generation, result.clone(), now)
        })
    }

    /// Records a failed attempt: durable retry or terminal failure.
    ///
    /// # Errors
    /// `WORK_FENCED`, `already-terminal`.
    pub fn fail(
        &self,
        id: &str,
        owner: &str,
        generation: u64,
        failure: Failure,
    ) -> Result<WorkItem> {
        self.fail_with_floor(id, owner, generation, failure, 0)
    }

    /// [`Self::fail`] whose retry, if it is one, is not eligible before `now + floor_ms`
    /// even when the backoff is shorter: a handler that was told to come back later (a
    /// rate limit's retry-after) is not retried sooner.
    ///
    /// # Errors
    /// As [`Self::fail`].
    pub fn fail_with_floor(
        &self,
        id: &str,
        owner: &str,
        generation: u64,
        failure: Failure,
        floor_ms: Millis,
    ) -> Result<WorkItem> {
        self.fail_with_retry(id, owner, generation, failure, Retry::with_floor(floor_ms))
    }

    /// [`Self::fail`] under a handler's retry policy ([`crate::rules::retry::RetryPolicy`]):
    /// its backoff, and its cap written into the item's `maxAttempts` before the budget is
    /// judged (see [`rules::fail`]).
    ///
    /// # Errors
    /// As [`Self::fail`].
    pub fn fail_with_retry(
        &self,
        id: &str,
        owner: &str,
        generation: u64,
        failure: Failure,
        retry: Retry,
    ) -> Result<WorkItem> {
        self.fenced(id, owner, generation, WriteVerb::Fail, |item, now| {
            rules::fail(item, owner, generation, failure.clone(), retry, now)
        })
    }

    /// Hands a long-lived item back to pending, eligible at `next_at`.
    ///
    /// # Errors
    /// `WORK_FENCED`, `already-terminal`.
    pub fn yield_back(
        &self,
        id: &str,
        owner: &str,
        generation: u64,
        next_at: Millis,
    ) -> Result<WorkItem> {
        self.fenced(id, owner, generation, WriteVerb::Yield, |item, now| {
            rules::yield_back(item, owner, generation, next_at, now)
        })
    }

    /// Group commit: many finished attempts in one transaction, each fenced on its own. A
    /// stale generation refuses only its own entry; the answers are known only after the
    /// single commit, so no completion is acknowledged before it is durable. Each answer
    /// is the item as written, shared with the store (a memory store keeps that very
    /// version).
    ///
    /// # Errors
    /// A store failure (then none of the batch is committed).
    pub fn complete_batch(&self, batch: &[Completion]) -> Result<Vec<Result<Arc<WorkItem>>>> {
        self.write_reading(&completed_ids(batch), |tx, now| complete_in(tx, now, batch))
    }

    fn fenced(
        &self,
        id: &str,
        owner: &str,
        generation: u64,
        verb: WriteVerb,
        change: impl Fn(&WorkItem, Millis) -> Result<WorkItem>,
    ) -> Result<WorkItem> {
        self.write_logged(|tx, now| fenced_in(tx, now, id, owner, generation, verb, &change))
            .map(Arc::unwrap_or_clone)
    }

    /// One work item by id.
    ///
    /// # Errors
    /// A store failure.
    pub fn work(&self, id: &str) -> Result<Option<WorkItem>> {
        self.read(|tx| tx.work(id))
    }
}

/// What the record of a fenced write to a work item says of it (none of it for a missing
/// item). Its fields are in the order JSON objects are written in elsewhere (by name), so
/// the text is the same as a `serde_json::Value`'s, built without one.
#[derive(Default, serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct WriteDetail<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    idempotency_key: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    logical_effect_id: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    state: Option<&'a str>,
}

/// What a fenced write saw of its item, read in place: the change's outcome, the state the
/// item was in and who held it, and (for a refusal, which has no new version of the item
/// to read them from) its keys.
struct Seen {
    outcome: Result<WorkItem>,
    was: crate::model::WorkState,
    holder: Holder,
    refused_keys: Option<(String, String)>,
}

/// The items a batch of completions reads first, for [`Store::write_reading`].
pub(crate) fn completed_ids(batch: &[Completion]) -> Vec<&str> {
    batch.iter().map(|c| c.id.as_str()).collect()
}

/// [`Store::complete_batch`] inside a transaction the caller may write more in: each
/// completion fenced on its own, answered in order with the version stored.
///
/// # Errors
/// A store failure (then the caller's transaction commits nothing).
pub(crate) fn complete_in(
    tx: &mut dyn Tx,
    now: Millis,
    batch: &[Completion],
) -> Result<Vec<Result<Arc<WorkItem>>>> {
    if batch.is_empty() {
        return Ok(Vec::new());
    }
    tx.prefetch_work(&completed_ids(batch))?;
    let mut answers = Vec::with_capacity(batch.len());
    for c in batch {
        let verb = if c.outcome.is_ok() {
            WriteVerb::Complete
        } else {
            WriteVerb::Fail
        };
        let answer = fenced_in(
            tx,
            now,
            &c.id,
            &c.owner,
            c.generation,
            verb,
            |item, now| match &c.outcome {
                Ok(result) => rules::complete(item, &c.owner, c.generation, result.clone(), now),
                Err(failure) => {
                    rules::fail(item, &c.owner, c.generation, failure.clone(), c.retry, now)
                }
            },
        )?;
        answers.push(answer.into_result());
    }
    Ok(answers)
}

/// A fenced change to one item inside an open transaction; the attempt is logged either way.
pub(crate) fn fenced_in(
    tx: &mut dyn Tx,
    now: Millis,
    id: &str,
    owner: &str,
    generation: u64,
    verb: WriteVerb,
    change: impl Fn(&WorkItem, Millis) -> Result<WorkItem>,
) -> Result<Logged<Arc<WorkItem>>> {
    // The item is only looked at (the change makes its next version), so it is read where
    // it lies rather than copied out of the store.
    let mut seen = None;
    tx.with_work(id, &mut |item| {
        seen = item.map(|item| {
            let outcome = change(item, now);
            let refused_keys = (outcome.is_err())
                .then(|| (item.idempotency_key.clone(), item.logical_effect_id.clone()));
            Seen {
                outcome,
                was: item.state,
                holder: Holder::of_work(item),
                refused_keys,
            }
        });
    })?;
    // A missing item's refusal is recorded like any other, so the store's history counts
    // every write an authority was refused.
    let Some(seen) = seen else {
        let refused = not_found(id);
        let (detail, holder) = (WriteDetail::default(), Holder::nobody());
        let attempt = Err(refused.clone());
        record_write(
            tx, now, id, owner, generation, verb, &attempt, detail, holder,
        )?;
        return Ok(Logged::Refused(refused));
    };
    let detail = match (&seen.outcome, &seen.refused_keys) {
        (Ok(next), _) => WriteDetail {
            idempotency_key: Some(&next.idempotency_key),
            logical_effect_id: Some(&next.logical_effect_id),
            state: Some(next.state.as_str()),
        },
        (Err(_), keys) => WriteDetail {
            idempotency_key: keys.as_ref().map(|k| k.0.as_str()),
            logical_effect_id: keys.as_ref().map(|k| k.1.as_str()),
            state: Some(seen.was.as_str()),
        },
    };
    let attempt = seen.outcome.as_ref().map(|_| ()).map_err(Clone::clone);
    record_write(
        tx,
        now,
        id,
        owner,
        generation,
        verb,
        &attempt,
        detail,
        seen.holder,
    )?;
    let outcome = seen.outcome.map(Arc::new);
    if let Ok(next) = &outcome {
        update_saved(tx, seen.was.as_str(), next)?;
        if verb == WriteVerb::Fail {
            record_failure(tx, next, owner, generation, now)?;
        }
    }
    Ok(outcome.into())
}

/// What a claimer brings to one claim: who it is, the keys it runs, the new claim's token and
/// lease, and how long it leaves a lapsed claim's owner to finish ([`rules::reclaim_at`]).
struct ClaimTerms<'a> {
    owner: &'a str,
    keys: &'a CompatSet,
    token: String,
    lease_ms: Millis,
    reclaim: Backoff,
}

/// What one claim of one item came to.
enum Taken {
    /// Claimed for the claimer to run.
    Run(Claim),
    /// A lapsed claim with no attempt left, ended as a dead letter by this claim's write:
    /// nothing to run (a claim of that one item answers `already-terminal`).
    DeadLetter(Arc<WorkItem>),
    /// Not claimable; nothing written.
    Refused(Error),
}

/// Claims `item` for the claimer inside an open transaction, writing the claim and its
/// grant; or why it cannot be claimed. A lapsed claim is settled only here, by the claim
/// that takes it over under a new generation: a claimer that finds a lapse before its
/// reclaim instant writes nothing, so the owner nobody replaced still renews and completes.
/// A takeover that finds the budget spent writes the dead letter and its grant (nothing to
/// run). The item is made into its claimed version (a copy
/// only while the store still holds the version before), which the store and the claimer
/// then share.
fn claim_in(
    tx: &mut dyn Tx,
    item: Arc<WorkItem>,
    terms: &ClaimTerms<'_>,
    now: Millis,
) -> Result<Taken> {
    // A claimable item is unfinished: counted under its state's name.
    let was = item.state;
    let took_over = Takeover::of_work(&item, terms.owner, now);
    let took_over_expired_at = item.unfinished_claim_expiry();
    let lapsed = Lapsed::of(&item);
    let claimed = rules::claim(
        Arc::unwrap_or_clone(item),
        terms.owner,
        terms.keys,
        terms.token.clone(),
        terms.lease_ms,
        terms.reclaim,
        now,
    );
    match claimed {
        Ok(rules::Claimed::Run(next)) => {
            let next = Arc::new(next);
            update_saved(tx, was.as_str(), &next)?;
            if let Some(lapsed) = lapsed {
                lapsed.record(tx, &next, &format!("taken over by {}", terms.owner), now)?;
            }
            Counter::Claims.adjust(tx, 1)?;
            log_grant(tx, took_over, &next, terms.owner, now)?;
            Ok(Taken::Run(Claim {
                item: next,
                took_over_expired_at,
                // Only a claimed item's lapse is settled by its taker.
                settled_lapse: was == crate::model::WorkState::Claimed,
            }))
        }
        Ok(rules::Claimed::DeadLetter(dead)) => {
            let dead = Arc::new(dead);
            update_saved(tx, was.as_str(), &dead)?;
            if let Some(lapsed) = lapsed {
                lapsed.record(tx, &dead, &format!("taken over by {}", terms.owner), now)?;
            }
            log_grant(tx, took_over, &dead, terms.owner, now)?;
            Ok(Taken::DeadLetter(dead))
        }
        Err(e) => Ok(Taken::Refused(e)),
    }
}

/// Logs the grant of `item` (as claimed, or dead-lettered by its taker) to `owner`;
/// `took_over` is the unfinished claim of another owner it took over, if any, so that it is
/// recorded as a failover. A claim is only granted under the key that matches the item's,
/// so that key is the owner's.
fn log_grant(
    tx: &mut dyn Tx,
    took_over: Option<Takeover>,
    item: &WorkItem,
    owner: &str,
    now: Millis,
) -> Result<()> {
    let revision = tx.commit_revision()?;
    tx.add_grant(Grant {
        revision,
        resource_id: item.id.clone(),
        generation: item.generation,
        owner_id: owner.into(),
        how: GrantKind::Claim,
        owner_compat: Some(item.compat.clone()),
        item_compat: Some(item.compat.clone()),
        at: now,
        took_over,
    })
}

fn not_found(id: &str) -> Error {
    Error::NotFound {
        what: "work item".into(),
        id: id.into(),
    }
}
/// Offers stamped items inside an open transaction, in order, each answered on its own:
/// new, a repeat of the item holding its key or id, or `IDEMPOTENCY_CONFLICT` with it.
/// The ids and keys are announced first, so a provider that reads over a network fetches
/// them together.
pub(crate) fn offer_in(
    tx: &mut dyn Tx,
    now: Millis,
    stamped: &[(NewWork, String)],
) -> Result<Vec<Result<Enqueued>>> {
    let items: Vec<WorkItem> = stamped
        .iter()
        .map(|(spec, compat)| WorkItem::new(spec.clone(), compat, now))
        .collect();
    tx.prefetch_work(&items.iter().map(|w| w.id.as_str()).collect::<Vec<_>>())?;
    tx.prefetch_work_keys(
        &items
            .iter()
            .map(|w| w.idempotency_key.as_str())
            .collect::<Vec<_>>(),
    )?;
    let mut answers = Vec::with_capacity(items.len());
    for ((spec, _), item) in stamped.iter().zip(&items) {
        let existing = match insert_new(tx, item)? {
            Inserted::New => {
                answers.push(Ok(Enqueued::Created));
                continue;
            }
            Inserted::KeyHeld(holder) => *holder,
            Inserted::IdTaken => tx.work(&item.id)?.ok_or_else(|| {
                Error::Corrupt(format!(
                    "work item {} was refused as taken but cannot be read",
                    item.id
                ))
            })?,
        };
        answers.push(match difference(&existing, spec) {
            None => Ok(Enqueued::Duplicate(existing.id)),
            Some(what) => Err(Error::EnqueueConflict {
                existing: existing.id,
                key: existing.idempotency_key,
                what: what.to_owned(),
            }),
        });
    }
    Ok(answers)
}

/// What makes `offered` another effect than the `stored` item its key or id named (`None`:
/// the same effect offered again). The payload is compared as text, else as JSON, so
/// spacing and key order do not matter; an explicit idempotency key must be the item's, a
/// defaulted one is not compared (an offer under the item's id need not repeat its key).
pub(crate) fn difference(stored: &WorkItem, offered: &NewWork) -> Option<&'static str> {
    let json = |text: &str| serde_json::from_str::<serde_json::Value>(text).ok();
    let same_payload = stored.payload == offered.payload
        || json(&stored.payload).is_some_and(|p| Some(p) == json(&offered.payload));
    if stored.kind != offered.kind {
        Some("kind of work")
    } else if stored.handler != offered.handler {
        Some("handler")
    } else if !same_payload {
        Some("payload")
    } else if offered
        .idempotency_key
        .as_ref()
        .is_some_and(|k| *k != stored.idempotency_key)
    {
        Some("idempotency key")
    } else {
        None
    }
}

/// Every spec of a batch [`stamp`]ed; the first invalid one refuses them all.
fn stamp_all(specs: Vec<NewWork>, keys: &impl HandlerKeys) -> Result<Vec<(NewWork, String)>> {
    specs.into_iter().map(|spec| stamp(spec, keys)).collect()
}

/// `spec` checked and stamped with the key `keys` gives its handler.
pub(crate) fn stamp(spec: NewWork, keys: &impl HandlerKeys) -> Result<(NewWork, String)> {
    check_new_id("work id", &spec.id)?;
    check_new_id("handler", &spec.handler)?;
    check_opt_id("logical effect id", spec.logical_effect_id.as_deref())?;
    if let Some(key) = spec.idempotency_key.as_deref() {
        check_new_id("idempotency key", key)?;
    }
    check_shape(&spec)?;
    let Some(compat) = keys.key_for(&spec.handler) else {
        return Err(Error::Invalid(format!(
            "no version of handler {} to stamp work {} with",
            spec.handler, spec.id
        )));
    };
    check_compat(&format!("work {}", spec.id), &spec.handler, &compat)?;
    Ok((spec, compat))
}

/// Refuses a compatibility key no authority would ever hold: an empty one (a caller's
/// `key_for(..).unwrap_or_default()` for a handler it does not run) or one that is not an
/// id ([`check_new_id`]: printable, bounded). What is stamped with it would wait, pending,
/// for good.
///
/// # Errors
/// `INVALID`, naming `what` (`work X`), its handler and why the key is refused.
fn check_compat(what: &str, handler: &str, compat: &str) -> Result<()> {
    check_new_id("compatibility key", compat).map_err(|refused| {
        let why = match refused {
            Error::Invalid(why) => why,
            other => other.to_string(),
        };
        Error::Invalid(format!(
            "{what}: {why} (given for handler {handler}); no authority would ever claim work stamped with it"
        ))
    })
}

/// Refuses a payload that is not JSON: a handler receives its payload as JSON, so other
/// text would reach it as something the producer never sent.
///
/// # Errors
/// `INVALID`, naming `what` (`work X`, `schedule Y`).
pub(crate) fn check_payload(what: &str, payload: &str) -> Result<()> {
    match serde_json::from_str::<serde::de::IgnoredAny>(payload) {
        Ok(_) => Ok(()),
        Err(e) => Err(Error::Invalid(format!(
            "{what}: the payload is not JSON ({e})"
        ))),
    }
}

/// What a work item must be to run at all, refused before anything is written: a JSON
/// payload ([`check_payload`]); a budget of at least one attempt; and a start no later than
/// the end of the year 9999, past which it would be parked for good (the CLI bounds its own
/// options the same way).
fn check_shape(spec: &NewWork) -> Result<()> {
    let what = format!("work {}", spec.id);
    check_payload(&what, &spec.payload)?;
    let refuse = |why: String| Err(Error::Invalid(format!("{what}: {why}")));
    if spec.max_attempts == 0 {
        return refuse("max attempts must be at least 1".into());
    }
    if let Some(at) = spec.not_before.filter(|at| *at > crate::clock::LATEST) {
        return refuse(format!(
            "not before {at} ms is past the end of the year 9999 (the latest start taken)"
        ));
    }
    Ok(())
}
