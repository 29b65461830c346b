//! `inspect workflows`: workflow instances through the store's own filtered read
//! (`status:`, an id prefix), with the display fields of each instance's state.

use std::io::Write;

use serde::Serialize;

use super::render::ViewRow;
use super::{Ctx, Failure};
use crate::cli::output::{opt_when, short, yes_no};
use crate::clock::Millis;
use crate::foundation::text_cell::{cell, cell_max, opt_cell};
use crate::model::{InstanceRow, Page};
use crate::ops::filter::Filter;
use crate::ops::live::LiveBuilds;
use crate::workflow::InstanceState;
use crate::workflow::engine::decode_state;

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct WorkflowRow {
    instance_id: String,
    workflow_id: String,
    status: String,
    current_step_id: Option<String>,
    activation_id: Option<String>,
    attempt: Option<u64>,
    waiting_reason: Option<String>,
    next_eligible_at: Option<Millis>,
    created_at: Millis,
    updated_at: Millis,
    instance_revision: u64,
    compat: String,
    compatible: bool,
    incompatible_reason: Option<String>,
    principal: String,
    failure: Option<serde_json::Value>,
    output: Option<serde_json::Value>,
}

impl ViewRow for WorkflowRow {
    const COLUMNS: &'static [&'static str] = &[
        "INSTANCE",
        "WORKFLOW",
        "STATUS",
        "STEP",
        "ATTEMPT",
        "WAITING",
        "NEXT",
        "REV",
        "COMPAT",
        "COMPATIBLE",
    ];

    fn cells(&self, now: Millis) -> Vec<String> {
        let w = self;
        vec![
            cell(&w.instance_id),
            cell_max(&w.workflow_id, 24),
            cell_max(&w.status, 12),
            opt_cell(w.current_step_id.as_deref()),
            w.attempt.map_or_else(|| "-".into(), |a| a.to_string()),
            opt_cell(w.waiting_reason.as_deref()),
            opt_when(w.next_eligible_at, now),
            w.instance_revision.to_string(),
            short(&w.compat),
            yes_no(w.compatible),
        ]
    }
}

pub(super) fn print(
    ctx: &Ctx<'_>,
    filter: &Filter,
    out: &mut dyn Write,
) -> Result<Option<String>, Failure> {
    let live = LiveBuilds::load(ctx.store, ctx.now)?;
    let Page { rows, next } =
        ctx.store
            .list_instances_by(filter.status, filter.id_prefix.as_deref(), &ctx.page)?;
    let rows: Vec<WorkflowRow> = rows
        .into_iter()
        .map(|i| {
            let fields = state_fields(&i);
            let compatible = live.compatible(&i.compat);
            let terminal = matches!(i.status.as_str(), "completed" | "failed" | "cancelled");
            WorkflowRow {
                incompatible_reason: (!compatible && !terminal)
                    .then(|| format!("no live authority runs build key {}", i.compat)),
                compatible,
                current_step_id: fields.current_step_id,
                activation_id: fields.activation_id,
                attempt: fields.attempt,
                waiting_reason: fields.waiting_reason,
                failure: fields.failure,
                output: fields.output,
                instance_id: i.instance_id,
                workflow_id: i.workflow_id,
                status: i.status.to_string(),
                next_eligible_at: i.next_eligible_at,
                created_at: i.created_at,
                updated_at: i.updated_at,
                instance_revision: i.instance_revision,
                compat: i.compat,
                principal: i.principal,
            }
        })
        .collect();
    ctx.emit(out, &rows, next)
}

/// The display fields of an instance's state JSON, tolerant of shapes this build does not
/// know (then only the fields present are shown).
struct StateFields {
    current_step_id: Option<String>,
    activation_id: Option<String>,
    attempt: Option<u64>,
    waiting_reason: Option<String>,
    failure: Option<serde_json::Value>,
    output: Option<serde_json::Value>,
}

fn state_fields(row: &InstanceRow) -> StateFields {
    if let Ok((_, state)) = decode_state(row) {
        return fields_of(state);
    }
    let value: serde_json::Value = serde_json::from_str(&row.state).unwrap_or_default();
    // The engine stores `{ definition, state }`; older or foreign rows may be the bare state.
    let value = value
        .get("state")
        .filter(|v| v.is_object())
        .cloned()
        .unwrap_or(value);
    if let Ok(state) = serde_json::from_value::<InstanceState>(value.clone()) {
        return fields_of(state);
    }
    let text_of = |key: &str| {
        value
            .get(key)
            .and_then(serde_json::Value::as_str)
            .map(str::to_owned)
    };
    let present = |key: &str| value.get(key).filter(|v| !v.is_null()).cloned();
    StateFields {
        current_step_id: text_of("currentStepId"),
        activation_id: text_of("activationId"),
        attempt: value.get("attempt").and_then(serde_json::Value::as_u64),
        waiting_reason: text_of("waitingReason"),
        failure: present("failure"),
        output: present("output"),
    }
}

fn fields_of(state: InstanceState) -> StateFields {
    StateFields {
        waiting_reason: state.waiting_reason(),
        current_step_id: state.current_step_id,
        activation_id: state.activation_id,
        attempt: Some(u64::from(state.attempt)),
        failure: state.failure.and_then(|f| serde_json::to_value(f).ok()),
        output: state.output,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn state_fields_tolerate_unknown_shapes() {
        let row = |state: &str| InstanceRow {
            instance_id: "i".into(),
            workflow_id: "w".into(),
            status: crate::model::InstanceStatus::Waiting,
            compat: "c".into(),
            instance_revision: 1,
            next_eligible_at: None,
            waiting_event: None,
            principal: "p".into(),
            start_key: None,
            state: state.into(),
            created_at: 0,
            updated_at: 0,
        };
        let fields = state_fields(&row(
            r#"{"currentStepId":"s1","attempt":2,"waitingReason":"timer"}"#,
        ));
        assert_eq!(fields.current_step_id.as_deref(), Some("s1"));
        assert_eq!(fields.attempt, Some(2));
        assert_eq!(fields.waiting_reason.as_deref(), Some("timer"));
        let none = state_fields(&row("not json"));
        assert!(none.current_step_id.is_none());
    }
}
