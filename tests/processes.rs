//! Real OS processes racing on one SQLite file (the test binary re-runs itself as a child and is killed mid-workload): the
//! test binary re-executes itself as four worker processes that claim (in batches) and
//! complete 2,000 effects under a short wall-clock lease, while the parent SIGKILLs one
//! mid-run and SIGSTOPs another past its lease expiry, then resumes it. Afterwards the
//! store's durable history must show every item completed exactly once, no accepted write
//! from a superseded generation, the resumed worker's late completions refused, and no
//! worker may ever have seen a raw SQLite busy error.
//!
//! Workers log every completion attempt to their own stdout file:
//! `C <id> <generation> OK`, `C <id> <generation> REFUSED <code>`,
//! `C <id> <generation> ERROR <code>` (the whole group commit failed), and
//! `E <code> <text>` for any other store error.

#![allow(clippy::unwrap_used)]

#[path = "support/mod.rs"]
mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use leasehold::Store;
use leasehold::model::WorkState;
use leasehold::model::work::NewWork;
use leasehold::store::Completion;
use leasehold::store::url::{self, OpenMode};

use support::authorities::{claimed_by, signal};
use support::wait::wait_until;

/// Set (to the store path) only in a worker process.
const CHILD_STORE: &str = "LEASEHOLD_TEST_CHILD_STORE";
const CHILD_OWNER: &str = "LEASEHOLD_TEST_CHILD_OWNER";

const WORKERS: usize = 4;
const ITEMS: usize = 2_000;
const BATCH: usize = 10;
/// A short wall-clock lease: a stopped worker loses its items quickly.
const LEASE_MS: i64 = 400;
/// How long a worker "runs" a claimed batch before recording it (well inside the lease).
const WORK: Duration = Duration::from_millis(80);
const COMPAT: &str = "processes-test-build";

// --- the worker ---------------------------------------------------------------------------

/// The worker process, started by the parent test below. Ignored in a normal run, so it
/// never shows as a test that passed without doing anything.
#[test]
#[ignore = "a child process entry point: the parent test runs it"]
fn child_worker() {
    let (Ok(path), Ok(owner)) = (std::env::var(CHILD_STORE), std::env::var(CHILD_OWNER)) else {
        return;
    };
    run_worker(&path, &owner);
}

fn line(e: &leasehold::Error) -> String {
    e.to_string().replace(['\n', '\r'], " ")
}

fn run_worker(path: &str, owner: &str) {
    let store = match url::open(&format!("sqlite:{path}"), OpenMode::ReadWrite) {
        Ok(store) => store,
        Err(e) => {
            println!("E {} {}", e.code(), line(&e));
            return;
        }
    };
    println!("READY {owner} {}", std::process::id());
    loop {
        let items = match store.claim_batch(owner, COMPAT, BATCH, LEASE_MS) {
            Ok(items) => items,
            Err(e) => {
                println!("E {} {}", e.code(), line(&e));
                std::thread::sleep(Duration::from_millis(10));
                continue;
            }
        };
        if items.is_empty() {
            match unfinished(&store) {
                Ok(0) => break,
                Ok(_) => std::thread::sleep(Duration::from_millis(20)),
                Err(e) => println!("E {} {}", e.code(), line(&e)),
            }
            continue;
        }
        // The effect itself; a SIGSTOP most likely lands here, outside any transaction.
        std::thread::sleep(WORK);
        let batch: Vec<Completion> = items
            .iter()
            .map(|it| Completion {
                id: it.id.clone(),
                owner: owner.into(),
                generation: it.generation,
                outcome: Ok(Some(format!("\"{owner}\""))),
                retry: leasehold::rules::retry::Retry::default(),
            })
            .collect();
        match store.complete_batch(&batch) {
            Ok(results) => {
                for (c, result) in batch.iter().zip(results) {
                    match result {
                        Ok(_) => println!("C {} {} OK", c.id, c.generation),
                        Err(e) => println!("C {} {} REFUSED {}", c.id, c.generation, e.code()),
                    }
                }
            }
            Err(e) => {
                println!("E {} {}", e.code(), line(&e));
                for c in &batch {
                    println!("C {} {} ERROR {}", c.id, c.generation, e.code());
                }
            }
        }
    }
    println!("DONE {owner}");
}

/// Items of this test not yet terminal, from the incremental counts.
fn unfinished(store: &Store) -> leasehold::Result<u64> {
    Ok(store
        .overview()?
        .work
        .iter()
        .filter(|c| c.compat == COMPAT && !c.state.is_terminal())
        .map(|c| c.count)
        .sum())
}

// --- the parent ---------------------------------------------------------------------------

struct Worker {
    owner: String,
    child: Option<Child>,
    log: PathBuf,
    err: PathBuf,
}

/// Kills (and resumes, so it can die) every worker still running when dropped.
struct Workers(Vec<Worker>);

impl Drop for Workers {
    fn drop(&mut self) {
        for w in &mut self.0 {
            if let Some(child) = w.child.as_mut() {
                signal("-CONT", child.id());
                let _ = child.kill();
                let _ = child.wait();
            }
        }
    }
}

fn terminal(store: &Store) -> u64 {
    ITEMS as u64 - unfinished(store).expect("overview")
}

/// Whether every item of `held` has been taken over (a newer generation) or finished.
fn all_reclaimed(store: &Store, held: &BTreeMap<String, u64>) -> bool {
    held.iter().all(|(id, g)| {
        store
            .work(id)
            .expect("read")
            .is_some_and(|w| w.generation > *g)
    })
}

fn spawn_worker(exe: &Path, dir: &Path, store_path: &Path, owner: &str) -> Worker {
    let log = dir.join(format!("{owner}.log"));
    let err = dir.join(format!("{owner}.err"));
    let child = Command::new(exe)
        .args([
            "--exact",
            "child_worker",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_STORE, store_path)
        .env(CHILD_OWNER, owner)
        .stdin(Stdio::null())
        .stdout(File::create(&log).expect("log file"))
        .stderr(File::create(&err).expect("err file"))
        .spawn()
        .expect("spawn a worker process");
    Worker {
        owner: owner.into(),
        child: Some(child),
        log,
        err,
    }
}

/// One completion attempt as a worker logged it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Attempt {
    id: String,
    generation: u64,
    outcome: String,
}

fn parse_log(text: &str) -> (Vec<Attempt>, Vec<String>) {
    let mut attempts = Vec::new();
    let mut errors = Vec::new();
    for line in text.lines() {
        let parts: Vec<&str> = line.split_whitespace().collect();
        match parts.as_slice() {
            ["C", id, generation, rest @ ..] if !rest.is_empty() => {
                if let Ok(generation) = generation.parse() {
                    attempts.push(Attempt {
                        id: (*id).into(),
                        generation,
                        outcome: rest.join(" "),
                    });
                }
            }
            ["E", code, ..] => errors.push((*code).to_owned()),
            _ => {}
        }
    }
    (attempts, errors)
}

#[test]
#[expect(
    clippy::too_many_lines,
    reason = "a scripted scenario: its steps in the order they happen"
)]
fn four_processes_race_through_sigkill_and_sigstop() {
    if std::env::var(CHILD_STORE).is_ok() {
        return;
    }
    let started = Instant::now();
    let deadline = started + Duration::from_secs(120);
    let dir = tempfile::Builder::new()
        .prefix("leasehold-procs-")
        .tempdir()
        .expect("temp dir");
    let store_path = dir.path().join("store.db");
    let store = url::open(
        &format!("sqlite:{}", store_path.display()),
        OpenMode::ReadWrite,
    )
    .expect("create the store");
    for chunk in (0..ITEMS).collect::<Vec<_>>().chunks(500) {
        let specs = chunk
            .iter()
            .map(|i| NewWork::effect(format!("fx-{i:05}"), "effect", format!("{{\"n\":{i}}}")))
            .collect();
        store.enqueue_batch(specs, COMPAT).expect("enqueue");
    }

    let exe = std::env::current_exe().expect("the test binary");
    let mut workers = Workers(
        (0..WORKERS)
            .map(|i| spawn_worker(&exe, dir.path(), &store_path, &format!("worker-{i}")))
            .collect(),
    );

    // 1. SIGKILL worker-0 mid-run.
    wait_until("the first 300 completions", deadline, || {
        terminal(&store) >= 300
    });
    {
        let victim = &mut workers.0[0];
        let mut child = victim.child.take().expect("running");
        child.kill().expect("SIGKILL worker-0");
        child.wait().expect("reap worker-0");
    }
    let killed_in_flight = claimed_by(&store, "worker-0");

    // 2. SIGSTOP worker-1 while it holds claims, until every one of them has been taken
    //    over by another worker after its lease lapsed; then SIGCONT it.
    let pid1 = workers.0[1].child.as_ref().expect("running").id();
    let stopped_in_flight = 'stop: loop {
        wait_until("worker-1 to hold claims", deadline, || {
            !claimed_by(&store, "worker-1").is_empty()
        });
        signal("-STOP", pid1);
        let held = claimed_by(&store, "worker-1");
        if held.is_empty() {
            signal("-CONT", pid1);
            continue;
        }
        // If worker-1 was stopped inside a write transaction it holds SQLite's write lock
        // and nobody progresses: resume it and try again.
        let (mut revision, mut moved_at) = (store.revision().expect("revision"), Instant::now());
        loop {
            assert!(
                Instant::now() < deadline,
                "timed out waiting for worker-1's claims to be taken over"
            );
            if all_reclaimed(&store, &held) {
                break 'stop held;
            }
            let now_rev = store.revision().expect("revision");
            if now_rev != revision {
                (revision, moved_at) = (now_rev, Instant::now());
            } else if moved_at.elapsed() > Duration::from_secs(3) {
                signal("-CONT", pid1);
                std::thread::sleep(Duration::from_millis(200));
                continue 'stop;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    };
    signal("-CONT", pid1);

    // 3. Everyone left finishes.
    wait_until("the workers to finish", deadline, || {
        workers.0.iter_mut().all(|w| {
            w.child
                .as_mut()
                .is_none_or(|c| c.try_wait().expect("try_wait").is_some())
        })
    });
    let elapsed = started.elapsed();
    for w in &mut workers.0 {
        if let Some(mut child) = w.child.take() {
            let status = child.wait().expect("reap");
            let err = std::fs::read_to_string(&w.err).unwrap_or_default();
            assert!(status.success(), "{} exited with {status}: {err}", w.owner);
        }
    }

    // --- what the logs say
    let mut attempts: BTreeMap<String, Vec<Attempt>> = BTreeMap::new();
    let mut contention = 0usize;
    for w in &workers.0 {
        let text = std::fs::read_to_string(&w.log).expect("worker log");
        let err = std::fs::read_to_string(&w.err).unwrap_or_default();
        for raw in [
            "database is locked",
            "SQLITE_BUSY",
            "database table is locked",
            "SQLITE_LOCKED",
        ] {
            assert!(
                !text.contains(raw) && !err.contains(raw),
                "{} saw a raw busy error ({raw})",
                w.owner
            );
        }
        let (logged, errors) = parse_log(&text);
        for code in errors {
            assert_eq!(
                code, "STORE_CONTENTION",
                "{} saw a store error other than contention",
                w.owner
            );
            contention += 1;
        }
        if w.owner != "worker-0" {
            assert!(
                text.contains(&format!("DONE {}", w.owner)),
                "{} did not finish its loop",
                w.owner
            );
        }
        attempts.insert(w.owner.clone(), logged);
    }

    // --- what the store's durable history says
    let overview = store.overview().expect("overview");
    let succeeded: u64 = overview
        .work
        .iter()
        .filter(|c| c.compat == COMPAT && c.state == WorkState::Succeeded)
        .map(|c| c.count)
        .sum();
    assert_eq!(
        (succeeded, unfinished(&store).expect("overview")),
        (ITEMS as u64, 0),
        "every item terminal"
    );
    let (grants, writes) = store
        .ownership_history(None, 0, 10_000_000)
        .expect("history");

    let mut accepted_completes: BTreeMap<&str, Vec<&leasehold::model::WriteRecord>> =
        BTreeMap::new();
    for w in writes.iter().filter(|w| w.accepted) {
        assert_eq!(w.verb, "complete", "only completions were written: {w:?}");
        accepted_completes
            .entry(w.resource_id.as_str())
            .or_default()
            .push(w);
    }
    assert_eq!(
        accepted_completes.len(),
        ITEMS,
        "every item has an accepted completion"
    );
    for (id, ws) in &accepted_completes {
        assert_eq!(ws.len(), 1, "{id} was completed more than once: {ws:?}");
    }

    // No accepted write from a superseded generation: nothing granted a newer generation of
    // the same item before the write's revision.
    let mut grants_of: BTreeMap<&str, Vec<&leasehold::model::Grant>> = BTreeMap::new();
    for g in &grants {
        grants_of.entry(g.resource_id.as_str()).or_default().push(g);
    }
    for ws in accepted_completes.values() {
        let w = ws[0];
        let before: Vec<_> = grants_of
            .get(w.resource_id.as_str())
            .into_iter()
            .flatten()
            .filter(|g| g.revision < w.revision)
            .collect();
        assert!(
            before.iter().all(|g| g.generation <= w.generation),
            "accepted write from a superseded generation: {w:?} after {before:?}"
        );
        let current = before
            .iter()
            .max_by_key(|g| g.generation)
            .expect("a grant precedes every write");
        assert_eq!(
            (current.generation, current.owner_id.as_str()),
            (w.generation, w.owner_id.as_str()),
            "written by the current holder"
        );
    }

    // The logs agree with the store for every worker that lived to print them.
    for (owner, logged) in &attempts {
        let oks: BTreeSet<(&str, u64)> = logged
            .iter()
            .filter(|a| a.outcome == "OK")
            .map(|a| (a.id.as_str(), a.generation))
            .collect();
        for (id, ws) in &accepted_completes {
            let w = ws[0];
            if &w.owner_id == owner && owner != "worker-0" {
                assert!(
                    oks.contains(&(*id, w.generation)),
                    "{owner}'s accepted completion of {id} is missing from its log"
                );
            }
        }
        for (id, generation) in &oks {
            let w = accepted_completes[id][0];
            assert_eq!(
                (&w.owner_id, w.generation),
                (owner, *generation),
                "{owner} logged OK for {id} but the store disagrees"
            );
        }
    }

    // worker-0 died holding claims: those were reclaimed as uncertain attempts and finished
    // by someone else.
    for id in killed_in_flight.keys() {
        let item = store.work(id).expect("read").expect("item");
        assert!(
            item.uncertain_attempts >= 1,
            "{id}: an unrecorded attempt counts as uncertain"
        );
        assert_ne!(accepted_completes[id.as_str()][0].owner_id, "worker-0");
    }

    // worker-1 was stopped holding claims that were taken over while it slept: every late
    // completion it attempted for them after resuming was refused.
    let late: Vec<&Attempt> = attempts["worker-1"]
        .iter()
        .filter(|a| stopped_in_flight.get(&a.id) == Some(&a.generation))
        .collect();
    let mut refusals: BTreeMap<&str, usize> = BTreeMap::new();
    for (id, generation) in &stopped_in_flight {
        let mine: Vec<&&Attempt> = late.iter().filter(|a| &a.id == id).collect();
        assert_eq!(
            mine.len(),
            1,
            "worker-1 attempted {id} (generation {generation}) once after resuming: {mine:?}"
        );
        let outcome = mine[0].outcome.as_str();
        match outcome.strip_prefix("REFUSED ") {
            Some(code @ ("WORK_FENCED" | "already-terminal")) => {
                *refusals.entry(code).or_default() += 1;
            }
            _ => assert_eq!(
                outcome, "ERROR STORE_CONTENTION",
                "worker-1's late completion of {id} was not refused"
            ),
        }
        let record = writes.iter().find(|w| {
            &w.resource_id == id && w.generation == *generation && w.owner_id == "worker-1"
        });
        if let Some(record) = record {
            assert!(
                !record.accepted,
                "the store accepted worker-1's stale write: {record:?}"
            );
        }
    }
    assert!(
        !refusals.is_empty(),
        "worker-1's late completions reached the store and were refused"
    );

    eprintln!(
        "processes: {ITEMS} items, {WORKERS} workers, {elapsed:?}; worker-0 killed holding {}, worker-1 stopped holding {} \
         (late completions refused: {refusals:?}); STORE_CONTENTION seen {contention} times; {} grants, {} writes",
        killed_in_flight.len(),
        stopped_in_flight.len(),
        grants.len(),
        writes.len()
    );
}

// --- a store rewound under a running authority ---------------------------------------------

/// Effects the rewind test drains.
const REWIND_ITEMS: usize = 200;

/// `(item, generation)` of every claim an authority's JSON log records.
fn claims_in(log: &Path) -> BTreeSet<(String, u64)> {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    text.lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v["message"] == "claimed")
        .filter_map(|v| Some((v["item"].as_str()?.to_owned(), v["generation"].as_u64()?)))
        .collect()
}

/// An older copy of the SQLite file moved into place under a running authority stops it
/// (exit non-zero, logged) before it acknowledges anything more; a restarted authority
/// refuses the store (`STORE_REWOUND`, exit 2); after `leasehold store accept-rewind` one
/// runs again and never hands out a generation handed out before the rewind.
#[test]
fn a_store_rewound_under_a_running_authority_stops_it_and_a_restart_is_refused() {
    if std::env::var(CHILD_STORE).is_ok() {
        return;
    }
    let deadline = Instant::now() + Duration::from_secs(120);
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let path = dir.path().join("store.db");
    let url = format!("sqlite:{}", path.display());
    let store = url::open(&url, OpenMode::ReadWrite).unwrap();
    support::authorities::enqueue(&store, REWIND_ITEMS);
    let old = dir.path().join("old.db");
    rusqlite::Connection::open(&path)
        .unwrap()
        .execute("VACUUM INTO ?1", [old.to_str().unwrap()])
        .unwrap();

    let mut procs = support::authorities::Authorities::new();
    procs.spawn_in("a1", &url, &state);
    wait_until("a1 completes some items", deadline, || {
        support::authorities::unfinished(&store) < (REWIND_ITEMS as u64) - 20
    });
    drop(store);
    // The restore: a new file moved over the store's name.
    let staged = dir.path().join("staged.db");
    std::fs::copy(&old, &staged).unwrap();
    std::fs::rename(&staged, &path).unwrap();
    let status = procs.wait_exit("a1", deadline);
    let log = std::fs::read_to_string(procs.log("a1")).unwrap();
    assert!(!status.success(), "a1 kept running: {log}");
    assert!(log.contains("store-untrusted"), "{log}");
    let before = claims_in(&procs.log("a1"));
    assert!(!before.is_empty());

    // The restore completes: the old file alone, without the stopped process's WAL (which
    // SQLite would otherwise replay onto it).
    for side in ["store.db-wal", "store.db-shm"] {
        let _ = std::fs::remove_file(dir.path().join(side));
    }

    // One command, killed (and the test failed) if it outlives the deadline.
    let leasehold = |args: &[&str]| {
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_leasehold"))
            .args(args)
            .env("LEASEHOLD_STATE_DIR", &state)
            .env_remove("LEASEHOLD_STORE")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        loop {
            if child.try_wait().unwrap().is_some() {
                break child.wait_with_output().unwrap();
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                panic!("leasehold {args:?} did not exit");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    };
    let refused = leasehold(&[
        "authority",
        "--store",
        &url,
        "--instance",
        "a2",
        "--workload",
        "default",
    ]);
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("STORE_REWOUND"), "{stderr}");
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");

    let accepted = leasehold(&[
        "store",
        "accept-rewind",
        "--store",
        &url,
        "--reason",
        "test",
    ]);
    assert!(
        accepted.status.success(),
        "{}",
        String::from_utf8_lossy(&accepted.stderr)
    );

    procs.spawn_in("a3", &url, &state);
    let store = url::open(&url, OpenMode::ReadOnly).unwrap();
    wait_until("a3 completes every item", deadline, || {
        support::authorities::unfinished(&store) == 0
    });
    procs.stop_all(deadline);
    let after = claims_in(&procs.log("a3"));
    let twice: Vec<_> = before.intersection(&after).collect();
    assert!(twice.is_empty(), "generations handed out twice: {twice:?}");
    let report =
        leasehold::check::check(&store, &leasehold::check::CheckOptions::at(store.now())).unwrap();
    assert!(report.violations.is_empty(), "{:?}", report.violations);
}

/// Authorities started together on one host check the whole store once between them: a
/// check in progress when they start (held here, as another process checking it would hold
/// it) is waited for, and its clean verdict, finished after they asked, is what each of them
/// logs as `store-verified`, without reading the store again.
#[test]
fn authorities_started_together_take_the_check_in_progress() {
    use std::io::Write;
    use std::os::fd::AsFd;
    if std::env::var(CHILD_STORE).is_ok() {
        return;
    }
    let deadline = Instant::now() + Duration::from_secs(120);
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let path = dir.path().join("store.db");
    let url = format!("sqlite:{}", path.display());
    let store = url::open(&url, OpenMode::ReadWrite).unwrap();
    support::authorities::enqueue(&store, 20);
    let mut turn = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(store.host_check_file())
        .unwrap();
    rustix::fs::flock(turn.as_fd(), rustix::fs::FlockOperation::LockExclusive).unwrap();

    let mut procs = support::authorities::Authorities::new();
    let names = ["a1", "a2"];
    for name in names {
        procs.spawn_in(name, &url, &state);
    }
    let logged = |name: &str, what: &str| {
        std::fs::read_to_string(procs.log(name))
            .unwrap_or_default()
            .lines()
            .find(|l| l.contains(what))
            .map(str::to_owned)
    };
    // Each asked for a check before it logged `started`.
    wait_until("both started", deadline, || {
        names.iter().all(|n| logged(n, "\"started\"").is_some())
    });
    assert!(names.iter().all(|n| logged(n, "store-verified").is_none()));
    let at = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis();
    writeln!(turn, "{at} {} 0", std::process::id()).unwrap();
    drop(turn);
    wait_until("both verified", deadline, || {
        names.iter().all(|n| logged(n, "store-verified").is_some())
    });
    let taken = format!("checked by process {} on this host", std::process::id());
    for name in names {
        let line = logged(name, "store-verified").unwrap();
        assert!(line.contains(&taken), "{name}: {line}");
    }
    procs.stop_all(deadline);
}

/// A SQLite store of [`REWIND_ITEMS`] items in a temporary directory (`store.db`) and one
/// authority process, `a1`, that has completed some of them: the store, the process and
/// its log.
fn one_authority_under_way(
    deadline: Instant,
) -> (
    tempfile::TempDir,
    support::authorities::Authorities,
    PathBuf,
) {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite:{}", dir.path().join("store.db").display());
    let store = url::open(&url, OpenMode::ReadWrite).unwrap();
    support::authorities::enqueue(&store, REWIND_ITEMS);
    drop(store);
    let mut procs = support::authorities::Authorities::new();
    procs.spawn_in("a1", &url, &dir.path().join("state"));
    let log = procs.log("a1");
    wait_until("a1 completes some items", deadline, || {
        claims_in(&log).len() > 20
    });
    (dir, procs, log)
}

/// The WAL file deleted under a running authority: its next write transaction finds the
/// path no longer names the WAL it writes to, fails before committing, and the authority
/// stops (exit non-zero, logged) — it acknowledges no completion after it found out.
#[test]
fn a_wal_removed_under_a_running_authority_stops_it_before_the_next_acknowledgement() {
    if std::env::var(CHILD_STORE).is_ok() {
        return;
    }
    let deadline = Instant::now() + Duration::from_secs(120);
    let (dir, mut procs, log) = one_authority_under_way(deadline);
    std::fs::remove_file(dir.path().join("store.db-wal")).unwrap();
    let status = procs.wait_exit("a1", deadline);
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(!status.success(), "a1 kept running: {text}");
    assert!(text.contains("the WAL file was removed"), "{text}");
    let after: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.contains("\"store-untrusted\""))
        .filter(|l| l.contains("\"completed\""))
        .collect();
    assert!(
        after.is_empty(),
        "acknowledged after the removal was found: {after:?}"
    );
}

/// A newer build upgrades the store under a running authority (here: the schema version
/// moved past this build's, as an upgrade moves it): the authority's next transaction is
/// refused, and it stops (exit 2) with one line naming both versions, and
/// acknowledges nothing after — it never writes rows the newer build would misread.
#[test]
fn a_store_upgraded_under_a_running_authority_stops_it_saying_so() {
    if std::env::var(CHILD_STORE).is_ok() {
        return;
    }
    let deadline = Instant::now() + Duration::from_secs(120);
    let (dir, mut procs, log) = one_authority_under_way(deadline);
    let path = dir.path().join("store.db");
    let newer = leasehold::store::sqlite::SCHEMA_VERSION + 1;
    let raw = rusqlite::Connection::open(&path).unwrap();
    raw.busy_timeout(Duration::from_secs(60)).unwrap();
    raw.execute(
        "UPDATE meta SET value = ?1 WHERE key = 'schema_version'",
        [newer],
    )
    .unwrap();
    let revision: i64 = raw
        .query_row("SELECT value FROM meta WHERE key = 'revision'", [], |r| {
            r.get(0)
        })
        .unwrap();
    let status = procs.wait_exit("a1", deadline);
    let text = std::fs::read_to_string(&log).unwrap();
    assert_eq!(status.code(), Some(2), "a1: {text}");
    assert!(
        text.contains(&format!(
            "store schema version {newer} is newer than this build"
        )),
        "{text}"
    );
    let after: i64 = raw
        .query_row("SELECT value FROM meta WHERE key = 'revision'", [], |r| {
            r.get(0)
        })
        .unwrap();
    assert_eq!(after, revision, "a1 committed after the upgrade");
}

/// Takes SQLite's write lock (`BEGIN IMMEDIATE`), says so, and stops itself inside the
/// transaction: a writer paused while holding the lock.
const PAUSED_WRITER: &str = "import os, signal, sqlite3, sys
c = sqlite3.connect(sys.argv[1], isolation_level=None)
c.execute('BEGIN IMMEDIATE')
print('locked', flush=True)
os.kill(os.getpid(), signal.SIGSTOP)";

/// A writer paused inside its transaction holds the write lock every authority queues on:
/// the waiting authority logs the stall within a few seconds (and again while it lasts),
/// says when it got through, and then drains the work.
#[test]
fn a_writer_paused_inside_a_transaction_is_logged_as_a_stall() {
    use std::io::BufRead;
    const STALL_ITEMS: usize = 200;

    if std::env::var(CHILD_STORE).is_ok() {
        return;
    }
    let deadline = Instant::now() + Duration::from_secs(120);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.db");
    let url = format!("sqlite:{}", path.display());
    let store = url::open(&url, OpenMode::ReadWrite).unwrap();
    support::authorities::enqueue(&store, STALL_ITEMS);
    let mut procs = support::authorities::Authorities::new();
    procs.spawn("a1", &url);
    wait_until("a1 completes some items", deadline, || {
        support::authorities::unfinished(&store) < STALL_ITEMS as u64
    });

    let mut writer = Command::new("python3")
        .args(["-c", PAUSED_WRITER, path.to_str().unwrap()])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut said = String::new();
    std::io::BufReader::new(writer.stdout.take().unwrap())
        .read_line(&mut said)
        .unwrap();
    assert_eq!(said.trim(), "locked");
    let logged = |message: &str| procs.lines_of("a1", message);
    wait_until("a1 logs the stall", deadline, || {
        !logged("store-write-stalled").is_empty()
    });
    let stalled = &logged("store-write-stalled")[0];
    assert!(
        stalled["waited_ms"].as_u64().is_some_and(|ms| ms >= 3_000),
        "{stalled}"
    );
    assert!(
        stalled["store"]
            .as_str()
            .is_some_and(|s| s.contains("store.db")),
        "{stalled}"
    );
    // The paused writer dies; its transaction rolls back and the lock is free.
    writer.kill().unwrap();
    writer.wait().unwrap();
    wait_until("a1 says it got through", deadline, || {
        !logged("store-write-resumed").is_empty()
    });
    wait_until("a1 completes every item", deadline, || {
        support::authorities::unfinished(&store) == 0
    });
    procs.stop_all(deadline);
}
