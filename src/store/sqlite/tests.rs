//! Provider-level tests: opening and refusing files, concurrency of initialisation,
//! rollback and error mapping. The query plans are in `plan_tests.rs`, the differential
//! check of every list against the memory reference in `differential_tests.rs`.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Barrier};

use super::*;
use crate::model::work::{NewWork, WorkFilter};
use crate::model::{JournalEvent, PageRequest, WorkItem, WorkState};

pub(super) fn temp() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("store.db");
    (dir, path)
}

pub(super) fn write(b: &dyn Backend, mut f: impl FnMut(&mut dyn Tx) -> Result<()>) -> Result<()> {
    b.write(&mut |tx| f(tx))
}

pub(super) fn read<T>(b: &dyn Backend, mut f: impl FnMut(&mut dyn Tx) -> Result<T>) -> Result<T> {
    let mut out = None;
    b.read(&mut |tx| {
        out = Some(f(tx)?);
        Ok(())
    })?;
    Ok(out.expect("read ran"))
}

pub(super) fn bytes(path: &Path) -> Vec<u8> {
    std::fs::read(path).expect("read file")
}

pub(super) fn sidecars_absent(path: &Path) {
    for ext in ["-wal", "-shm", "-journal"] {
        let side = PathBuf::from(format!("{}{ext}", path.display()));
        assert!(!side.exists(), "{} was created", side.display());
    }
}

#[test]
fn schema_literal_matches_the_build() {
    assert!(SCHEMA.contains(&format!("VALUES ('schema_version', {SCHEMA_VERSION})")));
}

#[test]
fn init_is_idempotent() {
    let (_dir, path) = temp();
    let b = open(&path, OpenMode::ReadWrite).expect("open");
    write(&b, |tx| tx.commit_revision().map(drop)).expect("write");
    drop(b);
    let b = open(&path, OpenMode::ReadWrite).expect("reopen");
    assert_eq!(read(&b, |tx| tx.revision()).expect("revision"), 1);
    let conn = b.lock();
    assert_eq!(
        schema_version(&conn).expect("version"),
        Some(SCHEMA_VERSION)
    );
    let mode: String = conn
        .pragma_query_value(None, "journal_mode", |r| r.get(0))
        .expect("mode");
    assert_eq!(mode, "wal");
    let sync: i64 = conn
        .pragma_query_value(None, "synchronous", |r| r.get(0))
        .expect("sync");
    assert_eq!(sync, 2, "synchronous=FULL");
}

#[test]
fn concurrent_first_open_is_safe() {
    let (_dir, path) = temp();
    let barrier = Arc::new(Barrier::new(4));
    let handles: Vec<_> = (0..4)
        .map(|i| {
            let path = path.clone();
            let barrier = barrier.clone();
            std::thread::spawn(move || {
                barrier.wait();
                let b = open(&path, OpenMode::ReadWrite).expect("open");
                write(&b, |tx| tx.adjust_counter(&format!("t|{i}"), 1)).expect("write");
            })
        })
        .collect();
    for h in handles {
        h.join().expect("thread");
    }
    let b = open(&path, OpenMode::ReadOnly).expect("open");
    assert_eq!(read(&b, |tx| tx.counters("t|")).expect("counters").len(), 4);
}

#[test]
fn empty_file_is_initialised() {
    let (_dir, path) = temp();
    std::fs::write(&path, b"").expect("touch");
    let b = open(&path, OpenMode::ReadWrite).expect("open");
    assert_eq!(read(&b, |tx| tx.revision()).expect("revision"), 0);
}

#[test]
fn newer_schema_is_refused_and_untouched() {
    let (_dir, path) = temp();
    drop(open(&path, OpenMode::ReadWrite).expect("create"));
    {
        let conn = Connection::open(&path).expect("raw");
        conn.execute(
            "UPDATE meta SET value = 99 WHERE key = 'schema_version'",
            [],
        )
        .expect("bump");
    }
    let before = bytes(&path);
    for mode in [OpenMode::ReadWrite, OpenMode::ReadOnly] {
        let err = open(&path, mode).err().expect("refused");
        assert_eq!(err.code(), "STORE_REFUSED");
        let text = err.to_string();
        assert!(
            text.contains(&format!(
                "store schema version 99 is newer than this build ({SCHEMA_VERSION}): upgrade leasehold"
            )),
            "{text}"
        );
        assert!(text.contains(&path.display().to_string()), "{text}");
        assert!(!text.contains('\n'));
    }
    assert_eq!(bytes(&path), before);
}

/// A newer build upgrading the store under open handles: every later transaction of theirs,
/// read or write, is refused with the same one line as an open would be, and writes
/// nothing; a version bump by another open of this build is no refusal.
#[test]
fn a_store_upgraded_by_a_newer_build_under_open_handles_refuses_them() {
    let (_dir, path) = temp();
    let writer = open(&path, OpenMode::ReadWrite).expect("create");
    let reader = open(&path, OpenMode::ReadOnly).expect("reader");
    write(&writer, |tx| tx.adjust_counter("x", 1)).expect("write");
    read(&reader, |tx| tx.counters("").map(drop)).expect("read");
    let newer = SCHEMA_VERSION + 1;
    let raw = Connection::open(&path).expect("raw");
    raw.execute(
        "UPDATE meta SET value = ?1 WHERE key = 'schema_version'",
        [newer],
    )
    .expect("bump");
    let x = || -> i64 {
        raw.query_row("SELECT value FROM counters WHERE name = 'x'", [], |r| {
            r.get(0)
        })
        .expect("x")
    };
    let refusals = [
        write(&writer, |tx| tx.adjust_counter("x", 1)).expect_err("write refused"),
        read(&writer, |tx| tx.counters("").map(drop)).expect_err("read refused"),
        read(&reader, |tx| tx.counters("").map(drop)).expect_err("reader refused"),
    ];
    for err in refusals {
        assert_eq!(err.code(), "STORE_REFUSED", "{err}");
        let text = err.to_string();
        assert!(
            text.contains(&format!(
                "store schema version {newer} is newer than this build ({SCHEMA_VERSION}): upgrade leasehold"
            )),
            "{text}"
        );
        assert!(!text.contains('\n'));
    }
    assert_eq!(x(), 1, "nothing written");
    raw.execute(
        "UPDATE meta SET value = ?1 WHERE key = 'schema_version'",
        [SCHEMA_VERSION],
    )
    .expect("back");
    write(&writer, |tx| tx.adjust_counter("x", 1)).expect("this build's version again");
    assert_eq!(x(), 2);
}

#[test]
fn garbage_file_is_refused_and_untouched() {
    let (_dir, path) = temp();
    let garbage: Vec<u8> = (0..10_000u32).map(|i| (i * 7 % 251) as u8).collect();
    std::fs::write(&path, &garbage).expect("write");
    for mode in [OpenMode::ReadWrite, OpenMode::ReadOnly] {
        let err = open(&path, mode).err().expect("refused");
        assert_eq!(err.code(), "STORE_REFUSED", "{err}");
        assert!(err.to_string().contains(&path.display().to_string()));
    }
    assert_eq!(bytes(&path), garbage);
    sidecars_absent(&path);

    // Short garbage, a text file.
    std::fs::write(&path, b"hello").expect("write");
    assert_eq!(
        open(&path, OpenMode::ReadWrite)
            .err()
            .expect("refused")
            .code(),
        "STORE_REFUSED"
    );
    assert_eq!(bytes(&path), b"hello");
}

#[test]
fn sqlite_header_with_garbage_is_refused_and_untouched() {
    let (_dir, path) = temp();
    let mut data = b"SQLite format 3\0".to_vec();
    data.extend((0..8192u32).map(|i| (i * 13 % 256) as u8));
    std::fs::write(&path, &data).expect("write");
    let err = open(&path, OpenMode::ReadWrite).err().expect("refused");
    assert_eq!(err.code(), "STORE_CORRUPT", "{err}");
    assert_eq!(bytes(&path), data);
}

#[test]
fn truncated_store_is_refused_and_untouched() {
    let (_dir, path) = temp();
    let b = open(&path, OpenMode::ReadWrite).expect("create");
    write(&b, |tx| {
        for i in 0..200 {
            tx.insert_work(&item(&format!("w{i:04}"), "c1", 0))?;
        }
        Ok(())
    })
    .expect("fill");
    drop(b);
    let full = bytes(&path);
    let cut = full[..full.len() / 2].to_vec();
    std::fs::write(&path, &cut).expect("truncate");
    for mode in [OpenMode::ReadWrite, OpenMode::ReadOnly] {
        let err = open(&path, mode).err().expect("refused");
        assert_eq!(err.code(), "STORE_CORRUPT", "{err}");
    }
    assert_eq!(bytes(&path), cut);
}

#[test]
fn foreign_database_is_refused_and_untouched() {
    let (_dir, path) = temp();
    {
        let conn = Connection::open(&path).expect("raw");
        conn.execute_batch("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT); INSERT INTO notes (body) VALUES ('x');")
            .expect("foreign");
    }
    let before = bytes(&path);
    let err = open(&path, OpenMode::ReadWrite).err().expect("refused");
    assert_eq!(err.code(), "STORE_REFUSED");
    assert!(err.to_string().contains("not a leasehold store"));
    assert_eq!(bytes(&path), before);
    sidecars_absent(&path);
}

#[test]
fn read_only_open() {
    let (dir, path) = temp();
    let missing = dir.path().join("missing.db");
    let err = open(&missing, OpenMode::ReadOnly).err().expect("refused");
    assert_eq!(err.code(), "STORE_REFUSED");
    assert!(!missing.exists());

    let b = open(&path, OpenMode::ReadWrite).expect("create");
    write(&b, |tx| tx.adjust_counter("x", 3)).expect("write");
    drop(b);
    let before = bytes(&path);
    let ro = open(&path, OpenMode::ReadOnly).expect("open read-only");
    assert!(ro.is_read_only());
    assert_eq!(
        read(&ro, |tx| tx.counters("x")).expect("read"),
        vec![("x".to_owned(), 3)]
    );
    let err = write(&ro, |tx| tx.adjust_counter("x", 1)).expect_err("refused");
    assert_eq!(err.code(), "STORE_READ_ONLY");
    assert!(ro.change_token().is_ok());
    drop(ro);
    assert_eq!(bytes(&path), before);

    // A write inside a read transaction is refused too.
    let b = open(&path, OpenMode::ReadWrite).expect("open");
    let err = read(&b, |tx| tx.adjust_counter("x", 1)).expect_err("refused");
    assert_eq!(err.code(), "STORE_READ_ONLY");
}

#[test]
fn read_only_file_opens_for_inspection() {
    use std::os::unix::fs::PermissionsExt;
    let (_dir, path) = temp();
    drop(open(&path, OpenMode::ReadWrite).expect("create"));
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o444)).expect("chmod");
    if std::fs::OpenOptions::new().write(true).open(&path).is_ok() {
        // Running as root: permissions do not bind, nothing to test.
        return;
    }
    let b = open(&path, OpenMode::ReadWrite).expect("opens read-only");
    assert!(b.is_read_only());
    assert_eq!(read(&b, |tx| tx.revision()).expect("read"), 0);
    assert_eq!(
        write(&b, |tx| tx.commit_revision().map(drop))
            .expect_err("refused")
            .code(),
        "STORE_READ_ONLY"
    );
}

#[test]
fn rollback_on_err_leaves_nothing() {
    let (_dir, path) = temp();
    let b = open(&path, OpenMode::ReadWrite).expect("open");
    let err = write(&b, |tx| {
        tx.commit_revision()?;
        tx.insert_work(&item("w1", "c1", 0))?;
        tx.adjust_counter("n", 1)?;
        tx.append_journal(&event("t", 0))?;
        Err(Error::Invalid("no".into()))
    })
    .expect_err("err");
    assert_eq!(err.code(), "INVALID");
    read(&b, |tx| {
        assert_eq!(tx.revision()?, 0);
        assert_eq!(tx.work("w1")?, None);
        assert!(tx.counters("")?.is_empty());
        assert_eq!(tx.journal_high_water()?, 0);
        Ok(())
    })
    .expect("read");
}

#[test]
fn commit_revision_once_per_transaction_and_change_token() {
    let (_dir, path) = temp();
    let b = open(&path, OpenMode::ReadWrite).expect("open");
    let other = open(&path, OpenMode::ReadWrite).expect("second connection");
    let t0 = b.change_token().expect("token");
    write(&b, |tx| {
        assert_eq!(tx.commit_revision()?, 1);
        assert_eq!(tx.commit_revision()?, 1);
        assert_eq!(tx.revision()?, 1);
        Ok(())
    })
    .expect("write");
    let t1 = b.change_token().expect("token");
    assert_ne!(t0, t1);
    assert_eq!(
        b.change_token().expect("token"),
        t1,
        "stable without commits"
    );
    write(&other, |tx| tx.commit_revision().map(|r| assert_eq!(r, 2))).expect("write");
    let t2 = b.change_token().expect("token");
    assert_ne!(t1, t2, "another connection's commit is seen");
    // A commit that does not advance the revision is still seen by other connections.
    write(&other, |tx| tx.adjust_counter("x", 1)).expect("write");
    assert_ne!(b.change_token().expect("token"), t2);
}

#[test]
fn journal_seq_is_never_reused() {
    let (_dir, path) = temp();
    let b = open(&path, OpenMode::ReadWrite).expect("open");
    write(&b, |tx| {
        assert_eq!(tx.append_journal(&event("a", 1))?, 1);
        assert_eq!(tx.append_journal(&event("b", 2))?, 2);
        Ok(())
    })
    .expect("write");
    {
        let conn = b.lock();
        conn.execute("DELETE FROM journal", []).expect("trim all");
    }
    write(&b, |tx| {
        tx.append_journal(&event("a", 3))
            .map(|seq| assert_eq!(seq, 3))
    })
    .expect("write");
    assert_eq!(read(&b, |tx| tx.journal_high_water()).expect("hw"), 3);
}

pub(super) fn item(id: &str, compat: &str, at: i64) -> WorkItem {
    WorkItem::new(NewWork::effect(id, "h", "{}"), compat, at)
}

pub(super) fn event(t: &str, at: i64) -> JournalEvent {
    JournalEvent {
        seq: 0,
        event_type: t.into(),
        source: Some("s".into()),
        external_id: None,
        payload: "{}".into(),
        fingerprint: "f".into(),
        at,
    }
}

#[test]
fn racing_claimers_over_separate_connections_each_win_once() {
    let (_dir, path) = temp();
    let store = |p: &Path| {
        let backend = open(p, OpenMode::ReadWrite).expect("open");
        Store::new(
            Arc::new(backend),
            Arc::new(crate::clock::ManualClock::new(1_000)),
            Arc::new(SeededIds::new(1)),
        )
    };
    let first = store(&path);
    let specs = (0..40)
        .map(|i| NewWork::effect(format!("e{i:02}"), "h", "{}"))
        .collect();
    assert_eq!(first.enqueue_batch(specs, "c").expect("enqueue"), 40);
    let barrier = Arc::new(Barrier::new(4));
    let handles: Vec<_> = (0..4)
        .map(|i| {
            let (path, barrier) = (path.clone(), barrier.clone());
            std::thread::spawn(move || {
                let s = store(&path);
                barrier.wait();
                let mut mine = Vec::new();
                loop {
                    let got = s
                        .claim_batch(&format!("o{i}"), "c", 3, 10_000)
                        .expect("claim");
                    if got.is_empty() {
                        return mine;
                    }
                    for w in got {
                        s.complete(&w.id, &format!("o{i}"), w.generation, None)
                            .expect("complete");
                        mine.push(w.id);
                    }
                }
            })
        })
        .collect();
    let mut all: Vec<String> = handles
        .into_iter()
        .flat_map(|h| h.join().expect("thread"))
        .collect();
    all.sort();
    let expected: Vec<String> = (0..40).map(|i| format!("e{i:02}")).collect();
    assert_eq!(all, expected, "every item claimed exactly once");
    let done = first
        .list_work(
            &WorkFilter {
                states: vec![WorkState::Succeeded],
                ..WorkFilter::default()
            },
            &PageRequest::first(100),
        )
        .expect("list");
    assert_eq!(done.rows.len(), 40);
}

#[test]
fn sqlite_errors_map_to_store_errors() {
    use rusqlite::ffi;
    let err =
        |code| rusqlite::Error::SqliteFailure(ffi::Error::new(code), Some("detail\nmore".into()));
    let cases = [
        (ffi::SQLITE_BUSY, "STORE_CONTENTION"),
        (ffi::SQLITE_LOCKED, "STORE_CONTENTION"),
        (ffi::SQLITE_NOTADB, "STORE_CORRUPT"),
        (ffi::SQLITE_CORRUPT, "STORE_CORRUPT"),
        (ffi::SQLITE_CANTOPEN, "STORE_REFUSED"),
        (ffi::SQLITE_PERM, "STORE_REFUSED"),
        (ffi::SQLITE_READONLY, "STORE_READ_ONLY"),
        (ffi::SQLITE_IOERR, "STORE_UNAVAILABLE"),
        (ffi::SQLITE_FULL, "STORE_UNAVAILABLE"),
    ];
    for (code, expected) in cases {
        let mapped = map_error("/x/store.db", &err(code));
        assert_eq!(mapped.code(), expected, "{code}");
        assert!(!mapped.to_string().contains('\n'), "{mapped}");
        assert_eq!(is_busy(&err(code)), expected == "STORE_CONTENTION");
    }
    // A WAL store in a directory the user cannot write to, with no `-shm` beside it: the
    // message names the directory, not the file, and says how to read the store.
    let directory = rusqlite::Error::SqliteFailure(
        ffi::Error {
            code: ErrorCode::ReadOnly,
            extended_code: ffi::SQLITE_READONLY_DIRECTORY,
        },
        None,
    );
    let mapped = map_error("/srv/jobs/store.db", &directory);
    assert_eq!(mapped.code(), "STORE_READ_ONLY");
    assert!(
        mapped
            .to_string()
            .contains("the directory /srv/jobs is read-only to this user")
            && mapped.to_string().contains("read a copy"),
        "{mapped}"
    );
    let mut calls = 0;
    let out: Result<()> = retry(MAX_ATTEMPTS, || {
        calls += 1;
        if calls < 3 {
            Err(Step::Retry(Transient::Contention))
        } else {
            Ok(())
        }
    });
    assert!(out.is_ok());
    assert_eq!(calls, 3, "busy attempts are retried");
}

/// The `work` table's columns in the order `sql::decode::work` reads them by position and
/// `sql::encode::WORK` lists them.
const WORK_COLUMNS: [&str; 25] = [
    "id",
    "kind",
    "state",
    "handler",
    "payload",
    "logical_effect_id",
    "idempotency_key",
    "compat",
    "owner_id",
    "token",
    "generation",
    "claimed_at",
    "lease_expires_at",
    "attempt_number",
    "uncertain_attempts",
    "max_attempts",
    "last_attempt_at",
    "next_eligible_at",
    "last_failure",
    "result",
    "created_at",
    "updated_at",
    "due_at",
    "checkpoint",
    "priority",
];

/// Fails unless the tables read by position (`work`, and the checker's `grants` and
/// `writes`, `seq` first) have their columns in the order the decoders read them and the
/// encoders list them.
pub(super) fn assert_positional_columns(conn: &Connection) {
    let columns = |table: &str| -> Vec<String> {
        conn.prepare(&format!(
            "SELECT name FROM pragma_table_info('{table}') ORDER BY cid"
        ))
        .and_then(|mut s| s.query_map([], |r| r.get(0))?.collect())
        .expect("table info")
    };
    assert_eq!(columns("work"), WORK_COLUMNS);
    let encoded: Vec<&str> = crate::store::sql::encode::WORK.names().collect();
    assert_eq!(encoded, WORK_COLUMNS);
    for table in [
        &crate::store::sql::encode::GRANTS,
        &crate::store::sql::encode::WRITES,
    ] {
        let listed: Vec<&str> = std::iter::once("seq").chain(table.names()).collect();
        assert_eq!(columns(table.name), listed, "{}", table.name);
    }
}

#[test]
fn columns_are_in_the_order_rows_are_mapped_by_position() {
    let (_dir, path) = temp();
    let backend = open(&path, OpenMode::ReadWrite).expect("open");
    assert_positional_columns(&backend.lock());
}

#[test]
fn every_encoded_column_is_in_the_schema() {
    use crate::store::sql::encode::{
        ACTION_OUTCOMES, AUDIT, AUTHORITIES, DEDUP, DEFINITIONS, GRANTS, HISTORY, IDEMPOTENCY,
        INGESTIONS, INSTANCES, JOURNAL, LEASES, SCHEDULES, SUBSCRIPTIONS, WORK, WRITES,
    };
    let (_dir, path) = temp();
    let backend = open(&path, OpenMode::ReadWrite).expect("open");
    let conn = backend.lock();
    for table in [
        &ACTION_OUTCOMES,
        &AUDIT,
        &AUTHORITIES,
        &DEDUP,
        &DEFINITIONS,
        &GRANTS,
        &HISTORY,
        &IDEMPOTENCY,
        &INGESTIONS,
        &INSTANCES,
        &JOURNAL,
        &LEASES,
        &SCHEDULES,
        &SUBSCRIPTIONS,
        &WORK,
        &WRITES,
    ] {
        let (names, keys): (Vec<String>, Vec<i64>) = conn
            .prepare("SELECT name, pk FROM pragma_table_info(?1) ORDER BY cid")
            .and_then(|mut s| {
                s.query_map([table.name], |r| Ok((r.get(0)?, r.get(1)?)))?
                    .collect::<rusqlite::Result<Vec<(String, i64)>>>()
            })
            .expect("table info")
            .into_iter()
            .unzip();
        for column in table.names() {
            assert!(
                names.iter().any(|n| n == column),
                "{}.{column} is not in the schema",
                table.name
            );
        }
        // The key the encoder's upserts conflict on is the table's primary key (the
        // append-only history tables are keyed by their identity column instead).
        let key: Vec<&str> = names
            .iter()
            .zip(&keys)
            .filter(|(_, pk)| **pk > 0)
            .map(|(n, _)| n.as_str())
            .collect();
        if !table.key.is_empty() {
            assert_eq!(key, table.key, "{}'s primary key", table.name);
        }
    }
}

/// A writer closing while a read-only reader (a dashboard) stays open empties the WAL, so
/// the next process does not read a large WAL to rebuild its index.
#[test]
fn a_closing_writer_empties_the_wal_under_an_open_reader() {
    let (_dir, path) = temp();
    let writer = open(&path, OpenMode::ReadWrite).expect("open");
    let reader = open(&path, OpenMode::ReadOnly).expect("reader");
    for _ in 0..50 {
        write(&writer, |tx| tx.commit_revision().map(drop)).expect("write");
    }
    assert_eq!(read(&reader, |tx| tx.revision()).expect("revision"), 50);
    let wal = PathBuf::from(format!("{}-wal", path.display()));
    assert!(std::fs::metadata(&wal).expect("wal").len() > 0);
    drop(writer);
    assert_eq!(
        std::fs::metadata(&wal).expect("wal").len(),
        0,
        "the WAL was emptied"
    );
    assert_eq!(read(&reader, |tx| tx.revision()).expect("revision"), 50);
    drop(reader);
    let again = open(&path, OpenMode::ReadOnly).expect("reopen");
    assert_eq!(read(&again, |tx| tx.revision()).expect("revision"), 50);
}

/// Bytes this thread has read through system calls so far (`/proc/thread-self/io`): SQLite
/// reads its pages with `pread` on the calling thread, so a difference is what one call read.
fn thread_read_bytes() -> u64 {
    let io = std::fs::read_to_string("/proc/thread-self/io").expect("per-thread I/O counters");
    io.lines()
        .find_map(|l| l.strip_prefix("rchar: "))
        .and_then(|n| n.trim().parse().ok())
        .expect("rchar")
}

/// A closed store of `items` work items (its WAL folded into the file).
fn filled(path: &Path, items: usize) {
    let b = open(path, OpenMode::ReadWrite).expect("create");
    write(&b, |tx| {
        for i in 0..items {
            tx.insert_work(&item(&format!("w{i:06}"), "c1", 0))?;
        }
        Ok(())
    })
    .expect("fill");
}

#[test]
fn a_writable_open_reads_a_constant_part_of_the_file() {
    let (_dir, path) = temp();
    filled(&path, 8_000);
    let size = std::fs::metadata(&path).expect("size").len();
    let before = thread_read_bytes();
    let b = open(&path, OpenMode::Existing).expect("open");
    let read = thread_read_bytes() - before;
    // The schema and the root page of every table and index (`damage.rs`): about 260 KB
    // whatever the store's size.
    assert!(
        read < 320 * 1024 && read < size / 8,
        "a writer's open read {read} bytes of a {size}-byte store: it must not read the whole file"
    );
    assert!(!b.is_read_only());
}

#[test]
fn damage_below_the_roots_is_found_by_verify_and_by_the_read_that_meets_it() {
    let (_dir, path) = temp();
    filled(&path, 2_000);
    let leaf: i64 = Connection::open(&path)
        .expect("raw")
        .query_row(
            "SELECT pageno FROM dbstat WHERE name = 'work' AND pagetype = 'leaf' \
             ORDER BY path LIMIT 1 OFFSET 3",
            [],
            |r| r.get(0),
        )
        .expect("a leaf below the root");
    let mut file = bytes(&path);
    let at = usize::try_from(leaf - 1).expect("page") * 4096;
    for byte in &mut file[at..at + 16] {
        *byte ^= 0xff;
    }
    std::fs::write(&path, &file).expect("damage");

    let b = open(&path, OpenMode::Existing).expect("the roots are sound");
    let err = b.verify().expect_err("quick_check finds it");
    assert_eq!(err.code(), "STORE_CORRUPT", "{err}");
    assert!(err.to_string().contains("damaged"), "{err}");
    let list = read(&b, |tx| {
        tx.list_work(&WorkFilter::default(), &PageRequest::first(5_000))
    });
    assert_eq!(list.expect_err("the scan meets it").code(), "STORE_CORRUPT");
    drop(b);
    assert_eq!(bytes(&path), file, "nothing was written");
}

#[test]
fn a_damaged_root_is_refused_by_a_writable_open() {
    let (_dir, path) = temp();
    filled(&path, 200);
    let root: i64 = Connection::open(&path)
        .expect("raw")
        .query_row(
            "SELECT rootpage FROM sqlite_schema WHERE name = 'grants'",
            [],
            |r| r.get(0),
        )
        .expect("root");
    let mut file = bytes(&path);
    let at = usize::try_from(root - 1).expect("page") * 4096;
    file[at] = 0x42;
    std::fs::write(&path, &file).expect("damage");
    let err = open(&path, OpenMode::Existing).err().expect("refused");
    assert_eq!(err.code(), "STORE_CORRUPT", "{err}");
    assert!(err.to_string().contains("root page of grants"), "{err}");
    assert_eq!(bytes(&path), file);
    sidecars_absent(&path);
}

/// A second handle opened and closed in a process that holds the store leaves the first
/// handle's locks in place: another process closing the store afterwards does not take
/// itself for the last connection and delete the WAL under the first handle, whose next
/// write would then be refused (`STORE_CORRUPT`, "the WAL file was removed"). Reading the
/// header through a descriptor of its own, closed again, used to drop every POSIX lock
/// this process held on the file (an authority's whole-file check beside its handle).
#[test]
fn a_second_handle_in_the_process_keeps_the_first_ones_locks() {
    let (_dir, path) = temp();
    let first = open(&path, OpenMode::ReadWrite).expect("open");
    write(&first, |tx| tx.adjust_counter("t|a", 1)).expect("first write");
    drop(open(&path, OpenMode::ReadOnly).expect("second handle"));
    // Another process opens the store, reads and closes: as the last connection it would
    // checkpoint and delete the WAL.
    let other = std::process::Command::new("python3")
        .args([
            "-c",
            "import sqlite3, sys\n\
             c = sqlite3.connect(sys.argv[1])\n\
             c.execute('SELECT count(*) FROM meta').fetchall()\n\
             c.close()",
        ])
        .arg(&path)
        .status()
        .expect("python3 runs");
    assert!(other.success());
    write(&first, |tx| tx.adjust_counter("t|a", 1))
        .expect("the first handle still writes into the store's own files");
}
