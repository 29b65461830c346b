//! Replay over a planted failover: the window's summary counts what the history holds,
//! and a resource read at each revision shows its owner before and after the takeover.

use crate::ops::replay::{self, Step, Steps};
use crate::rules::work::Backoff;

use super::work::effect;
use super::{Harness, K, ok, refused};

pub fn replay_shows_the_owner_before_and_after_a_failover(h: &dyn Harness) {
    let s = h.store();
    let start = s.now();
    ok("enqueue", s.enqueue(effect("e"), K));
    let a = ok("a claims", s.claim("e", "a", K, 1_000));
    let a_claimed = s.revision().unwrap();
    h.clock().advance(1_000);
    // The lapse is settled (backed off), then b takes over after the backoff.
    assert!(ok("lapse", s.claim_batch("b", K, 10, 1_000)).is_empty());
    h.clock().advance(Backoff::default().delay(1));
    let b = ok("b reclaims", s.claim_batch("b", K, 10, 1_000))
        .pop()
        .expect("reclaimed");
    let b_claimed = s.revision().unwrap();
    h.clock().advance(10);
    assert_eq!(
        refused(
            "a's late complete",
            s.complete("e", "a", a.generation, None)
        ),
        "WORK_FENCED"
    );
    ok("b completes", s.complete("e", "b", b.generation, None));
    let end = s.now();

    let window = ok("span", replay::span(&s, start, end));
    assert!(window.from_revision <= a_claimed && window.to_revision >= b_claimed);
    let summary = ok("summary", replay::summarize(&s, window));
    assert_eq!(summary.failovers, 1);
    assert_eq!(summary.failover_steps[0].from, "a");
    assert_eq!(summary.failover_steps[0].to, "b");
    assert_eq!(summary.failover_steps[0].revision, b_claimed);
    assert_eq!(summary.fenced_writes, 1);
    assert_eq!(summary.refusals.get("WORK_FENCED"), Some(&1));
    assert_eq!(summary.completions, 1);
    assert_eq!(summary.by_owner["b"].completions, 1);
    assert_eq!(summary.by_owner["a"].refused, 1);

    let before = ok("at a's claim", replay::resource_at(&s, "e", a_claimed));
    assert_eq!(
        (
            before.owner.as_deref(),
            before.generation,
            before.state.as_str()
        ),
        (Some("a"), a.generation, "held")
    );
    let after = ok("at b's claim", replay::resource_at(&s, "e", b_claimed));
    assert_eq!(
        (after.owner.as_deref(), after.generation),
        (Some("b"), b.generation)
    );
    let last = ok(
        "at the end",
        replay::resource_at(&s, "e", window.to_revision),
    );
    assert_eq!(
        (last.owner.as_deref(), last.state.as_str()),
        (Some("b"), "completed")
    );
    assert_eq!(
        refused(
            "no history",
            replay::resource_at(&s, "nothing-here", window.to_revision)
        ),
        "NOT_FOUND"
    );

    // Steps come in revision order; a window that starts after a's claim leaves it out.
    let mut steps = Steps::new(&s, window, None);
    let mut revisions = Vec::new();
    while let Some(step) = ok("step", steps.next_step()) {
        revisions.push(step.revision());
    }
    assert!(revisions.windows(2).all(|w| w[0] <= w[1]), "{revisions:?}");
    let later = ok("later span", replay::span(&s, start + 1_000, end));
    let mut steps = Steps::new(&s, later, None);
    let mut first_grant = None;
    while let Some(step) = ok("step", steps.next_step()) {
        if let Step::Grant(g) = step {
            first_grant.get_or_insert(g.owner_id);
        }
    }
    assert_eq!(first_grant.as_deref(), Some("b"));
    assert_eq!(
        refused("backwards", replay::span(&s, end, start)),
        "INVALID"
    );
}
