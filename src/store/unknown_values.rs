//! A stored value outside this build's vocabulary is reported, never skipped or defaulted:
//! a counter name the overview does not know, and a grant kind, write verb or instance
//! status a SQL row carries, each answer `STORE_CORRUPT` naming the value.

use std::sync::Arc;

use super::backend::{Backend, Tx};
use super::memory::MemoryBackend;
use super::sqlite::SqliteBackend;
use super::url::OpenMode;
use super::{Counter, Store};
use crate::clock::ManualClock;
use crate::error::{Error, Result};
use crate::ids::SeededIds;
use crate::model::{
    Grant, GrantKind, InstanceRow, InstanceStatus, PageRequest, WriteRecord, WriteVerb,
};

fn store(backend: Arc<dyn Backend>) -> Store {
    Store::new(
        backend,
        Arc::new(ManualClock::new(1_000)),
        Arc::new(SeededIds::new(7)),
    )
}

fn write(backend: &dyn Backend, mut f: impl FnMut(&mut dyn Tx) -> Result<()>) {
    backend
        .write(&mut |tx| {
            tx.commit_revision()?;
            f(tx)
        })
        .expect("write");
}

fn corrupt_naming<T: std::fmt::Debug>(answer: Result<T>, value: &str) {
    let err = answer.expect_err("an unknown value is an error");
    assert!(matches!(err, Error::Corrupt(_)), "{err}");
    assert!(err.to_string().contains(value), "{err} names {value}");
}

#[test]
fn the_overview_refuses_a_counter_it_does_not_know() {
    let backend = Arc::new(MemoryBackend::new());
    let store = store(backend.clone());
    write(backend.as_ref(), |tx| {
        Counter::Claims.adjust(tx, 2)?;
        Counter::Writes { accepted: false }.adjust(tx, 1)
    });
    let overview = store.overview().expect("known counters read");
    assert_eq!((overview.claims, overview.writes_refused), (2, 1));

    write(backend.as_ref(), |tx| {
        tx.adjust_counter("work|job|pending|c1", 1)
    });
    corrupt_naming(store.overview(), "work|job|pending|c1");
}

#[test]
fn sql_rows_with_an_unknown_kind_verb_or_status_are_corrupt() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("store.db");
    let backend = Arc::new(SqliteBackend::open(&path, OpenMode::ReadWrite).expect("open"));
    let store = store(backend.clone());
    write(backend.as_ref(), |tx| {
        tx.add_grant(Grant {
            revision: 1,
            resource_id: "r".into(),
            generation: 1,
            owner_id: "a".into(),
            how: GrantKind::Acquire,
            owner_compat: None,
            item_compat: None,
            at: 0,
            took_over: None,
        })?;
        tx.add_write(WriteRecord {
            revision: 1,
            resource_id: "r".into(),
            generation: 1,
            owner_id: "a".into(),
            verb: WriteVerb::Renew,
            accepted: true,
            refusal: None,
            detail: "{}".into(),
            at: 0,
            holder: None,
        })?;
        tx.insert_instance(&InstanceRow {
            instance_id: "wf-1".into(),
            workflow_id: "w".into(),
            status: InstanceStatus::Running,
            compat: "c".into(),
            instance_revision: 1,
            next_eligible_at: None,
            waiting_event: None,
            principal: "p".into(),
            start_key: None,
            state: "{}".into(),
            created_at: 0,
            updated_at: 0,
        })
    });
    let (grants, writes) = store
        .ownership_history(None, 0, 10)
        .expect("known values read");
    assert_eq!(
        (grants[0].how, writes[0].verb),
        (GrantKind::Acquire, WriteVerb::Renew)
    );
    let page = PageRequest::first(10);
    assert_eq!(
        store.list_instances(None, &page).expect("reads").rows[0].status,
        InstanceStatus::Running
    );

    let sql = rusqlite::Connection::open(&path).expect("open the file");
    sql.execute("UPDATE grants SET how = 'borrow'", [])
        .expect("plant");
    corrupt_naming(store.ownership_history(None, 0, 10), "borrow");
    sql.execute("UPDATE grants SET how = 'acquire'", [])
        .expect("restore");
    sql.execute("UPDATE writes SET verb = 'polish'", [])
        .expect("plant");
    corrupt_naming(store.ownership_history(None, 0, 10), "polish");
    sql.execute("UPDATE instances SET status = 'paused'", [])
        .expect("plant");
    corrupt_naming(store.list_instances(None, &page), "paused");
}
