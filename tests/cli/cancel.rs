//! Cancel speaks one vocabulary: the same refusal, from `leasehold cancel` and from the
//! dashboard, leaves the same audit entry (actor, action, target, outcome with the reason),
//! and the actor is the OS account running the process, whatever `USER` says. Both judge
//! an instance by the builds the fleet registered, and a repeated cancel is a success.

use leasehold::clock::{Clock, SystemClock};
use leasehold::foundation::actor::operator;
use leasehold::model::HandlerVersion;
use leasehold::model::{AuditEntry, PageRequest};
use leasehold::store::url::{self, OpenMode};
use leasehold::tui::app::{AppOptions, Command as AppCommand};
use leasehold::tui::commands::execute;
use leasehold::tui::harness::Harness;
use leasehold::tui::theme::{Role, Theme};
use leasehold::workflow::Catalog;
use leasehold::workflow::engine::Engine;
use leasehold::workflow::keys::claim_keys;
use serde_json::{Map, Value, json};

use super::support::authorities::registration;
use super::{code, leasehold, stderr, stdout};

const REASON: &str = "duplicate order";

struct Setup {
    _dir: tempfile::TempDir,
    url: String,
    completed: String,
    cancelled: String,
    running: String,
    /// Started for the next major version of its handlers: code the CLI's and the
    /// dashboard's built-in version may not run.
    incompatible: String,
}

fn inputs(partner: &str) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("partner".into(), json!(partner));
    m.insert("request".into(), json!({"op": "sync"}));
    m
}

/// A SQLite store with a completed, a cancelled and a running workflow of the CLI's
/// default build.
fn setup() -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite:{}", dir.path().join("store.db").display());
    let store = url::open(&url, OpenMode::ReadWrite).unwrap();
    let catalog = Catalog::demo();
    for (_, text) in leasehold::workflow::SHIPPED_DEFINITIONS {
        store.deploy_workflow(text, &catalog).unwrap().unwrap();
    }
    let at = |version: &HandlerVersion| {
        leasehold::authority::workload::default_workload(0)
            .at_version(version)
            .handler_versions()
    };
    let demo = HandlerVersion::demo();
    let start = |p: &str, version: &HandlerVersion| {
        store
            .start_workflow("integration-call", inputs(p), "alice", None, at(version))
            .unwrap()
            .instance_id
    };
    let (completed, cancelled, running) = (
        start("acme", &demo),
        start("globex", &demo),
        start("initech", &demo),
    );
    let incompatible = start("hooli", &demo.next_major());
    let keys = claim_keys(&at(&demo), &store.deployed_definitions().unwrap());
    let engine = Engine::new(store.clone(), "auth-a", keys);
    for claimed in engine.claim(16, 30_000).unwrap() {
        if claimed.row.instance_id == completed {
            engine
                .advance(&claimed, |_| Ok(json!({"status": 200})))
                .unwrap();
        } else {
            engine.release(&claimed).unwrap();
        }
    }
    assert_eq!(
        store.instance(&completed).unwrap().unwrap().status,
        "completed"
    );
    store
        .cancel_workflow(&cancelled, None, "ops@host", "setup")
        .unwrap();
    Setup {
        _dir: dir,
        url,
        completed,
        cancelled,
        running,
        incompatible,
    }
}

fn audit(url: &str) -> Vec<AuditEntry> {
    let store = url::open(url, OpenMode::ReadOnly).unwrap();
    let mut rows = store.list_audit(&PageRequest::first(100)).unwrap().rows;
    rows.sort_by_key(|a| a.id);
    rows
}

/// The part of an audit entry that must not depend on which front end wrote it.
fn said(a: &AuditEntry) -> (String, String, String, String) {
    (
        a.actor.clone(),
        a.action.clone(),
        a.target.clone(),
        a.outcome.clone(),
    )
}

fn cli_cancel(url: &str, instance: &str) -> std::process::Output {
    leasehold(&["cancel", "--store", url, instance, "--reason", REASON])
}

fn tui_cancel(url: &str, instance: &str) {
    let store = url::open(url, OpenMode::ReadWrite).unwrap();
    let command = AppCommand::Cancel {
        instance: instance.into(),
        reason: REASON.into(),
    };
    execute(&store, None, &operator(), &command).unwrap();
}

#[test]
fn refusals_are_audited_alike_from_the_cli_and_the_dashboard() {
    let s = setup();
    for (instance, exit, outcome) in [
        (
            &s.completed,
            1,
            "refused: completed; reason: duplicate order",
        ),
        (
            &"wf-does-not-exist".to_owned(),
            2,
            "refused: no such instance; reason: duplicate order",
        ),
    ] {
        let before = audit(&s.url).len();
        let o = cli_cancel(&s.url, instance);
        assert_eq!(code(&o), exit, "{instance}: {}", stderr(&o));
        assert_eq!(stderr(&o).lines().count(), 1, "{}", stderr(&o));
        tui_cancel(&s.url, instance);
        let rows = audit(&s.url);
        assert_eq!(rows.len(), before + 2, "one entry each");
        let (cli, tui) = (said(&rows[before]), said(&rows[before + 1]));
        assert_eq!(cli, tui, "{instance}");
        assert_eq!(cli.1, "cancel-workflow");
        assert_eq!(cli.3, outcome);
    }
}

/// A refused cancel starts with its stable code, the words after it as they were: a
/// finished instance is `already-terminal`, another build's `INCOMPATIBLE_AUTHORITY`, and
/// a run over a filter that refused any match `ITEMS_REFUSED`.
#[test]
fn a_refused_cancel_starts_with_its_code() {
    let s = setup();
    let finished = super::assert_one_line_failure(&cli_cancel(&s.url, &s.completed), 1);
    assert_eq!(
        finished.trim_end(),
        format!(
            "leasehold: already-terminal: {} is already completed: nothing to cancel",
            s.completed
        )
    );
    let theirs = super::assert_one_line_failure(&cli_cancel(&s.url, &s.incompatible), 1);
    assert!(
        theirs.starts_with(&format!(
            "leasehold: INCOMPATIBLE_AUTHORITY: {} belongs to another build: ",
            s.incompatible
        )),
        "{theirs}"
    );
    let all = leasehold(&["cancel", "--store", &s.url, "--filter", "", "--yes"]);
    let bulk = super::assert_one_line_failure(&all, 1);
    assert_eq!(
        bulk.trim_end(),
        "leasehold: ITEMS_REFUSED: 2 of 4 matched instance(s) refused"
    );
}

/// An instance only another major version of its handlers may run is refused alike from
/// the CLI and from the dashboard (both run the built-in version), audited in the same
/// words; the CLI given that version cancels it.
#[test]
fn an_incompatible_cancel_is_refused_from_the_cli_and_the_dashboard() {
    let s = setup();
    let before = audit(&s.url).len();
    let o = cli_cancel(&s.url, &s.incompatible);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    assert!(
        stderr(&o).contains("belongs to another build"),
        "{}",
        stderr(&o)
    );
    tui_cancel(&s.url, &s.incompatible);
    let rows = audit(&s.url);
    assert_eq!(rows.len(), before + 2);
    assert_eq!(said(&rows[before]), said(&rows[before + 1]));
    assert_eq!(
        rows[before + 1].outcome,
        "refused: incompatible build; reason: duplicate order"
    );
    let store = url::open(&s.url, OpenMode::ReadOnly).unwrap();
    assert_ne!(
        store.instance(&s.incompatible).unwrap().unwrap().status,
        "cancelled",
        "left as it was"
    );
    let o = leasehold(&[
        "cancel",
        "--store",
        &s.url,
        &s.incompatible,
        "--handler-version",
        "2.1.0",
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
}

/// The dialog was opened while the instance could still be cancelled; by the time the
/// operator confirms, the CLI has cancelled it: the dashboard's refusal reads exactly as
/// the CLI's own second attempt.
#[test]
fn a_confirm_that_lost_the_race_is_refused_in_the_same_words() {
    let s = setup();
    let store = url::open(&s.url, OpenMode::ReadWrite).unwrap();
    let mut h = Harness::new(
        store,
        AppOptions {
            actor: operator(),
            ..AppOptions::default()
        },
        Theme::builtin("dark").unwrap(),
        None,
        100,
        30,
    );
    h.press(':');
    h.type_text(&format!("workflow {}", s.running));
    h.key(crossterm::event::KeyCode::Enter);
    h.press('C');
    h.key(crossterm::event::KeyCode::Tab);
    h.type_text(REASON);
    h.key(crossterm::event::KeyCode::Tab);
    assert_eq!(code(&cli_cancel(&s.url, &s.running)), 0);
    h.press('y');
    assert_eq!(code(&cli_cancel(&s.url, &s.running)), 0);
    let rows = audit(&s.url);
    let n = rows.len();
    assert_eq!(
        rows[n - 3].outcome,
        "cancelled; reason: duplicate order",
        "the CLI's cancel"
    );
    assert_eq!(said(&rows[n - 2]), said(&rows[n - 1]), "dashboard vs CLI");
    assert_eq!(
        rows[n - 1].outcome,
        "already cancelled; reason: duplicate order"
    );
    let status = h.app.status().unwrap();
    assert!(
        status.text.ends_with("already cancelled"),
        "{}",
        status.text
    );
    assert_ne!(status.role, Role::Error, "a notice, not an error");
}

/// Cancelling is idempotent: a second cancel of a cancelled instance succeeds (exit 0,
/// "already cancelled") from the CLI as from the dashboard, audited alike, and changes
/// nothing.
#[test]
fn a_repeated_cancel_succeeds_from_the_cli_and_the_dashboard() {
    let s = setup();
    let store = url::open(&s.url, OpenMode::ReadOnly).unwrap();
    let history = store.workflow_history(&s.cancelled).unwrap().len();
    let before = audit(&s.url).len();
    let o = cli_cancel(&s.url, &s.cancelled);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(
        stdout(&o),
        format!("{} already cancelled: nothing changed\n", s.cancelled)
    );
    assert!(stderr(&o).is_empty(), "{}", stderr(&o));
    tui_cancel(&s.url, &s.cancelled);
    let rows = audit(&s.url);
    assert_eq!(rows.len(), before + 2);
    assert_eq!(said(&rows[before]), said(&rows[before + 1]));
    assert_eq!(
        rows[before].outcome,
        "already cancelled; reason: duplicate order"
    );
    assert_eq!(
        store.workflow_history(&s.cancelled).unwrap().len(),
        history,
        "nothing was written to the instance"
    );
}

/// A registration in the store as an authority running the demo's handlers at `version`
/// writes it, live for the length of the test.
fn register_fleet(url: &str, id: &str, version: &str) {
    let names = leasehold::authority::workload::default_workload(0).handler_versions();
    let handlers: Vec<(&str, &str)> = names.keys().map(|n| (n.as_str(), version)).collect();
    let store = url::open(url, OpenMode::ReadWrite).unwrap();
    store
        .register_authority(&registration(id, &handlers, SystemClock.now() + 600_000))
        .unwrap();
}

/// With the fleet at 2.0.0, an instance started for it (by `workflow start`, which stamps
/// the registered versions) is cancelled from the CLI without `--handler-version` and from
/// the dashboard; one started for 1.0.0, which no registered build runs, is refused in
/// one line that names the build checked, unless `--handler-version 1.0.0` says so.
#[test]
fn a_fleet_at_a_new_major_version_cancels_its_own_instances() {
    let s = setup();
    register_fleet(&s.url, "fleet-2", "2.0.0");
    let start = |partner: &str| {
        let o = leasehold(&[
            "workflow",
            "start",
            "--store",
            &s.url,
            "integration-call",
            "--args",
            &json!({"partner": partner, "request": {"op": "sync"}}).to_string(),
        ]);
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        stdout(&o).split_whitespace().nth(1).unwrap().to_owned()
    };
    let (by_cli, by_dashboard) = (start("umbrella"), start("wonka"));
    let o = cli_cancel(&s.url, &by_cli);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    tui_cancel(&s.url, &by_dashboard);
    let store = url::open(&s.url, OpenMode::ReadOnly).unwrap();
    for id in [&by_cli, &by_dashboard] {
        assert_eq!(store.instance(id).unwrap().unwrap().status, "cancelled");
    }

    let o = cli_cancel(&s.url, &s.running);
    let err = super::assert_one_line_failure(&o, 1);
    assert!(
        err.contains("belongs to another build")
            && err.contains("checked: call-partner-api 2.0.0 (fleet-2)"),
        "{err}"
    );
    assert_eq!(
        store.instance(&s.running).unwrap().unwrap().status,
        "running"
    );
    let o = leasehold(&[
        "cancel",
        "--store",
        &s.url,
        &s.running,
        "--handler-version",
        "1.0.0",
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
}

/// `USER` and `LOGNAME` are anyone's to set; the audit log records the account the
/// kernel says runs the process.
#[test]
fn the_actor_is_the_os_account_not_the_environment() {
    let s = setup();
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_leasehold"))
        // Rewind witnesses of these throwaway stores stay out of the home directory.
        .env(
            "LEASEHOLD_STATE_DIR",
            std::env::temp_dir().join("leasehold-test-witnesses"),
        )
        .args(["cancel", "--store", &s.url, &s.running])
        .env_remove("LEASEHOLD_STORE")
        .env("USER", "mallory")
        .env("LOGNAME", "mallory")
        .env("HOSTNAME", "evil")
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let id = std::process::Command::new("id")
        .arg("-un")
        .output()
        .unwrap();
    let account = String::from_utf8(id.stdout).unwrap().trim().to_owned();
    let last = audit(&s.url).pop().unwrap();
    assert_eq!(last.actor, operator());
    assert!(
        last.actor.starts_with(&format!("{account}@")),
        "{} is not {account}@…",
        last.actor
    );
    assert!(!last.actor.contains("mallory") && !last.actor.contains("evil"));
}

/// `cancel --filter`: a dry run counts and changes nothing; a run cancels what is running,
/// skips what is already cancelled (no audit entry), refuses a completed instance (exit 1,
/// one line) and audits the run with the filter and the counts; a re-run changes nothing.
#[test]
fn cancel_over_a_filter_finishes_the_rest_and_does_nothing_twice() {
    let s = setup();
    let status = |id: &str| {
        let store = url::open(&s.url, OpenMode::ReadOnly).unwrap();
        store.instance(id).unwrap().unwrap().status
    };
    let json = |o: &std::process::Output| -> Value {
        serde_json::from_str(String::from_utf8_lossy(&o.stdout).trim()).unwrap()
    };
    let dry = leasehold(&[
        "cancel",
        "--store",
        &s.url,
        "--filter",
        "status:running",
        "--dry-run",
        "--json",
    ]);
    assert_eq!(code(&dry), 0, "{}", stderr(&dry));
    let preview = json(&dry);
    assert_eq!(
        (preview["matched"].as_u64(), preview["done"].as_u64()),
        (Some(2), Some(0)),
        "the running instance and the one of another major version"
    );
    assert!(
        preview["first"]
            .as_array()
            .unwrap()
            .contains(&json!(s.running))
    );
    assert_eq!(status(&s.running), "running", "a dry run changes nothing");

    let all = || {
        leasehold(&[
            "cancel", "--store", &s.url, "--filter", "", "--yes", "--reason", REASON, "--json",
        ])
    };
    let run = all();
    assert_eq!(
        code(&run),
        1,
        "the completed and the incompatible instances are refused: {}",
        stderr(&run)
    );
    assert_eq!(stderr(&run).lines().count(), 1, "{}", stderr(&run));
    let counts = json(&run);
    let tally =
        |v: &Value| ["matched", "done", "skipped", "refused"].map(|k| v[k].as_u64().unwrap());
    assert_eq!(tally(&counts), [4, 1, 1, 2]);
    assert_eq!(status(&s.running), "cancelled");
    assert_eq!(status(&s.completed), "completed");

    let again = all();
    assert_eq!(code(&again), 1);
    assert_eq!(
        tally(&json(&again)),
        [4, 0, 2, 2],
        "nothing is cancelled twice"
    );
    let cancels: Vec<String> = audit(&s.url)
        .iter()
        .filter(|a| a.action == "cancel-workflow" && a.actor == operator())
        .map(|a| format!("{} {}", a.target, a.outcome))
        .collect();
    assert_eq!(
        cancels,
        [format!("{} cancelled; reason: {REASON}", s.running)],
        "one entry per change"
    );
    let runs = audit(&s.url)
        .iter()
        .filter(|a| a.action == "bulk-cancel-workflow")
        .count();
    assert_eq!(runs, 2);
}

/// `cancel --filter --dry-run` judges every match with the cancel's own verdict function:
/// what it says a run would do — change, skip, refuse and why — is what the run then does,
/// an already-cancelled instance of another build included.
#[test]
fn a_dry_run_says_what_the_cancel_then_does() {
    let s = setup();
    let store = url::open(&s.url, OpenMode::ReadWrite).unwrap();
    let theirs_cancelled = store
        .start_workflow(
            "integration-call",
            inputs("umbrella"),
            "alice",
            None,
            leasehold::authority::workload::default_workload(0)
                .at_version(&HandlerVersion::demo().next_major())
                .handler_versions(),
        )
        .unwrap()
        .instance_id;
    store
        .cancel_workflow(&theirs_cancelled, None, "ops@host", "setup")
        .unwrap();
    let run = |extra: &[&str]| {
        let mut args = vec![
            "cancel", "--store", &s.url, "--filter", "", "--yes", "--json",
        ];
        args.extend_from_slice(extra);
        let o = leasehold(&args);
        serde_json::from_str::<Value>(String::from_utf8_lossy(&o.stdout).trim()).unwrap()
    };
    let dry = run(&["--dry-run"]);
    let would = &dry["would"];
    let done = run(&["--reason", REASON]);
    assert_eq!(
        [&would["change"], &would["skip"], &would["refuse"]],
        [&done["done"], &done["skipped"], &done["refused"]],
        "dry run {dry} against the run {done}"
    );
    assert_eq!(would["refusals"], done["refusals"]);
    assert_eq!(
        done["refused"], 3,
        "completed, another build's, and another build's cancelled"
    );
    assert!(
        done["refusals"]
            .as_array()
            .unwrap()
            .contains(&json!(format!(
                "{theirs_cancelled}: refused: incompatible build"
            )))
    );
}

/// More registrations than one page of the dashboard's tables: 64 authorities run 3.0.0
/// and only the 65th by id runs 2.0.0, the build two instances were started for. The
/// dashboard (its compatibility mark and its cancel), `inspect workflows` and `leasehold
/// cancel` read the same registry and agree: the instances are the fleet's.
#[test]
fn the_65th_authority_counts_for_every_reader() {
    let s = setup();
    for i in 0..64 {
        register_fleet(&s.url, &format!("a-{i:02}"), "3.0.0");
    }
    register_fleet(&s.url, "z-65", "2.0.0");
    let store = url::open(&s.url, OpenMode::ReadWrite).unwrap();
    let versions = leasehold::authority::workload::default_workload(0)
        .at_version(&HandlerVersion::demo().next_major())
        .handler_versions();
    let by_dashboard = store
        .start_workflow("integration-call", inputs("stark"), "alice", None, versions)
        .unwrap()
        .instance_id;

    let inspected = super::json_lines(&leasehold(&[
        "inspect",
        "--store",
        &s.url,
        "workflows",
        "--json",
        "--limit",
        "100",
    ]));
    for id in [&s.incompatible, &by_dashboard] {
        let row = inspected
            .iter()
            .find(|r| r["instanceId"] == id.as_str())
            .unwrap();
        assert_eq!(row["compatible"], true, "inspect: {id}");
    }

    let mut h = Harness::new(
        store.clone(),
        AppOptions {
            actor: operator(),
            ..AppOptions::default()
        },
        Theme::builtin("dark").unwrap(),
        None,
        160,
        48,
    );
    h.command(&format!("workflow {by_dashboard}"));
    let snap = h.app.snapshot().unwrap();
    let compat = store.instance(&by_dashboard).unwrap().unwrap().compat;
    assert_eq!(
        leasehold::tui::views::work::compatible(snap, &compat),
        ("yes", true),
        "the dashboard's mark"
    );
    assert_eq!(snap.fleet.registered(), 65);
    h.press('C');
    h.press('y');
    let status = h.app.status().unwrap();
    assert!(status.text.ends_with(": cancelled"), "{}", status.text);

    let o = cli_cancel(&s.url, &s.incompatible);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    for id in [&s.incompatible, &by_dashboard] {
        assert_eq!(store.instance(id).unwrap().unwrap().status, "cancelled");
    }
}
