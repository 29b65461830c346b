//! Bad input for the SQLite provider and the URL parser: every case answers one clear line
//! with a stable code, never panics, and leaves the file byte-for-byte as it was.

use std::path::{Path, PathBuf};

use leasehold::Store;
use leasehold::clock::ManualClock;
use leasehold::model::event::NewEvent;
use leasehold::model::work::WorkFilter;
use leasehold::model::{Authority, PageRequest};
use leasehold::store::Keyed;
use leasehold::store::url::{self, OpenMode};

use crate::support::{K, START, open_sqlite};
use leasehold::testing::work::effect;

fn temp() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("leasehold-bad-")
        .tempdir()
        .expect("temp dir")
}

fn sqlite_url(path: &Path) -> String {
    format!("sqlite:{}", path.display())
}

/// Asserts a one-line error with `code` and returns its text.
#[track_caller]
fn one_line(what: &str, err: &leasehold::Error, code: &str) -> String {
    let text = err.to_string();
    assert_eq!(err.code(), code, "{what}: {text}");
    assert!(
        !text.contains('\n') && !text.contains('\r'),
        "{what}: the error spans lines: {text:?}"
    );
    assert!(
        text.starts_with(code),
        "{what}: the text leads with its code: {text}"
    );
    text
}

#[track_caller]
fn open_err(what: &str, url: &str, mode: OpenMode) -> leasehold::Error {
    match url::open(url, mode) {
        Ok(store) => panic!("{what}: opened ({}) instead of refusing", store.describe()),
        Err(e) => e,
    }
}

/// Writes a real store with some data at `path` and closes it (so the WAL is checkpointed
/// into the main file).
fn write_real_store(path: &Path, items: usize) {
    let clock = ManualClock::new(START);
    let store = open_sqlite(path, &clock, OpenMode::ReadWrite).expect("create a store");
    let payload = "x".repeat(300);
    for chunk in (0..items).collect::<Vec<_>>().chunks(250) {
        let specs = chunk
            .iter()
            .map(|i| {
                leasehold::model::work::NewWork::effect(
                    format!("e-{i:05}"),
                    "h",
                    format!("{{\"pad\":\"{payload}\",\"i\":{i}}}"),
                )
            })
            .collect();
        store.enqueue_batch(specs, K).expect("enqueue");
    }
    store
        .acquire("r", "a", 1_000.0, Keyed { key: None })
        .expect("acquire");
    drop(store);
    let wal = wal_path(path);
    assert!(
        std::fs::metadata(&wal).map_or(true, |m| m.len() == 0),
        "the WAL was checkpointed on close"
    );
}

fn wal_path(path: &Path) -> PathBuf {
    let mut p = path.as_os_str().to_owned();
    p.push("-wal");
    PathBuf::from(p)
}

/// Opens the store (either mode) and reads everything it holds; returns the first error.
fn first_error(path: &Path, mode: OpenMode) -> Option<leasehold::Error> {
    let store = match url::open(&sqlite_url(path), mode) {
        Ok(store) => store,
        Err(e) => return Some(e),
    };
    read_everything(&store).err()
}

fn read_everything(store: &Store) -> leasehold::Result<()> {
    store.overview()?;
    let mut page = PageRequest::first(500);
    loop {
        let got = store.list_work(&WorkFilter::default(), &page)?;
        match got.next {
            Some(next) => page = PageRequest::after(next, 500),
            None => break,
        }
    }
    store.list_leases(&PageRequest::first(100))?;
    store.ownership_history(None, 0, 100_000)?;
    store.journal_after(0, None, 100)?;
    Ok(())
}

#[test]
fn not_a_sqlite_file_is_refused_and_left_alone() {
    let dir = temp();
    let path = dir.path().join("notes.txt");
    let bytes = "these are my notes, not a database\n"
        .repeat(200)
        .into_bytes();
    std::fs::write(&path, &bytes).expect("write");
    for mode in [OpenMode::ReadWrite, OpenMode::ReadOnly] {
        let err = open_err("a text file", &sqlite_url(&path), mode);
        one_line("a text file", &err, "STORE_REFUSED");
        // A bare path means SQLite too.
        let err = open_err(
            "a text file by bare path",
            &path.display().to_string(),
            mode,
        );
        one_line("a text file by bare path", &err, "STORE_REFUSED");
    }
    assert_eq!(
        std::fs::read(&path).expect("read"),
        bytes,
        "left byte-for-byte as it was"
    );
    assert!(!wal_path(&path).exists(), "nothing created beside it");
}

#[test]
fn another_applications_database_is_refused_and_left_alone() {
    let dir = temp();
    let path = dir.path().join("other.db");
    {
        let conn = rusqlite::Connection::open(&path).expect("sqlite");
        conn.execute_batch("CREATE TABLE photos (id INTEGER PRIMARY KEY, name TEXT); INSERT INTO photos (name) VALUES ('cat');").expect("ddl");
    }
    let bytes = std::fs::read(&path).expect("read");
    for mode in [OpenMode::ReadWrite, OpenMode::ReadOnly] {
        let err = open_err("another app's database", &sqlite_url(&path), mode);
        one_line("another app's database", &err, "STORE_REFUSED");
    }
    assert_eq!(
        std::fs::read(&path).expect("read"),
        bytes,
        "left byte-for-byte as it was"
    );
}

#[test]
fn truncated_database_is_reported_corrupt_and_left_alone() {
    let dir = temp();
    let path = dir.path().join("store.db");
    write_real_store(&path, 2_000);
    let full = std::fs::read(&path).expect("read");
    let truncated = &full[..full.len() / 2];
    std::fs::write(&path, truncated).expect("truncate");
    for mode in [OpenMode::ReadOnly, OpenMode::ReadWrite] {
        let err = first_error(&path, mode)
            .unwrap_or_else(|| panic!("{mode:?}: a truncated store read without complaint"));
        one_line("a truncated store", &err, "STORE_CORRUPT");
        assert_eq!(
            std::fs::read(&path).expect("read"),
            truncated,
            "{mode:?}: left byte-for-byte as it was"
        );
    }
}

#[test]
fn corrupted_database_is_reported_corrupt_and_left_alone() {
    let dir = temp();
    let path = dir.path().join("store.db");
    write_real_store(&path, 2_000);
    let mut bytes = std::fs::read(&path).expect("read");
    let (from, to) = (bytes.len() / 3, 2 * bytes.len() / 3);
    for (i, b) in bytes[from..to].iter_mut().enumerate() {
        *b = (i % 251) as u8 ^ 0xA5;
    }
    std::fs::write(&path, &bytes).expect("corrupt");
    for mode in [OpenMode::ReadOnly, OpenMode::ReadWrite] {
        let err = first_error(&path, mode)
            .unwrap_or_else(|| panic!("{mode:?}: a corrupted store read without complaint"));
        one_line("a corrupted store", &err, "STORE_CORRUPT");
        assert_eq!(
            std::fs::read(&path).expect("read"),
            bytes,
            "{mode:?}: left byte-for-byte as it was"
        );
    }
}

#[test]
fn newer_schema_version_is_refused_and_left_alone() {
    let dir = temp();
    let path = dir.path().join("store.db");
    write_real_store(&path, 10);
    {
        let conn = rusqlite::Connection::open(&path).expect("sqlite");
        let changed = conn
            .execute(
                "UPDATE meta SET value = 99 WHERE key = 'schema_version'",
                [],
            )
            .expect("bump");
        assert_eq!(changed, 1, "the store keeps its schema version in meta");
    }
    let bytes = std::fs::read(&path).expect("read");
    for mode in [OpenMode::ReadWrite, OpenMode::ReadOnly] {
        let err = open_err("a newer schema", &sqlite_url(&path), mode);
        let text = one_line("a newer schema", &err, "STORE_REFUSED");
        assert!(text.contains("99"), "names the version it found: {text}");
        assert_eq!(
            std::fs::read(&path).expect("read"),
            bytes,
            "{mode:?}: left byte-for-byte as it was"
        );
    }
}

#[test]
fn unknown_store_scheme_is_invalid() {
    for url in ["redis://x", "mysql://user@host/db", "", "   "] {
        let err = open_err("an unknown scheme", url, OpenMode::ReadWrite);
        one_line(url, &err, "INVALID");
    }
}

#[test]
fn read_only_open_refuses_every_write_and_changes_nothing() {
    let dir = temp();
    let path = dir.path().join("store.db");
    write_real_store(&path, 50);
    let bytes = std::fs::read(&path).expect("read");
    let clock = ManualClock::new(START + 10_000);
    let store =
        open_sqlite(&path, &clock, OpenMode::ReadOnly).expect("a read-only open of a good store");
    let revision = store.revision().expect("reads work read-only");
    read_everything(&store).expect("reads work read-only");
    assert_eq!(
        store.work("e-00007").expect("read").map(|w| w.id),
        Some("e-00007".into())
    );

    let no_key = Keyed { key: None };
    let lease = store.lease("r").expect("read").expect("lease row");
    let refusals: Vec<(&str, leasehold::Result<()>)> = vec![
        (
            "acquire",
            store.acquire("r2", "a", 1_000.0, no_key).map(drop),
        ),
        (
            "keyed acquire",
            store
                .acquire("r3", "a", 1_000.0, Keyed { key: Some("k") })
                .map(drop),
        ),
        (
            "renew",
            store
                .renew("r", &lease.token, lease.generation, 1_000.0)
                .map(drop),
        ),
        (
            "release",
            store
                .release("r", "a", &lease.token, lease.generation, no_key)
                .map(drop),
        ),
        ("enqueue", store.enqueue(effect("new"), K).map(drop)),
        (
            "claim batch",
            store.claim_batch("a", K, 10, 1_000).map(drop),
        ),
        ("claim", store.claim("e-00001", "a", K, 1_000).map(drop)),
        (
            "complete",
            store.complete("e-00001", "a", 1, None).map(drop),
        ),
        (
            "ingest",
            store
                .ingest(&NewEvent {
                    event_type: "t".into(),
                    source: None,
                    external_id: None,
                    payload: serde_json::json!({}),
                })
                .map(drop),
        ),
        ("fire schedules", store.fire_due_schedules(K, 10).map(drop)),
        ("audit", store.audit("op", "x", "y", "z")),
        (
            "register",
            store
                .register_authority(&Authority {
                    instance_id: "i".into(),
                    compat: K.into(),
                    build: "b".into(),
                    config: "{}".into(),
                    started_at: 0,
                    heartbeat_at: 0,
                    stopped_at: None,
                    host: "h".into(),
                    pid: 1,
                    published: leasehold::model::Published::default(),
                })
                .map(drop),
        ),
    ];
    for (what, result) in refusals {
        let err = result
            .err()
            .unwrap_or_else(|| panic!("{what} succeeded on a read-only store"));
        one_line(what, &err, "STORE_READ_ONLY");
    }
    assert_eq!(
        store.revision().expect("read"),
        revision,
        "a refused write does not advance the revision"
    );
    drop(store);
    assert_eq!(
        std::fs::read(&path).expect("read"),
        bytes,
        "left byte-for-byte as it was"
    );
}

#[test]
fn a_file_without_write_permission_refuses_writes() {
    use std::os::unix::fs::PermissionsExt;
    let dir = temp();
    let path = dir.path().join("store.db");
    write_real_store(&path, 10);
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o444)).expect("chmod");
    if std::fs::OpenOptions::new().write(true).open(&path).is_ok() {
        // Running as root (as CI does): permissions do not stop writes, and the read-only
        // case is covered through `OpenMode::ReadOnly` above.
        return;
    }
    let bytes = std::fs::read(&path).expect("read");
    let clock = ManualClock::new(START);
    match open_sqlite(&path, &clock, OpenMode::ReadWrite) {
        Err(e) => drop(one_line("open a 0444 file", &e, "STORE_READ_ONLY")),
        Ok(store) => {
            let err = store
                .enqueue(effect("new"), K)
                .expect_err("a write to a 0444 file");
            one_line("write to a 0444 file", &err, "STORE_READ_ONLY");
        }
    }
    assert_eq!(
        std::fs::read(&path).expect("read"),
        bytes,
        "left byte-for-byte as it was"
    );
}

#[test]
fn read_only_open_of_a_missing_file_creates_nothing() {
    let dir = temp();
    let path = dir.path().join("missing.db");
    let err = open_err(
        "a missing file, read-only",
        &sqlite_url(&path),
        OpenMode::ReadOnly,
    );
    one_line("a missing file, read-only", &err, "STORE_REFUSED");
    assert!(
        !path.exists() && !wal_path(&path).exists(),
        "nothing was created"
    );
    let err = open_err("a directory", &sqlite_url(dir.path()), OpenMode::ReadWrite);
    one_line("a directory", &err, "STORE_REFUSED");
}

/// The dashboard's write handle (`OpenMode::Existing`) writes an existing store but never
/// creates one: a missing path or an empty file is refused and left as it was.
#[test]
fn existing_mode_writes_a_store_but_never_creates_one() {
    let dir = temp();
    let missing = dir.path().join("typo.db");
    let err = open_err("a missing file", &sqlite_url(&missing), OpenMode::Existing);
    one_line("a missing file", &err, "STORE_REFUSED");
    assert!(
        !missing.exists() && !wal_path(&missing).exists(),
        "nothing created"
    );

    let empty = dir.path().join("empty.db");
    std::fs::write(&empty, b"").expect("write");
    let err = open_err("an empty file", &sqlite_url(&empty), OpenMode::Existing);
    one_line("an empty file", &err, "STORE_REFUSED");
    assert_eq!(std::fs::read(&empty).expect("read").len(), 0, "still empty");
    assert!(!wal_path(&empty).exists());

    let real = dir.path().join("real.db");
    write_real_store(&real, 3);
    let store = url::open(&sqlite_url(&real), OpenMode::Existing).expect("an existing store");
    store
        .enqueue(effect("one-more"), K)
        .expect("the write handle writes");
}

/// A path in a directory that does not exist is a refusal retrying cannot change, not an
/// outage: `STORE_REFUSED`, and no directory is made.
#[test]
fn a_path_in_a_missing_directory_is_refused() {
    let dir = temp();
    let missing = dir.path().join("no-such-dir").join("store.db");
    for mode in [OpenMode::ReadWrite, OpenMode::Existing, OpenMode::ReadOnly] {
        let err = open_err("a missing directory", &sqlite_url(&missing), mode);
        let text = one_line("a missing directory", &err, "STORE_REFUSED");
        assert!(text.contains("no-such-dir"), "{mode:?}: {text}");
        assert!(
            err.is_terminal_store_failure(),
            "{mode:?}: not retried: {text}"
        );
    }
    assert!(!dir.path().join("no-such-dir").exists(), "nothing created");
}
