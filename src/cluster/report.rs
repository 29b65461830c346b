//! The end-of-run report: per authority (claims, completions, fenced writes refused,
//! leases lost), failovers and reclaim latency, work by state, workflows by status, the
//! fault timeline, the rolling-deploy watch, and the invariant checker's verdict over the
//! store's durable history. Text for people ([`render_text`]) and serde JSON (`--json`).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::Serialize;

use super::faults::FaultRecord;
use super::sim::{ClusterOptions, Sim};
use super::workload::Generated;
use crate::authority::percentile;
use crate::check::{CheckOptions, check};
use crate::clock::{Millis, format_duration};
use crate::error::Result;

/// One authority's line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AuthorityLine {
    pub id: String,
    pub build: String,
    pub state: String,
    pub claims: u64,
    pub completions: u64,
    pub retries: u64,
    pub failures: u64,
    pub fenced_writes_refused: u64,
    /// Refusals other than `WORK_FENCED` (mostly `already-terminal`: a stale owner's
    /// completion of work its successor already finished).
    pub other_refusals: u64,
    pub leases_lost: u64,
    pub reclaims: u64,
    pub uncertain: u64,
    pub store_errors: u64,
}

/// What the rolling-deploy watch saw.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RollingDeploy {
    /// Most non-terminal items at once whose build no running authority had (held as
    /// incompatible, never failed).
    pub held_max: u64,
    /// One-second samples that saw held items.
    pub held_samples: u64,
    /// Effects and schedule firings seen held the first time.
    pub held_items: u64,
    /// Of those, how many were terminal at the end (drained by a compatible authority).
    pub drained: u64,
    /// Of those, how many were still waiting at the end.
    pub still_held: u64,
    /// Schedule firings created while only the new build ran (`None`: the old build
    /// never stopped running).
    pub firings_under_new_build: Option<u64>,
    /// Of those, how many carry a key no authority running then had (stranded).
    pub firings_stranded: u64,
}

/// The checker's verdict.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Verdict {
    pub violations: usize,
    /// `code: sentence`, at most 20.
    pub details: Vec<String>,
    pub incompatible_items: u64,
    /// Items past the stranded bound while live authorities kept claiming their build's
    /// work (a backlog, not a violation).
    pub backlogged_items: u64,
    pub backlogged_instances: u64,
    pub grants_checked: u64,
    pub writes_checked: u64,
}

/// The whole report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    pub scenario: String,
    pub seed: u64,
    pub duration_ms: Millis,
    pub authorities: Vec<AuthorityLine>,
    /// Takeovers of an expired, unreleased claim.
    pub failovers: u64,
    pub reclaim_latency_p50_ms: Option<Millis>,
    pub reclaim_latency_p99_ms: Option<Millis>,
    pub fenced_writes_refused: u64,
    /// Work items by state (all kinds).
    pub work: BTreeMap<String, u64>,
    /// Work items by kind and state.
    pub work_by_kind: BTreeMap<String, BTreeMap<String, u64>>,
    /// Non-terminal items whose build no running authority has, at the end.
    pub incompatible_at_end: u64,
    pub workflows: BTreeMap<String, u64>,
    /// Ingestions by dedup outcome.
    pub events: BTreeMap<String, u64>,
    pub generated: Generated,
    pub faults: Vec<FaultRecord>,
    pub rolling_deploy: Option<RollingDeploy>,
    pub revision: u64,
    pub writes_accepted: u64,
    pub writes_refused: u64,
    pub checker: Verdict,
}

impl Report {
    /// True when the checker found nothing.
    #[must_use]
    pub fn is_clean(&self) -> bool {
        self.checker.violations == 0
    }
}

/// Runs scenario `scenario` headless on virtual time for `duration_ms` with `authorities`
/// authorities, then checks the store and reports.
///
/// # Errors
/// `INVALID` for an unknown scenario or a bad count; a store failure while reporting.
pub fn run_headless(
    scenario: &str,
    seed: u64,
    duration_ms: i64,
    authorities: usize,
) -> Result<Report> {
    run_with(ClusterOptions::headless(
        scenario,
        seed,
        authorities,
        duration_ms,
    ))
}

/// [`run_headless`] with every option.
///
/// # Errors
/// As [`run_headless`].
pub fn run_with(options: ClusterOptions) -> Result<Report> {
    let mut sim = Sim::new(options)?;
    if let Some(end) = sim.end() {
        sim.step_until(end);
    }
    // The run is over: an outage still in progress ends so the store can be read.
    sim.backend.set_outage(false);
    sim.report()
}

impl Sim {
    /// The report as of now, with the checker's verdict.
    ///
    /// # Errors
    /// A store failure.
    #[expect(
        clippy::too_many_lines,
        reason = "the report's fields and sections, one per line"
    )]
    pub fn report(&self) -> Result<Report> {
        let now = self.now();
        let overview = self.store.overview()?;
        let mut authorities = Vec::new();
        let mut latencies = Vec::new();
        let mut failovers = 0;
        for node in &self.nodes {
            let s = node.core.stats();
            failovers += s.reclaims;
            latencies.extend_from_slice(&s.reclaim_latencies_ms);
            authorities.push(AuthorityLine {
                id: node.id.clone(),
                build: node.build.clone(),
                state: node.state.as_str().into(),
                claims: s.claims,
                completions: s.completions,
                retries: s.retries,
                failures: s.failures,
                fenced_writes_refused: s.fenced_writes_refused,
                other_refusals: s.other_refusals.values().sum(),
                leases_lost: s.leases_lost,
                reclaims: s.reclaims,
                uncertain: s.uncertain,
                store_errors: s.store_errors,
            });
        }
        let mut work = BTreeMap::new();
        let mut work_by_kind: BTreeMap<String, BTreeMap<String, u64>> = BTreeMap::new();
        for c in &overview.work {
            *work.entry(c.name().to_owned()).or_default() += c.count;
            *work_by_kind
                .entry(c.kind.as_str().to_owned())
                .or_default()
                .entry(c.name().to_owned())
                .or_default() += c.count;
        }
        let (incompatible_at_end, _) = self.held_count()?;
        let firings = self.firings_under_new_build()?;
        let rolling_deploy =
            (self.scenario.name == "rolling-deploy" || self.deploy.held_samples > 0).then(|| {
                let mut drained = 0;
                for id in &self.deploy.held_ids {
                    if self
                        .store
                        .work(id)
                        .ok()
                        .flatten()
                        .is_some_and(|w| w.state.is_terminal())
                    {
                        drained += 1;
                    }
                }
                let held_items = self.deploy.held_ids.len() as u64;
                RollingDeploy {
                    held_max: self.deploy.held_max,
                    held_samples: self.deploy.held_samples,
                    held_items,
                    drained,
                    still_held: held_items - drained,
                    firings_under_new_build: firings.map(|(created, _)| created),
                    firings_stranded: firings.map_or(0, |(_, stranded)| stranded),
                }
            });
        let t = self.options.timing;
        let options = CheckOptions {
            stranded_after_ms: (t.lease_ms * 4).max(20_000),
            ..CheckOptions::at(now)
        };
        let checked = check(&self.store, &options)?;
        let checker = Verdict {
            violations: checked.violations.len(),
            details: checked
                .violations
                .iter()
                .take(20)
                .map(|v| format!("{}: {}", v.invariant, v.sentence))
                .collect(),
            incompatible_items: checked.incompatible_items,
            backlogged_items: checked.backlogged_items,
            backlogged_instances: checked.backlogged_instances,
            grants_checked: checked.checked.grants,
            writes_checked: checked.checked.writes,
        };
        Ok(Report {
            scenario: self.scenario.name.clone(),
            seed: self.options.seed,
            duration_ms: now - self.options.start_at,
            fenced_writes_refused: authorities.iter().map(|a| a.fenced_writes_refused).sum(),
            authorities,
            failovers,
            reclaim_latency_p50_ms: percentile(&latencies, 50),
            reclaim_latency_p99_ms: percentile(&latencies, 99),
            work,
            work_by_kind,
            incompatible_at_end,
            workflows: overview.workflows.into_iter().collect(),
            events: overview.events.into_iter().collect(),
            generated: self.generator.counts.clone(),
            faults: self.timeline.clone(),
            rolling_deploy,
            revision: overview.revision,
            writes_accepted: overview.writes_accepted,
            writes_refused: overview.writes_refused,
            checker,
        })
    }
}

fn counts(map: &BTreeMap<String, u64>) -> String {
    if map.is_empty() {
        return "none".into();
    }
    map.iter()
        .map(|(k, v)| format!("{k} {v}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The report for people.
#[must_use]
#[expect(
    clippy::too_many_lines,
    reason = "the report's fields and sections, one per line"
)]
pub fn render_text(report: &Report) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "scenario {} · seed {} · {} of virtual time · {} authorities",
        report.scenario,
        report.seed,
        format_duration(report.duration_ms),
        report.authorities.len()
    );
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "{:<8} {:<6} {:<9} {:>7} {:>11} {:>7} {:>8} {:>6} {:>5} {:>11} {:>8} {:>9}",
        "AUTH",
        "BUILD",
        "STATE",
        "CLAIMS",
        "COMPLETIONS",
        "RETRIES",
        "FAILURES",
        "FENCED",
        "LATE",
        "LEASES-LOST",
        "RECLAIMS",
        "UNCERTAIN"
    );
    for a in &report.authorities {
        let _ = writeln!(
            out,
            "{:<8} {:<6} {:<9} {:>7} {:>11} {:>7} {:>8} {:>6} {:>5} {:>11} {:>8} {:>9}",
            a.id,
            a.build,
            a.state,
            a.claims,
            a.completions,
            a.retries,
            a.failures,
            a.fenced_writes_refused,
            a.other_refusals,
            a.leases_lost,
            a.reclaims,
            a.uncertain
        );
    }
    let _ = writeln!(out);
    let latency = |v: Option<Millis>| v.map_or_else(|| "-".to_owned(), format_duration);
    let _ = writeln!(
        out,
        "FENCED: writes refused WORK_FENCED; LATE: other refusals (mostly already-terminal)"
    );
    let _ = writeln!(
        out,
        "failovers {} · reclaim latency p50 {} p99 {} · fenced writes refused {}",
        report.failovers,
        latency(report.reclaim_latency_p50_ms),
        latency(report.reclaim_latency_p99_ms),
        report.fenced_writes_refused
    );
    let _ = writeln!(out, "work: {}", counts(&report.work));
    for (kind, states) in &report.work_by_kind {
        let _ = writeln!(out, "  {kind}: {}", counts(states));
    }
    let _ = writeln!(
        out,
        "incompatible (held) at end: {} · backlogged past the stranded bound: {} item(s), {} instance(s)",
        report.incompatible_at_end,
        report.checker.backlogged_items,
        report.checker.backlogged_instances
    );
    let _ = writeln!(out, "workflows: {}", counts(&report.workflows));
    let _ = writeln!(out, "events: {}", counts(&report.events));
    let _ = writeln!(
        out,
        "writes: {} accepted, {} refused · store revision {}",
        report.writes_accepted, report.writes_refused, report.revision
    );
    if let Some(d) = &report.rolling_deploy {
        let _ = writeln!(
            out,
            "rolling deploy: up to {} items held incompatible ({} samples); of {} effects/firings held, {} drained, {} still held",
            d.held_max, d.held_samples, d.held_items, d.drained, d.still_held
        );
        if let Some(created) = d.firings_under_new_build {
            let _ = writeln!(
                out,
                "schedules under the new build alone: {created} firings, {} stranded",
                d.firings_stranded
            );
        }
    }
    if !report.faults.is_empty() {
        let _ = writeln!(out, "faults:");
        for f in &report.faults {
            let _ = writeln!(out, "  +{:<8} {}", format_duration(f.at_ms), f.what);
        }
    }
    let c = &report.checker;
    let _ = writeln!(out);
    let _ = writeln!(out, "{}", super::demonstrated::demonstrated(report));
    if c.violations == 0 {
        let _ = writeln!(
            out,
            "checker: 0 violations ({} grants, {} writes checked)",
            c.grants_checked, c.writes_checked
        );
    } else {
        let _ = writeln!(out, "checker: {} VIOLATIONS", c.violations);
        for d in &c.details {
            let _ = writeln!(out, "  {d}");
        }
    }
    out
}
