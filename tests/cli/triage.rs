//! `leasehold work requeue` and `leasehold work discard` against a SQLite store holding a
//! dead letter made through the library on a manual clock: exit codes, one-line errors,
//! `--json` answers, what `inspect work` lists afterwards, the audit entries (the OS
//! account, the outcome and the reason), and bad input that changes nothing.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use leasehold::Store;
use leasehold::clock::{Clock, ManualClock, SystemClock};
use leasehold::foundation::actor::operator;
use leasehold::ids::SeededIds;
use leasehold::model::work::NewWork;
use leasehold::model::{AuditEntry, Failure, FailureClass, PageRequest, WorkItem, WorkState};
use leasehold::store::sqlite::SqliteBackend;
use leasehold::store::url::OpenMode;
use serde_json::Value;

use super::{assert_one_line_failure, code, leasehold, stderr, stdout};

struct Setup {
    dir: tempfile::TempDir,
    path: String,
}

impl Setup {
    fn store(&self) -> Store {
        Store::new(
            Arc::new(SqliteBackend::open(&self.path, OpenMode::Existing).unwrap()),
            Arc::new(SystemClock),
            Arc::new(SeededIds::new(3)),
        )
    }

    fn item(&self, id: &str) -> WorkItem {
        self.store().work(id).unwrap().unwrap()
    }

    fn audit(&self) -> Vec<AuditEntry> {
        let mut rows = self
            .store()
            .list_audit(&PageRequest::first(100))
            .unwrap()
            .rows;
        rows.sort_by_key(|a| a.id);
        rows
    }

    fn run(&self, args: &[&str]) -> std::process::Output {
        let mut all = vec!["work", args[0], "--store", &self.path];
        all.extend(&args[1..]);
        leasehold(&all)
    }
}

/// A store with `dead` (two claims that lapsed unrecorded: a dead letter), `done`
/// (succeeded) and `waiting` (pending), made an hour in the past so the CLI's system clock
/// finds every lease over.
fn setup() -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.db").display().to_string();
    let clock = ManualClock::new(SystemClock.now() - 3_600_000);
    let store = Store::new(
        Arc::new(SqliteBackend::open(&path, OpenMode::ReadWrite).unwrap()),
        Arc::new(clock.clone()),
        Arc::new(SeededIds::new(9)),
    );
    let dead = NewWork {
        max_attempts: 2,
        idempotency_key: Some("idem-dead".into()),
        ..NewWork::effect("dead", "send-email", "{}")
    };
    store.enqueue(dead, "k").unwrap();
    store
        .enqueue(NewWork::effect("done", "send-email", "{}"), "k")
        .unwrap();
    let done = store.claim("done", "auth-a", "k", 1_000).unwrap();
    store
        .complete("done", "auth-a", done.generation, None)
        .unwrap();
    for owner in ["auth-a", "auth-b"] {
        store.claim("dead", owner, "k", 1_000).unwrap();
        clock.advance(60_000);
    }
    assert_eq!(
        store
            .claim("dead", "auth-c", "k", 1_000)
            .unwrap_err()
            .code(),
        "already-terminal"
    );
    let waiting = NewWork {
        not_before: Some(SystemClock.now() + 86_400_000),
        ..NewWork::effect("waiting", "send-email", "{}")
    };
    store.enqueue(waiting, "k").unwrap();
    assert!(store.work("dead").unwrap().unwrap().is_dead_letter());
    Setup { dir, path }
}

/// Every failed item, the discarded ones named with the rest.
fn failed_rows(s: &Setup) -> Vec<Value> {
    let o = leasehold(&[
        "inspect",
        "work",
        "--store",
        &s.path,
        "--filter",
        "state:failed,discarded",
        "--json",
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    stdout(&o)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .filter(|v: &Value| v.get("id").is_some())
        .collect()
}

#[test]
fn a_dead_letter_is_listed_then_requeued_once() {
    let s = setup();
    let listed = failed_rows(&s);
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!(listed[0]["id"], "dead");
    assert_eq!(listed[0]["deadLetter"], true);
    assert_eq!(listed[0]["lastFailure"]["class"], "uncertain-exhausted");
    let table = leasehold(&[
        "inspect",
        "work",
        "--store",
        &s.path,
        "--filter",
        "state:failed",
    ]);
    assert!(
        stdout(&table).contains("failed (uncertain-exhausted)"),
        "{}",
        stdout(&table)
    );

    let o = s.run(&["requeue", "dead", "--reason", "handler fixed", "--json"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let answer: Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    assert_eq!(answer["outcome"], "requeued");
    assert_eq!(answer["changed"], true);
    let item = s.item("dead");
    assert_eq!(
        (
            item.state,
            item.attempt_number,
            item.idempotency_key.as_str()
        ),
        (WorkState::Pending, 0, "idem-dead")
    );
    assert_eq!(answer["item"]["state"], "pending");

    let again = s.run(&["requeue", "dead"]);
    assert_eq!(code(&again), 0, "{}", stderr(&again));
    assert!(
        stdout(&again).contains("already requeued"),
        "{}",
        stdout(&again)
    );
    assert_eq!(s.item("dead"), item, "a repeat changes nothing");
    assert!(failed_rows(&s).is_empty());

    let refused = s.run(&["requeue", "done", "--reason", "again?"]);
    assert_eq!(code(&refused), 1);
    assert_eq!(stderr(&refused).lines().count(), 1, "{}", stderr(&refused));
    assert!(
        stderr(&refused).contains("succeeded"),
        "{}",
        stderr(&refused)
    );

    let said: Vec<(String, String, String, String)> = s
        .audit()
        .into_iter()
        .map(|a| (a.actor, a.action, a.target, a.outcome))
        .collect();
    let me = operator();
    assert_eq!(
        said,
        [
            (
                me.clone(),
                "requeue-work".into(),
                "dead".into(),
                "requeued; reason: handler fixed".into()
            ),
            (
                me.clone(),
                "requeue-work".into(),
                "dead".into(),
                "already requeued".into()
            ),
            (
                me,
                "requeue-work".into(),
                "done".into(),
                "refused: succeeded — nothing to requeue; reason: again?".into()
            ),
        ]
    );
}

/// A failed item says why it ended, in the `inspect work` table and as `ending` in its
/// JSON: retries used up, a terminal failure, a dead letter, an operator's discard.
#[test]
fn a_failed_item_says_why_it_ended() {
    let s = setup();
    let store = s.store();
    for (id, class, code) in [
        ("spent", FailureClass::Retryable, "RATE_LIMITED"),
        ("refused", FailureClass::Terminal, "BAD_ADDRESS"),
    ] {
        let spec = NewWork {
            max_attempts: 1,
            ..NewWork::effect(id, "send-email", "{}")
        };
        store.enqueue(spec, "k").unwrap();
        let claimed = store.claim(id, "auth-a", "k", 60_000).unwrap();
        let failure = Failure {
            class,
            code: code.into(),
            message: "no".into(),
        };
        let failed = store
            .fail(id, "auth-a", claimed.generation, failure)
            .unwrap();
        assert_eq!(failed.state, WorkState::Failed);
    }
    let o = s.run(&["discard", "waiting", "--reason", "withdrawn"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(stdout(&o).contains("(now discarded)"), "{}", stdout(&o));

    let endings: BTreeMap<String, Value> = failed_rows(&s)
        .into_iter()
        .map(|row| {
            (
                row["id"].as_str().unwrap().to_owned(),
                row["ending"].clone(),
            )
        })
        .collect();
    assert_eq!(
        endings,
        BTreeMap::from([
            ("dead".to_owned(), Value::from("uncertain-exhausted")),
            ("refused".to_owned(), Value::from("terminal")),
            ("spent".to_owned(), Value::from("retries-exhausted")),
            ("waiting".to_owned(), Value::from("discarded")),
        ])
    );
    let table = leasehold(&["inspect", "work", "--store", &s.path]);
    let text = stdout(&table);
    for (id, says) in [
        ("dead", "failed (uncertain-exhausted)"),
        ("refused", "failed (terminal)"),
        ("spent", "failed (retries exhausted)"),
        ("waiting", "discarded"),
        ("done", "succeeded"),
    ] {
        let line = text
            .lines()
            .find(|l| l.split_whitespace().next() == Some(id))
            .unwrap_or_else(|| panic!("no {id} in {text}"));
        assert!(line.contains(says), "{id}: {line}");
    }
}

#[test]
fn discard_needs_a_reason_and_spares_a_succeeded_item() {
    let s = setup();
    let missing = s.run(&["discard", "waiting"]);
    assert_eq!(code(&missing), 2, "clap refuses a discard without --reason");
    let empty = s.run(&["discard", "waiting", "--reason", " "]);
    assert_eq!(code(&empty), 2, "{}", stderr(&empty));
    assert_eq!(stderr(&empty).lines().count(), 1);
    assert_eq!(s.item("waiting").state, WorkState::Pending);

    let o = s.run(&["discard", "waiting", "--reason", "order withdrawn"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let item = s.item("waiting");
    assert_eq!(item.state, WorkState::Failed);
    assert!(
        item.last_failure
            .as_ref()
            .is_some_and(|f| f.message.ends_with(": order withdrawn")),
        "{item:?}"
    );
    // `work show` says how it ended, who discarded it and why, as `inspect work` does.
    let shown = s.run(&["show", "waiting"]);
    assert_eq!(code(&shown), 0, "{}", stderr(&shown));
    let ended = stdout(&shown)
        .lines()
        .find(|l| l.trim_start().starts_with("ended"))
        .map(str::to_owned);
    assert!(
        ended
            .as_deref()
            .is_some_and(|l| l.contains("DISCARDED") && l.contains(": order withdrawn")),
        "{}",
        stdout(&shown)
    );
    let shown = s.run(&["show", "waiting", "--json"]);
    let detail: Value = serde_json::from_str(stdout(&shown).trim()).unwrap();
    assert_eq!(detail["ending"], "discarded", "{detail}");
    let again = s.run(&["discard", "waiting", "--reason", "dup", "--json"]);
    assert_eq!(code(&again), 0, "{}", stderr(&again));
    let answer: Value = serde_json::from_str(stdout(&again).trim()).unwrap();
    assert_eq!(
        (answer["outcome"].as_str(), answer["changed"].as_bool()),
        (Some("already discarded"), Some(false))
    );
    assert_eq!(s.item("waiting"), item, "a repeat changes nothing");

    let spared = s.run(&["discard", "done", "--reason", "oops"]);
    assert_eq!(code(&spared), 1, "{}", stderr(&spared));
    assert_eq!(s.item("done").state, WorkState::Succeeded);
    let outcomes: Vec<String> = s.audit().into_iter().map(|a| a.outcome).collect();
    assert_eq!(
        outcomes,
        [
            "discarded; reason: order withdrawn",
            "already discarded; reason: dup",
            "refused: succeeded — a finished effect is not discarded; reason: oops",
        ]
    );
}

#[test]
fn bad_ids_and_missing_stores_change_nothing() {
    let s = setup();
    let before = s.audit().len();
    let long = "x".repeat(10_000);
    for hostile in ["dead\u{1b}[2J", "", "a\nb", "de\u{202e}ad", long.as_str()] {
        for verb in ["requeue", "discard"] {
            let o = s.run(&[verb, hostile, "--reason", "r"]);
            assert_eq!(code(&o), 2, "{verb} {hostile:?}: {}", stderr(&o));
            assert_eq!(stderr(&o).lines().count(), 1, "{}", stderr(&o));
        }
    }
    let unknown = s.run(&["requeue", "no-such-item"]);
    assert_eq!(code(&unknown), 2, "{}", stderr(&unknown));
    assert_eq!(
        s.audit().len(),
        before + 1,
        "only the unknown id reached the store"
    );

    let missing = s.dir.path().join("typo.db").display().to_string();
    for verb in ["requeue", "discard"] {
        let o = leasehold(&["work", verb, "--store", &missing, "dead", "--reason", "r"]);
        assert_eq!(code(&o), 2, "{}", stderr(&o));
        assert_eq!(stderr(&o).lines().count(), 1, "{}", stderr(&o));
    }
    assert!(!Path::new(&missing).exists(), "a typo creates no store");
}

/// The counts an operator reads — `inspect overview`, `inspect metrics` — name a discarded
/// item `discarded`, apart from the failures nobody decided, so each count is what the
/// matching filter lists (`state:failed`, `state:discarded`); a requeue moves it back.
#[test]
fn the_counts_name_a_discard_apart_from_the_failures_as_the_filters_do() {
    let s = setup();
    let o = s.run(&["discard", "waiting", "--reason", "order withdrawn"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let listed = |filter: &str| {
        let o = leasehold(&[
            "inspect", "work", "--store", &s.path, "--filter", filter, "--json",
        ]);
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        let rows = stdout(&o).lines().filter(|l| l.contains("\"id\"")).count();
        u64::try_from(rows).unwrap()
    };
    let counted = || {
        let o = leasehold(&["inspect", "overview", "--store", &s.path, "--json"]);
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        let row: Value = serde_json::from_str(stdout(&o).trim()).unwrap();
        let mut by_state = BTreeMap::new();
        for cell in row["work"].as_array().unwrap() {
            *by_state
                .entry(cell["state"].as_str().unwrap().to_owned())
                .or_insert(0) += cell["count"].as_u64().unwrap();
        }
        by_state
    };
    let metric = |state: &str| {
        let o = leasehold(&["inspect", "metrics", "--store", &s.path]);
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        let sample = format!("leasehold_fleet_work{{kind=\"effect\",state=\"{state}\"}} ");
        stdout(&o)
            .lines()
            .find_map(|l| l.strip_prefix(&sample).map(|n| n.parse::<u64>().unwrap()))
            .unwrap_or(0)
    };

    let counts = counted();
    assert_eq!(
        counts.get("failed"),
        Some(&1),
        "the dead letter: {counts:?}"
    );
    assert_eq!(counts.get("discarded"), Some(&1), "{counts:?}");
    assert_eq!((listed("state:failed"), listed("state:discarded")), (1, 1));
    assert_eq!((metric("failed"), metric("discarded")), (1, 1));

    let o = s.run(&["requeue", "waiting", "--reason", "after all"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let counts = counted();
    assert_eq!(counts.get("discarded"), None, "{counts:?}");
    assert_eq!(
        (counts.get("failed"), counts.get("pending")),
        (Some(&1), Some(&1))
    );
    assert_eq!((listed("state:discarded"), metric("discarded")), (0, 0));
}

/// Every refusal of a triage verb starts with its stable code, one item or a filter's
/// matches, the words after it as they always were: `already-terminal` for a finished
/// item, `WORK_STATE_MISMATCH` for an unfinished one the verb does not act on, and
/// `ITEMS_REFUSED` for a bulk run any of whose matches was refused.
#[test]
fn every_triage_refusal_starts_with_its_code() {
    let s = setup();
    let store = s.store();
    store
        .enqueue(NewWork::effect("busy", "send-email", "{}"), "k")
        .unwrap();
    store.claim("busy", "auth-a", "k", 600_000).unwrap();
    for (args, line) in [
        (
            vec!["requeue", "done"],
            "already-terminal: done: refused: succeeded — nothing to requeue",
        ),
        (
            vec!["requeue", "waiting"],
            "WORK_STATE_MISMATCH: waiting: refused: pending — only a failed item is requeued",
        ),
        (
            vec!["discard", "done", "--reason", "r"],
            "already-terminal: done: refused: succeeded — a finished effect is not discarded",
        ),
        (
            vec!["retry-now", "dead"],
            "already-terminal: dead: refused: failed — requeue it for a fresh budget",
        ),
        (
            vec!["retry-now", "done"],
            "already-terminal: done: refused: succeeded — nothing to retry",
        ),
        (
            vec!["retry-now", "busy"],
            "WORK_STATE_MISMATCH: busy: refused: claimed — it is running now",
        ),
        (
            vec!["requeue", "--filter", "state:succeeded"],
            "ITEMS_REFUSED: 1 of 1 matched item(s) refused",
        ),
        (
            vec!["discard", "--filter", "state:succeeded", "--reason", "r"],
            "ITEMS_REFUSED: 1 of 1 matched item(s) refused",
        ),
        (
            vec!["retry-now", "--filter", "state:claimed"],
            "ITEMS_REFUSED: 1 of 1 matched item(s) refused",
        ),
    ] {
        let err = assert_one_line_failure(&s.run(&args), 1);
        assert_eq!(err.trim_end(), format!("leasehold: {line}"), "{args:?}");
    }
    assert_eq!(s.item("busy").state, WorkState::Claimed, "left as it was");
}
