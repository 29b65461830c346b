//! Invariant 9 (docs/ARCHITECTURE.md#checker): durable workflow histories. Along
//! each instance's log `instanceRevision` never goes back; each activation gets one logical
//! transition (`retry-scheduled` may repeat); nothing follows a terminal entry; and every
//! action invocation has one durable outcome that agrees with the history.

use std::collections::HashMap;

use serde_json::Value;

use super::codes::{
    ACTION_OUTCOME_CONFLICT, ACTION_OUTCOME_MISSING, ACTIVATION_RESOLVED_TWICE,
    ENTRY_AFTER_TERMINAL, INSTANCE_REVISION_NOT_MONOTONE,
};
use super::{Counts, Findings};
use crate::error::Result;
use crate::model::workflow::ActionOutcome;
use crate::model::{HistoryRecord, InstanceRow, PageRequest};
use crate::store::{Store, Tx};

/// Kinds that resolve an activation: at most one per activation. A `step-failed` followed
/// by `retry-scheduled` for the same activation was not terminal and does not count.
const RESOLVING: [&str; 5] = [
    "step-succeeded",
    "step-failed",
    "event-matched",
    "timer-fired",
    "timeout-fired",
];
/// Kinds that end an instance.
const TERMINAL: [&str; 3] = ["completed", "failed", "cancelled"];

/// One instance as the checks see it: its row, its history in position order, and the
/// outcome records of its action invocations.
#[derive(Debug, Clone)]
pub(super) struct Instance {
    pub row: InstanceRow,
    pub history: Vec<HistoryRecord>,
    pub outcomes: HashMap<String, ActionOutcome>,
}

impl Instance {
    /// `(activationId, invocationId)` of every action step activation in the history.
    fn action_invocations(&self) -> Vec<(String, String)> {
        self.history
            .iter()
            .filter(|e| e.kind == "step-activated")
            .filter_map(|e| {
                let detail: Value = serde_json::from_str(&e.detail).ok()?;
                if detail.get("type").and_then(Value::as_str) != Some("action") {
                    return None;
                }
                let activation = e.activation_id.clone()?;
                let invocation = detail
                    .get("invocationId")
                    .and_then(Value::as_str)
                    .map_or_else(
                        || format!("{}/{activation}", self.row.instance_id),
                        str::to_owned,
                    );
                Some((activation, invocation))
            })
            .collect()
    }

    /// The entry that resolved `activation`, if any (the last one, after retries).
    fn resolution(&self, activation: &str) -> Option<&HistoryRecord> {
        let mut resolved = None;
        for e in self
            .history
            .iter()
            .filter(|e| e.activation_id.as_deref() == Some(activation))
        {
            if RESOLVING.contains(&e.kind.as_str()) {
                resolved = Some(e);
            } else if e.kind == "retry-scheduled" {
                resolved = None;
            }
        }
        resolved
    }

    /// Reads an instance's history and the outcome records its action steps name.
    fn read(tx: &mut dyn Tx, row: InstanceRow) -> Result<Self> {
        let history = tx.history(&row.instance_id)?;
        let mut instance = Self {
            row,
            history,
            outcomes: HashMap::new(),
        };
        for (_, invocation) in instance.action_invocations() {
            if let Some(outcome) = tx.action_outcome(&invocation)? {
                instance.outcomes.insert(invocation, outcome);
            }
        }
        Ok(instance)
    }
}

fn at(e: &HistoryRecord) -> String {
    format!(
        "position {} (instance revision {})",
        e.position, e.instance_revision
    )
}

/// `instanceRevision` never decreases along the log, and the row is at least as new as its
/// last entry (a transition is a CAS `R → R+1`; going back means a lost or replayed write).
pub(super) fn monotone_instance_revision(instance: &Instance, findings: &mut Findings) {
    let id = &instance.row.instance_id;
    for pair in instance.history.windows(2) {
        let (before, after) = (&pair[0], &pair[1]);
        if after.instance_revision < before.instance_revision {
            findings.push(
                INSTANCE_REVISION_NOT_MONOTONE,
                vec![id.clone()],
                format!(
                    "workflow instance {id}: {} at {} follows {} at {}",
                    after.kind,
                    at(after),
                    before.kind,
                    at(before)
                ),
            );
            return;
        }
    }
    if let Some(last) = instance.history.last()
        && last.instance_revision > instance.row.instance_revision
    {
        findings.push(
            INSTANCE_REVISION_NOT_MONOTONE,
            vec![id.clone()],
            format!(
                "workflow instance {id} is at instance revision {} but its history reached {} ({} at position {})",
                instance.row.instance_revision, last.instance_revision, last.kind, last.position
            ),
        );
    }
}

/// One logical transition per activation: no two of step-succeeded / terminal step-failed /
/// event-matched / timer-fired / timeout-fired for one activation id (so event vs timeout:
/// exactly one wins). `retry-scheduled` may repeat.
pub(super) fn one_transition_per_activation(instance: &Instance, findings: &mut Findings) {
    let id = &instance.row.instance_id;
    let mut resolved: HashMap<&str, &HistoryRecord> = HashMap::new();
    let mut reported: Vec<&str> = Vec::new();
    for e in &instance.history {
        let Some(activation) = e.activation_id.as_deref() else {
            continue;
        };
        if e.kind == "retry-scheduled" {
            if resolved
                .get(activation)
                .is_some_and(|r| r.kind == "step-failed")
            {
                resolved.remove(activation);
            }
            continue;
        }
        if !RESOLVING.contains(&e.kind.as_str()) {
            continue;
        }
        match resolved.get(activation) {
            Some(first) if !reported.contains(&activation) => {
                reported.push(activation);
                findings.push(
                    ACTIVATION_RESOLVED_TWICE,
                    vec![id.clone(), activation.to_owned()],
                    format!(
                        "workflow instance {id} activation {activation} was resolved twice: {} at {} and {} at {}",
                        first.kind,
                        at(first),
                        e.kind,
                        at(e)
                    ),
                );
            }
            Some(_) => {}
            None => {
                resolved.insert(activation, e);
            }
        }
    }
}

/// Nothing follows `completed` / `failed` / `cancelled`: a later timer or event never moves
/// a terminal instance.
pub(super) fn nothing_after_terminal(instance: &Instance, findings: &mut Findings) {
    let id = &instance.row.instance_id;
    let Some(end) = instance
        .history
        .iter()
        .position(|e| TERMINAL.contains(&e.kind.as_str()))
    else {
        return;
    };
    let (terminal, rest) = (&instance.history[end], &instance.history[end + 1..]);
    let Some(next) = rest.first() else { return };
    findings.push(
        ENTRY_AFTER_TERMINAL,
        vec![id.clone()],
        format!(
            "workflow instance {id} was {} at {}, yet {} more entr{} followed, starting with {} at {}",
            terminal.kind,
            at(terminal),
            rest.len(),
            if rest.len() == 1 { "y" } else { "ies" },
            next.kind,
            at(next)
        ),
    );
}

/// Every `step-succeeded` of an action step has its durable outcome record (written in the
/// same transaction as the action's effects).
pub(super) fn outcome_recorded_for_success(instance: &Instance, findings: &mut Findings) {
    let id = &instance.row.instance_id;
    for (activation, invocation) in instance.action_invocations() {
        let Some(succeeded) = instance
            .resolution(&activation)
            .filter(|e| e.kind == "step-succeeded")
        else {
            continue;
        };
        if instance.outcomes.contains_key(&invocation) {
            continue;
        }
        findings.push(
            ACTION_OUTCOME_MISSING,
            vec![id.clone(), invocation.clone()],
            format!("workflow instance {id}: action invocation {invocation} succeeded at {} but has no outcome record", at(succeeded)),
        );
    }
}

/// One outcome per action invocation: the (single, keyed) outcome record agrees with how
/// the history resolved the activation — a record saying `failed` under a step-succeeded,
/// or `succeeded` under a terminal step-failed, means the invocation had two outcomes.
pub(super) fn one_outcome_per_invocation(instance: &Instance, findings: &mut Findings) {
    let id = &instance.row.instance_id;
    for (activation, invocation) in instance.action_invocations() {
        let (Some(outcome), Some(resolved)) = (
            instance.outcomes.get(&invocation),
            instance.resolution(&activation),
        ) else {
            continue;
        };
        let agrees = match resolved.kind.as_str() {
            "step-succeeded" => outcome.outcome == "succeeded",
            "step-failed" => outcome.outcome != "succeeded",
            _ => true,
        };
        if agrees {
            continue;
        }
        findings.push(
            ACTION_OUTCOME_CONFLICT,
            vec![id.clone(), invocation.clone()],
            format!(
                "workflow instance {id}: action invocation {invocation} recorded outcome {} (attempt {}) but the history says {} at {}",
                outcome.outcome,
                outcome.attempt,
                resolved.kind,
                at(resolved)
            ),
        );
    }
}

/// Pages through the instances (each page in one read: rows, histories, outcomes).
pub(super) fn scan(
    store: &Store,
    page: usize,
    findings: &mut Findings,
    counts: &mut Counts,
) -> Result<()> {
    let mut request = PageRequest::first(page);
    loop {
        let instances = store.read(|tx| {
            let rows = tx.list_instances(None, None, &request)?;
            rows.into_iter()
                .map(|row| Instance::read(tx, row))
                .collect::<Result<Vec<_>>>()
        })?;
        for instance in &instances {
            counts.instances += 1;
            counts.history_entries += instance.history.len() as u64;
            monotone_instance_revision(instance, findings);
            one_transition_per_activation(instance, findings);
            nothing_after_terminal(instance, findings);
            outcome_recorded_for_success(instance, findings);
            one_outcome_per_invocation(instance, findings);
        }
        match instances.last() {
            Some(last) if instances.len() >= page => {
                request = PageRequest::after(last.row.instance_id.clone(), page);
            }
            _ => return Ok(()),
        }
    }
}
