//! `leasehold work show ID` against a SQLite store holding an item made through the library
//! on a manual clock: its state, attempts, payload, result and attempt errors newest first,
//! in text and in `--json`; an unknown id and a hostile one are one line, exit 2.

use std::sync::Arc;

use leasehold::Store;
use leasehold::clock::{Clock, ManualClock, SystemClock};
use leasehold::ids::SeededIds;
use leasehold::model::work::NewWork;
use leasehold::model::{Failure, FailureClass};
use leasehold::store::sqlite::SqliteBackend;
use leasehold::store::url::OpenMode;
use serde_json::Value;

use super::{assert_one_line_failure, code, leasehold, stdout};

/// The first failure's message: longer than any table cell, its end what triage needs.
const LONG: &str = "card declined by the issuer after 3 retries of the authorisation request \
    for order o-17 at the gateway eu-west-2 (processor answered 05 do not honour), see case 4411 END";

/// A store with `fx`, failed twice (the first failure's message long, the second's holding
/// a control character) and then succeeded with a result holding a bidi override, made an
/// hour in the past.
fn setup() -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.db").display().to_string();
    let clock = ManualClock::new(SystemClock.now() - 3_600_000);
    let store = Store::new(
        Arc::new(SqliteBackend::open(&path, OpenMode::ReadWrite).unwrap()),
        Arc::new(clock.clone()),
        Arc::new(SeededIds::new(9)),
    );
    let spec = NewWork::effect("fx", "charge-card", r#"{"order":"o-17","amount":1200}"#);
    store.enqueue(spec, "k").unwrap();
    for (n, message) in [(1, LONG), (2, "gateway \u{1b}[31mdown")] {
        let held = store.claim("fx", "auth-a", "k", 1_000).unwrap();
        let failure = Failure {
            class: FailureClass::Retryable,
            code: format!("E{n}"),
            message: message.into(),
        };
        let failed = store
            .fail("fx", "auth-a", held.generation, failure)
            .unwrap();
        clock.set(failed.next_eligible_at);
    }
    let held = store.claim("fx", "auth-b", "k", 1_000).unwrap();
    store
        .complete(
            "fx",
            "auth-b",
            held.generation,
            Some("{\"ok\":\"charged\u{202e}\"}".into()),
        )
        .unwrap();
    (dir, path)
}

#[test]
fn work_show_states_the_item_its_errors_and_its_grants() {
    let (_dir, path) = setup();
    let o = leasehold(&["work", "show", "--store", &path, "fx"]);
    assert_eq!(code(&o), 0, "{o:?}");
    let text = stdout(&o);
    assert!(
        !text.contains('\u{1b}') && !text.contains('\u{202e}'),
        "nothing raw: {text}"
    );
    for expected in [
        "work fx",
        "succeeded",
        "charge-card",
        "3/5",
        "\"order\": \"o-17\"",
        "\"ok\": \"charged\\u202e\"",
        "errors (2, newest first)",
        "grants (3, newest first)",
        "the default backoff",
    ] {
        assert!(text.contains(expected), "{expected:?} in:\n{text}");
    }
    let second = text.find("#2 ").expect("attempt 2");
    let first = text.find("#1 ").expect("attempt 1");
    assert!(second < first, "newest first:\n{text}");
    assert!(text.contains(&format!("E1: {LONG}")), "whole: {text}");
}

#[test]
fn work_show_json_is_one_object_with_payload_result_and_errors() {
    let (_dir, path) = setup();
    let o = leasehold(&["work", "show", "--store", &path, "fx", "--json"]);
    assert_eq!(code(&o), 0, "{o:?}");
    let text = stdout(&o);
    assert_eq!(text.lines().count(), 1, "{text}");
    let v: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["item"]["state"], "succeeded");
    assert_eq!(v["item"]["payload"], r#"{"order":"o-17","amount":1200}"#);
    assert_eq!(
        v["item"]["result"], "{\"ok\":\"charged\u{202e}\"}",
        "as stored"
    );
    let errors = v["attemptErrors"].as_array().unwrap();
    let codes: Vec<&str> = errors.iter().map(|e| e["code"].as_str().unwrap()).collect();
    assert_eq!(codes, ["E2", "E1"]);
    assert_eq!(errors[0]["attempt"], 2);
    assert_eq!(errors[0]["ownerId"], "auth-a");
    assert_eq!(errors[0]["class"], "retryable");
    assert_eq!(v["grants"].as_array().unwrap().len(), 3);
}

#[test]
fn an_unknown_or_hostile_id_is_one_line() {
    let (_dir, path) = setup();
    let o = leasehold(&["work", "show", "--store", &path, "nope"]);
    let line = assert_one_line_failure(&o, 2);
    assert!(line.contains("NOT_FOUND"), "{line}");
    let o = leasehold(&["work", "show", "--store", &path, "bad\u{1b}id"]);
    let line = assert_one_line_failure(&o, 2);
    assert!(line.contains("INVALID"), "{line}");
}

/// A padded id an older build let in (creating one is refused now) is still shown and
/// still acted on: only new ids must print as themselves.
#[test]
fn an_older_padded_id_is_still_shown_and_requeued() {
    let (_dir, path) = setup();
    let store = Store::new(
        Arc::new(SqliteBackend::open(&path, OpenMode::Existing).unwrap()),
        Arc::new(SystemClock),
        Arc::new(SeededIds::new(4)),
    );
    let refused = store
        .enqueue(NewWork::effect("pad ", "charge-card", "{}"), "k")
        .unwrap_err();
    assert!(refused.to_string().contains("whitespace"), "{refused}");
    store
        .enqueue(NewWork::effect("pad", "charge-card", "{}"), "k")
        .unwrap();
    drop(store);
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute("UPDATE work SET id = 'pad ' WHERE id = 'pad'", [])
        .unwrap();
    drop(conn);
    let o = leasehold(&["work", "show", "--store", &path, "pad "]);
    assert_eq!(code(&o), 0, "{o:?}");
    assert!(stdout(&o).starts_with("work pad \n"), "{}", stdout(&o));
    let o = leasehold(&[
        "work", "discard", "--store", &path, "pad ", "--reason", "old row",
    ]);
    assert_eq!(code(&o), 0, "{o:?}");
}

/// The checkpoint an attempt saved is in the text too, not only in `--json`: one line,
/// escaped, cut at 200 characters; an item without one has no such line.
#[test]
fn work_show_states_the_checkpoint_an_attempt_saved() {
    let (_dir, path) = setup();
    let store = Store::new(
        Arc::new(SqliteBackend::open(&path, OpenMode::Existing).unwrap()),
        Arc::new(SystemClock),
        Arc::new(SeededIds::new(5)),
    );
    store
        .enqueue(NewWork::effect("cp", "charge-card", "{}"), "k")
        .unwrap();
    let held = store.claim("cp", "auth-c", "k", 600_000).unwrap();
    let saved = format!(
        "{{\"page\":3,\"cursor\":\"a\u{1b}[2J{}\"}}",
        "x".repeat(300)
    );
    store
        .save_work_checkpoint("cp", "auth-c", held.generation, &saved)
        .unwrap();
    let checkpoint_line = |id: &str| {
        let o = leasehold(&["work", "show", "--store", &path, id]);
        assert_eq!(code(&o), 0, "{o:?}");
        stdout(&o)
            .lines()
            .find(|l| l.trim_start().starts_with("checkpoint "))
            .map(str::to_owned)
    };
    let line = checkpoint_line("cp").expect("a checkpoint line");
    let shown = format!("{{\"page\":3,\"cursor\":\"a\\x1b[2J{}", "x".repeat(171));
    assert_eq!(line, format!("  checkpoint {shown}…"));
    assert_eq!(checkpoint_line("fx"), None, "fx saved none");
}
