//! A failure code a handler in code answers is held to the rule every handler's is (1 to 64
//! letters, digits, `_`, `-` or `.`): a failure under a code that breaks it is kept, with
//! its class and its retry, under `INVALID_CODE`, the code it gave quoted and escaped in
//! its message, so operators can still filter and count it. `HANDLER_PANICKED` is the
//! runtime's own code (a handler that panicked), never a handler's; and every message is
//! cut at 2,000 characters, whichever handler wrote it.

use leasehold::authority::{
    AttemptContext, AuthorityConfig, AuthorityCore, Finished, HandlerOutcome, Pace, Workload,
};
use leasehold::clock::ManualClock;
use leasehold::model::work::NewWork;
use leasehold::model::{Ending, FailureClass, WorkState};

use crate::support::runtime::{T0, compat, config, store};

/// Each handler answers the failure its name says.
fn miscoded() -> Workload {
    Workload::new("miscoded", 1)
        .with("empty", |_: &AttemptContext| {
            HandlerOutcome::retryable("", "empty code")
        })
        .with("spaced", |_: &AttemptContext| {
            HandlerOutcome::terminal("has space!", "no such user")
        })
        .with("hostile", |_: &AttemptContext| {
            HandlerOutcome::retry_after("E\u{1b}[2J", "", 60_000)
        })
        .with("long", |_: &AttemptContext| {
            HandlerOutcome::terminal(&"X".repeat(100), "too long")
        })
        .with("posing", |_: &AttemptContext| {
            HandlerOutcome::retryable("HANDLER_PANICKED", "not really")
        })
        .with("verbose", |_: &AttemptContext| {
            HandlerOutcome::retryable("VERBOSE", "é".repeat(3_000))
        })
        .with("fine", |_: &AttemptContext| {
            HandlerOutcome::retryable("RATE_LIMITED.v2", "slow down")
        })
}

#[test]
fn a_failure_under_an_invalid_code_is_kept_under_invalid_code() {
    let clock = ManualClock::new(T0);
    let s = store(&clock);
    let names = [
        "empty", "spaced", "hostile", "long", "posing", "verbose", "fine",
    ];
    let items = names
        .iter()
        .map(|h| NewWork::effect(*h, *h, "{}"))
        .collect();
    s.enqueue_batch(items, &compat()).expect("enqueues");
    let cfg = AuthorityConfig {
        worker_concurrency: names.len(),
        ..config("a")
    };
    let core = AuthorityCore::new(s.clone(), cfg, miscoded(), Pace::Virtual).expect("a");
    let jobs = core.poll().expect("polls");
    assert_eq!(jobs.len(), names.len());
    let executed = jobs.iter().map(|j| core.execute(j)).collect::<Vec<_>>();
    let answers = core.finish_all(executed);
    assert!(
        answers
            .iter()
            .all(|a| matches!(a, Finished::RetryScheduled | Finished::Failed)),
        "{answers:?}"
    );
    let rule = "must be 1 to 64 letters, digits, '_', '-' or '.'";
    let expected = [
        (
            "empty",
            FailureClass::Retryable,
            "INVALID_CODE",
            format!("failure code \"\" {rule}; message: empty code"),
        ),
        (
            "spaced",
            FailureClass::Terminal,
            "INVALID_CODE",
            format!("failure code \"has space!\" {rule}; message: no such user"),
        ),
        (
            "hostile",
            FailureClass::Retryable,
            "INVALID_CODE",
            format!("failure code \"E\\u{{1b}}[2J\" {rule}"),
        ),
        (
            "long",
            FailureClass::Terminal,
            "INVALID_CODE",
            // Quoted only just past the longest a code may be.
            format!(
                "failure code \"{}…\" {rule}; message: too long",
                "X".repeat(64)
            ),
        ),
        (
            "posing",
            FailureClass::Retryable,
            "INVALID_CODE",
            "failure code HANDLER_PANICKED is the runtime's own, for a handler that panicked; message: not really".to_owned(),
        ),
        (
            "verbose",
            FailureClass::Retryable,
            "VERBOSE",
            format!("{}…", "é".repeat(2_000)),
        ),
        (
            "fine",
            FailureClass::Retryable,
            "RATE_LIMITED.v2",
            "slow down".to_owned(),
        ),
    ];
    for (id, class, code, message) in expected {
        let item = s.work(id).expect("reads").expect("exists");
        let failure = item.last_failure.clone().expect("kept");
        assert_eq!(
            (
                failure.class,
                failure.code.as_str(),
                failure.message.as_str()
            ),
            (class, code, message.as_str()),
            "{id}"
        );
        let errors = s.attempt_errors(id).expect("reads");
        assert_eq!(
            errors.iter().map(|e| e.code.as_str()).collect::<Vec<_>>(),
            [code],
            "{id}"
        );
        match class {
            FailureClass::Terminal => assert_eq!(item.ending(), Some(Ending::Terminal), "{id}"),
            _ => assert_eq!(item.state, WorkState::Retry, "{id}"),
        }
    }
    // The retry the handler asked for still holds, under the replaced code.
    let hostile = s.work("hostile").expect("reads").expect("exists");
    assert_eq!(hostile.next_eligible_at - s.now(), 60_000);
}
