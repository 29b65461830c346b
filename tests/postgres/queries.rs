//! Connections and statements: the pool opens one connection per concurrent caller at most,
//! and every statement is served by an index.

use crate::support::leasehold;

use std::collections::BTreeMap;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use leasehold::model::work::WorkFilter;
use leasehold::model::{PageRequest, WorkState};
use leasehold::store::Backend;
use leasehold::store::postgres::PostgresBackend;
use leasehold::store::url::{self, OpenMode};

use crate::support::authorities::{Authorities, compat};
use crate::support::postgres::database;
use crate::support::wait::wait_until;

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
    let listed = store
        .list_work(&WorkFilter::default(), &PageRequest::first(3))
        .unwrap();
    for item in &listed.rows {
        run(&["work", "show", "--store", url, &item.id, "--json"]);
    }
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
