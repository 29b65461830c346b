//! Liveness and lapsed claims as an operator sees them.
//!
//! - In the dashboard (injected clock): an authority that stops heartbeating reads
//!   `silent` after 1.5 heartbeats and `gone` after its lease; its lapsed claims read
//!   `expired, awaiting reclaim (Ns)` in the work and leases views and are counted in the
//!   authorities view's OWNED column, every figure checked against the store's own rows.
//! - With real processes (`leasehold authority` on SQLite, wall clock): a `kill -9`'d
//!   authority passes live → silent → gone as `inspect authorities --json` reports it, each
//!   reading consistent with the heartbeat age the store's clock gives; a SIGTERM'd one
//!   reads `stopped`; a second start under a live id exits 2 and leaves the holder alone;
//!   `authority forget` is refused while live and allowed once gone.

#![allow(clippy::unwrap_used)]

#[path = "support/mod.rs"]
mod support;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

use leasehold::Store;
use leasehold::clock::{ManualClock, Millis};
use leasehold::ids::SeededIds;
use leasehold::model::work::{NewWork, WorkFilter};
use leasehold::model::{Authority, PageRequest, WorkState};
use leasehold::store::Keyed;
use leasehold::store::memory::MemoryBackend;
use leasehold::tui::action::{Action, ViewId};
use leasehold::tui::app::AppOptions;
use leasehold::tui::harness::{Harness, buffer_text};
use leasehold::tui::theme::Theme;
use serde_json::Value;

use support::wait::{wait_until, within};

const T0: Millis = 1_767_225_600_000;
const K: &str = "compat-k";
/// A 3 s lease with its default 1 s heartbeat: silent after 1.5 s, gone after 3 s.
const CONFIG: &str = r#"{"leaseDurationMs":3000,"heartbeatIntervalMs":1000}"#;

// --- the dashboard ------------------------------------------------------------------------

fn registered(id: &str, pid: u32) -> Authority {
    Authority {
        instance_id: id.into(),
        compat: K.into(),
        build: "v1".into(),
        config: CONFIG.into(),
        started_at: T0,
        heartbeat_at: T0,
        stopped_at: None,
        host: "host-1".into(),
        pid,
        published: leasehold::model::Published::default(),
    }
}

fn open_view(h: &mut Harness, view: ViewId) -> String {
    h.dispatch(Action::SwitchView(view));
    h.advance(0);
    h.refresh();
    buffer_text(&h.render())
}

/// The screen line that mentions `needle` (the row of an item or authority).
fn line_of<'a>(screen: &'a str, needle: &str) -> &'a str {
    screen
        .lines()
        .find(|l| l.contains(needle))
        .unwrap_or_else(|| panic!("no line with {needle} in\n{screen}"))
}

/// `owner`'s claimed items whose lease lapsed by now, from the store itself.
fn lapsed_claims(store: &Store, owner: &str) -> Vec<String> {
    let filter = WorkFilter {
        states: vec![WorkState::Claimed],
        owner: Some(owner.into()),
        ..WorkFilter::default()
    };
    let now = store.now();
    store
        .list_work(&filter, &PageRequest::first(100))
        .unwrap()
        .rows
        .into_iter()
        .filter(|w| w.lease_expires_at.is_some_and(|e| e <= now))
        .map(|w| w.id)
        .collect()
}

#[test]
fn the_dashboard_shows_a_dead_authority_turn_silent_then_gone_with_its_claims_expired() {
    let clock = ManualClock::new(T0);
    let store = Store::new(
        std::sync::Arc::new(MemoryBackend::new()),
        std::sync::Arc::new(clock.clone()),
        std::sync::Arc::new(SeededIds::new(3)),
    );
    let dead = registered("auth-dead", 11);
    let alive = registered("auth-ok", 12);
    store.register_authority(&dead).unwrap();
    store.register_authority(&alive).unwrap();
    for n in 0..3 {
        store
            .enqueue(NewWork::effect(format!("e-{n}"), "noop", "{}"), K)
            .unwrap();
    }
    let claimed = store.claim_batch("auth-dead", K, 2, 3_000).unwrap();
    assert_eq!(claimed.len(), 2);
    store
        .acquire("leader/dead", "auth-dead", 3_000.0, Keyed { key: None })
        .unwrap();
    let options = AppOptions {
        read_only: true,
        demo: false,
        actor: "tester@ci".into(),
        refresh_ms: 250,
        ..AppOptions::default()
    };
    let mut h = Harness::new(
        store.clone(),
        options,
        Theme::builtin("dark").unwrap(),
        None,
        160,
        48,
    );
    let beat = |a: &Authority| store.heartbeat(&a.incarnation(), false).unwrap();

    // 1.5 heartbeats: still live.
    clock.advance(1_500);
    beat(&alive);
    let screen = open_view(&mut h, ViewId::Authorities);
    assert!(line_of(&screen, "auth-dead").contains(" live "), "{screen}");
    assert!(
        line_of(&screen, "auth-dead").contains(" 2 "),
        "owns 2: {screen}"
    );

    // One millisecond more: silent; its claims still run.
    clock.advance(1);
    let screen = open_view(&mut h, ViewId::Authorities);
    assert!(
        line_of(&screen, "auth-dead").contains(" silent "),
        "{screen}"
    );
    assert!(line_of(&screen, "auth-ok").contains(" live "), "{screen}");
    assert!(lapsed_claims(&store, "auth-dead").is_empty());
    assert!(!screen.contains("expired"), "{screen}");

    // Past its lease: gone, and both claims lapsed 1.2 s ago without a reclaim.
    clock.advance(2_699);
    beat(&alive);
    let lapsed = lapsed_claims(&store, "auth-dead");
    assert_eq!(lapsed.len(), 2);
    let screen = open_view(&mut h, ViewId::Authorities);
    let row = line_of(&screen, "auth-dead");
    assert!(row.contains(" gone "), "{screen}");
    assert!(row.contains("2 (2 expired)"), "{screen}");
    assert!(line_of(&screen, "auth-ok").contains(" live "), "{screen}");

    let screen = open_view(&mut h, ViewId::Work);
    for id in &lapsed {
        let row = line_of(&screen, id);
        assert!(row.contains("expired, awaiting reclaim (1s)"), "{screen}");
        assert!(row.contains("auth-dead"), "{screen}");
    }
    assert!(
        !line_of(&screen, "e-2").contains("expired"),
        "never claimed"
    );

    let screen = open_view(&mut h, ViewId::Leases);
    assert!(
        line_of(&screen, "leader/dead").contains("expired, awaiting reclaim (1s)"),
        "{screen}"
    );

    let screen = open_view(&mut h, ViewId::Overview);
    assert!(
        screen.contains("authorities 1 live 0 silent 1 gone 0 stopped"),
        "{screen}"
    );

    // Another authority reclaims one: it is no longer the dead one's, nor expired.
    let reclaimed = &lapsed[0];
    let taken = store.claim(reclaimed, "auth-ok", K, 3_000).unwrap();
    assert_eq!(taken.generation, 2, "a reclaim under a new generation");
    let screen = open_view(&mut h, ViewId::Authorities);
    assert!(
        line_of(&screen, "auth-dead").contains("1 (1 expired)"),
        "{screen}"
    );
    let screen = open_view(&mut h, ViewId::Work);
    let row = line_of(&screen, reclaimed);
    assert!(
        row.contains("claimed") && row.contains("auth-ok"),
        "{screen}"
    );
    assert!(!row.contains("expired"), "{screen}");
}

// --- real processes -----------------------------------------------------------------------

/// The lease the fleet runs on: heartbeat every 3 s, silent after 4.5 s, gone after 9 s
/// (long enough that a busy machine never makes a healthy authority read silent).
const LEASE_MS: i64 = 9_000;
const HEARTBEAT_MS: i64 = LEASE_MS / 3;
/// Generous: the machine may be busy.
const DEADLINE: Duration = Duration::from_secs(90);

fn leasehold(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_leasehold"))
        // Rewind witnesses of these throwaway stores stay out of the home directory.
        .env(
            "LEASEHOLD_STATE_DIR",
            std::env::temp_dir().join("leasehold-test-witnesses"),
        )
        .args(args)
        .env_remove("LEASEHOLD_STORE")
        .output()
        .unwrap()
}

/// A running `leasehold authority`, killed when dropped.
struct Running {
    child: Child,
    instance: String,
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start(store: &str, instance: &str, dir: &Path) -> Child {
    let log = std::fs::File::create(dir.join(format!("{instance}-{}.log", now_ns()))).unwrap();
    Command::new(env!("CARGO_BIN_EXE_leasehold"))
        // Rewind witnesses of these throwaway stores stay out of the home directory.
        .env(
            "LEASEHOLD_STATE_DIR",
            std::env::temp_dir().join("leasehold-test-witnesses"),
        )
        .args([
            "authority",
            "--store",
            store,
            "--instance",
            instance,
            "--workload",
            "default",
            "--lease-ms",
            &LEASE_MS.to_string(),
            "--log-format",
            "off",
        ])
        .env_remove("LEASEHOLD_STORE")
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .unwrap()
}

fn now_ns() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos()
}

fn signal(sig: &str, pid: u32) {
    let status = Command::new("kill")
        .args([sig, &pid.to_string()])
        .status()
        .unwrap();
    assert!(status.success(), "kill {sig} {pid}");
}

/// One authority as `inspect authorities --json` reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Reading {
    id: String,
    state: String,
    heartbeat_at: i64,
    /// The heartbeat's age by the store's clock (a SQLite store reads this host's clock)
    /// just before and just after inspect ran: it judged at an instant in between.
    age: (i64, i64),
    pid: u64,
}

/// The store's clock: a SQLite store reads the system clock.
fn store_now() -> i64 {
    i64::try_from(now_ns() / 1_000_000).unwrap()
}

/// One reading of `inspect authorities --json`.
fn authorities(store: &str) -> Vec<Reading> {
    let before = store_now();
    let out = leasehold(&["inspect", "--store", store, "authorities", "--json"]);
    let after = store_now();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|line| {
            let v: Value = serde_json::from_str(line).unwrap();
            let heartbeat_at = v["heartbeatAt"].as_i64().unwrap();
            Reading {
                id: v["instanceId"].as_str().unwrap().to_owned(),
                state: v["state"].as_str().unwrap().to_owned(),
                heartbeat_at,
                age: (before - heartbeat_at, after - heartbeat_at),
                pid: v["pid"].as_u64().unwrap(),
            }
        })
        .collect()
}

fn reading(store: &str, instance: &str) -> Option<Reading> {
    authorities(store).into_iter().find(|r| r.id == instance)
}

/// What the liveness rule says for a heartbeat `age` old (never stopped), as a rank.
fn expected(age: i64) -> u8 {
    if age > LEASE_MS {
        2
    } else {
        u8::from(age > HEARTBEAT_MS * 3 / 2)
    }
}

fn rank(state: &str) -> u8 {
    match state {
        "live" => 0,
        "silent" => 1,
        "gone" => 2,
        other => panic!("unexpected state {other}"),
    }
}

struct TempDir(PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[test]
#[expect(
    clippy::too_many_lines,
    reason = "a scripted scenario: its steps in the order they happen"
)]
fn real_authorities_pass_live_silent_gone_stopped_and_keep_their_ids() {
    let dir = TempDir(std::env::temp_dir().join(format!("leasehold-liveness-{}", now_ns())));
    std::fs::create_dir_all(&dir.0).unwrap();
    let path = dir.0.join("store.db");
    let store = path.to_str().unwrap();
    let seeded = leasehold(&[
        "seed",
        "--store",
        store,
        "--effects",
        "30",
        "--workflows",
        "2",
    ]);
    assert!(seeded.status.success(), "{seeded:?}");

    let mut fleet: Vec<Running> = ["a1", "a2", "a3"]
        .into_iter()
        .map(|id| Running {
            child: start(store, id, &dir.0),
            instance: id.into(),
        })
        .collect();
    wait_until("three live authorities", within(DEADLINE), || {
        let all = authorities(store);
        fleet.iter().all(|r| {
            all.iter().any(|a| {
                a.id == r.instance && a.state == "live" && a.pid == u64::from(r.child.id())
            })
        })
    });

    // kill -9 a1: every reading agrees with its heartbeat age; live → silent → gone.
    let a1 = fleet.remove(0);
    signal("-KILL", a1.child.id());
    let mut seen: Vec<String> = Vec::new();
    wait_until("a1 gone", within(DEADLINE), || {
        let Reading { state, age, .. } = reading(store, "a1").unwrap();
        // Judged at an instant between the two ages: the state is what the rule says at
        // one of them or in between (live up to 1.5 heartbeats, so silent well within 2).
        let judged = rank(&state);
        assert!(
            expected(age.0) <= judged && judged <= expected(age.1),
            "a1 reads {state} at a heartbeat age between {} and {} ms",
            age.0,
            age.1
        );
        if seen.last() != Some(&state) {
            seen.push(state.clone());
        }
        state == "gone"
    });
    assert!(
        seen.ends_with(&["silent".to_owned(), "gone".to_owned()]),
        "a dead authority reads silent before it reads gone: {seen:?}"
    );
    assert!(!seen.contains(&"stopped".to_owned()), "{seen:?}");

    // SIGTERM a2: it records a clean stop.
    let mut a2 = fleet.remove(0);
    signal("-TERM", a2.child.id());
    let mut status = None;
    wait_until("a2 to exit", within(DEADLINE), || {
        status = a2.child.try_wait().unwrap();
        status.is_some()
    });
    assert!(status.unwrap().success(), "a clean stop exits 0");
    assert_eq!(reading(store, "a2").unwrap().state, "stopped");

    // A second start under a3's id: exit 2, one line naming it; a3 keeps its row.
    let a3_pid = u64::from(fleet[0].child.id());
    let duplicate = leasehold(&[
        "authority",
        "--store",
        store,
        "--instance",
        "a3",
        "--workload",
        "default",
        "--lease-ms",
        &LEASE_MS.to_string(),
        "--log-format",
        "off",
    ]);
    assert_eq!(duplicate.status.code(), Some(2), "{duplicate:?}");
    let err = String::from_utf8(duplicate.stderr).unwrap();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("INSTANCE_IN_USE") && err.contains("a3") && err.contains(&a3_pid.to_string()),
        "{err}"
    );
    let refused_at = reading(store, "a3").unwrap();
    assert_eq!(
        (refused_at.state.as_str(), refused_at.pid),
        ("live", a3_pid)
    );
    // Its next heartbeats land in its own row, and it stays live.
    wait_until("a3's next heartbeats", within(DEADLINE), || {
        let now = reading(store, "a3").unwrap();
        assert_eq!((now.state.as_str(), now.pid), ("live", a3_pid), "{now:?}");
        now.heartbeat_at >= refused_at.heartbeat_at + 2 * HEARTBEAT_MS
    });

    // forget: refused while live (INSTANCE_IN_USE, exit 2, one line), allowed once gone
    // and released; both audited.
    let refused = leasehold(&["authority", "forget", "--store", store, "a3"]);
    assert_eq!(refused.status.code(), Some(2), "{refused:?}");
    let err = String::from_utf8(refused.stderr).unwrap();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("INSTANCE_IN_USE"), "{err}");
    let typo = dir.0.join("typo.db");
    let missing = leasehold(&[
        "authority",
        "forget",
        "--store",
        typo.to_str().unwrap(),
        "a1",
    ]);
    assert_eq!(missing.status.code(), Some(2), "{missing:?}");
    assert!(!typo.exists(), "forget never creates a store");
    let unknown = leasehold(&["authority", "forget", "--store", store, "nobody"]);
    assert_eq!(unknown.status.code(), Some(2), "{unknown:?}");
    assert!(String::from_utf8_lossy(&unknown.stderr).contains("NOT_FOUND"));
    // Whatever a1 still held when it was killed is handed back first: forget waits for it.
    let released = leasehold(&["authority", "release", "--store", store, "a1"]);
    assert!(released.status.success(), "{released:?}");
    let forgot = leasehold(&["authority", "forget", "--store", store, "a1"]);
    assert!(forgot.status.success(), "{forgot:?}");
    assert!(reading(store, "a1").is_none(), "forgotten");
    assert!(reading(store, "a3").is_some(), "untouched");

    let audit = leasehold(&["inspect", "--store", store, "audit", "--json"]);
    let entries: Vec<Value> = String::from_utf8(audit.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .filter(|e: &Value| e["action"] == "forget-authority")
        .collect();
    let outcomes: Vec<(&str, &str)> = entries
        .iter()
        .map(|e| {
            (
                e["target"].as_str().unwrap(),
                e["outcome"].as_str().unwrap(),
            )
        })
        .collect();
    // Newest first, as `inspect audit` lists the log.
    assert_eq!(
        outcomes,
        [
            ("a1", "forgotten: was gone"),
            ("nobody", "refused: not found"),
            ("a3", "refused: live"),
        ]
    );
    assert!(
        entries
            .iter()
            .all(|e| e["actor"].as_str().is_some_and(|a| a.contains('@'))),
        "{entries:?}"
    );
}
