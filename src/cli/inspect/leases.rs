//! `inspect leases`: what is held and by whom, as the dashboard's leases view lists it
//! ([`crate::ops::holds`]): the named leases by resource, then the work items claimed now,
//! with owner, generation, status and expiry; a lapsed, unreclaimed lease or claim says for
//! how long (see [`crate::ops::claims`]).

use std::io::Write;

use serde::Serialize;

use super::render::ViewRow;
use super::{Ctx, Failure};
use crate::cli::output::when;
use crate::clock::Millis;
use crate::foundation::text_cell::cell;
use crate::model::{Lease, WorkItem};
use crate::ops::claims::{self, ClaimStanding};
use crate::ops::holds::Holds;

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct LeaseRow {
    resource_id: String,
    /// `lease` for a named lease, else the claimed item's kind.
    kind: &'static str,
    /// The claimed item's handler (a named lease has none).
    #[serde(skip_serializing_if = "Option::is_none")]
    handler: Option<String>,
    owner_id: String,
    generation: u64,
    status: &'static str,
    acquired_at: Millis,
    expires_at: Millis,
    released_at: Option<Millis>,
    /// Set while the lease has lapsed without a reclaim: for how long, in ms (the table
    /// says it; the JSON keeps absolute instants and `status`).
    #[serde(skip)]
    awaiting_reclaim_ms: Option<Millis>,
    checkpoint_generation: Option<u64>,
}

impl ViewRow for LeaseRow {
    const COLUMNS: &'static [&'static str] = &[
        "RESOURCE",
        "KIND",
        "OWNER",
        "GEN",
        "STATUS",
        "EXPIRES",
        "ACQUIRED",
        "CHECKPOINT",
    ];

    fn cells(&self, now: Millis) -> Vec<String> {
        let l = self;
        vec![
            cell(&l.resource_id),
            l.kind.to_owned(),
            cell(&l.owner_id),
            l.generation.to_string(),
            l.awaiting_reclaim_ms
                .map_or_else(|| l.status.into(), claims::expired_text),
            when(l.expires_at, now),
            when(l.acquired_at, now),
            l.checkpoint_generation
                .map_or_else(|| "-".into(), |g| format!("gen {g}")),
        ]
    }
}

pub(super) fn print(ctx: &Ctx<'_>, out: &mut dyn Write) -> Result<Option<String>, Failure> {
    let holds = Holds::read(ctx.store, &ctx.page)?;
    let next = (holds.len() >= ctx.page.limit.max(1))
        .then(|| holds.ends().1)
        .flatten();
    let rows: Vec<LeaseRow> = holds
        .leases
        .iter()
        .map(|l| lease_row(l, ctx.now))
        .chain(holds.claims.iter().filter_map(|w| claim_row(w, ctx.now)))
        .collect();
    ctx.emit(out, &rows, next)
}

fn lease_row(l: &Lease, now: Millis) -> LeaseRow {
    LeaseRow {
        status: l.status(now).as_str(),
        awaiting_reclaim_ms: ClaimStanding::of_lease(l, now).and_then(ClaimStanding::lapsed_ms),
        checkpoint_generation: l.checkpoint.as_ref().map(|c| c.generation),
        resource_id: l.resource_id.clone(),
        kind: "lease",
        handler: None,
        owner_id: l.owner_id.clone(),
        generation: l.generation,
        acquired_at: l.acquired_at,
        expires_at: l.expires_at,
        released_at: l.released_at,
    }
}

/// A claimed item as a lease on it (none for an item no longer claimed).
fn claim_row(w: &WorkItem, now: Millis) -> Option<LeaseRow> {
    let standing = ClaimStanding::of_work(w, now)?;
    Some(LeaseRow {
        status: if standing.is_expired() {
            "expired"
        } else {
            "live"
        },
        awaiting_reclaim_ms: standing.lapsed_ms(),
        // An item's saved checkpoint is not generation-stamped the way a lease's is.
        checkpoint_generation: None,
        resource_id: w.id.clone(),
        kind: w.kind.as_str(),
        handler: Some(w.handler.clone()),
        owner_id: w.owner_id.clone().unwrap_or_default(),
        generation: w.generation,
        acquired_at: w.claimed_at.unwrap_or_default(),
        expires_at: w.lease_expires_at.unwrap_or_default(),
        released_at: None,
    })
}
