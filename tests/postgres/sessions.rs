//! Sessions: one killed inside a transaction is retried on a new connection, and a reader
//! sees a commit PostgreSQL pushes without polling.

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use leasehold::model::work::NewWork;
use leasehold::store::Backend;
use leasehold::store::postgres::PostgresBackend;
use leasehold::store::url::{self, OpenMode};

use crate::support::postgres::database;

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
