//! `leasehold bench dashboard`: the dashboard's real read-and-render path, off-screen
//! ([`crate::tui::harness`]: the same app, snapshot reader and views as `leasehold attach`,
//! drawn into an in-memory buffer instead of a terminal).
//!
//! Measured: the first complete frame (from before the store is opened to the first frame
//! drawn with data), every live refresh (one shared snapshot read plus one frame) across
//! the main views and a jump to the end of the work list, and this process's peak resident
//! memory. Writers are real `leasehold authority` processes working the store meanwhile,
//! so the refreshes race real commits and the memory figure is the dashboard's alone.

use std::time::{Duration, Instant};

use super::{Fleet, FleetOptions, Report, StoreFacts, wait_for};
use crate::authority::config::StepAside;
use crate::authority::stats::percentile;
use crate::clock::Millis;
use crate::error::Result;
use crate::store::StoreKind;
use crate::store::url::{OpenMode, open};
use crate::tui::action::{Action, ViewId};
use crate::tui::app::AppOptions;
use crate::tui::harness::Harness;
use crate::tui::theme::Theme;

/// The views refreshed, in order (the timeline needs a resource, the detail an instance;
/// the replay reads the last 15 minutes of history around its first step).
const VIEWS: [ViewId; 10] = [
    ViewId::Overview,
    ViewId::Authorities,
    ViewId::Leases,
    ViewId::Work,
    ViewId::Workflows,
    ViewId::Cursors,
    ViewId::Events,
    ViewId::Schedules,
    ViewId::Audit,
    ViewId::Replay,
];

/// What to run.
#[derive(Debug, Clone)]
pub struct DashboardBench {
    pub url: String,
    /// Refreshes per view.
    pub refreshes: usize,
    pub width: u16,
    pub height: u16,
    /// Writers: authority processes (build and workload below) working the store.
    pub writers: FleetOptions,
    pub timeout: Duration,
}

/// Runs the benchmark.
///
/// # Errors
/// An unreadable store, writers that cannot start.
#[expect(
    clippy::too_many_lines,
    reason = "the benchmark's script, step by step"
)]
pub fn run(bench: &DashboardBench) -> Result<Report> {
    let started = Instant::now();
    let store = open(&bench.url, OpenMode::ReadOnly)?;
    let options = AppOptions {
        read_only: true,
        ..AppOptions::default()
    };
    let mut harness = Harness::new(
        store.clone(),
        options,
        Theme::builtin("dark")?,
        None,
        bench.width,
        bench.height,
    );
    let _ = harness.render();
    let first_frame = started.elapsed();

    let mut report = Report::new("dashboard", StoreFacts::of(&store));
    report.knob("size", format!("{}x{}", bench.width, bench.height));
    report.knob("refreshesPerView", bench.refreshes);
    let overview = store.overview()?;
    report.knob(
        "workItems",
        overview.work.iter().map(|c| c.count).sum::<u64>(),
    );
    report.knob(
        "workflowInstances",
        overview.workflows.iter().map(|(_, n)| n).sum::<u64>(),
    );

    let writers = bench.writers.authorities > 0 && store.kind() != StoreKind::Memory;
    report.knob(
        "writers",
        if writers {
            bench.writers.authorities
        } else {
            0
        },
    );
    let fleet = if writers {
        report.note(format!(
            "Writers: {} `leasehold authority` processes (build {}, workload {}) working this store's own items during the refreshes.",
            bench.writers.authorities, bench.writers.build, bench.writers.workload
        ));
        let mut fleet = Fleet::start(&bench.writers, &store)?;
        // Refresh only once the writers are committing.
        let from = store.revision()?;
        let moving = wait_for("the writers' first commit", bench.timeout, || {
            fleet.check_running()?;
            Ok((store.revision()? > from).then_some(()))
        });
        if let Err(e) = moving {
            let _ = fleet.stop();
            return Err(e);
        }
        Some(fleet)
    } else {
        None
    };

    // Refresh times in microseconds, per view.
    let mut samples: Vec<(ViewId, i64)> = Vec::new();
    for view in VIEWS {
        harness.dispatch(Action::SwitchView(view));
        for _ in 0..bench.refreshes {
            let t = Instant::now();
            harness.refresh();
            let _ = harness.render();
            samples.push((view, micros(t.elapsed())));
        }
    }
    // Keyset paging from the far end of a long list.
    harness.dispatch(Action::SwitchView(ViewId::Work));
    let t = Instant::now();
    harness.dispatch(Action::End);
    let _ = harness.render();
    let end_of_work = micros(t.elapsed());
    if let Some(fleet) = fleet {
        fleet.stop()?;
    }

    let all: Vec<i64> = samples.iter().map(|(_, us)| *us).collect();
    let ms = |us: i64| us as f64 / 1_000.0;
    let p = |q: u32| ms(percentile(&all, q).unwrap_or(0));
    report.metric(
        "firstFrameMs",
        "first complete frame",
        ms(micros(first_frame)),
        "ms",
    );
    report.metric("refreshP50Ms", "live refresh, p50", p(50), "ms");
    report.metric("refreshP99Ms", "live refresh, p99", p(99), "ms");
    report.metric("refreshMaxMs", "live refresh, max", p(100), "ms");
    report.metric(
        "endOfWorkMs",
        "jump to the end of work",
        ms(end_of_work),
        "ms",
    );
    let (rss, peak) = resident_memory();
    report.metric("rssMb", "resident memory", rss, "MB");
    report.metric("peakRssMb", "peak resident memory", peak, "MB");
    let by_view = view_p99s(&samples);
    if let Some((view, worst)) = by_view.iter().max_by_key(|(_, p99)| *p99) {
        report.note(format!(
            "Slowest view at p99: {} ({:.2} ms).",
            view.name(),
            ms(*worst)
        ));
        let each: Vec<String> = by_view
            .iter()
            .map(|(view, p99)| format!("{} {:.1}", view.name(), ms(*p99)))
            .collect();
        report.note(format!("p99 by view, ms: {}.", each.join(", ")));
    }
    Ok(report)
}

fn micros(d: Duration) -> i64 {
    i64::try_from(d.as_micros()).unwrap_or(i64::MAX)
}

/// Each view's p99 refresh (microseconds), in [`VIEWS`] order.
fn view_p99s(samples: &[(ViewId, i64)]) -> Vec<(ViewId, i64)> {
    VIEWS
        .iter()
        .filter_map(|view| {
            let times: Vec<i64> = samples
                .iter()
                .filter(|(v, _)| v == view)
                .map(|(_, us)| *us)
                .collect();
            percentile(&times, 99).map(|p99| (*view, p99))
        })
        .collect()
}

/// This process's resident and peak resident memory in MB (`/proc/self/status`; 0 where
/// it is not available).
fn resident_memory() -> (f64, f64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| -> f64 {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|rest| {
                rest.trim()
                    .trim_end_matches("kB")
                    .trim()
                    .parse::<f64>()
                    .ok()
            })
            .map_or(0.0, |kb| kb / 1_024.0)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

/// Default writer knobs: two authorities of the store's default build working its items
/// with the `fast` workload.
#[must_use]
pub fn default_writers(url: &str, authorities: usize, lease_ms: Millis) -> FleetOptions {
    FleetOptions {
        url: url.to_owned(),
        authorities,
        build: crate::authority::config::DEFAULT_BUILD_TAG.to_owned(),
        workload: "fast".into(),
        concurrency: 32,
        batch: 32,
        lease_ms,
        poll_ms: 50,
        processes: true,
        step_aside: StepAside::Auto,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_over_an_empty_memory_store_reports_every_figure() {
        let bench = DashboardBench {
            url: "memory".into(),
            refreshes: 3,
            width: 120,
            height: 40,
            writers: default_writers("memory", 0, 30_000),
            timeout: Duration::from_secs(60),
        };
        let report = run(&bench).expect("runs");
        for key in ["firstFrameMs", "refreshP99Ms", "endOfWorkMs", "peakRssMb"] {
            assert!(report.value(key).is_some(), "{key}");
        }
    }
}
