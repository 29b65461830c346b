//! The cluster's workload generator: the "application" that keeps creating durable work
//! while the authorities run — outbox effects, schedules, subscriptions with cursors,
//! workflow instances (the shipped definitions) and external events with duplicates and
//! conflicting re-deliveries, including the `payment-received` events the order
//! workflows wait for. Everything it creates is stamped with the key of its handler at the
//! version the build currently deployed runs; a rolling deploy switches it to the new build.

use std::collections::BTreeSet;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use serde::Serialize;
use serde_json::{Map, Value, json};

use crate::authority::workload::{CURSOR_HANDLER, EFFECT_HANDLERS, SCHEDULE_HANDLER};
use crate::clock::Millis;
use crate::error::Result;
use crate::model::DedupOutcome;
use crate::model::HandlerVersion;
use crate::model::event::NewEvent;
use crate::model::handler_key;
use crate::model::schedule::{CatchUp, Trigger};
use crate::model::work::NewWork;
use crate::store::Store;
use crate::workflow::engine::StartKey;
use crate::workflow::{Catalog, SHIPPED_DEFINITIONS};

/// The principal the generated workflow instances run as.
pub const PRINCIPAL: &str = "cluster-demo";

/// How much the generator creates per tick (a tick is [`Generator::TICK_MS`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rates {
    /// Expected effects per tick.
    pub effects: f64,
    /// Probability of starting an order workflow per tick.
    pub orders: f64,
    /// Probability of starting an integration-call / reminder workflow per tick.
    pub other_workflows: f64,
    /// Probability of an `order-placed` / `customer-updated` event per tick.
    pub events: f64,
    /// Probability that a delivery is a re-delivery of an earlier one (same payload).
    pub duplicate: f64,
    /// Probability that a re-delivery carries a changed payload (`EVENT_ID_CONFLICT`).
    pub conflict: f64,
}

impl Default for Rates {
    fn default() -> Self {
        Self {
            effects: 0.9,
            orders: 0.08,
            other_workflows: 0.05,
            events: 0.3,
            duplicate: 0.1,
            conflict: 0.02,
        }
    }
}

/// What the generator created.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Generated {
    pub effects: u64,
    pub workflows: u64,
    pub schedules: u64,
    pub subscriptions: u64,
    pub events_accepted: u64,
    pub events_duplicate: u64,
    pub events_conflict: u64,
    pub events_unidentified: u64,
    /// Store calls that failed (an outage): that tick's work was not created.
    pub store_errors: u64,
}

/// A draw with probability `p`, clamped into `[0, 1]` (never a panic on odd rates).
fn chance(rng: &mut SmallRng, p: f64) -> bool {
    let p = if p.is_finite() {
        p.clamp(0.0, 1.0)
    } else {
        0.0
    };
    rng.random_bool(p)
}

struct Payment {
    at: Millis,
    order: String,
    amount: i64,
    ok: bool,
}

/// The seeded generator.
pub struct Generator {
    rng: SmallRng,
    rates: Rates,
    build: String,
    /// The version of every handler the current build's work is for.
    version: HandlerVersion,
    set_up: BTreeSet<String>,
    deployed: bool,
    n: u64,
    payments: Vec<Payment>,
    delivered: Vec<NewEvent>,
    pub counts: Generated,
}

impl Generator {
    /// Virtual time between ticks.
    pub const TICK_MS: Millis = 250;

    #[must_use]
    pub fn new(seed: u64, build: &str, rates: Rates) -> Self {
        Self {
            rng: SmallRng::seed_from_u64(seed ^ 0x9e37_79b9_7f4a_7c15),
            rates,
            build: build.into(),
            version: HandlerVersion::demo(),
            set_up: BTreeSet::new(),
            deployed: false,
            n: 0,
            payments: Vec::new(),
            delivered: Vec::new(),
            counts: Generated::default(),
        }
    }

    /// The build new work is created under.
    #[must_use]
    pub fn build(&self) -> &str {
        &self.build
    }

    /// The handler version new work is created for.
    #[must_use]
    pub fn version(&self) -> &HandlerVersion {
        &self.version
    }

    /// Deploys the shipped workflows (once) and creates the current build's schedules and
    /// subscriptions (once per build).
    ///
    /// # Errors
    /// A store failure (retry later), or an invalid shipped definition.
    pub fn setup(&mut self, store: &Store) -> Result<()> {
        if !self.deployed {
            for (name, text) in SHIPPED_DEFINITIONS {
                if let Err(diags) = store.deploy_workflow(text, &Catalog::demo())? {
                    return Err(crate::Error::Invalid(format!(
                        "shipped workflow {name} does not validate: {}",
                        diags.first().map(ToString::to_string).unwrap_or_default()
                    )));
                }
            }
            self.deployed = true;
        }
        if self.set_up.contains(&self.build) {
            return Ok(());
        }
        let b = self.build.clone();
        let v = self.version.clone();
        let schedules = [
            ("heartbeat", 5_000, CatchUp::Latest),
            ("digest", 10_000, CatchUp::Last(3)),
        ];
        for (job, every_ms, catch_up) in schedules {
            let id = format!("sched-{b}-{job}");
            let payload = json!({ "job": job, "schedule": id }).to_string();
            self.counts.schedules += u64::from(store.create_schedule(
                &id,
                Trigger::Interval { every_ms },
                catch_up,
                SCHEDULE_HANDLER,
                &payload,
                &handler_key(SCHEDULE_HANDLER, &v),
            )?);
        }
        for (name, event_type) in [
            ("orders", "order-placed"),
            ("payments", "payment-received"),
            ("customers", "customer-updated"),
        ] {
            let id = format!("sub-{b}-{name}");
            self.counts.subscriptions += u64::from(store.create_subscription(
                &id,
                event_type,
                CURSOR_HANDLER,
                &handler_key(CURSOR_HANDLER, &v),
            )?);
        }
        self.set_up.insert(b);
        Ok(())
    }

    /// Switches to `build`, whose handlers run at `version` (a rolling deploy), and sets
    /// up its schedules and subscriptions.
    pub fn switch_build(&mut self, store: &Store, build: &str, version: &HandlerVersion) {
        build.clone_into(&mut self.build);
        version.clone_into(&mut self.version);
        if self.setup(store).is_err() {
            self.counts.store_errors += 1;
        }
    }

    /// One tick at `now`: new effects, workflows, events and due payments.
    pub fn tick(&mut self, store: &Store, now: Millis) {
        if let Err(e) = self.tick_inner(store, now)
            && e.is_store_failure()
        {
            self.counts.store_errors += 1;
        }
    }

    fn next_n(&mut self) -> u64 {
        self.n += 1;
        self.n
    }

    fn tick_inner(&mut self, store: &Store, now: Millis) -> Result<()> {
        self.setup(store)?;
        self.enqueue_effects(store, now)?;
        self.start_workflows(store, now)?;
        self.ingest_event(store)?;
        self.pay_due(store, now)
    }

    /// Effects: 0..=2 per tick around the expected rate.
    fn enqueue_effects(&mut self, store: &Store, now: Millis) -> Result<()> {
        let mut specs = Vec::new();
        let mut budget = self.rates.effects;
        while budget > 0.0 && chance(&mut self.rng, budget.min(1.0)) {
            budget -= 1.0;
            let n = self.next_n();
            let handler = EFFECT_HANDLERS[self.rng.random_range(0..EFFECT_HANDLERS.len())];
            let mut spec = NewWork::effect(
                format!("eff-{}-{n:06}", self.build),
                handler,
                json!({ "n": n, "to": format!("user{}@example.com", n % 97) }).to_string(),
            );
            if handler == "charge-card" {
                spec.idempotency_key = Some(format!("charge-{n:06}"));
            }
            if chance(&mut self.rng, 0.1) {
                spec.not_before = Some(now + self.rng.random_range(500..5_000));
            }
            specs.push(spec);
        }
        if !specs.is_empty() {
            self.counts.effects += store.enqueue_batch(specs, &self.version)? as u64;
        }
        Ok(())
    }

    /// Orders (most of them paid later, some short or refused) and the other workflows.
    fn start_workflows(&mut self, store: &Store, now: Millis) -> Result<()> {
        if chance(&mut self.rng, self.rates.orders) {
            let n = self.next_n();
            let order = format!("ord-{n:06}");
            let amount = self.rng.random_range(10..500);
            self.start(
                store,
                "order-fulfilment",
                json!({ "orderId": order, "amount": amount }),
                n,
            )?;
            if chance(&mut self.rng, 0.9) {
                let paid = if chance(&mut self.rng, 0.9) {
                    amount
                } else {
                    amount / 2
                };
                let ok = chance(&mut self.rng, 0.95);
                let at = now + self.rng.random_range(500..8_000);
                self.payments.push(Payment {
                    at,
                    order,
                    amount: paid,
                    ok,
                });
            }
        }
        if chance(&mut self.rng, self.rates.other_workflows) {
            let n = self.next_n();
            if chance(&mut self.rng, 0.5) {
                self.start(
                    store,
                    "integration-call",
                    json!({ "partner": format!("partner-{}", n % 5), "request": { "n": n } }),
                    n,
                )?;
            } else {
                self.start(store, "reminder", json!({ "recipient": format!("user{}@example.com", n % 97), "message": "your order is on its way" }), n)?;
            }
        }
        Ok(())
    }

    /// At most one external event a tick: fresh, duplicate, conflicting or unidentified.
    fn ingest_event(&mut self, store: &Store) -> Result<()> {
        if chance(&mut self.rng, self.rates.events) {
            let event = if !self.delivered.is_empty() && chance(&mut self.rng, self.rates.duplicate)
            {
                let i = self.rng.random_range(0..self.delivered.len());
                let mut again = self.delivered[i].clone();
                if chance(
                    &mut self.rng,
                    self.rates.conflict / self.rates.duplicate.max(f64::EPSILON),
                ) {
                    again.payload = json!({ "redelivered": true, "changed": self.n });
                }
                again
            } else if chance(&mut self.rng, 0.1) {
                NewEvent {
                    event_type: "customer-updated".into(),
                    source: None,
                    external_id: None,
                    payload: json!({ "customer": self.n % 31 }),
                }
            } else {
                let n = self.next_n();
                NewEvent {
                    event_type: "order-placed".into(),
                    source: Some("shopify".into()),
                    external_id: Some(format!("evt-{n:06}")),
                    payload: json!({ "orderId": format!("ord-{n:06}"), "lines": n % 4 + 1 }),
                }
            };
            self.ingest(store, event)?;
        }
        Ok(())
    }

    /// The payments that are due, as events.
    fn pay_due(&mut self, store: &Store, now: Millis) -> Result<()> {
        let mut due = Vec::new();
        self.payments.retain(|p| {
            if p.at <= now {
                due.push((p.order.clone(), p.amount, p.ok));
                false
            } else {
                true
            }
        });
        for (order, amount, ok) in due {
            let event = NewEvent {
                event_type: "payment-received".into(),
                source: Some("stripe".into()),
                external_id: Some(format!("pay-{order}")),
                payload: json!({ "orderId": order, "amount": amount, "ok": ok }),
            };
            self.ingest(store, event)?;
        }
        Ok(())
    }

    fn start(&mut self, store: &Store, workflow: &str, args: Value, n: u64) -> Result<()> {
        let args: Map<String, Value> = match args {
            Value::Object(map) => map,
            _ => Map::new(),
        };
        let started = store.start_workflow(
            workflow,
            args,
            PRINCIPAL,
            Some(&format!("start-{n:06}")),
            self.start_key(store, workflow)?,
        )?;
        self.counts.workflows += u64::from(started.created);
        Ok(())
    }

    /// The key a start of `workflow` is stamped with: its actions' handlers at this
    /// build's version.
    fn start_key(&self, store: &Store, workflow: &str) -> Result<StartKey> {
        Ok(StartKey::Versions(
            store
                .workflow_actions(workflow)?
                .into_iter()
                .map(|name| (name, self.version.clone()))
                .collect(),
        ))
    }

    fn ingest(&mut self, store: &Store, event: NewEvent) -> Result<()> {
        let ingested = store.ingest(&event)?;
        match ingested.outcome {
            DedupOutcome::Accepted => {
                self.counts.events_accepted += 1;
                if self.delivered.len() < 256 {
                    self.delivered.push(event);
                } else {
                    let i = self.rng.random_range(0..self.delivered.len());
                    self.delivered[i] = event;
                }
            }
            DedupOutcome::Duplicate => self.counts.events_duplicate += 1,
            DedupOutcome::Conflict => self.counts.events_conflict += 1,
            DedupOutcome::Unidentified => self.counts.events_unidentified += 1,
        }
        Ok(())
    }
}
