//! `inspect leases`: leases by resource, with owner, generation, status and expiry; a
//! lapsed, unreclaimed lease says for how long (see [`crate::ops::claims`]).

use std::io::Write;

use serde::Serialize;

use super::render::ViewRow;
use super::{Ctx, Failure};
use crate::cli::output::when;
use crate::clock::Millis;
use crate::foundation::text_cell::cell;
use crate::model::Page;
use crate::ops::claims::{self, ClaimStanding};

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct LeaseRow {
    resource_id: String,
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
    let Page { rows, next } = ctx.store.list_leases(&ctx.page)?;
    let rows: Vec<LeaseRow> = rows
        .into_iter()
        .map(|l| LeaseRow {
            status: l.status(ctx.now).as_str(),
            awaiting_reclaim_ms: ClaimStanding::of_lease(&l, ctx.now)
                .and_then(ClaimStanding::lapsed_ms),
            checkpoint_generation: l.checkpoint.as_ref().map(|c| c.generation),
            resource_id: l.resource_id,
            owner_id: l.owner_id,
            generation: l.generation,
            acquired_at: l.acquired_at,
            expires_at: l.expires_at,
            released_at: l.released_at,
        })
        .collect();
    ctx.emit(out, &rows, next)
}
