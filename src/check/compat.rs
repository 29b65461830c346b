//! Invariant 7 (docs/ARCHITECTURE.md#checker): an incompatible / older-build authority never executes
//! new-schema work.

use super::Findings;
use super::codes::INCOMPATIBLE_EXECUTION;
use crate::model::Grant;

/// A work claim carries both compat digests — the member of the claimer's key set it was
/// granted under, and the item's — and they are equal: claiming is the start of execution,
/// so a claim by code that may not run the item is an incompatible execution. (Lease
/// grants carry none and are not work.)
pub(super) fn no_incompatible_execution(grant: &Grant, findings: &mut Findings) {
    let (Some(owner_compat), Some(item_compat)) = (&grant.owner_compat, &grant.item_compat) else {
        return;
    };
    if owner_compat == item_compat {
        return;
    }
    findings.push(
        INCOMPATIBLE_EXECUTION,
        vec![grant.resource_id.clone(), grant.owner_id.clone()],
        format!(
            "work {} (key {item_compat}) was claimed by {} under key {owner_compat} at revision {} (generation {})",
            grant.resource_id, grant.owner_id, grant.revision, grant.generation
        ),
    );
}
