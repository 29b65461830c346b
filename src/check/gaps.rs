//! Where the history cannot be complete. Every grant mints its resource's previous
//! generation plus one (or the first generation of a later store epoch), and every accepted
//! write is made under a generation that was granted; so inside the revisions the history
//! covers, a generation skipped between two grants, or an accepted write under a
//! generation with no grant, means records are missing — and a clean verdict over that
//! history would prove nothing.

use super::history::ResourceState;
use super::{Findings, gap_codes};
use crate::model::{Grant, WriteRecord};
use crate::store::RETENTION;
use crate::store::epoch::EPOCH_SHIFT;

/// The first revision whose grants and writes the store still keeps when the history is
/// read through `through` and retention has marked `kept_from` (0 when nothing was ever
/// trimmed): everything from here on must be present. The one place the start of the
/// checked range is decided.
#[must_use]
pub fn history_start(through: u64, kept_from: u64) -> u64 {
    kept_from.max(through.saturating_sub(RETENTION.history_revisions) + 1)
}

/// The store epoch a generation was minted in.
fn epoch_of(generation: u64) -> u64 {
    generation >> EPOCH_SHIFT
}

/// The generation a grant of a resource whose history starts inside the range must carry
/// first: the first one of its epoch.
fn is_first_of_its_epoch(generation: u64) -> bool {
    generation & ((1 << EPOCH_SHIFT) - 1) == 1
}

/// A grant that does not follow its resource's previous grant: generations in between
/// were granted with no record. A resource first seen in the range (when the range starts
/// at the store's first revision) must start at its epoch's first generation. A lower or
/// equal generation is the ownership invariants' business, not a gap.
pub(super) fn grant_follows(state: &ResourceState, grant: &Grant, start: u64, gaps: &mut Findings) {
    if grant.revision < start {
        return;
    }
    let g = grant.generation;
    let resource = &grant.resource_id;
    let missing = match state.granted {
        Some(prev) if g > prev.generation + 1 && epoch_of(g) == epoch_of(prev.generation) => {
            Some((prev.generation + 1, prev.revision))
        }
        None if start == 1 && !is_first_of_its_epoch(g) => Some((1, 0)),
        _ => None,
    };
    if let Some((from, after)) = missing {
        gaps.push(
            gap_codes::HISTORY_GAP,
            vec![resource.clone(), grant.owner_id.clone()],
            format!(
                "{resource}: generation {g} was granted to {} at revision {}, but no grant of generation {from} to {} is recorded between revisions {after} and {}",
                grant.owner_id,
                grant.revision,
                g - 1,
                grant.revision
            ),
        );
    }
}

/// An accepted write under a generation its resource was never granted in the range.
/// Refused writes may present any generation; an operator's triage has no grant behind it.
pub(super) fn write_was_granted(
    state: &ResourceState,
    write: &WriteRecord,
    start: u64,
    gaps: &mut Findings,
) {
    if !write.accepted || write.verb.by_operator() || write.revision < start {
        return;
    }
    let granted = state.granted.map(|m| m.generation);
    let unknown = match granted {
        Some(g) => write.generation > g,
        None => start == 1,
    };
    if unknown {
        let resource = &write.resource_id;
        gaps.push(
            gap_codes::HISTORY_GAP,
            vec![resource.clone(), write.owner_id.clone()],
            format!(
                "{resource}: a {} by {} under generation {} was accepted at revision {}, but no grant of that generation is recorded",
                write.verb, write.owner_id, write.generation, write.revision
            ),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_range_starts_at_the_oldest_revision_retention_keeps() {
        assert_eq!(history_start(0, 0), 1);
        assert_eq!(history_start(RETENTION.history_revisions, 0), 1);
        assert_eq!(history_start(RETENTION.history_revisions + 5, 0), 6);
        assert_eq!(history_start(100, 40), 40);
    }

    #[test]
    fn an_epoch_starts_at_its_first_generation() {
        assert!(is_first_of_its_epoch(1));
        assert!(is_first_of_its_epoch((3 << EPOCH_SHIFT) + 1));
        assert!(!is_first_of_its_epoch(2));
        assert!(!is_first_of_its_epoch(3 << EPOCH_SHIFT));
    }
}
