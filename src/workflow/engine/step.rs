//! An authority steps a claimed instance: decide what is due, record an action's outcome,
//! apply the transition as the fenced compare-and-swap, or give the lease back.

use serde_json::Value;

use super::transition::{commit_transition, decode_state};
use super::{Claimed, Engine, corrupt, instance_resource, refusal};
use crate::clock::Millis;
use crate::error::{Error, Result};
use crate::model::workflow::ActionOutcome;
use crate::model::{Holder, InstanceRow, WriteVerb};
use crate::rules::lease as lease_rules;
use crate::store::{Logged, Tx, record_write};
use crate::workflow::machine::{self, ActionRequest, Trigger, Waiting};

/// What the owner of a claimed instance should do next.
#[derive(Debug, Clone, PartialEq)]
pub enum Next {
    /// Run this action (no outcome is on record yet).
    Run(ActionRequest),
    /// Apply this trigger (a recorded outcome, a due timer, a matching event, a timeout).
    Apply(Trigger),
    /// Nothing is due yet.
    Idle,
}

impl Engine {
    /// Decides what the owner does next: reconcile a recorded outcome, run the action, fire
    /// a due timer, match the first journal event after `sinceEventSeq`, or time out.
    ///
    /// # Errors
    /// `INCOMPATIBLE_AUTHORITY` for an instance this engine may not run (nothing is run), a store
    /// failure, or a corrupt instance.
    pub fn next(&self, claimed: &Claimed) -> Result<Next> {
        self.check_compat(&claimed.row)?;
        let now = self.store.now();
        self.store.read(|tx| {
            let (fingerprint, state) = decode_state(&claimed.row)?;
            let def = self.definition(tx, &claimed.row, &fingerprint)?;
            Ok(match &state.waiting {
                _ if state.status.is_terminal() => Next::Idle,
                Some(Waiting::Action { invocation_id }) => {
                    match tx.action_outcome(invocation_id)? {
                        // This attempt already ran and recorded its outcome: reconcile, never rerun.
                        Some(outcome) if outcome.attempt == state.attempt => {
                            Next::Apply(outcome_trigger(&outcome)?)
                        }
                        _ if state.next_eligible_at.is_some_and(|t| t > now) => Next::Idle,
                        _ => Next::Run(
                            machine::action_request(&def, &state)
                                .map_err(|e| refusal(&e, &state.instance_id))?,
                        ),
                    }
                }
                Some(Waiting::Timer { fire_at }) if *fire_at <= now => {
                    Next::Apply(Trigger::TimerFired)
                }
                Some(Waiting::Event {
                    event,
                    since_event_seq,
                    timeout_at,
                }) => {
                    let mut after = *since_event_seq;
                    loop {
                        let batch = tx.journal_after(after, Some(event), 256)?;
                        let Some(last) = batch.last() else { break };
                        after = last.seq;
                        for e in &batch {
                            let payload: Value =
                                serde_json::from_str(&e.payload).unwrap_or(Value::Null);
                            // An event the clock says came after the timeout lost the race.
                            if timeout_at.is_some_and(|t| e.at > t) {
                                continue;
                            }
                            if machine::event_matches(&def, &state, event, &payload) {
                                return Ok(Next::Apply(Trigger::EventMatched {
                                    event_type: event.clone(),
                                    seq: e.seq,
                                    payload,
                                }));
                            }
                        }
                    }
                    match timeout_at {
                        Some(t) if *t <= now => Next::Apply(Trigger::TimeoutFired),
                        _ => Next::Idle,
                    }
                }
                _ => Next::Idle,
            })
        })
    }

    /// Records an action's outcome under the fence (first of the two commits). A second
    /// record for the same invocation is refused: the first one stands.
    ///
    /// # Errors
    /// `WORK_FENCED` when the lease moved on; a store failure.
    pub fn record_outcome(
        &self,
        claimed: &Claimed,
        request: &ActionRequest,
        outcome: &std::result::Result<Value, machine::Failure>,
    ) -> Result<()> {
        self.store
            .write_logged(|tx, now| self.record_outcome_in(tx, now, claimed, request, outcome))
    }

    /// [`Self::record_outcome`] inside an open transaction: a refusal is logged and answered
    /// [`Logged::Refused`]; `Err` is a store failure.
    fn record_outcome_in(
        &self,
        tx: &mut dyn Tx,
        now: Millis,
        claimed: &Claimed,
        request: &ActionRequest,
        outcome: &std::result::Result<Value, machine::Failure>,
    ) -> Result<Logged<()>> {
        let (holder, fence) = Self::fence(tx, claimed)?;
        let detail = serde_json::json!({ "invocationId": request.invocation_id, "attempt": request.attempt });
        self.record(
            tx,
            now,
            claimed,
            (WriteVerb::ActionOutcome, detail),
            &fence,
            holder,
        )?;
        if let Err(e) = fence {
            return Ok(Logged::Refused(e));
        }
        if tx
            .action_outcome(&request.invocation_id)?
            .is_some_and(|o| o.attempt == request.attempt)
        {
            return Ok(Logged::Done(()));
        }
        let (kind, detail) = match outcome {
            Ok(v) => ("succeeded", v.clone()),
            Err(f) => (
                "failed",
                serde_json::to_value(f).map_err(|e| Error::Invalid(e.to_string()))?,
            ),
        };
        tx.put_action_outcome(&ActionOutcome {
            invocation_id: request.invocation_id.clone(),
            attempt: request.attempt,
            outcome: kind.into(),
            detail: detail.to_string(),
            at: now,
        })?;
        Ok(Logged::Done(()))
    }

    /// Records this owner's attempt at `write` (its verb and detail) on `claimed`'s
    /// instance, with its verdict and who held the instance lease as it was judged.
    fn record(
        &self,
        tx: &mut dyn Tx,
        now: Millis,
        claimed: &Claimed,
        (verb, detail): (WriteVerb, Value),
        verdict: &Result<()>,
        holder: Holder,
    ) -> Result<()> {
        let res = instance_resource(&claimed.row.instance_id);
        let generation = claimed.lease.generation;
        record_write(
            tx,
            now,
            &res,
            &self.owner,
            generation,
            verb,
            verdict,
            detail,
            holder,
        )
    }

    /// Who holds the instance lease now, and whether `claimed` is still that holder.
    fn fence(tx: &mut dyn Tx, claimed: &Claimed) -> Result<(Holder, Result<()>)> {
        let res = instance_resource(&claimed.row.instance_id);
        let Some(current) = tx.lease(&res)? else {
            return Ok((
                Holder::nobody(),
                Err(Error::NotFound {
                    what: "lease".into(),
                    id: res,
                }),
            ));
        };
        let fence =
            lease_rules::check_holder(&current, &claimed.lease.token, claimed.lease.generation);
        Ok((Holder::of_lease(&current), fence))
    }

    /// Applies a trigger as the fenced CAS `instanceRevision R → R+1` and releases the
    /// instance lease in the same commit.
    ///
    /// # Errors
    /// `WORK_FENCED` when the lease or the revision moved on (someone else won);
    /// `already-terminal`; `INVALID` for a trigger that does not fit.
    pub fn apply(&self, claimed: &Claimed, trigger: Trigger) -> Result<InstanceRow> {
        self.store
            .write_logged(|tx, now| self.apply_in(tx, now, claimed, trigger.clone()))
    }

    /// Group commit of finished steps: for each claimed instance, the action's outcome
    /// record (when an action ran) and the transition, each fenced on its own, all in one
    /// transaction — one commit for a whole batch of steps. A refused entry (fenced,
    /// terminal, no longer fitting) is logged and refuses only itself; an outcome and its
    /// transition commit together, so no crash can fall between them.
    ///
    /// # Errors
    /// A store failure (then nothing of the batch is committed).
    pub fn finish_steps(&self, steps: &[(&Claimed, Step<'_>)]) -> Result<Vec<Result<InstanceRow>>> {
        self.store.write(|tx, now| {
            let mut answers = Vec::with_capacity(steps.len());
            for (claimed, step) in steps {
                let trigger = match step {
                    Step::Ran { request, outcome } => {
                        if let Logged::Refused(e) =
                            self.record_outcome_in(tx, now, claimed, request, outcome)?
                        {
                            answers.push(Err(e));
                            continue;
                        }
                        outcome_to_trigger(outcome)
                    }
                    Step::Apply(trigger) => trigger.clone(),
                };
                answers.push(self.apply_in(tx, now, claimed, trigger)?.into_result());
            }
            Ok(answers)
        })
    }

    /// [`Self::apply`] inside an open transaction: a refusal is logged and answered
    /// [`Logged::Refused`].
    fn apply_in(
        &self,
        tx: &mut dyn Tx,
        now: Millis,
        claimed: &Claimed,
        trigger: Trigger,
    ) -> Result<Logged<InstanceRow>> {
        let res = instance_resource(&claimed.row.instance_id);
        let detail = serde_json::json!({ "instanceRevision": claimed.row.instance_revision });
        let record = |tx: &mut dyn Tx, holder: Holder, verdict: &Result<()>| {
            let write = (WriteVerb::Transition, detail.clone());
            self.record(tx, now, claimed, write, verdict, holder)
        };
        let Some(row) = tx.instance(&claimed.row.instance_id)? else {
            let refused = Error::NotFound {
                what: "workflow instance".into(),
                id: claimed.row.instance_id.clone(),
            };
            record(tx, Holder::nobody(), &Err(refused.clone()))?;
            return Ok(Logged::Refused(refused));
        };
        let (holder, fence) = Self::fence(tx, claimed)?;
        let fence = fence.and_then(|()| {
            self.check_compat(&row)?;
            if row.instance_revision == claimed.row.instance_revision {
                Ok(())
            } else {
                Err(Error::Fenced {
                    resource: res.clone(),
                    presented: claimed.row.instance_revision,
                    current: row.instance_revision,
                })
            }
        });
        if let Err(e) = fence {
            record(tx, holder, &Err(e.clone()))?;
            return Ok(Logged::Refused(e));
        }
        // The transition is judged before the attempt is recorded, so a trigger that no
        // longer fits (a cancelled or finished instance) is recorded as the refusal it is.
        let (fingerprint, state) = decode_state(&row)?;
        let def = self.definition(tx, &row, &fingerprint)?;
        let high_water = tx.journal_high_water()?;
        let verdict = machine::apply(&def, &state, trigger, now, high_water)
            .map_err(|e| refusal(&e, &row.instance_id));
        record(
            tx,
            holder,
            &verdict.as_ref().map(|_| ()).map_err(Clone::clone),
        )?;
        let (next, entries) = match verdict {
            Ok(t) => t,
            Err(e) => return Ok(Logged::Refused(e)),
        };
        let written = commit_transition(tx, &row, &fingerprint, &next, &entries, now)?;
        if let Some(lease) = tx.lease(&res)? {
            tx.put_lease(&lease_rules::release(
                &lease,
                &claimed.lease.token,
                claimed.lease.generation,
                now,
            )?)?;
        }
        Ok(Logged::Done(written))
    }

    /// Gives the instance lease back without a transition (nothing was due) and restores
    /// its natural eligibility, unless an event fanout woke it while it was held.
    ///
    /// # Errors
    /// `WORK_FENCED` when it was no longer ours.
    pub fn release(&self, claimed: &Claimed) -> Result<()> {
        self.release_until(claimed, None)
    }

    /// [`Self::release`], and the instance is not offered again before `not_before` (when
    /// given): an authority that cannot run its due action (no handler for it) hands it
    /// back for one that can, without taking it again at every poll.
    ///
    /// # Errors
    /// As [`Self::release`].
    pub fn release_until(&self, claimed: &Claimed, not_before: Option<Millis>) -> Result<()> {
        self.store.write_logged(|tx, now| {
            let res = instance_resource(&claimed.row.instance_id);
            if let (holder, Err(e)) = Self::fence(tx, claimed)? {
                let detail = serde_json::json!({ "instanceId": claimed.row.instance_id });
                let verdict = Err(e.clone());
                self.record(
                    tx,
                    now,
                    claimed,
                    (WriteVerb::Release, detail),
                    &verdict,
                    holder,
                )?;
                return Ok(Logged::Refused(e));
            }
            if let Some(row) = tx.instance(&claimed.row.instance_id)? {
                let (_, state) = decode_state(&row)?;
                let natural = if state.status.is_terminal() {
                    None
                } else {
                    state.next_eligible_at
                };
                // An event fanout that landed while we held it moved the parking instant
                // forward to "now": keep that wake-up, or the event would be missed. The
                // park follows renewals, so it is compared with the lease as it is now.
                let held_until = tx.lease(&res)?.map(|l| l.expires_at);
                let parked = held_until.is_some() && row.next_eligible_at == held_until;
                let natural = match (natural, not_before) {
                    (Some(due), Some(later)) => Some(due.max(later)),
                    (natural, _) => natural,
                };
                if (parked || not_before.is_some()) && row.next_eligible_at != natural {
                    tx.commit_revision()?;
                    tx.update_instance(&InstanceRow {
                        next_eligible_at: natural,
                        ..row
                    })?;
                }
            }
            if let Some(lease) = tx.lease(&res)? {
                tx.commit_revision()?;
                tx.put_lease(&lease_rules::release(
                    &lease,
                    &claimed.lease.token,
                    claimed.lease.generation,
                    now,
                )?)?;
            }
            Ok(Logged::Done(()))
        })
    }

    /// Runs the whole step for one claimed instance: decide, run the action through
    /// `run_action` if one is due, record its outcome, apply the transition. Returns the
    /// instance row after the step (or `None` when nothing was due).
    ///
    /// # Errors
    /// `WORK_FENCED` when someone else won; a store failure.
    pub fn advance(
        &self,
        claimed: &Claimed,
        run_action: impl FnOnce(&ActionRequest) -> std::result::Result<Value, machine::Failure>,
    ) -> Result<Option<InstanceRow>> {
        match self.next(claimed)? {
            Next::Idle => {
                self.release(claimed)?;
                Ok(None)
            }
            Next::Apply(trigger) => self.apply(claimed, trigger).map(Some),
            Next::Run(request) => {
                let outcome = run_action(&request);
                self.record_outcome(claimed, &request, &outcome)?;
                self.apply(claimed, outcome_to_trigger(&outcome)).map(Some)
            }
        }
    }
}

/// One finished step, for [`Engine::finish_steps`].
#[derive(Debug, Clone)]
pub enum Step<'a> {
    /// An action ran: record its outcome, then apply it.
    Ran {
        request: &'a ActionRequest,
        outcome: &'a std::result::Result<Value, machine::Failure>,
    },
    /// A trigger that needs no action (a timer, a timeout, a recorded outcome).
    Apply(Trigger),
}

/// The trigger an action's outcome fires.
#[must_use]
pub fn outcome_to_trigger(outcome: &std::result::Result<Value, machine::Failure>) -> Trigger {
    match outcome {
        Ok(output) => Trigger::ActionSucceeded {
            output: output.clone(),
        },
        Err(f) => Trigger::ActionFailed {
            retryable: f.retryable,
            code: f.code.clone(),
            message: f.message.clone(),
        },
    }
}

fn outcome_trigger(outcome: &ActionOutcome) -> Result<Trigger> {
    let detail: Value =
        serde_json::from_str(&outcome.detail).map_err(|e| corrupt("action outcome", e))?;
    if outcome.outcome == "succeeded" {
        return Ok(Trigger::ActionSucceeded { output: detail });
    }
    let failure: machine::Failure =
        serde_json::from_value(detail).map_err(|e| corrupt("action outcome", e))?;
    Ok(Trigger::ActionFailed {
        retryable: failure.retryable,
        code: failure.code,
        message: failure.message,
    })
}
