//! `leasehold work enqueue --from FILE|-` against SQLite and PostgreSQL: a file of items is
//! created once and answered `duplicate` line for line when run again, a run cut short is
//! finished by running it again, a conflicting line is counted and writes nothing, and a
//! bad line is one line naming it — before anything is written, for a file.

use std::path::Path;
use std::process::Output;

use leasehold::Store;
use leasehold::clock::{Clock, SystemClock};
use leasehold::model::HandlerVersion;
use leasehold::model::handler_key;
use leasehold::store::url::{self, OpenMode};
use serde_json::{Value, json};

use super::enqueue::{empty_store, enqueue, enqueue_with_stdin};
use super::{assert_one_line_failure, code, stderr, stdout};

/// More items than one batch holds, so a run commits several.
const ITEMS: u64 = 2_500;

/// Line `i` of the test files: an id, a key, or neither (keyed by its handler and payload).
fn line(i: u64) -> String {
    let payload = json!({ "n": i });
    match i % 3 {
        0 => json!({ "handler": "ping", "payload": payload, "id": format!("item-{i}") }),
        1 => json!({ "handler": "ping", "payload": payload, "idempotencyKey": format!("key-{i}") }),
        _ => json!({ "handler": "ping", "payload": payload }),
    }
    .to_string()
}

/// Lines `range` of the test file, each ending in a newline.
fn lines(range: std::ops::Range<u64>) -> String {
    range.map(|i| line(i) + "\n").collect()
}

fn from_file(url: &str, file: &Path, extra: &[&str]) -> Output {
    let path = file.display().to_string();
    let mut args = vec!["--from", path.as_str()];
    args.extend_from_slice(extra);
    enqueue(url, &args)
}

/// Every `--json` line of a run (whatever its exit code).
fn json_out(o: &Output) -> Vec<Value> {
    stdout(o)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

/// The summary (the last line) of a `--json` run.
fn summary(o: &Output) -> Value {
    json_out(o).pop().expect("a summary line")
}

/// (created, duplicate, conflict, refused) of a summary.
fn counts(summary: &Value) -> [u64; 4] {
    ["created", "duplicate", "conflict", "refused"].map(|k| summary[k].as_u64().unwrap())
}

fn work_count(store: &Store) -> u64 {
    store.overview().unwrap().work.iter().map(|c| c.count).sum()
}

#[test]
fn a_file_is_created_once_and_answered_duplicate_again() {
    let dir = tempfile::tempdir().unwrap();
    let (url, store) = empty_store(dir.path());
    once_then_duplicate(&url, &store, dir.path());
}

#[test]
fn a_cut_run_is_finished_by_running_it_again() {
    let dir = tempfile::tempdir().unwrap();
    let (url, store) = empty_store(dir.path());
    cut_then_finished(&url, &store, dir.path());
}

#[test]
fn a_conflicting_line_is_counted_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (url, store) = empty_store(dir.path());
    conflicts_counted(&url, &store, dir.path());
}

/// The same stories on PostgreSQL.
#[cfg(feature = "postgres")]
#[test]
fn postgres_bulk_enqueue_is_idempotent_alike() {
    let pg = super::support::postgres::database();
    let store = url::open(pg.url(), OpenMode::ReadWrite).unwrap();
    let dir = tempfile::tempdir().unwrap();
    once_then_duplicate(pg.url(), &store, dir.path());
    let pg = super::support::postgres::database();
    let store = url::open(pg.url(), OpenMode::ReadWrite).unwrap();
    cut_then_finished(pg.url(), &store, dir.path());
    conflicts_counted(pg.url(), &store, dir.path());
}

/// A file of [`ITEMS`] (and a blank line) → all created; the same file again → all
/// duplicates, nothing written.
fn once_then_duplicate(url: &str, store: &Store, dir: &Path) {
    let file = dir.join("items.jsonl");
    std::fs::write(&file, lines(0..10) + "\n" + &lines(10..ITEMS)).unwrap();
    let first = from_file(url, &file, &["--json"]);
    assert_eq!(code(&first), 0, "{}", stderr(&first));
    let done = summary(&first);
    assert_eq!(counts(&done), [ITEMS, 0, 0, 0], "{done}");
    assert_eq!(done["items"], ITEMS);
    assert_eq!(work_count(store), ITEMS);
    for id in ["item-0", "key-1"] {
        assert!(store.work(id).unwrap().is_some(), "{id}");
    }
    let revision = store.revision().unwrap();

    let again = from_file(url, &file, &["--json"]);
    assert_eq!(code(&again), 0, "{}", stderr(&again));
    assert_eq!(counts(&summary(&again)), [0, ITEMS, 0, 0]);
    assert_eq!(store.revision().unwrap(), revision, "nothing was written");
    assert_eq!(work_count(store), ITEMS);
}

/// Standard input whose line k is not JSON stops there: every line before it committed,
/// the summary and the error line say where. Fixed and run again, the run is finished.
fn cut_then_finished(url: &str, store: &Store, dir: &Path) {
    let cut_at = 1_501;
    let input = lines(0..cut_at - 1) + "{\"handler\": \"ping\", \n" + &lines(cut_at..ITEMS);
    let cut = enqueue_with_stdin(url, &["--from", "-", "--json"], input.into_bytes());
    let err = assert_one_line_failure(&cut, 2);
    assert!(
        err.contains("standard input: line 1501 is not valid JSON"),
        "{err}"
    );
    let stopped = summary(&cut);
    assert_eq!(counts(&stopped), [cut_at - 1, 0, 0, 1], "{stopped}");
    assert_eq!(stopped["stoppedAtLine"], cut_at);
    assert_eq!(work_count(store), cut_at - 1);

    let file = dir.join("fixed.jsonl");
    std::fs::write(&file, lines(0..ITEMS)).unwrap();
    let rest = from_file(url, &file, &["--json"]);
    assert_eq!(code(&rest), 0, "{}", stderr(&rest));
    assert_eq!(
        counts(&summary(&rest)),
        [ITEMS - (cut_at - 1), cut_at - 1, 0, 0]
    );
    assert_eq!(work_count(store), ITEMS);

    let piped = enqueue_with_stdin(url, &["--from", "-"], lines(0..ITEMS).into_bytes());
    assert_eq!(code(&piped), 0, "{}", stderr(&piped));
    assert!(
        stdout(&piped).starts_with(&format!(
            "created 0, duplicate {ITEMS}, conflict 0, refused 0 ({ITEMS} items from standard input in "
        )),
        "{}",
        stdout(&piped)
    );
}

/// A line whose key holds another payload is a conflict: reported with its line number,
/// counted, nothing written for it, the other lines of its batch created; exit 1.
fn conflicts_counted(url: &str, store: &Store, dir: &Path) {
    let stored = enqueue(
        url,
        &[
            "--handler",
            "charge",
            "--payload",
            r#"{"a":1}"#,
            "--id",
            "order-1",
        ],
    );
    assert_eq!(code(&stored), 0, "{}", stderr(&stored));
    let before = store.work("order-1").unwrap();
    let count = work_count(store);
    let file = dir.join("conflict.jsonl");
    std::fs::write(
        &file,
        [
            r#"{"handler":"charge","payload":{"a":2},"id":"order-1"}"#,
            r#"{"handler":"charge","payload":{"a":1},"id":"order-2"}"#,
            r#"{"handler":"charge","payload":{"a":1},"id":"order-1"}"#,
            r#"{"handler":"charge","payload":{"a":3},"idempotencyKey":"order-2"}"#,
        ]
        .join("\n"),
    )
    .unwrap();
    let o = from_file(url, &file, &["--json"]);
    let err = assert_one_line_failure(&o, 1);
    assert!(
        err.starts_with("leasehold: ITEMS_REFUSED: 2 of 4 items"),
        "{err}"
    );
    let out = json_out(&o);
    assert_eq!(out.len(), 3, "{out:?}");
    for (row, (line, id)) in out.iter().zip([(1, "order-1"), (4, "order-2")]) {
        assert_eq!(
            (
                row["line"].as_u64(),
                row["id"].as_str(),
                row["outcome"].as_str()
            ),
            (Some(line), Some(id), Some("conflict")),
            "{row}"
        );
        assert!(
            row["error"]
                .as_str()
                .unwrap()
                .contains("IDEMPOTENCY_CONFLICT"),
            "{row}"
        );
    }
    assert_eq!(counts(&out[2]), [1, 1, 2, 0]);
    assert_eq!(store.work("order-1").unwrap(), before);
    assert_eq!(work_count(store), count + 1);

    let text = from_file(url, &file, &[]);
    assert_eq!(code(&text), 1);
    assert!(
        stdout(&text).starts_with("line 1: conflict: IDEMPOTENCY_CONFLICT: work item order-1"),
        "{}",
        stdout(&text)
    );
}

#[test]
fn every_field_of_a_line_ends_up_in_the_item() {
    let dir = tempfile::tempdir().unwrap();
    let (url, store) = empty_store(dir.path());
    let file = dir.path().join("one.jsonl");
    std::fs::write(
        &file,
        r#"{"handler":"send-email","payload":{ "to": "ann", "n": 1 },"id":"mail-7","idempotencyKey":"mail-key-7","delay":"90s","maxAttempts":3,"priority":-4}"#,
    )
    .unwrap();
    let before = SystemClock.now();
    let o = from_file(&url, &file, &["--handler-version", "2.1.0"]);
    let after = SystemClock.now();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(
        stdout(&o).starts_with("created 1, duplicate 0, conflict 0, refused 0 (1 items from "),
        "{}",
        stdout(&o)
    );
    let item = store.work("mail-7").unwrap().expect("enqueued");
    assert_eq!(
        (
            item.handler.as_str(),
            item.idempotency_key.as_str(),
            item.payload.as_str(),
            item.max_attempts,
            item.priority,
        ),
        ("send-email", "mail-key-7", r#"{"n":1,"to":"ann"}"#, 3, -4)
    );
    assert!((before + 90_000..=after + 90_000).contains(&item.next_eligible_at));
    let v2 = HandlerVersion::parse("2.0.0").unwrap();
    assert_eq!(item.compat, handler_key("send-email", &v2));
}

#[test]
fn a_bad_line_in_a_file_refuses_the_file_before_anything_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let (url, store) = empty_store(dir.path());
    let seeded = enqueue(
        &url,
        &["--handler", "h", "--payload", "{}", "--id", "there"],
    );
    assert_eq!(code(&seeded), 0, "{}", stderr(&seeded));
    let revision = store.revision().unwrap();
    let file = dir.path().join("bad.jsonl");
    let path = file.display().to_string();
    let cases: [(String, String); 4] = [
        (
            lines(0..1_200) + r#"{"handler":"ping","payload":1,"prio":2}"#,
            format!("{path}: line 1201: unknown field `prio`"),
        ),
        (
            lines(0..3) + "\n" + r#"{"handler":"ping","payload":1,"id":"a\u001b[2J"}"#,
            format!("{path}: line 5: INVALID: work id: holds the control character"),
        ),
        (
            r#"{"handler":"ping","payload":1,"maxAttempts":0}"#.to_owned(),
            format!("{path}: line 1: maxAttempts must be at least 1"),
        ),
        (
            r#"{"handler":"ping"}"#.to_owned(),
            format!("{path}: line 1: missing field `payload`"),
        ),
    ];
    for (text, says) in cases {
        std::fs::write(&file, text).unwrap();
        let o = from_file(&url, &file, &["--json"]);
        let err = assert_one_line_failure(&o, 2);
        assert!(err.contains(&says), "{says}: {err}");
        assert!(err.ends_with("; nothing was enqueued\n"), "{err}");
        assert!(o.stdout.is_empty(), "{}", stdout(&o));
    }
    let missing = dir.path().join("missing.jsonl");
    let err = assert_one_line_failure(&from_file(&url, &missing, &[]), 2);
    assert!(err.contains("cannot read"), "{err}");
    let folder = from_file(&url, dir.path(), &[]);
    let err = assert_one_line_failure(&folder, 2);
    assert!(
        err.contains("a directory, not a file of JSON lines"),
        "{err}"
    );
    assert!(folder.stdout.is_empty(), "no summary: {}", stdout(&folder));
    let both = enqueue(&url, &["--from", "-", "--payload", "{}"]);
    let err = assert_one_line_failure(&both, 2);
    assert!(err.contains("--from"), "{err}");
    assert_eq!(store.revision().unwrap(), revision, "nothing was written");
    assert_eq!(work_count(&store), 1);
}

/// A pipe (`--from <(command)`) can be read only once: it streams, as `-` does.
#[test]
fn a_pipe_is_read_once_as_it_streams() {
    let dir = tempfile::tempdir().unwrap();
    let (url, store) = empty_store(dir.path());
    let fifo = dir.path().join("items.fifo");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    let writer = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::write(fifo, lines(0..10)).unwrap())
    };
    let o = from_file(&url, &fifo, &["--json"]);
    writer.join().unwrap();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(counts(&summary(&o)), [10, 0, 0, 0]);
    assert_eq!(work_count(&store), 10);
}
