//! The demo workload: handlers for everything `leasehold seed` creates (its effect,
//! schedule and cursor handlers) and for every action of [`Catalog::demo`] (the shipped
//! workflows), each with a latency range and failure / uncertainty rates drawn from the
//! attempt's seeded generator.
//!
//! Named profiles scale those knobs: `default` (realistic), `fast` (no latency, no
//! failures: drains as quickly as the store allows), `slow` (ten times the latency) and
//! `chaos` (three times the failure rates, more uncertain attempts). Apart from those,
//! `noop` registers only [`NOOP_HANDLER`], an async handler that succeeds at once: what
//! `leasehold bench` enqueues, so a benchmark measures the store and the runtime, not a handler
//! (`noop-blocking` registers it as a blocking handler).
//!
//! [`Catalog::demo`]: crate::workflow::Catalog::demo

use rand::Rng;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::handlers::{
    Attempt, AttemptContext, AttemptKind, BlockingHandler, HandlerOutcome, Workload,
};
use crate::clock::Millis;
use crate::error::{Error, Result};
use crate::model::HandlerVersion;

/// The demo profiles [`named`] accepts (it also accepts `noop`).
pub const WORKLOAD_NAMES: [&str; 4] = ["default", "fast", "slow", "chaos"];

/// The only handler of the `noop` workload: succeeds at once, with no output.
pub const NOOP_HANDLER: &str = "noop";

/// The workload that registers [`NOOP_HANDLER`] as a blocking handler (on the blocking
/// pool, one hand-off per attempt) instead of an async one: what `bench
/// --blocking-handler` runs, to show what an application's synchronous handler costs.
pub const NOOP_BLOCKING_WORKLOAD: &str = "noop-blocking";

/// The effect handlers `leasehold seed` enqueues.
pub const EFFECT_HANDLERS: [&str; 4] = ["send-email", "charge-card", "sync-crm", "flaky-call"];
/// The handler of schedule firings.
pub const SCHEDULE_HANDLER: &str = "schedule-tick";
/// The handler of subscription cursors.
pub const CURSOR_HANDLER: &str = "deliver-events";
/// The workflow actions of the shipped definitions.
pub const ACTION_HANDLERS: [&str; 5] = [
    "reserve-stock",
    "ship-order",
    "release-stock",
    "call-partner-api",
    "send-reminder",
];

/// Multipliers over every handler's base knobs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Profile {
    pub latency: f64,
    pub failure: f64,
    pub uncertain: f64,
}

impl Profile {
    /// The profile called `name`.
    ///
    /// # Errors
    /// `INVALID` for an unknown name (listing the known ones).
    pub fn named(name: &str) -> Result<Self> {
        Ok(match name {
            "default" => Self {
                latency: 1.0,
                failure: 1.0,
                uncertain: 1.0,
            },
            "fast" => Self {
                latency: 0.0,
                failure: 0.0,
                uncertain: 0.0,
            },
            "slow" => Self {
                latency: 10.0,
                failure: 1.0,
                uncertain: 1.0,
            },
            "chaos" => Self {
                latency: 1.0,
                failure: 3.0,
                uncertain: 3.0,
            },
            other => {
                return Err(Error::Invalid(format!(
                    "unknown workload {other:?}; known: {}, {NOOP_HANDLER}, {NOOP_BLOCKING_WORKLOAD}",
                    WORKLOAD_NAMES.join(", ")
                )));
            }
        })
    }
}

/// What a successful demo attempt returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Output {
    /// `{ "<field>": "<prefix>-<hash of the idempotency key>" }`: the same on every retry.
    Receipt(&'static str, &'static str),
    /// A reservation for the order in the arguments.
    Reservation,
    /// A partner response.
    Partner,
    /// A delivery summary for a cursor batch.
    Delivery,
}

/// A demo handler: waits a random latency, then fails / goes uncertain at its rates, else
/// succeeds with a deterministic output.
#[derive(Debug, Clone)]
pub struct DemoHandler {
    /// Latency range in ms (per event for cursor deliveries).
    pub latency_ms: (Millis, Millis),
    pub retryable_rate: f64,
    pub terminal_rate: f64,
    pub uncertain_rate: f64,
    /// Code of the terminal failure (e.g. `CARD_DECLINED`).
    pub terminal_code: &'static str,
    output: Output,
}

impl DemoHandler {
    fn new(
        latency_ms: (Millis, Millis),
        retryable: f64,
        terminal: f64,
        uncertain: f64,
        terminal_code: &'static str,
        output: Output,
    ) -> Self {
        Self {
            latency_ms,
            retryable_rate: retryable,
            terminal_rate: terminal,
            uncertain_rate: uncertain,
            terminal_code,
            output,
        }
    }

    fn scaled(mut self, profile: Profile) -> Self {
        let scale = |v: Millis| {
            // Latencies are small; the product is bounded well inside i64.
            #[allow(clippy::cast_possible_truncation, clippy::cast_precision_loss)]
            let scaled = (v as f64 * profile.latency).round() as Millis;
            scaled
        };
        self.latency_ms = (scale(self.latency_ms.0), scale(self.latency_ms.1));
        self.retryable_rate = (self.retryable_rate * profile.failure).min(0.9);
        self.terminal_rate = (self.terminal_rate * profile.failure).min(0.5);
        self.uncertain_rate = (self.uncertain_rate * profile.uncertain).min(0.5);
        self
    }

    fn output(&self, attempt: &AttemptContext) -> Value {
        let digest = hex::encode(&Sha256::digest(attempt.idempotency_key.as_bytes())[..5]);
        match self.output {
            Output::Receipt(field, prefix) => json!({ field: format!("{prefix}-{digest}") }),
            Output::Reservation => {
                let order = attempt
                    .payload
                    .get("orderId")
                    .and_then(Value::as_str)
                    .unwrap_or("unknown");
                json!({ "reservationId": format!("res-{order}-{digest}") })
            }
            Output::Partner => {
                json!({ "status": 200, "partner": attempt.payload.get("partner").cloned().unwrap_or(Value::Null), "requestId": format!("req-{digest}") })
            }
            Output::Delivery => {
                json!({ "delivered": attempt.events.len(), "through": attempt.events.last().map(|e| e.seq) })
            }
        }
    }
}

impl BlockingHandler for DemoHandler {
    fn run(&self, attempt: &AttemptContext) -> HandlerOutcome {
        let mut rng = attempt.rng("demo");
        let (lo, hi) = (
            self.latency_ms.0.min(self.latency_ms.1),
            self.latency_ms.0.max(self.latency_ms.1),
        );
        let per = if hi > lo {
            rng.random_range(lo..=hi)
        } else {
            lo
        };
        let units = if attempt.kind == AttemptKind::Cursor {
            attempt.events.len().max(1)
        } else {
            1
        };
        attempt.spend(per.saturating_mul(Millis::try_from(units).unwrap_or(Millis::MAX)));
        let roll: f64 = rng.random();
        if roll < self.uncertain_rate {
            return HandlerOutcome::Uncertain;
        }
        if roll < self.uncertain_rate + self.terminal_rate {
            return HandlerOutcome::terminal(
                self.terminal_code,
                format!("{} refused {}", attempt.handler, attempt.idempotency_key),
            );
        }
        if roll < self.uncertain_rate + self.terminal_rate + self.retryable_rate {
            return HandlerOutcome::retryable(
                "TEMPORARY_FAILURE",
                format!(
                    "{} failed transiently (attempt {})",
                    attempt.handler, attempt.attempt
                ),
            );
        }
        HandlerOutcome::Succeeded(Some(self.output(attempt)))
    }
}

/// The base knobs of every demo handler, by name.
fn base_handlers() -> Vec<(&'static str, DemoHandler)> {
    use Output::{Delivery, Partner, Receipt, Reservation};
    vec![
        (
            "send-email",
            DemoHandler::new(
                (10, 60),
                0.02,
                0.0,
                0.005,
                "EMAIL_REJECTED",
                Receipt("messageId", "msg"),
            ),
        ),
        (
            "charge-card",
            DemoHandler::new(
                (30, 150),
                0.03,
                0.04,
                0.01,
                "CARD_DECLINED",
                Receipt("chargeId", "ch"),
            ),
        ),
        (
            "sync-crm",
            DemoHandler::new(
                (100, 400),
                0.05,
                0.0,
                0.005,
                "CRM_REJECTED",
                Receipt("crmRecord", "crm"),
            ),
        ),
        (
            "flaky-call",
            DemoHandler::new((20, 200), 0.33, 0.0, 0.02, "PARTNER_REFUSED", Partner),
        ),
        (
            SCHEDULE_HANDLER,
            DemoHandler::new(
                (5, 40),
                0.02,
                0.0,
                0.0,
                "TICK_FAILED",
                Receipt("tick", "tick"),
            ),
        ),
        (
            CURSOR_HANDLER,
            DemoHandler::new((2, 10), 0.02, 0.0, 0.005, "DELIVERY_FAILED", Delivery),
        ),
        (
            "reserve-stock",
            DemoHandler::new((20, 120), 0.05, 0.02, 0.005, "OUT_OF_STOCK", Reservation),
        ),
        (
            "ship-order",
            DemoHandler::new(
                (50, 300),
                0.05,
                0.0,
                0.005,
                "CARRIER_REFUSED",
                Receipt("trackingId", "trk"),
            ),
        ),
        (
            "release-stock",
            DemoHandler::new(
                (20, 80),
                0.03,
                0.0,
                0.0,
                "RELEASE_FAILED",
                Receipt("releaseId", "rel"),
            ),
        ),
        (
            "call-partner-api",
            DemoHandler::new((50, 400), 0.2, 0.0, 0.01, "PARTNER_REFUSED", Partner),
        ),
        (
            "send-reminder",
            DemoHandler::new(
                (10, 50),
                0.03,
                0.0,
                0.0,
                "REMINDER_REJECTED",
                Receipt("receiptId", "rcpt"),
            ),
        ),
    ]
}

/// The demo workload called `name` (see [`WORKLOAD_NAMES`]), its randomness seeded by `seed`.
/// It registers every handler `leasehold seed` and the shipped workflows need; `noop`
/// registers only [`NOOP_HANDLER`] (async), [`NOOP_BLOCKING_WORKLOAD`] only it as a blocking
/// handler.
///
/// # Errors
/// `INVALID` for an unknown name.
pub fn named(name: &str, seed: u64) -> Result<Workload> {
    if name == NOOP_HANDLER {
        // It never blocks, so it is an async handler, as a peer's no-op job is: it runs on
        // the runtime's workers, not on the blocking pool.
        let mut workload = Workload::demo(name, seed);
        workload.register_async(
            NOOP_HANDLER,
            HandlerVersion::demo(),
            std::sync::Arc::new(|_: Attempt| async { HandlerOutcome::Succeeded(None) }),
        );
        return Ok(workload);
    }
    if name == NOOP_BLOCKING_WORKLOAD {
        // The same no-op, run the way an application's synchronous handlers run.
        return Ok(
            Workload::demo(name, seed).with(NOOP_HANDLER, |_: &AttemptContext| {
                HandlerOutcome::Succeeded(None)
            }),
        );
    }
    let profile = Profile::named(name)?;
    let mut workload = Workload::demo(name, seed);
    for (handler, demo) in base_handlers() {
        workload.register(handler, std::sync::Arc::new(demo.scaled(profile)));
    }
    Ok(workload)
}

/// The `default` workload.
#[must_use]
pub fn default_workload(seed: u64) -> Workload {
    named("default", seed).unwrap_or_else(|_| Workload::demo("default", seed))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::authority::handlers::{Attempt, Pace};
    use crate::workflow::Catalog;

    #[test]
    fn the_default_workload_covers_its_handlers_and_the_shipped_workflows() {
        let w = default_workload(1);
        for name in EFFECT_HANDLERS
            .iter()
            .chain(&ACTION_HANDLERS)
            .chain(&[SCHEDULE_HANDLER, CURSOR_HANDLER])
        {
            assert!(w.get(name).is_some(), "{name}");
        }
        for action in Catalog::demo().actions.keys() {
            assert!(w.get(action).is_some(), "{action}");
        }
    }

    #[test]
    fn fast_attempts_succeed_without_latency_and_outputs_follow_the_key() {
        let w = named("fast", 3).expect("a known workload");
        let ctx = AttemptContext::new(
            "e1",
            AttemptKind::Effect,
            "send-email",
            json!({}),
            "e1",
            "k1",
            1,
            "a",
            1,
            3,
            Pace::Virtual,
        );
        let send = w.get("send-email").expect("registered");
        let ctx = Attempt::new(ctx);
        let HandlerOutcome::Succeeded(Some(first)) = send.run_here(&ctx) else {
            panic!("fast never fails")
        };
        let again = AttemptContext::new(
            "e1",
            AttemptKind::Effect,
            "send-email",
            json!({}),
            "e1",
            "k1",
            2,
            "b",
            2,
            3,
            Pace::Virtual,
        );
        assert_eq!(
            send.run_here(&Attempt::new(again)),
            HandlerOutcome::Succeeded(Some(first))
        );
        assert_eq!(ctx.spent(), 0);
    }
}
