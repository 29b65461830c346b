//! The failover story with real processes: three `leasehold authority` processes share one
//! SQLite store under a short lease; one is SIGKILLed and another SIGSTOPped until every
//! claim it held was taken over, then resumed. `inspect failovers --json` must list
//! exactly the reclaims the grant history holds — worked out here from the grants and
//! writes alone, not from the failover facts — including reclaims from both lost owners,
//! and `inspect fenced --json` the resumed one's late writes, each naming who held the
//! item at that moment. An authority killed and restarted under its own instance id takes
//! its claims back at once. Every wait is on a condition, with a generous deadline.

#![allow(clippy::unwrap_used)]

#[path = "support/mod.rs"]
mod support;

use support::leasehold;
use support::metrics::{assert_open_metrics, sample};

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::{Duration, Instant};

use leasehold::Store;
use leasehold::clock::Clock;
use leasehold::model::HandlerVersion;
use leasehold::model::handler_key;
use leasehold::model::work::NewWork;
use leasehold::model::{Grant, WorkState, WriteRecord};
use leasehold::store::url::{self, OpenMode};
use serde_json::{Value, json};

use support::authorities::{Authorities, claimed_by, enqueue, signal, unfinished};
use support::wait::wait_until;

const ITEMS: usize = 3_000;
const LEASE_MS: u32 = 1_000;

/// `inspect VIEW --json` rows.
fn inspect(store: &str, view: &str) -> Vec<Value> {
    let o = leasehold(&[
        "inspect", "--store", store, view, "--json", "--limit", "100000", "--window", "1h",
    ]);
    assert!(
        o.status.success(),
        "inspect {view}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Every reclaim in the history, as `(resource, from, to, generation)`: a grant whose
/// resource was last granted to another owner that never finished, failed or yielded it
/// under that generation (an accepted write that ends a claim).
fn reclaims(grants: &[Grant], writes: &[WriteRecord]) -> BTreeSet<(String, String, String, u64)> {
    let ended: BTreeSet<(&str, &str, u64)> = writes
        .iter()
        .filter(|w| w.accepted && matches!(w.verb.as_str(), "complete" | "fail" | "yield"))
        .map(|w| (w.resource_id.as_str(), w.owner_id.as_str(), w.generation))
        .collect();
    let mut last: BTreeMap<&str, &Grant> = BTreeMap::new();
    let mut out = BTreeSet::new();
    for g in grants {
        if let Some(prev) = last.insert(g.resource_id.as_str(), g) {
            let released = ended.contains(&(
                prev.resource_id.as_str(),
                prev.owner_id.as_str(),
                prev.generation,
            ));
            if prev.owner_id != g.owner_id && !released {
                out.insert((
                    g.resource_id.clone(),
                    prev.owner_id.clone(),
                    g.owner_id.clone(),
                    g.generation,
                ));
            }
        }
    }
    out
}

fn text(v: &Value, key: &str) -> String {
    v[key].as_str().unwrap_or_default().to_owned()
}

/// Every family an authority's `/metrics` page states.
const METRIC_FAMILIES: [&str; 27] = [
    "claims",
    "workflow_claims",
    "reclaims",
    "completions",
    "leases_lost",
    "fenced_writes_refused",
    "store_errors",
    "cursor_advances",
    "events_delivered",
    "schedules_fired",
    "abandoned_on_shutdown",
    "lock_step_asides",
    "attempt_failures",
    "handler_completions",
    "handler_failures",
    "handler_retries_scheduled",
    "handler_uncertain_attempts",
    "refused_writes",
    "inflight",
    "ready",
    "live",
    "heartbeat_age_seconds",
    "reclaim_latency_seconds",
    "finish_latency_seconds",
    "handler_duration_seconds",
    "store_call_seconds",
    "build",
];

/// `GET /metrics` from `addr`: the body.
fn scrape(addr: &str) -> String {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    stream
        .write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let (head, body) = response.split_once("\r\n\r\n").unwrap();
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert!(head.contains("application/openmetrics-text"), "{head}");
    body.to_owned()
}

#[test]
#[expect(
    clippy::too_many_lines,
    reason = "a scripted scenario: its steps in the order they happen"
)]
fn failovers_and_late_writes_of_killed_and_stopped_authorities_are_listed() {
    let deadline = Instant::now() + Duration::from_secs(300);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.db").display().to_string();
    let store: Store = url::open(&path, OpenMode::ReadWrite).unwrap();
    enqueue(&store, ITEMS);
    let mut auth = Authorities::new();
    auth.spawn_with_lease("auth-0", &path, LEASE_MS);
    // auth-1, the one stopped and resumed, serves its metrics on a port of its choosing.
    auth.spawn_with(
        "auth-1",
        &path,
        LEASE_MS,
        &["--metrics-addr", "127.0.0.1:0"],
    );
    auth.spawn_with_lease("auth-2", &path, LEASE_MS);

    // kill -9 one while it holds claims.
    wait_until("auth-0 to hold claims", deadline, || {
        !claimed_by(&store, "auth-0").is_empty()
    });
    let killed_held = claimed_by(&store, "auth-0");
    auth.kill("auth-0");

    // SIGSTOP another while it holds claims, until each was taken over, then resume it,
    // until it writes late at least once (a resumed authority may also drop an attempt
    // without writing). A stop that lands inside a write transaction holds SQLite's write
    // lock and nobody progresses: then it is resumed and stopped again.
    let mut stopped_held = BTreeMap::new();
    'cycle: loop {
        let held = 'stop: loop {
            wait_until("auth-1 to hold claims", deadline, || {
                !claimed_by(&store, "auth-1").is_empty()
            });
            signal("-STOP", auth.pid("auth-1"));
            let held = claimed_by(&store, "auth-1");
            if held.is_empty() {
                signal("-CONT", auth.pid("auth-1"));
                continue;
            }
            let (mut revision, mut moved_at) = (store.revision().unwrap(), Instant::now());
            loop {
                assert!(
                    Instant::now() < deadline,
                    "timed out waiting for auth-1's claims to be taken over; auth-2's log ends:\n{}",
                    auth.tail("auth-2", 40)
                );
                let reclaimed = held
                    .iter()
                    .all(|(id, g)| store.work(id).unwrap().is_some_and(|w| w.generation > *g));
                if reclaimed {
                    break 'stop held;
                }
                let now = store.revision().unwrap();
                if now != revision {
                    (revision, moved_at) = (now, Instant::now());
                } else if moved_at.elapsed() > Duration::from_secs(5) {
                    signal("-CONT", auth.pid("auth-1"));
                    std::thread::sleep(Duration::from_millis(200));
                    continue 'stop;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        };
        stopped_held.extend(held);
        signal("-CONT", auth.pid("auth-1"));
        // Its late writes are refused and listed, each naming the holder then.
        let resumed = Instant::now();
        while resumed.elapsed() < Duration::from_secs(20) {
            let late = inspect(&path, "fenced")
                .iter()
                .any(|w| text(w, "writer") == "auth-1");
            if late {
                break 'cycle;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        assert!(Instant::now() < deadline, "auth-1 never wrote late");
    }
    // Its metrics state the fence it met, and parse as OpenMetrics.
    let at = auth
        .logged("auth-1", "started", "metrics")
        .expect("auth-1 logged where /metrics listens");
    let page = scrape(&at);
    assert_open_metrics(&page);
    for family in METRIC_FAMILIES {
        assert!(
            page.contains(&format!("# TYPE leasehold_{family} ")),
            "{family}: {page}"
        );
    }
    let fenced = sample(&page, "leasehold_fenced_writes_refused_total")
        + sample(&page, "leasehold_leases_lost_total");
    assert!(fenced > 0.0, "{page}");
    let completions = sample(&page, "leasehold_completions_total");
    wait_until("every item to finish", deadline, || unfinished(&store) == 0);
    assert!(
        sample(&scrape(&at), "leasehold_completions_total") >= completions,
        "counters only move forward"
    );
    auth.stop_all(deadline);

    let (grants, writes) = store.ownership_history(None, 0, 10_000_000).unwrap();
    let history = reclaims(&grants, &writes);
    let listed: BTreeSet<(String, String, String, u64)> = inspect(&path, "failovers")
        .iter()
        .map(|f| {
            (
                text(f, "resource"),
                text(f, "from"),
                text(f, "to"),
                f["generation"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        listed, history,
        "inspect failovers lists every reclaim the history holds"
    );
    for (owner, held) in [("auth-0", &killed_held), ("auth-1", &stopped_held)] {
        let from: Vec<_> = listed.iter().filter(|f| f.1 == owner).collect();
        assert!(!from.is_empty(), "no failover from {owner}");
        for id in held.keys() {
            assert!(
                from.iter().any(|f| &f.0 == id)
                    || store.work(id).unwrap().is_some_and(|w| {
                        // Finished by its own holder in the instant before the signal landed.
                        writes
                            .iter()
                            .any(|x| x.accepted && x.resource_id == w.id && x.owner_id == owner)
                    }),
                "{owner} held {id}, which was neither reclaimed nor finished by it"
            );
        }
    }
    for f in inspect(&path, "failovers") {
        let lapsed = f["lapsedMs"].as_i64().unwrap();
        assert!(lapsed >= 0, "a reclaim before expiry: {f}");
        assert!(f["fromGeneration"].as_u64().unwrap() < f["generation"].as_u64().unwrap());
    }

    // Each late write of auth-1 names the holder of that moment: the owner of the grant of
    // that generation in the history. That may be auth-1 itself under a newer generation —
    // once resumed, it can reclaim a lapsed item again while its old attempt still runs —
    // so the holder is checked against the history, not assumed to be someone else.
    let owner_of: BTreeMap<(String, u64), String> = grants
        .iter()
        .map(|g| ((g.resource_id.clone(), g.generation), g.owner_id.clone()))
        .collect();
    let late: Vec<Value> = inspect(&path, "fenced")
        .into_iter()
        .filter(|w| text(w, "writer") == "auth-1")
        .collect();
    assert!(!late.is_empty());
    for w in &late {
        let holder_generation = w["holderGeneration"].as_u64().expect("holder recorded");
        let holder = w["holder"].as_str();
        // Either a newer generation was granted, or the lapsed claim was settled (backed
        // off for a retry) under its own generation and nobody holds the item.
        assert!(
            holder_generation > w["writerGeneration"].as_u64().unwrap()
                || (holder.is_none()
                    && holder_generation == w["writerGeneration"].as_u64().unwrap()),
            "{w}"
        );
        if let Some(holder) = holder {
            assert_eq!(
                owner_of
                    .get(&(text(w, "resource"), holder_generation))
                    .map(String::as_str),
                Some(holder),
                "{w}"
            );
        }
        assert!(!text(w, "verb").is_empty() && !text(w, "refusal").is_empty());
    }
    let refused = writes.iter().filter(|w| !w.accepted).count();
    assert_eq!(
        inspect(&path, "fenced").len(),
        refused,
        "every refused write is listed"
    );
    eprintln!(
        "failovers: {} listed ({} from auth-0, {} from auth-1); auth-1 wrote {} times late",
        listed.len(),
        listed.iter().filter(|f| f.1 == "auth-0").count(),
        listed.iter().filter(|f| f.1 == "auth-1").count(),
        late.len()
    );
}

/// Orphans come first under a backlog: an authority holding claims is killed while 20,000
/// items wait. Its successor, busy with that backlog (four handlers at a time, tens of
/// milliseconds each), reclaims every orphan within two leases of the orphan's lease
/// running out — judged by the lapse the store recorded in each reclaiming grant — while
/// most of the backlog still waits behind them.
#[test]
fn orphans_are_reclaimed_within_two_leases_under_a_20000_item_backlog() {
    const BACKLOG: usize = 20_000;
    const LEASE: u32 = 2_000;
    let deadline = Instant::now() + Duration::from_secs(300);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.db").display().to_string();
    let store: Store = url::open(&path, OpenMode::ReadWrite).unwrap();
    enqueue(&store, BACKLOG);
    let mut auth = Authorities::new();
    auth.spawn_with_lease("first", &path, LEASE);
    wait_until("the first authority to hold claims", deadline, || {
        !claimed_by(&store, "first").is_empty()
    });
    auth.kill("first");
    let orphans = claimed_by(&store, "first");
    assert!(!orphans.is_empty(), "the killed authority held claims");

    auth.spawn_with_lease("second", &path, LEASE);
    wait_until("every orphan to be reclaimed", deadline, || {
        orphans
            .iter()
            .all(|(id, g)| store.work(id).unwrap().is_some_and(|w| w.generation > *g))
    });
    let waiting = unfinished(&store);
    assert!(
        waiting > BACKLOG as u64 / 2,
        "the orphans were reclaimed ahead of the backlog, not after it: {waiting} still wait"
    );

    let mut reclaims = BTreeMap::new();
    let mut before = None;
    loop {
        let page = store.failovers(0, before, 1_000).unwrap();
        for (_, g) in &page.rows {
            if let Some(took) = g.took_over.as_ref().filter(|t| t.from_owner == "first") {
                reclaims.insert(
                    g.resource_id.clone(),
                    (took.from_generation, took.lapsed_ms),
                );
            }
        }
        match page.next {
            Some(next) => before = Some(next),
            None => break,
        }
    }
    for (id, generation) in &orphans {
        let (from_generation, lapsed_ms) = reclaims
            .get(id)
            .unwrap_or_else(|| panic!("{id} was reclaimed with no failover recorded"));
        assert_eq!(from_generation, generation, "{id}");
        assert!(
            (0..=2 * i64::from(LEASE)).contains(lapsed_ms),
            "{id} waited {lapsed_ms} ms past its lease under the backlog"
        );
    }
    auth.stop_all(deadline);
    eprintln!(
        "{} orphans reclaimed, the longest {} ms past its lease; {waiting} items still waited",
        orphans.len(),
        reclaims.values().map(|r| r.1).max().unwrap_or(0)
    );
}

/// The owner stopped past its lease while another authority polls, then resumed: a lapse
/// alone fences nothing. The poller has the handler and takes other work meanwhile, but it
/// leaves the lapsed claim to its owner through its reclaim grace (`--reclaim-after`), so
/// the resumed owner renews late, its command answers, and the item succeeds on its one
/// and only attempt (its last: no dead letter) with the owner's answer. The history holds
/// one grant and no refused write, the handler's journal one run, and `check` is clean.
#[test]
#[expect(
    clippy::too_many_lines,
    reason = "a scripted scenario: its steps in the order they happen"
)]
fn an_owner_stopped_past_its_lease_that_nobody_replaced_finishes_its_attempt() {
    let deadline = Instant::now() + Duration::from_secs(120);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.db").display().to_string();
    let store: Store = url::open(&path, OpenMode::ReadWrite).unwrap();
    let journal = dir.path().join("journal");
    let config = dir.path().join("handlers.toml");
    std::fs::write(
        &config,
        format!(
            "[handlers.mail]\nversion = \"1.2.0\"\nexec = [\"python3\", {script:?}]\n\
             timeout = \"120s\"\nenv = {{ LEASEHOLD_TEST_JOURNAL = {journal:?} }}\n",
            script = Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/fixtures/handlers/exec_handler.py")
                .display()
                .to_string(),
            journal = journal.display().to_string(),
        ),
    )
    .unwrap();
    let config = config.display().to_string();
    let key = handler_key("mail", &HandlerVersion::parse("1.2.0").unwrap());
    let gate = dir.path().join("gate");
    let gated = json!({ "mode": "gate", "gate": gate, "dir": dir.path() });
    let last_attempt = NewWork {
        max_attempts: 1,
        ..NewWork::effect("slow", "mail", gated.to_string())
    };
    store.enqueue(last_attempt, &key).unwrap();

    let mut auth = Authorities::new();
    auth.spawn_with("owner", &path, LEASE_MS, &["--config", &config]);
    wait_until("the owner to run the item", deadline, || {
        dir.path().join("started-slow").exists()
    });
    let held = store.work("slow").unwrap().unwrap();
    assert_eq!(held.owner_id.as_deref(), Some("owner"));
    signal("-STOP", auth.pid("owner"));
    auth.spawn_with(
        "poller",
        &path,
        LEASE_MS,
        &["--config", &config, "--reclaim-after", "10m"],
    );
    // The lease runs out while the poller polls: it takes new work after the lapse.
    let expired = store
        .work("slow")
        .unwrap()
        .unwrap()
        .lease_expires_at
        .unwrap();
    wait_until("the owner's lease to run out", deadline, || {
        leasehold::clock::SystemClock.now() > expired + 2 * i64::from(LEASE_MS)
    });
    let quick = json!({ "mode": "ok", "to": "ann@example.com" });
    store
        .enqueue(NewWork::effect("quick", "mail", quick.to_string()), &key)
        .unwrap();
    wait_until(
        "the poller to take new work after the lapse",
        deadline,
        || {
            store
                .work("quick")
                .unwrap()
                .is_some_and(|w| w.state == WorkState::Succeeded)
        },
    );
    assert_eq!(
        store.work("slow").unwrap().unwrap(),
        held,
        "a lapse nobody took over is untouched"
    );

    signal("-CONT", auth.pid("owner"));
    std::fs::write(&gate, "open").unwrap();
    wait_until("the owner to finish", deadline, || {
        store
            .work("slow")
            .unwrap()
            .is_some_and(|w| w.state.is_terminal())
    });
    auth.stop_all(deadline);

    let done = store.work("slow").unwrap().unwrap();
    assert_eq!(
        (
            done.state,
            done.generation,
            done.attempt_number,
            done.uncertain_attempts
        ),
        (WorkState::Succeeded, 1, 1, 0),
        "{done:?}"
    );
    assert!(!done.is_dead_letter());
    let answer: Value = serde_json::from_str(done.result.as_deref().unwrap()).unwrap();
    assert_eq!(answer, json!({ "by": "owner", "generation": 1 }));
    let (grants, writes) = store.ownership_history(Some("slow"), 0, 1_000).unwrap();
    assert_eq!(grants.len(), 1, "nobody took over: {grants:?}");
    assert!(
        writes.iter().all(|w| w.accepted),
        "nothing fenced: {writes:?}"
    );
    let runs = std::fs::read_to_string(&journal).unwrap();
    let runs_of_slow = runs.lines().filter(|l| l.contains("\"slow\"")).count();
    assert_eq!(runs_of_slow, 1, "one run of the side effect");
    let check = leasehold(&["check", "--store", &path]);
    assert!(
        check.status.success(),
        "check: {}{}",
        String::from_utf8_lossy(&check.stdout),
        String::from_utf8_lossy(&check.stderr)
    );
}

/// A lease far longer than a start takes: a restart registered within half of it took the
/// id over, it did not wait for the crashed holder to read as gone.
const LONG_LEASE_MS: u32 = 60_000;

/// `id`'s registration row.
fn registration(store: &Store, id: &str) -> Option<leasehold::model::Authority> {
    store
        .list_authorities(&leasehold::model::PageRequest::first(100))
        .unwrap()
        .rows
        .into_iter()
        .find(|a| a.instance_id == id)
}

/// `kill -9` of an authority holding claims on a long lease, then a restart under the same
/// `--instance` at once, as a supervisor does: the restart registers without waiting out
/// the lease (the dead pid is found dead on this host), the crashed incarnation's claims
/// are handed back under new generations in the registering transaction, re-claimed and
/// finished, the takeover is logged and audited with the dead pid, and `check` is clean.
/// A start under the id while the new incarnation lives is still refused, in one line.
#[test]
fn an_authority_killed_and_restarted_under_its_own_id_takes_its_claims_back_at_once() {
    let deadline = Instant::now() + Duration::from_secs(300);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.db").display().to_string();
    let store: Store = url::open(&path, OpenMode::ReadWrite).unwrap();
    enqueue(&store, 400);
    let mut auth = Authorities::new();
    auth.spawn_with_lease("A", &path, LONG_LEASE_MS);
    let crashed = auth.pid("A");
    wait_until("A holds claims", deadline, || {
        !claimed_by(&store, "A").is_empty()
    });
    auth.kill("A");
    let held = claimed_by(&store, "A");
    assert!(!held.is_empty(), "killed holding claims");

    auth.spawn_with_lease("A", &path, LONG_LEASE_MS);
    let restarted = auth.pid("A");
    // Far less than the lease: a refused start exits at once and the row never changes.
    wait_until(
        "the restart registers",
        Instant::now() + Duration::from_secs(i64::from(LONG_LEASE_MS).unsigned_abs() / 2_000),
        || registration(&store, "A").is_some_and(|a| a.pid == restarted),
    );
    for (id, generation) in &held {
        let item = store.work(id).unwrap().unwrap();
        assert!(
            item.generation > *generation,
            "{id} was handed back with the registration: {item:?}"
        );
    }
    let lines = auth.lines_of("A", "restarted");
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert_eq!(lines[0]["previousPid"], u64::from(crashed), "{lines:?}");
    assert_eq!(lines[0]["released"], held.len(), "{lines:?}");
    let audit = store
        .list_audit(&leasehold::model::PageRequest::first(10_000))
        .unwrap()
        .rows;
    let takeovers: Vec<_> = audit
        .iter()
        .filter(|e| e.action == leasehold::store::RESTART_ACTION)
        .collect();
    assert_eq!(takeovers.len(), 1, "{takeovers:?}");
    assert_eq!(takeovers[0].target, "A");
    assert!(
        takeovers[0]
            .outcome
            .contains(&format!("crashed pid {crashed} ")),
        "{takeovers:?}"
    );

    // The new incarnation's pid runs and is the one recorded: the id is taken.
    let twin = leasehold(&[
        "authority",
        "--store",
        &path,
        "--instance",
        "A",
        "--lease-ms",
        &LONG_LEASE_MS.to_string(),
        "--log-format",
        "off",
        "--workload",
        "default",
    ]);
    assert_eq!(twin.status.code(), Some(2), "{twin:?}");
    let err = String::from_utf8(twin.stderr).unwrap();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("INSTANCE_IN_USE") && err.contains(&restarted.to_string()),
        "{err}"
    );

    // (A re-run the demo handler makes uncertain waits out a lease, as any would.)
    wait_until("the crashed incarnation's items finished", deadline, || {
        held.keys()
            .all(|id| store.work(id).unwrap().unwrap().state.is_terminal())
    });
    for (id, generation) in &held {
        let item = store.work(id).unwrap().unwrap();
        assert!(
            item.generation >= generation + 2 && item.uncertain_attempts >= 1,
            "{id} re-claimed after the restart, its lost attempt uncertain: {item:?}"
        );
    }
    auth.stop_all(deadline);
    let check = leasehold(&["check", "--store", &path]);
    assert!(
        check.status.success(),
        "{}{}",
        String::from_utf8_lossy(&check.stdout),
        String::from_utf8_lossy(&check.stderr)
    );
}

/// An authority SIGTERMed while its store calls queue behind a writer that holds the
/// SQLite write lock and does not let go — a stall that names the holder's pid — stops
/// within its grace and the stop's margin —
/// one `stop-timed-out` line, exit 1 — instead of waiting out minutes of retries for the
/// lock; what it owned lapses and is reclaimed, as after a crash.
#[test]
fn an_authority_stopped_behind_a_stalled_writer_exits_within_its_bound() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.db");
    let url = format!("sqlite:{}", path.display());
    assert!(leasehold(&["init", &url]).status.success());
    let mut fleet = Authorities::new();
    fleet.spawn_with_lease("a-1", &url, 3_000);
    let deadline = Instant::now() + Duration::from_secs(60);
    wait_until("a-1 started", deadline, || {
        !fleet.lines_of("a-1", "started").is_empty()
    });
    let holder = rusqlite::Connection::open(&path).unwrap();
    holder.execute_batch("BEGIN IMMEDIATE").unwrap();
    wait_until("a-1 queued behind the held lock", deadline, || {
        !fleet.lines_of("a-1", "store-write-stalled").is_empty()
    });
    // The OS names the writer holding the lock: this test's process.
    let named = fleet
        .logged("a-1", "store-write-stalled", "holder")
        .unwrap_or_default();
    assert!(
        named.starts_with(&format!("pid {} (", std::process::id())),
        "the stall names its holder: {named}"
    );
    signal("-TERM", fleet.pid("a-1"));
    // Each store call would retry for minutes; the bound is a second's grace and two.
    let status = fleet.wait_exit("a-1", Instant::now() + Duration::from_secs(60));
    assert_eq!(status.code(), Some(1), "a stop that released nothing");
    assert_eq!(fleet.lines_of("a-1", "stop-timed-out").len(), 1);
    holder.execute_batch("ROLLBACK").unwrap();
}
