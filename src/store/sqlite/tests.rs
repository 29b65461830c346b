//! Provider-level tests: opening and refusing files, concurrency of initialisation, query
//! plans, rollback, and a differential check of every list against the memory reference.

use std::fmt::Debug;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Barrier};

use super::*;
use crate::model::event::DedupRecord;
use crate::model::schedule::Trigger;
use crate::model::work::{NewWork, WorkFilter};
use crate::model::workflow::ActionOutcome;
use crate::model::{
    AuditEntry, CatchUp, Checkpoint, DedupOutcome, Failure, FailureClass, Grant, HistoryRecord,
    Holder, Ingestion, InstanceRow, JournalEvent, Lease, PageRequest, Schedule, Takeover, WorkItem,
    WorkKind, WorkState, WriteRecord,
};
use crate::store::memory::MemoryBackend;

fn temp() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("store.db");
    (dir, path)
}

fn write(b: &dyn Backend, mut f: impl FnMut(&mut dyn Tx) -> Result<()>) -> Result<()> {
    b.write(&mut |tx| f(tx))
}

fn read<T>(b: &dyn Backend, mut f: impl FnMut(&mut dyn Tx) -> Result<T>) -> Result<T> {
    let mut out = None;
    b.read(&mut |tx| {
        out = Some(f(tx)?);
        Ok(())
    })?;
    Ok(out.expect("read ran"))
}

fn bytes(path: &Path) -> Vec<u8> {
    std::fs::read(path).expect("read file")
}

fn sidecars_absent(path: &Path) {
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
        conn.execute("UPDATE meta SET value = 7 WHERE key = 'schema_version'", [])
            .expect("bump");
    }
    let before = bytes(&path);
    for mode in [OpenMode::ReadWrite, OpenMode::ReadOnly] {
        let err = open(&path, mode).err().expect("refused");
        assert_eq!(err.code(), "STORE_CORRUPT");
        let text = err.to_string();
        assert!(
            text.contains(&format!(
                "store schema version 7 is newer than this build ({SCHEMA_VERSION}): upgrade leasehold"
            )),
            "{text}"
        );
        assert!(text.contains(&path.display().to_string()), "{text}");
        assert!(!text.contains('\n'));
    }
    assert_eq!(bytes(&path), before);
}

#[test]
fn garbage_file_is_refused_and_untouched() {
    let (_dir, path) = temp();
    let garbage: Vec<u8> = (0..10_000u32).map(|i| (i * 7 % 251) as u8).collect();
    std::fs::write(&path, &garbage).expect("write");
    for mode in [OpenMode::ReadWrite, OpenMode::ReadOnly] {
        let err = open(&path, mode).err().expect("refused");
        assert_eq!(err.code(), "STORE_CORRUPT", "{err}");
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
        "STORE_CORRUPT"
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
    assert_eq!(err.code(), "STORE_CORRUPT");
    assert!(err.to_string().contains("not a leasehold store"));
    assert_eq!(bytes(&path), before);
    sidecars_absent(&path);
}

#[test]
fn read_only_open() {
    let (dir, path) = temp();
    let missing = dir.path().join("missing.db");
    let err = open(&missing, OpenMode::ReadOnly).err().expect("refused");
    assert_eq!(err.code(), "STORE_UNAVAILABLE");
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

// --- query plans

fn plan(conn: &Connection, sql: &str, n: usize) -> String {
    let mut stmt = conn
        .prepare(&format!("EXPLAIN QUERY PLAN {sql}"))
        .expect("explain");
    let params: Vec<rusqlite::types::Value> = (0..n)
        .map(|_| rusqlite::types::Value::Text("x".into()))
        .collect();
    let rows: Vec<String> = stmt
        .query_map(rusqlite::params_from_iter(params), |r| {
            r.get::<_, String>(3)
        })
        .expect("query")
        .collect::<rusqlite::Result<_>>()
        .expect("rows");
    rows.join("; ")
}

fn assert_indexed(conn: &Connection, sql: &str, n: usize, index: &str) {
    let p = plan(conn, sql, n);
    assert!(p.contains(index), "{sql}\n  plan: {p}\n  expected {index}");
    assert!(!p.contains("TEMP B-TREE"), "{sql}\n  sorts: {p}");
    assert!(
        p.starts_with("SEARCH") || p.contains("USING INDEX") || p.contains("PRIMARY KEY"),
        "{sql}\n  scans: {p}"
    );
}

#[test]
fn main_queries_use_indexes() {
    let (_dir, path) = temp();
    let b = open(&path, OpenMode::ReadWrite).expect("open");
    let conn = b.lock();
    let cases: &[(&str, usize, &str)] = &[
        (
            "SELECT * FROM work INDEXED BY work_claim WHERE compat = ?1 AND due_at <= ?2 ORDER BY due_at, id LIMIT ?3",
            3,
            "work_claim",
        ),
        (
            "SELECT * FROM work INDEXED BY work_lapsed WHERE compat = ?1 AND state = 'claimed' AND due_at <= ?2 ORDER BY due_at, id LIMIT ?3",
            3,
            "work_lapsed",
        ),
        (
            "SELECT next_eligible_at FROM work INDEXED BY work_waiting WHERE state IN ('pending', 'retry') ORDER BY next_eligible_at LIMIT 1",
            0,
            "work_waiting",
        ),
        (
            "SELECT * FROM work INDEXED BY work_state WHERE state = ? AND id > ? ORDER BY id ASC LIMIT ?",
            3,
            "work_state",
        ),
        (
            "SELECT * FROM work WHERE owner_id = ? AND state = 'claimed' ORDER BY id ASC LIMIT ?",
            2,
            "work_claimed_by",
        ),
        (
            "SELECT * FROM work INDEXED BY work_state WHERE state = ? AND id < ? ORDER BY id DESC LIMIT ?",
            3,
            "work_state",
        ),
        (
            "SELECT * FROM work INDEXED BY work_owner WHERE owner_id = ? AND state IN (?, ?) AND kind = ? AND id > ? ORDER BY id ASC LIMIT ?",
            6,
            "work_owner",
        ),
        (
            "SELECT * FROM work INDEXED BY work_kind WHERE kind = ? ORDER BY id ASC LIMIT ?",
            2,
            "work_kind",
        ),
        (
            "SELECT * FROM work INDEXED BY work_compat WHERE compat = ? AND kind = ? ORDER BY id ASC LIMIT ?",
            3,
            "work_compat",
        ),
        (
            "SELECT * FROM work WHERE id > ? ORDER BY id ASC LIMIT ?",
            2,
            "INDEX",
        ),
        ("SELECT * FROM work ORDER BY id DESC LIMIT ?", 1, "INDEX"),
        // An id prefix is a key range, alone or under the leading index.
        (
            "SELECT * FROM work WHERE id >= ? AND id < ? AND id > ? ORDER BY id ASC LIMIT ?",
            4,
            "INDEX",
        ),
        (
            "SELECT * FROM work INDEXED BY work_state WHERE state = ? AND id >= ? AND id < ? ORDER BY id ASC LIMIT ?",
            4,
            "work_state",
        ),
        (
            "SELECT * FROM instances WHERE status = ? AND instance_id >= ? AND instance_id < ? ORDER BY instance_id ASC LIMIT ?",
            4,
            "instances_status",
        ),
        (
            "SELECT count(*) FROM leases WHERE owner_id = ?1 AND expires_at > ?2 AND released_at IS NULL",
            2,
            "leases_owner",
        ),
        (
            "SELECT name, value FROM counters WHERE name >= ?1 ORDER BY name",
            1,
            "PRIMARY KEY",
        ),
        (
            "SELECT * FROM journal WHERE event_type = ?1 AND seq > ?2 ORDER BY seq LIMIT ?3",
            3,
            "journal_type",
        ),
        (
            "SELECT * FROM journal WHERE seq > ?1 ORDER BY seq LIMIT ?2",
            2,
            "PRIMARY KEY",
        ),
        (
            "SELECT COALESCE(MAX(seq), 0) FROM journal WHERE event_type = ?1",
            1,
            "journal_type",
        ),
        (
            "SELECT * FROM grants WHERE resource_id = ?1 ORDER BY revision DESC, seq DESC LIMIT ?2",
            2,
            "grants_resource",
        ),
        (
            "SELECT * FROM grants WHERE revision > ? ORDER BY revision, seq LIMIT ?",
            2,
            "grants_revision",
        ),
        (
            "SELECT * FROM grants WHERE revision > ? AND resource_id = ? ORDER BY revision, seq LIMIT ?",
            3,
            "grants_resource",
        ),
        (
            "SELECT * FROM writes WHERE revision > ? ORDER BY revision, seq LIMIT ?",
            2,
            "writes_revision",
        ),
        (
            "SELECT * FROM writes WHERE revision > ? AND resource_id = ? ORDER BY revision, seq LIMIT ?",
            3,
            "writes_resource",
        ),
        (
            "SELECT * FROM grants WHERE from_owner IS NOT NULL AND at >= ?1 AND (at, seq) < (?2, ?3) ORDER BY at DESC, seq DESC LIMIT ?4",
            4,
            "grants_failovers",
        ),
        (
            "SELECT count(*) FROM grants WHERE from_owner IS NOT NULL AND at >= ?1",
            1,
            "grants_failovers",
        ),
        (
            "SELECT * FROM writes WHERE accepted = 0 AND at >= ?1 AND (at, seq) < (?2, ?3) ORDER BY at DESC, seq DESC LIMIT ?4",
            4,
            "writes_refused",
        ),
        (
            "SELECT count(*) FROM writes WHERE accepted = 0 AND at >= ?1",
            1,
            "writes_refused",
        ),
        (
            "SELECT * FROM schedules WHERE next_due <= ?1 ORDER BY next_due, schedule_id LIMIT ?2",
            2,
            "schedules_due",
        ),
        (
            "SELECT * FROM instances INDEXED BY instances_runnable WHERE compat = ?1 AND next_eligible_at <= ?2 ORDER BY next_eligible_at, instance_id LIMIT ?3",
            3,
            "instances_runnable",
        ),
        (
            "SELECT * FROM instances WHERE waiting_event = ? AND instance_id > ? ORDER BY instance_id ASC LIMIT ?",
            3,
            "instances_waiting",
        ),
        (
            "SELECT * FROM instances WHERE status = ? AND instance_id < ? ORDER BY instance_id DESC LIMIT ?",
            3,
            "instances_status",
        ),
        (
            "SELECT * FROM instances WHERE start_key = ?1",
            1,
            "instances_start_key",
        ),
        (
            "SELECT * FROM ingestions WHERE id > ? ORDER BY id ASC LIMIT ?",
            2,
            "PRIMARY KEY",
        ),
        (
            "SELECT * FROM history WHERE instance_id = ?1 ORDER BY position",
            1,
            "INDEX",
        ),
        (
            "SELECT * FROM grants WHERE revision = ? ORDER BY seq",
            1,
            "grants_revision",
        ),
        (
            "SELECT * FROM grants WHERE revision = ? AND resource_id = ? ORDER BY seq",
            2,
            "grants_resource",
        ),
        (
            "SELECT * FROM writes WHERE revision = ? ORDER BY seq",
            1,
            "writes_revision",
        ),
        (
            "SELECT * FROM writes WHERE revision = ? AND resource_id = ? ORDER BY seq",
            2,
            "writes_resource",
        ),
        (
            "SELECT * FROM dedup WHERE (source, external_id) > (?1, ?2)
             ORDER BY source, external_id LIMIT ?3",
            3,
            "PRIMARY KEY",
        ),
        (
            "SELECT * FROM idempotency WHERE key > ? ORDER BY key ASC LIMIT ?",
            2,
            "INDEX",
        ),
        (
            "SELECT * FROM action_outcomes WHERE invocation_id > ? ORDER BY invocation_id ASC LIMIT ?",
            2,
            "INDEX",
        ),
    ];
    for (sql, n, index) in cases {
        assert_indexed(&conn, sql, *n, index);
    }
}

// --- differential check against the memory reference

fn item(id: &str, compat: &str, at: i64) -> WorkItem {
    WorkItem::new(NewWork::effect(id, "h", "{}"), compat, at)
}

fn event(t: &str, at: i64) -> JournalEvent {
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

fn work_fixture(i: usize) -> WorkItem {
    let compat = ["c1", "c2", "c3"][i % 3];
    let mut w = item(&format!("w{:03}", (i * 37) % 101), compat, 1_000);
    w.kind = WorkKind::ALL[i % 3];
    w.next_eligible_at = 1_000 + ((i * 13) % 7) as i64 * 100;
    match i % 5 {
        0 => {}
        1 => {
            w.state = WorkState::Claimed;
            w.owner_id = Some(format!("o{}", i % 4));
            w.token = Some("t".into());
            w.generation = 2;
            w.lease_expires_at = Some(1_000 + ((i * 7) % 9) as i64 * 100);
        }
        2 => {
            w.state = WorkState::Retry;
            w.owner_id = Some(format!("o{}", i % 4));
            w.last_failure = Some(Failure {
                class: FailureClass::Retryable,
                code: "E".into(),
                message: "m".into(),
            });
        }
        3 => {
            w.state = WorkState::Succeeded;
            w.owner_id = Some(format!("o{}", i % 4));
            w.result = Some("{\"ok\":true}".into());
        }
        _ => {
            w.state = WorkState::Failed;
            w.last_failure = Some(Failure {
                class: FailureClass::Terminal,
                code: "T".into(),
                message: "x".into(),
            });
        }
    }
    w
}

fn instance(i: usize) -> InstanceRow {
    InstanceRow {
        instance_id: format!("i{:02}", (i * 7) % 23),
        workflow_id: "wf".into(),
        status: ["running", "waiting", "completed"][i % 3].into(),
        compat: ["c1", "c2"][i % 2].into(),
        instance_revision: i as u64,
        next_eligible_at: (i % 3 != 2).then_some(((i * 5) % 4) as i64 * 10),
        waiting_event: (i % 3 == 1).then(|| ["e1", "e2"][i % 2].to_owned()),
        principal: "p".into(),
        start_key: (i % 4 == 0).then(|| format!("k{i}")),
        state: "{}".into(),
        created_at: 1,
        updated_at: 2,
    }
}

fn populate(tx: &mut dyn Tx) -> Result<()> {
    tx.commit_revision()?;
    for i in 0..60 {
        let w = work_fixture(i);
        if !tx.insert_work(&w)? {
            tx.update_work(&w)?;
        }
    }
    // An update that moves an item out of and back into the claim index.
    let mut w = tx.work("w000")?.expect("w000");
    w.state = WorkState::Succeeded;
    tx.update_work(&w)?;
    w.state = WorkState::Pending;
    w.next_eligible_at = 50;
    tx.update_work(&w)?;
    for (name, d) in [
        ("work|a", 1),
        ("work|b", 2),
        ("work|a", 5),
        ("workx", 1),
        ("wf|x", -1),
        ("claims", 3),
        ("zero|net", 2),
        ("zero|net", -2),
        ("zero|nil", 0),
    ] {
        tx.adjust_counter(name, d)?;
    }
    for i in 0..12u64 {
        tx.put_lease(&Lease {
            resource_id: format!("r{:02}", (i * 5) % 13),
            owner_id: format!("o{}", i % 3),
            token: "t".into(),
            generation: i + 1,
            acquired_at: 0,
            expires_at: (i as i64) * 10,
            released_at: (i % 4 == 0).then_some(1),
            checkpoint: (i % 2 == 0).then(|| Checkpoint {
                generation: i,
                data: "d".into(),
                saved_at: 3,
            }),
        })?;
    }
    for i in 0..9 {
        let seq = tx.append_journal(&event(["a", "b"][i % 2], i as i64))?;
        tx.add_ingestion(&Ingestion {
            id: 0,
            at: i as i64,
            event_type: "a".into(),
            source: None,
            external_id: Some(format!("x{i}")),
            outcome: DedupOutcome::Accepted,
            seq: Some(seq),
        })?;
        tx.add_audit(&AuditEntry {
            id: 0,
            at: 1,
            actor: "me".into(),
            action: "a".into(),
            target: "t".into(),
            outcome: "ok".into(),
        })?;
    }
    for (source, external_id) in [("s", "x"), ("s", "a"), ("r", "z"), ("t", "")] {
        tx.put_dedup(&DedupRecord {
            source: source.into(),
            external_id: external_id.into(),
            fingerprint: "f".into(),
            seq: 1,
            first_seen_at: 2,
        })?;
    }
    for i in 0..8u64 {
        for r in ["ra", "rb"] {
            tx.add_grant(&Grant {
                revision: i / 2,
                resource_id: r.into(),
                generation: i,
                owner_id: "o".into(),
                how: "claim".into(),
                owner_compat: Some("c".into()),
                item_compat: None,
                at: i as i64,
                took_over: (i % 3 == 0).then(|| Takeover {
                    from_owner: "p".into(),
                    from_generation: i,
                    lapsed_ms: 5 - i as i64,
                }),
            })?;
            tx.add_write(&WriteRecord {
                revision: i / 2,
                resource_id: r.into(),
                generation: i,
                owner_id: "o".into(),
                verb: "complete".into(),
                accepted: i % 2 == 0,
                refusal: (i % 2 == 1).then(|| "WORK_FENCED".into()),
                detail: "{}".into(),
                at: i as i64,
                holder: (i % 4 != 3).then(|| Holder {
                    owner_id: (i % 4 != 1).then(|| "h".into()),
                    generation: i + 1,
                }),
            })?;
        }
    }
    tx.trim_history(1, 1)?;
    for i in 0..6 {
        tx.put_schedule(&Schedule {
            schedule_id: format!("s{i}"),
            trigger: if i % 2 == 0 {
                Trigger::Interval { every_ms: 10 }
            } else {
                Trigger::Delay { after_ms: 5 }
            },
            catch_up: [CatchUp::Latest, CatchUp::All, CatchUp::Last(3)][i % 3],
            handler: "h".into(),
            payload: "{}".into(),
            compat: "c1".into(),
            last_due: (i % 2 == 0).then_some(1),
            next_due: ((i * 3) % 4) as i64,
            created_at: 0,
        })?;
    }
    for i in 0..23 {
        let row = instance(i);
        if tx.instance(&row.instance_id)?.is_none() {
            tx.insert_instance(&row)?;
        } else {
            tx.update_instance(&row)?;
        }
    }
    for p in [2u64, 1, 3] {
        tx.add_history(&HistoryRecord {
            instance_id: "i00".into(),
            position: p,
            instance_revision: p,
            kind: "k".into(),
            at: 0,
            step_id: None,
            activation_id: Some("a".into()),
            detail: "{}".into(),
        })?;
    }
    for id in ["i/a", "i/b", "h/a"] {
        tx.put_action_outcome(&ActionOutcome {
            invocation_id: id.into(),
            attempt: 2,
            outcome: "succeeded".into(),
            detail: "1".into(),
            at: 3,
        })?;
    }
    for (key, at) in [("k", 1), ("j", 2), ("l", 3)] {
        tx.put_idempotent_answer(key, "answer", at)?;
    }
    Ok(())
}

fn pages() -> Vec<PageRequest> {
    let mut out = vec![
        PageRequest::first(5),
        PageRequest::last(5),
        PageRequest::first(0),
        PageRequest::first(1000),
    ];
    for key in [
        "w010",
        "w050",
        "w0",
        "z",
        "",
        "r05",
        "i10",
        "s2",
        "3",
        "00000000000000000004",
        "x",
    ] {
        out.push(PageRequest::after(key, 4));
        out.push(PageRequest::before(key, 4));
    }
    out
}

fn same<T: PartialEq + Debug>(
    mem: &dyn Backend,
    sql: &dyn Backend,
    what: &str,
    mut q: impl FnMut(&mut dyn Tx) -> Result<T>,
) {
    let a = read(mem, &mut q).expect("memory read");
    let b = read(sql, &mut q).expect("sqlite read");
    assert_eq!(a, b, "{what}");
}

#[test]
fn every_read_matches_the_memory_reference() {
    let (_dir, path) = temp();
    let sql = open(&path, OpenMode::ReadWrite).expect("open");
    let mem = MemoryBackend::new();
    write(&mem, populate).expect("memory populate");
    write(&sql, populate).expect("sqlite populate");
    let (mem, sql): (&dyn Backend, &dyn Backend) = (&mem, &sql);

    same(mem, sql, "revision", |tx| tx.revision());
    for prefix in ["", "work|", "work", "wf|", "claims", "zz"] {
        same(mem, sql, &format!("counters {prefix}"), |tx| {
            tx.counters(prefix)
        });
    }
    for now in [0, 1_000, 1_250, 1_600, 5_000] {
        for compat in ["c1", "c2", "c3", "none"] {
            for n in [0, 3, 100] {
                same(mem, sql, &format!("claimable {compat} {now} {n}"), |tx| {
                    tx.claimable_work(compat, now, n)
                });
            }
        }
        same(mem, sql, &format!("live leases {now}"), |tx| {
            (0..3)
                .map(|o| tx.live_lease_count(&format!("o{o}"), now / 100))
                .collect::<Result<Vec<_>>>()
        });
        same(mem, sql, &format!("due schedules {now}"), |tx| {
            tx.due_schedules(now / 1_000, 3)
        });
    }
    same(mem, sql, "oldest waiting", |tx| tx.oldest_waiting_work());
    let filters = vec![
        WorkFilter::default(),
        WorkFilter {
            states: vec![WorkState::Pending],
            ..WorkFilter::default()
        },
        WorkFilter {
            states: vec![WorkState::Retry, WorkState::Claimed, WorkState::Retry],
            ..WorkFilter::default()
        },
        WorkFilter {
            kind: Some(WorkKind::Schedule),
            ..WorkFilter::default()
        },
        WorkFilter {
            owner: Some("o1".into()),
            ..WorkFilter::default()
        },
        WorkFilter {
            owner: Some("o2".into()),
            states: vec![WorkState::Retry, WorkState::Succeeded],
            ..WorkFilter::default()
        },
        WorkFilter {
            compats: vec!["c2".into(), "c3".into()],
            ..WorkFilter::default()
        },
        WorkFilter {
            compats: vec!["c1".into()],
            kind: Some(WorkKind::Effect),
            ..WorkFilter::default()
        },
        WorkFilter {
            states: vec![WorkState::Pending, WorkState::Failed],
            kind: Some(WorkKind::Cursor),
            compats: vec!["c1".into(), "c2".into()],
            owner: None,
            id_prefix: None,
        },
        // Id prefixes: alone, under each leading index, empty and past every key.
        WorkFilter {
            id_prefix: Some("w00".into()),
            ..WorkFilter::default()
        },
        WorkFilter {
            id_prefix: Some("w01".into()),
            states: vec![WorkState::Pending, WorkState::Retry],
            ..WorkFilter::default()
        },
        WorkFilter {
            id_prefix: Some("w0".into()),
            owner: Some("o1".into()),
            ..WorkFilter::default()
        },
        WorkFilter {
            id_prefix: Some("w02".into()),
            compats: vec!["c1".into()],
            ..WorkFilter::default()
        },
        WorkFilter {
            id_prefix: Some(String::new()),
            ..WorkFilter::default()
        },
        WorkFilter {
            id_prefix: Some("\u{10ffff}".into()),
            ..WorkFilter::default()
        },
    ];
    for (i, filter) in filters.iter().enumerate() {
        for page in pages() {
            same(mem, sql, &format!("list_work #{i} {page:?}"), |tx| {
                tx.list_work(filter, &page)
            });
        }
    }
    for page in pages() {
        same(mem, sql, &format!("leases {page:?}"), |tx| {
            tx.list_leases(&page)
        });
        same(mem, sql, &format!("ingestions {page:?}"), |tx| {
            tx.list_ingestions(&page)
        });
        same(mem, sql, &format!("audit {page:?}"), |tx| {
            tx.list_audit(&page)
        });
        same(mem, sql, &format!("schedules {page:?}"), |tx| {
            tx.list_schedules(&page)
        });
        same(mem, sql, &format!("instances {page:?}"), |tx| {
            tx.list_instances(None, None, &page)
        });
        for status in ["running", "completed", "none"] {
            same(mem, sql, &format!("instances {status} {page:?}"), |tx| {
                tx.list_instances(Some(status), None, &page)
            });
            for prefix in ["i0", "i1", "i22", "j"] {
                same(
                    mem,
                    sql,
                    &format!("instances {status} {prefix} {page:?}"),
                    |tx| tx.list_instances(Some(status), Some(prefix), &page),
                );
                same(mem, sql, &format!("instances {prefix} {page:?}"), |tx| {
                    tx.list_instances(None, Some(prefix), &page)
                });
            }
        }
    }
    for after in [None, Some("i05"), Some("i22")] {
        for n in [0, 2, 50] {
            for e in ["e1", "e2", "e3"] {
                same(mem, sql, &format!("waiting {e} {after:?} {n}"), |tx| {
                    tx.instances_waiting_for(e, after, n)
                });
            }
        }
    }
    for now in [-1, 0, 10, 20, 100] {
        for compat in ["c1", "c2"] {
            same(mem, sql, &format!("runnable {compat} {now}"), |tx| {
                tx.runnable_instances(compat, now, 4)
            });
        }
    }
    // Incident lists: positions number rows per provider, so only the rows are compared.
    for since in [-1, 0, 1, 4, 7, 8] {
        for n in [0, 1, 2, 100] {
            same(mem, sql, &format!("failovers {since} {n}"), |tx| {
                let rows = tx.failovers(since, None, n)?;
                Ok((
                    rows.into_iter().map(|r| r.1).collect::<Vec<_>>(),
                    tx.count_failovers(since)?,
                ))
            });
            same(mem, sql, &format!("refused {since} {n}"), |tx| {
                let rows = tx.refused_writes(since, None, n)?;
                Ok((
                    rows.into_iter().map(|r| r.1).collect::<Vec<_>>(),
                    tx.count_refused_writes(since)?,
                ))
            });
        }
    }
    for after in [0, 1, 2, 3, u64::MAX - 1, u64::MAX] {
        for resource in [None, Some("ra"), Some("rz")] {
            for n in [0, 1, 3, 5, 100] {
                same(
                    mem,
                    sql,
                    &format!("grants {resource:?} {after} {n}"),
                    |tx| tx.grants(resource, after, n),
                );
                same(
                    mem,
                    sql,
                    &format!("writes {resource:?} {after} {n}"),
                    |tx| tx.writes(resource, after, n),
                );
            }
        }
    }
    for after in [0, 3, 9] {
        for t in [None, Some("a"), Some("b")] {
            same(mem, sql, &format!("journal {after} {t:?}"), |tx| {
                tx.journal_after(after, t, 3)
            });
        }
    }
    same(mem, sql, "journal high water", |tx| tx.journal_high_water());
    for after in [None, Some(("s", "a")), Some(("r", "")), Some(("t", ""))] {
        for n in [0, 1, 2, 10] {
            same(mem, sql, &format!("dedup {after:?} {n}"), |tx| {
                tx.list_dedup(after, n)
            });
        }
    }
    for after in [None, Some(""), Some("i/a"), Some("k"), Some("z")] {
        for n in [1, 2, 10] {
            same(mem, sql, &format!("answers {after:?} {n}"), |tx| {
                tx.list_idempotent_answers(after, n)
            });
            same(mem, sql, &format!("outcomes {after:?} {n}"), |tx| {
                tx.list_action_outcomes(after, n)
            });
        }
    }
    same(mem, sql, "point reads", |tx| {
        Ok((
            tx.work("w000")?,
            tx.lease("r00")?,
            tx.dedup("s", "x")?,
            tx.dedup("s", "y")?,
            tx.schedule("s1")?,
            tx.instance("i07")?,
            tx.instance_by_start_key("k4")?,
            tx.history("i00")?,
            tx.action_outcome("i/a")?,
            tx.idempotent_answer("k")?,
            tx.idempotent_answer("nope")?,
        ))
    });
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
        (ffi::SQLITE_CANTOPEN, "STORE_UNAVAILABLE"),
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
const WORK_COLUMNS: [&str; 23] = [
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
];

#[test]
fn work_columns_are_in_the_order_rows_are_mapped_by_position() {
    let (_dir, path) = temp();
    let backend = open(&path, OpenMode::ReadWrite).expect("open");
    let conn = backend.lock();
    let names: Vec<String> = conn
        .prepare("SELECT name FROM pragma_table_info('work') ORDER BY cid")
        .and_then(|mut s| s.query_map([], |r| r.get(0))?.collect())
        .expect("table info");
    assert_eq!(names, WORK_COLUMNS);
    let encoded: Vec<&str> = crate::store::sql::encode::WORK.names().collect();
    assert_eq!(encoded, WORK_COLUMNS);
}
