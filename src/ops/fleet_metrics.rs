//! `leasehold inspect metrics`: the store's fleet-level facts as OpenMetrics text, every
//! name under `leasehold_fleet_`. An authority's `/metrics` counts what that one authority
//! did; this page counts what the whole fleet did (its `leasehold_fleet_claims_total` is
//! every authority's claims), so the two never share a name: a Prometheus that scrapes
//! both and sums a family over every target counts each fact once, where one name for both
//! would count every authority's claims twice.

use std::collections::BTreeMap;

use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::registry::Registry;

use crate::authority::metrics::{Labeled, text};
use crate::clock::Millis;
use crate::error::Result;
use crate::model::{PageRequest, WorkGroup, WorkKind, WorkState};
use crate::rules::lateness;
use crate::rules::liveness::{Liveness, liveness};
use crate::store::Store;

/// What every name on this page starts with (then `_`); no name on an authority's page
/// does.
const PREFIX: &str = "leasehold_fleet";

/// Registrations read at most.
const AUTHORITIES: usize = 10_000;

/// The fleet page for `store` at `now`.
///
/// # Errors
/// A store failure.
pub fn render(store: &Store, now: Millis) -> Result<String> {
    let overview = store.overview()?;
    let mut r = Registry::with_prefix(PREFIX);
    r.register(
        "claims",
        "Claims every authority took (the store's count)",
        ConstCounter::new(overview.claims),
    );
    r.register(
        "store_writes",
        "Fenced writes the store accepted",
        ConstCounter::new(overview.writes_accepted),
    );
    r.register(
        "store_refused_writes",
        "Writes the store refused (fenced, already terminal, …)",
        ConstCounter::new(overview.writes_refused),
    );
    r.register(
        "store_revision",
        "The store's revision",
        ConstGauge::new(i64::try_from(overview.revision).unwrap_or(i64::MAX)),
    );
    // Every kind in every state from the first scrape, at zero where there is none, so a
    // series never appears out of nowhere (the first discard, the first failure).
    let mut work: BTreeMap<(String, String), u64> = (WorkKind::ALL.iter())
        .flat_map(|kind| {
            let states = WorkState::ALL
                .iter()
                .map(|s| WorkGroup::count_name(*s, false));
            (states.chain([WorkGroup::count_name(WorkState::Failed, true)]))
                .map(|state| ((kind.as_str().to_owned(), state.to_owned()), 0))
        })
        .collect();
    for c in &overview.work {
        *work
            .entry((c.kind.as_str().to_owned(), c.name().to_owned()))
            .or_default() += c.count;
    }
    r.register(
        "work",
        "Work items by kind and state (failed items a person discarded as `discarded`)",
        Labeled::gauges(
            work.into_iter()
                .map(|((kind, state), n)| (vec![("kind", kind), ("state", state)], n))
                .collect(),
        ),
    );
    r.register(
        "workflows",
        "Workflow instances by status",
        Labeled::gauges(
            overview
                .workflows
                .iter()
                .map(|(status, n)| (vec![("status", status.clone())], *n))
                .collect(),
        ),
    );
    r.register(
        "events",
        "Event ingestions by dedup outcome",
        Labeled::counters(
            overview
                .events
                .iter()
                .map(|(outcome, n)| (vec![("outcome", outcome.clone())], *n))
                .collect(),
        ),
    );
    let mut states: BTreeMap<&'static str, u64> =
        Liveness::ALL.iter().map(|l| (l.as_str(), 0)).collect();
    for a in store
        .list_authorities(&PageRequest::first(AUTHORITIES))?
        .rows
    {
        *states.entry(liveness(&a, now).as_str()).or_default() += 1;
    }
    r.register(
        "authorities",
        "Registered authorities by liveness",
        Labeled::gauges(
            states
                .into_iter()
                .map(|(state, n)| (vec![("state", state.to_owned())], n))
                .collect(),
        ),
    );
    let late = lateness::by_kind(&lateness::lanes(&overview.waiting_lanes, now));
    r.register(
        "late_seconds",
        "How late the oldest due item of each kind is",
        Labeled::gauges(
            late.iter()
                .map(|k| {
                    let secs = u64::try_from(k.late_ms / 1_000).unwrap_or(0);
                    (vec![("kind", k.kind.as_str().to_owned())], secs)
                })
                .collect(),
        ),
    );
    Ok(text(&r))
}
