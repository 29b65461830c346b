//! The authority runtime: unsafe knobs are refused at construction; the core's step
//! functions fence, count and reclaim correctly on a manual clock; an idle cursor keeps its
//! claim, so its generation moves only with its ownership; the tokio driver
//! drains a seeded memory store and shuts down cleanly, releasing what it still owns;
//! (`runtime/occupancy.rs`) a slow handler's attempts never hold a fast handler's backlog to
//! their pace; (`runtime/uncertain.rs`) no attempt goes uncounted at shutdown or on a
//! timeout; (`runtime/panics.rs`) a handler's panic is its attempt's recorded retryable
//! failure; (`runtime/failure_codes.rs`) a failure under a code that breaks the rule is
//! kept under `INVALID_CODE`; and (`runtime/metrics.rs`) the metrics pages follow the naming rules, share no
//! name, and count per handler what the store recorded.

#[path = "runtime/claim_keys.rs"]
mod claim_keys;
#[path = "runtime/complete_and_claim.rs"]
mod complete_and_claim;
#[path = "runtime/driver.rs"]
mod driver;
#[path = "runtime/failure_codes.rs"]
mod failure_codes;
#[path = "runtime/handler_control.rs"]
mod handler_control;
#[path = "runtime/handler_limits.rs"]
mod handler_limits;
#[path = "runtime/idle_cursor.rs"]
mod idle_cursor;
#[path = "runtime/idle_polls.rs"]
mod idle_polls;
#[path = "runtime/knobs.rs"]
mod knobs;
#[path = "runtime/lost_answers.rs"]
mod lost_answers;
#[path = "runtime/metrics.rs"]
mod metrics;
#[path = "runtime/occupancy.rs"]
mod occupancy;
#[path = "runtime/panics.rs"]
mod panics;
#[path = "runtime/recovery.rs"]
mod recovery;
#[path = "runtime/refused.rs"]
mod refused;
#[path = "runtime/renewals.rs"]
mod renewals;
#[path = "runtime/retry_policy.rs"]
mod retry_policy;
#[path = "runtime/schedules.rs"]
mod schedules;
#[path = "runtime/stall.rs"]
mod stall;
#[path = "runtime/step_aside.rs"]
mod step_aside;
#[path = "runtime/steps.rs"]
mod steps;
#[path = "runtime/stops.rs"]
mod stops;
#[path = "support/mod.rs"]
mod support;
#[path = "runtime/uncertain.rs"]
mod uncertain;

use leasehold::Store;
use leasehold::authority::workload::{self, EFFECT_HANDLERS};
use leasehold::model::HandlerVersion;
use leasehold::model::WorkState;
use leasehold::model::event::NewEvent;
use leasehold::model::handler_key;
use leasehold::model::work::NewWork;
use leasehold::workflow::{Catalog, SHIPPED_DEFINITIONS};
use serde_json::json;

use support::runtime::work_in;

/// `effects` effects over the demo handlers, a subscription with five events for it, and
/// `workflows` instances of the shipped integration-call workflow: every kind of work one
/// authority runs. Answers the instances.
fn mixed_work(s: &Store, c: &HandlerVersion, effects: usize, workflows: usize) -> Vec<String> {
    let items: Vec<NewWork> = (0..effects)
        .map(|i| {
            NewWork::effect(
                format!("e{i:03}"),
                EFFECT_HANDLERS[i % EFFECT_HANDLERS.len()],
                json!({ "n": i }).to_string(),
            )
        })
        .collect();
    s.enqueue_batch(items, c).expect("enqueues");
    s.create_subscription(
        "orders",
        "order-placed",
        workload::CURSOR_HANDLER,
        &handler_key(workload::CURSOR_HANDLER, c),
    )
    .expect("subscribes");
    for i in 0..5 {
        let event = NewEvent {
            event_type: "order-placed".into(),
            source: Some("shop".into()),
            external_id: Some(format!("o{i}")),
            payload: json!({ "i": i }),
        };
        s.ingest(&event).expect("ingests");
    }
    let (_, text) = SHIPPED_DEFINITIONS
        .iter()
        .find(|(name, _)| name.starts_with("integration-call"))
        .expect("shipped");
    s.deploy_workflow(text, &Catalog::demo())
        .expect("deploys")
        .expect("valid");
    (0..workflows)
        .map(|i| {
            let args = json!({ "partner": "p", "request": { "i": i } });
            s.start_workflow(
                "integration-call",
                args.as_object().cloned().unwrap_or_default(),
                "test",
                None,
                support::actions_at_demo(s, "integration-call"),
            )
            .expect("starts")
            .instance_id
        })
        .collect()
}

/// Whether the work of [`mixed_work`] is all done: `effects` succeeded, every instance
/// completed, and the subscription delivered through `high_water`.
fn drained(s: &Store, effects: usize, instances: &[String], high_water: i64) -> bool {
    work_in(s, WorkState::Succeeded).len() == effects
        && instances.iter().all(|id| {
            s.instance(id)
                .ok()
                .flatten()
                .is_some_and(|r| r.status == "completed")
        })
        && s.subscription("orders")
            .ok()
            .flatten()
            .is_some_and(|sub| i64::try_from(sub.sequence).unwrap_or(0) == high_water)
}
