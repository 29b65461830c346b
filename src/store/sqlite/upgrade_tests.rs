//! A store written by an older schema opens in place: schema 1 (before failovers and
//! holders were recorded), schema 2 (before work checkpoints), schema 3 (before
//! priorities and per-lane claim indexes), schema 4 (before authorities published what
//! they hold in recovery), schema 5 (before the idempotency key index, when a key could
//! be held twice), schema 6 (before schedules could be paused), schema 7 (before
//! handlers could be paused or rate-limited fleet-wide), schema 8 (before the chain over
//! the history), schema 9 (before the history lost its revision indexes and the state and
//! owner indexes their claimed items), schema 10 (claims in the claim lanes) and schema 11
//! (a person's discards counted with the failures). Its columns and rows
//! stay, the new facts read as unknown (or their default), new rows carry them.

use std::path::Path;
use std::sync::Arc;

use rusqlite::Connection;

use super::tests::assert_positional_columns;
use super::{OpenMode, SCHEMA_VERSION, SqliteBackend};
use crate::clock::ManualClock;
use crate::ids::SeededIds;
use crate::model::work::{NewWork, WorkFilter};
use crate::model::{Authority, PageRequest, Published, Recovering, WorkState};
use crate::store::{Keyed, Store};

const NO_KEY: Keyed<'static> = Keyed { key: None };

fn store(path: &Path, clock: &ManualClock) -> Store {
    let backend = SqliteBackend::open(path, OpenMode::ReadWrite).expect("open");
    Store::new(
        Arc::new(backend),
        Arc::new(clock.clone()),
        Arc::new(SeededIds::new(7)),
    )
}

/// Turns a store back into what schema 11 kept: discarded items counted with the
/// failures, version 11.
fn downgrade_to_schema_11(path: &Path) {
    let conn = Connection::open(path).expect("raw");
    conn.execute_batch(
        "INSERT INTO counters (name, value)
             SELECT replace(name, '|discarded|', '|failed|'), value FROM counters
             WHERE name LIKE 'work|%|discarded|%'
             ON CONFLICT (name) DO UPDATE SET value = value + excluded.value;
         DELETE FROM counters WHERE name LIKE 'work|%|discarded|%';
         UPDATE meta SET value = 11 WHERE key = 'schema_version';",
    )
    .expect("downgrade");
}

/// Turns a fresh store back into what schema 10 created: claims in the claim lanes,
/// version 10.
fn downgrade_to_schema_10(path: &Path) {
    downgrade_to_schema_11(path);
    let conn = Connection::open(path).expect("raw");
    conn.execute_batch(
        "DROP INDEX work_lane;
         CREATE INDEX work_lane ON work (compat, kind, handler, priority DESC, due_at, id)
             WHERE due_at IS NOT NULL;
         UPDATE meta SET value = 10 WHERE key = 'schema_version';",
    )
    .expect("downgrade");
}

/// Turns a fresh store back into what schema 9 created: the history's revision indexes,
/// and the state and owner indexes over every item, version 9.
fn downgrade_to_schema_9(path: &Path) {
    downgrade_to_schema_10(path);
    let conn = Connection::open(path).expect("raw");
    conn.execute_batch(
        "CREATE INDEX grants_revision ON grants (revision);
         CREATE INDEX writes_revision ON writes (revision);
         DROP INDEX work_state;
         DROP INDEX work_owner;
         CREATE INDEX work_state ON work (state, id);
         CREATE INDEX work_owner ON work (owner_id, id);
         UPDATE meta SET value = 9 WHERE key = 'schema_version';",
    )
    .expect("downgrade");
}

/// Turns a fresh store back into what schema 8 created: no `chain`, version 8.
fn downgrade_to_schema_8(path: &Path) {
    downgrade_to_schema_9(path);
    let conn = Connection::open(path).expect("raw");
    conn.execute_batch(
        "DROP TABLE chain;
         DROP INDEX schedules_due_unpaused;
         UPDATE meta SET value = 8 WHERE key = 'schema_version';",
    )
    .expect("downgrade");
}

/// Turns a fresh store back into what schema 7 created: schema 8's without
/// `attempt_errors`, `handler_pauses` and `handler_rates`, version 7.
fn downgrade_to_schema_7(path: &Path) {
    downgrade_to_schema_8(path);
    let conn = Connection::open(path).expect("raw");
    conn.execute_batch(
        "DROP TABLE attempt_errors;
         DROP TABLE handler_pauses;
         DROP TABLE handler_rates;
         UPDATE meta SET value = 7 WHERE key = 'schema_version';",
    )
    .expect("downgrade");
}

/// Turns a fresh store back into what schema 6 created: schema 7's without
/// `schedules.paused_at`, version 6.
fn downgrade_to_schema_6(path: &Path) {
    downgrade_to_schema_7(path);
    let conn = Connection::open(path).expect("raw");
    conn.execute_batch(
        "ALTER TABLE schedules DROP COLUMN paused_at;
         UPDATE meta SET value = 6 WHERE key = 'schema_version';",
    )
    .expect("downgrade");
}

/// Turns a fresh store back into what schema 5 created: schema 6's without the
/// idempotency key index, version 5.
fn downgrade_to_schema_5(path: &Path) {
    downgrade_to_schema_6(path);
    let conn = Connection::open(path).expect("raw");
    conn.execute_batch(
        "DROP INDEX work_key;
         UPDATE meta SET value = 5 WHERE key = 'schema_version';",
    )
    .expect("downgrade");
}

/// Turns a fresh store back into what schema 4 created: schema 5's without the published
/// account on the authority rows, version 4.
fn downgrade_to_schema_4(path: &Path) {
    downgrade_to_schema_5(path);
    let conn = Connection::open(path).expect("raw");
    conn.execute_batch(
        "ALTER TABLE authorities DROP COLUMN published;
         UPDATE meta SET value = 4 WHERE key = 'schema_version';",
    )
    .expect("downgrade");
}

/// Turns a fresh store back into what schema 3 created: schema 4's without the priority,
/// the global claim and waiting indexes instead of the per-lane ones, version 3.
fn downgrade_to_schema_3(path: &Path) {
    downgrade_to_schema_4(path);
    let conn = Connection::open(path).expect("raw");
    conn.execute_batch(
        "DROP INDEX work_lane;
         DROP INDEX work_lane_waiting;
         ALTER TABLE work DROP COLUMN priority;
         CREATE INDEX work_claim ON work (compat, due_at, id) WHERE due_at IS NOT NULL;
         CREATE INDEX work_waiting ON work (next_eligible_at) WHERE state IN ('pending', 'retry');
         UPDATE meta SET value = 3 WHERE key = 'schema_version';",
    )
    .expect("downgrade");
}

/// Turns a fresh store back into what schema 2 created: schema 3's without the work
/// checkpoint, version 2.
fn downgrade_to_schema_2(path: &Path) {
    downgrade_to_schema_3(path);
    let conn = Connection::open(path).expect("raw");
    conn.execute_batch(
        "ALTER TABLE work DROP COLUMN checkpoint;
         UPDATE meta SET value = 2 WHERE key = 'schema_version';",
    )
    .expect("downgrade");
}

/// Turns a fresh store back into what schema 1 created: schema 2's, without the failover
/// or holder columns or the indexes over them, version 1.
fn downgrade_to_schema_1(path: &Path) {
    downgrade_to_schema_2(path);
    let conn = Connection::open(path).expect("raw");
    conn.execute_batch(
        "DROP INDEX grants_failovers;
         DROP INDEX writes_refused;
         ALTER TABLE grants DROP COLUMN from_owner;
         ALTER TABLE grants DROP COLUMN from_generation;
         ALTER TABLE grants DROP COLUMN lapsed_ms;
         ALTER TABLE writes DROP COLUMN holder_id;
         ALTER TABLE writes DROP COLUMN holder_generation;
         UPDATE meta SET value = 1 WHERE key = 'schema_version';",
    )
    .expect("downgrade");
}

#[test]
fn a_schema_1_store_is_upgraded_in_place_and_old_rows_read_as_unknown() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("old.db");
    let clock = ManualClock::new(1_000);
    let s = store(&path, &clock);
    let lease = s.acquire("r", "a", 1_000.0, NO_KEY).expect("a acquires");
    clock.advance(2_000);
    s.acquire("r", "b", 1_000.0, NO_KEY).expect("b reclaims");
    assert!(
        s.renew("r", &lease.token, lease.generation, 1_000.0)
            .is_err()
    );
    drop(s);
    downgrade_to_schema_1(&path);

    assert_refused_read_only(&path);

    let s = store(&path, &clock);
    assert_current(&path);
    let old = s.read(|tx| tx.grants(None, 0, 10)).expect("grants");
    assert_eq!(old.len(), 2, "the old grants stay");
    assert!(old.iter().all(|g| g.took_over.is_none()));
    let writes = s.read(|tx| tx.writes(None, 0, 10)).expect("writes");
    assert!(writes.iter().all(|w| w.holder.is_none()));
    assert_eq!(s.failovers(0, None, 10).expect("failovers").total, 0);
    assert_eq!(s.refused_writes(0, None, 10).expect("refused").total, 1);

    clock.advance(2_500);
    s.acquire("r", "c", 1_000.0, NO_KEY).expect("c reclaims");
    let failovers = s.failovers(0, None, 10).expect("failovers");
    assert_eq!(failovers.total, 1);
    let takeover = failovers.rows[0].1.took_over.clone().expect("a failover");
    assert_eq!(
        (takeover.from_owner.as_str(), takeover.from_generation),
        ("b", 2)
    );
    assert_eq!(takeover.lapsed_ms, 1_500);
}

/// A read-only open of the older store at `path` refuses it and leaves its bytes alone.
fn assert_refused_read_only(path: &Path) {
    let untouched = std::fs::read(path).expect("bytes");
    let err = SqliteBackend::open(path, OpenMode::ReadOnly)
        .err()
        .expect("a read-only open cannot upgrade");
    assert!(err.to_string().contains("predates this build"), "{err}");
    assert_eq!(std::fs::read(path).expect("bytes"), untouched);
}

/// The store is at this build's version, its work columns in the order rows are read by
/// position.
fn assert_current(path: &Path) {
    let conn = Connection::open(path).expect("raw");
    let version: i64 = conn
        .query_row(
            "SELECT value FROM meta WHERE key = 'schema_version'",
            [],
            |r| r.get(0),
        )
        .expect("version");
    assert_eq!(version, SCHEMA_VERSION);
    assert_positional_columns(&conn);
}

#[test]
fn a_schema_2_store_is_upgraded_in_place_and_old_items_have_no_checkpoint() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("old.db");
    let clock = ManualClock::new(1_000);
    let s = store(&path, &clock);
    s.enqueue(NewWork::effect("fx", "h", "{}"), "k")
        .expect("enqueue");
    let claimed = s.claim("fx", "a", "k", 1_000).expect("a claims");
    drop(s);
    downgrade_to_schema_2(&path);

    assert_refused_read_only(&path);

    let s = store(&path, &clock);
    assert_current(&path);
    let old = s.work("fx").expect("read").expect("the old item stays");
    assert_eq!(
        old, claimed,
        "an old row reads as it was, with no checkpoint"
    );
    let saved = s
        .save_work_checkpoint("fx", "a", claimed.generation, "{\"page\":2}")
        .expect("a checkpoint under the claim");
    assert_eq!(
        s.work("fx").expect("read").expect("item").checkpoint,
        saved.checkpoint
    );
    assert_eq!(saved.checkpoint.as_deref(), Some("{\"page\":2}"));
}

#[test]
fn a_schema_3_store_is_upgraded_in_place_with_priority_0_and_lane_indexes() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("old.db");
    let clock = ManualClock::new(1_000);
    let s = store(&path, &clock);
    s.enqueue(NewWork::effect("old", "h", "{}"), "k")
        .expect("enqueue");
    drop(s);
    downgrade_to_schema_3(&path);

    let s = store(&path, &clock);
    assert_current(&path);
    let conn = Connection::open(&path).expect("raw");
    let indexes: Vec<String> = conn
        .prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'work'")
        .and_then(|mut st| st.query_map([], |r| r.get(0))?.collect())
        .expect("indexes");
    for gone in ["work_claim", "work_waiting"] {
        assert!(!indexes.iter().any(|i| i == gone), "{gone} dropped");
    }
    for made in ["work_lane", "work_lane_waiting"] {
        assert!(indexes.iter().any(|i| i == made), "{made} built");
    }
    assert_eq!(s.work("old").expect("read").expect("stays").priority, 0);
    s.enqueue(
        NewWork {
            priority: 5,
            ..NewWork::effect("new", "h", "{}")
        },
        "k",
    )
    .expect("enqueue");
    let order: Vec<String> = s
        .claim_batch("a", "k", 2, 1_000)
        .expect("claims")
        .into_iter()
        .map(|w| w.id)
        .collect();
    assert_eq!(order, ["new", "old"], "the higher priority first");
}

#[test]
fn a_schema_4_store_is_upgraded_in_place_and_old_authorities_publish_nothing() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("old.db");
    let clock = ManualClock::new(1_000);
    let s = store(&path, &clock);
    let a = Authority {
        instance_id: "auth-1".into(),
        compat: "k".into(),
        build: "old".into(),
        config: "{}".into(),
        started_at: 1_000,
        heartbeat_at: 1_000,
        stopped_at: None,
        host: "h".into(),
        pid: 7,
        published: Published::default(),
    };
    s.register_authority(&a).expect("registers");
    drop(s);
    downgrade_to_schema_4(&path);
    assert_refused_read_only(&path);

    let s = store(&path, &clock);
    assert_current(&path);
    let row = |s: &Store| {
        s.list_authorities(&PageRequest::first(10))
            .expect("lists")
            .rows
            .remove(0)
    };
    assert_eq!(row(&s), a, "the old row reads with nothing published");
    let account = Published::of(vec![Recovering {
        resource_id: "e1".into(),
        kind: "effect".into(),
        generation: 2,
        why: "the read-back failed".into(),
        since: 1_000,
    }]);
    s.publish(&a.incarnation(), false, &account)
        .expect("publishes");
    assert_eq!(row(&s).published, account);
}

#[test]
fn a_schema_5_store_holding_a_key_twice_is_upgraded_and_deduplicates_by_key() {
    use crate::store::Enqueued;
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("old.db");
    let clock = ManualClock::new(1_000);
    let s = store(&path, &clock);
    let charge = |id: &str| NewWork {
        idempotency_key: Some("order-1".into()),
        ..NewWork::effect(id, "h", "{}")
    };
    s.enqueue(charge("a"), "k").expect("enqueue");
    drop(s);
    downgrade_to_schema_5(&path);
    // What a schema 5 build did with a second offer of the key under another id.
    let conn = Connection::open(&path).expect("raw");
    conn.execute_batch(
        "INSERT INTO work SELECT 'b', kind, state, handler, payload, 'b', idempotency_key,
             compat, owner_id, token, generation, claimed_at, lease_expires_at, attempt_number,
             uncertain_attempts, max_attempts, last_attempt_at, next_eligible_at, last_failure,
             result, created_at, updated_at, due_at, checkpoint, priority
         FROM work WHERE id = 'a';",
    )
    .expect("the old build's twin");
    drop(conn);
    assert_refused_read_only(&path);

    let s = store(&path, &clock);
    assert_current(&path);
    // The upgrade builds the key index over both: the checker reads it in key order and
    // reports the pair (tests/store/keys.rs).
    let by_key = s.read(|tx| tx.work_keys(None, 10)).expect("the key index");
    assert_eq!(
        by_key,
        [
            ("order-1".to_owned(), "a".to_owned()),
            ("order-1".to_owned(), "b".to_owned())
        ]
    );
    assert_eq!(
        s.offer_work(charge("c"), "k").expect("offer"),
        Enqueued::Duplicate("a".into())
    );
    assert!(s.work("c").expect("read").is_none());
}

#[test]
fn a_schema_6_store_is_upgraded_in_place_and_old_schedules_run() {
    use crate::model::schedule::{CatchUp, Trigger};
    use crate::rules::schedule::Control;
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("old.db");
    let clock = ManualClock::new(1_000);
    let s = store(&path, &clock);
    let every = Trigger::Interval { every_ms: 1_000 };
    assert!(
        s.create_schedule("tick", every, CatchUp::Latest, "h", "{}", "k")
            .expect("creates")
    );
    let before = s.schedule("tick").expect("read").expect("created");
    drop(s);
    downgrade_to_schema_6(&path);
    assert_refused_read_only(&path);

    let s = store(&path, &clock);
    assert_current(&path);
    let old = s
        .schedule("tick")
        .expect("read")
        .expect("the old schedule stays");
    assert_eq!(old, before, "it reads as running");
    s.control_schedule("tick", Control::Pause, "alice", "")
        .expect("pauses");
    assert_eq!(
        s.schedule("tick").expect("read").expect("paused").paused_at,
        Some(1_000)
    );
}

#[test]
fn a_schema_7_store_is_upgraded_in_place_with_no_attempt_errors_and_no_handler_controls() {
    use crate::model::Rate;
    use crate::rules::handler::HandlerControl;
    use crate::store::ClaimBudget;
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("old.db");
    let clock = ManualClock::new(1_000);
    let s = store(&path, &clock);
    for id in ["fx", "a", "b", "c"] {
        s.enqueue(NewWork::effect(id, "h", "{}"), "k")
            .expect("enqueue");
    }
    let claimed = s.claim("fx", "a", "k", 1_000).expect("a claims");
    let failure = crate::model::Failure {
        class: crate::model::FailureClass::Retryable,
        code: "E".into(),
        message: "m".into(),
    };
    let failed = s
        .fail("fx", "a", claimed.generation, failure.clone())
        .expect("fails");
    drop(s);
    downgrade_to_schema_7(&path);
    assert_refused_read_only(&path);

    let s = store(&path, &clock);
    assert_current(&path);
    assert_eq!(s.work("fx").expect("read"), Some(failed.clone()));
    assert!(s.attempt_errors("fx").expect("read").is_empty());
    assert!(s.paused_handlers().expect("read").is_empty(), "none paused");
    s.control_handler("h", HandlerControl::Pause, "alice", "")
        .expect("pauses");
    assert!(
        s.claim_batch("o", "k", 10, 1_000)
            .expect("claims")
            .is_empty()
    );
    s.control_handler("h", HandlerControl::Resume, "alice", "")
        .expect("resumes");
    let rate: Rate = "2/1s".parse().expect("rate");
    let budget = ClaimBudget::new(10).with_rate("h", rate);
    let claimed = s
        .claim_work_within("o", "k", &budget, 1_000)
        .expect("claims");
    assert_eq!(claimed.len(), 2, "the rate holds");
    clock.set(failed.next_eligible_at);
    let again = s.claim("fx", "b", "k", 1_000).expect("b claims");
    s.fail("fx", "b", again.generation, failure).expect("fails");
    let errors = s.attempt_errors("fx").expect("read");
    assert_eq!(
        errors
            .iter()
            .map(|e| (e.attempt, e.owner_id.as_str()))
            .collect::<Vec<_>>(),
        [(2, "b")]
    );
}

#[test]
fn a_schema_8_store_is_upgraded_in_place_and_its_chain_starts_at_the_next_commit() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("old.db");
    let clock = ManualClock::new(1_000);
    let s = store(&path, &clock);
    for id in ["a", "b"] {
        s.enqueue(NewWork::effect(id, "h", "{}"), "k")
            .expect("enqueue");
    }
    s.claim("a", "o", "k", 60_000).expect("claim");
    let before = s.revision().expect("revision");
    drop(s);
    downgrade_to_schema_8(&path);
    assert_refused_read_only(&path);

    let s = store(&path, &clock);
    assert_current(&path);
    assert_eq!(
        s.chain_link(before).expect("read"),
        None,
        "no link before it"
    );
    assert!(s.verify_chain().expect("verify").breaks.is_empty());
    let item = s.claim("b", "o", "k", 60_000).expect("claim");
    s.complete("b", "o", item.generation, None)
        .expect("complete");
    let report = s.verify_chain().expect("verify");
    assert!(report.breaks.is_empty(), "{:?}", report.breaks);
    assert_eq!(report.span, Some((before + 1, before + 2)));
}

/// The definition of the index `name`, if the store has it.
fn index_sql(path: &Path, name: &str) -> Option<String> {
    Connection::open(path)
        .expect("raw")
        .query_row(
            "SELECT sql FROM sqlite_schema WHERE type = 'index' AND name = ?1",
            [name],
            |r| r.get(0),
        )
        .ok()
}

#[test]
fn a_schema_9_store_is_upgraded_in_place_and_lists_and_pages_its_history_as_before() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("old.db");
    let clock = ManualClock::new(1_000);
    let s = store(&path, &clock);
    for id in ["a", "b", "c", "d"] {
        s.enqueue(NewWork::effect(id, "h", "{}"), "k")
            .expect("enqueue");
    }
    let a = s.claim("a", "o", "k", 60_000).expect("claim");
    s.complete("a", "o", a.generation, None).expect("complete");
    s.claim("b", "o", "k", 60_000).expect("claim");
    let listed = |s: &Store, filter: WorkFilter| -> Vec<String> {
        let page = s.list_work(&filter, &PageRequest::first(50)).expect("list");
        page.rows.into_iter().map(|w| w.id).collect()
    };
    let by_state = |state| WorkFilter {
        states: vec![state],
        ..WorkFilter::default()
    };
    let by_owner = WorkFilter {
        owner: Some("o".into()),
        ..WorkFilter::default()
    };
    let history = |s: &Store| s.ownership_history(None, 0, 1).expect("history");
    let before = (
        listed(&s, by_state(WorkState::Claimed)),
        listed(&s, by_state(WorkState::Pending)),
        listed(&s, by_owner.clone()),
        history(&s),
    );
    assert_eq!(before.0, ["b"]);
    assert_eq!(before.1, ["c", "d"]);
    assert_eq!(before.2, ["a", "b"]);
    drop(s);
    downgrade_to_schema_9(&path);
    assert!(index_sql(&path, "grants_revision").is_some());
    assert_refused_read_only(&path);

    let s = store(&path, &clock);
    assert_current(&path);
    assert_eq!(index_sql(&path, "grants_revision"), None);
    assert_eq!(index_sql(&path, "writes_revision"), None);
    for index in ["work_state", "work_owner"] {
        let sql = index_sql(&path, index).expect("index");
        assert!(sql.contains("state <> 'claimed'"), "{sql}");
    }
    let after = (
        listed(&s, by_state(WorkState::Claimed)),
        listed(&s, by_state(WorkState::Pending)),
        listed(&s, by_owner),
        history(&s),
    );
    assert_eq!(after, before);
    let b = s.claim("c", "o", "k", 60_000).expect("claim");
    s.complete("c", "o", b.generation, None).expect("complete");
    assert!(s.verify_chain().expect("verify").breaks.is_empty());
}

#[test]
fn a_schema_10_store_is_upgraded_in_place_and_claims_its_lapses_first_then_its_lanes() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("old.db");
    let clock = ManualClock::new(1_000);
    let s = store(&path, &clock);
    for id in ["a", "b", "c"] {
        s.enqueue(NewWork::effect(id, "h", "{}"), "k")
            .expect("enqueue");
    }
    s.claim("b", "dead", "k", 1_000).expect("claim");
    drop(s);
    downgrade_to_schema_10(&path);
    assert_refused_read_only(&path);

    let s = store(&path, &clock);
    assert_current(&path);
    let lane = index_sql(&path, "work_lane").expect("index");
    assert!(lane.contains("state <> 'claimed'"), "{lane}");
    clock.advance(60_000);
    let batch = s.claim_batch("heir", "k", 3, 30_000).expect("claim");
    let ids: Vec<&str> = batch.iter().map(|w| w.id.as_str()).collect();
    assert_eq!(ids, ["b", "a", "c"], "the lapse first, then the lane");
    assert_eq!(batch[0].generation, 2, "taken over");
    assert!(s.verify_chain().expect("verify").breaks.is_empty());
}

/// The overview's counts above zero, by kind, count name and build.
fn counted(s: &Store) -> Vec<(String, String, u64)> {
    let work = s.overview().expect("overview").work;
    (work.iter().filter(|c| c.count > 0))
        .map(|c| {
            (
                format!("{}|{}", c.kind.as_str(), c.name()),
                c.compat.clone(),
                c.count,
            )
        })
        .collect()
}

/// A store of schema 11 counted a person's discards with the failures: the upgrade moves
/// them to a count of their own, per kind and build, so the counts are the rows'.
#[test]
fn a_schema_11_store_is_upgraded_in_place_and_counts_its_discards_apart() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("old.db");
    let clock = ManualClock::new(1_000);
    let s = store(&path, &clock);
    for (id, compat) in [("a", "k"), ("b", "k"), ("c", "k"), ("d", "other")] {
        s.enqueue(NewWork::effect(id, "h", "{}"), compat)
            .expect("enqueue");
    }
    let b = s.claim("b", "w", "k", 1_000).expect("claim");
    let failure = crate::model::Failure {
        class: crate::model::FailureClass::Terminal,
        code: "NO".into(),
        message: "refused".into(),
    };
    s.fail("b", "w", b.generation, failure).expect("fail");
    for id in ["a", "d"] {
        s.discard_work(id, "op", "not needed").expect("discard");
    }
    let before = counted(&s);
    drop(s);
    downgrade_to_schema_11(&path);
    assert_refused_read_only(&path);
    let counters = |path: &Path| {
        let conn = Connection::open(path).expect("raw");
        let mut rows = conn
            .prepare("SELECT name, value FROM counters WHERE value <> 0 AND name LIKE 'work|%' ORDER BY name")
            .expect("prepare");
        rows.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)))
            .expect("query")
            .collect::<rusqlite::Result<Vec<_>>>()
            .expect("rows")
    };
    let old = counters(&path);
    assert!(
        old.contains(&("work|effect|failed|k".into(), 2)),
        "schema 11 counted the discard with the failure: {old:?}"
    );

    let s = store(&path, &clock);
    assert_current(&path);
    assert_eq!(
        counters(&path),
        [
            ("work|effect|discarded|k".into(), 1),
            ("work|effect|discarded|other".into(), 1),
            ("work|effect|failed|k".into(), 1),
            ("work|effect|pending|k".into(), 1),
        ]
    );
    assert_eq!(counted(&s), before);
}

/// An index added since the schema's version is created by the next read-write open of a
/// store written without it; the store keeps its version, so an older build still opens it.
#[test]
fn a_read_write_open_adds_the_indexes_added_since_the_schemas_version() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("older.db");
    drop(store(&path, &ManualClock::new(1_000)));
    let has_index = || {
        Connection::open(&path)
            .expect("raw")
            .query_row(
                "SELECT count(*) FROM sqlite_schema WHERE type = 'index' AND name = 'schedules_due_unpaused'",
                [],
                |r| r.get::<_, i64>(0),
            )
            .expect("read")
            == 1
    };
    assert!(has_index());
    Connection::open(&path)
        .expect("raw")
        .execute_batch("DROP INDEX schedules_due_unpaused")
        .expect("drop");
    drop(SqliteBackend::open(&path, OpenMode::ReadOnly).expect("read-only"));
    assert!(!has_index(), "a read-only open changes nothing");
    drop(store(&path, &ManualClock::new(1_000)));
    assert!(has_index());
    assert_current(&path);
}
