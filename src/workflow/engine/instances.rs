//! The operator's side of workflows: deploy a definition, start instances (idempotently),
//! and read an instance, its history and its action outcomes.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use serde::Serialize;
use serde_json::{Map, Value};

use super::transition::counter;
use super::transition::decode_state;
use super::transition::{add_history, encode_row};
use super::{corrupt, pinned};
use crate::clock::Millis;
use crate::error::{Error, Result};
use crate::ids::{check_id, check_opt_id};
use crate::model::HandlerVersion;
use crate::model::workflow::ActionOutcome;
use crate::model::{HistoryRecord, InstanceRow, InstanceStatus, WorkflowDefinitionRow};
use crate::store::{Store, Tx};
use crate::workflow::keys::{action_handlers, instance_key};
use crate::workflow::{
    Catalog, Diagnostic, WorkflowDef, machine, parse_definition, semantic_fingerprint, validate,
};

/// The answer to a start.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Started {
    pub instance_id: String,
    pub status: InstanceStatus,
    /// False when an earlier start with the same identity was found instead.
    pub created: bool,
}

/// How a start stamps its instance's compatibility digest: with a digest the caller holds
/// already, or with the key of the definition it pins run by the caller's handler
/// versions ([`crate::workflow::keys::instance_key`]) — what a producer that knows only its
/// handlers passes, since the pinned definition is learnt in the starting transaction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StartKey {
    Digest(String),
    Versions(BTreeMap<String, HandlerVersion>),
}

impl From<&str> for StartKey {
    fn from(digest: &str) -> Self {
        Self::Digest(digest.to_owned())
    }
}

impl From<&String> for StartKey {
    fn from(digest: &String) -> Self {
        Self::Digest(digest.clone())
    }
}

impl From<BTreeMap<String, HandlerVersion>> for StartKey {
    fn from(versions: BTreeMap<String, HandlerVersion>) -> Self {
        Self::Versions(versions)
    }
}

impl StartKey {
    /// The digest an instance of `def` (semantic fingerprint `fingerprint`) is stamped with.
    ///
    /// # Errors
    /// `INVALID` when an action of `def` has no version among the caller's handlers.
    fn resolve(&self, def: &WorkflowDef, fingerprint: &str) -> Result<String> {
        match self {
            Self::Digest(digest) => Ok(digest.clone()),
            Self::Versions(versions) => instance_key(def, fingerprint, versions).ok_or_else(|| {
                let missing = action_handlers(def)
                    .into_iter()
                    .filter(|a| !versions.contains_key(*a))
                    .collect::<Vec<_>>()
                    .join(", ");
                Error::Invalid(format!(
                    "workflow {} needs a version of its action handler(s) {missing}",
                    def.id
                ))
            }),
        }
    }
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

impl Store {
    /// Validates and deploys a definition. Returns its semantic fingerprint.
    ///
    /// # Errors
    /// A store failure. An invalid definition is no error: its diagnostics are the answer
    /// (`Ok(Err(diagnostics))`), and nothing is written.
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
            Ok(row)
        })
        .map(Ok)
    }

    /// Starts an instance of the deployed `workflow_id` under `principal`, stamped with
    /// `compat` (the starting build's compatibility key digest): the producer's one call for
    /// a workflow.
    ///
    /// Outcomes: [`Started::created`] `true` — a new instance (its id minted from the
    /// store's id source); `false` — an earlier start with the same
    /// `(workflowId, principal, idempotencyKey, compat)` was found and is returned as it
    /// now stands, and nothing is written. Every argument the repeat gives must equal the
    /// first start's input of that name: the same key with other arguments is another
    /// request, refused, not a repeat. Without a key every call starts a new instance.
    ///
    /// # Errors
    /// `NOT_FOUND` for an undeployed workflow; `INVALID` for a workflow id or key that
    /// fails [`check_id`], or arguments the definition refuses; `IDEMPOTENCY_CONFLICT` for
    /// a repeated key whose arguments differ from the first start's (naming the first that
    /// differs); `STORE_CORRUPT` for a
    /// deployed definition that no longer parses; a store failure. Nothing is written on
    /// any error.
    pub fn start_workflow(
        &self,
        workflow_id: &str,
        args: Map<String, Value>,
        principal: &str,
        idempotency_key: Option<&str>,
        compat: impl Into<StartKey>,
    ) -> Result<Started> {
        let compat = compat.into();
        let start = NewInstance {
            workflow_id,
            args,
            principal,
            idempotency_key,
        };
        self.write(|tx, now| self.start_in(tx, now, &start, &compat, &mut HashMap::new()))
    }

    /// Starts many instances in one transaction (one commit): each as
    /// [`Self::start_workflow`], all or none.
    ///
    /// # Errors
    /// As [`Self::start_workflow`], for the first start that fails (nothing is started).
    pub fn start_workflows(
        &self,
        starts: &[NewInstance<'_>],
        compat: impl Into<StartKey>,
    ) -> Result<Vec<Started>> {
        let compat = compat.into();
        self.write(|tx, now| {
            // Each deployed definition is read and parsed once per batch.
            let mut defs = HashMap::new();
            starts
                .iter()
                .map(|start| self.start_in(tx, now, start, &compat, &mut defs))
                .collect()
        })
    }

    fn start_in(
        &self,
        tx: &mut dyn Tx,
        now: Millis,
        start: &NewInstance<'_>,
        compat: &StartKey,
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
        let compat = compat.resolve(&def, &fingerprint)?;
        let start_key =
            idempotency_key.map(|k| [workflow_id, principal, k, compat.as_str()].join("\u{1f}"));
        if let Some(existing) = start_key
            .as_deref()
            .map(|k| tx.instance_by_start_key(k))
            .transpose()?
            .flatten()
        {
            // The same key with other arguments is another request, not a repeat.
            let (_, first) = decode_state(&existing)?;
            if let Some((name, given)) = args
                .iter()
                .find(|(name, value)| first.inputs.get(*name) != Some(*value))
            {
                return Err(Error::IdempotencyConflict {
                    what: format!("workflow {workflow_id} under key"),
                    key: idempotency_key.unwrap_or_default().to_owned(),
                    detail: format!(
                        "{name} was {}, now {given}",
                        first
                            .inputs
                            .get(name)
                            .map_or("absent".into(), ToString::to_string)
                    ),
                });
            }
            return Ok(Started {
                instance_id: existing.instance_id,
                status: existing.status,
                created: false,
            });
        }
        let instance_id = self.ids().next_id("wf");
        let high_water = tx.journal_high_water()?;
        let (state, entries) =
            machine::start(&def, &instance_id, args.clone(), principal, now, high_water)
                .map_err(|e| Error::Invalid(e.to_string()))?;
        let blank = InstanceRow {
            instance_id: instance_id.clone(),
            workflow_id: workflow_id.into(),
            status: state.status,
            compat,
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
        add_history(tx, &row, 1, &entries)?;
        counter(&row).adjust(tx, 1)?;
        Ok(Started {
            instance_id,
            status: row.status,
            created: true,
        })
    }

    /// Every deployed definition, each pinned version included: what decides the
    /// workflow keys an authority claims by ([`crate::workflow::keys::claim_keys`]).
    ///
    /// # Errors
    /// A store failure.
    pub fn deployed_definitions(&self) -> Result<Vec<WorkflowDefinitionRow>> {
        const PAGE: usize = 256;
        let mut all: Vec<WorkflowDefinitionRow> = Vec::new();
        loop {
            let page = match all.last() {
                Some(last) => crate::model::PageRequest::after(last.workflow_id.clone(), PAGE),
                None => crate::model::PageRequest::first(PAGE),
            };
            let rows = self.read(|tx| tx.list_definitions(&page))?;
            let done = rows.len() < PAGE;
            all.extend(rows);
            if done {
                return Ok(all);
            }
        }
    }

    /// The handlers the deployed definition of `workflow_id` needs for its actions, sorted
    /// (none when it is not deployed): what a producer gives versions for when it starts
    /// one ([`StartKey::Versions`]).
    ///
    /// # Errors
    /// `STORE_CORRUPT` for a deployed definition that no longer parses; a store failure.
    pub fn workflow_actions(&self, workflow_id: &str) -> Result<Vec<String>> {
        let Some(row) = self.read(|tx| tx.definition(workflow_id))? else {
            return Ok(Vec::new());
        };
        let def = parse_definition(&row.definition).map_err(|d| {
            corrupt(
                "deployed definition",
                d.first().map(ToString::to_string).unwrap_or_default(),
            )
        })?;
        Ok(action_handlers(&def)
            .into_iter()
            .map(str::to_owned)
            .collect())
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
}
