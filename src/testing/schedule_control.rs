//! An operator's pause, resume and delete of a schedule: a paused schedule fires nothing,
//! a resume hands the boundaries missed meanwhile to the catch-up policy, a delete leaves
//! the firings already enqueued (one in flight included) to run, and every change — a
//! refusal too — is audited with its actor and reason in the transaction that made it.

use crate::model::schedule::{CatchUp, Trigger, firing_id};
use crate::model::{PageRequest, WorkState};
use crate::rules::schedule::Control;

use super::{BASE, Harness, K, ok, refused};

/// The audit entries of `action`, as (actor, target, outcome).
fn audited(h: &dyn Harness, action: &str) -> Vec<(String, String, String)> {
    ok("audit", h.store().list_audit(&PageRequest::first(100)))
        .rows
        .into_iter()
        .filter(|a| a.action == action)
        .map(|a| (a.actor, a.target, a.outcome))
        .collect()
}

fn every_second_last_3(h: &dyn Harness) {
    assert!(ok(
        "create",
        h.store().create_schedule(
            "tick",
            Trigger::Interval { every_ms: 1_000 },
            CatchUp::Last(3),
            "tick",
            "{}",
            K
        )
    ));
}

/// A paused schedule fires nothing; a resume fires, at the next observation, the
/// boundaries missed while paused that its catch-up policy keeps (here the last 3 of 5).
/// A repeated pause or resume changes nothing and says so.
pub fn a_paused_schedule_fires_nothing_and_resumes_into_its_catch_up(h: &dyn Harness) {
    let s = h.store();
    every_second_last_3(h);
    h.clock().set(BASE + 1_000);
    assert_eq!(ok("fire", s.fire_due_schedules(K, 10)), 1);
    h.clock().set(BASE + 1_500);
    let paused = ok(
        "pause",
        s.control_schedule("tick", Control::Pause, "alice@host", "partner down"),
    );
    assert!(paused.changed);
    assert_eq!(paused.schedule.paused_at, Some(BASE + 1_500));
    let again = ok(
        "pause again",
        s.control_schedule("tick", Control::Pause, "alice@host", ""),
    );
    assert!(!again.changed, "already paused");
    for at in [BASE + 2_000, BASE + 4_000, BASE + 6_500] {
        h.clock().set(at);
        assert_eq!(ok("fire while paused", s.fire_due_schedules(K, 10)), 0);
    }
    let resumed = ok(
        "resume",
        s.control_schedule("tick", Control::Resume, "bob@host", "partner back"),
    );
    assert!(resumed.changed);
    assert_eq!(resumed.schedule.paused_at, None);
    assert_eq!(ok("fire after resume", s.fire_due_schedules(K, 10)), 3);
    for due in [BASE + 4_000, BASE + 5_000, BASE + 6_000] {
        assert!(
            ok("read", s.work(&firing_id("tick", due))).is_some(),
            "{due}"
        );
    }
    assert!(ok("read", s.work(&firing_id("tick", BASE + 2_000))).is_none());
    assert!(
        !ok(
            "resume again",
            s.control_schedule("tick", Control::Resume, "bob@host", "")
        )
        .changed
    );
    let pauses = audited(h, Control::Pause.action());
    assert_eq!(pauses.len(), 2);
    assert_eq!(
        (pauses[0].0.as_str(), pauses[0].1.as_str()),
        ("alice@host", "tick")
    );
    assert!(
        pauses.iter().any(|p| p.2.contains("partner down")),
        "{pauses:?}"
    );
    let resumes = audited(h, Control::Resume.action());
    assert!(
        resumes
            .iter()
            .any(|r| r.0 == "bob@host" && r.2.contains("resumed") && r.2.contains("partner back")),
        "{resumes:?}"
    );
}

/// A delete removes the definition: nothing fires after it, while a firing already
/// claimed runs to its end under its claim. A delete of an unknown schedule is
/// `NOT_FOUND`, audited as refused.
pub fn a_deleted_schedule_leaves_its_enqueued_firings(h: &dyn Harness) {
    let s = h.store();
    every_second_last_3(h);
    h.clock().set(BASE + 1_000);
    assert_eq!(ok("fire", s.fire_due_schedules(K, 10)), 1);
    let id = firing_id("tick", BASE + 1_000);
    let claimed = ok("claim", s.claim(&id, "a", K, 30_000));
    let deleted = ok(
        "delete",
        s.control_schedule("tick", Control::Delete, "alice@host", "retired"),
    );
    assert!(deleted.changed);
    assert_eq!(deleted.schedule.schedule_id, "tick");
    assert_eq!(ok("read", s.schedule("tick")), None);
    h.clock().set(BASE + 5_000);
    assert_eq!(ok("fire", s.fire_due_schedules(K, 10)), 0);
    let done = ok("complete", s.complete(&id, "a", claimed.generation, None));
    assert_eq!(done.state, WorkState::Succeeded);

    let unknown = s.control_schedule("tick", Control::Delete, "alice@host", "again");
    let err = unknown.expect_err("an unknown schedule");
    assert_eq!(err.code(), "NOT_FOUND");
    assert!(!err.to_string().contains('\n'), "one line: {err}");
    let deletes = audited(h, Control::Delete.action());
    assert_eq!(deletes.len(), 2, "{deletes:?}");
    assert!(
        deletes
            .iter()
            .any(|d| d.2.contains("deleted") && d.2.contains("retired"))
    );
    assert!(deletes.iter().any(|d| d.2.contains("refused")));
    for control in [Control::Pause, Control::Resume] {
        assert_eq!(
            refused("unknown", s.control_schedule("nope", control, "a", "")),
            "NOT_FOUND"
        );
    }
}
