//! `leasehold seed --store STORE [--effects N] [--workflows N] [--schedules N]
//! [--subscriptions N] [--events N] [--seed S] [--handler-version V]`.
//!
//! Fills a store with a realistic mixed workload, every item stamped with the key of its
//! handler at the version `--handler-version` gives (default: what the running authorities
//! register, else the built-in 1.0.0; see [`super::handler_version`]): outbox effects with varied
//! payloads (some with explicit idempotency keys, some delayed), interval schedules with
//! each catch-up policy, subscriptions over event types, and external events through
//! [`crate::Store::ingest`] — fresh ones, duplicates, one conflicting re-delivery and some
//! without ids. Ids come from the seeded RNG (`--seed`, printed), so a second run adds more
//! items; re-running with the same seed offers the same ids again and the store's
//! idempotent enqueue leaves them alone.
//!
//! The `default` demo workload (`leasehold authority --workload default`) must register a
//! handler for every name in [`SEED_HANDLERS`].

use std::collections::BTreeMap;
use std::io::Write;

use clap::Args;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use serde_json::json;

use super::handler_version::HandlerVersionArg;
use super::{CliResult, StoreArg};
use crate::authority::workload::ACTION_HANDLERS;
use crate::clock::Millis;
use crate::foundation::progress::Progress;
use crate::foundation::text_cell::cell_max;
use crate::model::HandlerVersion;
use crate::model::event::NewEvent;
use crate::model::schedule::{CatchUp, Trigger};
use crate::model::work::NewWork;
use crate::model::{DedupOutcome, HandlerKeys};
use crate::store::Store;
use crate::store::url::OpenMode;
use crate::workflow::engine::NewInstance;
use crate::workflow::{Catalog, SHIPPED_DEFINITIONS};

/// Handlers for the outbox effects seed creates, with what each is meant to do.
pub const EFFECT_HANDLERS: [(&str, &str); 4] = [
    ("send-email", "sends a templated email; fast, rarely fails"),
    (
        "charge-card",
        "charges a card with an explicit idempotency key; occasionally declined (terminal)",
    ),
    ("sync-crm", "pushes account fields to a CRM; slower"),
    (
        "flaky-call",
        "calls a partner API that fails retryably about a third of the time",
    ),
];

/// The handler of every schedule firing seed creates.
pub const SCHEDULE_HANDLER: &str = "schedule-tick";

/// The handler of every subscription cursor seed creates: delivers journal events of the
/// subscription's type after the cursor and advances it.
pub const CURSOR_HANDLER: &str = "deliver-events";

/// Every handler name the default workload must register to run what seed creates.
pub const SEED_HANDLERS: [&str; 6] = [
    "send-email",
    "charge-card",
    "sync-crm",
    "flaky-call",
    SCHEDULE_HANDLER,
    CURSOR_HANDLER,
];

/// Event types seed ingests and subscribes to (`payment-received` is also what the shipped
/// order workflow waits for).
pub const EVENT_TYPES: [&str; 3] = ["order-placed", "payment-received", "customer-updated"];

/// Event sources for identified events.
const SOURCES: [&str; 3] = ["shopify", "stripe", "crm"];

/// The principal seeded workflow instances run as.
pub const SEED_PRINCIPAL: &str = "leasehold-seed";

/// Items per enqueue transaction.
const BATCH: usize = 500;

/// Arguments of `leasehold seed` (which creates the store if it does not exist yet).
#[derive(Debug, Clone, Args)]
pub struct SeedArgs {
    #[command(flatten)]
    pub store: StoreArg,
    /// Outbox effects to enqueue.
    #[arg(long, default_value_t = 200)]
    pub effects: u32,
    /// Workflow instances to start (needs the workflow engine).
    #[arg(long, default_value_t = 20)]
    pub workflows: u32,
    /// Interval schedules to create.
    #[arg(long, default_value_t = 3)]
    pub schedules: u32,
    /// Subscriptions (delivery cursors) to create.
    #[arg(long, default_value_t = 2)]
    pub subscriptions: u32,
    /// External event deliveries to ingest.
    #[arg(long, default_value_t = 30)]
    pub events: u32,
    /// RNG seed for ids and payloads (random and printed when not given).
    #[arg(long)]
    pub seed: Option<u64>,
    #[command(flatten)]
    pub version: HandlerVersionArg,
}

/// The handler versions a seed stamps its work with, by handler.
pub type Versions = BTreeMap<String, HandlerVersion>;

/// What one seed run created.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct SeedReport {
    pub effects: usize,
    pub delayed: usize,
    pub keyed: usize,
    pub schedules: usize,
    pub subscriptions: usize,
    pub accepted: usize,
    pub duplicate: usize,
    pub conflict: usize,
    pub unidentified: usize,
    pub workflows: usize,
    /// Why workflows were not started, when they were not.
    pub workflows_skipped: Option<String>,
}

/// Runs `leasehold seed`.
///
/// # Errors
/// A store failure (exit 2).
pub fn run(args: &SeedArgs, out: &mut dyn Write) -> CliResult {
    let store = args.store.open_witnessed(OpenMode::ReadWrite)?;
    let seed = args.seed.unwrap_or_else(fresh_seed);
    let versions = args
        .version
        .versions(&store, SEED_HANDLERS.into_iter().chain(ACTION_HANDLERS))?;
    let report = seed_store(&store, args, seed, &versions)?;
    let mut shown: Vec<String> = versions.values().map(ToString::to_string).collect();
    shown.dedup();
    let workflows = match &report.workflows_skipped {
        Some(why) => format!("workflows skipped ({why})"),
        None => format!("{} workflows", report.workflows),
    };
    writeln!(
        out,
        "seeded {} (handlers at {}, seed {seed}): {} effects ({} delayed, {} keyed), {} schedules, {} subscriptions, \
         {} events ({} accepted, {} duplicate, {} EVENT_ID_CONFLICT, {} unidentified), {workflows}",
        cell_max(&store.describe(), 120),
        cell_max(&shown.join(", "), 64),
        report.effects,
        report.delayed,
        report.keyed,
        report.schedules,
        report.subscriptions,
        report.accepted + report.duplicate + report.conflict + report.unidentified,
        report.accepted,
        report.duplicate,
        report.conflict,
        report.unidentified,
    )?;
    Ok(())
}

/// Seeds `store` with the workload `args` describes, ids drawn from `seed`.
///
/// # Errors
/// A store failure.
pub fn seed_store(
    store: &Store,
    args: &SeedArgs,
    seed: u64,
    versions: &Versions,
) -> crate::Result<SeedReport> {
    let mut rng = SmallRng::seed_from_u64(seed);
    let run: u32 = rng.random_range(0..0x100_0000);
    let run = format!("{run:06x}");
    let now = store.now();
    let mut report = SeedReport::default();

    // Outbox effects, in batches, with progress on stderr (a million take seconds).
    let mut progress = Progress::new(false);
    let mut batch = Vec::with_capacity(BATCH);
    for i in 0..args.effects {
        let spec = effect(&mut rng, &run, i, now);
        report.delayed += usize::from(spec.not_before.is_some());
        report.keyed += usize::from(spec.idempotency_key.is_some());
        batch.push(spec);
        if batch.len() == BATCH {
            report.effects += store.enqueue_batch(std::mem::take(&mut batch), versions)?;
            progress.count("effects", u64::from(i) + 1, u64::from(args.effects));
        }
    }
    if !batch.is_empty() {
        report.effects += store.enqueue_batch(batch, versions)?;
    }
    progress.finish();

    // Interval schedules, cycling through the catch-up policies.
    let shapes = [
        (5_000, CatchUp::Latest, "heartbeat-report"),
        (60_000, CatchUp::All, "cleanup-expired"),
        (5_000, CatchUp::Last(3), "digest"),
    ];
    for i in 0..args.schedules {
        let (every_ms, catch_up, job) = shapes[i as usize % shapes.len()];
        let id = format!("sched-{run}-{i:02}-{job}");
        let payload = json!({ "job": job, "schedule": id }).to_string();
        report.schedules += usize::from(store.create_schedule(
            &id,
            Trigger::Interval { every_ms },
            catch_up,
            SCHEDULE_HANDLER,
            &payload,
            &versions.key_for(SCHEDULE_HANDLER).unwrap_or_default(),
        )?);
    }

    // Subscriptions over the event types.
    for i in 0..args.subscriptions {
        let event_type = EVENT_TYPES[i as usize % EVENT_TYPES.len()];
        let id = format!("sub-{run}-{i:02}-{event_type}");
        report.subscriptions += usize::from(store.create_subscription(
            &id,
            event_type,
            CURSOR_HANDLER,
            &versions.key_for(CURSOR_HANDLER).unwrap_or_default(),
        )?);
    }

    // External events: fresh, duplicate, one conflicting re-delivery, unidentified.
    let mut delivered: Vec<NewEvent> = Vec::new();
    for i in 0..args.events {
        let event =
            if i >= 2 && report.conflict == 0 && i == args.events / 2 && !delivered.is_empty() {
                // One re-delivery of an earlier id with a changed payload.
                let mut conflicting = delivered[rng.random_range(0..delivered.len())].clone();
                conflicting.payload = json!({ "redelivered": true, "changed": i });
                conflicting
            } else if !delivered.is_empty() && rng.random_bool(0.12) {
                delivered[rng.random_range(0..delivered.len())].clone()
            } else {
                let identified = rng.random_bool(0.85);
                let event = fresh_event(&mut rng, &run, i, identified);
                if identified {
                    delivered.push(event.clone());
                }
                event
            };
        match store.ingest(&event)?.outcome {
            DedupOutcome::Accepted => report.accepted += 1,
            DedupOutcome::Duplicate => report.duplicate += 1,
            DedupOutcome::Conflict => report.conflict += 1,
            DedupOutcome::Unidentified => report.unidentified += 1,
        }
    }

    if args.workflows > 0 {
        report.workflows = seed_workflows(store, &mut rng, &run, args.workflows, versions)?;
    }
    Ok(report)
}

/// Deploys the shipped definitions and starts `count` instances across them, each keyed
/// (`seed-<run>-<i>`) so that a repeated seed finds its instances instead of doubling them.
fn seed_workflows(
    store: &Store,
    rng: &mut SmallRng,
    run: &str,
    count: u32,
    versions: &Versions,
) -> crate::Result<usize> {
    let catalog = Catalog::demo();
    let mut deployed = Vec::new();
    for (name, text) in SHIPPED_DEFINITIONS {
        match store.deploy_workflow(text, &catalog)? {
            Ok(row) => deployed.push(row.workflow_id),
            Err(diagnostics) => {
                let first = diagnostics
                    .first()
                    .map(ToString::to_string)
                    .unwrap_or_default();
                return Err(crate::Error::Invalid(format!(
                    "shipped workflow {name} does not validate: {first}"
                )));
            }
        }
    }
    // Arguments and keys, then the starts, a batch at a time (one commit per batch), so
    // a million instances never sit in memory at once.
    let mut progress = Progress::new(false);
    let mut started = 0;
    let mut planned = Vec::with_capacity(BATCH);
    for i in 0..count {
        let Some(workflow) = deployed.get(i as usize % deployed.len().max(1)) else {
            break;
        };
        let n: u32 = rng.random_range(1..100_000);
        let args = match workflow.as_str() {
            "order-fulfilment" => {
                json!({ "orderId": format!("ord-{n}"), "amount": rng.random_range(5..900) })
            }
            "integration-call" => {
                let partner = ["acme", "globex", "initech"][rng.random_range(0..3)];
                json!({ "partner": partner, "request": { "op": "sync", "ref": n } })
            }
            _ => {
                json!({ "recipient": format!("user{n}@example.com"), "message": "Your trial ends soon" })
            }
        };
        if let serde_json::Value::Object(args) = args {
            planned.push((workflow.as_str(), args, format!("seed-{run}-{i}")));
        }
        if planned.len() == BATCH || i + 1 == count {
            started += start_batch(store, &std::mem::take(&mut planned), versions)?;
            progress.count("workflows", u64::from(i) + 1, u64::from(count));
        }
    }
    progress.finish();
    Ok(started)
}

/// Starts one batch of planned instances in one commit; how many were new.
fn start_batch(
    store: &Store,
    planned: &[(&str, serde_json::Map<String, serde_json::Value>, String)],
    versions: &Versions,
) -> crate::Result<usize> {
    let starts: Vec<NewInstance<'_>> = planned
        .iter()
        .map(|(workflow, args, key)| NewInstance {
            workflow_id: workflow,
            args: args.clone(),
            principal: SEED_PRINCIPAL,
            idempotency_key: Some(key),
        })
        .collect();
    Ok(store
        .start_workflows(&starts, versions.clone())?
        .iter()
        .filter(|s| s.created)
        .count())
}

/// One outbox effect with a payload that suits its handler.
fn effect(rng: &mut SmallRng, run: &str, i: u32, now: Millis) -> NewWork {
    let (handler, _) = EFFECT_HANDLERS[weighted(rng, &[40, 20, 25, 15])];
    let n: u32 = rng.random_range(1..100_000);
    let (payload, max_attempts, explicit_key) = match handler {
        "send-email" => {
            let template =
                ["welcome", "receipt", "password-reset", "weekly-digest"][rng.random_range(0..4)];
            let locale = ["en", "de", "fr"][rng.random_range(0..3)];
            (
                json!({ "to": format!("user{n}@example.com"), "template": template, "locale": locale }),
                5,
                rng.random_bool(0.1),
            )
        }
        "charge-card" => {
            let cents: u32 = rng.random_range(199..50_000);
            let currency = ["EUR", "USD", "GBP"][rng.random_range(0..3)];
            (
                json!({ "customer": format!("cus_{n:05}"), "amountCents": cents, "currency": currency }),
                3,
                true,
            )
        }
        "sync-crm" => (
            json!({ "account": format!("acct-{n}"), "fields": ["email", "plan", "seats"], "full": rng.random_bool(0.2) }),
            5,
            false,
        ),
        _ => (
            json!({ "endpoint": "/partner/v1/orders", "orderId": format!("ord-{n}"), "failureRate": 0.33 }),
            8,
            rng.random_bool(0.2),
        ),
    };
    let id = format!("eff-{run}-{i:05}");
    NewWork {
        idempotency_key: explicit_key.then(|| format!("idem-{handler}-{run}-{i}")),
        max_attempts,
        not_before: rng
            .random_bool(0.1)
            .then(|| now + rng.random_range(10_000..600_000)),
        ..NewWork::effect(id, handler, payload.to_string())
    }
}

/// A new external event; `identified` gives it a source and a stable id.
fn fresh_event(rng: &mut SmallRng, run: &str, i: u32, identified: bool) -> NewEvent {
    let kind = rng.random_range(0..EVENT_TYPES.len());
    let n: u32 = rng.random_range(1..100_000);
    let payload = match EVENT_TYPES[kind] {
        "order-placed" => {
            json!({ "orderId": format!("ord-{n}"), "totalCents": rng.random_range(500..90_000), "items": rng.random_range(1..6) })
        }
        "payment-received" => {
            json!({ "orderId": format!("ord-{n}"), "amountCents": rng.random_range(500..90_000), "method": "card" })
        }
        _ => json!({ "customer": format!("cus_{n:05}"), "changed": ["email"] }),
    };
    NewEvent {
        event_type: EVENT_TYPES[kind].to_owned(),
        source: identified.then(|| SOURCES[kind].to_owned()),
        external_id: identified.then(|| format!("evt-{run}-{i:04}")),
        payload,
    }
}

/// A seed from the time and process id, for runs without `--seed` (printed, so a run can
/// be repeated).
fn fresh_seed() -> u64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    // Truncation intended: only the low bits vary between runs.
    #[allow(clippy::cast_possible_truncation)]
    let low = nanos as u64;
    (low ^ (u64::from(std::process::id()) << 40)) % 1_000_000_000
}

/// An index drawn with the given relative weights.
fn weighted(rng: &mut SmallRng, weights: &[u32]) -> usize {
    let total: u32 = weights.iter().sum();
    let mut pick = rng.random_range(0..total.max(1));
    for (i, w) in weights.iter().enumerate() {
        if pick < *w {
            return i;
        }
        pick -= w;
    }
    weights.len().saturating_sub(1)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::model::work::WorkFilter;
    use crate::model::{PageRequest, WorkKind};

    fn args(store: &str) -> SeedArgs {
        SeedArgs {
            store: StoreArg {
                store: store.into(),
            },
            effects: 50,
            workflows: 6,
            schedules: 3,
            subscriptions: 2,
            events: 30,
            seed: Some(7),
            version: HandlerVersionArg::default(),
        }
    }

    #[test]
    fn the_default_workload_runs_every_seeded_handler() {
        let workload = crate::authority::workload::default_workload(1);
        for name in SEED_HANDLERS {
            assert!(workload.get(name).is_some(), "{name}");
        }
    }

    #[test]
    fn seeding_creates_the_mixed_workload_with_one_conflict() {
        let store = crate::store::url::open("memory", OpenMode::ReadWrite).unwrap();
        let versions: Versions = SEED_HANDLERS
            .into_iter()
            .chain(ACTION_HANDLERS)
            .map(|h| (h.to_owned(), HandlerVersion::demo()))
            .collect();
        let report = seed_store(&store, &args("memory"), 7, &versions).unwrap();
        assert_eq!(report.effects, 50);
        assert_eq!(report.schedules, 3);
        assert_eq!(report.subscriptions, 2);
        assert_eq!(report.conflict, 1);
        assert_eq!(report.workflows, 6);
        assert_eq!(
            report.accepted + report.duplicate + report.conflict + report.unidentified,
            30
        );
        let effects = WorkFilter {
            kind: Some(WorkKind::Effect),
            ..WorkFilter::default()
        };
        let page = store.list_work(&effects, &PageRequest::first(100)).unwrap();
        assert_eq!(page.rows.len(), 50);
        assert!(
            page.rows
                .iter()
                .all(|w| SEED_HANDLERS.contains(&w.handler.as_str())
                    && Some(w.compat.clone()) == (&versions).key_for(&w.handler))
        );

        // The same seed again offers the same ids: nothing new, nothing broken.
        let again = seed_store(&store, &args("memory"), 7, &versions).unwrap();
        assert_eq!(again.effects, 0);
        assert_eq!(again.schedules, 0);
        assert_eq!(again.workflows, 0);
    }
}
