//! Workflow instances: status, current step, attempt, waiting reason, next eligibility,
//! instance revision and whether a live authority can run them.

use super::super::snapshot::Snapshot;
use super::super::text::{clean, relative};
use super::super::theme::Role;
use super::super::wf;
use super::{Cell, Column, Row, TableData, col, version};
use crate::foundation::timefmt::TimeFmt;
use crate::model::{InstanceRow, Page};

pub const COLUMNS: &[Column] = &[
    col("instance", 20, 0),
    col("definition", 16, 2),
    col("status", 9, 0),
    col("step", 14, 1),
    col("att", 3, 2),
    col("waiting", 16, 1),
    col("next", 10, 3),
    col("rev", 4, 2),
    col("compat", 6, 0),
];

#[must_use]
pub fn status_role(status: &str) -> Role {
    match status {
        "running" => Role::WfRunning,
        "waiting" => Role::WfWaiting,
        "completed" => Role::WfCompleted,
        "failed" => Role::WfFailed,
        _ => Role::WfCancelled,
    }
}

/// Whether a workflow status is terminal.
#[must_use]
pub fn terminal(status: &str) -> bool {
    matches!(status, "completed" | "failed" | "cancelled")
}

#[must_use]
pub fn table(snap: &Snapshot, page: &Page<InstanceRow>, fmt: TimeFmt) -> TableData {
    let now = fmt.now;
    let rows = page
        .rows
        .iter()
        .map(|i| {
            let state = wf::state(i);
            let (compat_text, ok) = super::work::compatible(snap, &i.compat);
            let incompatible = !ok && !terminal(i.status.as_str());
            let step = state
                .as_ref()
                .and_then(|s| s.current_step_id.clone())
                .unwrap_or_else(|| "-".into());
            let attempt = state.as_ref().map_or(0, |s| s.attempt);
            let waiting = state
                .as_ref()
                .and_then(wf_waiting)
                .unwrap_or_else(|| "-".into());
            Row {
                key: i.instance_id.clone(),
                cells: vec![
                    Cell::raw(&i.instance_id, 80),
                    Cell::raw(&i.workflow_id, 60),
                    Cell::text(i.status.as_str()).role(if incompatible {
                        Role::Incompatible
                    } else {
                        status_role(i.status.as_str())
                    }),
                    Cell::raw(&step, 60),
                    Cell::num(attempt),
                    Cell::raw(&waiting, 60),
                    Cell::timed(
                        relative(now, i.next_eligible_at),
                        i.next_eligible_at.unwrap_or(i64::MAX),
                    ),
                    Cell::num(i64::try_from(i.instance_revision).unwrap_or(i64::MAX)),
                    Cell::text(compat_text).role_if(incompatible, Role::Incompatible),
                ],
                detail: vec![
                    ("instance".into(), clean(&i.instance_id, 300)),
                    ("definition".into(), clean(&i.workflow_id, 200)),
                    ("status".into(), i.status.to_string()),
                    ("step".into(), clean(&step, 200)),
                    (
                        "next eligible".into(),
                        i.next_eligible_at.map_or_else(|| "-".into(), |t| fmt.at(t)),
                    ),
                ],
                resource: Some(wf::instance_resource(&i.instance_id)),
                instance: Some(i.instance_id.clone()),
                version: version(i),
                ..Row::default()
            }
        })
        .collect();
    let counts: Vec<String> = snap
        .overview
        .workflows
        .iter()
        .filter(|(_, n)| *n > 0)
        .map(|(s, n)| format!("{n} {s}"))
        .collect();
    TableData::new(COLUMNS, rows, counts.join(" "))
}

/// The inspection `waitingReason`.
#[must_use]
pub fn wf_waiting(state: &crate::workflow::InstanceState) -> Option<String> {
    state.waiting_reason()
}
