//! A handler's fleet-wide controls: a paused handler's work stays pending and nobody
//! claims it (an attempt in flight finishes), a resume makes it claimable, each change is
//! audited; and a handler's rate holds every claimer on the store together to its count
//! per window, the next window allowing more.

use crate::model::work::NewWork;
use crate::model::{PageRequest, Rate, WorkItem};
use crate::rules::handler::HandlerControl::{Pause, Resume};
use crate::store::ClaimBudget;

use super::{BASE, Harness, K, START, ok, refused};

/// Enqueues `n` effects of `handler`, `<handler>-<i>`.
fn enqueue(h: &dyn Harness, handler: &str, n: usize) {
    let specs: Vec<NewWork> = (0..n)
        .map(|i| NewWork::effect(format!("{handler}-{i}"), handler, "{}"))
        .collect();
    assert_eq!(ok("enqueue", h.store().enqueue_batch(specs, K)), n);
}

fn handlers(items: &[WorkItem]) -> Vec<&str> {
    let mut names: Vec<&str> = items.iter().map(|w| w.handler.as_str()).collect();
    names.sort_unstable();
    names
}

/// A paused handler's items stay pending and are not claimed, while other handlers' are;
/// the attempt in flight when it was paused completes; a resume makes the rest claimable.
/// Every change is audited, a repeat saying it changed nothing; the pause lists the
/// handler with who, when, why and how many items wait.
pub fn a_paused_handlers_work_waits_until_it_is_resumed(h: &dyn Harness) {
    let s = h.store();
    enqueue(h, "poison", 3);
    enqueue(h, "mail", 2);
    let in_flight = ok(
        "claim before the pause",
        s.claim("poison-0", "a", K, 30_000),
    );
    let paused = ok(
        "pause",
        s.control_handler("poison", Pause, "alice@host", "crashes on v2 payloads"),
    );
    assert!(paused.changed);
    let again = ok(
        "pause again",
        s.control_handler("poison", Pause, "bob@host", ""),
    );
    assert!(!again.changed, "already paused");
    assert_eq!(again.pause.map(|p| p.paused_by), Some("alice@host".into()));

    let claimed = ok("claim while paused", s.claim_batch("b", K, 10, 30_000));
    assert_eq!(handlers(&claimed), ["mail", "mail"]);
    assert_eq!(
        refused("claim by name", s.claim("poison-1", "b", K, 30_000)),
        "WORK_NOT_CLAIMABLE"
    );
    ok(
        "the attempt in flight finishes",
        s.complete("poison-0", "a", in_flight.generation, None),
    );
    let listed = ok("paused handlers", s.paused_handlers());
    assert_eq!(listed.len(), 1);
    let p = &listed[0];
    assert_eq!(
        (p.pause.handler.as_str(), p.pause.paused_by.as_str()),
        ("poison", "alice@host")
    );
    assert_eq!(
        (p.pause.paused_at, p.pause.reason.as_str(), p.waiting),
        (START, "crashes on v2 payloads", 2)
    );

    let resumed = ok(
        "resume",
        s.control_handler("poison", Resume, "bob@host", "fixed"),
    );
    assert!(resumed.changed && resumed.pause.is_none());
    assert!(
        !ok(
            "resume again",
            s.control_handler("poison", Resume, "bob@host", "")
        )
        .changed
    );
    let claimed = ok("claim after the resume", s.claim_batch("b", K, 10, 30_000));
    assert_eq!(handlers(&claimed), ["poison", "poison"]);
    assert!(ok("paused handlers", s.paused_handlers()).is_empty());

    let audit: Vec<(String, String, String)> = ok("audit", s.list_audit(&PageRequest::first(100)))
        .rows
        .into_iter()
        .filter(|a| a.action.starts_with("handler-"))
        .map(|a| (a.action, a.actor, a.outcome))
        .collect();
    let entry = |action: &str, actor: &str, outcome: &str| {
        (action.to_owned(), actor.to_owned(), outcome.to_owned())
    };
    assert_eq!(
        audit,
        [
            entry(
                "handler-pause",
                "alice@host",
                "paused; reason: crashes on v2 payloads"
            ),
            entry("handler-pause", "bob@host", "already paused"),
            entry("handler-resume", "bob@host", "resumed; reason: fixed"),
            entry("handler-resume", "bob@host", "already resumed"),
        ]
    );
}

/// A name no authority runs yet may be paused (its work, once enqueued, waits); a name
/// that is no valid handler name is refused and nothing is written.
pub fn a_handler_not_yet_deployed_may_be_paused_and_a_bad_name_is_refused(h: &dyn Harness) {
    let s = h.store();
    assert!(
        ok(
            "pause",
            s.control_handler("next-week", Pause, "alice@host", "")
        )
        .changed
    );
    enqueue(h, "next-week", 1);
    assert!(ok("claim", s.claim_batch("a", K, 10, 30_000)).is_empty());
    let before = ok("audit", s.list_audit(&PageRequest::first(100)))
        .rows
        .len();
    for bad in ["", "evil\u{202e}txt", "bell\u{7}"] {
        assert_eq!(
            refused("bad name", s.control_handler(bad, Pause, "alice@host", "")),
            "INVALID"
        );
    }
    let after = ok("audit", s.list_audit(&PageRequest::first(100)))
        .rows
        .len();
    assert_eq!(before, after, "a refused name is not audited");
}

/// Two claimers on two handles, each given the handler's rate of 3 per second, claim 3 of
/// its items in one window together, whatever their batches; another handler is not held
/// back; the next window allows 3 more.
pub fn claimers_together_keep_a_handlers_rate(h: &dyn Harness) {
    let rate: Rate = "3/1s".parse().expect("a rate");
    let (a, b) = (h.store(), h.reopen());
    enqueue(h, "api", 10);
    enqueue(h, "other", 2);
    h.clock().set(BASE + 1_000);
    let first = ok(
        "a claims",
        a.claim_work_within("a", K, &ClaimBudget::new(2).with_rate("api", rate), 30_000),
    );
    let second = ok(
        "b claims",
        b.claim_work_within("b", K, &ClaimBudget::new(10).with_rate("api", rate), 30_000),
    );
    let items: Vec<WorkItem> = (first.iter().chain(&second))
        .map(|c| (*c.item).clone())
        .collect();
    let apis = items.iter().filter(|w| w.handler == "api").count();
    assert_eq!(apis, 3, "{:?}", handlers(&items));
    assert_eq!(items.len() - apis, 2, "the other handler is not limited");
    h.clock().set(BASE + 1_999);
    let budget = ClaimBudget::new(10).with_rate("api", rate);
    assert!(
        ok(
            "a, same window",
            a.claim_work_within("a", K, &budget, 30_000)
        )
        .is_empty()
    );
    h.clock().set(BASE + 2_000);
    let next = ok(
        "b, next window",
        b.claim_work_within("b", K, &budget, 30_000),
    );
    assert_eq!(next.len(), 3);
    assert!(
        ok(
            "a, same window",
            a.claim_work_within("a", K, &budget, 30_000)
        )
        .is_empty()
    );
}
