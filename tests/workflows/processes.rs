//! Independent OS processes on one SQLite file: crash recovery and several authorities
//! (docs/ARCHITECTURE.md#workflows). The parent starts ~50 short reminder-style instances, then
//! re-executes this test binary twice as child authorities (`--exact
//! processes::child_authority` with the store path in the environment). Both advance the
//! instances under a 500 ms wall-clock lease; the parent SIGKILLs one of them mid-run and
//! the survivor finishes everything. Afterwards every instance is terminal with exactly the
//! logical history a single authority would have written, and every action invocation has
//! exactly one outcome record (physical executions may repeat; logical ones may not).

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use leasehold::Store;
use leasehold::clock::SystemClock;
use leasehold::ids::SeededIds;
use leasehold::model::PageRequest;
use leasehold::store::sqlite::SqliteBackend;
use leasehold::store::url::OpenMode;
use leasehold::workflow::engine::Engine;
use leasehold::workflow::machine::{ActionRequest, Failure};
use serde_json::{Value, json};

use crate::definitions::{args, deploy, history};
use crate::support::wait::{wait_until, within};

const STORE_ENV: &str = "LEASEHOLD_WF_CHILD_STORE";
const NAME_ENV: &str = "LEASEHOLD_WF_CHILD_NAME";
const COMPAT: &str = "proc-build";
const LEASE_MS: i64 = 500;
const INSTANCES: i64 = 50;
const DEADLINE: Duration = Duration::from_secs(90);

/// timer (50 ms) -> send (retried once for every third n) -> confirm -> complete.
fn definition() -> Value {
    json!({
        "id": "proc-reminder",
        "inputs": [{ "id": "n", "valueType": "integer", "required": true }],
        "bindings": [
            { "id": "receipt", "producedBy": "send" },
            { "id": "ack", "producedBy": "confirm" }
        ],
        "entry": "wait",
        "steps": [
            { "id": "wait", "type": "timer", "after": { "seconds": 0.05 }, "next": "send" },
            { "id": "send", "type": "action", "action": "send-reminder", "arguments": { "n": { "ref": "n" } },
              "retry": { "maxAttempts": 3, "initialDelaySeconds": 0.05, "backoffMultiplier": 1, "maxDelaySeconds": 1 },
              "next": "confirm" },
            { "id": "confirm", "type": "action", "action": "confirm-delivery", "arguments": { "n": { "ref": "n" } }, "next": "done" },
            { "id": "done", "type": "complete", "output": { "object": { "receipt": { "ref": "receipt" }, "ack": { "ref": "ack" } } } }
        ]
    })
}

fn expected_history(n: i64) -> Vec<String> {
    let mut h = vec![
        "started",
        "step-activated:wait",
        "timer-fired:wait",
        "step-activated:send",
    ];
    if n % 3 == 0 {
        h.push("retry-scheduled:send");
    }
    h.extend([
        "step-succeeded:send",
        "step-activated:confirm",
        "step-succeeded:confirm",
        "step-activated:done",
        "completed:done",
    ]);
    h.into_iter().map(String::from).collect()
}

fn open(path: &Path) -> Store {
    let backend = SqliteBackend::open(path, OpenMode::ReadWrite).expect("open sqlite store");
    Store::new(
        Arc::new(backend),
        Arc::new(SystemClock),
        Arc::new(SeededIds::random()),
    )
}

fn all_instances(store: &Store) -> Vec<leasehold::model::InstanceRow> {
    let mut out = Vec::new();
    let mut page = PageRequest::first(200);
    loop {
        let got = store.list_instances(None, &page).expect("list instances");
        out.extend(got.rows);
        match got.next {
            Some(next) => page = PageRequest::after(next, 200),
            None => return out,
        }
    }
}

fn unfinished(store: &Store) -> usize {
    all_instances(store)
        .iter()
        .filter(|r| !matches!(r.status.as_str(), "completed" | "failed" | "cancelled"))
        .count()
}

/// The deterministic handlers: each physical execution is logged (one line, one append).
fn handle(log: &mut std::fs::File, req: &ActionRequest) -> Result<Value, Failure> {
    let n = req.arguments.get("n").and_then(Value::as_i64).unwrap_or(-1);
    // Simulated work: widens the window in which the kill can land mid-action.
    std::thread::sleep(Duration::from_millis(5));
    writeln!(log, "{} {}", req.invocation_id, req.attempt).expect("log call");
    match req.action.as_str() {
        "send-reminder" if req.attempt == 1 && n % 3 == 0 => Err(Failure {
            code: "SMTP_BUSY".into(),
            message: "try again".into(),
            retryable: true,
        }),
        "send-reminder" => Ok(json!({ "sent": n })),
        "confirm-delivery" => Ok(json!({ "ack": n })),
        other => Err(Failure {
            code: "UNKNOWN_ACTION".into(),
            message: other.into(),
            retryable: false,
        }),
    }
}

/// Child mode: one authority process advancing everything it can until nothing is left.
/// Ignored in a normal run (the parent test starts it), so it never passes vacuously.
#[test]
#[ignore = "a child process entry point: the parent test runs it"]
fn child_authority() {
    let (Ok(path), Ok(name)) = (std::env::var(STORE_ENV), std::env::var(NAME_ENV)) else {
        return;
    };
    let path = Path::new(&path);
    let store = open(path);
    let engine = Engine::new(store.clone(), &format!("child-{name}"), COMPAT);
    let mut log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path.with_file_name(format!("calls-{name}.log")))
        .expect("call log");
    let started = Instant::now();
    loop {
        assert!(
            started.elapsed() < DEADLINE,
            "child {name} did not finish in time"
        );
        let claimed = match engine.claim(4, LEASE_MS) {
            Ok(c) => c,
            Err(e) if e.is_store_failure() => continue,
            Err(e) => panic!("claim: {e}"),
        };
        for c in &claimed {
            // Refusals (fenced after a takeover) and store contention are normal here.
            let _ = engine.advance(c, |req| handle(&mut log, req));
        }
        if claimed.is_empty() {
            if unfinished(&store) == 0 {
                return;
            }
            // Idle poll of a worker: nothing is due yet (timers, backoff, a dead peer's lease).
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

fn spawn(path: &Path, name: &str) -> Child {
    Command::new(std::env::current_exe().expect("test binary"))
        .args([
            "--exact",
            "processes::child_authority",
            "--ignored",
            "--nocapture",
            "--test-threads",
            "1",
        ])
        .env(STORE_ENV, path)
        .env(NAME_ENV, name)
        .stdout(Stdio::null())
        .spawn()
        .expect("spawn child authority")
}

fn claims_by(store: &Store) -> BTreeMap<String, usize> {
    let (grants, _) = store.ownership_history(None, 0, 100_000).expect("grants");
    let mut by = BTreeMap::new();
    for g in grants.iter().filter(|g| g.resource_id.starts_with("wf:")) {
        *by.entry(g.owner_id.clone()).or_default() += 1;
    }
    by
}

/// Resources whose current lease `owner` holds and never released.
fn held_by(store: &Store, owner: &str) -> Vec<String> {
    let page = store
        .list_leases(&PageRequest::first(10_000))
        .expect("leases");
    page.rows
        .into_iter()
        .filter(|l| {
            l.owner_id == owner && l.released_at.is_none() && l.resource_id.starts_with("wf:")
        })
        .map(|l| l.resource_id)
        .collect()
}

#[test]
#[expect(
    clippy::too_many_lines,
    reason = "a scripted scenario: its steps in the order they happen"
)]
fn two_processes_one_killed_survivor_finishes() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("store.db");
    let store = open(&path);
    let workflow = deploy(&store, &definition());
    let mut inputs = BTreeMap::new();
    for n in 0..INSTANCES {
        let started = store
            .start_workflow(
                &workflow,
                args(json!({ "n": n })),
                "scheduler",
                Some(&format!("reminder-{n}")),
                COMPAT,
            )
            .expect("start");
        inputs.insert(started.instance_id, n);
    }

    let mut victim = spawn(&path, "a");
    let mut survivor = spawn(&path, "b");

    // Kill `a` mid-run: once it has taken instances and a fifth of them are done.
    wait_until(
        "child a to take part and the run to be under way",
        within(DEADLINE),
        || {
            let left = unfinished(&store);
            left == 0 || (claims_by(&store).get("child-a").copied().unwrap_or(0) >= 3 && left <= 40)
        },
    );
    let unfinished_at_kill = unfinished(&store);
    victim.kill().expect("SIGKILL child a");
    victim.wait().expect("reap child a");
    // Leases a dead process still holds: the survivor must wait them out and take over.
    let orphaned = held_by(&store, "child-a");

    let mut status = None;
    wait_until("the survivor to finish", within(DEADLINE), || {
        status = survivor.try_wait().expect("poll child b");
        status.is_some()
    });
    assert!(
        status.is_some_and(|s| s.success()),
        "child b failed: {status:?}"
    );

    let by = claims_by(&store);
    eprintln!(
        "claims by authority: {by:?}; when a was killed: {unfinished_at_kill} unfinished, {} lease(s) held by a: {orphaned:?}",
        orphaned.len()
    );
    for resource in &orphaned {
        let lease = store.lease(resource).expect("lease").expect("exists");
        assert_eq!(
            lease.owner_id, "child-b",
            "the survivor took over {resource} from the dead process"
        );
    }
    assert!(by.contains_key("child-b"), "the survivor took part");

    // Logical results: every instance terminal with the single-authority history.
    let rows = all_instances(&store);
    assert_eq!(rows.len(), INSTANCES as usize);
    let mut physical: BTreeMap<String, usize> = BTreeMap::new();
    for name in ["a", "b"] {
        let text = std::fs::read_to_string(dir.path().join(format!("calls-{name}.log")))
            .unwrap_or_default();
        for line in text.lines() {
            *physical.entry(line.to_string()).or_default() += 1;
        }
    }
    let mut invocations = BTreeSet::new();
    for row in &rows {
        let n = inputs[&row.instance_id];
        assert_eq!(
            row.status, "completed",
            "instance {} (n={n})",
            row.instance_id
        );
        assert_eq!(
            history(&store, &row.instance_id),
            expected_history(n),
            "history of n={n}"
        );
        crate::runner::check_history_shape(&store, &row.instance_id);
        for (step, attempt) in [("send", if n % 3 == 0 { 2 } else { 1 }), ("confirm", 1)] {
            let invocation = format!("{}/{step}#0", row.instance_id);
            let outcome = store
                .action_outcome(&invocation)
                .expect("read outcome")
                .expect("one outcome record");
            assert_eq!(
                (outcome.outcome.as_str(), outcome.attempt),
                ("succeeded", attempt),
                "{invocation}"
            );
            assert!(
                physical.contains_key(&format!("{invocation} {attempt}")),
                "{invocation} attempt {attempt} has an outcome but never ran"
            );
            assert!(invocations.insert(invocation), "invocation ids are unique");
        }
        let (_, state) = leasehold::workflow::engine::decode_state(row).expect("state");
        assert_eq!(
            state.output,
            Some(json!({ "receipt": { "sent": n }, "ack": { "ack": n } }))
        );
    }
    let repeats: usize = physical.values().map(|c| c - 1).sum();
    eprintln!(
        "{} logical invocations, {} physical executions ({} repeated after the kill or a takeover)",
        invocations.len(),
        physical.values().sum::<usize>(),
        repeats
    );
}
