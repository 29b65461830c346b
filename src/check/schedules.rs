//! Invariant 3 (docs/ARCHITECTURE.md#checker): one logical schedule firing never becomes two because N
//! authorities poll. Firing ids are derived — `"<scheduleId>@<dueInstant>"` — so an item
//! whose id is the canonical derivation is unique per `(schedule, instant)` by the store's
//! primary key; only non-canonical ids can alias, and those are looked up.

use std::collections::HashMap;

use super::Findings;
use super::codes::{
    SCHEDULE_FIRED_TWICE, SCHEDULE_FIRING_DUPLICATED, SCHEDULE_FIRING_ID_MALFORMED,
};
use super::history::{DoubleTerminal, Owners};
use crate::clock::{Millis, format_instant};
use crate::error::Result;
use crate::model::WorkItem;
use crate::model::schedule::firing_id;

/// Non-canonical firing ids seen so far, by the `(schedule, instant)` they name (rare: a
/// healthy store has none).
#[derive(Debug, Default)]
pub(super) struct Firings(HashMap<(String, Millis), String>);

/// `"<scheduleId>@<dueInstant>"` split at the last `@`.
pub(super) fn parse_firing_id(id: &str) -> Option<(&str, Millis)> {
    let (schedule, due) = id.rsplit_once('@')?;
    if schedule.is_empty() {
        return None;
    }
    Some((schedule, due.parse().ok()?))
}

/// A schedule-kind item's id is the derived firing id of one `(schedule, instant)`, and no
/// other item names the same pair. `canonical_exists` asks the store whether the canonical
/// id of a non-canonical one exists.
pub(super) fn firing_id_is_derived(
    item: &WorkItem,
    seen: &mut Firings,
    canonical_exists: impl Fn(&str) -> Result<bool>,
    findings: &mut Findings,
) -> Result<()> {
    let Some((schedule, due)) = parse_firing_id(&item.id) else {
        findings.push(
            SCHEDULE_FIRING_ID_MALFORMED,
            vec![item.id.clone()],
            format!(
                "schedule firing {} does not have the derived form <scheduleId>@<dueInstant>",
                item.id
            ),
        );
        return Ok(());
    };
    let canonical = firing_id(schedule, due);
    if canonical == item.id {
        return Ok(());
    }
    let other = if canonical_exists(&canonical)? {
        Some(canonical.clone())
    } else {
        seen.0.get(&(schedule.to_owned(), due)).cloned()
    };
    if let Some(first) = other {
        findings.push(
            SCHEDULE_FIRING_DUPLICATED,
            vec![first.clone(), item.id.clone()],
            format!(
                "schedule {schedule} has two firings for the instant {due} ({}): {first} and {}",
                format_instant(due),
                item.id
            ),
        );
    } else {
        findings.push(
            SCHEDULE_FIRING_ID_MALFORMED,
            vec![item.id.clone()],
            format!(
                "schedule firing {} is not the derived id {canonical} of its schedule and instant",
                item.id
            ),
        );
        seen.0.insert((schedule.to_owned(), due), item.id.clone());
    }
    Ok(())
}

/// At most one accepted `complete` per firing id.
pub(super) fn one_firing_per_instant(
    double: &DoubleTerminal,
    owners: &Owners,
    findings: &mut Findings,
) {
    let DoubleTerminal {
        resource,
        first: (a, _),
        second: (b, _),
    } = double;
    let (first, second) = (owners.name(a.owner), owners.name(b.owner));
    let when = parse_firing_id(resource).map_or(String::new(), |(s, due)| {
        format!(" (schedule {s} at {})", format_instant(due))
    });
    findings.push(
        SCHEDULE_FIRED_TWICE,
        vec![resource.clone(), first.to_owned(), second.to_owned()],
        format!(
            "schedule firing {resource}{when} was completed by {first} (generation {}) at revision {} and again by {second} (generation {}) at revision {}",
            a.generation, a.revision, b.generation, b.revision
        ),
    );
}

#[cfg(test)]
mod tests {
    use super::parse_firing_id;

    #[test]
    fn firing_ids_split_at_the_last_at_sign() {
        assert_eq!(parse_firing_id("tick@60000"), Some(("tick", 60_000)));
        assert_eq!(parse_firing_id("team@corp@-5"), Some(("team@corp", -5)));
        assert_eq!(parse_firing_id("@5"), None);
        assert_eq!(parse_firing_id("tick"), None);
        assert_eq!(parse_firing_id("tick@soon"), None);
    }
}
