//! `leasehold schedule create|update|pause|resume|delete|list`: what each prints is what
//! the store holds, every change is audited under the operator, and bad input is one line, changes nothing and
//! never creates a store.

use leasehold::Store;
use leasehold::foundation::actor::operator;
use leasehold::model::PageRequest;
use leasehold::model::schedule::{CatchUp, Trigger};
use leasehold::store::SCHEDULE_UPDATE_ACTION;
use leasehold::store::url::{self, OpenMode};
use serde_json::Value;

use super::{assert_one_line_failure, json_lines, leasehold};

fn empty_store(dir: &std::path::Path) -> (String, Store) {
    let url = format!("sqlite:{}", dir.join("store.db").display());
    let store = url::open(&url, OpenMode::ReadWrite).unwrap();
    (url, store)
}

fn one(o: &std::process::Output) -> Value {
    let mut rows = json_lines(o);
    assert_eq!(rows.len(), 1, "{rows:?}");
    rows.remove(0)
}

#[test]
#[expect(
    clippy::too_many_lines,
    reason = "a scripted scenario: its steps in the order they happen"
)]
fn schedule_create_update_list_say_what_the_store_holds() {
    let dir = tempfile::tempdir().unwrap();
    let (url, store) = empty_store(dir.path());
    let create = [
        "schedule",
        "create",
        "--store",
        &url,
        "tick",
        "--every",
        "30s",
        "--handler",
        "ping",
        "--json",
    ];
    let created = one(&leasehold(&create));
    let stored = store.schedule("tick").unwrap().expect("created");
    assert_eq!(
        (
            stored.trigger.clone(),
            stored.catch_up,
            stored.handler.as_str(),
            stored.payload.as_str()
        ),
        (
            Trigger::Interval { every_ms: 30_000 },
            CatchUp::Latest,
            "ping",
            "{}"
        )
    );
    assert_eq!(created["outcome"], "created");
    assert_eq!(created["trigger"], "every 30s");
    assert_eq!(created["nextDue"], stored.next_due);
    assert_eq!(one(&leasehold(&create))["outcome"], "unchanged");

    let other = leasehold(&[
        "schedule",
        "create",
        "--store",
        &url,
        "tick",
        "--every",
        "5m",
        "--handler",
        "ping",
    ]);
    let err = assert_one_line_failure(&other, 1);
    assert!(
        err.starts_with("leasehold: IDEMPOTENCY_CONFLICT: schedule tick exists with another")
            && err.contains("schedule update"),
        "{err}"
    );
    assert_eq!(
        store.schedule("tick").unwrap(),
        Some(stored),
        "a refused create changes nothing"
    );

    let updated = one(&leasehold(&[
        "schedule",
        "update",
        "--store",
        &url,
        "tick",
        "--every",
        "5m",
        "--catch-up",
        "all",
        "--handler",
        "pong",
        "--payload",
        r#"{"v": 2}"#,
        "--json",
    ]));
    let stored = store.schedule("tick").unwrap().expect("still there");
    assert_eq!(
        (
            stored.trigger.clone(),
            stored.catch_up,
            stored.handler.as_str(),
            stored.payload.as_str()
        ),
        (
            Trigger::Interval { every_ms: 300_000 },
            CatchUp::All,
            "pong",
            r#"{"v":2}"#
        )
    );
    assert_eq!(
        (updated["outcome"].as_str(), updated["handler"].as_str()),
        (Some("updated"), Some("pong"))
    );
    let audit = store.list_audit(&PageRequest::first(10)).unwrap().rows;
    assert_eq!(audit.len(), 1, "{audit:?}");
    assert_eq!(
        (
            audit[0].action.as_str(),
            audit[0].actor.as_str(),
            audit[0].target.as_str()
        ),
        (SCHEDULE_UPDATE_ACTION, operator().as_str(), "tick")
    );

    let listed = json_lines(&leasehold(&["schedule", "list", "--store", &url, "--json"]));
    let ids: Vec<&str> = listed
        .iter()
        .filter_map(|r| r["scheduleId"].as_str())
        .collect();
    let in_store = store.list_schedules(&PageRequest::first(10)).unwrap().rows;
    assert_eq!(
        ids,
        in_store
            .iter()
            .map(|s| s.schedule_id.as_str())
            .collect::<Vec<_>>()
    );
    assert_eq!(listed[0]["handler"], "pong");
}

#[test]
fn schedule_bad_input_is_one_line_and_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (url, store) = empty_store(dir.path());
    let missing = dir.path().join("typo.db").display().to_string();
    // `leasehold schedule VERB --store STORE ID REST…`.
    let line = |verb: &str, store: &str, id: &str, rest: &[&str]| -> Vec<String> {
        ["schedule", verb, "--store", store, id]
            .iter()
            .chain(rest)
            .map(|arg| (*arg).to_owned())
            .collect()
    };
    let every = ["--every", "1s", "--handler", "h"];
    let hostile_id = "bad\u{1b}[31mid";
    let cases = [
        line("create", &missing, "t", &every),
        line("update", &missing, "t", &every),
        vec![
            "schedule".into(),
            "list".into(),
            "--store".into(),
            missing.clone(),
        ],
        line("create", &url, hostile_id, &every),
        line("create", &url, "t", &["--every", "soon", "--handler", "h"]),
        line(
            "create",
            &url,
            "t",
            &["--every", "1s", "--at", "5", "--handler", "h"],
        ),
        line(
            "create",
            &url,
            "t",
            &["--at", "99999999999999999", "--handler", "h"],
        ),
        line(
            "create",
            &url,
            "t",
            &["--every", "36526d", "--handler", "h"],
        ),
        line(
            "create",
            &url,
            "t",
            &["--every", "1s", "--catch-up", "0", "--handler", "h"],
        ),
        line(
            "create",
            &url,
            "t",
            &["--every", "1s", "--handler", "h", "--payload", "{"],
        ),
        line("update", &url, "nope", &every),
    ];
    let revision = store.revision().unwrap();
    for args in cases {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        assert_one_line_failure(&leasehold(&args), 2);
    }
    assert!(
        !std::path::Path::new(&missing).exists(),
        "a mistyped store is never created"
    );
    assert_eq!(store.revision().unwrap(), revision, "nothing was written");
    assert!(
        store
            .list_schedules(&PageRequest::first(10))
            .unwrap()
            .rows
            .is_empty()
    );
}

#[test]
fn schedule_pause_resume_delete_are_audited_and_an_unknown_id_is_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let (url, store) = empty_store(dir.path());
    let every = Trigger::Interval { every_ms: 30_000 };
    assert!(
        store
            .create_schedule("tick", every, CatchUp::Latest, "ping", "{}", "k")
            .unwrap()
    );
    let control = |verb: &str, extra: &[&str]| {
        let mut args = vec!["schedule", verb, "--store", &url, "tick", "--json"];
        args.extend_from_slice(extra);
        one(&leasehold(&args))
    };
    let paused = control("pause", &["--reason", "partner down"]);
    assert_eq!(paused["outcome"], "paused");
    assert!(paused["pausedAt"].is_i64(), "{paused}");
    assert!(
        store
            .schedule("tick")
            .unwrap()
            .expect("kept")
            .paused_at
            .is_some()
    );
    assert_eq!(control("pause", &[])["outcome"], "already paused");
    let listed = json_lines(&leasehold(&[
        "inspect",
        "schedules",
        "--store",
        &url,
        "--json",
    ]));
    assert_eq!(listed[0]["paused"], true, "{listed:?}");
    let resumed = control("resume", &[]);
    assert_eq!(resumed["outcome"], "resumed");
    assert!(resumed["pausedAt"].is_null());
    assert_eq!(control("resume", &[])["outcome"], "already running");
    assert_eq!(
        control("delete", &["--reason", "retired"])["outcome"],
        "deleted"
    );
    assert_eq!(store.schedule("tick").unwrap(), None);

    let audit = store.list_audit(&PageRequest::first(100)).unwrap().rows;
    for action in ["schedule-pause", "schedule-resume", "schedule-delete"] {
        let entry = audit
            .iter()
            .find(|a| a.action == action)
            .unwrap_or_else(|| panic!("{action} audited: {audit:?}"));
        assert_eq!(
            (entry.actor.clone(), entry.target.as_str()),
            (operator(), "tick")
        );
    }
    for verb in ["delete", "pause", "resume"] {
        let gone = leasehold(&["schedule", verb, "--store", &url, "tick"]);
        let err = assert_one_line_failure(&gone, 2);
        assert!(
            err.contains("NOT_FOUND") || err.contains("not found"),
            "{err}"
        );
    }
}

#[test]
fn schedule_create_cron_in_a_zone_and_bad_cron_is_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let (url, store) = empty_store(dir.path());
    let created = one(&leasehold(&[
        "schedule",
        "create",
        "--store",
        &url,
        "standup",
        "--cron",
        "0 9 * * MON-FRI",
        "--tz",
        "Europe/Paris",
        "--handler",
        "ping",
        "--json",
    ]));
    assert_eq!(created["trigger"], "cron 0 9 * * MON-FRI Europe/Paris");
    assert_eq!(
        store.schedule("standup").unwrap().expect("created").trigger,
        Trigger::Cron {
            expr: "0 9 * * MON-FRI".into(),
            tz: "Europe/Paris".into()
        }
    );
    let listed = json_lines(&leasehold(&[
        "inspect",
        "schedules",
        "--store",
        &url,
        "--json",
    ]));
    assert_eq!(
        (listed[0]["cron"].as_str(), listed[0]["tz"].as_str()),
        (Some("0 9 * * MON-FRI"), Some("Europe/Paris"))
    );
    for (cron, tz, says) in [
        ("0 9 * *", "UTC", "cannot read cron"),
        ("0 9 * * MON-FRI", "Europe/Atlantis", "unknown time zone"),
    ] {
        let out = leasehold(&[
            "schedule",
            "create",
            "--store",
            &url,
            "bad",
            "--cron",
            cron,
            "--tz",
            tz,
            "--handler",
            "ping",
        ]);
        let err = assert_one_line_failure(&out, 2);
        assert!(err.contains(says), "{err}");
    }
    assert_eq!(store.schedule("bad").unwrap(), None);
}
