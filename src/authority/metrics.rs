//! What an authority tells a monitoring system: its counters, in-flight work, latency
//! distributions, liveness and identity, as Prometheus / OpenMetrics text on `/metrics`
//! (`leasehold authority --metrics-addr 127.0.0.1:9464`).
//!
//! The page is rendered on each scrape from the authority's own counters
//! ([`super::Stats`]) and [`super::Health`], so there is one source of truth and nothing
//! to keep in step. Latencies are kept at millisecond resolution and exposed in seconds
//! over fixed buckets. The server is hyper's HTTP/1.1 server on the authority's tokio
//! runtime: one request per connection, `GET /metrics` the page, anything else a 404.

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::sync::Arc;

use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::header::{CONTENT_TYPE, HeaderValue};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;

use prometheus_client::encoding::text::encode;
use prometheus_client::encoding::{EncodeMetric, MetricEncoder, NoLabelSet};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::info::Info;
use prometheus_client::registry::Registry;
use tokio::net::TcpListener;

use super::core::AuthorityCore;
use super::health::{Health, HealthReport};
use super::stats::{HandlerCounts, Histogram, Stats};
use crate::clock::Millis;

/// Upper bounds (seconds) of the latency buckets: 1 ms to about 2 minutes, doubling.
const BUCKETS: [f64; 18] = [
    0.001, 0.002, 0.004, 0.008, 0.016, 0.032, 0.064, 0.128, 0.256, 0.512, 1.024, 2.048, 4.096,
    8.192, 16.384, 32.768, 65.536, 131.072,
];

/// A latency distribution in the exposition's terms.
#[derive(Debug)]
struct Seconds {
    sum: f64,
    count: u64,
    /// Per-bucket (not cumulative) counts, the last for `+Inf`.
    buckets: Vec<(f64, u64)>,
}

impl Seconds {
    fn of(samples: impl IntoIterator<Item = (Millis, u64)>) -> Self {
        let mut buckets: Vec<(f64, u64)> = BUCKETS.iter().map(|b| (*b, 0)).collect();
        buckets.push((f64::INFINITY, 0));
        let (mut sum, mut count) = (0.0, 0);
        for (ms, n) in samples {
            let s = ms.max(0) as f64 / 1_000.0;
            sum += s * n as f64;
            count += n;
            let at = BUCKETS
                .iter()
                .position(|b| s <= *b)
                .unwrap_or(BUCKETS.len());
            buckets[at].1 += n;
        }
        Self {
            sum,
            count,
            buckets,
        }
    }
}

impl EncodeMetric for Seconds {
    fn encode(&self, mut encoder: MetricEncoder) -> Result<(), std::fmt::Error> {
        encoder.encode_histogram::<NoLabelSet>(self.sum, self.count, &self.buckets, None)
    }

    fn metric_type(&self) -> MetricType {
        MetricType::Histogram
    }
}

/// One histogram per label value (`handler`).
#[derive(Debug)]
struct SecondsBy(&'static str, BTreeMap<String, Seconds>);

impl EncodeMetric for SecondsBy {
    fn encode(&self, mut encoder: MetricEncoder) -> Result<(), std::fmt::Error> {
        for (value, seconds) in &self.1 {
            let labels = [(self.0, value.as_str())];
            seconds.encode(encoder.encode_family(&labels)?)?;
        }
        Ok(())
    }

    fn metric_type(&self) -> MetricType {
        MetricType::Histogram
    }
}

/// A family of counters or gauges, one sample per label set: what the exposition needs
/// for values read at scrape time (this page, and `inspect metrics`'s fleet page).
#[derive(Debug)]
pub struct Labeled {
    counter: bool,
    samples: Vec<(Vec<(&'static str, String)>, u64)>,
}

impl Labeled {
    /// Counters, one per label set.
    #[must_use]
    pub fn counters(samples: Vec<(Vec<(&'static str, String)>, u64)>) -> Self {
        Self {
            counter: true,
            samples,
        }
    }

    /// Gauges, one per label set.
    #[must_use]
    pub fn gauges(samples: Vec<(Vec<(&'static str, String)>, u64)>) -> Self {
        Self {
            counter: false,
            samples,
        }
    }

    /// Counters labelled `key` = each key of `by`.
    fn counters_by(key: &'static str, by: impl IntoIterator<Item = (String, u64)>) -> Self {
        Self::counters(by.into_iter().map(|(v, n)| (vec![(key, v)], n)).collect())
    }
}

impl EncodeMetric for Labeled {
    fn encode(&self, mut encoder: MetricEncoder) -> Result<(), std::fmt::Error> {
        for (labels, n) in &self.samples {
            let labels: Vec<(&str, &str)> = labels.iter().map(|(k, v)| (*k, v.as_str())).collect();
            let sample = encoder.encode_family(&labels)?;
            if self.counter {
                ConstCounter::new(*n).encode(sample)?;
            } else {
                ConstGauge::new(i64::try_from(*n).unwrap_or(i64::MAX)).encode(sample)?;
            }
        }
        Ok(())
    }

    fn metric_type(&self) -> MetricType {
        if self.counter {
            MetricType::Counter
        } else {
            MetricType::Gauge
        }
    }
}

/// A registry's text, as served.
#[must_use]
pub fn text(registry: &Registry) -> String {
    let mut text = String::new();
    // Writing into a String cannot fail.
    let _ = encode(&mut text, registry);
    text
}

fn histogram(h: &Histogram) -> Seconds {
    Seconds::of(h.samples())
}

/// The `/metrics` page for an authority with these counters and this health.
#[must_use]
#[expect(
    clippy::too_many_lines,
    reason = "the metric table: one registration per exported metric"
)]
pub fn render(stats: &Stats, compat: &str, inflight: usize, health: &HealthReport) -> String {
    let mut r = Registry::with_prefix("leasehold");
    let counters: [(&str, &str, u64); 12] = [
        (
            "claims",
            "Work items and workflow instances claimed",
            stats.claims,
        ),
        (
            "workflow_claims",
            "Workflow instances claimed",
            stats.workflow_claims,
        ),
        (
            "reclaims",
            "Claims that took over a lapsed claim (failovers)",
            stats.reclaims,
        ),
        (
            "completions",
            "Successful outcomes the store accepted",
            stats.completions,
        ),
        (
            "leases_lost",
            "Claims another authority took over",
            stats.leases_lost,
        ),
        (
            "fenced_writes_refused",
            "Writes the store refused under a newer claim",
            stats.fenced_writes_refused,
        ),
        (
            "store_errors",
            "Store calls that failed",
            stats.store_errors,
        ),
        (
            "cursor_advances",
            "Subscription cursor advances accepted",
            stats.cursor_advances,
        ),
        (
            "events_delivered",
            "Journal events delivered to subscription handlers",
            stats.events_delivered,
        ),
        (
            "schedules_fired",
            "Schedule firings enqueued",
            stats.schedules_fired,
        ),
        (
            "abandoned_on_shutdown",
            "Claims a shutdown left to lapse: a handler past the grace, an outcome the store refused",
            stats.abandoned_on_shutdown,
        ),
        (
            "lock_step_asides",
            "Polls that claimed nothing, standing aside from a crowded write lock",
            stats.lock_step_asides,
        ),
    ];
    for (name, help, value) in counters {
        r.register(name, help, ConstCounter::new(value));
    }
    let failures = [
        ("retryable", stats.retries),
        ("terminal", stats.failures),
        ("uncertain", stats.uncertain),
    ];
    r.register(
        "attempt_failures",
        "Attempts that did not succeed, by class",
        Labeled::counters_by("class", failures.iter().map(|(c, n)| ((*c).to_owned(), *n))),
    );
    register_handler_outcomes(&mut r, stats);
    r.register(
        "refused_writes",
        "Other refused writes, by code",
        Labeled::counters_by("code", stats.other_refusals.clone()),
    );
    r.register(
        "inflight",
        "Items owned right now",
        ConstGauge::new(i64::try_from(inflight).unwrap_or(i64::MAX)),
    );
    r.register(
        "ready",
        "1 when registered, not stopping, and the store answers",
        ConstGauge::new(i64::from(health.ready)),
    );
    r.register(
        "live",
        "1 while the authority's loop turns",
        ConstGauge::new(i64::from(health.live)),
    );
    if let Some(age) = health.since_heartbeat_ms {
        r.register(
            "heartbeat_age_seconds",
            "Since the last heartbeat the store accepted",
            ConstGauge::new(age as f64 / 1_000.0),
        );
    }
    r.register(
        "reclaim_latency_seconds",
        "How long a lapsed claim waited before this authority reclaimed it",
        Seconds::of(stats.reclaim_latencies_ms.iter().map(|ms| (*ms, 1))),
    );
    r.register(
        "finish_latency_seconds",
        "Claim to accepted outcome",
        histogram(&stats.finish_latency_ms),
    );
    r.register(
        "handler_duration_seconds",
        "How long handlers ran, by handler",
        SecondsBy(
            "handler",
            stats
                .handler_ms
                .iter()
                .map(|(name, h)| (name.clone(), histogram(h)))
                .collect(),
        ),
    );
    r.register(
        "store_call_seconds",
        "How long the authority's store calls took, by verb",
        SecondsBy(
            "verb",
            stats
                .store_call_ms
                .iter()
                .map(|(verb, h)| (verb.clone(), histogram(h)))
                .collect(),
        ),
    );
    r.register(
        "build",
        "The authority's identity",
        Info::new(vec![
            ("instance".to_owned(), stats.instance_id.clone()),
            ("build".to_owned(), stats.build.clone()),
            ("compat".to_owned(), compat.to_owned()),
        ]),
    );
    text(&r)
}

/// Each registered handler's outcomes, labelled `handler` (and `class` for failures): the
/// label values are the registered handlers' names and the model's failure classes, so
/// the number of series is bounded by the registrations.
fn register_handler_outcomes(r: &mut Registry, stats: &Stats) {
    let per_handler = |count: fn(&HandlerCounts) -> u64| {
        Labeled::counters_by(
            "handler",
            stats.handlers.iter().map(|(h, c)| (h.clone(), count(c))),
        )
    };
    r.register(
        "handler_completions",
        "Successful outcomes the store accepted, by handler",
        per_handler(|c| c.completions),
    );
    r.register(
        "handler_failures",
        "Failures the store accepted, by handler and the failure's class (dead letters this authority's claims wrote: uncertain-exhausted)",
        Labeled::counters(
            stats
                .handlers
                .iter()
                .flat_map(|(h, c)| {
                    c.failures.iter().map(move |(class, n)| {
                        (vec![("handler", h.clone()), ("class", class.clone())], *n)
                    })
                })
                .collect(),
        ),
    );
    r.register(
        "handler_retries_scheduled",
        "Work item failures the store turned into a durable retry, by handler",
        per_handler(|c| c.retries_scheduled),
    );
    r.register(
        "handler_uncertain_attempts",
        "Attempts the store counted uncertain through this authority's writes (lapsed claims taken over, failures that may have acted), by handler",
        per_handler(|c| c.uncertain_attempts),
    );
}

/// What `serve` answers with, the page or not: OpenMetrics text either way.
const PAGE_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";
/// The most a request head may take.
const MAX_HEAD_BYTES: usize = 8 * 1024;

/// Serves `/metrics` on `listener` until the task is dropped: one request per connection,
/// `GET /metrics` the page, anything else a 404.
pub async fn serve(listener: TcpListener, core: Arc<AuthorityCore>, health: Health) {
    while let Ok((stream, _)) = listener.accept().await {
        let (core, health) = (core.clone(), health.clone());
        let service = service_fn(move |request: Request<Incoming>| {
            let response = answer(&request, &core, &health);
            async move { Ok::<_, Infallible>(response) }
        });
        let connection = http1::Builder::new()
            .keep_alive(false)
            .max_buf_size(MAX_HEAD_BYTES)
            .serve_connection(TokioIo::new(stream), service);
        tokio::spawn(connection);
    }
}

fn answer(
    request: &Request<Incoming>,
    core: &AuthorityCore,
    health: &Health,
) -> Response<Full<Bytes>> {
    let (status, body) = if request.method() == Method::GET && request.uri().path() == "/metrics" {
        let page = render(
            &core.stats(),
            core.compat(),
            core.inflight(),
            &health.report(),
        );
        (StatusCode::OK, page)
    } else {
        (StatusCode::NOT_FOUND, "try /metrics\n".to_owned())
    };
    let mut response = Response::new(Full::new(Bytes::from(body)));
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static(PAGE_TYPE));
    response
}
