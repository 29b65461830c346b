//! `leasehold copy` round trips (SQLite to SQLite, and SQLite to Postgres and back) judged by
//! what `inspect`, `history` and `check` say, and the targets it refuses.

use std::path::Path;

use serde_json::Value;

use super::{
    VIEWS, assert_one_line_failure, busy_store, check_says, code, json_lines, leasehold, seed,
    stderr, stdout,
};

/// Every view of `leasehold inspect --json` for `store` (the overview without its own
/// location, provider and clock reading, which differ between stores by nature).
fn view_json(store: &str, view: &str) -> String {
    let o = leasehold(&[
        "inspect", "--store", store, view, "--json", "--limit", "100000",
    ]);
    assert_eq!(code(&o), 0, "{view} of {store}: {}", stderr(&o));
    if view != "overview" {
        return stdout(&o);
    }
    let mut overview: Value = serde_json::from_str(&stdout(&o)).unwrap();
    for key in ["store", "storeKind", "now"] {
        overview.as_object_mut().unwrap().remove(key);
    }
    // Lateness is measured from now, like `now` itself; the due instants it is measured
    // from stay.
    for list in ["lateKinds", "lateLanes"] {
        for row in overview[list].as_array_mut().unwrap() {
            row.as_object_mut().unwrap().remove("lateMs");
        }
    }
    overview.to_string()
}

/// Copies `from` into `via` and `via` into `back` (store URLs of any providers, the last
/// two new or empty), then asserts that `leasehold inspect --json` of every view, `leasehold
/// history --json` of every instance and `leasehold check --json` read the same at all
/// three. Each view is read from the three stores back to back, so time-relative fields
/// (lease status, due schedules) are judged at nearly one instant.
fn round_trip(from: &str, via: &str, back: &str) {
    let mut summaries = Vec::new();
    for (source, target) in [(from, via), (via, back)] {
        let o = leasehold(&["copy", "--from", source, "--to", target, "--json"]);
        assert_eq!(code(&o), 0, "copy {source} to {target}: {}", stderr(&o));
        // Both ends are named as `describe()` names them (a URL without its password).
        let mut summary: Value = serde_json::from_str(&stdout(&o)).unwrap();
        for end in ["from", "to"] {
            assert!(summary[end].is_string(), "{summary}");
            summary.as_object_mut().unwrap().remove(end);
        }
        summaries.push(summary);
    }
    assert_eq!(summaries[0], summaries[1], "both copies wrote the same");
    let stores = [from, via, back];
    for view in VIEWS {
        let seen: Vec<String> = stores.iter().map(|s| view_json(s, view)).collect();
        assert!(!seen[0].is_empty(), "{view} is empty");
        assert_eq!(seen[1], seen[0], "{view}: {via} differs from {from}");
        assert_eq!(seen[2], seen[0], "{view}: {back} differs from {from}");
    }
    let instances = json_lines(&leasehold(&[
        "inspect",
        "--store",
        from,
        "workflows",
        "--json",
        "--limit",
        "100000",
    ]));
    for row in &instances {
        let id = row["instanceId"].as_str().unwrap();
        let seen: Vec<String> = stores
            .iter()
            .map(|s| stdout(&leasehold(&["history", "--store", s, id, "--json"])))
            .collect();
        assert!(!seen[0].is_empty(), "history of {id}");
        assert_eq!(seen[1], seen[0], "history of {id}");
        assert_eq!(seen[2], seen[0], "history of {id}");
    }
    let checked: Vec<(i32, String)> = stores.iter().map(|s| check_says(s)).collect();
    assert_eq!(checked[1], checked[0], "check of {via}");
    assert_eq!(checked[2], checked[0], "check of {back}");
}

#[test]
fn copy_round_trips_a_busy_store_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let [b, c] = ["b.db", "c.db"].map(|f| dir.path().join(f).display().to_string());
    round_trip(&busy_store(dir.path()), &b, &c);
}

/// SQLite → Postgres → SQLite: moving up and back keeps everything `inspect`, `history`
/// and `check` show.
#[cfg(feature = "postgres")]
#[test]
fn copy_round_trips_through_postgres_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let pg = crate::support::postgres::database();
    let back = dir.path().join("back.db").display().to_string();
    round_trip(&busy_store(dir.path()), pg.url(), &back);
}

#[test]
fn copy_refuses_a_non_empty_target_itself_and_memory() {
    let dir = tempfile::tempdir().unwrap();
    let path = |f: &str| dir.path().join(f).display().to_string();
    let (source, target) = (path("source.db"), path("target.db"));
    for store in [&source, &target] {
        seed(
            store,
            &["--effects", "3", "--workflows", "1", "--events", "2"],
        );
    }
    // What the refusal must leave alone: the revision (every commit advances it) and the
    // durable rows. Views that judge rows against the clock (lease status, due schedules)
    // may read differently a moment later without anything having changed.
    let durable = |store: &str| -> Vec<String> {
        let overview: Value = serde_json::from_str(&view_json(store, "overview")).unwrap();
        std::iter::once(overview["revision"].to_string())
            .chain(
                ["work", "workflows", "events", "audit"]
                    .iter()
                    .map(|v| view_json(store, v)),
            )
            .collect()
    };
    let before = durable(&target);
    let o = leasehold(&["copy", "--from", &source, "--to", &target]);
    let err = assert_one_line_failure(&o, 2);
    assert!(err.contains("COPY_TARGET_NOT_EMPTY"), "{err}");
    assert_eq!(durable(&target), before, "the refused target is unchanged");

    let dotted = format!("{}/./source.db", dir.path().display());
    let missing = path("missing.db");
    let new = path("new.db");
    for (from, to) in [
        (source.as_str(), source.as_str()),
        (source.as_str(), dotted.as_str()),
        ("memory", new.as_str()),
        (source.as_str(), "memory"),
        (missing.as_str(), new.as_str()),
    ] {
        let o = leasehold(&["copy", "--from", from, "--to", to]);
        assert_one_line_failure(&o, 2);
    }
    assert!(
        !Path::new(&new).exists(),
        "a refused copy created its target"
    );
    assert!(!Path::new(&missing).exists());
}

/// A store in `dir` that the whole-file check passes but whose last work row no build can
/// decode: a copy from it fails part way. Its path.
fn undecodable_source(dir: &Path) -> String {
    let source = super::damaged::healthy(dir);
    rusqlite::Connection::open(&source)
        .unwrap()
        .execute_batch(
            "UPDATE work SET state = 'no-such-state' WHERE rowid = (SELECT max(rowid) FROM work)",
        )
        .unwrap();
    source.display().to_string()
}

/// A copy that fails part way — a source row the whole-file check passes but no build can
/// decode — removes the target file it created; a target that existed before stays.
#[test]
fn a_copy_that_fails_removes_the_target_it_created_and_only_that() {
    let dir = tempfile::tempdir().unwrap();
    let from = undecodable_source(dir.path());
    let new = dir.path().join("new.db");
    let o = leasehold(&["copy", "--from", &from, "--to", &new.display().to_string()]);
    let err = assert_one_line_failure(&o, 2);
    assert!(err.contains("STORE_CORRUPT"), "{err}");
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with("new.db"))
        .collect();
    assert!(left.is_empty(), "the failed copy left {left:?}");

    let existing = dir.path().join("existing.db").display().to_string();
    assert_eq!(code(&leasehold(&["init", &existing])), 0);
    let o = leasehold(&["copy", "--from", &from, "--to", &existing]);
    assert_one_line_failure(&o, 2);
    assert!(
        Path::new(&existing).exists(),
        "an existing target was removed"
    );
}

/// A copy into an empty PostgreSQL database that fails part way drops the tables it
/// created there; a database that already held a store keeps it.
#[cfg(feature = "postgres")]
#[test]
fn a_copy_into_postgres_that_fails_drops_what_it_created_and_only_that() {
    let dir = tempfile::tempdir().unwrap();
    let from = undecodable_source(dir.path());
    let has_meta = |url: &str| -> bool {
        let mut client = postgres::Client::connect(url, postgres::NoTls).unwrap();
        client
            .query_one("SELECT to_regclass('meta') IS NOT NULL", &[])
            .unwrap()
            .get(0)
    };

    let empty = crate::support::postgres::database();
    let o = leasehold(&["copy", "--from", &from, "--to", empty.url()]);
    let err = assert_one_line_failure(&o, 2);
    assert!(err.contains("STORE_CORRUPT"), "{err}");
    assert!(!has_meta(empty.url()), "the failed copy left its tables");
    assert_eq!(code(&leasehold(&["init", empty.url()])), 0, "empty again");

    let existing = crate::support::postgres::database();
    assert_eq!(code(&leasehold(&["init", existing.url()])), 0);
    let o = leasehold(&["copy", "--from", &from, "--to", existing.url()]);
    assert_one_line_failure(&o, 2);
    assert!(has_meta(existing.url()), "an existing store was dropped");
}
