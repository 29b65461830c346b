//! Query plans: every statement the provider runs for a list or a claim is an index seek,
//! never a scan or a sort (asked of SQLite with `EXPLAIN QUERY PLAN`).

use super::tests::temp;
use super::*;

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
#[expect(
    clippy::too_many_lines,
    reason = "one query-plan assertion per statement"
)]
fn main_queries_use_indexes() {
    let (_dir, path) = temp();
    let b = open(&path, OpenMode::ReadWrite).expect("open");
    let conn = b.lock();
    let cases: &[(&str, usize, &str)] = &[
        (
            "SELECT * FROM work INDEXED BY work_lane WHERE compat = ?1 AND kind = ?2 AND handler = ?3 AND due_at <= ?4 AND state <> 'claimed' ORDER BY priority DESC, due_at, id LIMIT ?5",
            5,
            "work_lane",
        ),
        (
            "SELECT * FROM work INDEXED BY work_reclaim WHERE (state = 'claimed' OR (state = 'retry' AND lease_expires_at IS NOT NULL)) AND compat = ?1 AND due_at <= ?2 ORDER BY due_at, id LIMIT ?3",
            3,
            "work_reclaim",
        ),
        (
            "SELECT * FROM work INDEXED BY work_state WHERE state = ? AND state <> 'claimed' AND id > ? ORDER BY id ASC LIMIT ?",
            3,
            "work_state",
        ),
        (
            "SELECT * FROM work WHERE owner_id = ? AND state = 'claimed' ORDER BY id ASC LIMIT ?",
            2,
            "work_claimed_by",
        ),
        (
            "SELECT count(*), sum(CASE WHEN lease_expires_at <= ?2 THEN 1 ELSE 0 END) FROM work WHERE state = 'claimed' AND owner_id = ?1",
            2,
            "work_claimed_by",
        ),
        (
            "SELECT * FROM work INDEXED BY work_state WHERE state = ? AND state <> 'claimed' AND id < ? ORDER BY id DESC LIMIT ?",
            3,
            "work_state",
        ),
        (
            "SELECT * FROM work INDEXED BY work_owner WHERE owner_id = ? AND state <> 'claimed' AND state IN (?, ?) AND kind = ? AND id > ? ORDER BY id ASC LIMIT ?",
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
            "SELECT * FROM work INDEXED BY work_state WHERE state = ? AND state <> 'claimed' AND id >= ? AND id < ? ORDER BY id ASC LIMIT ?",
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
            "SELECT * FROM grants WHERE seq >= ? AND seq < ? ORDER BY seq LIMIT ?",
            3,
            "INTEGER PRIMARY KEY",
        ),
        (
            "SELECT seq, revision FROM grants WHERE seq >= ?1 ORDER BY seq LIMIT 1",
            1,
            "INTEGER PRIMARY KEY",
        ),
        (
            "SELECT * FROM grants WHERE revision > ? AND resource_id = ? ORDER BY revision, seq LIMIT ?",
            3,
            "grants_resource",
        ),
        (
            "SELECT * FROM writes WHERE seq >= ? ORDER BY seq LIMIT ?",
            2,
            "INTEGER PRIMARY KEY",
        ),
        (
            "SELECT seq, revision FROM writes WHERE seq >= ?1 ORDER BY seq LIMIT 1",
            1,
            "INTEGER PRIMARY KEY",
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
            "SELECT * FROM schedules WHERE next_due <= ?1 AND paused_at IS NULL ORDER BY next_due, schedule_id LIMIT ?2",
            2,
            "schedules_due_unpaused",
        ),
        (
            "SELECT COUNT(*) FROM work INDEXED BY work_lane_waiting WHERE kind IN ('effect', 'schedule', 'cursor') AND handler = ?1 AND state IN ('pending', 'retry')",
            1,
            "work_lane_waiting",
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
            "SELECT * FROM attempt_errors WHERE work_id = ?1 ORDER BY generation DESC",
            1,
            "PRIMARY KEY",
        ),
        (
            "SELECT * FROM attempt_errors WHERE (work_id, generation) > (?1, ?2) ORDER BY work_id, generation LIMIT ?3",
            3,
            "PRIMARY KEY",
        ),
        (
            "SELECT generation FROM attempt_errors WHERE work_id = ?1 ORDER BY generation DESC LIMIT 1 OFFSET ?2",
            2,
            "PRIMARY KEY",
        ),
        (
            "SELECT revision AS r FROM grants WHERE seq = (SELECT max(seq) FROM grants)",
            0,
            "INTEGER PRIMARY KEY",
        ),
        (
            "SELECT seq, revision FROM writes WHERE seq = (SELECT min(seq) FROM writes)",
            0,
            "INTEGER PRIMARY KEY",
        ),
        (
            "DELETE FROM grants WHERE seq < ?1 AND (from_owner IS NULL OR at < ?2)",
            2,
            "INTEGER PRIMARY KEY",
        ),
        (
            "SELECT * FROM grants WHERE revision = ? AND resource_id = ? ORDER BY seq",
            2,
            "grants_resource",
        ),
        (
            "SELECT * FROM writes WHERE seq >= ? AND seq < ? ORDER BY seq",
            2,
            "INTEGER PRIMARY KEY",
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
        (
            "SELECT * FROM work INDEXED BY work_succeeded WHERE state = 'succeeded' AND updated_at < ?1 ORDER BY updated_at, id LIMIT ?2",
            2,
            "work_succeeded",
        ),
        (
            "SELECT * FROM instances INDEXED BY instances_finished WHERE status IN ('completed', 'failed', 'cancelled') AND updated_at < ?1 ORDER BY updated_at, instance_id LIMIT ?2",
            2,
            "instances_finished",
        ),
        (
            "SELECT source, external_id FROM dedup INDEXED BY dedup_age WHERE first_seen_at < ?1 AND source <> ?2 ORDER BY first_seen_at LIMIT ?3",
            3,
            "dedup_age",
        ),
        (
            "SELECT key FROM idempotency INDEXED BY idempotency_age WHERE at < ?1 ORDER BY at LIMIT ?2",
            2,
            "idempotency_age",
        ),
        (
            "SELECT * FROM work INDEXED BY work_key WHERE idempotency_key = ?1
             ORDER BY idempotency_key, id LIMIT 1",
            1,
            "work_key (idempotency_key=?)",
        ),
        (
            "SELECT idempotency_key, id FROM work INDEXED BY work_key
             WHERE (idempotency_key, id) > (?1, ?2) ORDER BY idempotency_key, id LIMIT ?3",
            3,
            "work_key",
        ),
    ];
    for (sql, n, index) in cases {
        assert_indexed(&conn, sql, *n, index);
    }
}

/// Claimed items of every owner, by id: the state index holds none, so they are read from
/// the claimed-by index and sorted — as many rows as the fleet has in flight, never the
/// table.
#[test]
fn claimed_items_are_listed_from_the_claimed_by_index() {
    let (_dir, path) = temp();
    let b = open(&path, OpenMode::ReadWrite).expect("open");
    let conn = b.lock();
    let sql = "SELECT * FROM work INDEXED BY work_claimed_by WHERE state = ? AND state = 'claimed' AND id > ? ORDER BY id ASC LIMIT ?";
    let p = plan(&conn, sql, 3);
    assert!(p.contains("USING INDEX work_claimed_by"), "{p}");
}

/// The skip-scans over the lane indexes seek each lane: both halves of the step past a lane
/// search the index on the full lane key (a row-value inequality would seek on the kind
/// only and read the previous lane whole). The sort they show is of at most two rows. Each
/// half reads the one row it finds (the lane index's condition names the state, which the
/// index does not hold): a row per lane, not per item.
#[test]
fn lane_skip_scans_seek_the_lane_key() {
    use crate::store::sql::lanes::after_lane;
    let (_dir, path) = temp();
    let b = open(&path, OpenMode::ReadWrite).expect("open");
    let conn = b.lock();
    let cases = [
        (
            after_lane(
                "kind, handler",
                "work INDEXED BY work_lane",
                crate::store::sql::lanes::CLAIM_LANE,
                ("?2", "?3"),
            ),
            3,
            [
                "SEARCH work USING INDEX work_lane (compat=? AND kind=? AND handler>?)",
                "SEARCH work USING INDEX work_lane (compat=? AND kind>?)",
            ],
        ),
        (
            after_lane(
                "kind, handler, next_eligible_at",
                "work INDEXED BY work_lane_waiting",
                "state IN ('pending', 'retry')",
                ("?1", "?2"),
            ),
            2,
            [
                "SEARCH work USING INDEX work_lane_waiting (kind=? AND handler>?)",
                "SEARCH work USING INDEX work_lane_waiting (kind>?)",
            ],
        ),
    ];
    for (sql, n, seeks) in cases {
        let p = plan(&conn, &sql, n);
        for seek in seeks {
            assert!(p.contains(seek), "{sql}\n  plan: {p}\n  expected {seek}");
        }
        assert!(!p.contains("SCAN work"), "{sql}\n  scans: {p}");
    }
}
