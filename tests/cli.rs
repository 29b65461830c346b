//! The `leasehold` binary against real SQLite files in a temp dir: the CLI contract of
//! The command-line contract (names, `--json` lines, exit codes 0/1/2, one-line errors,
//! `LEASEHOLD_STORE`),
//! and `leasehold copy` round trips (SQLite to SQLite, and SQLite to Postgres and back)
//! judged by what `inspect`, `history` and `check` say.
#![allow(clippy::unwrap_used)]

#[path = "cli/refusals.rs"]
mod refusals;
#[path = "support/mod.rs"]
mod support;

#[path = "cli/attention.rs"]
mod attention;
#[path = "cli/bulk.rs"]
mod bulk;
#[path = "cli/cancel.rs"]
mod cancel;
#[path = "cli/compat.rs"]
mod compat;
#[path = "cli/config.rs"]
mod config;
#[path = "cli/creation.rs"]
mod creation;
#[path = "cli/damaged.rs"]
mod damaged;
#[path = "cli/enqueue.rs"]
mod enqueue;
#[path = "cli/exact_numbers.rs"]
mod exact_numbers;
#[path = "cli/handler_set.rs"]
mod handler_set;
#[path = "cli/install.rs"]
mod install;
#[path = "cli/open_figures.rs"]
mod open_figures;
#[path = "cli/release.rs"]
mod release;
#[path = "cli/replay.rs"]
mod replay;
#[path = "cli/schedule.rs"]
mod schedule;
#[path = "cli/triage.rs"]
mod triage;
#[path = "cli/verify.rs"]
mod verify;
#[path = "cli/workflow_sets.rs"]
mod workflow_sets;

use std::path::Path;
use std::process::{Command, Output};
use std::sync::Arc;

use leasehold::Store;
use leasehold::authority::workload;
use leasehold::authority::{AuthorityConfig, AuthorityCore, Finished, Pace};
use leasehold::clock::{Clock, ManualClock, SystemClock};
use leasehold::ids::SeededIds;
use leasehold::store::Keyed;
use leasehold::store::sqlite::SqliteBackend;
use leasehold::store::url::OpenMode;
use serde_json::Value;

const VIEWS: [&str; 11] = [
    "overview",
    "authorities",
    "leases",
    "work",
    "workflows",
    "cursors",
    "events",
    "schedules",
    "audit",
    "failovers",
    "fenced",
];

fn leasehold(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_leasehold"))
        // Rewind witnesses of these throwaway stores stay out of the home directory.
        .env(
            "LEASEHOLD_STATE_DIR",
            std::env::temp_dir().join("leasehold-test-witnesses"),
        )
        .args(args)
        .env_remove("LEASEHOLD_STORE")
        .env("RUST_BACKTRACE", "1")
        .env("NO_COLOR", "1")
        .output()
        .unwrap()
}

fn stdout(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8(o.stderr.clone()).unwrap()
}

fn code(o: &Output) -> i32 {
    o.status.code().unwrap_or(-1)
}

/// Asserts the failure contract: exit `expected`, exactly one `leasehold: …` line on stderr,
/// no panic text, no backtrace, no `Debug` output.
fn assert_one_line_failure(o: &Output, expected: i32) -> String {
    let err = stderr(o);
    assert_eq!(code(o), expected, "stdout: {}\nstderr: {err}", stdout(o));
    assert_eq!(err.lines().count(), 1, "one line expected: {err:?}");
    assert!(err.starts_with("leasehold: "), "{err:?}");
    for forbidden in [
        "panicked",
        "RUST_BACKTRACE",
        "stack backtrace",
        "Error {",
        "Some(",
    ] {
        assert!(!err.contains(forbidden), "{forbidden} in {err:?}");
    }
    err
}

fn store_in(dir: &Path) -> String {
    dir.join("store.db").display().to_string()
}

fn seed(store: &str, extra: &[&str]) {
    let mut args = vec!["seed", "--store", store];
    args.extend_from_slice(extra);
    let o = leasehold(&args);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(stdout(&o).starts_with("seeded "), "{}", stdout(&o));
    assert_eq!(stdout(&o).lines().count(), 1);
}

fn json_lines(o: &Output) -> Vec<Value> {
    assert_eq!(code(o), 0, "{}", stderr(o));
    stdout(o)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

#[test]
#[expect(
    clippy::too_many_lines,
    reason = "a scripted scenario: its steps in the order they happen"
)]
fn seed_then_inspect_work_as_json_lines() {
    let dir = tempfile::tempdir().unwrap();
    let store = store_in(dir.path());
    seed(
        &store,
        &[
            "--effects",
            "30",
            "--workflows",
            "4",
            "--events",
            "10",
            "--seed",
            "5",
        ],
    );

    let rows = json_lines(&leasehold(&[
        "inspect", "--store", &store, "work", "--json", "--limit", "1000",
    ]));
    assert_eq!(rows.len(), 32, "30 effects and 2 subscription cursors");
    for row in &rows {
        for field in [
            "id",
            "kind",
            "state",
            "handler",
            "ownerId",
            "generation",
            "attemptNumber",
            "uncertainAttempts",
            "nextEligibleAt",
            "compat",
            "compatible",
        ] {
            assert!(row.get(field).is_some(), "{field} missing in {row}");
        }
        assert_eq!(row["state"], "pending");
        assert_eq!(row["compatible"], false, "no authority is running");
        assert!(row.get("token").is_none(), "tokens are never printed");
    }

    let workflows = json_lines(&leasehold(&[
        "inspect",
        "--store",
        &store,
        "workflows",
        "--json",
    ]));
    assert_eq!(workflows.len(), 4);
    for row in &workflows {
        for field in [
            "instanceId",
            "workflowId",
            "status",
            "currentStepId",
            "attempt",
            "waitingReason",
            "instanceRevision",
            "compatible",
        ] {
            assert!(row.get(field).is_some(), "{field} missing in {row}");
        }
    }

    // Paging: a small page names its continuation, and the next page starts after it.
    let first = leasehold(&["inspect", "--store", &store, "work", "--limit", "3"]);
    let out = stdout(&first);
    let hint = out.lines().last().unwrap();
    let key = hint
        .strip_prefix("(more rows: --after ")
        .and_then(|k| k.strip_suffix(')'))
        .unwrap();
    let next = json_lines(&leasehold(&[
        "inspect", "--store", &store, "work", "--json", "--limit", "3", "--after", key,
    ]));
    assert_eq!(next.len(), 3);
    assert!(next.iter().all(|r| r["id"].as_str().unwrap() > key));

    // Filters go to the store's filtered read.
    let cursors = json_lines(&leasehold(&[
        "inspect",
        "--store",
        &store,
        "work",
        "--json",
        "--filter",
        "kind:cursor state:pending",
    ]));
    assert_eq!(cursors.len(), 2);
    let incompatible = json_lines(&leasehold(&[
        "inspect",
        "--store",
        &store,
        "work",
        "--json",
        "--limit",
        "1000",
        "--filter",
        "compat:incompatible",
    ]));
    assert_eq!(incompatible.len(), 32);

    // Seeding again adds more and breaks nothing.
    seed(
        &store,
        &["--effects", "10", "--workflows", "0", "--events", "3"],
    );
    let overview = json_lines(&leasehold(&[
        "inspect", "--store", &store, "overview", "--json",
    ]));
    assert_eq!(overview.len(), 1);
    let effects: u64 = overview[0]["work"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["kind"] == "effect")
        .map(|c| c["count"].as_u64().unwrap())
        .sum();
    assert_eq!(effects, 40);
    assert_lateness_matches_the_items(&store, &overview[0]);
    // No authority runs here, so nothing trims; the checker's history is whole from 1.
    let retention = &overview[0]["retention"];
    assert_eq!(retention["policy"], Value::Null, "{retention}");
    assert_eq!(retention["historyFromRevision"], 1, "{retention}");
    let text = stdout(&leasehold(&["inspect", "--store", &store, "overview"]));
    assert!(
        text.contains("retention    no running authority trims; history from revision 1"),
        "{text}"
    );
}

/// `inspect overview --json` states each late lane's oldest due instant as the store's own
/// items have it (the earliest `nextEligibleAt` of its pending / retry items, when due), and
/// its lateness as now − that.
fn assert_lateness_matches_the_items(url: &str, overview: &Value) {
    let store = leasehold::store::url::open(url, OpenMode::ReadOnly).unwrap();
    let now = overview["now"].as_i64().unwrap();
    let items = store
        .list_work(
            &leasehold::model::work::WorkFilter::default(),
            &leasehold::model::PageRequest::first(10_000),
        )
        .unwrap()
        .rows;
    let mut oldest: std::collections::BTreeMap<(String, String), i64> =
        std::collections::BTreeMap::new();
    for w in items.iter().filter(|w| {
        matches!(
            w.state,
            leasehold::model::WorkState::Pending | leasehold::model::WorkState::Retry
        ) && w.next_eligible_at <= now
    }) {
        let at = oldest
            .entry((w.kind.as_str().to_owned(), w.handler.clone()))
            .or_insert(w.next_eligible_at);
        *at = (*at).min(w.next_eligible_at);
    }
    let stated: std::collections::BTreeMap<(String, String), i64> = overview["lateLanes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| {
            assert_eq!(
                l["lateMs"].as_i64(),
                Some(now - l["oldestDue"].as_i64().unwrap())
            );
            (
                (
                    l["kind"].as_str().unwrap().to_owned(),
                    l["handler"].as_str().unwrap().to_owned(),
                ),
                l["oldestDue"].as_i64().unwrap(),
            )
        })
        .collect();
    assert!(!stated.is_empty(), "seeded effects are due");
    assert_eq!(stated, oldest);
}

#[test]
fn every_view_works_on_a_fresh_store() {
    let dir = tempfile::tempdir().unwrap();
    let store = store_in(dir.path());
    seed(
        &store,
        &[
            "--effects",
            "0",
            "--workflows",
            "0",
            "--schedules",
            "0",
            "--subscriptions",
            "0",
            "--events",
            "0",
        ],
    );
    for view in VIEWS {
        let o = leasehold(&["inspect", "--store", &store, view]);
        assert_eq!(code(&o), 0, "{view}: {}", stderr(&o));
        let out = stdout(&o);
        assert!(out.contains("(no rows)"), "{view}: {out}");
        let json = leasehold(&["inspect", "--store", &store, view, "--json"]);
        let rows = json_lines(&json);
        assert_eq!(rows.len(), usize::from(view == "overview"), "{view}");
    }
}

#[test]
fn the_store_may_come_from_the_environment() {
    let dir = tempfile::tempdir().unwrap();
    let store = store_in(dir.path());
    seed(
        &store,
        &[
            "--effects",
            "3",
            "--workflows",
            "0",
            "--events",
            "0",
            "--seed",
            "1",
        ],
    );
    let o = Command::new(env!("CARGO_BIN_EXE_leasehold"))
        // Rewind witnesses of these throwaway stores stay out of the home directory.
        .env(
            "LEASEHOLD_STATE_DIR",
            std::env::temp_dir().join("leasehold-test-witnesses"),
        )
        .args(["inspect", "work", "--json"])
        .env("LEASEHOLD_STORE", &store)
        .output()
        .unwrap();
    assert_eq!(json_lines(&o).len(), 5);
}

#[test]
fn bad_stores_and_bad_input_are_one_line_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let garbage = dir.path().join("garbage.db");
    std::fs::write(
        &garbage,
        (0..4096u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect::<Vec<u8>>(),
    )
    .unwrap();
    let garbage = garbage.display().to_string();
    let missing = dir.path().join("missing.db").display().to_string();
    let store = store_in(dir.path());
    seed(
        &store,
        &["--effects", "1", "--workflows", "0", "--events", "0"],
    );

    let cases: Vec<Vec<&str>> = vec![
        vec!["inspect", "--store", "foo://nowhere", "work"],
        vec!["inspect", "--store", "", "work"],
        vec!["inspect", "--store", &missing, "work"],
        vec!["inspect", "--store", &garbage, "overview"],
        vec!["inspect", "--store", &garbage, "work", "--json"],
        vec!["event", "--store", &garbage, "--type", "x"],
        vec!["inspect", "work"],
        vec!["inspect", "--store", &store, "no-such-view"],
        vec![
            "inspect", "--store", &store, "leases", "--filter", "owner:x",
        ],
        vec![
            "inspect",
            "--store",
            &store,
            "work",
            "--filter",
            "state:bogus",
        ],
        vec!["history", "--store", &store, "wf-unknown"],
        vec![
            "event",
            "--store",
            &store,
            "--type",
            "x",
            "--source",
            "only-source",
        ],
        vec!["event", "--store", &store, "--type", "x", "--id", "only-id"],
        vec![
            "event",
            "--store",
            &store,
            "--type",
            "x",
            "--payload",
            "{not json",
        ],
        vec!["workflow", "validate", &missing],
        vec!["no-such-command"],
        vec![
            "inspect",
            "--store",
            &store,
            "failovers",
            "--window",
            "soon",
        ],
        vec!["inspect", "--store", &store, "failovers", "--window", "0s"],
        vec!["inspect", "--store", &store, "fenced", "--window", "400d"],
        vec!["inspect", "--store", &store, "work", "--window", "15m"],
        vec![
            "inspect",
            "--store",
            &store,
            "fenced",
            "--after",
            "x\u{1b}[2J",
        ],
    ];
    for args in cases {
        let o = leasehold(&args);
        assert_one_line_failure(&o, 2);
    }
    // Nothing was created by a read-only inspect of a missing store.
    assert!(!Path::new(&missing).exists());
}

/// Drives the SQLite store at `path` through the library the way authorities would, on a
/// manual clock an hour ahead so every seeded item is due: batches claimed and finished, a
/// stalled owner whose completions are fenced after a reclaim, retries, workflow steps and
/// their outcome records, cursors, schedule firings and a keyed lease call; then both
/// authorities stop cleanly, so no authority's liveness changes while the views are read.
fn drive(path: &str) {
    let clock = ManualClock::new(SystemClock.now() + 3_600_000);
    let store = Store::new(
        Arc::new(SqliteBackend::open(path, OpenMode::ReadWrite).unwrap()),
        Arc::new(clock.clone()),
        Arc::new(SeededIds::new(9)),
    );
    let core = |id: &str| {
        let config = AuthorityConfig {
            lease_duration_ms: 1_000,
            renew_interval_ms: 300,
            ..AuthorityConfig::new(id, "v1")
        };
        let workload = workload::named("default", 1).unwrap();
        AuthorityCore::new(store.clone(), config, workload, Pace::Virtual).unwrap()
    };
    let (a, b) = (core("a"), core("b"));
    a.register().unwrap();
    b.register().unwrap();
    let stalled: Vec<_> = a.poll().unwrap().iter().map(|job| a.execute(job)).collect();
    clock.advance(1_500);
    for _ in 0..30 {
        for owner in [&b, &a] {
            for job in owner.poll().unwrap() {
                owner.finish(owner.execute(&job));
            }
        }
        clock.advance(700);
    }
    let fenced = Finished::Refused("WORK_FENCED".into());
    let refused = stalled
        .into_iter()
        .map(|executed| a.finish(executed))
        .filter(|finished| *finished == fenced)
        .count();
    assert!(refused > 0, "the stalled owner was never fenced");
    let key = Keyed {
        key: Some("copy-key"),
    };
    store
        .acquire("r-keyed", "operator", 600_000.0, key)
        .unwrap();
    a.shutdown().unwrap();
    b.shutdown().unwrap();
}

/// `inspect failovers` and `inspect fenced` on a store where a stalled owner's claims were
/// reclaimed and its late completions refused: camelCase JSON rows that agree with the
/// store's history, an aligned table with the window's headline, pages by `--after`.
#[test]
#[expect(
    clippy::too_many_lines,
    reason = "a scripted scenario: its steps in the order they happen"
)]
fn failovers_and_fenced_writes_are_listed_from_the_history() {
    let dir = tempfile::tempdir().unwrap();
    let store = busy_store(dir.path());
    let window = ["--window", "3h"];
    let read = |view: &str, extra: &[&str]| {
        let mut args = vec!["inspect", "--store", &store, view, "--json"];
        args.extend_from_slice(&window);
        args.extend_from_slice(extra);
        leasehold(&args)
    };
    let failovers = json_lines(&read("failovers", &[]));
    let fenced = json_lines(&read("fenced", &[]));
    assert!(!failovers.is_empty() && !fenced.is_empty());
    let keys = |v: &Value| v.as_object().unwrap().keys().cloned().collect::<Vec<_>>();
    assert_eq!(
        keys(&failovers[0]),
        [
            "at",
            "from",
            "fromGeneration",
            "generation",
            "how",
            "lapsedMs",
            "resource",
            "revision",
            "to"
        ]
    );
    assert_eq!(
        keys(&fenced[0]),
        [
            "at",
            "holder",
            "holderGeneration",
            "refusal",
            "resource",
            "revision",
            "verb",
            "writer",
            "writerGeneration"
        ]
    );
    let history = Store::new(
        Arc::new(SqliteBackend::open(&store, OpenMode::ReadOnly).unwrap()),
        Arc::new(SystemClock),
        Arc::new(SeededIds::new(1)),
    );
    let (grants, writes) = history.ownership_history(None, 0, 1_000_000).unwrap();
    let taken: Vec<(String, u64)> = grants
        .iter()
        .rev()
        .filter_map(|g| {
            g.took_over
                .as_ref()
                .map(|_| (g.resource_id.clone(), g.generation))
        })
        .collect();
    let listed: Vec<(String, u64)> = failovers
        .iter()
        .map(|f| {
            (
                f["resource"].as_str().unwrap().to_owned(),
                f["generation"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(listed.len(), taken.len());
    assert_eq!(
        listed.iter().collect::<std::collections::BTreeSet<_>>(),
        taken.iter().collect::<std::collections::BTreeSet<_>>()
    );
    assert_eq!(fenced.len(), writes.iter().filter(|w| !w.accepted).count());
    assert!(
        fenced.iter().any(|w| w["writer"] == "a"),
        "the stalled owner"
    );
    for w in &fenced {
        // A newer claim held it: another owner's, or the writer's own after its claim lapsed
        // unrenewed (this fixture steps authorities without renewing a held cursor) — or
        // nobody did (already finished).
        assert!(
            w["holderGeneration"].as_u64() > w["writerGeneration"].as_u64(),
            "who held it then: {w}"
        );
    }

    // The overview counts the same lists over the default window (all of them are in it).
    let overview = &json_lines(&leasehold(&[
        "inspect", "--store", &store, "overview", "--json",
    ]))[0];
    assert_eq!(overview["incidents"]["failovers"], failovers.len());
    assert_eq!(overview["incidents"]["refusedWrites"], fenced.len());
    assert_eq!(overview["incidents"]["window"], "15m");

    // Pages: the key under a full page continues exactly where it stopped.
    let first = read("failovers", &["--limit", "1"]);
    let hint = stderr(&first);
    let key = hint
        .trim()
        .strip_prefix("(more rows: --after ")
        .unwrap()
        .trim_end_matches(')');
    let rest = json_lines(&read("failovers", &["--after", key, "--limit", "100000"]));
    let mut paged = json_lines(&first);
    paged.extend(rest);
    assert_eq!(paged, failovers);

    let table = leasehold(&["inspect", "--store", &store, "fenced", "--window", "3h"]);
    let text = stdout(&table);
    assert!(text.starts_with("AT "), "{text}");
    assert!(text.contains("HOLDER THEN"), "{text}");
    let noun = if fenced.len() == 1 {
        "refused write"
    } else {
        "refused writes"
    };
    assert!(
        text.trim_end()
            .ends_with(&format!("last 3h · {} {noun}", fenced.len())),
        "{text}"
    );
}

/// Every view of `leasehold inspect --json` for `store` (the overview without its own
/// location, provider and clock reading, which differ between stores by nature).
fn view_json(store: &str, view: &str) -> String {
    let o = leasehold(&[
        "inspect", "--store", store, view, "--json", "--limit", "100000",
    ]);
    assert_eq!(code(&o), 0, "{view} of {store}: {}", stderr(&o));
    if view != "overview" {
        return stdout(&o);
    }
    let mut overview: Value = serde_json::from_str(&stdout(&o)).unwrap();
    for key in ["store", "storeKind", "now"] {
        overview.as_object_mut().unwrap().remove(key);
    }
    // Lateness is measured from now, like `now` itself; the due instants it is measured
    // from stay.
    for list in ["lateKinds", "lateLanes"] {
        for row in overview[list].as_array_mut().unwrap() {
            row.as_object_mut().unwrap().remove("lateMs");
        }
    }
    overview.to_string()
}

/// What `leasehold check --json` says, with its exit code.
fn check_says(store: &str) -> (i32, String) {
    let o = leasehold(&["check", "--store", store, "--json"]);
    (code(&o), stdout(&o))
}

/// Copies `from` into `via` and `via` into `back` (store URLs of any providers, the last
/// two new or empty), then asserts that `leasehold inspect --json` of every view, `leasehold
/// history --json` of every instance and `leasehold check --json` read the same at all
/// three. Each view is read from the three stores back to back, so time-relative fields
/// (lease status, due schedules) are judged at nearly one instant.
fn round_trip(from: &str, via: &str, back: &str) {
    let mut summaries = Vec::new();
    for (source, target) in [(from, via), (via, back)] {
        let o = leasehold(&["copy", "--from", source, "--to", target, "--json"]);
        assert_eq!(code(&o), 0, "copy {source} to {target}: {}", stderr(&o));
        // Both ends are named as `describe()` names them (a URL without its password).
        let mut summary: Value = serde_json::from_str(&stdout(&o)).unwrap();
        for end in ["from", "to"] {
            assert!(summary[end].is_string(), "{summary}");
            summary.as_object_mut().unwrap().remove(end);
        }
        summaries.push(summary);
    }
    assert_eq!(summaries[0], summaries[1], "both copies wrote the same");
    let stores = [from, via, back];
    for view in VIEWS {
        let seen: Vec<String> = stores.iter().map(|s| view_json(s, view)).collect();
        assert!(!seen[0].is_empty(), "{view} is empty");
        assert_eq!(seen[1], seen[0], "{view}: {via} differs from {from}");
        assert_eq!(seen[2], seen[0], "{view}: {back} differs from {from}");
    }
    let instances = json_lines(&leasehold(&[
        "inspect",
        "--store",
        from,
        "workflows",
        "--json",
        "--limit",
        "100000",
    ]));
    for row in &instances {
        let id = row["instanceId"].as_str().unwrap();
        let seen: Vec<String> = stores
            .iter()
            .map(|s| stdout(&leasehold(&["history", "--store", s, id, "--json"])))
            .collect();
        assert!(!seen[0].is_empty(), "history of {id}");
        assert_eq!(seen[1], seen[0], "history of {id}");
        assert_eq!(seen[2], seen[0], "history of {id}");
    }
    let checked: Vec<(i32, String)> = stores.iter().map(|s| check_says(s)).collect();
    assert_eq!(checked[1], checked[0], "check of {via}");
    assert_eq!(checked[2], checked[0], "check of {back}");
}

#[test]
fn copy_round_trips_a_busy_store_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let [b, c] = ["b.db", "c.db"].map(|f| dir.path().join(f).display().to_string());
    round_trip(&busy_store(dir.path()), &b, &c);
}

/// SQLite → Postgres → SQLite: moving up and back keeps everything `inspect`, `history`
/// and `check` show.
#[cfg(feature = "postgres")]
#[test]
fn copy_round_trips_through_postgres_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let pg = support::postgres::database();
    let back = dir.path().join("back.db").display().to_string();
    round_trip(&busy_store(dir.path()), pg.url(), &back);
}

/// A seeded SQLite store in `dir` that authorities worked on (claims, completions, fenced
/// refusals, retries, workflow steps) and an operator cancelled a workflow in.
fn busy_store(dir: &Path) -> String {
    let a = dir.join("a.db").display().to_string();
    seed(
        &a,
        &[
            "--effects",
            "200",
            "--workflows",
            "20",
            "--schedules",
            "3",
            "--subscriptions",
            "2",
            "--events",
            "30",
            "--seed",
            "11",
        ],
    );
    drive(&a);
    let instance = json_lines(&leasehold(&[
        "inspect",
        "--store",
        &a,
        "workflows",
        "--json",
        "--filter",
        "status:waiting",
    ]))[0]["instanceId"]
        .as_str()
        .unwrap()
        .to_owned();
    let o = leasehold(&["cancel", "--store", &a, &instance, "--reason", "copy test"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(check_says(&a).0, 0, "{}", check_says(&a).1);
    a
}

#[test]
fn copy_refuses_a_non_empty_target_itself_and_memory() {
    let dir = tempfile::tempdir().unwrap();
    let path = |f: &str| dir.path().join(f).display().to_string();
    let (source, target) = (path("source.db"), path("target.db"));
    for store in [&source, &target] {
        seed(
            store,
            &["--effects", "3", "--workflows", "1", "--events", "2"],
        );
    }
    // What the refusal must leave alone: the revision (every commit advances it) and the
    // durable rows. Views that judge rows against the clock (lease status, due schedules)
    // may read differently a moment later without anything having changed.
    let durable = |store: &str| -> Vec<String> {
        let overview: Value = serde_json::from_str(&view_json(store, "overview")).unwrap();
        std::iter::once(overview["revision"].to_string())
            .chain(
                ["work", "workflows", "events", "audit"]
                    .iter()
                    .map(|v| view_json(store, v)),
            )
            .collect()
    };
    let before = durable(&target);
    let o = leasehold(&["copy", "--from", &source, "--to", &target]);
    let err = assert_one_line_failure(&o, 2);
    assert!(err.contains("COPY_TARGET_NOT_EMPTY"), "{err}");
    assert_eq!(durable(&target), before, "the refused target is unchanged");

    let dotted = format!("{}/./source.db", dir.path().display());
    let missing = path("missing.db");
    let new = path("new.db");
    for (from, to) in [
        (source.as_str(), source.as_str()),
        (source.as_str(), dotted.as_str()),
        ("memory", new.as_str()),
        (source.as_str(), "memory"),
        (missing.as_str(), new.as_str()),
    ] {
        let o = leasehold(&["copy", "--from", from, "--to", to]);
        assert_one_line_failure(&o, 2);
    }
    assert!(
        !Path::new(&new).exists(),
        "a refused copy created its target"
    );
    assert!(!Path::new(&missing).exists());
}

#[test]
fn event_dedup_outcomes_and_exit_codes() {
    let dir = tempfile::tempdir().unwrap();
    let store = store_in(dir.path());
    assert_eq!(code(&leasehold(&["init", &store])), 0);
    let ingest = |extra: &[&str]| {
        let mut args = vec!["event", "--store", store.as_str(), "--type", "order-placed"];
        args.extend_from_slice(extra);
        leasehold(&args)
    };
    let first = ingest(&["--source", "shop", "--id", "e-1", "--payload", r#"{"a":1}"#]);
    assert_eq!(code(&first), 0, "{}", stderr(&first));
    let accepted = stdout(&first);
    assert!(accepted.starts_with("accepted seq "), "{accepted}");
    let seq = accepted.trim().rsplit(' ').next().unwrap().to_owned();

    let again = ingest(&[
        "--source",
        "shop",
        "--id",
        "e-1",
        "--payload",
        r#"{ "a" : 1 }"#,
    ]);
    assert_eq!(code(&again), 0);
    assert_eq!(stdout(&again).trim(), format!("duplicate of seq {seq}"));

    let conflict = ingest(&["--source", "shop", "--id", "e-1", "--payload", r#"{"a":2}"#]);
    let err = assert_one_line_failure(&conflict, 1);
    assert!(err.contains("EVENT_ID_CONFLICT"), "{err}");

    let anonymous = ingest(&[]);
    assert_eq!(code(&anonymous), 0);
    assert!(stdout(&anonymous).starts_with("unidentified seq "));

    let json = json_lines(&ingest(&["--source", "shop", "--id", "e-2", "--json"]));
    assert_eq!(json[0]["outcome"], "accepted");

    let events = json_lines(&leasehold(&[
        "inspect", "--store", &store, "events", "--json",
    ]));
    let outcomes: Vec<&str> = events
        .iter()
        .map(|e| e["outcome"].as_str().unwrap())
        .collect();
    assert_eq!(
        outcomes,
        [
            "accepted",
            "duplicate",
            "EVENT_ID_CONFLICT",
            "unidentified",
            "accepted"
        ]
    );
}

/// Hostile ids are refused at the door (see `refusals`), but a store written by an older
/// build or another tool may hold them: planted below the validator, they still print
/// escaped in tables and exact in JSON.
#[test]
fn hostile_ids_are_escaped_in_tables_and_exact_in_json() {
    let dir = tempfile::tempdir().unwrap();
    let store = store_in(dir.path());
    let evil_type = "evil\u{1b}[31mred\u{7}";
    let evil_id = format!("id\u{1b}]0;pwned\u{7}\u{202e}{}", "x".repeat(200));
    let o = leasehold(&[
        "event", "--store", &store, "--type", evil_type, "--source", "s\nrc", "--id", &evil_id,
    ]);
    assert_eq!(code(&o), 2, "refused at the door: {}", stderr(&o));
    let backend = SqliteBackend::open(&store, OpenMode::ReadWrite).unwrap();
    leasehold::store::Backend::write(&backend, &mut |tx| {
        tx.commit_revision()?;
        tx.add_ingestion(&leasehold::model::Ingestion {
            id: 1,
            at: 0,
            event_type: evil_type.into(),
            source: Some("s\nrc".into()),
            external_id: Some(evil_id.clone()),
            outcome: leasehold::model::event::DedupOutcome::Accepted,
            seq: Some(1),
        })
    })
    .unwrap();
    drop(backend);

    let table = leasehold(&["inspect", "--store", &store, "events"]);
    let out = stdout(&table);
    assert!(
        !out.contains('\u{1b}') && !out.contains('\u{7}') && !out.contains('\u{202e}'),
        "{out:?}"
    );
    assert!(out.contains("evil\\x1b[31mred\\x07"), "{out}");
    assert!(out.contains("s\\nrc"), "{out}");
    assert!(out.contains('…'), "long ids are truncated: {out}");
    assert_eq!(out.lines().count(), 2, "header and one row: {out}");

    let rows = json_lines(&leasehold(&[
        "inspect", "--store", &store, "events", "--json",
    ]));
    assert_eq!(rows[0]["eventType"], evil_type);
    assert_eq!(rows[0]["externalId"].as_str().unwrap(), evil_id);
}

#[test]
fn workflow_validate_reports_diagnostics() {
    let dir = tempfile::tempdir().unwrap();
    let shipped = Path::new(env!("CARGO_MANIFEST_DIR")).join("workflows/reminder.json");
    let ok = leasehold(&["workflow", "validate", shipped.to_str().unwrap()]);
    assert_eq!(code(&ok), 0, "{}", stderr(&ok));
    assert!(
        stdout(&ok).starts_with("ok: workflow reminder"),
        "{}",
        stdout(&ok)
    );

    let bad = dir.path().join("bad.json");
    std::fs::write(
        &bad,
        r#"{"id":"x","entry":"nope","steps":[{"id":"a","type":"complete"}]}"#,
    )
    .unwrap();
    let o = leasehold(&["workflow", "validate", bad.to_str().unwrap()]);
    assert_one_line_failure(&o, 1);
    assert!(
        stdout(&o)
            .lines()
            .any(|l| l.starts_with("WORKFLOW_ENTRY_NOT_FOUND at entry: ")),
        "{}",
        stdout(&o)
    );

    let garbage = dir.path().join("garbage.json");
    std::fs::write(&garbage, "\u{1b}[2J not json").unwrap();
    let o = leasehold(&["workflow", "validate", garbage.to_str().unwrap()]);
    assert_one_line_failure(&o, 1);
    assert!(
        stdout(&o).starts_with("WORKFLOW_INVALID_DEFINITION"),
        "{}",
        stdout(&o)
    );
    assert!(!stdout(&o).contains('\u{1b}'));

    let binary = dir.path().join("binary.json");
    std::fs::write(&binary, [0xff, 0xfe, 0x00, 0x9f]).unwrap();
    assert_one_line_failure(
        &leasehold(&["workflow", "validate", binary.to_str().unwrap()]),
        2,
    );
}

#[test]
fn help_and_version_exit_zero() {
    let help = leasehold(&["--help"]);
    assert_eq!(code(&help), 0);
    for name in [
        "demo",
        "attach",
        "authority",
        "seed",
        "inspect",
        "history",
        "cancel",
        "check",
        "workflow",
        "event",
        "copy",
        "bench",
    ] {
        assert!(stdout(&help).contains(name), "{name} missing from --help");
    }
    assert_eq!(code(&leasehold(&["--version"])), 0);
}

/// `leasehold bench … --json`: one object with the documented fields, for every mode.
#[test]
#[expect(
    clippy::too_many_lines,
    reason = "a scripted scenario: its steps in the order they happen"
)]
fn bench_reports_its_documented_fields_as_json() {
    let dir = tempfile::tempdir().unwrap();
    let work_store = format!("sqlite:{}", dir.path().join("work.db").display());
    let o = leasehold(&[
        "bench",
        "work",
        "--store",
        &work_store,
        "--items",
        "300",
        "--single",
        "20",
        "--authorities",
        "2",
        "--concurrency",
        "16",
        "--json",
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let report: Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    assert_eq!(report["bench"], "work");
    assert_eq!(report["store"]["kind"], "sqlite");
    assert!(
        report["store"]["durability"]
            .as_str()
            .unwrap()
            .contains("synchronous=FULL")
    );
    assert!(report["machine"]["cores"].as_u64().unwrap() >= 1);
    assert_eq!(report["knobs"]["items"], 300);
    let results = &report["results"];
    for key in [
        "enqueueSinglePerSec",
        "enqueueBatchedPerSec",
        "drainPerSec",
        "claimToCompleteP50Ms",
        "claimToCompleteP99Ms",
        "fencedRejections",
        "storeCommits",
        "commitsPerSec",
        "checkSeconds",
    ] {
        assert!(results[key].is_number(), "{key} missing: {report}");
    }
    assert_eq!(results["completions"], 300);
    // The run's write amplification, from the process's own I/O accounting.
    let written = results["bytesWritten"].as_f64().unwrap();
    let per_item = results["bytesWrittenPerItem"].as_f64().unwrap();
    assert!(
        written > 0.0 && (per_item - written / 300.0).abs() <= 0.5,
        "{report}"
    );
    // The store it wrote passes the invariant checker.
    assert_eq!(results["checkViolations"], 0, "{report}");
    assert_eq!(results["checkHistoryGaps"], 0, "{report}");

    // The store now holds the bench's items: a second run refuses and changes nothing.
    let again = leasehold(&["bench", "work", "--store", &work_store, "--items", "10"]);
    assert!(assert_one_line_failure(&again, 2).contains("scratch store"));

    let wf_store = format!("sqlite:{}", dir.path().join("wf.db").display());
    let o = leasehold(&[
        "bench",
        "--store",
        &wf_store,
        "workflows",
        "--instances",
        "30",
        "--single",
        "10",
        "--concurrency",
        "8",
        "--json",
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let report: Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    assert_eq!(report["bench"], "workflows");
    for key in [
        "startsPerSec",
        "startsBatchedPerSec",
        "workflowsPerSec",
        "transitionsPerSec",
    ] {
        assert!(
            report["results"][key].as_f64().unwrap() > 0.0,
            "{key}: {report}"
        );
    }

    // The dashboard over a seeded store, with one writer process working it meanwhile.
    let seeded = format!("sqlite:{}", dir.path().join("seeded.db").display());
    seed(&seeded, &[]);
    let o = leasehold(&[
        "bench",
        "dashboard",
        "--store",
        &seeded,
        "--refreshes",
        "3",
        "--writers",
        "1",
        "--json",
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let report: Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    assert_eq!(report["knobs"]["writers"], 1);
    for key in [
        "firstFrameMs",
        "refreshP50Ms",
        "refreshP99Ms",
        "endOfWorkMs",
        "peakRssMb",
    ] {
        assert!(
            report["results"][key].as_f64().unwrap() > 0.0,
            "{key}: {report}"
        );
    }

    let o = leasehold(&["bench", "work"]);
    assert!(assert_one_line_failure(&o, 2).contains("--store"));
}

/// Writers that cannot work the store end the dashboard bench at once, naming the process
/// that exited, with the writer's own refusal above it — not after the bench's whole
/// timeout. Here the store at the path was created again, so the writers' rewind witness
/// refuses it.
#[test]
fn the_dashboard_bench_stops_when_its_writers_exit() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("again.db");
    let store = format!("sqlite:{}", path.display());
    let bench = || {
        leasehold(&[
            "bench",
            "dashboard",
            "--store",
            &store,
            "--refreshes",
            "1",
            "--writers",
            "1",
            "--timeout-s",
            "600",
        ])
    };
    seed(&store, &["--effects", "5"]);
    // Its writers leave this host's witness of the store they worked.
    let first = bench();
    assert_eq!(code(&first), 0, "{}", stderr(&first));
    for suffix in ["", "-wal", "-shm"] {
        let mut file = path.as_os_str().to_owned();
        file.push(suffix);
        let _ = std::fs::remove_file(file);
    }
    seed(&store, &["--effects", "5"]);
    let o = bench();
    let err = stderr(&o);
    assert_eq!(code(&o), 2, "{err}");
    assert!(err.contains("STORE_REWOUND"), "the writer's refusal: {err}");
    let last = err.lines().last().unwrap_or_default();
    assert!(
        last.starts_with("leasehold: ")
            && last.contains("exited")
            && last.contains("before the bench was done"),
        "{err}"
    );
    assert!(!err.contains("did not finish within"), "{err}");
    assert!(!err.contains("No such process"), "{err}");
}

/// `inspect cursors --json` and the dashboard's cursor rows state the same facts about the
/// same store, both read through `ops::cursors`: owner, generation, position, lag and claim
/// rate. A cursor that has delivered everything shows lag 0; one nobody can claim (its
/// build is not running) stays behind with no owner.
#[test]
fn inspect_cursors_and_the_dashboard_agree_field_by_field() {
    use leasehold::model::event::NewEvent;
    use leasehold::tui::app::AppOptions;
    use leasehold::tui::harness::Harness;
    use leasehold::tui::theme::Theme;

    let dir = tempfile::tempdir().unwrap();
    let path = store_in(dir.path());
    let store = leasehold::store::url::open(&path, OpenMode::ReadWrite).unwrap();
    let compat = support::key(workload::CURSOR_HANDLER);
    store
        .create_subscription("orders", "order-placed", workload::CURSOR_HANDLER, &compat)
        .unwrap();
    store
        .create_subscription(
            "ledger",
            "audit-entry",
            workload::CURSOR_HANDLER,
            "gone-build",
        )
        .unwrap();
    for i in 0..4 {
        for event_type in ["order-placed", "audit-entry"] {
            let event = NewEvent {
                event_type: event_type.into(),
                source: Some("shop".into()),
                external_id: Some(format!("{event_type}-{i}")),
                payload: serde_json::json!({ "i": i }),
            };
            store.ingest(&event).unwrap();
        }
    }
    let a = AuthorityCore::new(
        store.clone(),
        AuthorityConfig::new("a", "v1"),
        workload::named("fast", 1).unwrap(),
        Pace::Virtual,
    )
    .unwrap();
    a.register().unwrap();
    for _ in 0..3 {
        for job in a.poll().unwrap() {
            a.finish(a.execute(&job));
        }
    }

    let cli = json_lines(&leasehold(&[
        "inspect", "--store", &path, "cursors", "--json",
    ]));
    let options = AppOptions {
        read_only: true,
        demo: false,
        actor: "tester@ci".into(),
        refresh_ms: 250,
        ..AppOptions::default()
    };
    let theme = Theme::builtin("dark").unwrap();
    let mut h = Harness::new(store.clone(), options, theme, None, 160, 48);
    h.dispatch(leasehold::tui::action::Action::SwitchView(
        leasehold::tui::action::ViewId::Cursors,
    ));
    let table = h.app.table_data().expect("the cursors table");
    let names: Vec<&str> = table.columns.iter().map(|c| c.name).collect();
    let at = |name: &str| names.iter().position(|n| *n == name).unwrap();
    assert_eq!(cli.len(), 2);
    assert_eq!(table.rows.len(), 2);
    for (json, row) in cli.iter().zip(&table.rows) {
        let cell = |name: &str| row.cells[at(name)].text.clone();
        assert_eq!(json["subscriptionId"], row.key.as_str());
        assert_eq!(json["position"].to_string(), cell("position"));
        assert_eq!(json["lag"].to_string(), cell("lag"));
        assert_eq!(json["generation"].to_string(), cell("gen"));
        assert_eq!(json["ownerId"].as_str().unwrap_or("-"), cell("owner"));
        let rate = json["claimsPerSec"].as_f64().unwrap();
        assert_eq!(leasehold::ops::cursors::rate_text(rate), cell("claims/s"));
    }
    let by_id = |id: &str| cli.iter().find(|c| c["subscriptionId"] == id).unwrap();
    let orders = by_id("orders");
    assert_eq!(orders["ownerId"], "a");
    assert_eq!(orders["generation"], 1, "held, not re-claimed: {orders}");
    assert_eq!(orders["lag"], 0, "caught up: {orders}");
    assert_eq!(orders["position"], orders["highWater"]);
    let ledger = by_id("ledger");
    assert_eq!(ledger["ownerId"], Value::Null);
    assert_eq!(ledger["position"], 0);
    assert_eq!(ledger["lag"], ledger["highWater"]);
    assert!(ledger["lag"].as_u64().unwrap() > 0);
}

/// `leasehold authority` itself: its log on stderr, in both formats, names the items it
/// claims and completes with their generations, and a clean stop (SIGTERM) ends with a
/// `stopped` line whose counters are the stats it prints on stdout.
#[test]
#[expect(
    clippy::too_many_lines,
    reason = "a scripted scenario: its steps in the order they happen"
)]
fn the_authority_binary_logs_items_and_its_final_counters() {
    use std::process::Stdio;
    use std::time::{Duration, Instant};

    for format in ["human", "json"] {
        let dir = tempfile::tempdir().unwrap();
        let store = store_in(dir.path());
        seed(
            &store,
            &[
                "--effects",
                "12",
                "--workflows",
                "0",
                "--schedules",
                "0",
                "--subscriptions",
                "0",
                "--events",
                "0",
            ],
        );
        let err_path = dir.path().join("authority.err");
        let child = Command::new(env!("CARGO_BIN_EXE_leasehold"))
            // Rewind witnesses of these throwaway stores stay out of the home directory.
            .env(
                "LEASEHOLD_STATE_DIR",
                std::env::temp_dir().join("leasehold-test-witnesses"),
            )
            .args([
                "authority",
                "--store",
                &store,
                "--instance",
                "solo",
                "--workload",
                "default",
                "--poll-ms",
                "50",
                "--log-format",
                format,
            ])
            .env_remove("LEASEHOLD_STORE")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&err_path).unwrap())
            .spawn()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(60);
        let log = || std::fs::read_to_string(&err_path).unwrap_or_default();
        while !log().contains("completed") {
            assert!(Instant::now() < deadline, "no completion logged: {}", log());
            std::thread::sleep(Duration::from_millis(20));
        }
        let term = Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .status()
            .unwrap();
        assert!(term.success());
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "{format}: {}", log());
        let stats: Value =
            serde_json::from_str(String::from_utf8(out.stdout).unwrap().trim()).unwrap();
        let text = log();
        let line = |message: &str| -> String {
            text.lines()
                .find(|l| match format {
                    "json" => l.contains(&format!("\"message\":\"{message}\"")),
                    _ => l.contains(&format!(" {message} ")),
                })
                .unwrap_or_else(|| panic!("{format}: no {message} line in {text}"))
                .to_owned()
        };
        // One shape for both formats: `key=value` pairs, or a JSON object.
        let field = |line: &str, key: &str| -> String {
            if format == "json" {
                let v: Value = serde_json::from_str(line).unwrap();
                match &v[key] {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                }
            } else {
                line.split(' ')
                    .find_map(|kv| kv.strip_prefix(&format!("{key}=")))
                    .unwrap_or_else(|| panic!("no {key} in {line}"))
                    .to_owned()
            }
        };
        let started = line("started");
        assert_eq!(field(&started, "instance"), "solo");
        assert_eq!(field(&started, "build"), "v1");
        // It says the demo handlers run, and which, each at its version.
        assert_eq!(field(&started, "workload"), "default");
        let handlers = field(&started, "handlers");
        for handler in [
            "charge-card@1.0.0",
            "send-email@1.0.0",
            "schedule-tick@1.0.0",
        ] {
            assert!(handlers.split(',').any(|h| h == handler), "{handlers}");
        }
        let completed = line("completed");
        let id = field(&completed, "item");
        let read = leasehold::store::url::open(&store, OpenMode::ReadOnly).unwrap();
        let item = read.work(&id).unwrap().expect("the logged item exists");
        assert_eq!(field(&completed, "generation"), item.generation.to_string());
        assert_eq!(field(&completed, "handler"), item.handler);
        assert!(item.state.is_terminal(), "{item:?}");
        let stopped = line("stopped");
        for key in ["claims", "completions", "fencedWritesRefused", "leasesLost"] {
            assert_eq!(
                field(&stopped, key),
                stats[key].to_string(),
                "{key}: {stopped}"
            );
        }
    }
}
