//! The store's schema: created only by `leasehold init`, and older schemas upgraded in place
//! by a read-write open.

use crate::support::leasehold;

use leasehold::Store;
use leasehold::clock::ManualClock;
use leasehold::model::PageRequest;
use leasehold::model::work::NewWork;
use leasehold::store::url::{self, OpenMode};

use crate::support::authorities::{HANDLER, compat};
use crate::support::open_postgres;
use crate::support::postgres::{Database, database};

use super::open_err;

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
    let clock = ManualClock::new(crate::support::START);
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
    let clock = ManualClock::new(crate::support::START);
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
    let clock = ManualClock::new(crate::support::START);
    let store = open_postgres(db.url(), &clock, OpenMode::ReadWrite).unwrap();
    let a = Authority {
        instance_id: "auth-1".into(),
        compat: "k".into(),
        build: "old".into(),
        config: "{}".into(),
        started_at: crate::support::START,
        heartbeat_at: crate::support::START,
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
        since: crate::support::START,
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
    let clock = ManualClock::new(crate::support::START);
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
        "DROP FUNCTION leasehold_enqueue; DROP TABLE intake, intake_refused, attempt_errors;
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
        Some(crate::support::START)
    );
    let mut app = postgres::Client::connect(db.url(), postgres::NoTls).unwrap();
    app.batch_execute("SELECT leasehold_enqueue('fx', 'send-email', handler_version => '1.0.0')")
        .unwrap();
    let claimed = store.claim_batch("a", compat(), 10, 1_000).unwrap();
    assert_eq!(claimed.len(), 1);
    assert_eq!(claimed[0].id, "fx");
}

/// A database created by schema 7 (before attempt errors, and before handlers could be
/// paused or rate-limited fleet-wide) is refused read-only and upgraded in place by a
/// read-write open: an old failed item has no attempt errors and its next failure is
/// recorded; its items stay claimable, and a pause and a rate then hold them.
#[test]
fn a_schema_7_database_is_upgraded_in_place() {
    use leasehold::model::Rate;
    use leasehold::rules::handler::HandlerControl;
    use leasehold::store::ClaimBudget;
    let db = database();
    let clock = ManualClock::new(crate::support::START);
    let store = open_postgres(db.url(), &clock, OpenMode::ReadWrite).unwrap();
    for id in ["fx", "a", "b", "c"] {
        store
            .enqueue(NewWork::effect(id, HANDLER, "{}"), &compat())
            .unwrap();
    }
    let failure = leasehold::model::Failure {
        class: leasehold::model::FailureClass::Retryable,
        code: "E".into(),
        message: "m".into(),
    };
    let claimed = store.claim("fx", "a", compat(), 1_000).unwrap();
    let failed = store
        .fail("fx", "a", claimed.generation, failure.clone())
        .unwrap();
    drop(store);
    let store = upgraded(
        &db,
        &clock,
        "DROP TABLE attempt_errors, handler_pauses, handler_rates;
             UPDATE meta SET value = 7 WHERE key = 'schema_version';",
    );
    assert!(store.attempt_errors("fx").unwrap().is_empty());
    assert!(store.paused_handlers().unwrap().is_empty(), "none paused");
    store
        .control_handler(HANDLER, HandlerControl::Pause, "alice", "")
        .unwrap();
    assert!(
        store
            .claim_batch("o", compat(), 10, 1_000)
            .unwrap()
            .is_empty()
    );
    store
        .control_handler(HANDLER, HandlerControl::Resume, "alice", "")
        .unwrap();
    let rate: Rate = "2/1s".parse().unwrap();
    let budget = ClaimBudget::new(10).with_rate(HANDLER, rate);
    let claimed = store
        .claim_work_within("o", compat(), &budget, 1_000)
        .unwrap();
    assert_eq!(claimed.len(), 2, "the rate holds");
    clock.set(failed.next_eligible_at);
    let again = store.claim("fx", "b", compat(), 1_000).unwrap();
    store.fail("fx", "b", again.generation, failure).unwrap();
    let errors = store.attempt_errors("fx").unwrap();
    assert_eq!(
        errors
            .iter()
            .map(|e| (e.attempt, e.owner_id.as_str()))
            .collect::<Vec<_>>(),
        [(2, "b")]
    );
}

/// A database created by schema 8 (before the chain over the history) is refused
/// read-only and upgraded in place by a read-write open: its chain starts at the first
/// commit after the upgrade and verifies.
#[test]
fn a_schema_8_database_is_upgraded_in_place() {
    let db = database();
    let clock = ManualClock::new(crate::support::START);
    let store = open_postgres(db.url(), &clock, OpenMode::ReadWrite).unwrap();
    for id in ["a", "b"] {
        store
            .enqueue(NewWork::effect(id, HANDLER, "{}"), &compat())
            .unwrap();
    }
    let before = store.revision().unwrap();
    drop(store);
    let store = upgraded(
        &db,
        &clock,
        "DROP TABLE chain;
             UPDATE meta SET value = 8 WHERE key = 'schema_version';",
    );
    assert_eq!(store.chain_link(before).unwrap(), None);
    let claimed = store.claim("a", "o", compat(), 1_000).unwrap();
    store.complete("a", "o", claimed.generation, None).unwrap();
    let report = store.verify_chain().unwrap();
    assert!(report.breaks.is_empty(), "{:?}", report.breaks);
    assert_eq!(report.span, Some((before + 1, before + 2)));
}

/// A fresh database holding the pending items `a`, `b` and `c`, with a handle on it.
fn three_items() -> (Database, ManualClock, Store) {
    let db = database();
    let clock = ManualClock::new(crate::support::START);
    let store = open_postgres(db.url(), &clock, OpenMode::ReadWrite).unwrap();
    for id in ["a", "b", "c"] {
        store
            .enqueue(NewWork::effect(id, HANDLER, "{}"), &compat())
            .unwrap();
    }
    (db, clock, store)
}

/// A database created by schema 9 (claims in the claim lanes) is upgraded in place: its
/// lane index leaves claims out, and a claim batch takes the lapsed claim first, then the
/// lane's pending items.
#[test]
fn a_schema_9_database_is_upgraded_in_place() {
    let (db, clock, store) = three_items();
    store.claim("b", "dead", compat(), 1_000).unwrap();
    drop(store);
    let store = upgraded(
        &db,
        &clock,
        "DROP INDEX work_lane;
             CREATE INDEX work_lane ON work (compat, kind, handler, priority DESC, due_at, id)
                 WHERE due_at IS NOT NULL;
             UPDATE meta SET value = 9 WHERE key = 'schema_version';",
    );
    let lane: String = postgres::Client::connect(db.url(), postgres::NoTls)
        .unwrap()
        .query_one(
            "SELECT indexdef FROM pg_indexes WHERE indexname = 'work_lane'",
            &[],
        )
        .unwrap()
        .get(0);
    assert!(lane.contains("<> 'claimed'"), "{lane}");
    clock.advance(60_000);
    let batch = store.claim_batch("heir", compat(), 3, 30_000).unwrap();
    let ids: Vec<&str> = batch.iter().map(|w| w.id.as_str()).collect();
    assert_eq!(ids, ["b", "a", "c"], "the lapse first, then the lane");
    assert_eq!(batch[0].generation, 2, "taken over");
}

/// A database of schema 10 counted a person's discards with the failures: the upgrade
/// moves them to a count of their own, per kind and build, and the counts are the rows'.
#[test]
fn a_schema_10_database_is_upgraded_in_place_and_counts_its_discards_apart() {
    let (db, clock, store) = three_items();
    let b = store.claim("b", "w", compat(), 1_000).unwrap();
    let failure = leasehold::model::Failure {
        class: leasehold::model::FailureClass::Terminal,
        code: "NO".into(),
        message: "refused".into(),
    };
    store.fail("b", "w", b.generation, failure).unwrap();
    store.discard_work("a", "op", "not needed").unwrap();
    let before = leasehold::testing::reads::counts_match_rows(&store).1;
    drop(store);
    let failed = format!("work|effect|failed|{}", compat());
    let store = upgraded(
        &db,
        &clock,
        &format!(
            "UPDATE counters SET value = value + 1 WHERE name = '{failed}';
             DELETE FROM counters WHERE name LIKE 'work|%|discarded|%';
             UPDATE meta SET value = 10 WHERE key = 'schema_version';"
        ),
    );
    assert_eq!(
        leasehold::testing::reads::counts_match_rows(&store).1,
        before
    );
    let discarded: Vec<_> = store
        .overview()
        .unwrap()
        .work
        .into_iter()
        .filter(|c| c.discarded && c.count > 0)
        .map(|c| (c.name(), c.count))
        .collect();
    assert_eq!(discarded, [("discarded", 1)]);
}

/// A newer build upgrading the database under an open handle: the handle's next write and
/// read are refused in one line, as an open would be, and the write commits nothing.
#[test]
fn a_database_upgraded_by_a_newer_build_under_an_open_handle_refuses_it() {
    let db = database();
    let clock = ManualClock::new(crate::support::START);
    let store = open_postgres(db.url(), &clock, OpenMode::ReadWrite).unwrap();
    store
        .enqueue(NewWork::effect("a", HANDLER, "{}"), &compat())
        .unwrap();
    let newer = leasehold::store::postgres::SCHEMA_VERSION + 1;
    let mut admin = postgres::Client::connect(db.url(), postgres::NoTls).unwrap();
    admin
        .execute(
            "UPDATE meta SET value = $1 WHERE key = 'schema_version'",
            &[&newer],
        )
        .unwrap();
    let revision = |admin: &mut postgres::Client| -> i64 {
        admin
            .query_one("SELECT value FROM meta WHERE key = 'revision'", &[])
            .unwrap()
            .get(0)
    };
    let before = revision(&mut admin);
    let write = store
        .enqueue(NewWork::effect("b", HANDLER, "{}"), &compat())
        .unwrap_err();
    let read = store.work("a").unwrap_err();
    for err in [write, read] {
        assert_eq!(err.code(), "STORE_REFUSED", "{err}");
        let text = err.to_string();
        assert!(
            text.contains(&format!(
                "store schema version {newer} is newer than this build"
            )),
            "{text}"
        );
        assert!(!text.contains('\n'), "{text}");
    }
    assert_eq!(revision(&mut admin), before, "nothing committed");
    let b: i64 = admin
        .query_one("SELECT count(*) FROM work WHERE id = 'b'", &[])
        .unwrap()
        .get(0);
    assert_eq!(b, 0);
}

/// An upgrade waits for the write lock before it changes anything, so a write of an older
/// build under way commits before it, and every later one reads the new version under
/// the lock and is refused.
#[test]
fn an_upgrade_waits_for_the_writes_under_way() {
    let db = database();
    let clock = ManualClock::new(crate::support::START);
    drop(open_postgres(db.url(), &clock, OpenMode::ReadWrite).unwrap());
    let mut admin = postgres::Client::connect(db.url(), postgres::NoTls).unwrap();
    let older = leasehold::store::postgres::SCHEMA_VERSION - 1;
    admin
        .execute(
            "UPDATE meta SET value = $1 WHERE key = 'schema_version'",
            &[&older],
        )
        .unwrap();
    // A writer holding the write lock, as an older build's transaction does.
    admin
        .batch_execute("SELECT pg_advisory_lock(7810756276994469740)")
        .unwrap();
    let url = db.url().to_owned();
    let upgrader = std::thread::spawn({
        let clock = clock.clone();
        move || open_postgres(&url, &clock, OpenMode::ReadWrite).map(drop)
    });
    let waiting = |admin: &mut postgres::Client| {
        admin
            .query_one(
                "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted                    AND objid::bigint = $1",
                &[&i64::from(7_810_756_276_994_469_740_u64 as u32)],
            )
            .unwrap()
            .get::<_, i64>(0)
            > 0
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    crate::support::wait::wait_until("the upgrade waits for the write lock", deadline, || {
        waiting(&mut admin)
    });
    let version = |admin: &mut postgres::Client| -> i64 {
        admin
            .query_one("SELECT value FROM meta WHERE key = 'schema_version'", &[])
            .unwrap()
            .get(0)
    };
    assert_eq!(
        version(&mut admin),
        older,
        "nothing upgraded under the writer"
    );
    admin
        .batch_execute("SELECT pg_advisory_unlock(7810756276994469740)")
        .unwrap();
    upgrader.join().unwrap().unwrap();
    assert_eq!(
        version(&mut admin),
        leasehold::store::postgres::SCHEMA_VERSION
    );
}

/// An index added since the schema's version is created by the next read-write open of a
/// store without it, and the store keeps its version: an older build still opens it.
#[test]
fn a_read_write_open_adds_the_indexes_added_since_the_schemas_version() {
    let db = database();
    let clock = ManualClock::new(crate::support::START);
    drop(open_postgres(db.url(), &clock, OpenMode::ReadWrite).unwrap());
    let mut admin = postgres::Client::connect(db.url(), postgres::NoTls).unwrap();
    let mut has_index = || -> bool {
        admin
            .query_one(
                "SELECT to_regclass('schedules_due_unpaused') IS NOT NULL",
                &[],
            )
            .unwrap()
            .get(0)
    };
    assert!(has_index());
    postgres::Client::connect(db.url(), postgres::NoTls)
        .unwrap()
        .batch_execute("DROP INDEX schedules_due_unpaused")
        .unwrap();
    drop(open_postgres(db.url(), &clock, OpenMode::ReadOnly).unwrap());
    assert!(!has_index(), "a read-only open changes nothing");
    drop(open_postgres(db.url(), &clock, OpenMode::ReadWrite).unwrap());
    assert!(has_index());
    let version: i64 = postgres::Client::connect(db.url(), postgres::NoTls)
        .unwrap()
        .query_one("SELECT value FROM meta WHERE key = 'schema_version'", &[])
        .unwrap()
        .get(0);
    assert_eq!(version, leasehold::store::postgres::SCHEMA_VERSION);
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
