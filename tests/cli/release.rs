//! `leasehold authority release|forget` against a SQLite store holding a gone authority's
//! claims, planted through the library an hour in the past: the dry run changes nothing
//! (the file's digest), the release fences the late writer and audits as the OS account
//! with the reason, a repeat says so and writes nothing, `forget` waits for the release,
//! and refusals are one line.

use std::path::Path;
use std::sync::Arc;

use leasehold::Store;
use leasehold::clock::{Clock, ManualClock, SystemClock};
use leasehold::foundation::actor::operator;
use leasehold::ids::SeededIds;
use leasehold::model::work::NewWork;
use leasehold::model::{AuditEntry, Authority, PageRequest, WorkState};
use leasehold::store::sqlite::SqliteBackend;
use leasehold::store::url::OpenMode;
use serde_json::Value;

use super::refusals::sha256;
use super::{assert_one_line_failure, code, leasehold, stderr, stdout};

/// Claims the crowded authority holds: more than a release takes without `--yes`.
const CROWD: usize = 101;

fn open(path: &str, clock: Arc<dyn Clock>) -> Store {
    Store::new(
        Arc::new(SqliteBackend::open(path, OpenMode::ReadWrite).unwrap()),
        clock,
        Arc::new(SeededIds::new(5)),
    )
}

fn registration(id: &str, heartbeat_at: i64) -> Authority {
    crate::support::authorities::registration(id, &[], heartbeat_at)
}

/// `gone-1` holding `a` and `b`, `gone-2` holding [`CROWD`] items, both last heard of an
/// hour ago; `live-1` beating (its heartbeat set ahead, so it stays live while the test
/// runs).
fn setup(dir: &Path) -> String {
    let path = dir.join("store.db").display().to_string();
    let clock = ManualClock::new(SystemClock.now() - 3_600_000);
    let store = open(&path, Arc::new(clock.clone()));
    store
        .register_authority(&registration("gone-1", clock.now()))
        .unwrap();
    store
        .register_authority(&registration("gone-2", clock.now()))
        .unwrap();
    store
        .register_authority(&registration("live-1", SystemClock.now() + 600_000))
        .unwrap();
    for id in ["a", "b"] {
        store
            .enqueue(NewWork::effect(id, "send-email", "{}"), "k")
            .unwrap();
        store.claim(id, "gone-1", "k", 3_000).unwrap();
    }
    let crowd = (0..CROWD)
        .map(|n| NewWork::effect(format!("c{n:03}"), "send-email", "{}"))
        .collect();
    store.enqueue_batch(crowd, "k").unwrap();
    assert_eq!(
        store
            .claim_batch("gone-2", "k", CROWD, 3_000)
            .unwrap()
            .len(),
        CROWD
    );
    path
}

fn authority(path: &str, args: &[&str]) -> std::process::Output {
    let mut all = vec!["authority", args[0], "--store", path];
    all.extend(&args[1..]);
    leasehold(&all)
}

fn audit(path: &str, action: &str) -> Vec<AuditEntry> {
    let store = open(path, Arc::new(SystemClock));
    let mut rows = store.list_audit(&PageRequest::first(1_000)).unwrap().rows;
    rows.sort_by_key(|a| a.id);
    rows.retain(|a| a.action == action);
    rows
}

#[test]
fn release_fences_the_gone_authority_once_and_a_dry_run_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = setup(dir.path());
    let file = Path::new(&path);
    let before = sha256(file);
    let dry = authority(&path, &["release", "gone-1", "--dry-run"]);
    assert_eq!(code(&dry), 0, "{}", stderr(&dry));
    assert!(
        stdout(&dry).starts_with("would release 2 claim(s) of authority gone-1 (gone); dry run"),
        "{}",
        stdout(&dry)
    );
    assert_eq!(sha256(file), before, "a dry run writes nothing");

    let done = authority(
        &path,
        &["release", "gone-1", "--reason", "host died", "--json"],
    );
    assert_eq!(code(&done), 0, "{}", stderr(&done));
    let answer: Value = serde_json::from_str(stdout(&done).trim()).unwrap();
    assert_eq!(answer["changed"], true);
    assert_eq!(answer["was"], "gone");
    let released: Vec<(&str, u64)> = answer["released"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["resource"].as_str().unwrap(),
                c["toGeneration"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(released, [("a", 2), ("b", 2)]);

    let store = open(&path, Arc::new(SystemClock));
    for id in ["a", "b"] {
        let item = store.work(id).unwrap().unwrap();
        assert_eq!(
            (item.state, item.owner_id, item.generation),
            (WorkState::Pending, None, 2)
        );
    }
    assert_eq!(
        store.complete("a", "gone-1", 1, None).unwrap_err().code(),
        "WORK_FENCED",
        "the gone authority's late complete is fenced"
    );
    let entries = audit(&path, "release-authority");
    assert_eq!(entries.len(), 2, "{entries:?}");
    for entry in &entries {
        assert_eq!(entry.actor, operator());
        assert!(entry.outcome.ends_with("; reason: host died"), "{entry:?}");
    }

    let again = authority(&path, &["release", "gone-1"]);
    assert_eq!(code(&again), 0, "{}", stderr(&again));
    assert_eq!(
        stdout(&again),
        "authority gone-1 (gone) holds no claims; nothing to release\n"
    );
    assert_eq!(
        audit(&path, "release-authority").len(),
        2,
        "a repeat audits nothing"
    );
}

#[test]
fn many_claims_need_yes_and_forget_waits_for_the_release() {
    let dir = tempfile::tempdir().unwrap();
    let path = setup(dir.path());
    let held = authority(&path, &["forget", "gone-2"]);
    let err = assert_one_line_failure(&held, 1);
    assert!(err.contains("release its claims first"), "{err}");

    let unconfirmed = authority(&path, &["release", "gone-2"]);
    let err = assert_one_line_failure(&unconfirmed, 1);
    assert!(
        err.starts_with("leasehold: CONFIRMATION_REQUIRED: ")
            && err.contains(&format!("holds {CROWD} claims; add --yes")),
        "{err}"
    );
    let confirmed = authority(&path, &["release", "gone-2", "--yes"]);
    assert_eq!(code(&confirmed), 0, "{}", stderr(&confirmed));
    assert!(
        stdout(&confirmed).starts_with(&format!("released {CROWD} claim(s) of authority gone-2")),
        "{}",
        stdout(&confirmed)
    );

    let dry = authority(&path, &["forget", "gone-2", "--dry-run"]);
    assert_eq!(code(&dry), 0, "{}", stderr(&dry));
    assert!(
        stdout(&dry).starts_with("would forget authority gone-2 (was gone"),
        "{}",
        stdout(&dry)
    );
    let forgot = authority(&path, &["forget", "gone-2", "--reason", "decommissioned"]);
    assert_eq!(code(&forgot), 0, "{}", stderr(&forgot));
    assert!(
        stdout(&forgot).starts_with("forgot authority gone-2 (was gone"),
        "{}",
        stdout(&forgot)
    );
    let again = authority(&path, &["forget", "gone-2", "--json"]);
    assert_eq!(code(&again), 0, "{}", stderr(&again));
    let answer: Value = serde_json::from_str(stdout(&again).trim()).unwrap();
    assert_eq!(
        (&answer["changed"], &answer["was"]),
        (&Value::Bool(false), &Value::Null)
    );
    let outcomes: Vec<String> = audit(&path, "forget-authority")
        .into_iter()
        .map(|e| e.outcome)
        .collect();
    assert_eq!(
        outcomes.len(),
        2,
        "the refusal and the forget: {outcomes:?}"
    );
    assert_eq!(outcomes[1], "forgotten: was gone; reason: decommissioned");
}

#[test]
fn a_running_or_unknown_authority_is_refused_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = setup(dir.path());
    for verb in ["release", "forget"] {
        // Exit 2 for both, as the error table gives INSTANCE_IN_USE and NOT_FOUND.
        let live = authority(&path, &[verb, "live-1"]);
        let err = assert_one_line_failure(&live, 2);
        assert!(
            err.contains("INSTANCE_IN_USE") && err.contains("once it is gone"),
            "{err}"
        );
        let unknown = authority(&path, &[verb, "nobody"]);
        assert!(assert_one_line_failure(&unknown, 2).contains("NOT_FOUND"));
        let before = sha256(Path::new(&path));
        let bad = authority(&path, &[verb, "bad\tid"]);
        assert_one_line_failure(&bad, 2);
        assert_eq!(sha256(Path::new(&path)), before, "bad input writes nothing");
        assert!(stdout(&live).is_empty() && stdout(&unknown).is_empty());
        // Each refused attempt is audited, release's as forget's; a refused dry run is not.
        let dry = authority(&path, &[verb, "nobody", "--dry-run"]);
        assert_one_line_failure(&dry, 2);
        let action = format!("{verb}-authority");
        let refused: Vec<(String, String)> = audit(&path, &action)
            .into_iter()
            .map(|a| (a.target, a.outcome))
            .collect();
        assert_eq!(refused.len(), 2, "{verb}: {refused:?}");
        assert_eq!(refused[0].0, "live-1");
        assert!(refused[0].1.starts_with("refused: live"), "{refused:?}");
        assert_eq!(
            refused[1],
            ("nobody".to_owned(), "refused: not found".to_owned())
        );
    }
}
