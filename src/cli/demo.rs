//! `leasehold demo`: the embedded cluster, headless (the checker's report) or driven
//! live under the dashboard.

use std::io::Write;
use std::sync::Arc;
use std::time::Duration;

use clap::Args;

use super::attach::need_terminal;
use super::{CliResult, Failure, tokio_runtime};
use crate::cluster::{Cluster, ClusterOptions, WorkPace, run_headless};
use crate::foundation::actor::operator;
use crate::tui::TuiOptions;

/// `leasehold demo`.
#[derive(Debug, Clone, Args)]
pub struct DemoArgs {
    /// How many authorities the embedded cluster runs.
    #[arg(long, default_value_t = 3)]
    pub authorities: u32,
    /// A named fault scenario.
    #[arg(long)]
    pub scenario: Option<String>,
    /// The RNG seed (printed when not given).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Run without the dashboard and print the checker's report.
    #[arg(long, requires = "duration")]
    pub headless: bool,
    /// How long a headless run lasts (e.g. `30s`, `5m`).
    #[arg(long)]
    pub duration: Option<String>,
    /// Print the headless report as one JSON object.
    #[arg(long)]
    pub json: bool,
    /// The dashboard theme.
    #[arg(long)]
    pub theme: Option<String>,
    /// How fast the live demo runs: simulated seconds per real second (work takes 1–5 s
    /// of simulated time at 1).
    #[arg(long, default_value_t = 1.0)]
    pub speed: f64,
    /// Start the guided tour: a caption says what is about to happen and where to look,
    /// and each step waits until its effect is on screen.
    #[arg(long, conflicts_with = "headless")]
    pub tour: bool,
    /// With --tour: wait for `n` between steps instead of moving on by itself.
    #[arg(long, requires = "tour")]
    pub manual: bool,
    /// Record the session as an asciicast (v2) file that standard players replay.
    #[arg(long, value_name = "FILE", conflicts_with = "headless")]
    pub record: Option<std::path::PathBuf>,
    /// How much work the live demo generates, relative to what three authorities keep
    /// up with (1).
    #[arg(long, default_value_t = 1.0)]
    pub size: f64,
}

/// A knob that must be a positive, finite number no larger than `max`.
fn knob(name: &str, value: f64, max: f64) -> Result<f64, Failure> {
    if value.is_finite() && value > 0.0 && value <= max {
        Ok(value)
    } else {
        Err(Failure::usage(format!(
            "--{name} must be a number above 0 and at most {max}, not {value}"
        )))
    }
}

/// Parses `30s`, `5m`, `1500ms`, `2h` or plain seconds.
fn parse_duration(text: &str) -> Result<i64, Failure> {
    crate::clock::parse_duration(text).ok_or_else(|| {
        Failure::usage(format!(
            "cannot read duration {:?}: use e.g. 30s, 5m, 1500ms",
            text.trim()
        ))
    })
}

/// Runs `leasehold demo`: headless prints the report (exit 1 on a violation); otherwise
/// the dashboard drives a live cluster.
///
/// # Errors
/// Unknown scenario (exit 2); a violation in a headless run (exit 1).
pub fn run(args: &DemoArgs, out: &mut dyn Write) -> CliResult {
    let scenario = args.scenario.clone().unwrap_or_else(|| {
        if args.headless {
            "chaos".into()
        } else {
            "steady".into()
        }
    });
    let seed = args.seed.unwrap_or_else(|| u64::from(std::process::id()));
    let authorities = usize::try_from(args.authorities).unwrap_or(3).max(1);
    if args.headless {
        let duration = parse_duration(args.duration.as_deref().unwrap_or("60s"))?;
        let report = run_headless(&scenario, seed, duration, authorities)?;
        if args.json {
            writeln!(
                out,
                "{}",
                serde_json::to_string(&report).unwrap_or_default()
            )?;
        } else {
            write!(out, "{}", crate::cluster::render_text(&report))?;
        }
        return if report.checker.violations == 0 {
            Ok(())
        } else {
            Err(Failure::refused(format!(
                "{} invariant violation(s)",
                report.checker.violations
            )))
        };
    }
    let speed = knob("speed", args.speed, 20.0)?;
    let size = knob("size", args.size, 10.0)?;
    need_terminal()?;
    if let Some(path) = &args.record {
        // Refuse an unwritable recording before the terminal is touched.
        std::fs::File::create(path).map_err(|e| {
            Failure::usage(format!(
                "cannot write the recording {}: {e}",
                path.display()
            ))
        })?;
    }
    let options = ClusterOptions::live(
        &scenario,
        seed,
        authorities,
        crate::clock::Clock::now(&crate::clock::SystemClock),
    )
    .paced(WorkPace {
        size,
        ..WorkPace::default()
    });
    let cluster = Arc::new(Cluster::new(options)?);
    let live = cluster.spawn_live(speed, Duration::from_millis(50));
    let store = cluster.store();
    let tui = TuiOptions {
        refresh_ms: 250,
        read_only: false,
        theme: args.theme.clone().unwrap_or_else(|| "dark".into()),
        demo: Some(cluster.clone()),
        actor: operator(),
        writer: None,
        tour: args.tour.then_some(args.manual),
        record: args.record.clone(),
    };
    let result = tokio_runtime()?.block_on(crate::tui::run(store, tui));
    drop(live);
    result.map_err(Failure::from)
}
