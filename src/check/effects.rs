//! Invariant 5 (docs/ARCHITECTURE.md#checker): an effect retry never creates a second
//! `logicalEffectId` — every write on one work item carries the same `logicalEffectId` and
//! `idempotencyKey`, the item row keeps them — and an item is finished at most once.

use super::Findings;
use super::codes::{LOGICAL_EFFECT_ID_CHANGED, TERMINAL_WRITE_TWICE};
use super::history::{Detail, DoubleTerminal, EffectIds, Mark, Owners, ResourceState};
use crate::model::{WorkItem, WriteRecord, WriteVerb};

fn ids_sentence(logical: &str, key: &str) -> String {
    if logical == key {
        format!("logicalEffectId {logical}")
    } else {
        format!("logicalEffectId {logical} / idempotencyKey {key}")
    }
}

/// Every write detail for one work id (accepted or refused) carries the ids of the first
/// one. A change is reported once and then becomes the reference.
pub(super) fn one_logical_effect_id(
    state: &mut ResourceState,
    write: &WriteRecord,
    detail: &Detail,
    findings: &mut Findings,
) {
    let Some(logical) = &detail.logical_effect_id else {
        return;
    };
    let key = detail.idempotency_key.as_deref().unwrap_or(logical);
    let resource = &write.resource_id;
    let Some(first) = &state.effect else {
        state.effect = Some(EffectIds::new(resource, logical, key, write.revision));
        return;
    };
    let (first_logical, first_key) = (first.logical(resource), first.idempotency(resource));
    if first_logical == logical && first_key == key {
        return;
    }
    findings.push(
        LOGICAL_EFFECT_ID_CHANGED,
        vec![resource.clone(), first_logical.to_owned(), logical.clone()],
        format!(
            "work {resource} carried {} at revision {} but {} on a {} by {} at revision {}",
            ids_sentence(first_logical, first_key),
            first.revision,
            ids_sentence(logical, key),
            write.verb,
            write.owner_id,
            write.revision
        ),
    );
    state.effect = Some(EffectIds::new(resource, logical, key, write.revision));
}

/// The item row carries the ids its writes carried (a retry that re-created the item with
/// new ids would show here).
pub(super) fn item_keeps_its_effect_ids(
    item: &WorkItem,
    state: &ResourceState,
    findings: &mut Findings,
) {
    let Some(seen) = &state.effect else { return };
    let (logical, key) = (seen.logical(&item.id), seen.idempotency(&item.id));
    if logical == item.logical_effect_id && key == item.idempotency_key {
        return;
    }
    findings.push(
        LOGICAL_EFFECT_ID_CHANGED,
        vec![
            item.id.clone(),
            logical.to_owned(),
            item.logical_effect_id.clone(),
        ],
        format!(
            "work {} was written with {} (last at revision {}) but the item now carries {}",
            item.id,
            ids_sentence(logical, key),
            seen.revision,
            ids_sentence(&item.logical_effect_id, &item.idempotency_key)
        ),
    );
}

/// An item gets at most one accepted terminal write (a `complete`, or a `fail` that left it
/// `failed`) per attempt budget: an operator's requeue starts a new one
/// ([`reopened_by_requeue`]). The first is remembered; a second is returned for classification by kind
/// (a schedule firing completed twice is reported by `schedules`, anything else by
/// [`report_terminal_twice`]).
pub(super) fn one_terminal_write(
    state: &mut ResourceState,
    write: &WriteRecord,
    detail: &Detail,
    mark: Mark,
) -> Option<DoubleTerminal> {
    let terminal = matches!(detail.state.as_deref(), Some("succeeded" | "failed"));
    if !write.accepted || !terminal || !matches!(write.verb, WriteVerb::Complete | WriteVerb::Fail)
    {
        return None;
    }
    let this = (mark, write.verb == WriteVerb::Complete);
    match state.terminal {
        None => {
            state.terminal = Some(this);
            None
        }
        Some(first) => Some(DoubleTerminal {
            resource: write.resource_id.clone(),
            first,
            second: this,
        }),
    }
}

/// An operator's requeue reopens a failed item: the terminal write it had is history, and
/// the first terminal write of its fresh attempt budget is not a second one. (Operator
/// writes hold no grant, so the ownership rules do not apply to them.)
pub(super) fn reopened_by_requeue(state: &mut ResourceState, write: &WriteRecord) {
    if write.accepted && write.verb == WriteVerb::Requeue {
        state.terminal = None;
    }
}

fn verb(complete: bool) -> &'static str {
    if complete { "completed" } else { "failed" }
}

/// Reports an item finished twice.
pub(super) fn report_terminal_twice(
    double: &DoubleTerminal,
    owners: &Owners,
    findings: &mut Findings,
) {
    let DoubleTerminal {
        resource,
        first: (a, a_complete),
        second: (b, b_complete),
    } = double;
    let (first, second) = (owners.name(a.owner), owners.name(b.owner));
    findings.push(
        TERMINAL_WRITE_TWICE,
        vec![resource.clone(), first.to_owned(), second.to_owned()],
        format!(
            "work {resource} was {} by {first} (generation {}) at revision {}, and then {} by {second} (generation {}) at revision {}",
            verb(*a_complete),
            a.generation,
            a.revision,
            verb(*b_complete),
            b.generation,
            b.revision
        ),
    );
}
