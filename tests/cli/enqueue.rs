//! `leasehold work enqueue` against a SQLite store: every flag ends up in the item
//! `inspect work` lists and the store holds, a repeat is a duplicate that changes nothing,
//! another payload under the same key is refused, and bad input is one line, exit 2, with
//! the store's revision and items as they were.

use std::io::Write;
use std::process::{Command, Output, Stdio};

use leasehold::Store;
use leasehold::clock::{Clock, SystemClock};
use leasehold::model::HandlerVersion;
use leasehold::model::handler_key;
use leasehold::model::work::WorkFilter;
use leasehold::model::{PageRequest, WorkItem};
use leasehold::store::url::{self, OpenMode};
use serde_json::Value;

use super::{assert_one_line_failure, code, json_lines, leasehold, stderr};

pub(crate) fn empty_store(dir: &std::path::Path) -> (String, Store) {
    let url = format!("sqlite:{}", dir.join("store.db").display());
    let store = url::open(&url, OpenMode::ReadWrite).unwrap();
    (url, store)
}

/// `leasehold work enqueue --store URL ARGS…`.
pub(crate) fn enqueue(url: &str, args: &[&str]) -> Output {
    let mut all = vec!["work", "enqueue", "--store", url];
    all.extend_from_slice(args);
    leasehold(&all)
}

/// [`enqueue`] with `input` on standard input (written from another thread, and not
/// necessarily read whole: a refused payload is read only up to its bound).
pub(crate) fn enqueue_with_stdin(url: &str, args: &[&str], input: Vec<u8>) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_leasehold"))
        // Rewind witnesses of these throwaway stores stay out of the home directory.
        .env(
            "LEASEHOLD_STATE_DIR",
            std::env::temp_dir().join("leasehold-test-witnesses"),
        )
        .args(["work", "enqueue", "--store", url])
        .args(args)
        .env_remove("LEASEHOLD_STORE")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(&input);
    });
    let output = child.wait_with_output().unwrap();
    writer.join().unwrap();
    output
}

fn answer(o: &Output) -> Value {
    let mut rows = json_lines(o);
    assert_eq!(rows.len(), 1, "{rows:?}");
    rows.remove(0)
}

/// The `inspect work --json` row of `id`.
fn listed(url: &str, id: &str) -> Value {
    json_lines(&leasehold(&[
        "inspect", "work", "--store", url, "--json", "--limit", "100",
    ]))
    .into_iter()
    .find(|row| row["id"] == id)
    .unwrap_or_else(|| panic!("{id} is not listed"))
}

fn items(store: &Store) -> Vec<WorkItem> {
    store
        .list_work(&WorkFilter::default(), &PageRequest::first(100))
        .unwrap()
        .rows
}

/// The answer states what the store holds, field by field.
fn assert_answer_is_stored(answer: &Value, item: &WorkItem) {
    assert_eq!(answer["id"], item.id.as_str());
    assert_eq!(answer["handler"], item.handler.as_str());
    assert_eq!(answer["state"], item.state.as_str());
    assert_eq!(answer["idempotencyKey"], item.idempotency_key.as_str());
    assert_eq!(answer["nextEligibleAt"], item.next_eligible_at);
    assert_eq!(answer["maxAttempts"], item.max_attempts);
    assert_eq!(answer["priority"], item.priority);
}

#[test]
fn every_flag_ends_up_in_the_listed_item() {
    let dir = tempfile::tempdir().unwrap();
    let (url, store) = empty_store(dir.path());
    let before = SystemClock.now();
    let created = answer(&enqueue(
        &url,
        &[
            "--handler",
            "send-email",
            "--payload",
            r#"{ "to": "ann@example.com", "n": 1 }"#,
            "--id",
            "order-7-mail",
            "--idempotency-key",
            "mail-order-7",
            "--delay",
            "90s",
            "--max-attempts",
            "3",
            "--priority",
            "-4",
            "--handler-version",
            "2.1.0",
            "--json",
        ],
    ));
    let after = SystemClock.now();
    let item = store.work("order-7-mail").unwrap().expect("enqueued");
    assert_eq!(created["outcome"], "created");
    assert_answer_is_stored(&created, &item);
    assert_eq!(
        (
            item.handler.as_str(),
            item.state.as_str(),
            item.idempotency_key.as_str(),
            item.max_attempts,
            item.payload.as_str(),
        ),
        (
            "send-email",
            "pending",
            "mail-order-7",
            3,
            r#"{"n":1,"to":"ann@example.com"}"#
        )
    );
    assert!(
        (before + 90_000..=after + 90_000).contains(&item.next_eligible_at),
        "{before} {after} {}",
        item.next_eligible_at
    );
    let v2 = HandlerVersion::parse("2.0.0").unwrap();
    assert_eq!(
        item.compat,
        handler_key("send-email", &v2),
        "2.1.0 runs 2.0.0's work"
    );
    assert_eq!(item.priority, -4);

    let row = listed(&url, "order-7-mail");
    for field in [
        "id",
        "handler",
        "state",
        "idempotencyKey",
        "nextEligibleAt",
        "maxAttempts",
    ] {
        assert_eq!(row[field], created[field], "{field}: {row}");
    }
    assert_eq!(row["kind"], "effect");
    assert_eq!(row["compat"], item.compat.as_str());
}

#[test]
fn defaults_mint_an_id_key_by_the_id_due_now_at_the_builtin_version() {
    let dir = tempfile::tempdir().unwrap();
    let (url, store) = empty_store(dir.path());
    let before = SystemClock.now();
    let created = answer(&enqueue(
        &url,
        &["--handler", "ping", "--payload", "[]", "--json"],
    ));
    let after = SystemClock.now();
    let id = created["id"].as_str().unwrap();
    assert!(id.starts_with("work-"), "{id}");
    let item = store.work(id).unwrap().expect("enqueued");
    assert_answer_is_stored(&created, &item);
    assert_eq!(item.idempotency_key, id, "the key defaults to the id");
    assert_eq!(item.logical_effect_id, id);
    assert_eq!(item.max_attempts, 5);
    assert_eq!(item.priority, 0, "the default priority");
    assert!((before..=after).contains(&item.next_eligible_at));
    assert_eq!(item.compat, handler_key("ping", &HandlerVersion::demo()));
    assert_eq!(listed(&url, id)["state"], "pending");

    let second = answer(&enqueue(
        &url,
        &["--handler", "ping", "--payload", "[]", "--json"],
    ));
    assert_eq!(second["outcome"], "created");
    assert_ne!(second["id"], created["id"], "each run mints a fresh id");

    let keyed = answer(&enqueue(
        &url,
        &[
            "--handler",
            "ping",
            "--payload",
            "{}",
            "--idempotency-key",
            "order-9",
            "--json",
        ],
    ));
    assert_eq!(
        (keyed["id"].as_str(), keyed["idempotencyKey"].as_str()),
        (Some("order-9"), Some("order-9")),
        "a key without an id names the item"
    );

    let piped = enqueue_with_stdin(
        &url,
        &["--handler", "ping", "--payload", "-", "--id", "piped"],
        br#"{"from": "stdin"}"#.to_vec(),
    );
    assert_eq!(super::code(&piped), 0, "{}", super::stderr(&piped));
    assert!(
        super::stdout(&piped).starts_with("created work item piped (handler ping, pending"),
        "{}",
        super::stdout(&piped)
    );
    assert_eq!(
        store.work("piped").unwrap().unwrap().payload,
        r#"{"from":"stdin"}"#
    );
    assert_eq!(items(&store).len(), 4);
}

#[test]
fn a_repeat_is_a_duplicate_and_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (url, store) = empty_store(dir.path());
    a_repeat_changes_nothing(&url, &store);
}

#[test]
fn another_effect_under_the_same_id_or_key_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (url, store) = empty_store(dir.path());
    another_effect_is_refused(&url, &store);
}

#[test]
fn a_known_key_is_one_item_whatever_the_id() {
    let dir = tempfile::tempdir().unwrap();
    let (url, store) = empty_store(dir.path());
    one_key_one_item(&url, &store);
}

/// The same stories on PostgreSQL, where the store's reads and writes are other SQL.
#[cfg(feature = "postgres")]
#[test]
fn postgres_answers_repeats_and_conflicts_alike() {
    let pg = super::support::postgres::database();
    let store = url::open(pg.url(), OpenMode::ReadWrite).unwrap();
    a_repeat_changes_nothing(pg.url(), &store);
    another_effect_is_refused(pg.url(), &store);
    one_key_one_item(pg.url(), &store);
}

/// `--id X --idempotency-key K`, then `--id Y --idempotency-key K`, then
/// `--idempotency-key K` alone: one item, X; each repeat answers `duplicate` naming it and
/// writes nothing. Another payload under K, whatever the id, is `IDEMPOTENCY_CONFLICT`:
/// one line, exit 1, nothing written.
fn one_key_one_item(url: &str, store: &Store) {
    let count = items(store).len();
    let offer = |id: Option<&str>, payload: &str| {
        let mut args = vec![
            "--handler",
            "charge-card",
            "--payload",
            payload,
            "--idempotency-key",
            "order-77",
            "--json",
        ];
        if let Some(id) = id {
            args.extend(["--id", id]);
        }
        enqueue(url, &args)
    };
    let first = answer(&offer(Some("pay-x"), r#"{"amount": 77}"#));
    assert_eq!(first["outcome"], "created");
    let stored = store.work("pay-x").unwrap().unwrap();
    let revision = store.revision().unwrap();
    for id in [Some("pay-y"), None] {
        let again = offer(id, r#"{"amount":77}"#);
        assert_eq!(super::code(&again), 0, "{}", super::stderr(&again));
        let again = answer(&again);
        assert_eq!(again["outcome"], "duplicate", "{id:?}");
        assert_answer_is_stored(&again, &stored);
    }
    for id in [Some("pay-z"), None, Some("pay-x")] {
        let o = offer(id, r#"{"amount": 78}"#);
        let err = assert_one_line_failure(&o, 1);
        assert!(
            err.contains("IDEMPOTENCY_CONFLICT") && err.contains("work item pay-x"),
            "{id:?}: {err}"
        );
        assert!(err.contains("another payload"), "{err}");
        assert!(o.stdout.is_empty(), "{}", super::stdout(&o));
    }
    assert_eq!(store.revision().unwrap(), revision, "nothing was written");
    for id in ["pay-y", "pay-z", "order-77"] {
        assert_eq!(store.work(id).unwrap(), None, "{id}");
    }
    assert_eq!(items(store).len(), count + 1);
}

fn a_repeat_changes_nothing(url: &str, store: &Store) {
    let count = items(store).len();
    let offer = [
        "--handler",
        "charge",
        "--payload",
        r#"{"amount": 12, "card": "x"}"#,
        "--idempotency-key",
        "charge-12",
        "--json",
    ];
    let first = answer(&enqueue(url, &offer));
    assert_eq!(first["outcome"], "created");
    let stored = store.work("charge-12").unwrap().unwrap();
    let revision = store.revision().unwrap();

    // The same key, the payload spelt differently, another delay, budget and build.
    let again = answer(&enqueue(
        url,
        &[
            "--handler",
            "charge",
            "--payload",
            r#"{"card":"x","amount":12}"#,
            "--idempotency-key",
            "charge-12",
            "--delay",
            "1h",
            "--max-attempts",
            "9",
            "--handler-version",
            "2.1.0",
            "--json",
        ],
    ));
    assert_eq!(again["outcome"], "duplicate");
    assert_answer_is_stored(&again, &stored);
    let by_id = answer(&enqueue(
        url,
        &[
            "--handler",
            "charge",
            "--payload",
            r#"{"amount":12,"card":"x"}"#,
            "--id",
            "charge-12",
            "--json",
        ],
    ));
    assert_eq!(by_id["outcome"], "duplicate");
    assert_eq!(store.revision().unwrap(), revision, "nothing was written");
    assert_eq!(store.work("charge-12").unwrap(), Some(stored.clone()));
    assert_eq!(items(store).len(), count + 1);

    // A repeat after an authority took the item says where the item is now.
    let claimed = store
        .claim("charge-12", "auth-a", &stored.compat, 30_000)
        .unwrap();
    let later = answer(&enqueue(url, &offer));
    assert_eq!(later["outcome"], "duplicate");
    assert_answer_is_stored(&later, &claimed);
    assert_eq!(later["state"], "claimed");
    let text = enqueue(url, &offer[..6]);
    assert_eq!(super::code(&text), 0, "{}", super::stderr(&text));
    assert!(
        super::stdout(&text).starts_with("duplicate work item charge-12 (handler charge, claimed"),
        "{}",
        super::stdout(&text)
    );
}

fn another_effect_is_refused(url: &str, store: &Store) {
    let count = items(store).len();
    let first = enqueue(
        url,
        &[
            "--handler",
            "charge",
            "--payload",
            r#"{"amount": 12}"#,
            "--id",
            "charge-1",
            "--idempotency-key",
            "card-charge-1",
        ],
    );
    assert_eq!(super::code(&first), 0, "{}", super::stderr(&first));
    let stored = store.work("charge-1").unwrap().unwrap();
    let revision = store.revision().unwrap();
    let cases: [(&[&str], &str); 4] = [
        (
            &["--payload", r#"{"amount": 13}"#, "--id", "charge-1"],
            "another payload",
        ),
        (
            &[
                "--payload",
                "-",
                "--id",
                "charge-1",
                "--idempotency-key",
                "card-charge-1",
            ],
            "another payload",
        ),
        (
            &[
                "--payload",
                r#"{"amount": 12}"#,
                "--id",
                "charge-1",
                "--idempotency-key",
                "card-charge-2",
            ],
            "another idempotency key",
        ),
        (
            &[
                "--payload",
                r#"{"amount": 12}"#,
                "--idempotency-key",
                "charge-1",
            ],
            "another idempotency key",
        ),
    ];
    for (args, what) in cases {
        let mut all = vec!["--handler", "charge", "--json"];
        all.extend_from_slice(args);
        let o = enqueue_with_stdin(url, &all, br#"{"amount": 14}"#.to_vec());
        let err = assert_one_line_failure(&o, 1);
        assert!(err.contains("IDEMPOTENCY_CONFLICT"), "{err}");
        assert!(err.contains(what), "{what}: {err}");
        assert!(o.stdout.is_empty(), "{}", super::stdout(&o));
    }
    let other_handler = enqueue(
        url,
        &[
            "--handler",
            "refund",
            "--payload",
            r#"{"amount": 12}"#,
            "--id",
            "charge-1",
        ],
    );
    let err = assert_one_line_failure(&other_handler, 1);
    assert!(err.contains("another handler"), "{err}");
    assert_eq!(store.revision().unwrap(), revision, "nothing was written");
    assert_eq!(store.work("charge-1").unwrap(), Some(stored));
    assert_eq!(items(store).len(), count + 1);
}

#[test]
#[expect(clippy::too_many_lines, reason = "a table: one case per refusal")]
fn bad_input_is_one_line_exit_2_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (url, store) = empty_store(dir.path());
    let seeded = enqueue(
        &url,
        &["--handler", "h", "--payload", "{}", "--id", "there"],
    );
    assert_eq!(super::code(&seeded), 0, "{}", super::stderr(&seeded));
    let missing = dir.path().join("typo.db").display().to_string();
    let revision = store.revision().unwrap();
    let before = items(&store);
    let cases: [(&str, &[&str], &str); 15] = [
        (
            &url,
            &["--handler", "h", "--payload", "{"],
            "not valid JSON",
        ),
        (
            &url,
            &["--handler", "h", "--payload", "{}", "--id", " "],
            "work id: starts or ends with whitespace",
        ),
        (
            &url,
            &["--handler", "h", "--payload", "{}", "--id", "there "],
            "work id: starts or ends with whitespace",
        ),
        (&url, &["--handler", "h", "--payload", ""], "not valid JSON"),
        (
            &url,
            &[
                "--handler",
                "h",
                "--payload",
                "{}",
                "--id",
                "bad\u{1b}[31mid",
            ],
            "work id: holds the control character",
        ),
        (
            &url,
            &["--handler", "h\u{202e}", "--payload", "{}"],
            "handler: holds U+202E",
        ),
        (
            &url,
            &["--handler", "h", "--payload", "{}", "--idempotency-key", ""],
            "idempotency key: must not be empty",
        ),
        (
            &url,
            &["--handler", "h", "--payload", "{}", "--delay", "soon"],
            "cannot read --delay soon",
        ),
        (
            &url,
            &["--handler", "h", "--payload", "{}", "--delay=-5s"],
            "--delay",
        ),
        (
            &url,
            &[
                "--handler",
                "h",
                "--payload",
                "{}",
                "--delay",
                "99999999999999d",
            ],
            "(at most 36525d)",
        ),
        (
            &url,
            &["--handler", "h", "--payload", "{}", "--max-attempts", "0"],
            "--max-attempts",
        ),
        (
            &url,
            &["--handler", "h", "--payload", "{}", "--priority", "high"],
            "--priority",
        ),
        (&url, &["--handler", "h"], "--payload"),
        (&url, &["--payload", "{}"], "--handler"),
        (&missing, &["--handler", "h", "--payload", "{}"], "typo.db"),
    ];
    for (target, args, says) in cases {
        let err = assert_one_line_failure(&enqueue(target, args), 2);
        assert!(err.contains(says), "{says}: {err}");
        assert!(
            !err.contains('\u{1b}') && !err.contains('\u{202e}'),
            "{err}"
        );
    }
    let oversize = format!("\"{}\"", "x".repeat(1024 * 1024));
    let piped = enqueue_with_stdin(
        &url,
        &["--handler", "h", "--payload", "-"],
        oversize.into_bytes(),
    );
    let err = assert_one_line_failure(&piped, 2);
    assert!(err.contains("larger than 1 MiB"), "{err}");
    let flag_first = enqueue_with_stdin(
        &url,
        &["--handler", "h", "--payload", "-", "--delay", "soon"],
        b"{".to_vec(),
    );
    let err = assert_one_line_failure(&flag_first, 2);
    assert!(
        err.contains("--delay"),
        "flags are checked before standard input is read: {err}"
    );
    let not_json = enqueue_with_stdin(&url, &["--handler", "h", "--payload", "-"], b"x".to_vec());
    assert!(assert_one_line_failure(&not_json, 2).contains("not valid JSON"));

    assert!(
        !std::path::Path::new(&missing).exists(),
        "a mistyped store is never created"
    );
    assert_eq!(store.revision().unwrap(), revision, "nothing was written");
    assert_eq!(items(&store), before);
}

/// A payload too large for an argument is read from a file with `@FILE`, by every producer
/// command; a missing file is one line, exit 2, nothing written.
#[test]
fn payloads_are_read_from_a_file_after_an_at_sign() {
    let dir = tempfile::tempdir().unwrap();
    let (url, store) = empty_store(dir.path());
    // Larger than a comfortable command line, well under the bound.
    let big = serde_json::json!({ "rows": vec!["x".repeat(100); 2_000] });
    let file = dir.path().join("payload.json");
    std::fs::write(&file, big.to_string()).unwrap();
    let at = format!("@{}", file.display());
    let o = enqueue(
        &url,
        &["--handler", "import", "--id", "big-1", "--payload", &at],
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let item = store.work("big-1").unwrap().unwrap();
    assert_eq!(serde_json::from_str::<Value>(&item.payload).unwrap(), big);
    let event = leasehold(&[
        "event",
        "--store",
        &url,
        "--type",
        "imported",
        "--source",
        "s",
        "--id",
        "e1",
        "--payload",
        &at,
    ]);
    assert_eq!(code(&event), 0, "{}", stderr(&event));
    let revision = store.revision().unwrap();
    let missing = enqueue(
        &url,
        &["--handler", "import", "--payload", "@/nonexistent.json"],
    );
    assert_eq!(code(&missing), 2);
    assert!(
        stderr(&missing).contains("cannot read --payload"),
        "{}",
        stderr(&missing)
    );
    assert_eq!(store.revision().unwrap(), revision, "nothing written");
}

/// With no authority running (a deploy window, an outage), work is stamped with the
/// version the authority heard from last registered, stopped or not, so the fleet that
/// comes back claims it; standard error says so. A handler no authority ever registered
/// takes the default version, with the registered name it may have meant. With the fleet
/// running, nothing is said.
#[test]
fn without_a_running_fleet_work_takes_the_version_registered_last() {
    use crate::support::authorities::registration;

    let dir = tempfile::tempdir().unwrap();
    let (url, store) = empty_store(dir.path());
    let now = SystemClock.now();
    let stopped = |id: &str, version: &str, at: i64| {
        let mut row = registration(id, &[("ship", version)], at);
        row.stopped_at = Some(at);
        store.register_authority(&row).unwrap();
    };
    // The fleet at 1.4.0 an hour ago, then at 2.1.0 until a minute ago.
    stopped("old-1", "1.4.0", now - 3_600_000);
    stopped("new-1", "2.1.0", now - 60_000);
    let key = |v: &str| handler_key("ship", &HandlerVersion::parse(v).unwrap());

    let o = enqueue(
        &url,
        &["--handler", "ship", "--payload", "{}", "--id", "s1"],
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(store.work("s1").unwrap().unwrap().compat, key("2.1.0"));
    assert_eq!(
        stderr(&o).trim(),
        "note: no running authority runs handler ship: stamped 2.1.0, the version new-1 registered last (--handler-version to choose)"
    );

    let o = enqueue(&url, &["--handler", "shp", "--payload", "{}", "--id", "s2"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(
        store.work("s2").unwrap().unwrap().compat,
        handler_key("shp", &HandlerVersion::demo())
    );
    assert_eq!(
        stderr(&o).trim(),
        "note: no authority has registered handler shp (did you mean ship?): stamped the default version 1.0.0 (--handler-version to choose)"
    );

    // The fleet back and running at 2.1.3: its version, and no note.
    store
        .register_authority(&registration("new-2", &[("ship", "2.1.3")], now))
        .unwrap();
    let o = enqueue(
        &url,
        &["--handler", "ship", "--payload", "{}", "--id", "s3"],
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(store.work("s3").unwrap().unwrap().compat, key("2.1.3"));
    assert_eq!(stderr(&o), "");
}

/// `workflow start` follows the same rule as `work enqueue`: with the fleet stopped, each
/// action's handler takes the version the authority heard from last registered, said in a
/// note per handler, so the instance is claimed when that fleet comes back — the same
/// build as an instance started with `--handler-version` at that version.
#[test]
fn without_a_running_fleet_a_workflow_takes_the_versions_registered_last() {
    use crate::support::authorities::registration;

    let dir = tempfile::tempdir().unwrap();
    let (url, store) = empty_store(dir.path());
    let catalog = leasehold::workflow::Catalog::demo();
    for (_, text) in leasehold::workflow::SHIPPED_DEFINITIONS {
        store.deploy_workflow(text, &catalog).unwrap().unwrap();
    }
    let actions = store.workflow_actions("integration-call").unwrap();
    assert!(!actions.is_empty());
    let handlers: Vec<(&str, &str)> = actions.iter().map(|h| (h.as_str(), "2.1.0")).collect();
    let mut row = registration("fleet-1", &handlers, SystemClock.now() - 60_000);
    row.stopped_at = Some(row.heartbeat_at);
    store.register_authority(&row).unwrap();

    let start = |partner: &str, extra: &[&str]| {
        let args = serde_json::json!({"partner": partner, "request": {"op": "sync"}}).to_string();
        let mut all = vec![
            "workflow",
            "start",
            "--store",
            &url,
            "integration-call",
            "--args",
            &args,
        ];
        all.extend_from_slice(extra);
        let o = leasehold(&all);
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        let id = super::stdout(&o)
            .split_whitespace()
            .nth(1)
            .unwrap()
            .to_owned();
        (store.instance(&id).unwrap().unwrap().compat, stderr(&o))
    };
    let (fallback, notes) = start("acme", &[]);
    let told: Vec<&str> = notes.lines().collect();
    assert_eq!(told.len(), actions.len(), "{notes}");
    for handler in &actions {
        let note = format!(
            "note: no running authority runs handler {handler}: stamped 2.1.0, the version fleet-1 registered last (--handler-version to choose)"
        );
        assert!(told.contains(&note.as_str()), "{notes}");
    }
    let (chosen, quiet) = start("globex", &["--handler-version", "2.1.0"]);
    assert_eq!(fallback, chosen, "the same build as one started for 2.1.0");
    assert_eq!(quiet, "");
    let (default, _) = start("initech", &["--handler-version", "1.0.0"]);
    assert_ne!(fallback, default, "not the default version's build");
}
