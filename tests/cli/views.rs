//! `leasehold inspect`: seeded work read back as JSON lines, every view on a fresh store,
//! the store named by `LEASEHOLD_STORE`, and cursor rows that agree with the dashboard's.

use std::process::Command;

use leasehold::authority::workload;
use leasehold::authority::{AuthorityConfig, AuthorityCore, Pace};
use leasehold::store::url::OpenMode;
use serde_json::Value;

use super::{VIEWS, code, json_lines, leasehold, seed, stderr, stdout, store_in};

#[test]
#[expect(
    clippy::too_many_lines,
    reason = "a scripted scenario: its steps in the order they happen"
)]
fn seed_then_inspect_work_as_json_lines() {
    let dir = tempfile::tempdir().unwrap();
    let store = store_in(dir.path());
    seed(
        &store,
        &[
            "--effects",
            "30",
            "--workflows",
            "4",
            "--events",
            "10",
            "--seed",
            "5",
        ],
    );

    let rows = json_lines(&leasehold(&[
        "inspect", "--store", &store, "work", "--json", "--limit", "1000",
    ]));
    assert_eq!(rows.len(), 32, "30 effects and 2 subscription cursors");
    for row in &rows {
        for field in [
            "id",
            "kind",
            "state",
            "handler",
            "ownerId",
            "generation",
            "attemptNumber",
            "uncertainAttempts",
            "nextEligibleAt",
            "compat",
            "compatible",
        ] {
            assert!(row.get(field).is_some(), "{field} missing in {row}");
        }
        assert_eq!(row["state"], "pending");
        assert_eq!(row["compatible"], false, "no authority is running");
        assert!(row.get("token").is_none(), "tokens are never printed");
    }

    let workflows = json_lines(&leasehold(&[
        "inspect",
        "--store",
        &store,
        "workflows",
        "--json",
    ]));
    assert_eq!(workflows.len(), 4);
    for row in &workflows {
        for field in [
            "instanceId",
            "workflowId",
            "status",
            "currentStepId",
            "attempt",
            "waitingReason",
            "instanceRevision",
            "compatible",
        ] {
            assert!(row.get(field).is_some(), "{field} missing in {row}");
        }
    }

    // Paging: a small page names its continuation, and the next page starts after it.
    let first = leasehold(&["inspect", "--store", &store, "work", "--limit", "3"]);
    let out = stdout(&first);
    let hint = out.lines().last().unwrap();
    let key = hint
        .strip_prefix("(more rows: --after ")
        .and_then(|k| k.strip_suffix(')'))
        .unwrap();
    let next = json_lines(&leasehold(&[
        "inspect", "--store", &store, "work", "--json", "--limit", "3", "--after", key,
    ]));
    assert_eq!(next.len(), 3);
    assert!(next.iter().all(|r| r["id"].as_str().unwrap() > key));

    // Filters go to the store's filtered read.
    let cursors = json_lines(&leasehold(&[
        "inspect",
        "--store",
        &store,
        "work",
        "--json",
        "--filter",
        "kind:cursor state:pending",
    ]));
    assert_eq!(cursors.len(), 2);
    let incompatible = json_lines(&leasehold(&[
        "inspect",
        "--store",
        &store,
        "work",
        "--json",
        "--limit",
        "1000",
        "--filter",
        "compat:incompatible",
    ]));
    assert_eq!(incompatible.len(), 32);

    // Seeding again adds more and breaks nothing.
    seed(
        &store,
        &["--effects", "10", "--workflows", "0", "--events", "3"],
    );
    let overview = json_lines(&leasehold(&[
        "inspect", "--store", &store, "overview", "--json",
    ]));
    assert_eq!(overview.len(), 1);
    let effects: u64 = overview[0]["work"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["kind"] == "effect")
        .map(|c| c["count"].as_u64().unwrap())
        .sum();
    assert_eq!(effects, 40);
    assert_lateness_matches_the_items(&store, &overview[0]);
    // No authority runs here, so nothing trims; the checker's history is whole from 1.
    let retention = &overview[0]["retention"];
    assert_eq!(retention["policy"], Value::Null, "{retention}");
    assert_eq!(retention["historyFromRevision"], 1, "{retention}");
    let text = stdout(&leasehold(&["inspect", "--store", &store, "overview"]));
    assert!(
        text.contains("retention    no running authority trims; history from revision 1"),
        "{text}"
    );
}

/// `inspect overview --json` states each late lane's oldest due instant as the store's own
/// items have it (the earliest `nextEligibleAt` of its pending / retry items, when due), and
/// its lateness as now − that.
fn assert_lateness_matches_the_items(url: &str, overview: &Value) {
    let store = leasehold::store::url::open(url, OpenMode::ReadOnly).unwrap();
    let now = overview["now"].as_i64().unwrap();
    let items = store
        .list_work(
            &leasehold::model::work::WorkFilter::default(),
            &leasehold::model::PageRequest::first(10_000),
        )
        .unwrap()
        .rows;
    let mut oldest: std::collections::BTreeMap<(String, String), i64> =
        std::collections::BTreeMap::new();
    for w in items.iter().filter(|w| {
        matches!(
            w.state,
            leasehold::model::WorkState::Pending | leasehold::model::WorkState::Retry
        ) && w.next_eligible_at <= now
    }) {
        let at = oldest
            .entry((w.kind.as_str().to_owned(), w.handler.clone()))
            .or_insert(w.next_eligible_at);
        *at = (*at).min(w.next_eligible_at);
    }
    let stated: std::collections::BTreeMap<(String, String), i64> = overview["lateLanes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| {
            assert_eq!(
                l["lateMs"].as_i64(),
                Some(now - l["oldestDue"].as_i64().unwrap())
            );
            (
                (
                    l["kind"].as_str().unwrap().to_owned(),
                    l["handler"].as_str().unwrap().to_owned(),
                ),
                l["oldestDue"].as_i64().unwrap(),
            )
        })
        .collect();
    assert!(!stated.is_empty(), "seeded effects are due");
    assert_eq!(stated, oldest);
}

#[test]
fn every_view_works_on_a_fresh_store() {
    let dir = tempfile::tempdir().unwrap();
    let store = store_in(dir.path());
    seed(
        &store,
        &[
            "--effects",
            "0",
            "--workflows",
            "0",
            "--schedules",
            "0",
            "--subscriptions",
            "0",
            "--events",
            "0",
        ],
    );
    for view in VIEWS {
        let o = leasehold(&["inspect", "--store", &store, view]);
        assert_eq!(code(&o), 0, "{view}: {}", stderr(&o));
        let out = stdout(&o);
        assert!(out.contains("(no rows)"), "{view}: {out}");
        let json = leasehold(&["inspect", "--store", &store, view, "--json"]);
        let rows = json_lines(&json);
        assert_eq!(rows.len(), usize::from(view == "overview"), "{view}");
    }
}

#[test]
fn the_store_may_come_from_the_environment() {
    let dir = tempfile::tempdir().unwrap();
    let store = store_in(dir.path());
    seed(
        &store,
        &[
            "--effects",
            "3",
            "--workflows",
            "0",
            "--events",
            "0",
            "--seed",
            "1",
        ],
    );
    let o = Command::new(env!("CARGO_BIN_EXE_leasehold"))
        // Rewind witnesses of these throwaway stores stay out of the home directory.
        .env(
            "LEASEHOLD_STATE_DIR",
            std::env::temp_dir().join("leasehold-test-witnesses"),
        )
        .args(["inspect", "work", "--json"])
        .env("LEASEHOLD_STORE", &store)
        .output()
        .unwrap();
    assert_eq!(json_lines(&o).len(), 5);
}

/// `inspect cursors --json` and the dashboard's cursor rows state the same facts about the
/// same store, both read through `ops::cursors`: owner, generation, position, lag and claim
/// rate. A cursor that has delivered everything shows lag 0; one nobody can claim (its
/// build is not running) stays behind with no owner.
#[test]
fn inspect_cursors_and_the_dashboard_agree_field_by_field() {
    use leasehold::model::event::NewEvent;
    use leasehold::tui::app::AppOptions;
    use leasehold::tui::harness::Harness;
    use leasehold::tui::theme::Theme;

    let dir = tempfile::tempdir().unwrap();
    let path = store_in(dir.path());
    let store = leasehold::store::url::open(&path, OpenMode::ReadWrite).unwrap();
    let compat = crate::support::key(workload::CURSOR_HANDLER);
    store
        .create_subscription("orders", "order-placed", workload::CURSOR_HANDLER, &compat)
        .unwrap();
    store
        .create_subscription(
            "ledger",
            "audit-entry",
            workload::CURSOR_HANDLER,
            "gone-build",
        )
        .unwrap();
    for i in 0..4 {
        for event_type in ["order-placed", "audit-entry"] {
            let event = NewEvent {
                event_type: event_type.into(),
                source: Some("shop".into()),
                external_id: Some(format!("{event_type}-{i}")),
                payload: serde_json::json!({ "i": i }),
            };
            store.ingest(&event).unwrap();
        }
    }
    let a = AuthorityCore::new(
        store.clone(),
        AuthorityConfig::new("a", "v1"),
        workload::named("fast", 1).unwrap(),
        Pace::Virtual,
    )
    .unwrap();
    a.register().unwrap();
    for _ in 0..3 {
        for job in a.poll().unwrap() {
            a.finish(a.execute(&job));
        }
    }

    let cli = json_lines(&leasehold(&[
        "inspect", "--store", &path, "cursors", "--json",
    ]));
    let options = AppOptions {
        read_only: true,
        demo: false,
        actor: "tester@ci".into(),
        refresh_ms: 250,
        ..AppOptions::default()
    };
    let theme = Theme::builtin("dark").unwrap();
    let mut h = Harness::new(store.clone(), options, theme, None, 160, 48);
    h.dispatch(leasehold::tui::action::Action::SwitchView(
        leasehold::tui::action::ViewId::Cursors,
    ));
    let table = h.app.table_data().expect("the cursors table");
    let names: Vec<&str> = table.columns.iter().map(|c| c.name).collect();
    let at = |name: &str| names.iter().position(|n| *n == name).unwrap();
    assert_eq!(cli.len(), 2);
    assert_eq!(table.rows.len(), 2);
    for (json, row) in cli.iter().zip(&table.rows) {
        let cell = |name: &str| row.cells[at(name)].text.clone();
        assert_eq!(json["subscriptionId"], row.key.as_str());
        assert_eq!(json["position"].to_string(), cell("position"));
        assert_eq!(json["lag"].to_string(), cell("lag"));
        assert_eq!(json["generation"].to_string(), cell("gen"));
        assert_eq!(json["ownerId"].as_str().unwrap_or("-"), cell("owner"));
        let rate = json["claimsPerSec"].as_f64().unwrap();
        assert_eq!(leasehold::ops::cursors::rate_text(rate), cell("claims/s"));
    }
    let by_id = |id: &str| cli.iter().find(|c| c["subscriptionId"] == id).unwrap();
    let orders = by_id("orders");
    assert_eq!(orders["ownerId"], "a");
    assert_eq!(orders["generation"], 1, "held, not re-claimed: {orders}");
    assert_eq!(orders["lag"], 0, "caught up: {orders}");
    assert_eq!(orders["position"], orders["highWater"]);
    let ledger = by_id("ledger");
    assert_eq!(ledger["ownerId"], Value::Null);
    assert_eq!(ledger["position"], 0);
    assert_eq!(ledger["lag"], ledger["highWater"]);
    assert!(ledger["lag"].as_u64().unwrap() > 0);
}

/// `inspect audit` lists the log newest first; `--filter actor:NAME action:NAME` keeps
/// exactly the entries whose actor and action are those words (not an entry whose actor
/// merely starts with one), paged with `--after`.
#[test]
fn inspect_audit_lists_newest_first_under_an_actor_and_action_filter() {
    let dir = tempfile::tempdir().unwrap();
    let url = store_in(dir.path());
    assert_eq!(code(&leasehold(&["init", &url])), 0);
    let store = leasehold::store::url::open(&url, OpenMode::ReadWrite).unwrap();
    for i in 0..12 {
        let actor = ["ana@ops", "bo@ops", "ana@ops.example"][i % 3];
        let action = ["requeue-work", "discard-work"][i % 2];
        store
            .audit(actor, action, &format!("item-{i}"), "done")
            .unwrap();
    }
    let all = store
        .list_audit(&leasehold::model::PageRequest::first(100))
        .unwrap()
        .rows;
    let ids =
        |rows: &[Value]| -> Vec<i64> { rows.iter().map(|r| r["id"].as_i64().unwrap()).collect() };
    let newest_first: Vec<i64> = all.iter().rev().map(|a| a.id).collect();
    let listed = json_lines(&leasehold(&["inspect", "--store", &url, "audit", "--json"]));
    assert_eq!(ids(&listed), newest_first);
    for (filter, actor, action) in [
        ("actor:ana@ops", Some("ana@ops"), None),
        ("action:discard-work", None, Some("discard-work")),
        (
            "actor:ana@ops action:requeue-work",
            Some("ana@ops"),
            Some("requeue-work"),
        ),
    ] {
        let expected: Vec<i64> = all
            .iter()
            .rev()
            .filter(|a| actor.is_none_or(|x| a.actor == x))
            .filter(|a| action.is_none_or(|x| a.action == x))
            .map(|a| a.id)
            .collect();
        assert!(!expected.is_empty(), "{filter}");
        let listed = json_lines(&leasehold(&[
            "inspect", "--store", &url, "audit", "--json", "--filter", filter,
        ]));
        assert_eq!(ids(&listed), expected, "{filter}");
    }
    let first = leasehold(&[
        "inspect",
        "--store",
        &url,
        "audit",
        "--limit",
        "2",
        "--filter",
        "actor:bo@ops",
    ]);
    let text = stdout(&first);
    let key = text
        .lines()
        .find_map(|l| l.strip_prefix("(more rows: --after "))
        .and_then(|k| k.strip_suffix(')'))
        .unwrap_or_else(|| panic!("{text}"));
    let rest = json_lines(&leasehold(&[
        "inspect",
        "--store",
        &url,
        "audit",
        "--json",
        "--filter",
        "actor:bo@ops",
        "--after",
        key,
    ]));
    let bo: Vec<i64> = newest_first
        .iter()
        .copied()
        .filter(|id| all.iter().any(|a| a.id == *id && a.actor == "bo@ops"))
        .collect();
    assert_eq!(ids(&rest), bo[2..], "the next page continues older");
    // The table says a long action and outcome whole: the outcome ends with the reason.
    let outcome =
        "released work b2-0026 from ops-4: generation 1 → 2 (killed in the drill, see INC-4411)";
    store
        .audit("ana@ops", "acknowledge-server-change", "b2-0026", outcome)
        .unwrap();
    let text = stdout(&leasehold(&[
        "inspect", "--store", &url, "audit", "--limit", "1",
    ]));
    assert!(text.contains("acknowledge-server-change"), "{text}");
    assert!(text.contains(outcome), "{text}");
    let refused = leasehold(&["inspect", "--store", &url, "audit", "--filter", "owner:x"]);
    assert_eq!(code(&refused), 2);
    assert!(
        stderr(&refused).contains("actor:, action:"),
        "{}",
        stderr(&refused)
    );
}

/// `inspect leases` lists what the dashboard's leases view lists: the named leases, then
/// every work item claimed now (its kind, handler, owner and generation as the store holds
/// them), and pages through both with the keys it prints.
#[test]
fn inspect_leases_lists_the_claims_too_and_pages_through_both() {
    use leasehold::model::work::NewWork;

    let dir = tempfile::tempdir().unwrap();
    let path = store_in(dir.path());
    let store = leasehold::store::url::open(&path, OpenMode::ReadWrite).unwrap();
    store
        .acquire(
            "billing-leader",
            "ops-1",
            60_000.0,
            leasehold::store::Keyed { key: None },
        )
        .unwrap();
    for id in ["chg-1", "chg-2", "waiting"] {
        store
            .enqueue(NewWork::effect(id, "charge-card", "{}"), "k")
            .unwrap();
    }
    for (id, owner) in [("chg-1", "ops-1"), ("chg-2", "ops-2")] {
        store.claim(id, owner, "k", 60_000).unwrap();
    }
    let rows = json_lines(&leasehold(&[
        "inspect", "--store", &path, "leases", "--json",
    ]));
    let listed: Vec<(&str, &str, &str, &str)> = rows
        .iter()
        .map(|r| {
            (
                r["resourceId"].as_str().unwrap(),
                r["kind"].as_str().unwrap(),
                r["ownerId"].as_str().unwrap(),
                r["status"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        listed,
        [
            ("billing-leader", "lease", "ops-1", "live"),
            ("chg-1", "effect", "ops-1", "live"),
            ("chg-2", "effect", "ops-2", "live"),
        ]
    );
    for row in &rows[1..] {
        let item = store
            .work(row["resourceId"].as_str().unwrap())
            .unwrap()
            .unwrap();
        assert_eq!(row["handler"], "charge-card");
        assert_eq!(row["generation"], item.generation);
        assert_eq!(row["expiresAt"], item.lease_expires_at.unwrap());
    }
    // One row a page, by the key each page prints, through the lease into the claims.
    let mut seen = Vec::new();
    let mut after: Option<String> = None;
    loop {
        let mut args = vec!["inspect", "--store", &path, "leases", "--limit", "1"];
        if let Some(key) = &after {
            args.extend(["--after", key]);
        }
        let o = leasehold(&args);
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        let text = stdout(&o);
        seen.extend(
            ["billing-leader", "chg-1", "chg-2"]
                .into_iter()
                .filter(|id| text.contains(&format!("\n{id} "))),
        );
        after = text
            .lines()
            .find_map(|l| l.strip_prefix("(more rows: --after "))
            .map(|k| k.trim_end_matches(')').to_owned());
        if after.is_none() {
            break;
        }
        assert!(seen.len() <= 3, "{text}");
    }
    assert_eq!(seen, ["billing-leader", "chg-1", "chg-2"]);
}

/// `inspect overview` counts the registrations in each of the four states, as the
/// dashboard's overview does: a live one, one gone an hour ago, one stopped cleanly.
#[test]
fn inspect_overview_counts_every_state_of_the_registry() {
    use leasehold::clock::{Clock, SystemClock};

    use crate::support::authorities::registration;

    let dir = tempfile::tempdir().unwrap();
    let path = store_in(dir.path());
    let store = leasehold::store::url::open(&path, OpenMode::ReadWrite).unwrap();
    let now = SystemClock.now();
    let handlers = [("send-email", "1.0.0")];
    store
        .register_authority(&registration("live-1", &handlers, now))
        .unwrap();
    store
        .register_authority(&registration("gone-1", &handlers, now - 3_600_000))
        .unwrap();
    let mut stopped = registration("stopped-1", &handlers, now - 60_000);
    stopped.stopped_at = Some(now - 60_000);
    store.register_authority(&stopped).unwrap();
    let o = leasehold(&["inspect", "--store", &path, "overview", "--json"]);
    let v: Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    let counts: Vec<i64> = [
        "authoritiesLive",
        "authoritiesSilent",
        "authoritiesGone",
        "authoritiesStopped",
        "authoritiesRegistered",
    ]
    .iter()
    .map(|k| v[k].as_i64().unwrap())
    .collect();
    assert_eq!(counts, [1, 0, 1, 1, 3]);
    let text = stdout(&leasehold(&["inspect", "--store", &path, "overview"]));
    assert!(
        text.contains("authorities  1 live, 0 silent, 1 gone, 1 stopped (3 registered)"),
        "{text}"
    );
}
