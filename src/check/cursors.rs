//! Invariant 8 (docs/ARCHITECTURE.md#checker): a subscription's cursor only moves forward, and a stale
//! owner never overwrites a newer cursor.

use super::Findings;
use super::codes::{CURSOR_NOT_MONOTONE, STALE_CURSOR_WRITE};
use super::history::{Detail, Owners, ResourceState};
use crate::model::WriteRecord;

/// The subscription a cursor write belongs to: its detail, or the cursor item's id.
fn subscription(write: &WriteRecord, detail: &Detail) -> String {
    detail.subscription.clone().unwrap_or_else(|| {
        write
            .resource_id
            .strip_prefix("cursor:")
            .unwrap_or(&write.resource_id)
            .to_owned()
    })
}

/// Accepted cursor writes (`{from, to}`) strictly increase, in revision order: each moves
/// forward from where it started and past every earlier accepted one.
pub(super) fn monotone_cursor(
    state: &mut ResourceState,
    write: &WriteRecord,
    detail: &Detail,
    findings: &mut Findings,
) {
    let Some(to) = detail.to.filter(|_| write.accepted) else {
        return;
    };
    let from = detail.from.unwrap_or(0);
    let sub = subscription(write, detail);
    let previous = state.cursor;
    let backwards = match previous {
        Some((high, _)) => to <= high,
        None => false,
    };
    if to <= from || backwards {
        let before = previous.map_or(String::new(), |(high, rev)| {
            format!(" (it had reached {high} at revision {rev})")
        });
        findings.push(
            CURSOR_NOT_MONOTONE,
            vec![sub.clone(), write.resource_id.clone()],
            format!(
                "subscription {sub}: {} moved the cursor from {from} to {to} at revision {}{before}",
                write.owner_id, write.revision
            ),
        );
    }
    state.cursor = Some(match previous {
        Some((high, rev)) if high >= to => (high, rev),
        _ => (to, write.revision),
    });
}

/// No accepted cursor write under a generation older than one already granted on the
/// cursor item.
pub(super) fn no_stale_cursor_write(
    state: &ResourceState,
    write: &WriteRecord,
    detail: &Detail,
    owners: &Owners,
    findings: &mut Findings,
) {
    let Some(held) = state.granted else { return };
    if !write.accepted || write.generation >= held.generation {
        return;
    }
    let sub = subscription(write, detail);
    let newer = owners.name(held.owner);
    findings.push(
        STALE_CURSOR_WRITE,
        vec![sub.clone(), write.owner_id.clone(), newer.to_owned()],
        format!(
            "subscription {sub}: {} moved the cursor under generation {} at revision {}, after generation {} had been granted to {newer} at revision {}",
            write.owner_id, write.generation, write.revision, held.generation, held.revision
        ),
    );
}
