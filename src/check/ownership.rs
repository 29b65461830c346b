//! Invariants 1 and 2 (docs/ARCHITECTURE.md#checker): two authorities never validly own the same
//! `(resourceId, generation)`, and a stale owner cannot commit after the generation
//! advances.

use super::Findings;
use super::codes::{
    FENCED_WITHOUT_TAKEOVER, GENERATION_NOT_INCREASING, SUPERSEDED_WRITE_ACCEPTED,
    TWO_OWNERS_ONE_GENERATION,
};
use super::history::{Mark, Owners, ResourceState, Suspect};
use crate::model::{Grant, WriteRecord};
use crate::workflow::engine::is_instance_resource;

/// At most this many suspect grants are resolved by reading their resource's grants again;
/// beyond that they are reported as not increasing without naming the earlier owner.
pub(super) const SUSPECT_LOOKUPS: usize = 64;

/// Invariant 1, on grants: every grant mints a generation strictly greater than every
/// earlier one of its resource, so no generation has two owners. A grant of the current
/// highest generation is decided here; one of an older generation becomes a [`Suspect`]
/// (the ledger keeps only the highest) and is decided by [`resolve_suspect`].
pub(super) fn one_owner_per_generation(
    state: &ResourceState,
    grant: &Grant,
    mark: Mark,
    owners: &Owners,
    suspects: &mut Vec<Suspect>,
    findings: &mut Findings,
) {
    let Some(held) = state.granted else { return };
    let resource = &grant.resource_id;
    let noun = state.noun.as_str();
    if mark.generation > held.generation {
        return;
    }
    if mark.generation < held.generation {
        suspects.push(Suspect {
            resource: resource.clone(),
            noun: state.noun,
            generation: mark.generation,
            owner: grant.owner_id.clone(),
            revision: mark.revision,
            newer: held,
        });
        return;
    }
    let first = owners.name(held.owner);
    if held.owner == mark.owner {
        findings.push(
            GENERATION_NOT_INCREASING,
            vec![resource.clone(), first.to_owned()],
            format!(
                "{noun} {resource} generation {} was granted to {first} twice, at revision {} and again at revision {}",
                mark.generation, held.revision, mark.revision
            ),
        );
    } else {
        findings.push(
            TWO_OWNERS_ONE_GENERATION,
            vec![resource.clone(), first.to_owned(), grant.owner_id.clone()],
            format!(
                "{noun} {resource} generation {} was granted to {first} at revision {} and to {} at revision {}",
                mark.generation, held.revision, grant.owner_id, mark.revision
            ),
        );
    }
}

/// Invariant 1, decided late: `earlier` is the first grant of the suspect's generation
/// before it, if any (read back from the store).
pub(super) fn resolve_suspect(
    suspect: &Suspect,
    earlier: Option<&Grant>,
    owners: &Owners,
    findings: &mut Findings,
) {
    let Suspect {
        resource,
        generation,
        owner,
        revision,
        newer,
        ..
    } = suspect;
    let noun = suspect.noun.as_str();
    match earlier {
        Some(first) if first.owner_id != *owner => findings.push(
            TWO_OWNERS_ONE_GENERATION,
            vec![resource.clone(), first.owner_id.clone(), owner.clone()],
            format!(
                "{noun} {resource} generation {generation} was granted to {} at revision {} and to {owner} at revision {revision}",
                first.owner_id, first.revision
            ),
        ),
        _ => findings.push(
            GENERATION_NOT_INCREASING,
            vec![resource.clone(), owner.clone()],
            format!(
                "{noun} {resource} generation {generation} was granted to {owner} at revision {revision}, after generation {} had been granted to {} at revision {}",
                newer.generation,
                owners.name(newer.owner),
                newer.revision
            ),
        ),
    }
}

/// Invariant 1, on writes: an accepted write under the current generation is made by that
/// generation's grantee — anyone else writing under it is a second owner.
pub(super) fn writer_holds_the_grant(
    state: &ResourceState,
    write: &WriteRecord,
    mark: Mark,
    owners: &Owners,
    findings: &mut Findings,
) {
    let Some(held) = state.granted else { return };
    if !write.accepted || mark.generation != held.generation || mark.owner == held.owner {
        return;
    }
    let resource = &write.resource_id;
    let grantee = owners.name(held.owner);
    findings.push(
        TWO_OWNERS_ONE_GENERATION,
        vec![resource.clone(), grantee.to_owned(), write.owner_id.clone()],
        format!(
            "{} {resource} generation {} was granted to {grantee} at revision {}, but {} had a {} accepted under it at revision {}",
            state.noun.as_str(),
            held.generation,
            held.revision,
            write.owner_id,
            write.verb,
            write.revision
        ),
    );
}

/// Expiry alone fences nothing: a refused write by the grantee of a work item's current
/// generation (fenced, or told the item had ended), the item still at that generation,
/// needs a cause in the history — the claim ended by its holder or an operator. Without
/// one, something settled the claim without taking it over.
pub(super) fn fenced_only_by_a_takeover(
    state: &ResourceState,
    write: &WriteRecord,
    mark: Mark,
    owners: &Owners,
    findings: &mut Findings,
) {
    let Some(held) = state.granted else { return };
    let refused_by_the_rule = matches!(
        write.refusal.as_deref(),
        Some("WORK_FENCED" | "already-terminal")
    );
    // The item still at the presented generation when it refused: nothing minted a newer
    // one (a takeover, a force-release, an accepted rewind's raise). Records from before
    // the holder was kept cannot be judged.
    let unmoved = write
        .holder
        .as_ref()
        .is_some_and(|h| h.generation == write.generation);
    if write.accepted
        || !refused_by_the_rule
        || !unmoved
        || state.noun != super::history::Noun::Work
        || is_instance_resource(&write.resource_id)
        || mark.generation != held.generation
        || mark.owner != held.owner
        || state.ended == Some(held.generation)
    {
        return;
    }
    let resource = &write.resource_id;
    let owner = owners.name(held.owner);
    findings.push(
        FENCED_WITHOUT_TAKEOVER,
        vec![resource.clone(), owner.to_owned()],
        format!(
            "work {resource}: {owner}'s {} under generation {} was refused {} at revision {}, but nobody took the item over and the claim was never ended",
            write.verb,
            held.generation,
            write.refusal.as_deref().unwrap_or("-"),
            write.revision
        ),
    );
}

/// Invariant 2: no accepted write (completion, retry, renewal, release…) under a generation
/// older than one granted at an earlier revision. Cursor writes are judged by
/// [`super::cursors::no_stale_cursor_write`] instead, under their own code.
pub(super) fn no_superseded_write(
    state: &ResourceState,
    write: &WriteRecord,
    owners: &Owners,
    findings: &mut Findings,
) {
    let Some(held) = state.granted else { return };
    if !write.accepted || write.generation >= held.generation {
        return;
    }
    let resource = &write.resource_id;
    let newer = owners.name(held.owner);
    findings.push(
        SUPERSEDED_WRITE_ACCEPTED,
        vec![resource.clone(), write.owner_id.clone(), newer.to_owned()],
        format!(
            "{} {resource}: {} by {} under generation {} was accepted at revision {}, after generation {} had been granted to {newer} at revision {}",
            state.noun.as_str(),
            write.verb,
            write.owner_id,
            write.generation,
            write.revision,
            held.generation,
            held.revision
        ),
    );
}
