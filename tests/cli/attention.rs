//! `leasehold inspect triage`: a SQLite store with one of every kind of trouble planted
//! through the library (an hour ago, on a manual clock), and a live authority registered
//! now; the view's groups and counts are compared with what was planted.

use std::sync::Arc;

use leasehold::Store;
use leasehold::clock::{Clock, ManualClock, SystemClock};
use leasehold::ids::SeededIds;
use leasehold::model::work::NewWork;
use leasehold::model::{Authority, Failure, FailureClass};
use leasehold::store::sqlite::SqliteBackend;
use leasehold::store::url::OpenMode;
use leasehold::workflow::{Catalog, SHIPPED_DEFINITIONS};
use serde_json::{Map, Value, json};

use super::{code, leasehold, stderr, stdout};

fn authority(id: &str, compat: &str, heartbeat_at: i64) -> Authority {
    Authority {
        instance_id: id.into(),
        compat: compat.into(),
        build: "v1".into(),
        config: json!({ "leaseDurationMs": 30_000, "heartbeatIntervalMs": 10_000,
                        "handlers": { "send-email": "1.0.0", "send-reminder": "1.0.0" } })
        .to_string(),
        started_at: heartbeat_at,
        heartbeat_at,
        stopped_at: None,
        host: "h".into(),
        pid: 1,
        published: leasehold::model::Published::default(),
    }
}

#[test]
#[expect(
    clippy::too_many_lines,
    reason = "a scripted scenario: its steps in the order they happen"
)]
fn triage_lists_each_kind_of_trouble_with_its_count() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.db").display().to_string();
    let clock = ManualClock::new(SystemClock.now() - 3_600_000);
    let store = Store::new(
        Arc::new(SqliteBackend::open(&path, OpenMode::ReadWrite).unwrap()),
        Arc::new(clock.clone()),
        Arc::new(SeededIds::new(9)),
    );
    // The key of send-email's work at the version the live authority runs.
    let k = crate::support::key("send-email");
    let k = k.as_str();
    let effect = |id: &str, handler: &str, max: u32| NewWork {
        max_attempts: max,
        ..NewWork::effect(id, handler, "{}")
    };
    // Two dead letters: two lapsed claims each with a budget of two.
    for id in ["dead-1", "dead-2"] {
        store.enqueue(effect(id, "send-email", 2), k).unwrap();
        for owner in ["x", "y"] {
            store.claim(id, owner, k, 1_000).unwrap();
            clock.advance(60_000);
        }
        store.claim(id, "z", k, 1_000).unwrap_err();
    }
    // One terminal failure, and one discarded item (a person's decision: not listed).
    for id in ["bounced", "dropped"] {
        store.enqueue(effect(id, "send-email", 5), k).unwrap();
        let c = store.claim(id, "x", k, 60_000).unwrap();
        let terminal = Failure {
            class: FailureClass::Terminal,
            code: "BOUNCED".into(),
            message: "no such mailbox".into(),
        };
        store.fail(id, "x", c.generation, terminal).unwrap();
    }
    store.discard_work("dropped", "ana@h", "spam").unwrap();
    // One reclaimed after a lapse: pending again, one uncertain attempt behind it.
    store.enqueue(effect("wobbly", "send-email", 5), k).unwrap();
    store.claim("wobbly", "x", k, 1_000).unwrap();
    clock.advance(60_000);
    let again = store.claim("wobbly", "y", k, 1_000).unwrap();
    store
        .yield_back("wobbly", "y", again.generation, 0)
        .unwrap();
    // Stranded (an old build) and waiting for a handler nobody runs.
    store
        .enqueue(effect("old-1", "send-email", 5), "old")
        .unwrap();
    store
        .enqueue(
            effect("thumb-1", "resize-image", 5),
            crate::support::key("resize-image").as_str(),
        )
        .unwrap();
    // A gone authority's claim, lapsed.
    store.enqueue(effect("orphan", "send-email", 5), k).unwrap();
    store
        .register_authority(&authority("gone-1", k, clock.now()))
        .unwrap();
    store.claim("orphan", "gone-1", k, 1_000).unwrap();
    // A workflow instance due an hour ago.
    let (_, reminder) = SHIPPED_DEFINITIONS
        .iter()
        .find(|(n, _)| n.contains("reminder"))
        .unwrap();
    store
        .deploy_workflow(reminder, &Catalog::demo())
        .unwrap()
        .unwrap();
    let mut args = Map::new();
    args.insert("recipient".into(), json!("ana"));
    args.insert("message".into(), json!("hi"));
    store
        .start_workflow(
            "reminder",
            args,
            "ana",
            None,
            crate::support::actions_at_demo(&store, "reminder"),
        )
        .unwrap();
    // The live fleet: one authority with only `send-email` and `send-reminder`.
    let live = Store::new(
        Arc::new(SqliteBackend::open(&path, OpenMode::Existing).unwrap()),
        Arc::new(SystemClock),
        Arc::new(SeededIds::new(3)),
    );
    live.register_authority(&authority("live-1", k, SystemClock.now()))
        .unwrap();

    let o = leasehold(&["inspect", "triage", "--store", &path, "--json"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let groups: Vec<Value> = stdout(&o)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let count = |reason: &str| {
        groups
            .iter()
            .find(|g| g["reason"] == reason)
            .map(|g| (g["count"].as_u64().unwrap(), g["first"].clone()))
    };
    assert_eq!(
        count("dead-letters"),
        Some((2, json!(["dead-1", "dead-2"])))
    );
    assert_eq!(count("failed"), Some((1, json!(["bounced"]))));
    assert_eq!(count("uncertain"), Some((1, json!(["wobbly"]))));
    assert_eq!(count("incompatible"), Some((1, json!(["old-1"]))));
    assert_eq!(count("no-handler"), Some((1, json!(["thumb-1"]))));
    assert_eq!(count("gone-claims"), Some((1, json!(["orphan"]))));
    assert_eq!(count("overdue-instances").map(|c| c.0), Some(1));
    // Late lanes are the overview's lateness figure, past a minute.
    let lanes = leasehold::rules::lateness::lanes(
        &live.overview().unwrap().waiting_lanes,
        SystemClock.now(),
    );
    let late: Vec<String> = lanes
        .iter()
        .filter(|l| l.late_ms > 60_000)
        .map(|l| format!("{}/{}", l.kind.as_str(), l.handler))
        .collect();
    assert!(!late.is_empty());
    let (n, first) = count("late-lanes").expect("late lanes listed");
    assert_eq!(n, late.len() as u64);
    assert!(
        late.contains(&first[0].as_str().unwrap().to_owned()),
        "{first}"
    );
    assert!(groups.iter().all(|g| g["exact"] == true));
    let dead = groups
        .iter()
        .find(|g| g["reason"] == "dead-letters")
        .unwrap();
    assert_eq!(dead["filter"], "state:dead-letter");

    let table = leasehold(&["inspect", "triage", "--store", &path]);
    assert_eq!(code(&table), 0);
    assert!(stdout(&table).contains("dead letters (uncertain attempts exhausted)"));
    assert!(stdout(&table).contains("--filter state:dead-letter"));

    every_groups_filter_lists_exactly_its_items(&path, &groups);
    facets_list_exactly_their_items(&path);
    a_requeue_by_state_failed_spares_the_discarded(&path);
}

/// The ids `inspect work --filter FILTER` lists, sorted.
fn listed(path: &str, filter: &str) -> Vec<String> {
    let o = leasehold(&[
        "inspect", "work", "--store", path, "--filter", filter, "--json",
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let mut ids: Vec<String> = stdout(&o)
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["id"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    ids.sort();
    ids
}

/// Handler, code, class, the discarded and the current owner each name exactly their
/// items; an unknown term is one line naming the known ones.
fn facets_list_exactly_their_items(path: &str) {
    for (filter, ids) in [
        ("handler:resize-image", vec!["thumb-1"]),
        ("code:BOUNCED", vec!["bounced"]),
        ("class:uncertain-exhausted", vec!["dead-1", "dead-2"]),
        ("state:discarded", vec!["dropped"]),
        ("state:failed", vec!["bounced", "dead-1", "dead-2"]),
        ("owner:x", vec![]),
        ("owner:gone-1", vec!["orphan"]),
    ] {
        assert_eq!(listed(path, filter), ids, "{filter}");
    }
    let o = leasehold(&["inspect", "work", "--store", path, "--filter", "ending:x"]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert_eq!(stderr(&o).lines().count(), 1, "{}", stderr(&o));
    assert!(
        stderr(&o).contains("handler:, code:, class:"),
        "{}",
        stderr(&o)
    );
}

/// Each group's filter, listed the way `inspect work --filter` (and the dashboard's `/`)
/// lists it, matches exactly the group's items (each group here holds at most three, so
/// its first ids are all of them).
fn every_groups_filter_lists_exactly_its_items(path: &str, groups: &[Value]) {
    let with_filter: Vec<&Value> = groups.iter().filter(|g| g["filter"].is_string()).collect();
    assert!(with_filter.len() >= 4, "{groups:?}");
    for group in with_filter {
        let filter = group["filter"].as_str().unwrap();
        assert!(group["count"].as_u64().unwrap() <= 3, "{group}");
        let mut members: Vec<String> = group["first"]
            .as_array()
            .unwrap()
            .iter()
            .map(|id| id.as_str().unwrap().to_owned())
            .collect();
        members.sort();
        assert_eq!(
            listed(path, filter),
            members,
            "{} by {filter}",
            group["reason"]
        );
    }
}

/// `state:failed` names the failures nobody decided: a requeue by it leaves an item a
/// person discarded as it was, and shows no stale failure on what it requeued.
fn a_requeue_by_state_failed_spares_the_discarded(path: &str) {
    let o = leasehold(&[
        "work",
        "requeue",
        "--store",
        path,
        "--filter",
        "state:failed",
        "--yes",
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let state = |id: &str| {
        let o = leasehold(&["work", "show", id, "--store", path, "--json"]);
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        serde_json::from_str::<Value>(&stdout(&o)).unwrap()
    };
    let dropped = state("dropped");
    assert_eq!(dropped["item"]["state"], "failed", "{dropped}");
    let bounced = state("bounced");
    assert_eq!(bounced["item"]["state"], "pending", "{bounced}");
    assert!(bounced["item"]["lastFailure"].is_null(), "{bounced}");
    assert!(
        bounced["attemptErrors"].to_string().contains("BOUNCED"),
        "kept: {bounced}"
    );
    let listed = leasehold(&[
        "inspect",
        "work",
        "--store",
        path,
        "--filter",
        "code:BOUNCED",
    ]);
    assert!(!stdout(&listed).contains("bounced"), "{}", stdout(&listed));
}

#[test]
fn triage_of_a_healthy_store_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.db").display().to_string();
    let init = leasehold(&["init", &path]);
    assert_eq!(code(&init), 0, "{}", stderr(&init));
    let o = leasehold(&["inspect", "triage", "--store", &path]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(stdout(&o).trim(), "nothing needs a person");
    let json = leasehold(&["inspect", "triage", "--store", &path, "--json"]);
    assert_eq!(stdout(&json), "");
}

/// `inspect metrics`: the fleet's facts as OpenMetrics text, each sample what the store
/// holds.
#[test]
fn inspect_metrics_states_the_stores_counts() {
    use crate::support::metrics::{assert_open_metrics, count};

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.db").display().to_string();
    let seeded = leasehold(&["seed", "--store", &path, "--effects", "40"]);
    assert_eq!(code(&seeded), 0, "{}", stderr(&seeded));
    let o = leasehold(&["inspect", "metrics", "--store", &path]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let page = stdout(&o);
    assert_open_metrics(&page);
    let store = Store::new(
        Arc::new(SqliteBackend::open(&path, OpenMode::Existing).unwrap()),
        Arc::new(SystemClock),
        Arc::new(SeededIds::new(3)),
    );
    let overview = store.overview().unwrap();
    let pending_effects: u64 = overview
        .work
        .iter()
        .filter(|c| c.kind.as_str() == "effect" && c.state.as_str() == "pending")
        .map(|c| c.count)
        .sum();
    assert_eq!(
        count(
            &page,
            r#"leasehold_fleet_work{kind="effect",state="pending"}"#
        ),
        pending_effects
    );
    assert_eq!(
        count(&page, "leasehold_fleet_store_revision"),
        overview.revision
    );
    // Every kind and state is a series from the first scrape, at zero where there is none.
    for kind in ["effect", "schedule", "cursor"] {
        for state in [
            "pending",
            "claimed",
            "retry",
            "succeeded",
            "failed",
            "discarded",
        ] {
            let series = format!("leasehold_fleet_work{{kind=\"{kind}\",state=\"{state}\"}} ");
            assert!(
                page.lines().any(|l| l.starts_with(&series)),
                "{series}: {page}"
            );
        }
    }
    assert_eq!(
        count(&page, r#"leasehold_fleet_authorities{state="live"}"#),
        0
    );
    let json = leasehold(&["inspect", "metrics", "--store", &path, "--json"]);
    assert_eq!(code(&json), 2);
}

/// Waiting instances whose `sinceEventSeq` reaches below the retained journal are one
/// triage group, counted exactly as the checker finds them (`wait-past-retention`); a wait
/// from the journal's edge on, a finished instance and a timer wait are not in it.
#[test]
fn triage_counts_waits_past_retention_as_the_checker_finds_them() {
    use leasehold::check::{CheckOptions, check};
    use leasehold::model::{InstanceRow, InstanceStatus, JournalEvent};
    use leasehold::store::Backend;

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.db").display().to_string();
    let clock = ManualClock::new(SystemClock.now() - 3_600_000);
    let backend = Arc::new(SqliteBackend::open(&path, OpenMode::ReadWrite).unwrap());
    let store = Store::new(
        backend.clone(),
        Arc::new(clock.clone()),
        Arc::new(SeededIds::new(9)),
    );
    let on =
        |event: &str, since: i64| json!({"kind": "event", "event": event, "sinceEventSeq": since});
    let waits = [
        ("wf-lost-1", "waiting", on("paid", 0)),
        ("wf-lost-2", "running", on("shipped", 12)),
        ("wf-edge", "waiting", on("paid", 39)),
        ("wf-new", "waiting", on("paid", 45)),
        ("wf-done", "completed", on("paid", 0)),
        ("wf-timer", "waiting", json!({"kind": "timer", "fireAt": 1})),
    ];
    let at = clock.now();
    backend
        .write(&mut |tx| {
            tx.commit_revision()?;
            // The journal keeps seq 40 on: everything through 39 was trimmed.
            tx.import_journal(&JournalEvent {
                seq: 40,
                event_type: "noise".into(),
                source: None,
                external_id: None,
                payload: "{}".into(),
                fingerprint: "0".into(),
                at,
            })?;
            for (id, status, waiting) in &waits {
                tx.insert_instance(&InstanceRow {
                    instance_id: (*id).into(),
                    workflow_id: "order".into(),
                    status: InstanceStatus::parse(status).unwrap(),
                    compat: "k".into(),
                    instance_revision: 1,
                    next_eligible_at: None,
                    waiting_event: None,
                    principal: "alice".into(),
                    start_key: None,
                    state: json!({ "waiting": waiting }).to_string(),
                    created_at: at,
                    updated_at: at,
                })?;
            }
            Ok(())
        })
        .unwrap();

    let report = check(&store, &CheckOptions::at(clock.now())).unwrap();
    let mut found: Vec<String> = report
        .violations
        .iter()
        .filter(|v| v.invariant == "wait-past-retention")
        .flat_map(|v| v.ids.clone())
        .collect();
    found.sort();
    assert_eq!(found, ["wf-lost-1", "wf-lost-2"]);

    let o = leasehold(&["inspect", "triage", "--store", &path, "--json"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let group: Value = stdout(&o)
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|g| g["reason"] == "waits-past-retention")
        .expect("the group is listed");
    assert_eq!(group["count"].as_u64(), Some(found.len() as u64));
    assert_eq!(group["exact"], true);
    assert_eq!(group["oldestAt"].as_i64(), Some(at));
    let mut first: Vec<String> = group["first"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_owned())
        .collect();
    first.sort();
    assert_eq!(first, found);

    let table = leasehold(&["inspect", "triage", "--store", &path]);
    assert!(
        stdout(&table).contains("waits past retention"),
        "{}",
        stdout(&table)
    );
}
