//! The invariant checker: every invariant planted once in a memory store's durable history
//! (through the provider seam, as a broken provider or a buggy authority would leave it)
//! must be reported with its code and ids; a realistic mixed workload through the public
//! store API must report nothing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use leasehold::check::{CheckOptions, Report, check, codes, render_json_lines, render_text};
use leasehold::clock::{Clock, ManualClock, Millis};
use leasehold::ids::SeededIds;
use leasehold::model::event::NewEvent;
use leasehold::model::schedule::{CatchUp, Trigger};
use leasehold::model::work::NewWork;
use leasehold::model::workflow::ActionOutcome;
use leasehold::model::{
    Authority, Failure, FailureClass, Grant, HistoryRecord, Holder, InstanceRow, JournalEvent,
    WorkItem, WorkKind, WriteRecord,
};
use leasehold::store::memory::MemoryBackend;
use leasehold::store::sqlite::SqliteBackend;
use leasehold::store::url::OpenMode;
use leasehold::store::{Backend, Completion, Keyed, Store, Tx};
use leasehold::workflow::engine::Engine;
use leasehold::workflow::{Catalog, SHIPPED_DEFINITIONS};
use serde_json::{Value, json};

const T0: Millis = 1_700_000_000_000;
/// The key of the `noop` handler's work at 1.0.0, which the authorities registered here
/// run ([`authority`]); [`k2`] is 2.0.0's, another major version.
fn k1() -> &'static str {
    static KEY: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| key_at("1.0.0"));
    &KEY
}

fn k2() -> &'static str {
    static KEY: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| key_at("2.0.0"));
    &KEY
}

fn key_at(version: &str) -> String {
    leasehold::model::handler_key(
        "noop",
        &leasehold::model::HandlerVersion::parse(version).expect("a version"),
    )
}

const V1: &str = "1.0.0";
const LEASE: Millis = 30_000;

struct Fixture {
    backend: Arc<dyn Backend>,
    store: Store,
    clock: ManualClock,
    _dir: Option<tempfile::TempDir>,
}

fn over(backend: Arc<dyn Backend>, dir: Option<tempfile::TempDir>) -> Fixture {
    let clock = ManualClock::new(T0);
    let store = Store::new(
        backend.clone(),
        Arc::new(clock.clone()),
        Arc::new(SeededIds::new(7)),
    );
    Fixture {
        backend,
        store,
        clock,
        _dir: dir,
    }
}

fn fixture() -> Fixture {
    over(Arc::new(MemoryBackend::new()), None)
}

fn sqlite_fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let backend = SqliteBackend::open(dir.path().join("store.db"), OpenMode::ReadWrite).unwrap();
    over(Arc::new(backend), Some(dir))
}

impl Fixture {
    /// Runs `f` in its own write transaction (so its own revision) and returns the revision.
    fn plant(&self, mut f: impl FnMut(&mut dyn Tx, u64) -> leasehold::Result<()>) -> u64 {
        let mut revision = 0;
        self.backend
            .write(&mut |tx| {
                revision = tx.commit_revision()?;
                f(tx, revision)
            })
            .expect("plant");
        revision
    }

    fn grant_with(
        &self,
        resource: &str,
        generation: u64,
        owner: &str,
        owner_compat: &str,
        item_compat: &str,
    ) -> u64 {
        self.plant(|tx, revision| {
            tx.add_grant(Grant {
                revision,
                resource_id: resource.into(),
                generation,
                owner_id: owner.into(),
                how: leasehold::model::GrantKind::Claim,
                owner_compat: Some(owner_compat.into()),
                item_compat: Some(item_compat.into()),
                at: T0,
                took_over: None,
            })
        })
    }

    fn grant(&self, resource: &str, generation: u64, owner: &str) -> u64 {
        self.grant_with(resource, generation, owner, k1(), k1())
    }

    #[allow(clippy::needless_pass_by_value)]
    fn write(
        &self,
        resource: &str,
        generation: u64,
        owner: &str,
        verb: &str,
        accepted: bool,
        detail: Value,
    ) -> u64 {
        self.plant(|tx, revision| {
            tx.add_write(WriteRecord {
                revision,
                resource_id: resource.into(),
                generation,
                owner_id: owner.into(),
                verb: leasehold::model::WriteVerb::parse(verb).expect("a write verb"),
                accepted,
                refusal: (!accepted).then(|| "WORK_FENCED".into()),
                detail: detail.to_string(),
                at: T0,
                holder: None,
            })
        })
    }

    /// An accepted `complete` of an effect whose logical id is its id.
    fn complete(&self, resource: &str, generation: u64, owner: &str) -> u64 {
        let detail =
            json!({"logicalEffectId": resource, "idempotencyKey": resource, "state": "succeeded"});
        self.write(resource, generation, owner, "complete", true, detail)
    }

    fn item(&self, id: &str, kind: WorkKind) {
        let spec = NewWork {
            kind,
            ..NewWork::effect(id, "noop", "{}")
        };
        self.plant(|tx, _| {
            tx.insert_work(&WorkItem::new(spec.clone(), k1(), T0))
                .map(|_| ())
        });
    }

    fn run_with(&self, page_size: usize) -> Report {
        let options = CheckOptions {
            page_size,
            ..CheckOptions::at(self.clock.now())
        };
        check(&self.store, &options).expect("check")
    }

    fn run(&self) -> Report {
        self.run_with(10_000)
    }
}

fn codes_of(report: &Report) -> Vec<&'static str> {
    report.violations.iter().map(|v| v.invariant).collect()
}

/// Asserts one violation with exactly this code and these ids.
#[track_caller]
fn assert_reported(report: &Report, code: &str, ids: &[&str]) {
    let found = report
        .of(code)
        .any(|v| v.ids.iter().map(String::as_str).eq(ids.iter().copied()));
    assert!(
        found,
        "expected {code} {ids:?}, got:\n{}",
        render_text(report)
    );
}

#[track_caller]
fn assert_codes(report: &Report, expected: &[&str]) {
    assert_eq!(codes_of(report), expected, "\n{}", render_text(report));
}

// --- 1. two owners of one (resourceId, generation)

#[test]
fn two_owners_of_one_generation_are_reported() {
    let f = fixture();
    // The current generation granted again to someone else.
    f.grant("e-1", 1, "a-1");
    f.grant("e-1", 1, "a-2");
    // An older generation granted again (decided by reading the resource's grants back).
    f.grant("e-2", 1, "a-1");
    f.grant("e-2", 2, "a-2");
    f.grant("e-2", 1, "a-3");
    // A regression nobody else held.
    f.grant("e-3", 2, "a-1");
    f.grant("e-3", 1, "a-2");
    // An accepted write under a generation by someone who was not granted it.
    f.grant("e-4", 1, "a-1");
    f.complete("e-4", 1, "a-2");

    let report = f.run();
    assert_reported(
        &report,
        codes::TWO_OWNERS_ONE_GENERATION,
        &["e-1", "a-1", "a-2"],
    );
    assert_reported(
        &report,
        codes::TWO_OWNERS_ONE_GENERATION,
        &["e-2", "a-1", "a-3"],
    );
    assert_reported(&report, codes::GENERATION_NOT_INCREASING, &["e-3", "a-2"]);
    assert_reported(
        &report,
        codes::TWO_OWNERS_ONE_GENERATION,
        &["e-4", "a-1", "a-2"],
    );
    assert_eq!(report.violations.len(), 4, "{}", render_text(&report));
    let sentence = &report
        .of(codes::TWO_OWNERS_ONE_GENERATION)
        .next()
        .unwrap()
        .sentence;
    assert_eq!(
        sentence,
        "work e-1 generation 1 was granted to a-1 at revision 1 and to a-2 at revision 2"
    );
}

// --- 2. no accepted write from a superseded generation

#[test]
fn an_accepted_write_from_a_superseded_generation_is_reported() {
    let f = fixture();
    f.grant("e-1", 1, "a-1");
    f.grant("e-1", 2, "a-2");
    f.complete("e-1", 1, "a-1");
    // Refused: exactly what fencing is for, not a violation.
    f.grant("e-2", 1, "a-1");
    f.grant("e-2", 2, "a-2");
    f.write(
        "e-2",
        1,
        "a-1",
        "complete",
        false,
        json!({"logicalEffectId": "e-2", "idempotencyKey": "e-2", "state": "claimed"}),
    );

    let report = f.run();
    assert_codes(&report, &[codes::SUPERSEDED_WRITE_ACCEPTED]);
    assert_reported(
        &report,
        codes::SUPERSEDED_WRITE_ACCEPTED,
        &["e-1", "a-1", "a-2"],
    );
    assert!(
        report.violations[0]
            .sentence
            .contains("complete by a-1 under generation 1 was accepted at revision 3")
    );
}

/// The holder of the current claim refused with nobody having taken the item over (what a
/// bystander's settlement of a lapse left, before a lapse was settled only by a takeover)
/// is reported; refusals after a newer grant, after the holder ended its own claim, or
/// after an operator ended it, are not.
#[test]
fn a_holder_fenced_without_a_takeover_is_reported() {
    let f = fixture();
    let refused = |resource: &str, verb: &str, refusal: &str, holder: Holder| {
        f.plant(|tx, revision| {
            tx.add_write(WriteRecord {
                revision,
                resource_id: resource.into(),
                generation: 1,
                owner_id: "a-1".into(),
                verb: leasehold::model::WriteVerb::parse(verb).expect("a write verb"),
                accepted: false,
                refusal: Some(refusal.into()),
                detail: "{}".into(),
                at: T0,
                holder: Some(holder.clone()),
            })
        });
    };
    let nobody_at = |generation| Holder {
        owner_id: None,
        generation,
    };
    f.grant("e-1", 1, "a-1");
    refused("e-1", "renew", "WORK_FENCED", nobody_at(1));
    f.grant("e-5", 1, "a-1");
    refused("e-5", "complete", "already-terminal", nobody_at(1));
    // Fenced by a takeover: exactly what fencing is for.
    f.grant("e-2", 1, "a-1");
    f.grant("e-2", 2, "a-2");
    refused("e-2", "renew", "WORK_FENCED", nobody_at(2));
    // The holder yielded, then a late renewal of its own was refused.
    f.grant("e-3", 1, "a-1");
    f.write("e-3", 1, "a-1", "yield", true, json!({}));
    refused("e-3", "renew", "WORK_FENCED", nobody_at(1));
    // An operator discarded it under the holder.
    f.grant("e-4", 1, "a-1");
    f.write("e-4", 1, "ops", "discard", true, json!({}));
    refused("e-4", "complete", "already-terminal", nobody_at(1));
    // The item's generation was raised under it (an accepted rewind).
    f.grant("e-6", 1, "a-1");
    refused("e-6", "complete", "WORK_FENCED", nobody_at(1 << 32));

    let report = f.run();
    assert_codes(
        &report,
        &[
            codes::FENCED_WITHOUT_TAKEOVER,
            codes::FENCED_WITHOUT_TAKEOVER,
        ],
    );
    assert_reported(&report, codes::FENCED_WITHOUT_TAKEOVER, &["e-1", "a-1"]);
    assert_reported(&report, codes::FENCED_WITHOUT_TAKEOVER, &["e-5", "a-1"]);
    assert!(
        report.violations[0]
            .sentence
            .contains("nobody took the item over"),
        "{}",
        report.violations[0].sentence
    );
}

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

// --- 5. one logicalEffectId per effect across retries

#[test]
fn a_second_logical_effect_id_or_a_second_terminal_write_is_reported() {
    let f = fixture();
    let detail = |logical: &str, state: &str| json!({"logicalEffectId": logical, "idempotencyKey": logical, "state": state});
    // A retry that minted a new logical effect id.
    f.grant("e-1", 1, "a-1");
    f.write("e-1", 1, "a-1", "fail", true, detail("intent-1", "retry"));
    f.grant("e-1", 2, "a-2");
    f.write(
        "e-1",
        2,
        "a-2",
        "complete",
        true,
        detail("intent-1b", "succeeded"),
    );
    // The item row carries other ids than its writes did.
    f.item("e-2", WorkKind::Effect);
    f.grant("e-2", 1, "a-1");
    f.write(
        "e-2",
        1,
        "a-1",
        "renew",
        true,
        detail("intent-2", "claimed"),
    );
    // Finished twice.
    f.grant("e-3", 1, "a-1");
    f.complete("e-3", 1, "a-1");
    f.grant("e-3", 2, "a-2");
    f.write("e-3", 2, "a-2", "fail", true, detail("e-3", "failed"));

    let report = f.run();
    assert_reported(
        &report,
        codes::LOGICAL_EFFECT_ID_CHANGED,
        &["e-1", "intent-1", "intent-1b"],
    );
    assert_reported(
        &report,
        codes::LOGICAL_EFFECT_ID_CHANGED,
        &["e-2", "intent-2", "e-2"],
    );
    assert_reported(&report, codes::TERMINAL_WRITE_TWICE, &["e-3", "a-1", "a-2"]);
    assert_eq!(report.violations.len(), 3, "{}", render_text(&report));
}

/// Triage through the public store API keeps the history clean: an item failed for good,
/// requeued by an operator and then completed finishes once per attempt budget (the requeue
/// is in the history, so the second terminal write is no double); a poison pill that was
/// dead-lettered by a claimer, requeued and completed; a live claim discarded under its
/// holder, whose late completion is refused.
#[test]
fn requeued_and_discarded_work_is_clean() {
    let f = fixture();
    let s = &f.store;
    let once = |id: &str| NewWork {
        max_attempts: 1,
        ..NewWork::effect(id, "send-email", "{}")
    };
    for id in ["failed-1", "poison-1", "live-1"] {
        s.enqueue(once(id), k1()).unwrap();
    }
    let w = s.claim("failed-1", "a-1", k1(), LEASE).unwrap();
    let failure = Failure {
        class: FailureClass::Terminal,
        code: "E_400".into(),
        message: "bad request".into(),
    };
    s.fail("failed-1", "a-1", w.generation, failure).unwrap();
    s.claim("poison-1", "a-1", k1(), LEASE).unwrap();
    // Past the expiry and a retry's backoff: a claim takes the lapse over.
    f.clock.advance(LEASE + 500);
    assert!(
        s.claim_batch("a-2", k1(), 10, LEASE).unwrap().len() == 1,
        "live-1 only"
    );
    assert!(s.work("poison-1").unwrap().unwrap().is_dead_letter());
    for id in ["failed-1", "poison-1"] {
        s.requeue_work(id, "ops@host", "fixed").unwrap();
        let w = s.claim(id, "a-2", k1(), LEASE).unwrap();
        s.complete(id, "a-2", w.generation, None).unwrap();
    }
    let live = s.work("live-1").unwrap().unwrap();
    s.discard_work("live-1", "ops@host", "withdrawn").unwrap();
    let late = s.complete("live-1", "a-2", live.generation, None);
    assert_eq!(late.unwrap_err().code(), "already-terminal");

    let report = f.run();
    assert!(report.is_clean(), "{}", render_text(&report));
}

// --- 6. no stranded work once authorities are healthy

/// An authority that registers the `noop` handler at `version`.
fn authority(id: &str, version: &str, at: Millis) -> Authority {
    Authority {
        instance_id: id.into(),
        compat: "label".into(),
        build: "test".into(),
        config: format!(r#"{{"handlers":{{"noop":"{version}"}}}}"#),
        started_at: at,
        heartbeat_at: at,
        stopped_at: None,
        host: "localhost".into(),
        pid: 1,
        published: leasehold::model::Published::default(),
    }
}

#[test]
fn stranded_work_is_reported_and_incompatible_work_is_counted() {
    let f = fixture();
    f.store
        .register_authority(&authority("a-1", V1, T0))
        .unwrap();
    f.store
        .enqueue(NewWork::effect("e-late", "noop", "{}"), k1())
        .unwrap();
    f.store
        .enqueue(NewWork::effect("e-claimed", "noop", "{}"), k1())
        .unwrap();
    f.store
        .enqueue(NewWork::effect("e-old-build", "noop", "{}"), "k0")
        .unwrap();
    f.store.claim("e-claimed", "a-9", k1(), 10_000).unwrap();
    f.clock.advance(120_000);
    f.store
        .enqueue(NewWork::effect("e-fresh", "noop", "{}"), k1())
        .unwrap();
    f.store
        .heartbeat(&authority("a-1", V1, T0).incarnation(), false)
        .unwrap();

    let report = f.run();
    assert_reported(&report, codes::STRANDED_WORK, &["e-late"]);
    assert_reported(&report, codes::STRANDED_WORK, &["e-claimed"]);
    assert_eq!(report.violations.len(), 2, "{}", render_text(&report));
    assert_eq!(report.incompatible_items, 1);

    // Without a live authority of their build, the same items are incompatible, not stranded.
    f.clock.advance(LEASE * 10);
    let report = f.run();
    assert!(report.is_clean(), "{}", render_text(&report));
    assert_eq!(report.incompatible_items, 4);
}

/// Work that waited past the bound while a live authority of its build kept claiming that
/// build's work is a backlog (more work than the fleet keeps up with), counted, not a
/// strand — unless it is a lapsed claim, which reclaims take before any backlog. Once that
/// authority stops claiming for the bound, the queued item is stranded too.
#[test]
fn work_queued_behind_a_busy_authority_is_backlogged_not_stranded() {
    let f = fixture();
    let registered = authority("a-1", V1, T0);
    f.store.register_authority(&registered).unwrap();
    for id in ["e-queued", "e-busy", "e-lapsed"] {
        f.store
            .enqueue(NewWork::effect(id, "noop", "{}"), k1())
            .unwrap();
    }
    f.store.claim("e-lapsed", "a-9", k1(), 10_000).unwrap();
    f.clock.advance(120_000);
    f.store.claim("e-busy", "a-1", k1(), 600_000).unwrap();
    f.store.heartbeat(&registered.incarnation(), false).unwrap();
    let report = f.run();
    assert_reported(&report, codes::STRANDED_WORK, &["e-lapsed"]);
    assert_eq!(report.violations.len(), 1, "{}", render_text(&report));
    assert_eq!(report.backlogged_items, 1);
    assert!(render_text(&report).contains("a backlog (not stranded)"));

    f.clock.advance(120_000);
    f.store.heartbeat(&registered.incarnation(), false).unwrap();
    let report = f.run();
    assert_reported(&report, codes::STRANDED_WORK, &["e-queued"]);
    assert_eq!(report.backlogged_items, 0);
}

#[test]
fn work_is_not_stranded_before_its_build_has_been_live_for_the_bound() {
    let f = fixture();
    f.store
        .enqueue(NewWork::effect("e-1", "noop", "{}"), k1())
        .unwrap();
    f.clock.advance(600_000);
    // The first authority of the build just started: it has not had the chance yet.
    let registered = authority("a-1", V1, f.clock.now());
    f.store.register_authority(&registered).unwrap();
    assert!(f.run().is_clean());
    f.clock.advance(61_000);
    f.store.heartbeat(&registered.incarnation(), false).unwrap();
    assert_codes(&f.run(), &[codes::STRANDED_WORK]);
}

// --- 7. no incompatible execution

#[test]
fn a_claim_across_builds_is_reported() {
    let f = fixture();
    f.grant_with("e-1", 1, "a-2", k2(), k1());
    // Lease grants carry no compat and are not work.
    f.plant(|tx, revision| {
        tx.add_grant(Grant {
            revision,
            resource_id: "leader".into(),
            generation: 1,
            owner_id: "a-1".into(),
            how: leasehold::model::GrantKind::Acquire,
            owner_compat: None,
            item_compat: None,
            at: T0,
            took_over: None,
        })
    });

    let report = f.run();
    assert_codes(&report, &[codes::INCOMPATIBLE_EXECUTION]);
    assert_reported(&report, codes::INCOMPATIBLE_EXECUTION, &["e-1", "a-2"]);
    assert!(report.violations[0].sentence.contains(&format!(
        "(key {}) was claimed by a-2 under key {}",
        k1(),
        k2()
    )));
}

// --- 8. monotone cursors

#[test]
fn a_cursor_moving_back_or_written_by_a_stale_owner_is_reported() {
    let f = fixture();
    let cursor =
        |sub: &str, from: u64, to: u64| json!({"subscription": sub, "from": from, "to": to});
    f.grant("cursor:s-1", 1, "a-1");
    f.write("cursor:s-1", 1, "a-1", "cursor", true, cursor("s-1", 0, 5));
    f.write("cursor:s-1", 1, "a-1", "cursor", false, cursor("s-1", 5, 4));
    f.write("cursor:s-1", 1, "a-1", "cursor", true, cursor("s-1", 5, 3));

    f.grant("cursor:s-2", 1, "a-1");
    f.grant("cursor:s-2", 2, "a-2");
    f.write("cursor:s-2", 1, "a-1", "cursor", true, cursor("s-2", 0, 4));

    let report = f.run();
    assert_codes(
        &report,
        &[codes::CURSOR_NOT_MONOTONE, codes::STALE_CURSOR_WRITE],
    );
    assert_reported(&report, codes::CURSOR_NOT_MONOTONE, &["s-1", "cursor:s-1"]);
    assert_reported(&report, codes::STALE_CURSOR_WRITE, &["s-2", "a-1", "a-2"]);
}

// --- 9. workflows

/// `(kind, activationId, instanceRevision, detail)`.
type Entry<'a> = (&'a str, Option<&'a str>, u64, Value);

fn plant_instance(f: &Fixture, id: &str, entries: &[Entry<'_>], outcomes: &[(&str, &str)]) {
    let revision = entries.iter().map(|e| e.2).max().unwrap_or(0);
    let status = entries
        .iter()
        .rev()
        .find_map(|e| {
            ["completed", "failed", "cancelled"]
                .contains(&e.0)
                .then_some(e.0)
        })
        .unwrap_or("running");
    f.plant(|tx, _| {
        tx.insert_instance(&InstanceRow {
            instance_id: id.into(),
            workflow_id: "order".into(),
            status: leasehold::model::InstanceStatus::parse(status).expect("a status"),
            compat: k1().into(),
            instance_revision: revision,
            next_eligible_at: None,
            waiting_event: None,
            principal: "alice".into(),
            start_key: None,
            state: "{}".into(),
            created_at: T0,
            updated_at: T0,
        })?;
        for (n, (kind, activation, instance_revision, detail)) in entries.iter().enumerate() {
            tx.add_history(&HistoryRecord {
                instance_id: id.into(),
                position: n as u64 + 1,
                instance_revision: *instance_revision,
                kind: (*kind).into(),
                at: T0,
                step_id: activation.map(|a| a.trim_end_matches("#0").to_owned()),
                activation_id: activation.map(Into::into),
                detail: detail.to_string(),
            })?;
        }
        for (invocation, outcome) in outcomes {
            tx.put_action_outcome(&ActionOutcome {
                invocation_id: (*invocation).into(),
                attempt: 1,
                outcome: (*outcome).into(),
                detail: "{}".into(),
                at: T0,
            })?;
        }
        Ok(())
    });
}

fn action(invocation: &str) -> Value {
    json!({"type": "action", "action": "charge", "invocationId": invocation, "attempt": 1})
}

/// A full, healthy history: retries (with a retryable step-failed), an event wait, completion.
fn clean_history(id: &str) -> (Vec<Entry<'static>>, String) {
    let invocation = format!("{id}/charge#0");
    let entries = vec![
        ("started", None, 1, json!({})),
        ("step-activated", Some("charge#0"), 1, action(&invocation)),
        (
            "step-failed",
            Some("charge#0"),
            2,
            json!({"retryable": true}),
        ),
        (
            "retry-scheduled",
            Some("charge#0"),
            2,
            json!({"attempt": 2}),
        ),
        (
            "retry-scheduled",
            Some("charge#0"),
            3,
            json!({"attempt": 3}),
        ),
        ("step-succeeded", Some("charge#0"), 4, json!({"attempt": 3})),
        (
            "step-activated",
            Some("wait#0"),
            4,
            json!({"type": "wait-event"}),
        ),
        ("event-matched", Some("wait#0"), 5, json!({"seq": 3})),
        (
            "step-activated",
            Some("done#0"),
            5,
            json!({"type": "complete"}),
        ),
        ("completed", Some("done#0"), 5, json!({})),
    ];
    (entries, invocation)
}

#[test]
fn a_healthy_workflow_history_is_clean() {
    let f = fixture();
    let (entries, invocation) = clean_history("wf-1");
    plant_instance(&f, "wf-1", &entries, &[(&invocation, "succeeded")]);
    let report = f.run();
    assert!(report.is_clean(), "{}", render_text(&report));
    assert_eq!(
        (report.checked.instances, report.checked.history_entries),
        (1, 10)
    );
}

#[test]
fn broken_workflow_histories_are_reported() {
    let f = fixture();
    plant_instance(
        &f,
        "wf-rev",
        &[
            ("started", None, 1, json!({})),
            ("step-activated", Some("t#0"), 2, json!({"type": "timer"})),
            ("timer-fired", Some("t#0"), 1, json!({})),
        ],
        &[],
    );
    plant_instance(
        &f,
        "wf-twice",
        &[
            ("started", None, 1, json!({})),
            (
                "step-activated",
                Some("wait#0"),
                1,
                json!({"type": "wait-event"}),
            ),
            ("event-matched", Some("wait#0"), 2, json!({})),
            ("timeout-fired", Some("wait#0"), 3, json!({})),
        ],
        &[],
    );
    plant_instance(
        &f,
        "wf-after",
        &[
            ("started", None, 1, json!({})),
            ("step-activated", Some("t#0"), 1, json!({"type": "timer"})),
            ("cancelled", Some("t#0"), 2, json!({})),
            ("timer-fired", Some("t#0"), 3, json!({})),
        ],
        &[],
    );
    plant_instance(
        &f,
        "wf-missing",
        &[
            ("started", None, 1, json!({})),
            (
                "step-activated",
                Some("charge#0"),
                1,
                action("wf-missing/charge#0"),
            ),
            ("step-succeeded", Some("charge#0"), 2, json!({})),
        ],
        &[],
    );
    plant_instance(
        &f,
        "wf-conflict",
        &[
            ("started", None, 1, json!({})),
            (
                "step-activated",
                Some("charge#0"),
                1,
                action("wf-conflict/charge#0"),
            ),
            ("step-succeeded", Some("charge#0"), 2, json!({})),
        ],
        &[("wf-conflict/charge#0", "failed")],
    );

    let report = f.run();
    assert_reported(&report, codes::INSTANCE_REVISION_NOT_MONOTONE, &["wf-rev"]);
    assert_reported(
        &report,
        codes::ACTIVATION_RESOLVED_TWICE,
        &["wf-twice", "wait#0"],
    );
    assert_reported(&report, codes::ENTRY_AFTER_TERMINAL, &["wf-after"]);
    assert_reported(
        &report,
        codes::ACTION_OUTCOME_MISSING,
        &["wf-missing", "wf-missing/charge#0"],
    );
    assert_reported(
        &report,
        codes::ACTION_OUTCOME_CONFLICT,
        &["wf-conflict", "wf-conflict/charge#0"],
    );
    assert_eq!(report.violations.len(), 5, "{}", render_text(&report));
}

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

// --- a clean, realistic run through the public API

/// Claims, completions, retries, a crash and reclaim after expiry with fenced refusals,
/// group commit, schedule firings polled by two authorities, event dedup, a cursor handed
/// between authorities, leases with renew / handoff / release, and a second build whose
/// authority is refused the first build's work.
#[allow(clippy::too_many_lines)]
fn mixed_workload(f: &Fixture) {
    let s = &f.store;
    for (id, version) in [("a-1", V1), ("a-2", V1), ("a-3", "2.0.0")] {
        s.register_authority(&authority(id, version, T0)).unwrap();
    }
    let specs: Vec<NewWork> = (0..8)
        .map(|n| NewWork::effect(format!("e-{n}"), "send-email", "{}"))
        .collect();
    assert_eq!(s.enqueue_batch(specs, k1()).unwrap(), 8);
    assert!(
        !s.enqueue(NewWork::effect("e-0", "send-email", "{}"), k1())
            .unwrap(),
        "idempotent enqueue"
    );

    // a-1 claims five in one transaction; completes two, fails one retryably.
    let first = s.claim_batch("a-1", k1(), 5, LEASE).unwrap();
    assert_eq!(first.len(), 5);
    s.complete(&first[0].id, "a-1", first[0].generation, Some("{}".into()))
        .unwrap();
    s.complete(&first[1].id, "a-1", first[1].generation, None)
        .unwrap();
    let retryable = Failure {
        class: FailureClass::Retryable,
        code: "SMTP_DOWN".into(),
        message: "try later".into(),
    };
    s.fail(&first[2].id, "a-1", first[2].generation, retryable)
        .unwrap();
    assert!(
        s.claim("e-5", "a-3", k2(), LEASE).is_err(),
        "another build never claims"
    );

    // a-1 stalls past its lease; a-2 reclaims everything still open.
    f.clock.advance(LEASE + 60_000);
    let second = s.claim_batch("a-2", k1(), 32, LEASE).unwrap();
    assert!(second.len() >= 5, "reclaimed {}", second.len());
    // The stale owner wakes up: every write is fenced.
    let stale = s
        .complete(&first[3].id, "a-1", first[3].generation, None)
        .unwrap_err();
    assert_eq!(stale.code(), "WORK_FENCED");
    assert!(
        s.renew_claim(&first[4].id, "a-1", first[4].generation, LEASE)
            .is_err()
    );
    // A late duplicate completion of a finished item is `already-terminal`.
    assert!(
        s.complete(&first[0].id, "a-1", first[0].generation, None)
            .is_err()
    );

    // a-2 group-commits, with one stale entry that refuses only itself.
    let mut batch: Vec<Completion> = second
        .iter()
        .map(|w| Completion {
            id: w.id.clone(),
            owner: "a-2".into(),
            generation: w.generation,
            outcome: Ok(None),
            retry_floor_ms: 0,
        })
        .collect();
    batch.push(Completion {
        id: first[3].id.clone(),
        owner: "a-1".into(),
        generation: first[3].generation,
        outcome: Ok(None),
        retry_floor_ms: 0,
    });
    let answers = s.complete_batch(&batch).unwrap();
    assert_eq!(answers.iter().filter(|a| a.is_err()).count(), 1);

    // Schedules: two pollers observe the same instant, one firing each boundary.
    s.create_schedule(
        "tick",
        Trigger::Interval { every_ms: 60_000 },
        CatchUp::Latest,
        "tick",
        "{}",
        k1(),
    )
    .unwrap();
    f.clock.advance(61_000);
    let fired = s.fire_due_schedules(k1(), 16).unwrap();
    assert!(fired >= 1);
    assert_eq!(fired + s.fire_due_schedules(k1(), 16).unwrap(), fired);
    for w in s.claim_batch("a-1", k1(), 32, LEASE).unwrap() {
        s.complete(&w.id, "a-1", w.generation, None).unwrap();
        assert!(s.complete(&w.id, "a-2", w.generation, None).is_err());
    }

    // Events: accepted, duplicate, conflict, unidentified.
    let event = |id: Option<&str>, amount: u64| NewEvent {
        event_type: "payment.captured".into(),
        source: id.map(|_| "stripe".into()),
        external_id: id.map(Into::into),
        payload: json!({"amount": amount}),
    };
    for e in [
        event(Some("evt-1"), 10),
        event(Some("evt-1"), 10),
        event(Some("evt-1"), 11),
        event(Some("evt-2"), 5),
        event(None, 1),
        event(None, 1),
    ] {
        s.ingest(&e).unwrap();
    }

    // A cursor: a-1 moves it, stalls; a-2 takes over; a-1's late write is fenced.
    s.create_subscription("s-1", "payment.captured", "deliver", k1())
        .unwrap();
    let c1 = s.claim("cursor:s-1", "a-1", k1(), LEASE).unwrap();
    s.advance_cursor("s-1", "a-1", c1.generation, 1).unwrap();
    assert_eq!(
        s.advance_cursor("s-1", "a-1", c1.generation, 1)
            .unwrap_err()
            .code(),
        "stale-sequence"
    );
    f.clock.advance(LEASE + 1);
    let c2 = s.claim("cursor:s-1", "a-2", k1(), LEASE).unwrap();
    assert_eq!(
        s.advance_cursor("s-1", "a-1", c1.generation, 2)
            .unwrap_err()
            .code(),
        "WORK_FENCED"
    );
    s.advance_cursor("s-1", "a-2", c2.generation, 3).unwrap();
    s.yield_back("cursor:s-1", "a-2", c2.generation, f.clock.now() + 1_000)
        .unwrap();

    // Leases: acquire, renew, expiry and takeover (the old holder is fenced), handoff, release.
    let keyed = Keyed { key: None };
    let l1 = s.acquire("leader", "a-1", 10_000.0, keyed).unwrap();
    s.renew("leader", &l1.token, l1.generation, 10_000.0)
        .unwrap();
    f.clock.advance(20_001);
    let l2 = s.acquire("leader", "a-2", 10_000.0, keyed).unwrap();
    assert!(
        s.renew("leader", &l1.token, l1.generation, 10_000.0)
            .is_err()
    );
    let l3 = s
        .handoff(
            "leader",
            "a-2",
            &l2.token,
            l2.generation,
            "a-1",
            10_000.0,
            keyed,
        )
        .unwrap();
    s.release("leader", "a-1", &l3.token, l3.generation, keyed)
        .unwrap();
    assert!(
        s.release("leader", "a-2", &l2.token, l2.generation, keyed)
            .is_err()
    );

    // Finish what is left, as healthy authorities would.
    for w in s.claim_batch("a-1", k1(), 32, LEASE).unwrap() {
        if w.kind == WorkKind::Cursor {
            s.yield_back(&w.id, "a-1", w.generation, f.clock.now() + 1_000)
                .unwrap();
        } else {
            s.complete(&w.id, "a-1", w.generation, None).unwrap();
        }
    }
    for id in ["a-1", "a-2", "a-3"] {
        s.heartbeat(&authority(id, V1, T0).incarnation(), false)
            .unwrap();
    }
}

/// The check reads the history from the store's retention mark on: rows older than it
/// (failovers and refused writes kept for the incident lists) are a trimmed prefix and are
/// not judged; the range checked is stated, and a violation inside it is still found.
#[test]
fn the_check_states_its_range_and_ignores_the_trimmed_prefix() {
    let f = fixture();
    f.grant("e-1", 1, "a-1");
    f.grant("e-1", 1, "a-2");
    let before = f.run();
    assert_reported(
        &before,
        codes::TWO_OWNERS_ONE_GENERATION,
        &["e-1", "a-1", "a-2"],
    );
    let mark =
        f.plant(|tx, revision| tx.set_meta_value("history_from", i64::try_from(revision).unwrap()));
    f.grant("e-2", 1, "a-1");
    let through = f.complete("e-2", 1, "a-2");

    let report = f.run();
    assert_eq!(codes_of(&report), [codes::TWO_OWNERS_ONE_GENERATION]);
    assert_reported(
        &report,
        codes::TWO_OWNERS_ONE_GENERATION,
        &["e-2", "a-1", "a-2"],
    );
    assert_eq!(
        (report.history_from, report.through_revision),
        (mark, through)
    );
    assert!(report.history_may_be_trimmed);
    let text = render_text(&report);
    assert!(
        text.contains(&format!(
            "history from revision {mark} to {through}: nothing missing\n"
        )),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "only violations from revision {mark} on are visible"
        )),
        "{text}"
    );
    let json = render_json_lines(&report);
    assert!(json.contains(&format!("\"historyFrom\":{mark}")), "{json}");
}

#[test]
fn a_realistic_mixed_workload_is_clean() {
    let f = fixture();
    mixed_workload(&f);
    let report = f.run();
    assert!(report.is_clean(), "{}", render_text(&report));
    let c = report.checked;
    assert!(
        c.grants >= 15 && c.writes >= 20 && c.items >= 10 && c.journal_events == 4,
        "{c:?}"
    );
    assert!(report.oldest_revision.is_some() && !report.history_may_be_trimmed);

    // Tiny pages read exactly the same history (claim batches put many grants in one
    // revision: the pager must neither skip nor repeat them).
    let paged = f.run_with(2);
    assert_eq!(paged, report);
}

#[test]
fn the_same_workload_is_clean_on_sqlite_and_a_planted_violation_is_found() {
    let f = sqlite_fixture();
    mixed_workload(&f);
    let report = f.run();
    assert!(report.is_clean(), "{}", render_text(&report));
    assert_eq!(f.run_with(2), report);
    let memory = fixture();
    mixed_workload(&memory);
    assert_eq!(memory.run().checked, report.checked);

    f.grant("e-0", 1, "intruder");
    let report = f.run_with(3);
    assert_codes(&report, &[codes::TWO_OWNERS_ONE_GENERATION]);
    assert_reported(
        &report,
        codes::TWO_OWNERS_ONE_GENERATION,
        &["e-0", "a-1", "intruder"],
    );
}

#[test]
fn tiny_pages_still_find_a_violation_after_a_busy_history() {
    let f = fixture();
    mixed_workload(&f);
    // e-0 was claimed and completed by a-1 under generation 1, long ago: found by reading
    // e-0's grants back, whatever the page size.
    f.grant("e-0", 1, "intruder");
    for page in [1, 2, 3, 7] {
        let report = f.run_with(page);
        assert_codes(&report, &[codes::TWO_OWNERS_ONE_GENERATION]);
        assert_reported(
            &report,
            codes::TWO_OWNERS_ONE_GENERATION,
            &["e-0", "a-1", "intruder"],
        );
    }
    let e1 = f.store.work("e-1").unwrap().unwrap();
    f.grant("e-1", e1.generation, "intruder");
    let report = f.run_with(3);
    assert_reported(
        &report,
        codes::TWO_OWNERS_ONE_GENERATION,
        &["e-1", e1.owner_id.as_deref().unwrap(), "intruder"],
    );
    assert_eq!(report.violations.len(), 2, "{}", render_text(&report));
}

/// A store with more resources than one pass may keep is checked in several passes over
/// disjoint shares of them (bounded memory): together they find exactly what one pass finds,
/// read every record once, and name the same range — however small the share.
#[test]
fn passes_over_shares_of_the_resources_find_what_one_pass_finds() {
    let f = fixture();
    mixed_workload(&f);
    // One of each per-resource violation, on resources of their own: a grant is a row
    // without a verb, a write names the logical effect id and the state it leaves.
    let planted = [
        ("e-0", 1, "intruder", "", ""),
        ("x-1", 1, "a-1", "", ""),
        ("x-1", 2, "a-2", "", ""),
        ("x-1", 1, "a-1", "complete", "x-1 succeeded"),
        ("x-2", 1, "a-1", "", ""),
        ("x-2", 1, "a-1", "fail", "intent-1 retry"),
        ("x-2", 2, "a-2", "", ""),
        ("x-2", 2, "a-2", "complete", "intent-1b succeeded"),
        ("x-3", 1, "a-1", "", ""),
        ("x-3", 1, "a-1", "complete", "x-3 succeeded"),
        ("x-3", 2, "a-2", "", ""),
        ("x-3", 2, "a-2", "fail", "x-3 failed"),
        ("x-4", 1, "a-1", "", ""),
        ("x-4", 1, "a-1", "renew", "intent-4 claimed"),
    ];
    f.item("x-4", WorkKind::Effect);
    for (resource, generation, owner, verb, effect) in planted {
        if verb.is_empty() {
            f.grant(resource, generation, owner);
        } else {
            let (logical, state) = effect.split_once(' ').unwrap();
            let detail =
                json!({"logicalEffectId": logical, "idempotencyKey": logical, "state": state});
            f.write(resource, generation, owner, verb, true, detail);
        }
    }

    let sorted = |report: &Report| {
        let mut all: Vec<String> = report
            .violations
            .iter()
            .chain(&report.gaps)
            .map(|v| format!("{} {:?} {}", v.invariant, v.ids, v.sentence))
            .collect();
        all.sort();
        all
    };
    let whole = f.run();
    // The mixed workload's late item waits while a live authority keeps claiming its
    // build's work (the planted grants): a backlog, which every share must see too — the
    // claims that excuse it are noted from every resource, not only the share's.
    assert_eq!(whole.violations.len(), 5, "{}", render_text(&whole));
    assert_eq!(whole.backlogged_items, 1, "{}", render_text(&whole));
    for per_pass in [1, 2, 3, 5, 8] {
        let options = CheckOptions {
            resources_per_pass: per_pass,
            page_size: 4,
            ..CheckOptions::at(f.clock.now())
        };
        let parts = check(&f.store, &options).expect("check");
        assert_eq!(sorted(&parts), sorted(&whole), "{per_pass} a pass");
        assert_eq!(parts.checked, whole.checked, "{per_pass} a pass");
        assert_eq!(
            (
                parts.incompatible_items,
                parts.backlogged_items,
                parts.oldest_revision,
                parts.history_from
            ),
            (
                whole.incompatible_items,
                whole.backlogged_items,
                whole.oldest_revision,
                whole.history_from
            ),
        );
    }
}

/// A pass keeps state only for the resources the history names, so a store of many items
/// and little history is read in one pass, however few resources a pass may keep (it used
/// to be cut into as many passes as its items needed, each reading every item again).
#[test]
fn many_items_with_little_history_are_checked_in_one_pass() {
    let f = fixture();
    // Enqueued, so that the store's counts know them.
    let idle: Vec<NewWork> = (0..60)
        .map(|n| NewWork::effect(format!("idle-{n:02}"), "noop", "{}"))
        .collect();
    f.store.enqueue_batch(idle, k1()).expect("enqueue");
    f.grant("idle-07", 1, "a-1");
    f.grant("idle-07", 1, "a-2");
    let options = CheckOptions {
        resources_per_pass: 4,
        page_size: 8,
        ..CheckOptions::at(f.clock.now())
    };
    let mut phases = std::collections::BTreeSet::new();
    let report = leasehold::check::check_showing(&f.store, &options, &mut |phase, _, _| {
        phases.insert(phase.to_owned());
    })
    .expect("check");
    assert!(
        phases.iter().all(|p| !p.contains("part")),
        "one pass: {phases:?}"
    );
    assert_eq!(report.checked.items, 60);
    assert_eq!(
        report.of(codes::TWO_OWNERS_ONE_GENERATION).count(),
        1,
        "{}",
        render_text(&report)
    );
}

// --- rendering

#[test]
fn reports_render_as_lines_of_text_and_json() {
    let f = fixture();
    f.grant("e-1", 1, "a-1");
    f.grant("e-1", 1, "a\u{1b}[2J-2");
    let report = f.run();
    let text = render_text(&report);
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines[0].starts_with(
            "two-owners-one-generation [e-1, a-1, a\\u{1b}[2J-2] work e-1 generation 1"
        ),
        "{text}"
    );
    assert!(!text.contains('\u{1b}'));
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("checked through revision 2: 2 grants, 0 writes")),
        "{text}"
    );
    assert!(
        lines.contains(&"history from revision 1 to 2: nothing missing"),
        "{text}"
    );
    assert_eq!(
        *lines.last().unwrap(),
        "1 violation: 1 two-owners-one-generation"
    );

    let json = render_json_lines(&report);
    let objects: Vec<Value> = json
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(objects.len(), 2);
    assert_eq!(objects[0]["invariant"], "two-owners-one-generation");
    assert_eq!(objects[0]["ids"][0], "e-1");
    assert_eq!(objects[1]["summary"]["violations"], 1);
    assert_eq!(objects[1]["summary"]["checked"]["grants"], 2);
    let whole = serde_json::to_value(&report).unwrap();
    assert_eq!(whole["incompatibleItems"], 0);
    assert_eq!(whole["checked"]["historyEntries"], 0);

    let clean = fixture().run();
    assert_eq!(
        render_text(&clean).lines().last(),
        Some("OK: no invariant violated")
    );
}

#[test]
fn every_code_is_distinct_kebab_case() {
    let mut all = codes::ALL.to_vec();
    all.sort_unstable();
    all.dedup();
    assert_eq!(all.len(), codes::ALL.len());
    assert!(
        codes::ALL
            .iter()
            .all(|c| c.chars().all(|ch| ch.is_ascii_lowercase() || ch == '-'))
    );
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

/// After an accepted rewind the checker states the store epoch, and the history across it
/// is clean: the old holder's generation is refused, the next claim's is above the floor.
#[test]
fn an_accepted_rewind_is_stated_and_the_history_across_it_is_clean() {
    let dir = tempfile::tempdir().unwrap();
    let backend = SqliteBackend::open(dir.path().join("store.db"), OpenMode::ReadWrite).unwrap();
    let clock = ManualClock::new(1_000_000);
    let store = Store::new(
        Arc::new(backend),
        Arc::new(clock.clone()),
        Arc::new(SeededIds::new(5)),
    );
    store.enqueue(NewWork::effect("w", "h", "{}"), "k").unwrap();
    let before = store.claim("w", "a", "k", 5_000).unwrap();
    let accepted = store.accept_rewind("op@host", Some("test")).unwrap();
    let stale = store.complete("w", "a", before.generation, None);
    assert_eq!(stale.err().map(|e| e.code()), Some("WORK_FENCED"));
    clock.advance(10_000);
    let after = store.claim("w", "b", "k", 5_000).unwrap();
    assert!(after.generation > accepted.generation_floor);
    store.complete("w", "b", after.generation, None).unwrap();

    let report = check(&store, &CheckOptions::at(clock.now())).unwrap();
    assert!(report.violations.is_empty(), "{}", render_text(&report));
    assert_eq!(report.store_epoch, 1);
    assert!(render_text(&report).contains("store epoch 1: a rewind was accepted"));
    let summary: Value =
        serde_json::from_str(render_json_lines(&report).lines().last().unwrap()).unwrap();
    assert_eq!(summary["summary"]["storeEpoch"], 1);
}

// --- gaps: records missing from the checked range, attempts cut off

#[test]
fn a_skipped_generation_and_an_ungranted_write_are_history_gaps() {
    let f = fixture();
    f.grant("e-1", 1, "a-1");
    // Generation 2 was granted with no record.
    f.grant("e-1", 3, "a-2");
    // An accepted write under a generation nobody was recorded to hold.
    f.complete("e-2", 1, "a-1");
    // A resource whose first recorded grant is not its first generation.
    f.grant("e-3", 2, "a-1");
    // Not gaps: a refused write may present any generation, and a new store epoch starts
    // its generations above every earlier one.
    f.write("e-4", 9, "a-1", "complete", false, json!({}));
    f.grant("e-5", 1, "a-1");
    f.grant("e-5", (1 << 32) + 1, "a-2");

    let report = f.run();
    assert!(report.violations.is_empty(), "{}", render_text(&report));
    let gaps: Vec<(&str, Vec<String>)> = report
        .gaps
        .iter()
        .map(|g| (g.invariant, g.ids.clone()))
        .collect();
    let gap = |r: &str, o: &str| ("history-gap", vec![r.to_owned(), o.to_owned()]);
    assert_eq!(
        gaps,
        [gap("e-1", "a-2"), gap("e-2", "a-1"), gap("e-3", "a-1")]
    );
    assert!(
        report.gaps[0]
            .sentence
            .contains("no grant of generation 2 to 2 is recorded between revisions 1 and 2"),
        "{}",
        report.gaps[0].sentence
    );
    assert!(!report.is_clean(), "a history with gaps proves nothing");
    assert_eq!(report.history_from, 1);
    let text = render_text(&report);
    assert!(
        text.contains(&format!(
            "history from revision 1 to {}: 3 gap(s)",
            report.through_revision
        )),
        "{text}"
    );
    assert!(text.contains("3 history gap(s)"), "{text}");
    assert!(render_json_lines(&report).contains("\"historyGaps\":3"));
}

#[test]
fn a_complete_history_states_its_range_and_has_no_gap() {
    let f = fixture();
    f.grant("e-1", 1, "a-1");
    f.complete("e-1", 1, "a-1");
    f.grant("e-2", 1, "a-1");
    f.grant("e-2", 2, "a-2");
    let report = f.run();
    assert!(report.is_clean(), "{}", render_text(&report));
    assert!(report.gaps.is_empty());
    assert_eq!(
        report.history_from,
        leasehold::check::history_start(report.through_revision, 0)
    );
    assert!(render_text(&report).contains("from revision 1 to 4: nothing missing"));
}

#[test]
fn an_attempt_started_with_no_end_is_reported_from_the_execution_log() {
    let started = |work: &str, attempt: u32, outcome: &str| {
        json!({
            "workId": work, "logicalEffectId": work, "idempotencyKey": work,
            "attempt": attempt, "ownerId": "a-1", "generation": 4,
            "outcome": outcome, "at": T0,
        })
        .to_string()
    };
    let log = [
        started("e-1", 1, "started"),
        started("e-1", 1, "succeeded"),
        started("e-2", 3, "started"),
    ]
    .join("\n");
    let cut = leasehold::check::unfinished_attempts("a-1.jsonl", &log).unwrap();
    assert_eq!(cut.len(), 1);
    assert_eq!(cut[0].invariant, "attempt-without-end");
    assert_eq!(cut[0].ids, ["e-2", "a-1", "3"]);

    let f = fixture();
    let mut report = f.run();
    report.gaps.extend(cut);
    assert!(
        report.is_clean(),
        "a cut-off attempt is a trace, not a violation"
    );
    let text = render_text(&report);
    assert!(
        text.contains("1 attempt(s) started with no end in the execution logs"),
        "{text}"
    );
    assert!(text.contains("attempt-without-end [e-2, a-1, 3]"), "{text}");
}
