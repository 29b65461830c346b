//! What only the Postgres provider has to prove (the shared suites run in `store.rs` and
//! `workflows.rs`): opening and recognising databases, secrets kept out of every text, a
//! commit whose answer is lost (`postgres/lost_answer.rs`, through a relay that cuts it), a
//! session killed inside a transaction, and real `leasehold authority` processes riding out
//! SIGKILL, SIGSTOP, killed sessions and a server restart with a clean `leasehold check`.
//!
//! Every test gets a database of its own on the throwaway server of this test binary
//! (`support/postgres.rs`; `LEASEHOLD_TEST_PG_URL` points at an existing server instead);
//! the restart test starts a server of its own.

#![cfg(feature = "postgres")]
#![allow(clippy::unwrap_used)]

#[path = "support/mod.rs"]
mod support;

use support::leasehold;

use std::collections::BTreeMap;
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use leasehold::Store;
use leasehold::clock::ManualClock;
use leasehold::model::work::{NewWork, WorkFilter};
use leasehold::model::{PageRequest, WorkState};
use leasehold::store::Backend;
use leasehold::store::postgres::PostgresBackend;
use leasehold::store::url::{self, OpenMode};
use leasehold::store::witness::Witness;

use support::authorities::{Authorities, HANDLER, claimed_by, compat, enqueue, signal, unfinished};
use support::open_postgres;
use support::postgres::{Database, Server, database};
use support::wait::wait_until;

#[path = "postgres/intake.rs"]
mod intake;
#[path = "postgres/lost_answer.rs"]
mod lost_answer;
#[path = "postgres/verify.rs"]
mod verify;

const SECRET: &str = "s3cr3t-Pa55word";

fn open_err(url: &str, mode: OpenMode) -> leasehold::Error {
    match url::open(url, mode) {
        Ok(store) => panic!("{url}: expected a refusal, opened {}", store.describe()),
        Err(e) => e,
    }
}

/// `url` with `user:SECRET@` as its user info.
fn with_password(url: &str) -> String {
    let (scheme, rest) = url.split_once("://").unwrap();
    let rest = rest.rsplit_once('@').map_or(rest, |(_, host)| host);
    format!("{scheme}://postgres:{SECRET}@{rest}")
}

// --- opening ---------------------------------------------------------------------------------

#[test]
fn the_password_never_appears_in_errors_labels_or_output() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let refused = format!("postgres://leasehold:{SECRET}@127.0.0.1:{port}/store");
    let e = open_err(&refused, OpenMode::ReadWrite);
    assert_eq!(e.code(), "STORE_UNAVAILABLE", "{e}");
    let text = e.to_string();
    assert!(!text.contains(SECRET), "{text}");
    assert!(!text.contains('\n'), "{text}");
    assert!(
        text.contains(&format!("postgres://leasehold@127.0.0.1:{port}/store")),
        "{text}"
    );

    let bad_port = format!("postgresql://leasehold:{SECRET}@127.0.0.1:notaport/store");
    let e = open_err(&bad_port, OpenMode::ReadWrite);
    assert!(!e.to_string().contains(SECRET), "{e}");

    // A reachable server: the label, a failing open and the CLI's header, error and JSON.
    let db = database();
    let url = with_password(db.url());
    let store = url::open(&url, OpenMode::ReadWrite).expect("trust authentication ignores it");
    assert!(!store.describe().contains(SECRET), "{}", store.describe());
    assert!(store.describe().starts_with("postgres://postgres@"));
    let missing = {
        let (base, _) = url.rsplit_once('/').unwrap();
        format!("{base}/no_such_database")
    };
    let e = open_err(&missing, OpenMode::ReadWrite);
    assert_eq!(e.code(), "STORE_REFUSED", "{e}");
    assert!(!e.to_string().contains(SECRET), "{e}");

    for args in [
        vec!["inspect", "--store", &url, "work", "--json"],
        vec!["inspect", "--store", &url, "authorities"],
        vec!["check", "--store", &url, "--json"],
        vec!["inspect", "--store", &missing, "work"],
        vec!["inspect", "--store", &refused, "work", "--json"],
    ] {
        let o = leasehold(&args);
        let all = format!(
            "{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
        assert!(!all.contains(SECRET), "{args:?}: {all}");
    }

    // An authority's start and stop lines name its store, without the password.
    let mut auth = Authorities::new();
    auth.spawn("auth-pw", &url);
    let log = auth.log("auth-pw");
    let read = || std::fs::read_to_string(&log).unwrap_or_default();
    wait_until(
        "the started line",
        Instant::now() + Duration::from_secs(60),
        || read().contains("\"started\""),
    );
    auth.stop_all(Instant::now() + Duration::from_secs(60));
    let text = read();
    assert!(!text.contains(SECRET), "{text}");
    for message in ["started", "stopped"] {
        let line = text
            .lines()
            .find(|l| l.contains(&format!("\"message\":\"{message}\"")))
            .unwrap_or_else(|| panic!("no {message} line: {text}"));
        assert!(line.contains(&store.describe()), "{line}");
    }

    // A URL in the environment is not echoed by `--help` either.
    for args in [
        vec!["inspect", "--help"],
        vec!["attach", "--help"],
        vec!["bench", "work", "--help"],
    ] {
        let o = Command::new(env!("CARGO_BIN_EXE_leasehold"))
            // Rewind witnesses of these throwaway stores stay out of the home directory.
            .env(
                "LEASEHOLD_STATE_DIR",
                std::env::temp_dir().join("leasehold-test-witnesses"),
            )
            .args(&args)
            .env("LEASEHOLD_STORE", &url)
            .output()
            .expect("run leasehold");
        let help = String::from_utf8_lossy(&o.stdout);
        assert!(help.contains("LEASEHOLD_STORE"), "{args:?}: {help}");
        assert!(!help.contains(SECRET), "{args:?}: {help}");
    }
}

#[test]
fn many_first_opens_at_once_are_safe() {
    let db = database();
    let n = 8;
    let barrier = Arc::new(Barrier::new(n));
    let handles: Vec<_> = (0..n)
        .map(|_| {
            let (url, barrier) = (db.url().to_owned(), barrier.clone());
            std::thread::spawn(move || {
                barrier.wait();
                PostgresBackend::open(&url, OpenMode::ReadWrite).map(|b| b.describe())
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap().expect("a concurrent first open");
    }
    let store = url::open(db.url(), OpenMode::ReadOnly).unwrap();
    assert_eq!(store.revision().unwrap(), 0);
}

#[test]
fn unknown_databases_are_refused_untouched() {
    // Empty, read-only: nothing is created.
    let db = database();
    let e = open_err(db.url(), OpenMode::ReadOnly);
    assert_eq!(e.code(), "STORE_REFUSED", "{e}");
    let mut admin = postgres::Client::connect(db.url(), postgres::NoTls).unwrap();
    let tables: i64 = admin
        .query_one(
            "SELECT count(*) FROM information_schema.tables WHERE table_schema = 'public'",
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(tables, 0, "a read-only open created tables");

    // Another application's `meta` table.
    admin
        .batch_execute("CREATE TABLE meta (id int PRIMARY KEY, note text)")
        .unwrap();
    for mode in [OpenMode::ReadWrite, OpenMode::ReadOnly] {
        assert_eq!(open_err(db.url(), mode).code(), "STORE_REFUSED");
    }

    // A store of this schema missing a table: damaged, and not recreated.
    let db = database();
    url::open(db.url(), OpenMode::ReadWrite).unwrap();
    let mut admin = postgres::Client::connect(db.url(), postgres::NoTls).unwrap();
    admin.batch_execute("DROP TABLE grants").unwrap();
    for mode in [OpenMode::ReadWrite, OpenMode::Existing, OpenMode::ReadOnly] {
        let e = open_err(db.url(), mode);
        assert_eq!(e.code(), "STORE_CORRUPT", "{e}");
        assert!(e.to_string().contains("grants table is missing"), "{e}");
    }
    let recreated: bool = admin
        .query_one("SELECT to_regclass('grants') IS NOT NULL", &[])
        .unwrap()
        .get(0);
    assert!(!recreated, "nothing was recreated");

    // A schema version no build wrote.
    let db = database();
    url::open(db.url(), OpenMode::ReadWrite).unwrap();
    let mut admin = postgres::Client::connect(db.url(), postgres::NoTls).unwrap();
    admin
        .batch_execute("UPDATE meta SET value = 0 WHERE key = 'schema_version'")
        .unwrap();
    let e = open_err(db.url(), OpenMode::Existing);
    assert_eq!(e.code(), "STORE_CORRUPT", "{e}");
    assert!(e.to_string().contains("schema version 0"), "{e}");

    // A newer schema.
    let db = database();
    url::open(db.url(), OpenMode::ReadWrite).unwrap();
    let mut admin = postgres::Client::connect(db.url(), postgres::NoTls).unwrap();
    admin
        .batch_execute("UPDATE meta SET value = 99 WHERE key = 'schema_version'")
        .unwrap();
    for mode in [OpenMode::ReadWrite, OpenMode::ReadOnly] {
        let e = open_err(db.url(), mode);
        assert_eq!(e.code(), "STORE_REFUSED");
        assert!(e.to_string().contains("newer"), "{e}");
    }
}

/// A role the database does not let read the store is told so — a permission problem, not
/// a damaged store.
#[test]
fn a_role_without_privileges_is_told_so_not_that_the_store_is_damaged() {
    let db = database();
    url::open(db.url(), OpenMode::ReadWrite).unwrap();
    let name = db
        .url()
        .rsplit('/')
        .next()
        .unwrap()
        .split('?')
        .next()
        .unwrap();
    let role = format!("nobody_{name}");
    let mut admin = postgres::Client::connect(db.url(), postgres::NoTls).unwrap();
    admin
        .batch_execute(&format!("CREATE ROLE \"{role}\" LOGIN"))
        .unwrap();
    let (scheme, rest) = db.url().split_once("://").unwrap();
    let host = rest.rsplit_once('@').map_or(rest, |(_, host)| host);
    let as_nobody = format!("{scheme}://{role}@{host}");
    for mode in [OpenMode::ReadOnly, OpenMode::Existing] {
        let e = open_err(&as_nobody, mode);
        assert_eq!(e.code(), "STORE_REFUSED", "{e}");
        assert!(e.to_string().contains("permission denied"), "{e}");
    }
    admin
        .batch_execute(&format!("DROP ROLE \"{role}\""))
        .unwrap();
}

#[test]
fn read_only_opens_refuse_writes_and_see_commits() {
    let db = database();
    let writer = url::open(db.url(), OpenMode::ReadWrite).unwrap();
    let reader = url::open(db.url(), OpenMode::ReadOnly).unwrap();
    let token = reader.change_token().unwrap();
    writer
        .enqueue(NewWork::effect("fx-1", "send-email", "{}"), "k")
        .unwrap();
    assert_ne!(reader.change_token().unwrap(), token, "the token moves");
    assert!(reader.work("fx-1").unwrap().is_some());
    let e = reader
        .enqueue(NewWork::effect("fx-2", "send-email", "{}"), "k")
        .unwrap_err();
    assert_eq!(e.code(), "STORE_READ_ONLY");
}

/// Turns the database back by `downgrade` (SQL), checks that a read-only open refuses it
/// as older than this build, and answers a read-write open, which must have upgraded it
/// to this build's schema in place.
fn upgraded(db: &Database, clock: &ManualClock, downgrade: &str) -> Store {
    let mut admin = postgres::Client::connect(db.url(), postgres::NoTls).unwrap();
    admin.batch_execute(downgrade).unwrap();
    let e = open_err(db.url(), OpenMode::ReadOnly);
    assert!(e.to_string().contains("predates this build"), "{e}");
    let store = open_postgres(db.url(), clock, OpenMode::ReadWrite).unwrap();
    let version: i64 = admin
        .query_one("SELECT value FROM meta WHERE key = 'schema_version'", &[])
        .unwrap()
        .get(0);
    assert_eq!(version, leasehold::store::postgres::SCHEMA_VERSION);
    store
}

/// A database created by schema 1 (before failovers and holders were recorded) is refused
/// read-only and upgraded in place by a read-write open: old rows read as unknown, new
/// failovers are listed.
#[test]
fn a_schema_1_database_is_upgraded_in_place() {
    let db = database();
    let clock = ManualClock::new(support::START);
    let no_key = leasehold::store::Keyed { key: None };
    let store = open_postgres(db.url(), &clock, OpenMode::ReadWrite).unwrap();
    store.acquire("r", "a", 1_000.0, no_key).unwrap();
    drop(store);
    let store = upgraded(
        &db,
        &clock,
        "DROP INDEX grants_failovers; DROP INDEX writes_refused;
             ALTER TABLE grants DROP COLUMN from_owner, DROP COLUMN from_generation,
                 DROP COLUMN lapsed_ms;
             ALTER TABLE writes DROP COLUMN holder_id, DROP COLUMN holder_generation;
             ALTER TABLE work DROP COLUMN checkpoint;
             UPDATE meta SET value = 1 WHERE key = 'schema_version';",
    );
    let (grants, _) = store.ownership_history(None, 0, 10).unwrap();
    assert_eq!(grants.len(), 1);
    assert_eq!(grants[0].took_over, None, "an old row reads as unknown");
    clock.advance(1_500);
    store.acquire("r", "b", 1_000.0, no_key).unwrap();
    let listed = store.failovers(0, None, 10).unwrap();
    assert_eq!(listed.total, 1);
    let took = listed.rows[0].1.took_over.clone().unwrap();
    assert_eq!((took.from_owner.as_str(), took.lapsed_ms), ("a", 500));
}

/// A database created by schema 2 (before work checkpoints) is refused read-only and
/// upgraded in place by a read-write open: an old item reads without a checkpoint, and a
/// checkpoint saved under its claim reads back.
#[test]
fn a_schema_2_database_is_upgraded_in_place() {
    let db = database();
    let clock = ManualClock::new(support::START);
    let store = open_postgres(db.url(), &clock, OpenMode::ReadWrite).unwrap();
    store
        .enqueue(NewWork::effect("fx", HANDLER, "{}"), "k")
        .unwrap();
    let claimed = store.claim("fx", "a", "k", 1_000).unwrap();
    drop(store);
    let store = upgraded(
        &db,
        &clock,
        "ALTER TABLE work DROP COLUMN checkpoint;
             UPDATE meta SET value = 2 WHERE key = 'schema_version';",
    );
    assert_eq!(store.work("fx").unwrap(), Some(claimed.clone()));
    store
        .save_work_checkpoint("fx", "a", claimed.generation, "{\"page\":2}")
        .unwrap();
    let reread = url::open(db.url(), OpenMode::ReadOnly).unwrap();
    assert_eq!(
        reread.work("fx").unwrap().unwrap().checkpoint.as_deref(),
        Some("{\"page\":2}")
    );
}

/// A database created by schema 4 (before authorities published what they hold in
/// recovery) is refused read-only and upgraded in place by a read-write open: an old
/// registration reads with nothing published, and a published account reads back.
#[test]
fn a_schema_4_database_is_upgraded_in_place() {
    use leasehold::model::{Authority, Published, Recovering};
    let db = database();
    let clock = ManualClock::new(support::START);
    let store = open_postgres(db.url(), &clock, OpenMode::ReadWrite).unwrap();
    let a = Authority {
        instance_id: "auth-1".into(),
        compat: "k".into(),
        build: "old".into(),
        config: "{}".into(),
        started_at: support::START,
        heartbeat_at: support::START,
        stopped_at: None,
        host: "h".into(),
        pid: 7,
        published: Published::default(),
    };
    store.register_authority(&a).unwrap();
    drop(store);
    let store = upgraded(
        &db,
        &clock,
        "ALTER TABLE authorities DROP COLUMN published;
             UPDATE meta SET value = 4 WHERE key = 'schema_version';",
    );
    let row = |s: &Store| {
        s.list_authorities(&PageRequest::first(10))
            .unwrap()
            .rows
            .remove(0)
    };
    assert_eq!(row(&store), a, "the old row reads with nothing published");
    let account = Published::of(vec![Recovering {
        resource_id: "e1".into(),
        kind: "effect".into(),
        generation: 2,
        why: "the read-back failed".into(),
        since: support::START,
    }]);
    store.publish(&a.incarnation(), false, &account).unwrap();
    assert_eq!(row(&store).published, account);
}

/// A database created by schema 6 (before the intake, and before schedules could be paused)
/// is refused read-only and upgraded in place by a read-write open: an old schedule reads as
/// running and a pause reads back; an application then enqueues through the intake, and the
/// next claim moves its request.
#[test]
fn a_schema_6_database_is_upgraded_in_place() {
    use leasehold::model::schedule::{CatchUp, Trigger};
    use leasehold::rules::schedule::Control;
    let db = database();
    let clock = ManualClock::new(support::START);
    let store = open_postgres(db.url(), &clock, OpenMode::ReadWrite).unwrap();
    let every = Trigger::Interval { every_ms: 1_000 };
    assert!(
        store
            .create_schedule("tick", every, CatchUp::Latest, "h", "{}", "k")
            .unwrap()
    );
    let before = store.schedule("tick").unwrap().expect("created");
    drop(store);
    let store = upgraded(
        &db,
        &clock,
        "DROP FUNCTION leasehold_enqueue; DROP TABLE intake, intake_refused;
             ALTER TABLE schedules DROP COLUMN paused_at;
             UPDATE meta SET value = 6 WHERE key = 'schema_version';",
    );
    let old = store
        .schedule("tick")
        .unwrap()
        .expect("the old schedule stays");
    assert_eq!(old, before, "it reads as running");
    store
        .control_schedule("tick", Control::Pause, "alice", "")
        .unwrap();
    assert_eq!(
        store.schedule("tick").unwrap().expect("paused").paused_at,
        Some(support::START)
    );
    let mut app = postgres::Client::connect(db.url(), postgres::NoTls).unwrap();
    app.batch_execute("SELECT leasehold_enqueue('fx', 'send-email', handler_version => '1.0.0')")
        .unwrap();
    let claimed = store.claim_batch("a", compat(), 10, 1_000).unwrap();
    assert_eq!(claimed.len(), 1);
    assert_eq!(claimed[0].id, "fx");
}

/// The database lost commits this process saw acknowledged (as after a failover to a
/// replica that was behind): the next write fails closed instead of minting a generation
/// again.
#[test]
fn a_store_that_went_back_in_time_refuses_writes() {
    let db = database();
    let store = url::open(db.url(), OpenMode::ReadWrite).unwrap();
    for i in 0..3 {
        store
            .enqueue(NewWork::effect(format!("fx-{i}"), HANDLER, "{}"), "k")
            .unwrap();
    }
    assert_eq!(store.revision().unwrap(), 3);
    let mut admin = postgres::Client::connect(db.url(), postgres::NoTls).unwrap();
    admin
        .batch_execute("UPDATE meta SET value = 1 WHERE key = 'revision'")
        .unwrap();
    let e = store
        .enqueue(NewWork::effect("fx-9", HANDLER, "{}"), "k")
        .unwrap_err();
    assert_eq!(e.code(), "STORE_CORRUPT", "{e}");
    assert!(store.work("fx-9").unwrap().is_none(), "nothing was written");
    // Without a rewind witness (next test) a process that opens the store afresh has no
    // memory of it: this guard is per process.
    let fresh = url::open(db.url(), OpenMode::ReadWrite).unwrap();
    fresh
        .enqueue(NewWork::effect("fx-9", HANDLER, "{}"), "k")
        .unwrap();
}

/// With this host's rewind witness the protection outlives the process: a writer started
/// after the database lost commits refuses it (`STORE_REWOUND`) until an operator accepts
/// the rewind; generations minted afterwards are above every earlier one.
#[test]
fn a_restarted_writer_refuses_a_rewound_database_until_accepted() {
    let db = database();
    let state = tempfile::tempdir().unwrap();
    let witnessed = || {
        let store = url::open(db.url(), OpenMode::ReadWrite).unwrap();
        Witness::open(state.path(), &store).map(|w| store.with_witness(w))
    };
    let store = witnessed().unwrap();
    let seen = store.witness().unwrap().seen().unwrap();
    assert!(
        seen.server.is_some(),
        "the test server lets us read its identity"
    );
    for i in 0..3 {
        store
            .enqueue(NewWork::effect(format!("fx-{i}"), HANDLER, "{}"), "k")
            .unwrap();
    }
    let claimed = store.claim("fx-0", "a", "k", 60_000).unwrap().generation;
    drop(store);
    let mut admin = postgres::Client::connect(db.url(), postgres::NoTls).unwrap();
    admin
        .batch_execute(
            "UPDATE meta SET value = 1 WHERE key = 'revision';
             UPDATE work SET generation = 0, state = 'pending', owner_id = NULL WHERE id = 'fx-0';",
        )
        .unwrap();

    let e = witnessed().err().unwrap();
    assert_eq!(e.code(), "STORE_REWOUND", "{e}");

    let store = url::open(db.url(), OpenMode::Existing).unwrap();
    let witness = Witness::load(state.path(), &store).unwrap();
    let accepted = store
        .with_witness(witness)
        .accept_rewind("op@host", Some("failover"))
        .unwrap();
    assert_eq!(accepted.epoch, 1);
    let store = witnessed().unwrap();
    let again = store.claim("fx-0", "b", "k", 60_000).unwrap().generation;
    assert!(
        again > claimed && again > accepted.generation_floor,
        "{again}"
    );
    store
        .enqueue(NewWork::effect("fx-new", HANDLER, "{}"), "k")
        .unwrap();
    let fresh = store.claim("fx-new", "b", "k", 60_000).unwrap().generation;
    assert!(fresh > accepted.generation_floor, "{fresh}");
}

/// Connections open on demand, at most as many as the callers the runtime announced.
#[test]
fn the_pool_opens_one_connection_per_concurrent_caller_at_most() {
    let db = database();
    let backend = Arc::new(PostgresBackend::open(db.url(), OpenMode::ReadWrite).unwrap());
    backend.fit_concurrency(2);
    let barrier = Arc::new(Barrier::new(6));
    let readers: Vec<_> = (0..6)
        .map(|_| {
            let (backend, barrier) = (backend.clone(), barrier.clone());
            std::thread::spawn(move || {
                barrier.wait();
                for _ in 0..20 {
                    backend
                        .read(&mut |tx| {
                            tx.revision()?;
                            std::thread::sleep(Duration::from_millis(2));
                            Ok(())
                        })
                        .unwrap();
                }
            })
        })
        .collect();
    for r in readers {
        r.join().unwrap();
    }
    let mut admin = postgres::Client::connect(db.url(), postgres::NoTls).unwrap();
    let sessions: i64 = admin
        .query_one(
            "SELECT count(*) FROM pg_stat_activity
             WHERE datname = current_database() AND application_name = 'leasehold'",
            &[],
        )
        .unwrap()
        .get(0);
    assert!((1..=2).contains(&sessions), "{sessions} sessions open");
}

/// Every statement the provider sends is served by an index: with sequential scans disabled
/// for the database, a realistic store is seeded, worked, checked and read through every
/// dashboard view and work filter, and no table was ever scanned sequentially.
#[test]
#[expect(
    clippy::too_many_lines,
    reason = "a scripted scenario: its steps in the order they happen"
)]
fn every_query_is_served_by_an_index() {
    let db = database();
    let mut admin = postgres::Client::connect(db.url(), postgres::NoTls).unwrap();
    admin
        .batch_execute("SELECT 1")
        .and_then(|()| {
            let name: String = admin.query_one("SELECT current_database()", &[])?.get(0);
            admin.batch_execute(&format!(
                "ALTER DATABASE \"{name}\" SET enable_seqscan = off"
            ))
        })
        .unwrap();
    // Building the indexes scans the (empty) tables: count from after the schema exists.
    drop(url::open(db.url(), OpenMode::ReadWrite).unwrap());
    let before = seq_scans(&mut admin);

    let url = db.url();
    let run = |args: &[&str]| {
        let o = leasehold(args);
        assert!(
            o.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    };
    run(&["seed", "--store", url, "--seed", "7"]);
    let mut auth = Authorities::new();
    auth.spawn("auth-0", url);
    let store = url::open(url, OpenMode::ReadWrite).unwrap();
    wait_until(
        "some completions",
        Instant::now() + Duration::from_secs(60),
        || {
            store
                .overview()
                .unwrap()
                .work
                .iter()
                .any(|c| c.state.is_terminal())
        },
    );
    auth.stop_all(Instant::now() + Duration::from_secs(60));
    for view in [
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
    ] {
        run(&["inspect", "--store", url, view, "--json", "--limit", "5"]);
    }
    run(&["check", "--store", url]);
    let filters = [
        WorkFilter {
            states: vec![WorkState::Pending, WorkState::Succeeded],
            ..WorkFilter::default()
        },
        WorkFilter {
            owner: Some("auth-0".into()),
            ..WorkFilter::default()
        },
        WorkFilter {
            owner: Some("auth-0".into()),
            states: vec![WorkState::Claimed],
            ..WorkFilter::default()
        },
        WorkFilter {
            compats: vec![compat()],
            ..WorkFilter::default()
        },
        WorkFilter {
            kind: Some(leasehold::model::WorkKind::Effect),
            ..WorkFilter::default()
        },
    ];
    for filter in &filters {
        for page in [PageRequest::first(5), PageRequest::resume(Some("m"), 5)] {
            store.list_work(filter, &page).unwrap();
        }
    }
    // Instances by status and id prefix agree with the unfiltered list.
    let all = store
        .list_instances(None, &PageRequest::first(10_000))
        .unwrap()
        .rows;
    for (status, prefix) in [(None, "wf-"), (Some("running"), "wf-0"), (None, "zz")] {
        let got: Vec<String> = store
            .list_instances_by(
                status.map(|s| leasehold::model::InstanceStatus::parse(s).expect("a status")),
                Some(prefix),
                &PageRequest::first(10_000),
            )
            .unwrap()
            .rows
            .into_iter()
            .map(|i| i.instance_id)
            .collect();
        let want: Vec<String> = all
            .iter()
            .filter(|i| i.instance_id.starts_with(prefix) && status.is_none_or(|s| i.status == s))
            .map(|i| i.instance_id.clone())
            .collect();
        assert_eq!(got, want, "{status:?} {prefix}");
    }
    let (grants, _) = store.ownership_history(None, 0, 10).unwrap();
    if let Some(g) = grants.first() {
        store
            .ownership_history(Some(&g.resource_id), 0, 10)
            .unwrap();
    }
    drop(store);

    let after = seq_scans(&mut admin);
    let scanned: Vec<_> = after
        .iter()
        .filter(|(table, (seq, _))| before.get(*table).is_none_or(|(b, _)| b != seq))
        .collect();
    assert!(after["work"].1 > 0, "the statistics were not collected");
    assert!(scanned.is_empty(), "sequential scans: {scanned:?}");
    // What an authority holds now is read from the small partial index.
    let claimed_by: i64 = admin
        .query_one(
            "SELECT idx_scan FROM pg_stat_user_indexes WHERE indexrelname = 'work_claimed_by'",
            &[],
        )
        .unwrap()
        .get(0);
    assert!(claimed_by > 0, "work_claimed_by was not used");
}

/// `(sequential scans, index scans)` per table, once every other session of the database
/// has ended (sessions report their statistics as they end).
fn seq_scans(admin: &mut postgres::Client) -> BTreeMap<String, (i64, i64)> {
    let deadline = Instant::now() + Duration::from_secs(30);
    wait_until("the store's sessions to end", deadline, || {
        admin
            .query_one(
                "SELECT count(*) FROM pg_stat_activity
                 WHERE datname = current_database() AND pid <> pg_backend_pid()",
                &[],
            )
            .unwrap()
            .get::<_, i64>(0)
            == 0
    });
    admin
        .batch_execute("SELECT pg_stat_clear_snapshot()")
        .unwrap();
    admin
        .query(
            "SELECT relname::text, seq_scan, coalesce(idx_scan, 0) FROM pg_stat_user_tables",
            &[],
        )
        .unwrap()
        .iter()
        .map(|r| (r.get(0), (r.get(1), r.get(2))))
        .collect()
}

// --- sessions lost ---------------------------------------------------------------------------

/// The session is ended by the server (`pg_terminate_backend`) in the middle of a write
/// transaction: the write runs again from scratch on a new connection and commits once.
#[test]
fn a_session_killed_inside_a_transaction_is_retried_on_a_new_connection() {
    let db = database();
    let backend = PostgresBackend::open(db.url(), OpenMode::ReadWrite).unwrap();
    let attempts = AtomicU32::new(0);
    backend
        .write(&mut |tx| {
            let n = attempts.fetch_add(1, Ordering::SeqCst);
            tx.commit_revision()?;
            tx.adjust_counter("test|killed", 1)?;
            if n == 0 {
                assert_eq!(db.terminate_sessions(), 1, "our one session");
            }
            tx.adjust_counter("test|killed", 1)?;
            Ok(())
        })
        .expect("the write succeeds on a new connection");
    assert_eq!(attempts.load(Ordering::SeqCst), 2);
    let mut counters = Vec::new();
    backend
        .read(&mut |tx| {
            counters = tx.counters("test|")?;
            assert_eq!(tx.revision()?, 1, "one commit");
            Ok(())
        })
        .unwrap();
    assert_eq!(counters, vec![("test|killed".to_owned(), 2)]);

    // Idle pooled sessions killed between calls are replaced too.
    assert!(db.terminate_sessions() >= 1);
    backend
        .read(&mut |tx| tx.revision().map(drop))
        .expect("a read on a new connection");
}

// --- real authority processes --------------------------------------------------------------

/// `leasehold check` over the store: exit 0 and no violation line.
fn assert_check_clean(url: &str) {
    let o = leasehold(&["check", "--store", url, "--json"]);
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "leasehold check failed ({}): {stdout}{}",
        o.status,
        String::from_utf8_lossy(&o.stderr)
    );
    let summary = stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find_map(|v| v.get("summary").cloned())
        .expect("a summary line");
    assert_eq!(summary["violations"], 0, "{stdout}");
}

/// Every item terminal, and each completed by exactly one accepted terminal write.
fn assert_all_done_once(store: &Store, items: usize) {
    assert_eq!(unfinished(store), 0);
    let (_, writes) = store.ownership_history(None, 0, 10_000_000).unwrap();
    let mut terminal: BTreeMap<&str, usize> = BTreeMap::new();
    for w in writes.iter().filter(|w| w.accepted) {
        let state = serde_json::from_str::<serde_json::Value>(&w.detail).unwrap()["state"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        if state == "succeeded" || state == "failed" {
            *terminal.entry(w.resource_id.as_str()).or_default() += 1;
        }
    }
    assert_eq!(terminal.len(), items, "every item has a terminal write");
    for (id, n) in terminal {
        assert_eq!(n, 1, "{id} was finished {n} times");
    }
}

/// Four authorities against one database: one SIGKILLed mid-run, one SIGSTOPped until every
/// claim it held was taken over after its lease lapsed, then resumed. All work finishes, each
/// item once, and `leasehold check` is clean.
#[test]
fn four_authorities_ride_out_sigkill_and_sigstop() {
    const ITEMS: usize = 1_500;
    let started = Instant::now();
    let deadline = started + Duration::from_secs(240);
    let db = database();
    let store = url::open(db.url(), OpenMode::ReadWrite).unwrap();
    enqueue(&store, ITEMS);
    let mut auth = Authorities::new();
    for i in 0..4 {
        auth.spawn(&format!("auth-{i}"), db.url());
    }

    wait_until("the first 300 completions", deadline, || {
        unfinished(&store) <= (ITEMS - 300) as u64
    });
    auth.kill("auth-0");

    let held = loop {
        wait_until("auth-1 to hold claims", deadline, || {
            !claimed_by(&store, "auth-1").is_empty()
        });
        signal("-STOP", auth.pid("auth-1"));
        let held = claimed_by(&store, "auth-1");
        if !held.is_empty() {
            break held;
        }
        signal("-CONT", auth.pid("auth-1"));
    };
    // A session paused inside a transaction is ended by the server after a few seconds, so
    // the others always get past it.
    wait_until("auth-1's claims to be taken over", deadline, || {
        held.iter().all(|(id, g)| {
            store
                .work(id)
                .unwrap()
                .is_some_and(|w| w.generation > *g || w.state.is_terminal())
        })
    });
    signal("-CONT", auth.pid("auth-1"));

    wait_until("every item to finish", deadline, || unfinished(&store) == 0);
    auth.stop_all(deadline);
    assert_all_done_once(&store, ITEMS);
    assert_check_clean(db.url());
    let (events, _) = auth.events();
    eprintln!(
        "four authorities: {ITEMS} items in {:?}; auth-1 stopped holding {}; events {events:?}",
        started.elapsed(),
        held.len()
    );
}

/// Two authorities while an operator keeps ending their sessions (`pg_terminate_backend`,
/// often inside a transaction): they reconnect and finish everything, each item once.
#[test]
fn authorities_reconnect_after_their_sessions_are_killed() {
    const ITEMS: usize = 600;
    let deadline = Instant::now() + Duration::from_secs(180);
    let db = database();
    let store = url::open(db.url(), OpenMode::ReadWrite).unwrap();
    enqueue(&store, ITEMS);
    let mut auth = Authorities::new();
    for i in 0..2 {
        auth.spawn(&format!("auth-{i}"), db.url());
    }
    wait_until("the first completions", deadline, || {
        unfinished(&store) < ITEMS as u64
    });
    let mut killed = 0;
    while unfinished(&store) > (ITEMS / 4) as u64 {
        assert!(
            Instant::now() < deadline,
            "timed out while killing sessions"
        );
        killed += db.terminate_sessions();
        std::thread::sleep(Duration::from_millis(150));
    }
    assert!(killed >= 10, "only {killed} sessions were killed");
    wait_until("every item to finish", deadline, || unfinished(&store) == 0);
    auth.stop_all(deadline);
    assert_all_done_once(&store, ITEMS);
    assert_check_clean(db.url());
    let (events, errors) = auth.events();
    eprintln!("killed sessions: {killed} sessions ended; events {events:?}; errors {errors:?}");
}

/// The server restarts under two running authorities: they reconnect and finish everything,
/// each item once.
#[test]
fn authorities_ride_out_a_server_restart() {
    const ITEMS: usize = 600;
    let deadline = Instant::now() + Duration::from_secs(180);
    let server = Server::dedicated();
    let db: Database = server.database();
    let store = url::open(db.url(), OpenMode::ReadWrite).unwrap();
    enqueue(&store, ITEMS);
    let mut auth = Authorities::new();
    for i in 0..2 {
        auth.spawn(&format!("auth-{i}"), db.url());
    }
    wait_until("a third of the items", deadline, || {
        unfinished(&store) <= (ITEMS * 2 / 3) as u64
    });
    server.restart();
    wait_until("every item to finish", deadline, || {
        // The test's own handle reconnects too (a failed read is retried here).
        store.overview().is_ok_and(|_| unfinished(&store) == 0)
    });
    auth.stop_all(deadline);
    assert_all_done_once(&store, ITEMS);
    assert_check_clean(db.url());
    let (events, errors) = auth.events();
    eprintln!("server restart: events {events:?}; errors {errors:?}");
    drop(store);
    drop(db);
    drop(server);
}

// --- measurement -----------------------------------------------------------------------------

/// Drain throughput: `LEASEHOLD_DRAIN_ITEMS` (20,000) effects claimed in batches of
/// `LEASEHOLD_DRAIN_BATCH` (64) and group-committed by `LEASEHOLD_DRAIN_THREADS` (4)
/// workers, on a server of its own with its data on disk (or on the server
/// `LEASEHOLD_TEST_PG_URL` names). A measurement, not a pass/fail bar: run it with
/// `cargo test --release --test postgres drain -- --ignored --nocapture`.
#[test]
#[ignore = "a measurement; run explicitly"]
fn drain_throughput() {
    let env = |name: &str, default: usize| {
        std::env::var(name)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    };
    let items = env("LEASEHOLD_DRAIN_ITEMS", 20_000);
    let threads = env("LEASEHOLD_DRAIN_THREADS", 4);
    let batch = env("LEASEHOLD_DRAIN_BATCH", 64);
    // An existing server when one is named, else one of our own with its data on disk.
    let server = std::env::var_os(support::postgres::URL_VAR)
        .is_none()
        .then(Server::start_on_disk);
    let db = server.as_ref().map_or_else(database, Server::database);
    let store = url::open(db.url(), OpenMode::ReadWrite).unwrap();
    let started = Instant::now();
    enqueue(&store, items);
    eprintln!(
        "postgres enqueue: {items} items in batches of 500: {:.2?}, {:.0} items/s",
        started.elapsed(),
        items as f64 / started.elapsed().as_secs_f64()
    );
    let compat = compat();
    let started = Instant::now();
    let workers: Vec<_> = (0..threads)
        .map(|t| {
            let (store, compat) = (store.clone(), compat.clone());
            std::thread::spawn(move || {
                let owner = format!("drain-{t}");
                let mut done = 0usize;
                loop {
                    let claimed = store.claim_batch(&owner, &compat, batch, 30_000).unwrap();
                    if claimed.is_empty() {
                        return done;
                    }
                    let completions: Vec<_> = claimed
                        .iter()
                        .map(|w| leasehold::store::Completion {
                            id: w.id.clone(),
                            owner: owner.clone(),
                            generation: w.generation,
                            outcome: Ok(None),
                            retry_floor_ms: 0,
                        })
                        .collect();
                    let results = store.complete_batch(&completions).unwrap();
                    done += results.iter().filter(|r| r.is_ok()).count();
                }
            })
        })
        .collect();
    let done: usize = workers.into_iter().map(|w| w.join().unwrap()).sum();
    let elapsed = started.elapsed();
    assert_eq!(done, items);
    eprintln!(
        "postgres drain: {items} items, {threads} threads, batch {batch}: {:.2?}, {:.0} items/s",
        elapsed,
        items as f64 / elapsed.as_secs_f64()
    );
    drop(store);
    drop(db);
}

// --- creating --------------------------------------------------------------------------------

/// A database without the schema is not a store: writers refuse it and leave it empty;
/// `leasehold init` creates the schema once, then says it exists.
#[test]
fn writers_never_create_the_schema_and_init_does_once() {
    let db = database();
    let url = db.url();
    for args in [
        vec!["event", "--store", url, "--type", "paid"],
        vec![
            "authority",
            "--store",
            url,
            "--instance",
            "typo",
            "--workload",
            "default",
        ],
        vec!["workflow", "start", "--store", url, "reminder"],
    ] {
        let o = leasehold(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {o:?}");
        let err = String::from_utf8(o.stderr).unwrap();
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains("not a leasehold store yet"), "{err}");
    }
    assert!(
        url::open(url, OpenMode::ReadOnly).is_err(),
        "still no schema after the refused writers"
    );

    let created = leasehold(&["init", url, "--json"]);
    assert_eq!(created.status.code(), Some(0), "{created:?}");
    let report: serde_json::Value = serde_json::from_slice(&created.stdout).unwrap();
    assert_eq!(report["created"], true);
    let again = leasehold(&["init", url, "--json"]);
    let report: serde_json::Value = serde_json::from_slice(&again.stdout).unwrap();
    assert_eq!(report["created"], false);
    let event = leasehold(&["event", "--store", url, "--type", "paid"]);
    assert_eq!(event.status.code(), Some(0), "{event:?}");
}

/// A session holding the store's write lock inside an open transaction (a writer paused
/// mid-transaction) stalls every authority: the waiting authority logs the stall within a
/// few seconds naming the holder's session, says when it got through, and then drains.
#[test]
fn a_held_write_lock_is_logged_as_a_stall_naming_its_holder() {
    const ITEMS: usize = 100;
    let deadline = Instant::now() + Duration::from_secs(120);
    let db = database();
    let store = url::open(db.url(), OpenMode::ReadWrite).unwrap();
    enqueue(&store, ITEMS);
    let mut auth = Authorities::new();
    auth.spawn("auth-0", db.url());
    wait_until("the first completions", deadline, || {
        unfinished(&store) < ITEMS as u64
    });

    let mut holder = postgres::Client::connect(db.url(), postgres::NoTls).unwrap();
    holder
        .batch_execute("SET application_name = 'paused-writer'; BEGIN")
        .unwrap();
    let pid: i32 = holder
        .query_one(
            "SELECT pg_backend_pid() FROM (SELECT pg_advisory_xact_lock(7810756276994469740)) AS l",
            &[],
        )
        .unwrap()
        .get(0);
    let stalls = |message: &str| auth.lines_of("auth-0", message);
    wait_until("auth-0 logs the stall", deadline, || {
        !stalls("store-write-stalled").is_empty()
    });
    let stalled = &stalls("store-write-stalled")[0];
    let named = stalled["holder"].as_str().unwrap_or("");
    assert!(
        named.contains(&format!("pid {pid} (paused-writer)")),
        "{stalled}"
    );
    assert!(
        stalled["waited_ms"].as_u64().is_some_and(|ms| ms >= 3_000),
        "{stalled}"
    );
    holder.batch_execute("ROLLBACK").unwrap();
    wait_until("auth-0 says it got through", deadline, || {
        !stalls("store-write-resumed").is_empty()
    });
    wait_until("every item to finish", deadline, || unfinished(&store) == 0);
    auth.stop_all(deadline);
    assert_all_done_once(&store, ITEMS);
}

/// Another PostgreSQL cluster answering under the same URL (a failover to a server that is
/// not a replica, a restore onto a new host) holding the same store — same store id, even
/// ahead in revision — is refused by this host's rewind witness: its system identifier is
/// not the one this host has written to.
#[test]
fn another_server_under_the_same_url_is_refused_by_the_witness() {
    const NAME: &str = "leasehold_same_url";
    let state = tempfile::tempdir().unwrap();
    let first = Server::dedicated();
    let port = first.port();
    let db = first.database_named(NAME);
    let url = db.url().to_owned();
    let witnessed = || {
        let store = url::open(&url, OpenMode::ReadWrite)?;
        Witness::open(state.path(), &store).map(|w| store.with_witness(w))
    };
    let store = witnessed().unwrap();
    store
        .enqueue(NewWork::effect("fx-0", HANDLER, "{}"), "k")
        .unwrap();
    let seen = store.witness().unwrap().seen().unwrap();
    drop(store);
    let meta = |client: &mut postgres::Client, key: &str| -> i64 {
        client
            .query_one("SELECT value FROM meta WHERE key = $1", &[&key])
            .unwrap()
            .get(0)
    };
    let mut admin = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    let (store_id, revision) = (meta(&mut admin, "store_id"), meta(&mut admin, "revision"));
    drop(admin);
    drop(db);
    drop(first);

    let second = Server::dedicated_on(port);
    let _db = second.database_named(NAME);
    drop(url::open(&url, OpenMode::ReadWrite).unwrap());
    let mut admin = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    admin
        .execute(
            "UPDATE meta SET value = $1 WHERE key = 'store_id'",
            &[&store_id],
        )
        .unwrap();
    admin
        .execute(
            "UPDATE meta SET value = $1 WHERE key = 'revision'",
            &[&(revision + 100)],
        )
        .unwrap();
    drop(admin);

    let e = witnessed().err().unwrap();
    assert_eq!(e.code(), "STORE_REWOUND", "{e}");
    let text = e.to_string();
    assert!(text.contains("another database cluster"), "{text}");
    let was = seen.server.unwrap().system_identifier;
    assert!(text.contains(&was.to_string()), "{text}");
}

/// An attached dashboard's reader sees a commit as soon as PostgreSQL pushes it: with its
/// polling set to once an hour, a new snapshot still follows the commit within seconds.
#[test]
fn a_dashboard_sees_a_commit_pushed_without_polling() {
    use leasehold::tui::snapshot::{Published, Query, run_reader};
    use tokio::sync::watch;

    let db = database();
    let writer = url::open(db.url(), OpenMode::ReadWrite).unwrap();
    let reader_store = url::open(db.url(), OpenMode::ReadOnly).unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async move {
        let (_queries, queries_rx) = watch::channel(Query::default());
        let (out, mut published) = watch::channel(Published::Nothing);
        let hour_ms = 3_600_000;
        let reader = tokio::spawn(run_reader(reader_store, None, queries_rx, out, hour_ms));
        let token_of = |p: &Published| match p {
            Published::Snapshot(s) => Some(s.token),
            _ => None,
        };
        let deadline = Duration::from_secs(30);
        let first = tokio::time::timeout(deadline, async {
            loop {
                published.changed().await.unwrap();
                if let Some(t) = token_of(&published.borrow_and_update()) {
                    return t;
                }
            }
        })
        .await
        .expect("a first snapshot");
        tokio::task::spawn_blocking(move || {
            writer
                .enqueue(NewWork::effect("fx-pushed", "send-email", "{}"), "k")
                .unwrap();
        })
        .await
        .unwrap();
        let next = tokio::time::timeout(deadline, async {
            loop {
                published.changed().await.unwrap();
                if let Some(t) = token_of(&published.borrow_and_update()) {
                    return t;
                }
            }
        })
        .await
        .expect("the commit shows without waiting for the hourly poll");
        assert!(next > first, "{next} after {first}");
        reader.abort();
    });
}
