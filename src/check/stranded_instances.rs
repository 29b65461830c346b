//! Invariant 10 (docs/ARCHITECTURE.md#checker): a crash never permanently strands a workflow.
//! Judged at [`CheckOptions::now`] like stranded work: a non-terminal instance is stranded
//! when its `nextEligibleAt` — the action or retry it is due to run, its timer, its wait's
//! timeout, or the lapse of the lease a claim parked it under (renewal moves that instant
//! forward) — passed more than `stranded_after_ms` ago while a live authority of its build
//! was up, and no live authority that may run it claimed any instance within the bound
//! either (an instance queued behind instances those authorities keep claiming is
//! backlogged, and counted). An instance no live authority can run waits for a compatible
//! build and is not stranded; an event wait without a timeout is due at no instant and
//! never stranded.

use super::codes::STRANDED_INSTANCE;
use super::history::age;
use super::stranded::{Claiming, LiveBuilds, Verdict};
use super::{CheckOptions, Findings};
use crate::clock::{format_duration, format_instant};
use crate::model::InstanceRow;

/// No non-terminal instance stays overdue for longer than the bound once a live authority of
/// its build has been up: the clock starts at the later of its due instant and that build's
/// earliest live start — unless the live authorities that may run it kept claiming
/// instances.
pub(super) fn no_stranded_instance(
    row: &InstanceRow,
    (live, claiming): (&LiveBuilds, &Claiming),
    options: &CheckOptions,
    findings: &mut Findings,
) -> Verdict {
    if row.status.is_terminal() {
        return Verdict::Fine;
    }
    let Some(due) = row.next_eligible_at else {
        return Verdict::Fine;
    };
    let Some((live_since, authority)) = live.of(&row.compat) else {
        return Verdict::Incompatible;
    };
    if age(options.now, due.max(live_since)) <= options.stranded_after_ms {
        return Verdict::Fine;
    }
    if claiming.instances_since(live, &row.compat, options.now - options.stranded_after_ms) {
        return Verdict::Backlogged;
    }
    findings.push(
        STRANDED_INSTANCE,
        vec![row.instance_id.clone()],
        format!(
            "workflow instance {} ({}, {}) has been due since {} ({} ago, bound {}) although live authority {authority} may run its key {}",
            row.instance_id,
            row.workflow_id,
            row.status.as_str(),
            format_instant(due),
            format_duration(age(options.now, due)),
            format_duration(options.stranded_after_ms),
            row.compat
        ),
    );
    Verdict::Stranded
}
