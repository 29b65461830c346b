//! The store-backed workflow engine: deploy, idempotent start, claim, the fenced
//! `instanceRevision` compare-and-swap around every
//! [`machine::apply`](super::machine::apply), action outcome records, event-wait replay
//! from the journal, cancellation and inspection.
//!
//! Ownership of an instance while an authority advances it is a lease on the resource
//! `wf:<instanceId>` (the same lease rules as everything else). Every transition checks,
//! inside one write transaction, that the lease is still the caller's (the fence) and that
//! the instance revision is the one the caller read (the CAS); only then does it write the
//! new state, the history entries and the counters.
//!
//! An action runs in two commits (docs/ARCHITECTURE.md#workflows): the outcome record
//! (keyed by the invocation id `"<instanceId>/<activationId>"`, with whatever the action
//! itself writes) and then the transition. A crash between them leaves the outcome on
//! record; the next owner finds it and applies the transition without running the action
//! again.
//!
//! The files follow who calls them:
//! - operators (the command line, the dashboard): `instances.rs` (deploy, start, read) and
//!   `cancel.rs`;
//! - an authority, through [`Engine`]: `claim.rs` (take the lease of runnable instances),
//!   `renew.rs` (keep it through a long action) and `step.rs` (decide, record an outcome,
//!   apply a transition, release);
//! - both: `transition.rs`, the instance row as stored and the one way a transition is
//!   written;
//! - the checker and the triage list: `lost_waits.rs`, the waits that reach back past the
//!   retained journal.

pub mod cancel;
mod claim;
mod instances;
pub mod lost_waits;
mod renew;
mod step;
mod transition;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

pub use cancel::CancelOutcome;
pub use instances::{NewInstance, StartKey, Started};
pub use step::{Next, Step, outcome_to_trigger};
pub use transition::decode_state;

use super::machine::{InstanceState, MachineError};
use super::{WorkflowDef, parse_definition};
use crate::error::{Error, Result};
use crate::model::{CompatSet, InstanceRow, Lease};
use crate::store::{Store, Tx};

/// An instance an authority holds the lease of, at the revision it read.
#[derive(Debug, Clone)]
pub struct Claimed {
    pub row: InstanceRow,
    pub state: InstanceState,
    pub lease: Lease,
}

/// What every instance's lease resource starts with.
const RESOURCE_PREFIX: &str = "wf:";

/// The lease resource of an instance, `wf:<instanceId>`: what the engine fences its
/// transitions on, and the name grants and writes of it are recorded under.
#[must_use]
pub fn instance_resource(instance_id: &str) -> String {
    format!("{RESOURCE_PREFIX}{instance_id}")
}

/// Whether `resource` (a grant's, a write's) is a workflow instance's lease.
#[must_use]
pub fn is_instance_resource(resource: &str) -> bool {
    resource.starts_with(RESOURCE_PREFIX)
}

/// The definition row an instance runs: its workflow at one fingerprint.
fn pinned(workflow_id: &str, fingerprint: &str) -> String {
    format!("{workflow_id}@{fingerprint}")
}

fn corrupt(what: &str, e: impl std::fmt::Display) -> Error {
    Error::Corrupt(format!("{what}: {e}"))
}

/// A machine refusal as the store answers it.
fn refusal(e: &MachineError, instance_id: &str) -> Error {
    match e {
        MachineError::Terminal { status } => Error::AlreadyTerminal {
            id: instance_id.into(),
            state: (*status).into(),
        },
        other => Error::Invalid(format!("{instance_id}: {other}")),
    }
}

/// The engine an authority runs: the store, the digests of the instances its owner may run
/// (one per deployed definition it has every handler for, which changes as definitions
/// are deployed), and a cache of parsed definitions (immutable per fingerprint).
#[derive(Clone)]
pub struct Engine {
    store: Store,
    keys: Arc<Mutex<CompatSet>>,
    owner: String,
    defs: Arc<Mutex<HashMap<String, Arc<WorkflowDef>>>>,
}

impl Engine {
    #[must_use]
    pub fn new(store: Store, owner: &str, keys: impl Into<CompatSet>) -> Self {
        Self {
            store,
            keys: Arc::new(Mutex::new(keys.into())),
            owner: owner.into(),
            defs: Arc::default(),
        }
    }

    /// The digests of the instances this engine claims and steps.
    #[must_use]
    pub fn keys(&self) -> CompatSet {
        self.keys
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// Replaces the digests this engine claims and steps (its owner learnt of a deployed
    /// definition, or of one it can no longer run).
    pub fn set_keys(&self, keys: CompatSet) {
        *self
            .keys
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = keys;
    }

    /// `Incompatible` unless `row`'s digest is one of this engine's.
    fn check_compat(&self, row: &InstanceRow) -> Result<()> {
        let keys = self.keys();
        if keys.contains(&row.compat) {
            return Ok(());
        }
        Err(Error::Incompatible {
            id: row.instance_id.clone(),
            required: row.compat.clone(),
            have: keys.to_string(),
        })
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

    /// The owner id this engine acts as.
    #[must_use]
    pub fn owner(&self) -> &str {
        &self.owner
    }
}
