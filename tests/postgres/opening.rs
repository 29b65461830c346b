//! Opening and recognising databases: secrets kept out of every text, many first opens at
//! once, unknown databases and unprivileged roles refused, read-only opens.

use crate::support::leasehold;

use std::process::Command;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use leasehold::model::work::NewWork;
use leasehold::store::Backend;
use leasehold::store::postgres::PostgresBackend;
use leasehold::store::url::{self, OpenMode};

use crate::support::authorities::Authorities;
use crate::support::postgres::database;
use crate::support::wait::wait_until;

use super::open_err;

const SECRET: &str = "s3cr3t-Pa55word";

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
