//! Invariants 10 and 11: stranded workflow instances and waits below the journal's
//! retention, planted as rows, written by the engine itself, and stated by `leasehold check`.

use std::sync::Arc;

use leasehold::check::{codes, render_text};
use leasehold::clock::{Clock, Millis};
use leasehold::model::work::NewWork;
use leasehold::model::{Authority, Grant, InstanceRow, JournalEvent};
use leasehold::store::sqlite::SqliteBackend;
use leasehold::store::url::OpenMode;
use leasehold::workflow::engine::Engine;
use leasehold::workflow::{Catalog, SHIPPED_DEFINITIONS};
use serde_json::{Value, json};

use super::{
    Fixture, LEASE, T0, V1, assert_codes, assert_reported, authority, fixture, k1, over,
    sqlite_fixture,
};

// --- 10. stranded workflow instances, 11. waits past the journal's retention

/// A non-terminal (or terminal) instance row with no history, as a stuck build leaves it.
fn plant_row(
    f: &Fixture,
    id: &str,
    status: &str,
    compat: &str,
    due: Option<Millis>,
    state: &Value,
) {
    f.plant(|tx, _| {
        tx.insert_instance(&InstanceRow {
            instance_id: id.into(),
            workflow_id: "order".into(),
            status: leasehold::model::InstanceStatus::parse(status).expect("a status"),
            compat: compat.into(),
            instance_revision: 1,
            next_eligible_at: due,
            waiting_event: None,
            principal: "alice".into(),
            start_key: None,
            state: state.to_string(),
            created_at: T0,
            updated_at: T0,
        })
    });
}

/// The machine state of an instance waiting for `event` after journal seq `since`.
fn waiting_for(event: &str, since: i64) -> Value {
    json!({"waiting": {"kind": "event", "event": event, "sinceEventSeq": since, "timeoutAt": null}})
}

/// Appends `n` journal events of a type nobody waits for, in one transaction, through the
/// provider's own append (which trims the journal to its retention).
fn append_noise(f: &Fixture, n: i64) {
    f.plant(|tx, _| {
        for _ in 0..n {
            tx.append_journal(&JournalEvent {
                seq: 0,
                event_type: "noise".into(),
                source: None,
                external_id: None,
                payload: "{}".into(),
                fingerprint: "0".into(),
                at: T0,
            })?;
        }
        Ok(())
    });
}

fn heartbeat(f: &Fixture, id: &str) {
    f.store
        .heartbeat(&authority(id, V1, T0).incarnation(), false)
        .unwrap();
}

#[test]
fn an_overdue_instance_is_stranded_while_its_build_is_live() {
    let f = fixture();
    f.store
        .register_authority(&authority("a-1", V1, T0))
        .unwrap();
    let idle = json!({});
    plant_row(&f, "wf-overdue", "running", k1(), Some(T0), &idle);
    plant_row(
        &f,
        "wf-within-bound",
        "running",
        k1(),
        Some(T0 + 100_000),
        &idle,
    );
    plant_row(&f, "wf-timer", "waiting", k1(), Some(T0 + 600_000), &idle);
    plant_row(
        &f,
        "wf-event",
        "waiting",
        k1(),
        None,
        &waiting_for("paid", 0),
    );
    plant_row(&f, "wf-old-build", "running", "k0", Some(T0), &idle);
    plant_row(&f, "wf-done", "completed", k1(), Some(T0), &idle);
    f.clock.advance(120_000);
    heartbeat(&f, "a-1");

    let report = f.run();
    assert_codes(&report, &[codes::STRANDED_INSTANCE]);
    assert_reported(&report, codes::STRANDED_INSTANCE, &["wf-overdue"]);
    assert_eq!(f.run_with(1).violations, report.violations);

    // Without a live authority of its build, the same instance waits for one.
    f.clock.advance(LEASE * 10);
    let report = f.run();
    assert!(report.is_clean(), "{}", render_text(&report));
}

/// An instance overdue past the bound while the live authority that may run it keeps
/// claiming other instances (in due order, of every build it runs) waits behind a backlog:
/// counted, not stranded. Claims of work items do not excuse it: instances and items are
/// claimed apart.
#[test]
fn an_instance_overdue_behind_a_busy_authority_is_backlogged() {
    let f = fixture();
    f.store
        .register_authority(&authority("a-1", V1, T0))
        .unwrap();
    plant_row(&f, "wf-queued", "running", k1(), Some(T0), &json!({}));
    f.store
        .enqueue(NewWork::effect("e-busy", "noop", "{}"), k1())
        .unwrap();
    f.clock.advance(120_000);
    f.store.claim("e-busy", "a-1", k1(), 600_000).unwrap();
    heartbeat(&f, "a-1");
    let report = f.run();
    assert_reported(&report, codes::STRANDED_INSTANCE, &["wf-queued"]);

    let now = f.clock.now();
    f.plant(|tx, revision| {
        tx.add_grant(Grant {
            revision,
            resource_id: "wf:wf-earlier".into(),
            generation: 1,
            owner_id: "a-1".into(),
            how: leasehold::model::GrantKind::Claim,
            owner_compat: Some(k1().into()),
            item_compat: Some(k1().into()),
            at: now,
            took_over: None,
        })
    });
    let report = f.run();
    assert!(report.is_clean(), "{}", render_text(&report));
    assert_eq!(report.backlogged_instances, 1);
}

#[test]
fn an_instance_is_not_stranded_before_its_build_has_been_live_for_the_bound() {
    let f = fixture();
    plant_row(&f, "wf-1", "running", k1(), Some(T0), &json!({}));
    f.clock.advance(600_000);
    let registered = authority("a-1", V1, f.clock.now());
    f.store.register_authority(&registered).unwrap();
    assert!(f.run().is_clean());
    f.clock.advance(61_000);
    f.store.heartbeat(&registered.incarnation(), false).unwrap();
    assert_codes(&f.run(), &[codes::STRANDED_INSTANCE]);
}

/// The journal trims its oldest events past `RETENTION.journal_events`: a wait from before
/// the trimmed part is reported, a wait from its edge on is not, nor is a finished one.
fn waits_below_the_trimmed_journal_are_reported(f: &Fixture) {
    let keep = leasehold::store::RETENTION.journal_events;
    plant_row(
        f,
        "wf-old-wait",
        "waiting",
        k1(),
        None,
        &waiting_for("paid", 0),
    );
    plant_row(
        f,
        "wf-edge-wait",
        "waiting",
        k1(),
        None,
        &waiting_for("paid", 3),
    );
    plant_row(
        f,
        "wf-done",
        "completed",
        k1(),
        None,
        &waiting_for("paid", 0),
    );
    append_noise(f, keep);
    let report = f.run();
    assert!(
        report.is_clean(),
        "nothing trimmed yet:\n{}",
        render_text(&report)
    );

    // Three more: seqs 1..=3 are trimmed, so events the old wait could match are gone.
    append_noise(f, 3);
    let report = f.run();
    assert_codes(&report, &[codes::WAIT_PAST_RETENTION]);
    assert_reported(&report, codes::WAIT_PAST_RETENTION, &["wf-old-wait"]);
    assert!(
        report.violations[0]
            .sentence
            .contains("after journal seq 0, but the journal was trimmed through seq 3"),
        "{}",
        render_text(&report)
    );
    assert_eq!(f.run_with(1).violations, report.violations);
}

#[test]
fn a_wait_older_than_the_retained_journal_is_reported() {
    waits_below_the_trimmed_journal_are_reported(&fixture());
}

#[test]
fn a_wait_older_than_the_retained_journal_is_reported_on_sqlite() {
    waits_below_the_trimmed_journal_are_reported(&sqlite_fixture());
}

/// The rules judge the rows the engine itself writes: an instance parked under a claim is
/// fine until that claim lapses unreclaimed past the bound; reclaimed and run into its
/// payment wait it is fine again, until the journal trims past the wait.
#[test]
fn the_engines_own_instances_are_judged_by_their_rows() {
    let f = fixture();
    let s = &f.store;
    s.register_authority(&authority("a-1", V1, T0)).unwrap();
    let (_, text) = SHIPPED_DEFINITIONS
        .iter()
        .find(|(name, _)| name.starts_with("order-fulfilment"))
        .expect("shipped");
    s.deploy_workflow(text, &Catalog::demo())
        .unwrap()
        .expect("valid");
    let args = json!({"orderId": "o-1", "amount": 10});
    let id = s
        .start_workflow(
            "order-fulfilment",
            args.as_object().cloned().unwrap(),
            "alice",
            None,
            k1(),
        )
        .unwrap()
        .instance_id;
    let engine = Engine::new(s.clone(), "a-1", k1());
    assert_eq!(engine.claim(1, LEASE).unwrap().len(), 1);

    // The claim parks the instance until its lease lapses: not overdue meanwhile.
    f.clock.advance(LEASE);
    heartbeat(&f, "a-1");
    assert!(f.run().is_clean(), "{}", render_text(&f.run()));
    // The holder died; nobody reclaimed it for longer than the bound.
    f.clock.advance(61_000);
    heartbeat(&f, "a-1");
    let report = f.run();
    assert_codes(&report, &[codes::STRANDED_INSTANCE]);
    assert_reported(&report, codes::STRANDED_INSTANCE, &[&id]);

    let claimed = engine.claim(1, LEASE).unwrap();
    let row = engine
        .advance(&claimed[0], |_| Ok(json!({"reservationId": "r-1"})))
        .unwrap()
        .expect("the reservation ran");
    assert_eq!(row.waiting_event.as_deref(), Some("payment-received"));
    let report = f.run();
    assert!(report.is_clean(), "{}", render_text(&report));

    append_noise(&f, leasehold::store::RETENTION.journal_events + 1);
    let report = f.run();
    assert_codes(&report, &[codes::WAIT_PAST_RETENTION]);
    assert_reported(&report, codes::WAIT_PAST_RETENTION, &[&id]);
}

/// `leasehold check` over a SQLite file (it judges at the real clock): both workflow rules
/// appear as text lines and JSON objects, and the exit code says violations were found.
#[test]
fn leasehold_check_states_stranded_instances_and_lost_waits() {
    use leasehold::clock::SystemClock;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.db");
    let backend = SqliteBackend::open(&path, OpenMode::ReadWrite).unwrap();
    let f = over(Arc::new(backend), Some(dir));
    let now = SystemClock.now();
    // Live for an hour and a half whatever the machine's speed: judged by its own timing.
    let patient = Authority {
        config: json!({
            "heartbeatIntervalMs": 3_600_000,
            "leaseDurationMs": 7_200_000,
            "handlers": { "noop": V1 },
        })
        .to_string(),
        heartbeat_at: now,
        ..authority("a-1", V1, now - 600_000)
    };
    f.plant(|tx, _| tx.put_authority(&patient));
    plant_row(
        &f,
        "wf-stuck",
        "running",
        k1(),
        Some(now - 600_000),
        &json!({}),
    );
    plant_row(
        &f,
        "wf-lost",
        "waiting",
        k1(),
        None,
        &waiting_for("paid", 0),
    );
    append_noise(&f, leasehold::store::RETENTION.journal_events + 1);
    let url = format!("sqlite:{}", path.display());
    let run = |json: bool| {
        let mut args = vec!["check", "--store", url.as_str()];
        if json {
            args.push("--json");
        }
        let o = std::process::Command::new(env!("CARGO_BIN_EXE_leasehold"))
            // Rewind witnesses of these throwaway stores stay out of the home directory.
            .env(
                "LEASEHOLD_STATE_DIR",
                std::env::temp_dir().join("leasehold-test-witnesses"),
            )
            .args(&args)
            .output()
            .unwrap();
        (o.status.code(), String::from_utf8(o.stdout).unwrap())
    };

    let (code, text) = run(false);
    assert_eq!(code, Some(1), "{text}");
    assert!(
        text.lines()
            .any(|l| l.starts_with("stranded-instance [wf-stuck] workflow instance wf-stuck")),
        "{text}"
    );
    assert!(
        text.lines().any(|l| l.starts_with(
            "wait-past-retention [wf-lost] workflow instance wf-lost waits for a paid event"
        )),
        "{text}"
    );
    assert_eq!(
        text.lines().last(),
        Some("2 violations: 1 stranded-instance, 1 wait-past-retention"),
        "{text}"
    );

    let (code, json) = run(true);
    assert_eq!(code, Some(1), "{json}");
    let objects: Vec<Value> = json
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let reported: Vec<(&str, &str)> = objects
        .iter()
        .filter_map(|o| Some((o["invariant"].as_str()?, o["ids"][0].as_str()?)))
        .collect();
    assert_eq!(
        reported,
        [
            ("stranded-instance", "wf-stuck"),
            ("wait-past-retention", "wf-lost")
        ]
    );
}
