//! The result of one benchmark run: what was measured, on what, with which knobs.
//!
//! JSON shape (one object, camelCase, documented in docs/BENCHMARKS.md):
//! `{"bench": "work", "store": {"kind", "location", "durability"}, "machine": {"cores",
//! "cpu", "os", "arch", "build"}, "knobs": {…}, "results": {"<metric>": number, …}}`.

use std::fmt::Write as _;

use serde::Serialize;
use serde_json::{Map, Value};

use crate::store::{Store, StoreKind};

/// The store a figure was measured on.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StoreFacts {
    pub kind: &'static str,
    /// Path or URL, never with a password.
    pub location: String,
    /// What a returned commit guarantees: the price of every figure.
    pub durability: &'static str,
}

impl StoreFacts {
    #[must_use]
    pub fn of(store: &Store) -> Self {
        Self {
            kind: store.kind().as_str(),
            location: store.describe(),
            durability: durability(store.kind()),
        }
    }
}

/// What is durable when, per provider (README "What is durable when").
#[must_use]
pub fn durability(kind: StoreKind) -> &'static str {
    match kind {
        StoreKind::Memory => "none: process memory, lost with the process",
        StoreKind::Sqlite => {
            "every commit is on disk when it returns (WAL, synchronous=FULL, fsync per commit)"
        }
        StoreKind::Postgres => {
            "every commit is on disk when it returns (synchronous_commit=on, WAL fsync per commit)"
        }
    }
}

/// The machine a figure was measured on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Machine {
    pub cores: usize,
    pub cpu: String,
    pub os: &'static str,
    pub arch: &'static str,
    /// `release` or `debug`: a debug build's figures are not comparable.
    pub build: &'static str,
}

impl Machine {
    /// This machine.
    #[must_use]
    pub fn here() -> Self {
        let cpu = std::fs::read_to_string("/proc/cpuinfo")
            .ok()
            .and_then(|info| {
                info.lines()
                    .find(|l| l.starts_with("model name"))
                    .and_then(|l| l.split_once(':'))
                    .map(|(_, name)| name.trim().to_owned())
            })
            .unwrap_or_else(|| "unknown".into());
        Self {
            cores: std::thread::available_parallelism().map_or(1, usize::from),
            cpu,
            os: std::env::consts::OS,
            arch: std::env::consts::ARCH,
            build: if cfg!(debug_assertions) {
                "debug"
            } else {
                "release"
            },
        }
    }
}

/// One measured figure.
#[derive(Debug, Clone, PartialEq)]
struct Metric {
    key: &'static str,
    label: &'static str,
    value: f64,
    unit: &'static str,
}

/// A benchmark's report.
#[derive(Debug, Clone, PartialEq)]
pub struct Report {
    pub bench: &'static str,
    pub store: StoreFacts,
    pub machine: Machine,
    knobs: Map<String, Value>,
    notes: Vec<String>,
    metrics: Vec<Metric>,
}

impl Report {
    #[must_use]
    pub fn new(bench: &'static str, store: StoreFacts) -> Self {
        Self {
            bench,
            store,
            machine: Machine::here(),
            knobs: Map::new(),
            notes: Vec::new(),
            metrics: Vec::new(),
        }
    }

    /// Records a knob the figures depend on.
    pub fn knob(&mut self, name: &str, value: impl Into<Value>) {
        self.knobs.insert(name.to_owned(), value.into());
    }

    /// A line printed under the table (how the run was set up).
    pub fn note(&mut self, text: impl Into<String>) {
        self.notes.push(text.into());
    }

    /// Records a figure: `key` is its JSON name, `label` its table row.
    pub fn metric(
        &mut self,
        key: &'static str,
        label: &'static str,
        value: f64,
        unit: &'static str,
    ) {
        self.metrics.push(Metric {
            key,
            label,
            value,
            unit,
        });
    }

    /// A recorded figure by JSON name.
    #[must_use]
    pub fn value(&self, key: &str) -> Option<f64> {
        self.metrics.iter().find(|m| m.key == key).map(|m| m.value)
    }

    /// A recorded knob's text, when it is text.
    #[must_use]
    pub fn knob_value(&self, name: &str) -> Option<&str> {
        self.knobs.get(name).and_then(Value::as_str)
    }

    /// The report as one JSON object.
    #[must_use]
    pub fn to_json(&self) -> Value {
        let results: Map<String, Value> = self
            .metrics
            .iter()
            .map(|m| (m.key.to_owned(), number(m.value)))
            .collect();
        serde_json::json!({
            "bench": self.bench,
            "store": self.store,
            "machine": self.machine,
            "knobs": self.knobs,
            "results": results,
        })
    }

    /// The report as a table for people.
    #[must_use]
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        let m = &self.machine;
        let knobs: Vec<String> = self
            .knobs
            .iter()
            .map(|(k, v)| match v {
                Value::String(s) => format!("{k}={s}"),
                other => format!("{k}={other}"),
            })
            .collect();
        let _ = writeln!(out, "leasehold bench {}", self.bench);
        let _ = writeln!(
            out,
            "  store    {} {}\n           {}",
            self.store.kind, self.store.location, self.store.durability
        );
        let _ = writeln!(
            out,
            "  machine  {} cores, {} ({} {}), {} build",
            m.cores, m.cpu, m.os, m.arch, m.build
        );
        let _ = writeln!(out, "  knobs    {}", knobs.join(" "));
        let _ = writeln!(out);
        let width = self
            .metrics
            .iter()
            .map(|m| m.label.len())
            .max()
            .unwrap_or(0);
        for metric in &self.metrics {
            let line = format!(
                "  {:<width$}  {:>12} {}",
                metric.label,
                grouped(metric.value),
                metric.unit
            );
            let _ = writeln!(out, "{}", line.trim_end());
        }
        for note in &self.notes {
            let _ = writeln!(out, "\n  {note}");
        }
        out
    }
}

/// Integers stay integers in JSON; fractions keep one decimal.
fn number(v: f64) -> Value {
    if v.fract() == 0.0 && v.abs() < 9.0e15 {
        Value::from(v as i64)
    } else {
        Value::from((v * 10.0).round() / 10.0)
    }
}

/// `12345.6` → `12,346`; values under 100 keep one decimal.
fn grouped(v: f64) -> String {
    if v.abs() < 100.0 && v.fract() != 0.0 {
        return format!("{v:.1}");
    }
    let digits = format!("{:.0}", v.abs());
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    if v < 0.0 {
        out.insert(0, '-');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figures_group_thousands_and_keep_small_fractions() {
        assert_eq!(grouped(36_123.4), "36,123");
        assert_eq!(grouped(1_000_000.0), "1,000,000");
        assert_eq!(grouped(12.34), "12.3");
        assert_eq!(grouped(7.0), "7");
        assert_eq!(number(3.0), Value::from(3));
        assert_eq!(number(2.34567), Value::from(2.3));
    }

    #[test]
    fn json_has_the_documented_fields() {
        let mut r = Report::new(
            "work",
            StoreFacts {
                kind: "memory",
                location: "memory".into(),
                durability: durability(StoreKind::Memory),
            },
        );
        r.knob("items", 10);
        r.metric("drainPerSec", "drain", 1234.6, "items/s");
        let v = r.to_json();
        assert_eq!(v["bench"], "work");
        assert_eq!(v["store"]["kind"], "memory");
        assert!(v["machine"]["cores"].as_u64().is_some_and(|c| c >= 1));
        assert_eq!(v["knobs"]["items"], 10);
        assert_eq!(v["results"]["drainPerSec"], 1234.6);
        let text = r.to_text();
        assert!(
            text.contains("drain") && text.contains("1,235 items/s"),
            "{text}"
        );
    }
}
