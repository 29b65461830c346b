//! The application soak: an application's own `exec` and HTTP handlers (the Python fixtures
//! of tests/handlers.rs, each appending every run it receives to a journal: the external
//! side-effect log) drain a SQLite store through six authority processes on a CPU-starved
//! machine, while a chaos loop `kill -9`s authorities (restarting each at once under its own
//! id, as a supervisor would) and `SIGSTOP`s others past their lease.
//!
//! What it holds the store to: every item succeeds; every extra run of a side effect is
//! explained by an uncertain attempt on that item (`runs - 1 <= uncertainAttempts`); and
//! `leasehold check` is clean — no write was fenced without a takeover, no generation had two
//! owners. It prints the counts (runs, repeats, uncertain attempts, takeovers, fenced
//! writes) for the record.
//!
//! Not in CI (it runs for minutes): `cargo test --release --test soak -- --ignored
//! --nocapture`; `SOAK_ITEMS` (default 10000) sets the size, `SOAK_HOGS` (default 4) the
//! busy loops that starve the authorities of CPU.

#![allow(clippy::unwrap_used)]

#[path = "support/mod.rs"]
mod support;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use leasehold::Store;
use leasehold::model::HandlerVersion;
use leasehold::model::handler_key;
use leasehold::model::work::{NewWork, WorkFilter};
use leasehold::model::{PageRequest, WorkItem};
use leasehold::store::url::{self, OpenMode};
use serde_json::{Value, json};

use support::authorities::{Authorities, signal};
use support::leasehold;

const AUTHORITIES: usize = 6;
const LEASE_MS: u32 = 2_000;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/handlers")
        .join(name)
}

fn env_or(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Children killed when the soak ends, however it ends.
struct Reaped(Vec<Child>);

impl Drop for Reaped {
    fn drop(&mut self) {
        for child in &mut self.0 {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Every item, read in pages.
fn all_items(store: &Store) -> Vec<WorkItem> {
    let mut out = Vec::new();
    let mut page = PageRequest::first(1_000);
    loop {
        let rows = store.list_work(&WorkFilter::default(), &page).unwrap();
        let last = rows.rows.last().map(|w| w.id.clone());
        let full = rows.rows.len() == 1_000;
        out.extend(rows.rows);
        match last.filter(|_| full) {
            Some(key) => page = PageRequest::after(key, 1_000),
            None => return out,
        }
    }
}

/// Runs per item id in a journal of JSON lines, the attempt at `path` of each line.
fn runs(journal: &Path, attempt: &[&str], into: &mut BTreeMap<String, usize>) {
    let text = std::fs::read_to_string(journal).unwrap_or_default();
    for line in text.lines() {
        let v: Value = serde_json::from_str(line).unwrap();
        let id = attempt.iter().fold(&v, |v, key| &v[*key]);
        *into.entry(id.as_str().unwrap().to_owned()).or_default() += 1;
    }
}

#[test]
#[ignore = "minutes long: cargo test --release --test soak -- --ignored --nocapture"]
#[expect(
    clippy::too_many_lines,
    reason = "a scripted scenario: its steps in the order they happen"
)]
fn an_applications_handlers_survive_kills_and_stops_under_cpu_starvation() {
    let items = env_or("SOAK_ITEMS", 10_000);
    let deadline = Instant::now() + Duration::from_secs(60 * 30);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.db").display().to_string();
    let store: Store = url::open(&path, OpenMode::ReadWrite).unwrap();
    let mut reaped = Reaped(Vec::new());

    // The HTTP handler's server, and the handler config naming both handlers.
    let http_journal = dir.path().join("http.journal");
    let mut server = Command::new("python3")
        .arg(fixture("http_server.py"))
        .arg(&http_journal)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut port = String::new();
    BufReader::new(server.stdout.take().unwrap())
        .read_line(&mut port)
        .unwrap();
    reaped.0.push(server);
    let exec_journal = dir.path().join("exec.journal");
    let config = dir.path().join("handlers.toml");
    std::fs::write(
        &config,
        format!(
            "[handlers.mail]\nversion = \"1.2.0\"\nexec = [\"python3\", {script:?}]\n\
             timeout = \"60s\"\nenv = {{ LEASEHOLD_TEST_JOURNAL = {journal:?} }}\n\n\
             [handlers.charge]\nversion = \"2.0.0\"\nhttp = \"http://127.0.0.1:{port}/\"\n\
             timeout = \"60s\"\n",
            script = fixture("exec_handler.py").display().to_string(),
            journal = exec_journal.display().to_string(),
            port = port.trim(),
        ),
    )
    .unwrap();
    let config = config.display().to_string();

    for (handler, version, share) in [
        ("mail", "1.2.0", items / 2),
        ("charge", "2.0.0", items - items / 2),
    ] {
        let key = handler_key(handler, &HandlerVersion::parse(version).unwrap());
        for chunk in (0..share).collect::<Vec<_>>().chunks(500) {
            let specs = chunk
                .iter()
                .map(|i| {
                    let payload = json!({ "mode": "ok", "to": format!("{handler}-{i}") });
                    NewWork::effect(format!("{handler}-{i:05}"), handler, payload.to_string())
                })
                .collect();
            store.enqueue_batch(specs, &key).unwrap();
        }
    }

    // Busy loops that leave the authorities little CPU.
    for _ in 0..env_or("SOAK_HOGS", 4) {
        reaped.0.push(
            Command::new("python3")
                .args(["-c", "while True: pass"])
                .spawn()
                .unwrap(),
        );
    }
    let mut auth = Authorities::new();
    let names: Vec<String> = (0..AUTHORITIES).map(|i| format!("soak-{i}")).collect();
    let extra = ["--config", config.as_str(), "--concurrency", "8"];
    for name in &names {
        auth.spawn_with(name, &path, LEASE_MS, &extra);
    }

    // Chaos until everything is terminal: a kill -9 and an immediate restart under the same
    // id, or a stop past the lease, by turns, on a different authority each round.
    let (mut kills, mut stops, mut round) = (0, 0, 0usize);
    let unfinished = |store: &Store| {
        store
            .overview()
            .unwrap()
            .work
            .iter()
            .filter(|c| !c.state.is_terminal())
            .map(|c| c.count)
            .sum::<u64>()
    };
    while unfinished(&store) > 0 {
        assert!(Instant::now() < deadline, "the soak did not drain");
        let victim = &names[round % AUTHORITIES];
        if round % 2 == 0 {
            auth.kill(victim);
            auth.spawn_with(victim, &path, LEASE_MS, &extra);
            kills += 1;
        } else {
            let pid = auth.pid(victim);
            signal("-STOP", pid);
            std::thread::sleep(Duration::from_millis(u64::from(LEASE_MS) * 2));
            signal("-CONT", pid);
            stops += 1;
        }
        round += 1;
        std::thread::sleep(Duration::from_secs(3));
    }
    drop(reaped);
    auth.stop_all(deadline);

    let all = all_items(&store);
    let states: BTreeMap<&str, usize> = all.iter().fold(BTreeMap::new(), |mut m, w| {
        *m.entry(w.state.as_str()).or_default() += 1;
        m
    });
    let mut ran = BTreeMap::new();
    runs(&exec_journal, &["workId"], &mut ran);
    runs(&http_journal, &["attempt", "workId"], &mut ran);
    let uncertain: u64 = all.iter().map(|w| u64::from(w.uncertain_attempts)).sum();
    let repeats: usize = ran.values().map(|n| n.saturating_sub(1)).sum();
    let unexplained: Vec<(&str, usize, u32)> = all
        .iter()
        .filter_map(|w| {
            let n = ran.get(&w.id).copied().unwrap_or(0);
            (n.saturating_sub(1) > w.uncertain_attempts as usize).then_some((
                w.id.as_str(),
                n,
                w.uncertain_attempts,
            ))
        })
        .collect();
    let (grants, writes) = store.ownership_history(None, 0, usize::MAX).unwrap();
    let takeovers = grants.iter().filter(|g| g.took_over.is_some()).count();
    let fenced = writes
        .iter()
        .filter(|w| w.refusal.as_deref() == Some("WORK_FENCED"))
        .count();
    eprintln!(
        "soak: {items} items, {kills} kill -9 + restarts, {stops} stops past the lease; states \
         {states:?}; {} runs of a side effect, {repeats} repeats, {uncertain} uncertain \
         attempts ({} of them with no run), {takeovers} takeovers, {fenced} fenced writes",
        ran.values().sum::<usize>(),
        uncertain.saturating_sub(repeats as u64),
    );
    assert_eq!(states.get("succeeded").copied(), Some(items), "{states:?}");
    assert!(
        unexplained.is_empty(),
        "repeats no uncertain attempt explains: {unexplained:?}"
    );
    let check = leasehold(&["check", "--store", &path]);
    assert!(
        check.status.success(),
        "{}{}",
        String::from_utf8_lossy(&check.stdout),
        String::from_utf8_lossy(&check.stderr)
    );
}
