//! The embedded cluster on virtual time: every named scenario ends with zero checker
//! violations; a stalled authority's late writes are fenced; a rolling deploy holds
//! old-build work as incompatible, then drains it, while schedules keep firing under the
//! new build; the same seed gives the same history.

use leasehold::build_key::compatibility_key;
use leasehold::cluster::control::ClusterControl;
use leasehold::cluster::{self, ClusterOptions, Report, SCENARIOS, Sim};
use leasehold::model::work::WorkFilter;
use leasehold::model::{Grant, PageRequest, WorkKind, WorkState, WriteRecord};

const DURATION_MS: i64 = 60_000;
const SEEDS: [u64; 3] = [1, 7, 2026];

fn run(scenario: &str, seed: u64) -> Report {
    let report = cluster::run_headless(scenario, seed, DURATION_MS, 3).expect("the scenario runs");
    assert_eq!(
        report.checker.violations,
        0,
        "{scenario} seed {seed}:\n{}",
        cluster::render_text(&report)
    );
    assert!(
        report.checker.grants_checked > 0,
        "{scenario} seed {seed}: the checker read no history"
    );
    report
}

fn history(scenario: &str, seed: u64) -> (Vec<Grant>, Vec<WriteRecord>, String) {
    let options = ClusterOptions::headless(scenario, seed, 3, 30_000);
    let mut sim = Sim::new(options).expect("the cluster builds");
    let end = sim.end().expect("a bounded run");
    sim.step_until(end);
    let (grants, writes) = sim
        .store()
        .ownership_history(None, 0, 1_000_000)
        .expect("the history reads");
    let report = sim.report().expect("the report");
    let counts = serde_json::to_string(&(
        report.authorities,
        report.work,
        report.workflows,
        report.events,
    ))
    .expect("serialises");
    (grants, writes, counts)
}

#[test]
fn every_scenario_ends_without_violations() {
    for scenario in SCENARIOS {
        for seed in SEEDS {
            let report = run(scenario, seed);
            let completed: u64 = report.authorities.iter().map(|a| a.completions).sum();
            assert!(
                completed > 50,
                "{scenario} seed {seed} did little work:\n{}",
                cluster::render_text(&report)
            );
        }
    }
}

#[test]
fn a_crashed_authoritys_work_is_reclaimed() {
    for seed in SEEDS {
        let options = ClusterOptions::headless("failover", seed, 3, DURATION_MS);
        let mut sim = Sim::new(options).expect("the cluster builds");
        let end = sim.end().expect("a bounded run");
        sim.step_until(end);
        let report = sim.report().expect("the report");
        assert_eq!(
            report.checker.violations,
            0,
            "{}",
            cluster::render_text(&report)
        );
        assert!(
            report.authorities.iter().any(|a| a.state == "crashed"),
            "{}",
            cluster::render_text(&report)
        );
        assert!(report.failovers > 0, "{}", cluster::render_text(&report));
        assert!(report.reclaim_latency_p99_ms.is_some());
        // Nothing stays claimed by the dead: every claim was taken over or finished. What
        // is still claimed is kept by a running authority: the cursors it holds while idle.
        let running: Vec<&str> = report
            .authorities
            .iter()
            .filter(|a| a.state == "running")
            .map(|a| a.id.as_str())
            .collect();
        let filter = WorkFilter {
            states: vec![WorkState::Claimed],
            ..WorkFilter::default()
        };
        let claimed = sim
            .store()
            .list_work(&filter, &PageRequest::first(10_000))
            .expect("lists")
            .rows;
        for item in &claimed {
            assert_eq!(item.kind, WorkKind::Cursor, "{item:?}");
            let owner = item.owner_id.as_deref().unwrap_or("-");
            assert!(running.contains(&owner), "{item:?} held by {owner}");
            assert!(item.lease_expires_at > Some(sim.now()), "{item:?}");
        }
    }
}

#[test]
fn a_stalled_authoritys_late_writes_are_fenced() {
    for seed in SEEDS {
        let report = run("stall", seed);
        assert!(
            report.fenced_writes_refused > 0,
            "stall seed {seed}:\n{}",
            cluster::render_text(&report)
        );
        assert!(report.failovers > 0);
    }
}

#[test]
fn skewed_clocks_cause_takeovers_but_never_violations() {
    let report = run("skew", 3);
    assert!(
        report.fenced_writes_refused > 0,
        "{}",
        cluster::render_text(&report)
    );
}

#[test]
fn a_rolling_deploy_holds_old_build_work_then_drains_it() {
    for seed in SEEDS {
        let report = run("rolling-deploy", seed);
        let text = cluster::render_text(&report);
        let deploy = report.rolling_deploy.as_ref().expect("the watch ran");
        assert!(
            deploy.held_max > 0,
            "nothing was held while only v2 ran:\n{text}"
        );
        assert!(deploy.held_samples >= 5, "{text}");
        assert_eq!(
            deploy.still_held, 0,
            "old-build work was not drained:\n{text}"
        );
        assert_eq!(report.incompatible_at_end, 0, "{text}");
        assert!(
            report
                .authorities
                .iter()
                .any(|a| a.build == "v2" && a.completions > 0),
            "{text}"
        );
        assert!(
            report
                .authorities
                .iter()
                .any(|a| a.build == "v1" && a.state == "stopped"),
            "{text}"
        );
    }
}

/// A firing is work of the authority observing the schedule: once only v2 runs, every
/// schedule, the old build's too, keeps firing under v2's key, and v2 runs the firings.
#[test]
fn schedules_keep_firing_under_the_new_build() {
    for seed in SEEDS {
        let report = run("rolling-deploy", seed);
        let text = cluster::render_text(&report);
        let deploy = report.rolling_deploy.as_ref().expect("the watch ran");
        assert!(
            deploy.firings_under_new_build.is_some_and(|n| n >= 4),
            "schedules stopped firing under v2:\n{text}"
        );
        assert_eq!(deploy.firings_stranded, 0, "{text}");
        assert!(
            text.contains("schedules under the new build alone:"),
            "{text}"
        );
    }

    // The store's own rows: the old build's schedule fired under v2 after the deploy,
    // and every one of its firings was run by the end.
    let mut sim = Sim::new(ClusterOptions::headless(
        "rolling-deploy",
        7,
        3,
        DURATION_MS,
    ))
    .expect("the cluster builds");
    let end = sim.end().expect("a bounded run");
    sim.step_until(end);
    let filter = WorkFilter {
        kind: Some(WorkKind::Schedule),
        id_prefix: Some("sched-v1-heartbeat@".into()),
        ..WorkFilter::default()
    };
    let firings = sim
        .store()
        .list_work(&filter, &PageRequest::first(1_000))
        .expect("the firings read")
        .rows;
    let v2 = compatibility_key("v2").digest();
    assert!(
        firings.iter().any(|w| w.compat == v2),
        "no firing of the old build's schedule carries v2's key: {firings:?}"
    );
    let due_by_end: Vec<_> = firings
        .iter()
        .filter(|w| w.next_eligible_at < end - 5_000)
        .collect();
    assert!(
        due_by_end.iter().all(|w| w.state.is_terminal()),
        "{due_by_end:?}"
    );
}

#[test]
fn the_same_seed_gives_the_same_history() {
    for scenario in ["chaos", "stall"] {
        let (g1, w1, c1) = history(scenario, 42);
        let (g2, w2, c2) = history(scenario, 42);
        assert!(!g1.is_empty() && !w1.is_empty());
        assert_eq!(g1, g2, "{scenario}: grants differ");
        assert_eq!(w1, w2, "{scenario}: writes differ");
        assert_eq!(c1, c2, "{scenario}: counts differ");
        let (g3, _, _) = history(scenario, 43);
        assert_ne!(g1, g3, "{scenario}: another seed gave the same history");
    }
}

#[test]
fn the_report_serialises_with_camel_case_keys() {
    let report = run("steady", 5);
    let json = serde_json::to_value(&report).expect("serialises");
    for key in [
        "scenario",
        "seed",
        "authorities",
        "failovers",
        "reclaimLatencyP50Ms",
        "work",
        "workflows",
        "checker",
    ] {
        assert!(json.get(key).is_some(), "missing {key}");
    }
    assert!(json["authorities"][0].get("fencedWritesRefused").is_some());
    assert!(cluster::render_text(&report).contains("checker: 0 violations"));
}

#[test]
fn unknown_scenarios_and_counts_are_refused() {
    assert_eq!(
        cluster::run_headless("nope", 1, 1_000, 3)
            .err()
            .map(|e| e.code()),
        Some("INVALID")
    );
    assert_eq!(
        cluster::run_headless("steady", 1, 1_000, 0)
            .err()
            .map(|e| e.code()),
        Some("INVALID")
    );
}

#[test]
fn a_live_cluster_is_controlled_by_hand() {
    let cluster = cluster::Cluster::new(ClusterOptions::live(
        "steady",
        9,
        2,
        cluster::HEADLESS_EPOCH,
    ))
    .expect("builds");
    cluster.advance(5_000);
    let added = cluster.add_authority().expect("adds");
    assert_eq!(added, "auth-3");
    cluster.pause("auth-1");
    cluster.advance(12_000);
    cluster.resume("auth-1");
    cluster.kill("auth-2");
    cluster.skew("auth-3", 1_000);
    cluster.roll_out("v2");
    cluster.advance(20_000);
    let nodes = cluster.nodes();
    assert_eq!(nodes[1].state, cluster::NodeState::Crashed);
    assert!(
        nodes
            .iter()
            .any(|n| n.build == "v2" && n.state == cluster::NodeState::Running)
    );
    let report = cluster.report().expect("reports");
    assert_eq!(
        report.checker.violations,
        0,
        "{}",
        cluster::render_text(&report)
    );
    assert_eq!(ClusterControl::authorities(&cluster).len(), nodes.len());
    assert!(ClusterControl::scenario(&cluster).contains("seed 9"));
}

/// With no faults, each subscription cursor is claimed once and kept for the whole run
/// (renewed while idle, never handed back), so its generation never moves; the workload's
/// events still all reach it.
#[test]
fn a_cursor_is_claimed_once_when_nothing_fails() {
    let (grants, writes, _) = history("steady", 1);
    let cursors: std::collections::BTreeSet<&str> = grants
        .iter()
        .filter(|g| g.resource_id.starts_with("cursor:"))
        .map(|g| g.resource_id.as_str())
        .collect();
    assert!(!cursors.is_empty(), "the workload has subscriptions");
    for cursor in cursors {
        let claims: Vec<&Grant> = grants.iter().filter(|g| g.resource_id == cursor).collect();
        assert_eq!(claims.len(), 1, "{cursor}: {claims:?}");
        let moves = writes
            .iter()
            .filter(|w| w.resource_id == cursor && w.verb == "cursor" && w.accepted)
            .count();
        assert!(moves > 0, "{cursor} never delivered");
    }
}
