//! A handler that panics, blocking or async: its attempt is recorded at once as a
//! retryable `HANDLER_PANICKED` failure carrying the panic's message, retried after the
//! handler's backoff rather than a lapsed lease, never counted uncertain, and its last
//! attempt ends the item `failed (retries exhausted)` — not a dead letter.

use leasehold::authority::{AuthorityCore, Finished, Pace};
use leasehold::clock::ManualClock;
use leasehold::model::work::NewWork;
use leasehold::model::{Ending, FailureClass, WorkState};
use leasehold::rules::work::Backoff;

use crate::support::runtime::{T0, compat, config, panicking_parsers, store};

#[test]
fn a_panicking_handlers_attempt_is_a_recorded_retryable_failure() {
    let clock = ManualClock::new(T0);
    let s = store(&clock);
    let spec = |id: &str, handler: &str| NewWork {
        max_attempts: 2,
        ..NewWork::effect(id, handler, "\"twelve\"")
    };
    s.enqueue_batch(
        vec![spec("b", "parse"), spec("a", "parse-async")],
        &compat(),
    )
    .expect("enqueues");
    let core =
        AuthorityCore::new(s.clone(), config("a"), panicking_parsers(), Pace::Virtual).expect("a");
    let messages = [
        ("b", "unparsable payload: \"twelve\""),
        ("a", "a number: ParseIntError { kind: InvalidDigit }"),
    ];
    for attempt in 1..=2 {
        let jobs = core.poll().expect("polls");
        assert_eq!(jobs.len(), 2, "attempt {attempt}");
        let executed = jobs.iter().map(|j| core.execute(j)).collect::<Vec<_>>();
        let answers = core.finish_all(executed);
        let expected = if attempt == 1 {
            Finished::RetryScheduled
        } else {
            Finished::Failed
        };
        assert_eq!(answers, [expected.clone(), expected], "attempt {attempt}");
        for (id, message) in messages {
            let item = s.work(id).expect("reads").expect("exists");
            let failure = item.last_failure.clone().expect("a recorded failure");
            assert_eq!(
                (
                    failure.class,
                    failure.code.as_str(),
                    failure.message.as_str()
                ),
                (FailureClass::Retryable, "HANDLER_PANICKED", message),
                "{id}"
            );
            assert_eq!(item.uncertain_attempts, 0, "{id}: recorded, not uncertain");
            let errors = s.attempt_errors(id).expect("reads");
            assert_eq!(errors.len(), attempt, "{id}");
            assert!(
                errors
                    .iter()
                    .all(|e| e.code == "HANDLER_PANICKED" && e.message == message),
                "{errors:?}"
            );
            if attempt == 1 {
                // The handler's backoff, not a lease and its lapse, spaces the retry.
                assert_eq!(item.state, WorkState::Retry, "{id}");
                assert_eq!(
                    item.next_eligible_at - s.now(),
                    Backoff::default().delay(1),
                    "{id}"
                );
            } else {
                assert_eq!(item.ending(), Some(Ending::RetriesExhausted), "{id}");
            }
        }
        clock.advance(Backoff::default().delay(1));
    }
    let counted = core.stats();
    for handler in ["parse", "parse-async"] {
        let counts = &counted.handlers[handler];
        assert_eq!(counts.failures["retryable"], 2, "{handler}: {counts:?}");
        assert_eq!(counts.uncertain_attempts, 0, "{handler}");
    }
}
