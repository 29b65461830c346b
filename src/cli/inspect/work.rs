//! `inspect work`: durable work items (effects, schedule firings, cursors) through the
//! store's own filtered read (`state:`, `kind:`, `owner:`, `compat:`, an id prefix); a
//! claim that lapsed unreclaimed says for how long (see [`crate::ops::claims`]).

use std::io::Write;

use serde::Serialize;

use super::render::ViewRow;
use super::{Ctx, Failure};
use crate::cli::output::{short, when, yes_no};
use crate::clock::Millis;
use crate::foundation::text_cell::{cell, cell_max, opt_cell};
use crate::model::{Ending, Failure as WorkFailure, Page, WorkState};
use crate::ops::claims::{self, ClaimStanding};
use crate::ops::filter::Filter;
use crate::ops::live_builds::LiveBuilds;
use crate::workflow::runnable::Standing;

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct WorkRow {
    id: String,
    kind: &'static str,
    state: &'static str,
    /// The state as listed: a failed item says why it ended.
    #[serde(skip)]
    state_text: String,
    /// Why a failed item ended (`retries-exhausted`, `terminal`, `uncertain-exhausted`,
    /// `discarded`); null for any other state.
    ending: Option<&'static str>,
    /// Failed because every attempt lapsed without an outcome (`uncertain-exhausted`).
    dead_letter: bool,
    handler: String,
    owner_id: Option<String>,
    generation: u64,
    lease_expires_at: Option<Millis>,
    /// Whether it is claimed and its claim lapsed without a reclaim (`leaseExpiresAt`
    /// says since when).
    claim_expired: bool,
    /// For how long, in ms (the table says it; the JSON keeps absolute instants).
    #[serde(skip)]
    awaiting_reclaim_ms: Option<Millis>,
    attempt_number: u32,
    uncertain_attempts: u32,
    max_attempts: u32,
    last_attempt_at: Option<Millis>,
    next_eligible_at: Millis,
    last_failure: Option<WorkFailure>,
    logical_effect_id: String,
    idempotency_key: String,
    compat: String,
    compatible: bool,
    /// Compatible, but no running authority has its handler: it waits, pending.
    no_handler: bool,
    created_at: Millis,
    updated_at: Millis,
}

impl ViewRow for WorkRow {
    const COLUMNS: &'static [&'static str] = &[
        "ID",
        "KIND",
        "STATE",
        "HANDLER",
        "OWNER",
        "GEN",
        "ATTEMPTS",
        "UNCERTAIN",
        "NEXT",
        "COMPAT",
        "COMPATIBLE",
    ];

    fn cells(&self, now: Millis) -> Vec<String> {
        let w = self;
        let next = match (w.state, w.lease_expires_at) {
            ("claimed", Some(at)) => format!("lease {}", when(at, now)),
            ("pending" | "retry", _) => when(w.next_eligible_at, now),
            _ => "-".into(),
        };
        vec![
            cell(&w.id),
            w.kind.into(),
            w.awaiting_reclaim_ms
                .map_or_else(|| w.state_text.clone(), claims::expired_text),
            cell_max(&w.handler, 24),
            opt_cell(w.owner_id.as_deref()),
            w.generation.to_string(),
            if w.max_attempts == u32::MAX {
                format!("{}/∞", w.attempt_number)
            } else {
                format!("{}/{}", w.attempt_number, w.max_attempts)
            },
            w.uncertain_attempts.to_string(),
            next,
            short(&w.compat),
            if w.no_handler {
                "no handler".into()
            } else {
                yes_no(w.compatible)
            },
        ]
    }
}

pub(super) fn print(
    ctx: &Ctx<'_>,
    filter: &Filter,
    out: &mut dyn Write,
) -> Result<Option<String>, Failure> {
    let live = LiveBuilds::load(ctx.store, ctx.now)?;
    let Page { rows, next } = match live.work_filter(ctx.store, filter)? {
        Some(filter) => ctx.store.list_work(&filter, &ctx.page)?,
        None => Page {
            rows: Vec::new(),
            next: None,
        },
    };
    let rows: Vec<WorkRow> = rows
        .into_iter()
        .map(|w| WorkRow {
            compatible: live.compatible(&w.compat),
            no_handler: !w.state.is_terminal()
                && live.standing(&w.compat, &w.handler) == Standing::NoHandler,
            kind: w.kind.as_str(),
            state: w.state.as_str(),
            state_text: w.state_text().to_owned(),
            ending: w.ending().map(Ending::code),
            dead_letter: w.is_dead_letter(),
            claim_expired: ClaimStanding::of_work(&w, ctx.now)
                .is_some_and(ClaimStanding::is_expired),
            awaiting_reclaim_ms: ClaimStanding::of_work(&w, ctx.now)
                .and_then(ClaimStanding::lapsed_ms),
            owner_id: w.current_owner().map(str::to_owned),
            lease_expires_at: (w.state == WorkState::Claimed)
                .then_some(w.lease_expires_at)
                .flatten(),
            id: w.id,
            handler: w.handler,
            generation: w.generation,
            attempt_number: w.attempt_number,
            uncertain_attempts: w.uncertain_attempts,
            max_attempts: w.max_attempts,
            last_attempt_at: w.last_attempt_at,
            next_eligible_at: w.next_eligible_at,
            last_failure: w.last_failure,
            logical_effect_id: w.logical_effect_id,
            idempotency_key: w.idempotency_key,
            compat: w.compat,
            created_at: w.created_at,
            updated_at: w.updated_at,
        })
        .collect();
    ctx.emit(out, &rows, next)
}
