//! The `leasehold` binary against real SQLite files in a temp dir: the command-line
//! contract (names, `--json` lines, exit codes 0/1/2, one-line errors, `LEASEHOLD_STORE`),
//! one module per command or concern; the helpers and busy stores they share are here.
#![allow(clippy::unwrap_used)]

#[path = "cli/refusals.rs"]
mod refusals;
#[path = "support/mod.rs"]
mod support;
use support::failure::assert_one_line_failure;

#[path = "cli/attention.rs"]
mod attention;
#[path = "cli/authority_log.rs"]
mod authority_log;
#[path = "cli/bench.rs"]
mod bench;
#[path = "cli/bulk.rs"]
mod bulk;
#[path = "cli/cancel.rs"]
mod cancel;
#[path = "cli/compat.rs"]
mod compat;
#[path = "cli/config.rs"]
mod config;
#[path = "cli/copy.rs"]
mod copy;
#[path = "cli/creation.rs"]
mod creation;
#[path = "cli/damaged.rs"]
mod damaged;
#[path = "cli/enqueue.rs"]
mod enqueue;
#[path = "cli/enqueue_from.rs"]
mod enqueue_from;
#[path = "cli/exact_numbers.rs"]
mod exact_numbers;
#[path = "cli/handler.rs"]
mod handler;
#[path = "cli/handler_set.rs"]
mod handler_set;
#[path = "cli/incidents.rs"]
mod incidents;
#[path = "cli/install.rs"]
mod install;
#[path = "cli/open_figures.rs"]
mod open_figures;
#[path = "cli/release.rs"]
mod release;
#[path = "cli/replay.rs"]
mod replay;
#[path = "cli/rewind.rs"]
mod rewind;
#[path = "cli/schedule.rs"]
mod schedule;
#[path = "cli/triage.rs"]
mod triage;
#[path = "cli/verify.rs"]
mod verify;
#[path = "cli/views.rs"]
mod views;
#[path = "cli/work_show.rs"]
mod work_show;
#[path = "cli/workflow_sets.rs"]
mod workflow_sets;

use std::path::Path;
use std::process::Output;
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
    // Rewind witnesses of these throwaway stores stay out of the home directory.
    support::failure::run_in(&std::env::temp_dir().join("leasehold-test-witnesses"), args)
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

/// What `leasehold check --json` says, with its exit code.
fn check_says(store: &str) -> (i32, String) {
    let o = leasehold(&["check", "--store", store, "--json"]);
    (code(&o), stdout(&o))
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
