//! Real `leasehold authority` processes for the tests that kill, stop and resume them:
//! each writes its JSON log to a temp dir, and every one still running is resumed and
//! killed when the set is dropped.

use std::collections::BTreeMap;
use std::fs::File;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use leasehold::Store;
use leasehold::model::work::{NewWork, WorkFilter};
use leasehold::model::{PageRequest, WorkState};

/// Where the tests' authorities keep their rewind witnesses: out of the home directory.
pub fn witnesses() -> PathBuf {
    std::env::temp_dir().join("leasehold-test-witnesses")
}

/// Sends `sig` (`-STOP`, `-CONT`, `-TERM`) to `pid`.
pub fn signal(sig: &str, pid: u32) {
    let _ = Command::new("kill")
        .args([sig, &pid.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
}

/// `leasehold authority` processes; each one still running is resumed and killed on drop.
pub struct Authorities {
    dir: tempfile::TempDir,
    running: BTreeMap<String, Child>,
}

impl Authorities {
    pub fn new() -> Self {
        Self {
            dir: tempfile::Builder::new()
                .prefix("leasehold-procs-")
                .tempdir()
                .unwrap(),
            running: BTreeMap::new(),
        }
    }

    pub fn log(&self, name: &str) -> PathBuf {
        self.dir.path().join(format!("{name}.log"))
    }

    /// Starts one authority with a short lease, polling fast. It runs the built-in
    /// `default` demo handlers unless `extra` names its handlers (`--workload`,
    /// `--config`): an authority given none refuses to start.
    pub fn spawn(&mut self, name: &str, store: &str) {
        self.spawn_with_lease(name, store, 1_500);
    }

    /// Starts one authority keeping its rewind witnesses in `state`.
    pub fn spawn_in(&mut self, name: &str, store: &str, state: &std::path::Path) {
        self.start(name, store, 1_500, state, &[]);
    }

    /// Starts one authority with a lease of `lease_ms`, polling fast.
    pub fn spawn_with_lease(&mut self, name: &str, store: &str, lease_ms: u32) {
        self.spawn_with(name, store, lease_ms, &[]);
    }

    /// [`Self::spawn_with_lease`] with `extra` arguments.
    pub fn spawn_with(&mut self, name: &str, store: &str, lease_ms: u32, extra: &[&str]) {
        self.start(name, store, lease_ms, &witnesses(), extra);
    }

    fn start(
        &mut self,
        name: &str,
        store: &str,
        lease_ms: u32,
        state: &std::path::Path,
        extra: &[&str],
    ) {
        let child = Command::new(env!("CARGO_BIN_EXE_leasehold"))
            .env("LEASEHOLD_STATE_DIR", state)
            .args([
                "authority",
                "--store",
                store,
                "--instance",
                name,
                "--lease-ms",
                &lease_ms.to_string(),
                "--poll-ms",
                "50",
                "--log-format",
                "json",
            ])
            .args(extra)
            .args(
                (!extra
                    .iter()
                    .any(|a| matches!(*a, "--workload" | "--config")))
                .then_some(["--workload", "default"])
                .into_iter()
                .flatten(),
            )
            .env_remove("LEASEHOLD_STORE")
            .stdin(Stdio::null())
            .stdout(File::create(self.dir.path().join(format!("{name}.out"))).unwrap())
            .stderr(File::create(self.log(name)).unwrap())
            .spawn()
            .expect("start leasehold authority");
        self.running.insert(name.to_owned(), child);
    }

    /// How often each event (`store-unavailable`, `write-refused`, …) appears in the logs of
    /// every authority, and every error text they logged.
    pub fn events(&self) -> (BTreeMap<String, usize>, Vec<String>) {
        let mut events = BTreeMap::new();
        let mut errors = Vec::new();
        for entry in std::fs::read_dir(self.dir.path()).unwrap().flatten() {
            let text = std::fs::read_to_string(entry.path()).unwrap_or_default();
            for line in text.lines() {
                let Ok(v) = serde_json::from_str::<serde_json::Value>(line) else {
                    continue;
                };
                if let Some(event) = v["message"].as_str() {
                    *events.entry(event.to_owned()).or_default() += 1;
                }
                if let Some(error) = v["error"].as_str() {
                    errors.push(error.to_owned());
                }
            }
        }
        (events, errors)
    }

    /// The value of `field` on the first line of `name`'s log whose message is `message`.
    pub fn logged(&self, name: &str, message: &str, field: &str) -> Option<String> {
        let text = std::fs::read_to_string(self.log(name)).unwrap_or_default();
        text.lines()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .find(|v| v["message"] == message)
            .and_then(|v| v[field].as_str().map(str::to_owned))
    }

    /// The last `n` lines of `name`'s log: what a test that timed out waiting on the
    /// authority prints, so that a failure on CI says what the authority was doing.
    pub fn tail(&self, name: &str, n: usize) -> String {
        let text = std::fs::read_to_string(self.log(name)).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(n)..].join("\n")
    }

    /// Every line of `name`'s log whose message is `message`, as JSON.
    pub fn lines_of(&self, name: &str, message: &str) -> Vec<serde_json::Value> {
        std::fs::read_to_string(self.log(name))
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .filter(|v| v["message"] == message)
            .collect()
    }

    pub fn pid(&self, name: &str) -> u32 {
        self.running[name].id()
    }

    pub fn kill(&mut self, name: &str) {
        let mut child = self.running.remove(name).unwrap();
        child.kill().unwrap();
        child.wait().unwrap();
    }

    /// Waits for `name` to exit on its own; its exit status.
    pub fn wait_exit(&mut self, name: &str, deadline: Instant) -> std::process::ExitStatus {
        let mut child = self.running.remove(name).unwrap();
        loop {
            if let Some(status) = child.try_wait().unwrap() {
                return status;
            }
            assert!(Instant::now() < deadline, "{name} did not exit");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// SIGTERM to every authority still running; each must shut down cleanly.
    pub fn stop_all(&mut self, deadline: Instant) {
        for child in self.running.values() {
            signal("-TERM", child.id());
        }
        for (name, mut child) in std::mem::take(&mut self.running) {
            let status = loop {
                if let Some(status) = child.try_wait().unwrap() {
                    break status;
                }
                assert!(Instant::now() < deadline, "{name} did not stop on SIGTERM");
                std::thread::sleep(Duration::from_millis(50));
            };
            let log = std::fs::read_to_string(self.log(&name)).unwrap_or_default();
            assert!(status.success(), "{name} exited with {status}: {log}");
        }
    }
}

impl Drop for Authorities {
    fn drop(&mut self) {
        for child in self.running.values_mut() {
            signal("-CONT", child.id());
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// The registration an authority running `handlers` (name, version) writes, beating at
/// `heartbeat_at` on a 30 s lease: for the tests that plant a fleet in the registry
/// without running one.
pub fn registration(
    id: &str,
    handlers: &[(&str, &str)],
    heartbeat_at: leasehold::clock::Millis,
) -> leasehold::model::Authority {
    let handlers: serde_json::Map<String, serde_json::Value> = handlers
        .iter()
        .map(|(name, version)| ((*name).to_owned(), (*version).into()))
        .collect();
    let config = serde_json::json!({"leaseDurationMs": 30_000, "handlers": handlers});
    leasehold::model::Authority::planted(id, &config.to_string(), heartbeat_at)
}

/// The handler of the effects [`enqueue`] adds (the default workload has it).
pub const HANDLER: &str = "send-email";

/// The key of [`HANDLER`]'s work at the version the authorities run it.
pub fn compat() -> String {
    super::key(HANDLER)
}

pub fn enqueue(store: &Store, n: usize) {
    let compat = compat();
    for chunk in (0..n).collect::<Vec<_>>().chunks(500) {
        let specs = chunk
            .iter()
            .map(|i| NewWork::effect(format!("fx-{i:05}"), HANDLER, format!("{{\"n\":{i}}}")))
            .collect();
        store.enqueue_batch(specs, &compat).unwrap();
    }
}

/// Compatible items not yet terminal, from the incremental counts.
pub fn unfinished(store: &Store) -> u64 {
    let compat = compat();
    store
        .overview()
        .unwrap()
        .work
        .iter()
        .filter(|c| c.compat == compat && !c.state.is_terminal())
        .map(|c| c.count)
        .sum()
}

/// Items `owner` holds a claim on now, with their generations.
pub fn claimed_by(store: &Store, owner: &str) -> BTreeMap<String, u64> {
    let filter = WorkFilter {
        states: vec![WorkState::Claimed],
        owner: Some(owner.into()),
        ..WorkFilter::default()
    };
    store
        .list_work(&filter, &PageRequest::first(10_000))
        .unwrap()
        .rows
        .into_iter()
        .map(|w| (w.id, w.generation))
        .collect()
}
