//! `leasehold handler pause|resume|list`: a pause holds the handler's work on every
//! authority of the store and is listed with who, when, why and how many items wait; each
//! change is audited under the operator; a repeat says it changed nothing; bad input is
//! one line, changes nothing and never creates a store.

use leasehold::Store;
use leasehold::foundation::actor::operator;
use leasehold::model::PageRequest;
use leasehold::model::work::NewWork;
use leasehold::store::url::{self, OpenMode};

use super::{assert_one_line_failure, json_lines, leasehold, stdout};

fn empty_store(dir: &std::path::Path) -> (String, Store) {
    let url = format!("sqlite:{}", dir.join("store.db").display());
    let store = url::open(&url, OpenMode::ReadWrite).unwrap();
    (url, store)
}

#[test]
fn a_paused_handler_is_listed_held_and_resumed() {
    let dir = tempfile::tempdir().unwrap();
    let (url, store) = empty_store(dir.path());
    for id in ["a", "b"] {
        store
            .enqueue(NewWork::effect(id, "poison", "{}"), "k")
            .unwrap();
    }
    let pause = leasehold(&[
        "handler", "pause", "--store", &url, "poison", "--reason", "crashes",
    ]);
    assert_eq!(stdout(&pause).trim(), "paused handler poison");
    let again = leasehold(&["handler", "pause", "--store", &url, "poison", "--json"]);
    let answer = &json_lines(&again)[0];
    assert_eq!(
        (answer["outcome"].as_str(), answer["paused"].as_bool()),
        (Some("already paused"), Some(true))
    );
    assert!(store.claim_batch("o", "k", 10, 1_000).unwrap().is_empty());

    let list = stdout(&leasehold(&["handler", "list", "--store", &url]));
    let line = list.lines().nth(1).expect("one paused handler");
    assert!(line.starts_with("poison"), "{list}");
    assert!(line.contains("  2  ") && line.contains("crashes"), "{list}");
    assert!(line.contains(&operator()), "{list}");
    let rows = json_lines(&leasehold(&["handler", "list", "--store", &url, "--json"]));
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0]["handler"], "poison");
    assert_eq!(rows[0]["waiting"], 2);
    assert_eq!(rows[0]["pausedBy"], operator());
    let overview = stdout(&leasehold(&["inspect", "--store", &url, "overview"]));
    assert!(
        overview.contains("paused       poison (2 waiting)"),
        "{overview}"
    );

    let resume = leasehold(&["handler", "resume", "--store", &url, "poison"]);
    assert_eq!(stdout(&resume).trim(), "resumed handler poison");
    let resume = leasehold(&["handler", "resume", "--store", &url, "poison"]);
    assert_eq!(
        stdout(&resume).trim(),
        "handler poison was not paused; nothing changed"
    );
    assert_eq!(store.claim_batch("o", "k", 10, 1_000).unwrap().len(), 2);
    let list = stdout(&leasehold(&["handler", "list", "--store", &url]));
    assert!(list.contains("(no rows)"), "{list}");
    let audited: Vec<(String, String)> = store
        .list_audit(&PageRequest::first(100))
        .unwrap()
        .rows
        .into_iter()
        .map(|a| (a.action, a.outcome))
        .collect();
    let entry = |a: &str, o: &str| (a.to_owned(), o.to_owned());
    assert_eq!(
        audited,
        [
            entry("handler-pause", "paused; reason: crashes"),
            entry("handler-pause", "already paused"),
            entry("handler-resume", "resumed"),
            entry("handler-resume", "already resumed"),
        ]
    );
}

#[test]
fn bad_handler_input_is_one_line_and_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (url, store) = empty_store(dir.path());
    let before = store.revision().unwrap();
    for name in ["", "evil\u{202e}txt", &"h".repeat(10_000)] {
        let o = leasehold(&["handler", "pause", "--store", &url, name]);
        let err = assert_one_line_failure(&o, 2);
        assert!(err.contains("handler"), "{err}");
    }
    assert_eq!(store.revision().unwrap(), before, "nothing written");
    let missing = dir.path().join("nope.db");
    let url = format!("sqlite:{}", missing.display());
    assert_one_line_failure(&leasehold(&["handler", "pause", "--store", &url, "h"]), 2);
    assert_one_line_failure(&leasehold(&["handler", "list", "--store", &url]), 2);
    assert!(!missing.exists(), "no store is created");
    assert_one_line_failure(&leasehold(&["handler", "pause"]), 2);
    assert_one_line_failure(&leasehold(&["handler", "stop", "--store", &url, "h"]), 2);
}
