//! The embedded cluster on virtual time: every named scenario ends with zero checker
//! violations; a stalled authority's late writes are fenced; a rolling deploy holds
//! old-build work as incompatible, then drains it, while schedules keep firing under the
//! new build; the same seed gives the same history.

use leasehold::authority::workload::SCHEDULE_HANDLER;
use leasehold::cluster::control::ClusterControl;
use leasehold::cluster::{self, ClusterOptions, Report, SCENARIOS, Sim};
use leasehold::model::CompatSet;
use leasehold::model::HandlerVersion;
use leasehold::model::handler_key;
use leasehold::model::work::WorkFilter;
use leasehold::model::{Grant, PageRequest, WorkKind, WorkState, WriteRecord};
use leasehold::workflow::keys::claim_keys;

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

/// The scenarios that exist to show fencing show it: every seed ends with late writes
/// refused `WORK_FENCED` next to a clean checker, every refusal an authority counted is a
/// refusal record in the store (and no other), and the report's closing sentence says so.
#[test]
fn failover_stall_and_chaos_end_with_fenced_writes_and_a_clean_checker() {
    for scenario in ["failover", "stall", "chaos"] {
        for seed in SEEDS {
            let options = ClusterOptions::headless(scenario, seed, 3, DURATION_MS);
            let mut sim = Sim::new(options).expect("the cluster builds");
            sim.step_until(sim.end().expect("a bounded run"));
            let report = sim.report().expect("the report");
            let text = cluster::render_text(&report);
            assert!(report.is_clean(), "{scenario} seed {seed}:\n{text}");
            assert!(
                report.fenced_writes_refused > 0,
                "{scenario} seed {seed} fenced nothing:\n{text}"
            );
            let (_, writes) = sim
                .store()
                .ownership_history(None, 0, 1_000_000)
                .expect("the history reads");
            for a in &report.authorities {
                // A refused renewal is how an owner learns it lost the claim, not a write
                // of its work: the authority counts it as a lost lease.
                let recorded = writes
                    .iter()
                    .filter(|w| !w.accepted && w.verb != "renew" && w.owner_id == a.id)
                    .count() as u64;
                assert_eq!(
                    recorded,
                    a.fenced_writes_refused + a.other_refusals,
                    "{scenario} seed {seed}: {} counted {} fenced + {} other refusals; the store recorded {:?}",
                    a.id,
                    a.fenced_writes_refused,
                    a.other_refusals,
                    writes
                        .iter()
                        .filter(|w| !w.accepted && w.owner_id == a.id)
                        .collect::<Vec<_>>()
                );
            }
            assert!(text.contains("refused WORK_FENCED"), "{text}");
            assert!(text.contains("0 violations"), "{text}");
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
        // is still claimed is kept by a running authority under a live lease: the cursors
        // it holds while idle, and whatever it was running when the run ended.
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
    // The rolling deploy's new build runs the next major version of its handlers.
    let v2 = handler_key(SCHEDULE_HANDLER, &HandlerVersion::demo().next_major());
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

/// A cluster's history never depends on what else ran in the process: the authorities of
/// a cluster built after another one started a day later still start at their own epoch
/// (a start record kept per process once pushed every later cluster's starts past it).
#[test]
fn a_clusters_starts_do_not_depend_on_other_clusters_in_the_process() {
    let day = 86_400_000;
    let ahead = cluster::Cluster::new(ClusterOptions::live(
        "steady",
        3,
        3,
        cluster::HEADLESS_EPOCH + day,
    ))
    .expect("builds");
    ahead.advance(1_000);
    let here = paced(3, 1_000);
    let starts: Vec<i64> = here
        .store()
        .list_authorities(&leasehold::model::PageRequest::first(10))
        .expect("reads")
        .rows
        .iter()
        .map(|a| a.started_at - cluster::HEADLESS_EPOCH)
        .collect();
    assert_eq!(starts, [0, 0, 0], "started at the cluster's own epoch");
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
    cluster.pause("auth-1").expect("pauses");
    cluster.advance(12_000);
    cluster.resume("auth-1").expect("resumes");
    cluster.kill("auth-2").expect("kills");
    cluster.skew("auth-3", 1_000).expect("skews");
    cluster.roll_out("v2").expect("rolls out");
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

/// A live (paced) cluster warmed up for `warm_ms`, its store's history read back.
fn paced(seed: u64, warm_ms: i64) -> cluster::Cluster {
    let cluster = cluster::Cluster::new(ClusterOptions::live(
        "steady",
        seed,
        3,
        cluster::HEADLESS_EPOCH,
    ))
    .expect("builds");
    cluster.advance(warm_ms);
    cluster
}

/// Claims the store holds now, by owner (work items in state `claimed`).
fn claims_by_owner(store: &leasehold::Store) -> std::collections::BTreeMap<String, usize> {
    let filter = WorkFilter {
        states: vec![WorkState::Claimed],
        ..WorkFilter::default()
    };
    let page = store
        .list_work(&filter, &PageRequest::first(10_000))
        .expect("lists");
    let mut owners = std::collections::BTreeMap::new();
    for w in page.rows {
        *owners.entry(w.owner_id.unwrap_or_default()).or_insert(0) += 1;
    }
    owners
}

/// The live demo's work takes seconds, so at any moment every authority holds claims
/// (a fault always has something to move), and the store's own history shows attempts
/// lasting 1 s or more, with a steady trickle of every kind completing.
#[test]
fn a_paced_cluster_keeps_every_authority_busy_for_seconds() {
    let cluster = paced(3, 20_000);
    let store = cluster.store();
    let mut idle = std::collections::BTreeMap::<String, u32>::new();
    for _ in 0..60 {
        cluster.advance(1_000);
        let owners = claims_by_owner(&store);
        for n in cluster.nodes() {
            if owners.get(&n.id).copied().unwrap_or(0) == 0 {
                *idle.entry(n.id).or_default() += 1;
            }
        }
    }
    // Arrivals are random: an authority may sit empty for a moment, never for long.
    assert!(
        idle.values().all(|&seconds| seconds <= 3),
        "seconds without a claim, of 60: {idle:?}"
    );
    let (grants, writes) = store.ownership_history(None, 0, 1_000_000).expect("reads");
    let mut spans = Vec::new();
    for w in writes.iter().filter(|w| w.accepted && w.verb == "complete") {
        if let Some(g) = grants
            .iter()
            .rfind(|g| g.resource_id == w.resource_id && g.generation == w.generation)
        {
            spans.push(w.at - g.at);
        }
    }
    assert!(spans.len() > 20, "few completions: {}", spans.len());
    let quick = spans.iter().filter(|&&ms| ms < 1_000).count();
    assert_eq!(
        quick,
        0,
        "attempts under a second: {quick} of {}",
        spans.len()
    );
    let report = cluster.report().expect("reports");
    assert!(
        report.workflows.values().sum::<u64>() > 0,
        "no workflows: {:?}",
        report.workflows
    );
    for kind in ["effect", "schedule", "cursor"] {
        assert!(
            report.work_by_kind.contains_key(kind),
            "no {kind} work: {:?}",
            report.work_by_kind
        );
    }
    assert!(
        report.work_by_kind["effect"]
            .get("succeeded")
            .copied()
            .unwrap_or(0)
            > 5
    );
    assert!(report.is_clean(), "{}", cluster::render_text(&report));
}

fn registration(store: &leasehold::Store, id: &str) -> leasehold::model::Authority {
    store
        .list_authorities(&PageRequest::first(100))
        .expect("lists")
        .rows
        .into_iter()
        .find(|a| a.instance_id == id)
        .expect("registered")
}

/// `R` on a crashed authority restarts it as a new incarnation of the same id: it
/// registers again (a later start), claims again, and what its predecessor held was
/// reclaimed under a higher generation — the checker stays clean.
#[test]
fn a_crashed_authority_restarts_as_a_new_incarnation() {
    let cluster = paced(5, 15_000);
    let store = cluster.store();
    let held: Vec<String> = store
        .list_work(
            &WorkFilter {
                states: vec![WorkState::Claimed],
                owner: Some("auth-1".into()),
                ..WorkFilter::default()
            },
            &PageRequest::first(100),
        )
        .expect("lists")
        .rows
        .into_iter()
        .map(|w| w.id)
        .collect();
    assert!(!held.is_empty(), "auth-1 holds work before the crash");
    let before = registration(&store, "auth-1");
    cluster.kill("auth-1").expect("kills");
    assert!(
        cluster.pause("auth-1").is_err(),
        "a crashed authority cannot pause"
    );
    let said = cluster.resume("auth-1").expect("restarts");
    assert!(said.contains("restart"), "{said}");
    assert_eq!(cluster.nodes()[0].state, cluster::NodeState::Restarting);
    cluster.advance(15_000);
    assert_eq!(cluster.nodes()[0].state, cluster::NodeState::Running);
    let after = registration(&store, "auth-1");
    assert!(after.started_at > before.started_at, "a new incarnation");
    assert!(
        claims_by_owner(&store).get("auth-1").copied().unwrap_or(0) > 0,
        "the restarted authority claims again"
    );
    // Every claim the crashed incarnation held was granted again under a higher
    // generation (to another authority or to the new incarnation), so anything the old
    // process could still present is fenced.
    let (grants, _) = store.ownership_history(None, 0, 1_000_000).expect("reads");
    for id in &held {
        let generations: Vec<u64> = grants
            .iter()
            .filter(|g| &g.resource_id == id)
            .map(|g| g.generation)
            .collect();
        assert!(
            generations.len() >= 2 && generations.windows(2).all(|w| w[0] < w[1]),
            "{id} was not reclaimed under a higher generation: {generations:?}"
        );
    }
    let report = cluster.report().expect("reports");
    assert!(report.is_clean(), "{}", cluster::render_text(&report));
}

/// The keys an authority running the built-in handlers at `version` claims by.
fn keys_at(store: &leasehold::Store, version: &HandlerVersion) -> CompatSet {
    let versions = leasehold::authority::workload::default_workload(0)
        .at_version(version)
        .handler_versions();
    claim_keys(&versions, &store.deployed_definitions().expect("reads"))
}

/// `B` deploys beside the fleet without stopping or crashing it, under a new tag.
/// Compatible (the same handler versions): the new authority claims the fleet's work.
/// Incompatible (the next major version): new work carries the new keys and only the new
/// authority claims it, while the old fleet keeps draining the old. Alone with a fleet's
/// worth of new work for two minutes, the new authority still serves every kind and
/// every handler in turn: the checker finds nothing stranded, only a backlog.
#[test]
fn a_deploy_beside_the_fleet_leaves_the_right_items_claimable() {
    for compatible in [true, false] {
        let cluster = paced(11, 10_000);
        let store = cluster.store();
        let (id, build) = cluster.deploy(compatible).expect("deploys");
        assert_eq!(build, "v2", "a new tag either way");
        cluster.advance(120_000);
        let nodes = cluster.nodes();
        assert!(
            nodes.iter().all(|n| n.state == cluster::NodeState::Running),
            "the old fleet keeps running: {nodes:?}"
        );
        let (grants, _) = store.ownership_history(None, 0, 1_000_000).expect("reads");
        let by_new: Vec<&Grant> = grants
            .iter()
            .filter(|g| g.owner_id == id && g.item_compat.is_some())
            .collect();
        assert!(!by_new.is_empty(), "{id} claims work");
        let old_keys = keys_at(&store, &HandlerVersion::demo());
        let new_version = if compatible {
            HandlerVersion::demo()
        } else {
            HandlerVersion::demo().next_major()
        };
        let new_keys = keys_at(&store, &new_version);
        assert_eq!(old_keys == new_keys, compatible);
        let key_of = |g: &Grant| g.item_compat.clone().unwrap_or_default();
        for g in by_new {
            assert!(new_keys.contains(&key_of(g)), "{g:?}");
        }
        let old_claims_new = grants
            .iter()
            .any(|g| g.owner_id != id && !compatible && new_keys.contains(&key_of(g)));
        assert!(!old_claims_new, "the old fleet never claims new-build work");
        if !compatible {
            assert!(
                grants.iter().any(|g| g.owner_id != id
                    && g.at > cluster::HEADLESS_EPOCH + 12_000
                    && old_keys.contains(&key_of(g))),
                "the old fleet keeps draining old-build work"
            );
        }
        let report = cluster.report().expect("reports");
        assert!(report.is_clean(), "{}", cluster::render_text(&report));
    }
}

/// The guided tour runs end to end on virtual time: every step's promised effect
/// happened, in order, and each is what the store recorded — the paused authority's
/// claims taken over under a higher generation, then its late write refused
/// `WORK_FENCED`, the killed one's claims reclaimed, and so on.
#[test]
fn the_tour_runs_end_to_end_and_every_promise_is_kept() {
    use leasehold::cluster::tour::{STEPS, Step, Tour};
    for seed in SEEDS {
        let c = cluster::Cluster::new(ClusterOptions::live(
            "steady",
            seed,
            4,
            cluster::HEADLESS_EPOCH,
        ))
        .expect("builds");
        let store = c.store();
        let mut tour = Tour::new(false);
        let mut captions = Vec::new();
        for _ in 0..2_400 {
            c.advance(250);
            tour.tick(&c, &store).expect("ticks");
            let caption = tour.caption();
            if captions.last() != Some(&caption) {
                captions.push(caption);
            }
            if tour.is_done() {
                break;
            }
        }
        assert!(
            tour.is_done(),
            "seed {seed}: stuck at {:?}: {captions:#?}",
            tour.step()
        );
        let log = tour.log();
        let steps: Vec<Step> = log.iter().map(|s| s.step).collect();
        assert_eq!(steps, STEPS[..STEPS.len() - 1], "seed {seed}");
        for seen in log {
            assert!(seen.happened, "seed {seed}: {seen:?}\n{captions:#?}");
        }
        assert!(
            log.windows(2).all(|w| w[0].at <= w[1].at),
            "in order: {log:?}"
        );
        // Someone who has never seen the product sees the whole story within two minutes.
        let took = log.last().expect("steps").at - cluster::HEADLESS_EPOCH;
        assert!(
            took < 120_000,
            "seed {seed}: the tour took {took} ms: {log:#?}"
        );
        assert_eq!(
            log[1].subject, log[2].subject,
            "the resumed one is the paused one"
        );
        let paused = log[1].subject.clone().expect("paused someone");
        let (grants, writes) = store.ownership_history(None, 0, 1_000_000).expect("reads");
        assert!(grants.iter().any(|g| {
            g.at <= log[1].at
                && g.took_over
                    .as_ref()
                    .is_some_and(|t| t.from_owner == paused && t.from_generation < g.generation)
        }));
        assert!(writes.iter().any(|w| !w.accepted
            && w.owner_id == paused
            && w.refusal.as_deref() == Some("WORK_FENCED")
            && w.at <= log[2].at));
        let killed = log[3].subject.clone().expect("killed someone");
        assert!(
            grants
                .iter()
                .any(|g| g.took_over.as_ref().is_some_and(|t| t.from_owner == killed))
        );
        assert!(captions.iter().any(|c| c.contains("WORK_FENCED")));
        let report = c.report().expect("reports");
        assert!(report.is_clean(), "{}", cluster::render_text(&report));
    }
}

/// The live demo's knobs refuse nonsense in one line (exit 2) before anything starts;
/// `--manual` needs `--tour`, and neither `--tour` nor `--record` goes with `--headless`.
#[test]
fn demo_knobs_refuse_bad_values_in_one_line() {
    let bin = env!("CARGO_BIN_EXE_leasehold");
    for args in [
        &["demo", "--speed", "0"][..],
        &["demo", "--speed", "NaN"],
        &["demo", "--size", "-1"],
        &["demo", "--size", "1000"],
        &["demo", "--manual"],
        &["demo", "--headless", "--duration", "5s", "--tour"],
        &[
            "demo",
            "--headless",
            "--duration",
            "5s",
            "--record",
            "x.cast",
        ],
    ] {
        let out = std::process::Command::new(bin)
            .args(args)
            .output()
            .expect("runs");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(out.stdout.is_empty(), "{args:?}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        if args.iter().any(|a| *a == "--speed" || *a == "--size") {
            assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
        }
    }
}

/// A simulated week of schedules, effects, events and workflows under short retention
/// (one hour, trimmed every five minutes, so the week spans 168 retention windows): the
/// rows stay flat instead of growing with the week, nothing a live instance needs was
/// trimmed, an event id re-sent after its window is accepted again, and the checker is
/// clean over the range it states.
#[test]
fn a_week_under_short_retention_stays_flat_and_clean() {
    use leasehold::model::DedupOutcome;
    use leasehold::model::event::NewEvent;
    use leasehold::store::RetentionPolicy;

    const MINUTE: i64 = 60_000;
    const HOUR: i64 = 60 * MINUTE;
    const DAY: i64 = 24 * HOUR;
    let mut options = ClusterOptions::headless("steady", 11, 2, 7 * DAY);
    options.timing = cluster::Timing {
        lease_ms: 10 * MINUTE,
        renew_ms: 3 * MINUTE,
        poll_ms: MINUTE,
        heartbeat_ms: 3 * MINUTE,
        concurrency: 64,
        batch: 64,
    };
    options.generate_every_ms = MINUTE;
    options.retention = RetentionPolicy {
        finished_ms: HOUR,
        audit_ms: HOUR,
        dedup_ms: HOUR,
        ..RetentionPolicy::default()
    };
    options.trim_every_ms = 5 * MINUTE;
    let mut sim = Sim::new(options).expect("the cluster builds");
    let store = sim.store().clone();
    let resent = NewEvent {
        event_type: "soak-probe".into(),
        source: Some("soak".into()),
        external_id: Some("probe-1".into()),
        payload: serde_json::json!({}),
    };
    assert_eq!(
        store.ingest(&resent).expect("ingest").outcome,
        DedupOutcome::Accepted
    );
    let start = sim.now();
    let rows = |store: &leasehold::Store| {
        let o = store.overview().expect("overview");
        let work: u64 = o.work.iter().map(|c| c.count).sum();
        let instances: u64 = o.workflows.iter().map(|(_, n)| n).sum();
        let ingestions: u64 = o.events.iter().map(|(_, n)| n).sum();
        (work, instances, ingestions)
    };
    sim.step_until(start + DAY);
    let early = rows(&store);
    sim.step_until(start + 6 * DAY);
    let late = rows(&store);
    let bounded = |early: u64, late: u64| late <= early * 2 + 50;
    assert!(
        bounded(early.0, late.0) && bounded(early.1, late.1) && bounded(early.2, late.2),
        "rows grew with the week: day 1 {early:?}, day 6 {late:?}"
    );
    assert!(late.0 > 0 && late.2 > 0, "the week ran: {late:?}");
    assert_eq!(
        store.ingest(&resent).expect("ingest").outcome,
        DedupOutcome::Accepted,
        "an event id past its window is accepted again"
    );
    assert_eq!(
        store.ingest(&resent).expect("ingest").outcome,
        DedupOutcome::Duplicate
    );

    let end = sim.end().expect("a bounded run");
    sim.step_until(end);
    // Every instance still running or waiting kept its whole history.
    let live = store
        .list_instances(None, &PageRequest::first(100_000))
        .expect("instances")
        .rows;
    for row in live.iter().filter(|r| !r.status.is_terminal()) {
        let history = store.workflow_history(&row.instance_id).expect("history");
        assert_eq!(
            history.first().map(|h| h.position),
            Some(1),
            "{} lost its history",
            row.instance_id
        );
    }
    let report = sim.report().expect("the report");
    assert_eq!(
        report.checker.violations,
        0,
        "{}",
        cluster::render_text(&report)
    );
    let check = leasehold::check::check(&store, &leasehold::check::CheckOptions::at(sim.now()))
        .expect("check");
    let text = leasehold::check::render_text(&check);
    assert!(
        text.contains(&format!(
            "history from revision {} to {}",
            check.history_from, check.through_revision
        )),
        "{text}"
    );
}
