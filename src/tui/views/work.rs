//! Work items: handler, state, owner, generation, attempts, uncertain attempts, next
//! eligibility, last failure and whether any live authority can run them. The title
//! counts the stranded items (the vocabulary's `stranded`: unfinished, and no running
//! authority may claim them, whether for their build or for their handler).

use super::super::snapshot::Snapshot;
use super::super::text::{clean, relative, short};
use super::super::theme::Role;
use super::{Cell, Column, Row, TableData, col, version};
use crate::clock::{Millis, format_duration};
use crate::foundation::timefmt::TimeFmt;
use crate::model::{Page, WorkItem, WorkState};
use crate::ops::claims::ClaimStanding;
use crate::ops::paused_handlers;
use crate::workflow::runnable::Standing;

pub const COLUMNS: &[Column] = &[
    col("id", 20, 0),
    col("kind", 8, 3),
    col("handler", 14, 3),
    col("state", 9, 0),
    col("owner", 12, 1),
    col("gen", 4, 1),
    col("att", 4, 1),
    col("unc", 3, 2),
    col("next", 10, 2),
    col("compat", 8, 0),
    col("last failure", 24, 4),
];

#[must_use]
pub fn state_role(state: WorkState) -> Role {
    match state {
        WorkState::Pending => Role::WorkPending,
        WorkState::Claimed => Role::WorkClaimed,
        WorkState::Retry => Role::WorkRetry,
        WorkState::Succeeded => Role::WorkSucceeded,
        WorkState::Failed => Role::WorkFailed,
    }
}

/// `yes`, `NO` (no live authority may run the item's key) or `?` (no live authority).
#[must_use]
pub fn compatible(snap: &Snapshot, compat: &str) -> (&'static str, bool) {
    if !snap.fleet.any_running() {
        ("?", true)
    } else if snap.fleet.compatible(compat) {
        ("yes", true)
    } else {
        ("NO", false)
    }
}

/// [`compatible`] for a work item, which also needs its handler: `no handler` when no live
/// authority has its handler at any version (see [`crate::workflow::runnable`]).
#[must_use]
pub fn runnable(snap: &Snapshot, item: &WorkItem) -> (&'static str, bool) {
    match compatible(snap, &item.compat) {
        ("NO", false)
            if snap.fleet.standing(&item.compat, &item.handler) == Standing::NoHandler =>
        {
            ("no handler", false)
        }
        other => other,
    }
}

#[must_use]
pub fn table(snap: &Snapshot, page: &Page<WorkItem>, fmt: TimeFmt) -> TableData {
    let now = fmt.now;
    let rows =
        page.rows
            .iter()
            .map(|w| {
                let (compat_text, ok) = runnable(snap, w);
                let incompatible = !ok && !w.state.is_terminal();
                let standing = ClaimStanding::of_work(w, now);
                let next = match (w.state, standing) {
                    (WorkState::Pending | WorkState::Retry, _) => {
                        relative(now, Some(w.next_eligible_at))
                    }
                    (_, Some(ClaimStanding::Held { expires_in_ms })) => {
                        format!("exp {}", format_duration(expires_in_ms))
                    }
                    _ => "-".into(),
                };
                // A lapsed claim is not held any more: say so instead of "claimed".
                let state = standing.and_then(ClaimStanding::expired_text);
                let failure = w
                    .last_failure
                    .as_ref()
                    .map_or_else(String::new, |f| format!("{}: {}", f.code, f.message));
                Row {
                    key: w.id.clone(),
                    cells: vec![
                        Cell::raw(&w.id, 80),
                        Cell::text(w.kind.as_str()),
                        Cell::raw(&w.handler, 80),
                        Cell::text(state.clone().unwrap_or_else(|| w.state_text().to_owned()))
                            .role(if incompatible {
                                Role::Incompatible
                            } else if state.is_some() {
                                Role::LeaseExpired
                            } else {
                                state_role(w.state)
                            }),
                        // Who holds it now, as `inspect work` says: a finished or
                        // waiting item's last owner is not its owner (the detail says it).
                        Cell::raw(w.current_owner().unwrap_or("-"), 40),
                        Cell::num(i64::try_from(w.generation).unwrap_or(i64::MAX)),
                        Cell::num(w.attempt_number),
                        Cell::num(w.uncertain_attempts)
                            .role_if(w.uncertain_attempts > 0, Role::Warning),
                        Cell::timed(next, w.next_eligible_at),
                        Cell::text(format!("{} {}", compat_text, short(&w.compat, 4)))
                            .role_if(incompatible, Role::Incompatible),
                        Cell::raw(&failure, 200).role(Role::WorkFailed),
                    ],
                    detail: detail(w, compat_text, fmt),
                    resource: Some(w.id.clone()),
                    handler: Some(w.handler.clone()),
                    version: version(w),
                    ..Row::default()
                }
            })
            .collect();
    let paused = &snap.overview.paused_handlers;
    let note = if paused.is_empty() {
        format!("{} stranded", snap.incompatible)
    } else {
        let handlers = match paused.len() {
            1 => "1 handler".to_owned(),
            n => format!("{n} handlers"),
        };
        format!(
            "{} stranded, paused {} ({handlers})",
            snap.incompatible,
            paused_handlers::waiting(paused),
        )
    };
    TableData::new(COLUMNS, rows, note)
}

fn detail(w: &WorkItem, compat_text: &str, fmt: TimeFmt) -> Vec<(String, String)> {
    let now = fmt.now;
    let opt = |v: Option<Millis>| v.map_or_else(|| "-".into(), |t| fmt.at(t));
    vec![
        ("id".into(), clean(&w.id, 500)),
        (
            "kind / state".into(),
            match ClaimStanding::of_work(w, now).and_then(ClaimStanding::expired_text) {
                Some(expired) => format!("{} / {} ({expired})", w.kind.as_str(), w.state.as_str()),
                None => format!("{} / {}", w.kind.as_str(), w.state_text()),
            },
        ),
        ("handler".into(), clean(&w.handler, 200)),
        (
            "owner / generation".into(),
            match (w.current_owner(), w.owner_id.as_deref()) {
                (Some(owner), _) => format!("{} / {}", clean(owner, 100), w.generation),
                (None, Some(last)) => {
                    format!("- (last {}) / {}", clean(last, 100), w.generation)
                }
                (None, None) => format!("- / {}", w.generation),
            },
        ),
        (
            "claimed / lease expires".into(),
            format!("{} / {}", opt(w.claimed_at), opt(w.lease_expires_at)),
        ),
        (
            "attempts".into(),
            format!(
                "{} of {} ({} uncertain: may have run)",
                w.attempt_number, w.max_attempts, w.uncertain_attempts
            ),
        ),
        // The wall time and how far it is, once (`fmt.at` says both).
        ("next eligible".into(), fmt.at(w.next_eligible_at)),
        ("last attempt".into(), opt(w.last_attempt_at)),
        (
            "last failure".into(),
            w.last_failure.as_ref().map_or_else(
                || "-".into(),
                |f| {
                    format!(
                        "{} {}: {}",
                        f.class.as_str(),
                        clean(&f.code, 80),
                        clean(&f.message, 1_000)
                    )
                },
            ),
        ),
        ("logical effect id".into(), clean(&w.logical_effect_id, 300)),
        ("idempotency key".into(), clean(&w.idempotency_key, 300)),
        (
            "compat".into(),
            format!("{} ({compat_text})", clean(&w.compat, 100)),
        ),
        ("payload".into(), clean(&w.payload, 2_000)),
        (
            "result".into(),
            clean(w.result.as_deref().unwrap_or("-"), 2_000),
        ),
        (
            "created / updated".into(),
            format!("{} / {}", fmt.at(w.created_at), fmt.at(w.updated_at)),
        ),
    ]
}
