//! The store-backed workflow engine: deploy, idempotent start, claim, the fenced
//! `instanceRevision` compare-and-swap around every [`machine::apply`], action outcome
//! records, event-wait replay from the journal, cancellation and inspection.
//!
//! Ownership of an instance while an authority advances it is a lease on the resource
//! `wf:<instanceId>` (the same lease rules as everything else). Every transition checks,
//! inside one write transaction, that the lease is still the caller's (the fence) and that
//! the instance revision is the one the caller read (the CAS); only then does it write the
//! new state, the history entries and the counters.
//!
//! An action runs in two commits, (docs/ARCHITECTURE.md#workflows): the outcome record (keyed by the
//! invocation id `"<instanceId>/<activationId>"`, with whatever the action itself writes)
//! and then the transition. A crash between them leaves the outcome on record; the next
//! owner finds it and applies the transition without running the action again.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::machine::{self, ActionRequest, InstanceState, MachineError, Trigger, Waiting};
use super::{Catalog, Diagnostic, WorkflowDef, parse_definition, semantic_fingerprint, validate};
use crate::clock::Millis;
use crate::error::{Error, Result};
use crate::ids::{check_id, check_opt_id};
use crate::model::workflow::ActionOutcome;
use crate::model::{
    Grant, HistoryRecord, Holder, InstanceRow, Lease, Takeover, WorkflowDefinitionRow,
};
use crate::rules::lease as lease_rules;
use crate::store::{Store, Tx, record_write};

/// What a cancel did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum CancelOutcome {
    Cancelled,
    AlreadyCancelled,
}

/// The answer to a start.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Started {
    pub instance_id: String,
    pub status: String,
    /// False when an earlier start with the same identity was found instead.
    pub created: bool,
}

/// One instance to start ([`Store::start_workflows`]).
#[derive(Debug, Clone)]
pub struct NewInstance<'a> {
    pub workflow_id: &'a str,
    pub args: Map<String, Value>,
    pub principal: &'a str,
    /// Starts are idempotent on `(workflowId, principal, key, compat)` when given.
    pub idempotency_key: Option<&'a str>,
}

/// An instance an authority holds the lease of, at the revision it read.
#[derive(Debug, Clone)]
pub struct Claimed {
    pub row: InstanceRow,
    pub state: InstanceState,
    pub lease: Lease,
}

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

/// The instance state as stored: the machine state plus the definition version it runs.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Stored {
    definition: String,
    #[serde(flatten)]
    state: InstanceState,
}

fn resource(instance_id: &str) -> String {
    format!("wf:{instance_id}")
}

fn pinned(workflow_id: &str, fingerprint: &str) -> String {
    format!("{workflow_id}@{fingerprint}")
}

fn corrupt(what: &str, e: impl std::fmt::Display) -> Error {
    Error::Corrupt(format!("{what}: {e}"))
}

fn refusal(e: &MachineError, instance_id: &str) -> Error {
    match e {
        MachineError::Terminal { status } => Error::AlreadyTerminal {
            id: instance_id.into(),
            state: (*status).into(),
        },
        other => Error::Invalid(format!("{instance_id}: {other}")),
    }
}

/// Decodes an instance row's state.
///
/// # Errors
/// `STORE_CORRUPT` when the JSON is not an instance state.
pub fn decode_state(row: &InstanceRow) -> Result<(String, InstanceState)> {
    let stored: Stored = serde_json::from_str(&row.state)
        .map_err(|e| corrupt(&format!("instance {}", row.instance_id), e))?;
    Ok((stored.definition, stored.state))
}

fn encode_row(
    row: &InstanceRow,
    definition: &str,
    state: &InstanceState,
    now: Millis,
) -> Result<InstanceRow> {
    let text = serde_json::to_string(&Stored {
        definition: definition.into(),
        state: state.clone(),
    })
    .map_err(|e| Error::Invalid(e.to_string()))?;
    Ok(InstanceRow {
        status: state.status.as_str().into(),
        next_eligible_at: if state.status.is_terminal() {
            None
        } else {
            state.next_eligible_at
        },
        waiting_event: match &state.waiting {
            Some(Waiting::Event { event, .. }) if !state.status.is_terminal() => {
                Some(event.clone())
            }
            _ => None,
        },
        state: text,
        updated_at: now,
        ..row.clone()
    })
}

/// Writes a transition: new row (revision + 1), history entries, status counters.
fn commit_transition(
    tx: &mut dyn Tx,
    before: &InstanceRow,
    definition: &str,
    state: &InstanceState,
    entries: &[machine::HistoryEntry],
    now: Millis,
) -> Result<InstanceRow> {
    tx.commit_revision()?;
    let mut row = encode_row(before, definition, state, now)?;
    row.instance_revision = before.instance_revision + 1;
    let next = tx.history(&before.instance_id)?.len() as u64 + 1;
    for (position, entry) in (next..).zip(entries) {
        tx.add_history(&HistoryRecord {
            instance_id: row.instance_id.clone(),
            position,
            instance_revision: row.instance_revision,
            kind: entry.kind.as_str().into(),
            at: entry.at,
            step_id: entry.step_id.clone(),
            activation_id: entry.activation_id.clone(),
            detail: entry.detail.to_string(),
        })?;
    }
    tx.update_instance(&row)?;
    if before.status != row.status {
        tx.adjust_counter(&format!("wf|{}|{}", before.status, before.compat), -1)?;
        tx.adjust_counter(&format!("wf|{}|{}", row.status, row.compat), 1)?;
    }
    Ok(row)
}

impl Store {
    /// Validates and deploys a definition. Returns its semantic fingerprint.
    ///
    /// # Errors
    /// The diagnostics when the definition is invalid (outer `Ok(Err(..))`), or a store
    /// failure.
    pub fn deploy_workflow(
        &self,
        text: &str,
        catalog: &Catalog,
    ) -> Result<std::result::Result<WorkflowDefinitionRow, Vec<Diagnostic>>> {
        let def = match parse_definition(text) {
            Ok(def) => def,
            Err(diags) => return Ok(Err(diags)),
        };
        let diags = validate(&def, catalog);
        if !diags.is_empty() {
            return Ok(Err(diags));
        }
        check_id("workflow id", &def.id)?;
        let fingerprint = semantic_fingerprint(&def, catalog);
        self.write(|tx, now| {
            tx.commit_revision()?;
            let row = WorkflowDefinitionRow {
                workflow_id: def.id.clone(),
                fingerprint: fingerprint.clone(),
                definition: text.into(),
                deployed_at: now,
            };
            tx.put_definition(&WorkflowDefinitionRow {
                workflow_id: pinned(&def.id, &fingerprint),
                ..row.clone()
            })?;
            tx.put_definition(&row)?;
            Ok(Ok(row))
        })
    }

    /// Starts an instance of the deployed `workflow_id`, idempotently on
    /// `(workflowId, principal, idempotencyKey, compat)`; without a key every call starts a
    /// new instance.
    ///
    /// # Errors
    /// `NOT_FOUND` for an undeployed workflow, `INVALID` for bad arguments.
    pub fn start_workflow(
        &self,
        workflow_id: &str,
        args: Map<String, Value>,
        principal: &str,
        idempotency_key: Option<&str>,
        compat: &str,
    ) -> Result<Started> {
        let start = NewInstance {
            workflow_id,
            args,
            principal,
            idempotency_key,
        };
        self.write(|tx, now| self.start_in(tx, now, &start, compat, &mut HashMap::new()))
    }

    /// Starts many instances in one transaction (one commit): each as
    /// [`Self::start_workflow`], all or none.
    ///
    /// # Errors
    /// As [`Self::start_workflow`], for the first start that fails (nothing is started).
    pub fn start_workflows(
        &self,
        starts: &[NewInstance<'_>],
        compat: &str,
    ) -> Result<Vec<Started>> {
        self.write(|tx, now| {
            // Each deployed definition is read and parsed once per batch.
            let mut defs = HashMap::new();
            starts
                .iter()
                .map(|start| self.start_in(tx, now, start, compat, &mut defs))
                .collect()
        })
    }

    fn start_in(
        &self,
        tx: &mut dyn Tx,
        now: Millis,
        start: &NewInstance<'_>,
        compat: &str,
        defs: &mut HashMap<String, (String, Arc<WorkflowDef>)>,
    ) -> Result<Started> {
        let NewInstance {
            workflow_id,
            args,
            principal,
            idempotency_key,
        } = start;
        let (workflow_id, principal) = (*workflow_id, *principal);
        check_id("workflow id", workflow_id)?;
        check_opt_id("idempotency key", *idempotency_key)?;
        let start_key = idempotency_key.map(|k| [workflow_id, principal, k, compat].join("\u{1f}"));
        if let Some(existing) = start_key
            .as_deref()
            .map(|k| tx.instance_by_start_key(k))
            .transpose()?
            .flatten()
        {
            return Ok(Started {
                instance_id: existing.instance_id,
                status: existing.status,
                created: false,
            });
        }
        let (fingerprint, def) = match defs.get(workflow_id) {
            Some(known) => known.clone(),
            None => {
                let Some(def_row) = tx.definition(workflow_id)? else {
                    return Err(Error::NotFound {
                        what: "workflow definition".into(),
                        id: workflow_id.into(),
                    });
                };
                let def = parse_definition(&def_row.definition).map_err(|d| {
                    corrupt(
                        "deployed definition",
                        d.first().map(ToString::to_string).unwrap_or_default(),
                    )
                })?;
                let known = (def_row.fingerprint, Arc::new(def));
                defs.insert(workflow_id.to_owned(), known.clone());
                known
            }
        };
        let instance_id = self.ids().next_id("wf");
        let high_water = tx.journal_high_water()?;
        let (state, entries) =
            machine::start(&def, &instance_id, args.clone(), principal, now, high_water)
                .map_err(|e| Error::Invalid(e.to_string()))?;
        let blank = InstanceRow {
            instance_id: instance_id.clone(),
            workflow_id: workflow_id.into(),
            status: String::new(),
            compat: compat.into(),
            instance_revision: 0,
            next_eligible_at: None,
            waiting_event: None,
            principal: principal.into(),
            start_key: start_key.clone(),
            state: String::new(),
            created_at: now,
            updated_at: now,
        };
        tx.commit_revision()?;
        let mut row = encode_row(&blank, &fingerprint, &state, now)?;
        row.instance_revision = 1;
        tx.insert_instance(&row)?;
        for (i, entry) in entries.iter().enumerate() {
            tx.add_history(&HistoryRecord {
                instance_id: instance_id.clone(),
                position: i as u64 + 1,
                instance_revision: 1,
                kind: entry.kind.as_str().into(),
                at: entry.at,
                step_id: entry.step_id.clone(),
                activation_id: entry.activation_id.clone(),
                detail: entry.detail.to_string(),
            })?;
        }
        tx.adjust_counter(&format!("wf|{}|{}", row.status, compat), 1)?;
        Ok(Started {
            instance_id,
            status: row.status,
            created: true,
        })
    }

    /// One instance row.
    ///
    /// # Errors
    /// A store failure.
    pub fn instance(&self, id: &str) -> Result<Option<InstanceRow>> {
        self.read(|tx| tx.instance(id))
    }

    /// The durable transition log of one instance, oldest first.
    ///
    /// # Errors
    /// A store failure.
    pub fn workflow_history(&self, id: &str) -> Result<Vec<HistoryRecord>> {
        self.read(|tx| tx.history(id))
    }

    /// The recorded outcome of one action invocation.
    ///
    /// # Errors
    /// A store failure.
    pub fn action_outcome(&self, invocation_id: &str) -> Result<Option<ActionOutcome>> {
        self.read(|tx| tx.action_outcome(invocation_id))
    }

    /// Cancels an instance: an idempotent, fenced transition to `cancelled` (not a
    /// rollback: committed actions and dispatched effects stand). `compat` is the caller's
    /// build; a different build is refused. Any authority holding the instance is fenced
    /// out by the revision change.
    ///
    /// # Errors
    /// `NOT_FOUND`, `already-terminal` (completed / failed), `INCOMPATIBLE_AUTHORITY`.
    pub fn cancel_workflow(
        &self,
        instance_id: &str,
        compat: Option<&str>,
        actor: &str,
        reason: &str,
    ) -> Result<CancelOutcome> {
        check_id("instance id", instance_id)?;
        self.write_logged(|tx, now| {
            let Some(row) = tx.instance(instance_id)? else {
                return Ok(Err(Error::NotFound {
                    what: "workflow instance".into(),
                    id: instance_id.into(),
                }));
            };
            if let Some(have) = compat.filter(|c| *c != row.compat) {
                return Ok(Err(Error::Incompatible {
                    id: instance_id.into(),
                    required: row.compat.clone(),
                    have: have.into(),
                }));
            }
            let (definition, state) = decode_state(&row)?;
            let Some(def_row) = tx.definition(&pinned(&row.workflow_id, &definition))? else {
                return Ok(Err(Error::NotFound {
                    what: "workflow definition".into(),
                    id: pinned(&row.workflow_id, &definition),
                }));
            };
            let def = parse_definition(&def_row.definition)
                .map_err(|_| corrupt("deployed definition", &row.workflow_id))?;
            match machine::apply(
                &def,
                &state,
                Trigger::Cancel {
                    by: actor.into(),
                    reason: reason.into(),
                },
                now,
                0,
            ) {
                Err(MachineError::AlreadyCancelled) => Ok(Ok(CancelOutcome::AlreadyCancelled)),
                Err(e) => Ok(Err(refusal(&e, instance_id))),
                Ok((next, entries)) => {
                    commit_transition(tx, &row, &definition, &next, &entries, now)?;
                    Ok(Ok(CancelOutcome::Cancelled))
                }
            }
        })
    }
}

/// The engine an authority runs: the store, its build's compat digest and handler catalog,
/// and a cache of parsed definitions (definitions are immutable per fingerprint).
#[derive(Clone)]
pub struct Engine {
    store: Store,
    compat: String,
    owner: String,
    defs: Arc<Mutex<HashMap<String, Arc<WorkflowDef>>>>,
}

impl Engine {
    #[must_use]
    pub fn new(store: Store, owner: &str, compat: &str) -> Self {
        Self {
            store,
            compat: compat.into(),
            owner: owner.into(),
            defs: Arc::default(),
        }
    }

    fn definition(
        &self,
        tx: &mut dyn Tx,
        row: &InstanceRow,
        fingerprint: &str,
    ) -> Result<Arc<WorkflowDef>> {
        let key = pinned(&row.workflow_id, fingerprint);
        if let Some(def) = self
            .defs
            .lock()
            .map_err(|_| corrupt("definition cache", "poisoned"))?
            .get(&key)
        {
            return Ok(def.clone());
        }
        let def_row = tx.definition(&key)?.ok_or_else(|| Error::NotFound {
            what: "workflow definition".into(),
            id: key.clone(),
        })?;
        let def = Arc::new(
            parse_definition(&def_row.definition)
                .map_err(|_| corrupt("deployed definition", &key))?,
        );
        self.defs
            .lock()
            .map_err(|_| corrupt("definition cache", "poisoned"))?
            .insert(key, def.clone());
        Ok(def)
    }

    /// Takes the lease of up to `limit` runnable instances of this build.
    ///
    /// # Errors
    /// A store failure.
    pub fn claim(&self, limit: usize, lease_ms: Millis) -> Result<Vec<Claimed>> {
        Ok(self
            .claim_noting_takeovers(limit, lease_ms)?
            .into_iter()
            .map(|(claimed, _)| claimed)
            .collect())
    }

    /// [`Self::claim`], with when the lease each claim took over had expired, for the
    /// claims that took over an unreleased, expired lease (a failover).
    ///
    /// # Errors
    /// A store failure.
    pub fn claim_noting_takeovers(
        &self,
        limit: usize,
        lease_ms: Millis,
    ) -> Result<Vec<(Claimed, Option<Millis>)>> {
        self.store.write(|tx, now| {
            let mut claimed = Vec::new();
            for row in tx.runnable_instances(&self.compat, now, limit)? {
                let res = resource(&row.instance_id);
                let current = tx.lease(&res)?;
                let Ok(lease) = lease_rules::acquire(
                    current.as_ref(),
                    &res,
                    &self.owner,
                    self.store.ids().next_id("tok"),
                    lease_ms,
                    now,
                ) else {
                    continue;
                };
                let revision = tx.commit_revision()?;
                tx.put_lease(&lease)?;
                // Parked until the lease expires: other authorities skip it meanwhile, and
                // if this owner dies it becomes runnable again exactly when reclaimable.
                tx.update_instance(&InstanceRow {
                    next_eligible_at: Some(lease.expires_at),
                    ..row.clone()
                })?;
                tx.add_grant(&Grant {
                    revision,
                    resource_id: res,
                    generation: lease.generation,
                    owner_id: self.owner.clone(),
                    how: "claim".into(),
                    owner_compat: Some(self.compat.clone()),
                    item_compat: Some(row.compat.clone()),
                    at: now,
                    took_over: Takeover::of_lease(current.as_ref(), &self.owner, now),
                })?;
                let took_over = current
                    .filter(|l| l.released_at.is_none())
                    .map(|l| l.expires_at);
                let (_, state) = decode_state(&row)?;
                claimed.push((Claimed { row, state, lease }, took_over));
            }
            Ok(claimed)
        })
    }

    /// Decides what the owner does next: reconcile a recorded outcome, run the action, fire
    /// a due timer, match the first journal event after `sinceEventSeq`, or time out.
    ///
    /// # Errors
    /// `INCOMPATIBLE_AUTHORITY` for an instance of another build (nothing is run), a store
    /// failure, or a corrupt instance.
    pub fn next(&self, claimed: &Claimed) -> Result<Next> {
        if claimed.row.compat != self.compat {
            return Err(Error::Incompatible {
                id: claimed.row.instance_id.clone(),
                required: claimed.row.compat.clone(),
                have: self.compat.clone(),
            });
        }
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

    /// [`Self::record_outcome`] inside an open transaction: `Ok(Err(_))` is a refusal
    /// (logged), `Err(_)` a store failure.
    fn record_outcome_in(
        &self,
        tx: &mut dyn Tx,
        now: Millis,
        claimed: &Claimed,
        request: &ActionRequest,
        outcome: &std::result::Result<Value, machine::Failure>,
    ) -> Result<Result<()>> {
        let (holder, fence) = self.fence(tx, claimed)?;
        let detail = serde_json::json!({ "invocationId": request.invocation_id, "attempt": request.attempt });
        record_write(
            tx,
            now,
            &resource(&claimed.row.instance_id),
            &self.owner,
            claimed.lease.generation,
            "action-outcome",
            &fence,
            detail,
            holder,
        )?;
        if let Err(e) = fence {
            return Ok(Err(e));
        }
        if tx
            .action_outcome(&request.invocation_id)?
            .is_some_and(|o| o.attempt == request.attempt)
        {
            return Ok(Ok(()));
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
        Ok(Ok(()))
    }

    /// Who holds the instance lease now, and whether `claimed` is still that holder.
    fn fence(&self, tx: &mut dyn Tx, claimed: &Claimed) -> Result<(Holder, Result<()>)> {
        let res = resource(&claimed.row.instance_id);
        let Some(current) = tx.lease(&res)? else {
            let nobody = Holder {
                owner_id: None,
                generation: 0,
            };
            return Ok((
                nobody,
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
                        if let Err(e) =
                            self.record_outcome_in(tx, now, claimed, request, outcome)?
                        {
                            answers.push(Err(e));
                            continue;
                        }
                        outcome_to_trigger(outcome)
                    }
                    Step::Apply(trigger) => trigger.clone(),
                };
                answers.push(self.apply_in(tx, now, claimed, trigger)?);
            }
            Ok(answers)
        })
    }

    /// [`Self::apply`] inside an open transaction: `Ok(Err(_))` is a refusal (logged).
    fn apply_in(
        &self,
        tx: &mut dyn Tx,
        now: Millis,
        claimed: &Claimed,
        trigger: Trigger,
    ) -> Result<Result<InstanceRow>> {
        {
            let res = resource(&claimed.row.instance_id);
            let Some(row) = tx.instance(&claimed.row.instance_id)? else {
                return Ok(Err(Error::NotFound {
                    what: "workflow instance".into(),
                    id: claimed.row.instance_id.clone(),
                }));
            };
            if row.compat != self.compat {
                return Ok(Err(Error::Incompatible {
                    id: row.instance_id.clone(),
                    required: row.compat.clone(),
                    have: self.compat.clone(),
                }));
            }
            let (holder, fence) = self.fence(tx, claimed)?;
            let fence = fence.and_then(|()| {
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
            let detail = serde_json::json!({ "instanceRevision": claimed.row.instance_revision });
            record_write(
                tx,
                now,
                &res,
                &self.owner,
                claimed.lease.generation,
                "transition",
                &fence,
                detail,
                holder,
            )?;
            if let Err(e) = fence {
                return Ok(Err(e));
            }
            let (fingerprint, state) = decode_state(&row)?;
            let def = self.definition(tx, &row, &fingerprint)?;
            let high_water = tx.journal_high_water()?;
            let (next, entries) = match machine::apply(&def, &state, trigger, now, high_water) {
                Ok(t) => t,
                Err(e) => return Ok(Err(refusal(&e, &row.instance_id))),
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
            Ok(Ok(written))
        }
    }

    /// Gives the instance lease back without a transition (nothing was due) and restores
    /// its natural eligibility, unless an event fanout woke it while it was held.
    ///
    /// # Errors
    /// `WORK_FENCED` when it was no longer ours.
    pub fn release(&self, claimed: &Claimed) -> Result<()> {
        self.store.write_logged(|tx, now| {
            let res = resource(&claimed.row.instance_id);
            if let (_, Err(e)) = self.fence(tx, claimed)? {
                return Ok(Err(e));
            }
            if let Some(row) = tx.instance(&claimed.row.instance_id)? {
                let (_, state) = decode_state(&row)?;
                let natural = if state.status.is_terminal() {
                    None
                } else {
                    state.next_eligible_at
                };
                // An event fanout that landed while we held it moved the parking instant
                // forward to "now": keep that wake-up, or the event would be missed.
                let parked = row.next_eligible_at == Some(claimed.lease.expires_at);
                if parked && row.next_eligible_at != natural {
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
            Ok(Ok(()))
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

    /// The owner id this engine acts as.
    #[must_use]
    pub fn owner(&self) -> &str {
        &self.owner
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
