//! Invariants 3 and 4: one firing per schedule instant, with derived unique ids, and no
//! duplicate semantic event inside its dedup window.

use leasehold::check::{codes, render_text};
use leasehold::model::{JournalEvent, WorkKind};

use super::{T0, assert_codes, assert_reported, fixture, k1};

// --- 3. one firing per schedule instant

#[test]
fn a_schedule_firing_completed_twice_is_reported() {
    let f = fixture();
    let firing = "nightly@1700000040000";
    f.item(firing, WorkKind::Schedule);
    f.grant(firing, 1, "a-1");
    f.complete(firing, 1, "a-1");
    f.grant(firing, 2, "a-2");
    f.complete(firing, 2, "a-2");

    let report = f.run();
    assert_codes(&report, &[codes::SCHEDULE_FIRED_TWICE]);
    assert_reported(
        &report,
        codes::SCHEDULE_FIRED_TWICE,
        &[firing, "a-1", "a-2"],
    );
}

#[test]
fn schedule_firing_ids_must_be_derived_and_unique() {
    let f = fixture();
    f.item("nightly", WorkKind::Schedule);
    f.item("hourly@3600000", WorkKind::Schedule);
    f.item("hourly@03600000", WorkKind::Schedule);
    f.item("daily@+86400000", WorkKind::Schedule);
    f.item("ok@60000", WorkKind::Schedule);
    // Not a schedule item: its id is free-form.
    f.item("mail@example", WorkKind::Effect);

    let report = f.run();
    assert_reported(&report, codes::SCHEDULE_FIRING_ID_MALFORMED, &["nightly"]);
    assert_reported(
        &report,
        codes::SCHEDULE_FIRING_DUPLICATED,
        &["hourly@3600000", "hourly@03600000"],
    );
    assert_reported(
        &report,
        codes::SCHEDULE_FIRING_ID_MALFORMED,
        &["daily@+86400000"],
    );
    assert_eq!(report.violations.len(), 3, "{}", render_text(&report));
}

// --- 4. no duplicate semantic event

#[test]
fn a_duplicate_semantic_event_in_the_journal_is_reported() {
    let f = fixture();
    let event = |source: Option<&str>, id: Option<&str>| JournalEvent {
        seq: 0,
        event_type: "payment.captured".into(),
        source: source.map(Into::into),
        external_id: id.map(Into::into),
        payload: "{}".into(),
        fingerprint: "f".into(),
        at: T0,
    };
    for e in [
        event(Some("stripe"), Some("evt-1")),
        event(Some("stripe"), Some("evt-2")),
        event(Some("adyen"), Some("evt-1")),
        event(Some("stripe"), Some("evt-1")),
        // Unidentified events are at-least-once by design.
        event(None, None),
        event(None, None),
    ] {
        f.plant(|tx, _| tx.append_journal(&e).map(|_| ()));
    }

    let report = f.run();
    assert_codes(&report, &[codes::DUPLICATE_SEMANTIC_EVENT]);
    assert_reported(
        &report,
        codes::DUPLICATE_SEMANTIC_EVENT,
        &["stripe", "evt-1"],
    );
    assert!(report.violations[0].sentence.contains("seq 1 and seq 4"));
    assert_eq!(report.checked.journal_events, 6);
}

/// An id journalled again once its source's dedup window had passed was accepted again by
/// design: not a violation. The window is the shortest a registered authority trims by;
/// inside it, the second event still is one.
#[test]
fn an_event_again_after_its_dedup_window_is_no_violation() {
    let f = fixture();
    let mut config = leasehold::authority::AuthorityConfig::new("a-1", "v1");
    config.retention.dedup_ms = 3_600_000;
    config
        .retention
        .dedup_by_source
        .insert("slow".into(), 10 * 3_600_000);
    f.store
        .register_authority(&leasehold::model::Authority {
            instance_id: "a-1".into(),
            compat: k1().into(),
            build: "v1".into(),
            config: config.to_json(),
            started_at: T0,
            heartbeat_at: T0,
            stopped_at: None,
            host: "h".into(),
            pid: 1,
            published: leasehold::model::Published::default(),
        })
        .unwrap();
    let event = |source: &str, at: i64| JournalEvent {
        seq: 0,
        event_type: "payment.captured".into(),
        source: Some(source.into()),
        external_id: Some("evt-1".into()),
        payload: "{}".into(),
        fingerprint: "f".into(),
        at,
    };
    for e in [
        event("fast", T0),
        event("slow", T0),
        event("fast", T0 + 3_600_000),
        event("slow", T0 + 3_600_000),
        event("fast", T0 + 3_600_001),
    ] {
        f.plant(|tx, _| tx.append_journal(&e).map(|_| ()));
    }
    let report = f.run();
    assert_codes(
        &report,
        &[
            codes::DUPLICATE_SEMANTIC_EVENT,
            codes::DUPLICATE_SEMANTIC_EVENT,
        ],
    );
    assert!(
        report.violations[0].sentence.contains("from slow"),
        "{}",
        render_text(&report)
    );
    assert!(
        report.violations[1].sentence.contains("seq 3 and seq 5"),
        "{}",
        render_text(&report)
    );
}
