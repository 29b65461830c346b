//! The demo driven through the dashboard over a real embedded cluster on virtual time:
//! every fault key works from every main view (on the selected authority or through the
//! picker) and does to the cluster what it says, as the store's own records show; `R`
//! brings a crashed authority back; a skewed clock never shows a negative heartbeat age.

use std::sync::Arc;

use crossterm::event::KeyCode;
use leasehold::cluster::control::ClusterControl;
use leasehold::cluster::{Cluster, ClusterOptions, HEADLESS_EPOCH, NodeState};
use leasehold::tui::action::{Action, ViewId};
use leasehold::tui::app::AppOptions;
use leasehold::tui::harness::{Harness, buffer_text};
use leasehold::tui::theme::Theme;

fn cluster(seed: u64) -> Arc<Cluster> {
    fleet(seed, 4)
}

/// A live cluster of `authorities` ten seconds in.
fn fleet(seed: u64, authorities: usize) -> Arc<Cluster> {
    let c = Cluster::new(ClusterOptions::live(
        "steady",
        seed,
        authorities,
        HEADLESS_EPOCH,
    ))
    .expect("builds");
    c.advance(10_000);
    Arc::new(c)
}

fn dashboard(cluster: &Arc<Cluster>) -> Harness {
    sized(cluster, (160, 40))
}

fn sized(cluster: &Arc<Cluster>, (width, height): (u16, u16)) -> Harness {
    Harness::new(
        cluster.store(),
        AppOptions {
            demo: true,
            ..AppOptions::default()
        },
        Theme::builtin("dark").expect("a shipped theme"),
        Some(cluster.clone() as Arc<dyn ClusterControl>),
        width,
        height,
    )
}

fn screen(h: &Harness) -> String {
    buffer_text(&h.render())
}

fn state(cluster: &Cluster, id: &str) -> NodeState {
    cluster
        .nodes()
        .into_iter()
        .find(|n| n.id == id)
        .expect("known")
        .state
}

/// Every main view shows the fault keys in its footer, and each key there opens the
/// picker of the authorities it applies to, then acts on exactly the one picked: kill,
/// pause, resume, restart, skew; add and a compatible deploy start one more each.
#[test]
fn fault_keys_work_from_every_view() {
    for view in ViewId::MAIN {
        let c = cluster(21);
        let mut h = dashboard(&c);
        h.dispatch(Action::SwitchView(view));
        h.refresh();
        // Past any status message the switch raised (the timeline's hint).
        h.advance(7_000);
        let shown = screen(&h);
        assert!(shown.contains("K P R A B X"), "{view:?} footer:\n{shown}");
        if view == ViewId::Authorities {
            // Here the key acts on the selected row (the first authority).
            h.press('K');
            assert_eq!(state(&c, "auth-1"), NodeState::Crashed, "{view:?}");
        } else {
            h.press('K');
            let picker = screen(&h);
            assert!(
                picker.contains("kill which authority?"),
                "{view:?}:\n{picker}"
            );
            h.press('1');
            assert_eq!(state(&c, "auth-1"), NodeState::Crashed, "{view:?}");
            // P offers the running ones: auth-2 first.
            h.press('P');
            h.press('1');
            assert_eq!(state(&c, "auth-2"), NodeState::Paused, "{view:?}");
            // R offers the crashed and the paused: auth-1, auth-2.
            h.press('R');
            h.press('2');
            assert_eq!(state(&c, "auth-2"), NodeState::Running, "{view:?}");
            h.press('R');
            h.press('1');
            assert_eq!(state(&c, "auth-1"), NodeState::Restarting, "{view:?}");
            // X offers every authority not stopped: auth-3 is the third.
            h.press('X');
            h.press('3');
            h.type_text("5000");
            h.key(KeyCode::Enter);
            let skewed = c
                .nodes()
                .into_iter()
                .find(|n| n.id == "auth-3")
                .expect("known");
            assert_eq!(skewed.clock_offset_ms, 5_000, "{view:?}");
            h.press('A');
            h.press('B');
            h.press('1');
            let nodes = c.nodes();
            assert_eq!(nodes.len(), 6, "{view:?}: A and B each started one");
            assert_eq!(
                nodes[4].build, "v1",
                "{view:?}: A adds to the fleet's build"
            );
            assert_eq!(
                nodes[5].build, "v2",
                "{view:?}: a compatible deploy is a new tag with the same handler versions"
            );
            c.advance(15_000);
            assert_eq!(
                state(&c, "auth-1"),
                NodeState::Running,
                "{view:?}: restarted"
            );
        }
        // The store records the operator's action.
        let audit = c
            .store()
            .list_audit(&leasehold::model::PageRequest::first(10))
            .expect("reads")
            .rows;
        assert!(
            audit
                .iter()
                .any(|a| a.action == "demo-kill" && a.target == "auth-1"),
            "{audit:?}"
        );
    }
}

/// Pause, then `R` resumes; kill, then `R` restarts a new incarnation that registers once
/// the old one is gone and claims again. `B` from the picker deploys beside the fleet.
#[test]
fn resume_restart_and_deploy_through_the_picker() {
    let c = cluster(22);
    let mut h = dashboard(&c);
    h.press('P');
    h.press('2');
    assert_eq!(state(&c, "auth-2"), NodeState::Paused);
    c.advance(7_000);
    h.press('R');
    assert!(screen(&h).contains("auth-2 (paused)"), "{}", screen(&h));
    h.press('1');
    assert_eq!(state(&c, "auth-2"), NodeState::Running);
    h.press('K');
    h.press('3');
    assert_eq!(state(&c, "auth-3"), NodeState::Crashed);
    h.press('R');
    assert!(screen(&h).contains("auth-3 (crashed)"), "{}", screen(&h));
    h.press('1');
    assert!(
        h.app
            .status()
            .expect("said")
            .text
            .contains("restarted auth-3"),
        "{:?}",
        h.app.status()
    );
    c.advance(15_000);
    assert_eq!(state(&c, "auth-3"), NodeState::Running);
    h.press('B');
    h.press('2');
    let nodes = c.nodes();
    assert_eq!(nodes.len(), 5);
    assert_eq!(nodes[4].build, "v2");
    assert!(nodes[..4].iter().all(|n| n.state == NodeState::Running));
    c.advance(10_000);
    let report = c.report().expect("reports");
    assert!(
        report.is_clean(),
        "{}",
        leasehold::cluster::render_text(&report)
    );
    // The resumed owner finds its claims taken over: at its next renewal (its outcome is
    // then dropped) or at its next write (refused as fenced), whichever comes first.
    let resumed = report
        .authorities
        .iter()
        .find(|a| a.id == "auth-2")
        .expect("auth-2 in the report");
    assert!(
        resumed.leases_lost + resumed.fenced_writes_refused > 0,
        "the resumed owner lost its claims: {}",
        leasehold::cluster::render_text(&report)
    );
}

/// A clock skewed ahead stamps heartbeats in the future: the authorities view says how
/// far ahead, never a negative age.
#[test]
fn a_skewed_clock_never_shows_a_negative_heartbeat_age() {
    let c = cluster(23);
    let mut h = dashboard(&c);
    h.press('2');
    h.key(KeyCode::Down);
    h.press('X');
    h.type_text("8000");
    h.key(KeyCode::Enter);
    c.advance(2_000);
    h.refresh();
    h.advance(250);
    let shown = screen(&h);
    assert!(shown.contains("ahead"), "{shown}");
    for line in shown.lines().filter(|l| l.contains("auth-")) {
        assert!(!line.contains(" -"), "negative age: {line}");
    }
}

/// The ticker states what the store recorded: after a pause past the lease and a resume,
/// it shows a reclaim from the paused authority (with both generations) and its refused
/// late write, each matching a failover / refused-write record of the store, and the
/// faults done to the cluster. `e` hides it.
#[test]
fn the_ticker_shows_reclaims_and_fenced_writes_as_the_store_recorded_them() {
    let c = cluster(24);
    let mut h = dashboard(&c);
    h.press('2');
    h.press('P');
    h.press('1');
    c.advance(8_000);
    h.press('R');
    h.press('1');
    c.advance(2_000);
    h.refresh();
    h.advance(7_000);
    let shown = screen(&h);
    let (grants, writes) = c
        .store()
        .ownership_history(None, 0, 1_000_000)
        .expect("reads");
    // Each takeover from the paused authority that the pane has room for reads as the
    // store recorded it: resource, both owners, both generations.
    let taken: Vec<_> = grants
        .iter()
        .filter(|g| {
            g.took_over
                .as_ref()
                .is_some_and(|t| t.from_owner == "auth-1")
        })
        .collect();
    assert!(
        !taken.is_empty(),
        "the paused authority's claims were taken over"
    );
    let shown_reclaims = taken
        .iter()
        .filter(|g| {
            let from = g.took_over.as_ref().map_or(0, |t| t.from_generation);
            shown.lines().any(|l| {
                l.contains(&format!(
                    "{} reclaimed {} from auth-1",
                    g.owner_id, g.resource_id
                )) && l.contains(&format!("gen {from} → {}", g.generation))
            })
        })
        .count();
    assert!(
        shown_reclaims > 0,
        "no reclaim line matches {taken:?}:\n{shown}"
    );
    let refused = writes
        .iter()
        .rev()
        .find(|w| !w.accepted && w.owner_id == "auth-1" && w.verb != "renew")
        .expect("the resumed authority's late write was refused");
    assert!(
        shown.lines().any(|l| l.contains("FENCED")
            && l.contains(&format!(
                "{} {}",
                refused.refusal.as_deref().unwrap_or(""),
                refused.resource_id
            ))
            && l.contains(&format!("by auth-1 at gen {}", refused.generation))),
        "no line for {refused:?}:\n{shown}"
    );
    assert!(shown.contains("FAULT   resume → auth-1"), "{shown}");
    h.press('e');
    assert!(!screen(&h).contains("events (e hides)"));
}

/// Presses `T` and ticks the tour as the event loop does, a quarter second of virtual
/// time apart, until it is over (or ten minutes passed); every caption it showed, each
/// checked on screen when it first appears.
fn tour_captions(c: &Arc<Cluster>, h: &mut Harness) -> Vec<String> {
    h.press('T');
    let mut seen: Vec<String> = Vec::new();
    for _ in 0..2_400 {
        c.advance(250);
        h.tour_tick();
        let caption = h
            .app
            .caption()
            .expect("a caption while the tour runs")
            .to_owned();
        if seen.last() != Some(&caption) {
            h.refresh();
            let shown = screen(h);
            let head: String = caption.chars().take(60).collect();
            assert!(
                shown.contains(&head),
                "caption not on screen: {caption}\n{shown}"
            );
            seen.push(caption.clone());
        }
        if caption.starts_with("tour over") {
            break;
        }
    }
    seen
}

/// `T` starts the tour from a running demo; its caption line is on screen at every step,
/// the step that promises a fenced write shows the store's refusal, and the tour ends.
#[test]
fn the_tour_key_shows_captions_until_the_tour_ends() {
    let c = cluster(25);
    let seen = tour_captions(&c, &mut dashboard(&c));
    assert!(
        seen.last().is_some_and(|c| c.starts_with("tour over")),
        "{seen:#?}"
    );
    assert!(
        seen.iter()
            .any(|c| c.starts_with("tour 3/8 · ✓") && c.contains("refused WORK_FENCED")),
        "{seen:#?}"
    );
    assert!(!seen.iter().any(|c| c.contains("not seen")), "{seen:#?}");
}

/// The tour never stalls: over many seeds of the demo's own fleet (three authorities), on
/// the smallest terminal and a large one, every step sees its effect in the store's
/// records — the resumed authority's late writes are refused whether as `WORK_FENCED` or,
/// for an item its new owner already ended, `already-terminal` — and no step gives up.
#[test]
fn the_tour_never_stalls_over_many_seeds_and_sizes() {
    for seed in (1..=32).chain([8767]) {
        for size in [(80, 24), (160, 48)] {
            let c = fleet(seed, 3);
            let seen = tour_captions(&c, &mut sized(&c, size));
            let why = format!("seed {seed} at {size:?}: {seen:#?}");
            assert!(
                seen.last().is_some_and(|c| c.starts_with("tour over")),
                "{why}"
            );
            assert!(
                !seen
                    .iter()
                    .any(|c| c.contains("not seen") || c.contains("could not act")),
                "{why}"
            );
            assert!(
                seen.iter()
                    .any(|c| c.starts_with("tour 3/8 · ✓") && c.contains("late")),
                "{why}"
            );
        }
    }
}

/// Runs the dashboard's checker badge, then the checker itself at the same instant.
fn badge_and_check(c: &Arc<Cluster>, h: &mut Harness) -> leasehold::check::Report {
    h.check();
    h.refresh();
    leasehold::check::check(
        &c.store(),
        &leasehold::check::CheckOptions::at(c.store().now()),
    )
    .expect("checks")
}

/// The checker badge states the checker's verdict over the demo store (the same checker
/// `leasehold check` runs); a verdict with violations turns it red and lists them above
/// the ticker's events.
#[test]
fn the_checker_badge_shows_the_checkers_verdict() {
    let c = cluster(26);
    let mut h = dashboard(&c);
    h.press('P');
    h.press('1');
    c.advance(8_000);
    h.press('R');
    h.press('1');
    c.advance(2_000);
    let verdict = badge_and_check(&c, &mut h);
    assert!(verdict.violations.is_empty());
    let shown = screen(&h);
    assert!(
        shown.contains(&format!(
            "checker ✓ 0 violations ({} writes)",
            verdict.checked.writes
        )),
        "{shown}"
    );
    h.dispatch(Action::Checked(leasehold::tui::checker_badge::Verdict {
        at: c.store().now(),
        violations: 1,
        listed: vec!["single-owner: eff-1 held by auth-1 and auth-2 at once".into()],
        grants: 1,
        writes: 1,
        backlogged: 0,
    }));
    let shown = screen(&h);
    assert!(shown.contains("checker ✗ 1 VIOLATIONS"), "{shown}");
    assert!(shown.contains("VIOLATION single-owner: eff-1"), "{shown}");
}

/// Beside a green tick, the badge says how much work waits in a backlog — here one
/// incompatible authority alone with a fleet's worth of new work — with the count the
/// checker itself gives at that instant.
#[test]
fn the_checker_badge_states_the_backlog_the_checker_counts() {
    let c = cluster(26);
    let mut h = dashboard(&c);
    h.press('B');
    h.press('2');
    c.advance(120_000);
    let report = badge_and_check(&c, &mut h);
    let backlogged = report.backlogged_items + report.backlogged_instances;
    assert!(report.violations.is_empty(), "{:?}", report.violations);
    assert!(backlogged > 0, "a backlog after two minutes alone");
    let shown = screen(&h);
    assert!(
        shown.contains(&format!(
            "checker ✓ 0 violations ({} writes) · {backlogged} backlogged",
            report.checked.writes
        )),
        "{shown}"
    );
}

/// Renders the demo as people see it — the tour at the step where the stalled owner's
/// write is fenced, the ticker below, and the fault picker — on virtual time with a fixed
/// seed; with `LEASEHOLD_SCREENSHOTS=1` it writes `screenshots/demo-*.svg`
/// (`LEASEHOLD_SCREENSHOTS=1 cargo test --test demo screenshots`).
#[test]
fn screenshots() {
    let write = std::env::var("LEASEHOLD_SCREENSHOTS").is_ok_and(|v| v == "1");
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("screenshots");
    let c = cluster(7);
    let mut h = sized(&c, (120, 36));
    h.press('T');
    for _ in 0..2_400 {
        c.advance(250);
        h.tour_tick();
        if h.app
            .caption()
            .is_some_and(|t| t.starts_with("tour 3/8 · ✓"))
        {
            break;
        }
    }
    h.check();
    h.advance(7_000);
    h.refresh();
    let tour = screen(&h);
    assert!(tour.contains("refused WORK_FENCED"), "{tour}");
    let mut shots = vec![("demo-tour", h.render())];
    h.press('5');
    h.refresh();
    h.press('K');
    shots.push(("demo-picker", h.render()));
    for (name, buffer) in shots {
        let svg = leasehold::tui::screenshot::to_svg(&buffer, h.app.theme());
        assert!(svg.starts_with("<svg") && svg.contains("leasehold"));
        if write {
            std::fs::create_dir_all(&dir).expect("creates");
            std::fs::write(dir.join(format!("{name}.svg")), svg).expect("writes");
        }
    }
}

/// The recording the README links (`docs/demo.cast`, made with `leasehold demo --tour
/// --record`) is a valid asciicast v2 file: a header naming version 2 and the terminal's
/// size, then output events with times that never go back, which show the fenced write.
#[test]
fn the_shipped_recording_is_a_valid_asciicast() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/demo.cast");
    let text = std::fs::read_to_string(path).expect("docs/demo.cast is shipped");
    let mut lines = text.lines();
    let header: serde_json::Value =
        serde_json::from_str(lines.next().expect("a header")).expect("JSON");
    assert_eq!(header["version"], 2);
    assert!(header["width"].as_u64().is_some_and(|w| w >= 80));
    assert!(header["height"].as_u64().is_some_and(|h| h >= 24));
    let mut last = 0.0;
    let mut output = String::new();
    for line in lines {
        let event: serde_json::Value = serde_json::from_str(line).expect("JSON");
        let at = event[0].as_f64().expect("a time");
        assert!(at >= last, "{line}");
        last = at;
        assert_eq!(event[1], "o");
        output.push_str(event[2].as_str().expect("text"));
    }
    assert!(last > 5.0, "a recording of some length");
    assert!(output.contains("WORK_FENCED"));
}
