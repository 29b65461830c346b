//! Invariant 5: one logicalEffectId per effect across retries, one terminal write per
//! attempt budget, and triage through the public API that keeps the history clean.

use leasehold::check::{codes, render_text};
use leasehold::model::work::NewWork;
use leasehold::model::{Failure, FailureClass, WorkKind};
use serde_json::json;

use super::{LEASE, assert_reported, fixture, k1};

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
