//! A PostgreSQL store records the server it is written on: a database that finds itself on
//! another server (restored into another cluster, failed over to a new timeline) keeps
//! taking writes, and the change is recorded and named by `check` and `inspect overview`
//! as a warning, since whether commits were lost cannot be told from the store.

use leasehold::check::{CheckOptions, check, gap_codes};
use leasehold::model::PageRequest;
use leasehold::model::work::NewWork;
use leasehold::store::Store;
use leasehold::store::url::{self, OpenMode};

use crate::support::authorities::HANDLER;
use crate::support::leasehold;
use crate::support::postgres::database;

fn enqueue(store: &Store, id: &str) {
    store
        .enqueue(NewWork::effect(id, HANDLER, "{}"), "k")
        .unwrap();
}

/// The `server-changed` findings of a check of the store at `url`.
fn changes(url: &str) -> Vec<leasehold::check::Violation> {
    let reader = url::open(url, OpenMode::ReadOnly).unwrap();
    let report = check(&reader, &CheckOptions::at(reader.now())).unwrap();
    assert!(report.is_clean(), "{report:?}");
    report
        .gaps
        .into_iter()
        .filter(|g| g.invariant == gap_codes::SERVER_CHANGED)
        .collect()
}

fn meta(client: &mut postgres::Client, key: &str) -> Option<i64> {
    client
        .query_opt("SELECT value FROM meta WHERE key = $1", &[&key])
        .unwrap()
        .map(|r| r.get(0))
}

/// The dashboard's first screen over the store at `url`, as text.
fn dashboard(url: &str) -> String {
    use leasehold::tui::app::AppOptions;
    use leasehold::tui::harness::{Harness, buffer_text};
    use leasehold::tui::theme::Theme;
    let options = AppOptions {
        read_only: true,
        demo: false,
        actor: "tester@ci".into(),
        refresh_ms: 250,
        zone: leasehold::foundation::timefmt::Zone::Utc,
    };
    let reader = url::open(url, OpenMode::ReadOnly).unwrap();
    let theme = Theme::builtin("dark").unwrap();
    let harness = Harness::new(reader, options, theme, None, 200, 40);
    buffer_text(&harness.render())
}

#[test]
fn a_store_written_on_another_server_keeps_taking_writes_and_the_change_is_named() {
    let db = database();
    let store = url::open(db.url(), OpenMode::ReadWrite).unwrap();
    enqueue(&store, "fx-0");
    drop(store);
    let mut admin = postgres::Client::connect(db.url(), postgres::NoTls).unwrap();
    let (system_id, timeline): (i64, i64) = {
        let row = admin
            .query_one(
                "SELECT s.system_identifier, c.timeline_id::bigint
                 FROM pg_control_system() s, pg_control_checkpoint() c",
                &[],
            )
            .unwrap();
        (row.get(0), row.get(1))
    };
    assert_eq!(meta(&mut admin, "server_system_id"), Some(system_id));
    assert_eq!(meta(&mut admin, "server_timeline"), Some(timeline));
    assert!(changes(db.url()).is_empty());

    // What a database restored from another cluster's backup holds: that cluster's mark.
    let other = system_id ^ 1;
    admin
        .execute(
            "UPDATE meta SET value = $1 WHERE key = 'server_system_id'",
            &[&other],
        )
        .unwrap();
    let found = changes(db.url());
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(
        found[0].ids,
        [
            format!("system identifier {other} timeline {timeline}"),
            format!("system identifier {system_id} timeline {timeline}"),
            String::new()
        ]
    );
    let o = leasehold(&["inspect", "overview", "--store", db.url()]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.lines()
            .any(|l| l.starts_with("server       CHANGED: ") && l.contains(&other.to_string())),
        "{text}"
    );

    // The dashboard warns of it: a badge in the header, the sentence in the overview.
    let text = dashboard(db.url());
    assert!(
        text.contains("SERVER CHANGED: commits may have been lost"),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "server the store was last written on system identifier {other}"
        )),
        "{text}"
    );

    // Not refused: the write goes through and records the change once.
    let store = url::open(db.url(), OpenMode::ReadWrite).unwrap();
    let before = store.revision().unwrap();
    enqueue(&store, "fx-1");
    enqueue(&store, "fx-2");
    let audit = store.list_audit(&PageRequest::first(100)).unwrap();
    let recorded: Vec<_> = audit
        .rows
        .iter()
        .filter(|a| a.action == "server-changed")
        .collect();
    assert_eq!(recorded.len(), 1, "{recorded:?}");
    assert!(
        recorded[0]
            .outcome
            .contains(&format!("through revision {before}")),
        "{recorded:?}"
    );
    drop(store);
    assert_eq!(meta(&mut admin, "server_system_id"), Some(system_id));
    let found = changes(db.url());
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].ids[2], before.to_string(), "{found:?}");
    assert!(found[0].sentence.contains("cannot be told"), "{found:?}");

    // Another timeline (a failover) is a change too.
    admin
        .execute(
            "UPDATE meta SET value = $1 WHERE key = 'server_timeline'",
            &[&(timeline + 1)],
        )
        .unwrap();
    assert!(
        changes(db.url())
            .iter()
            .any(|c| c.ids[0].ends_with(&format!("timeline {}", timeline + 1))),
    );

    // Once retention keeps no history from before the recorded change, it is no longer
    // reported; a server answering now that the store does not name still is.
    admin
        .execute(
            "INSERT INTO meta (key, value) VALUES ('history_from', $1)
             ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            &[&i64::try_from(before + 2).unwrap()],
        )
        .unwrap();
    let found = changes(db.url());
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].ids[2].is_empty(), "{found:?}");
}

/// The control functions are executable by any role on a stock server; where an
/// installation revoked them, the identity is unknown: nothing is recorded or compared,
/// and writes go on.
#[test]
fn a_role_that_may_not_read_the_server_records_nothing_and_writes() {
    let db = database();
    let role = format!("lh_plain_{}", std::process::id());
    let mut admin = postgres::Client::connect(db.url(), postgres::NoTls).unwrap();
    let name: String = admin
        .query_one("SELECT current_database()", &[])
        .unwrap()
        .get(0);
    admin
        .batch_execute(&format!(
            "DO $$ BEGIN CREATE ROLE {role} LOGIN; EXCEPTION WHEN duplicate_object THEN NULL; END $$;
             ALTER DATABASE \"{name}\" OWNER TO {role};"
        ))
        .unwrap();
    let plain = db.url().replacen("postgres@", &format!("{role}@"), 1);
    let mut as_plain = postgres::Client::connect(&plain, postgres::NoTls).unwrap();
    as_plain
        .query_one("SELECT system_identifier FROM pg_control_system()", &[])
        .expect("PUBLIC may call the control functions on a stock server");
    drop(as_plain);
    admin
        .batch_execute(
            "REVOKE EXECUTE ON FUNCTION pg_control_system() FROM PUBLIC;
             REVOKE EXECUTE ON FUNCTION pg_control_checkpoint() FROM PUBLIC;",
        )
        .unwrap();
    let store = url::open(&plain, OpenMode::ReadWrite).unwrap();
    enqueue(&store, "fx-0");
    enqueue(&store, "fx-1");
    drop(store);
    assert_eq!(meta(&mut admin, "server_system_id"), None);
    assert!(changes(&plain).is_empty());
}

/// What `leasehold ARGS` printed, with its exit code.
fn said(args: &[&str]) -> (i32, String) {
    let o = leasehold(args);
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(
        o.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    (o.status.code().unwrap_or(-1), text)
}

fn acknowledge(url: &str) -> (i32, String) {
    said(&[
        "store",
        "acknowledge-server-change",
        "--store",
        url,
        "--reason",
        "the new primary had every commit",
    ])
}

/// The audit entries of `action`.
fn audited(url: &str, action: &str) -> Vec<leasehold::model::AuditEntry> {
    let reader = url::open(url, OpenMode::ReadOnly).unwrap();
    let audit = reader.list_audit(&PageRequest::first(100)).unwrap();
    audit
        .rows
        .into_iter()
        .filter(|a| a.action == action)
        .collect()
}

/// Sets the server a store's meta names, as a restore or a failover leaves it.
fn names(admin: &mut postgres::Client, key: &str, value: i64) {
    admin
        .execute("UPDATE meta SET value = $1 WHERE key = $2", &[&value, &key])
        .unwrap();
}

/// An operator who made sure nothing was lost acknowledges a recorded change: `check`
/// stops warning, the overview and the dashboard mark it acknowledged, the audit log keeps
/// who and why; acknowledging again writes nothing, and a later change is warned of again.
#[test]
fn an_acknowledged_server_change_is_shown_but_no_longer_warned_of() {
    let db = database();
    let store = url::open(db.url(), OpenMode::ReadWrite).unwrap();
    enqueue(&store, "fx-0");
    let mut admin = postgres::Client::connect(db.url(), postgres::NoTls).unwrap();
    let system_id = meta(&mut admin, "server_system_id").unwrap();
    let timeline = meta(&mut admin, "server_timeline").unwrap();
    let before = store.revision().unwrap();
    drop(store);
    names(&mut admin, "server_system_id", system_id ^ 1);
    enqueue(&url::open(db.url(), OpenMode::ReadWrite).unwrap(), "fx-1");
    assert_eq!(changes(db.url()).len(), 1);

    let (code, out) = acknowledge(db.url());
    assert_eq!(code, 0, "{out}");
    assert!(
        out.starts_with("acknowledged: the store was written on "),
        "{out}"
    );
    assert!(out.contains(&format!("through revision {before}")), "{out}");
    assert_eq!(out.lines().count(), 1, "{out}");
    assert!(changes(db.url()).is_empty(), "check no longer warns of it");
    let acknowledged = audited(db.url(), "server-change-acknowledged");
    assert_eq!(acknowledged.len(), 1, "{acknowledged:?}");
    assert!(
        acknowledged[0]
            .outcome
            .contains("the new primary had every commit"),
        "{acknowledged:?}"
    );
    let (_, overview) = said(&["inspect", "overview", "--store", db.url()]);
    assert!(
        overview
            .lines()
            .any(|l| l.starts_with("server       changed (acknowledged): the store was written on")),
        "{overview}"
    );
    let (_, json) = said(&["inspect", "overview", "--store", db.url(), "--json"]);
    let json: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(json["serverChanges"][0]["acknowledged"], true, "{json}");
    let screen = dashboard(db.url());
    assert!(!screen.contains("SERVER CHANGED"), "{screen}");
    assert!(
        screen.contains("server changed (acknowledged): the store was written on"),
        "{screen}"
    );

    let (code, again) = acknowledge(db.url());
    assert_eq!(code, 0, "{again}");
    assert!(
        again.starts_with("nothing to acknowledge: this change was acknowledged before: "),
        "{again}"
    );
    assert_eq!(audited(db.url(), "server-change-acknowledged").len(), 1);

    // A failover after it: the new change is warned of again.
    names(&mut admin, "server_timeline", timeline + 1);
    enqueue(&url::open(db.url(), OpenMode::ReadWrite).unwrap(), "fx-2");
    let found = changes(db.url());
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(dashboard(db.url()).contains("SERVER CHANGED"));
}

/// A server answering for the store that no writer has recorded yet is recorded by the
/// acknowledging write itself, then acknowledged: the operator acknowledges the change
/// they see, not the one before it.
#[test]
fn a_change_no_writer_recorded_yet_is_recorded_and_acknowledged_at_once() {
    let db = database();
    enqueue(&url::open(db.url(), OpenMode::ReadWrite).unwrap(), "fx-0");
    let mut admin = postgres::Client::connect(db.url(), postgres::NoTls).unwrap();
    let system_id = meta(&mut admin, "server_system_id").unwrap();
    names(&mut admin, "server_system_id", system_id ^ 1);
    let found = changes(db.url());
    assert!(found.len() == 1 && found[0].ids[2].is_empty(), "{found:?}");

    let (code, out) = acknowledge(db.url());
    assert_eq!(code, 0, "{out}");
    assert!(out.starts_with("acknowledged: "), "{out}");
    assert!(changes(db.url()).is_empty());
    assert_eq!(audited(db.url(), "server-changed").len(), 1);
    assert_eq!(audited(db.url(), "server-change-acknowledged").len(), 1);
    assert_eq!(meta(&mut admin, "server_system_id"), Some(system_id));
}

/// A recorded change that does not say after which revision it happened (a record no build
/// of today writes, kept by the store all the same) is acknowledged once, like any other:
/// the acknowledging write gives it the revision it was acknowledged at, and from then on
/// `check` leaves it out and a second acknowledgement has nothing to do.
#[test]
fn a_change_recorded_without_its_revision_is_acknowledged_once() {
    let db = database();
    enqueue(&url::open(db.url(), OpenMode::ReadWrite).unwrap(), "fx-0");
    let mut admin = postgres::Client::connect(db.url(), postgres::NoTls).unwrap();
    let system_id = meta(&mut admin, "server_system_id").unwrap();
    names(&mut admin, "server_system_id", system_id ^ 1);
    enqueue(&url::open(db.url(), OpenMode::ReadWrite).unwrap(), "fx-1");
    admin
        .execute("DELETE FROM meta WHERE key = 'server_changed_after'", &[])
        .unwrap();
    assert_eq!(changes(db.url()).len(), 1);

    let (code, out) = acknowledge(db.url());
    assert_eq!(code, 0, "{out}");
    assert!(out.starts_with("acknowledged: "), "{out}");
    assert!(changes(db.url()).is_empty(), "check no longer warns of it");
    let (code, again) = acknowledge(db.url());
    assert_eq!(code, 0, "{again}");
    assert!(again.starts_with("nothing to acknowledge: "), "{again}");
    assert_eq!(audited(db.url(), "server-change-acknowledged").len(), 1);
}

/// A store that never changed server has nothing to acknowledge, and nothing is written.
#[test]
fn a_store_on_one_server_has_nothing_to_acknowledge() {
    let db = database();
    enqueue(&url::open(db.url(), OpenMode::ReadWrite).unwrap(), "fx-0");
    let revision = url::open(db.url(), OpenMode::ReadOnly)
        .unwrap()
        .revision()
        .unwrap();
    let (code, out) = acknowledge(db.url());
    assert_eq!(code, 0, "{out}");
    assert!(
        out.starts_with("nothing to acknowledge: ")
            && out.contains("shows no change of database server"),
        "{out}"
    );
    let reader = url::open(db.url(), OpenMode::ReadOnly).unwrap();
    assert_eq!(reader.revision().unwrap(), revision, "nothing was written");
}
