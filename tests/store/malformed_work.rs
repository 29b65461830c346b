//! What a work item or a schedule must be to run at all is checked by the library verbs
//! themselves, as the command line checks its options: a payload that is not JSON, an
//! empty compatibility key on an item (what `key_for(..).unwrap_or_default()` gives for a
//! handler the caller does not run), a budget of no attempts and a start past the year
//! 9999 are refused with `INVALID` naming the item and the problem, and nothing is
//! written. (A schedule's own key is a label: its firings take the observer's.)

use leasehold::Store;
use leasehold::clock::LATEST;
use leasehold::model::schedule::{CatchUp, Trigger};
use leasehold::model::work::NewWork;
use leasehold::store::url::{self, OpenMode};

use crate::support::K;

type Verb = Box<dyn Fn(&Store) -> leasehold::Result<()>>;

fn every_minute() -> Trigger {
    Trigger::Interval { every_ms: 60_000 }
}

/// Each malformed spec through each verb that takes it, with the words its refusal must say.
fn cases() -> Vec<(&'static str, &'static str, Verb)> {
    let not_json = || NewWork::effect("w-1", "send-email", "this is not json");
    let no_attempts = || NewWork {
        max_attempts: 0,
        ..NewWork::effect("w-1", "send-email", "{}")
    };
    let too_late = || NewWork {
        not_before: Some(LATEST + 1),
        ..NewWork::effect("w-1", "send-email", "{}")
    };
    vec![
        (
            "a payload that is not JSON",
            "work w-1: the payload is not JSON",
            Box::new(move |s| s.enqueue(not_json(), K).map(drop)),
        ),
        (
            "a payload that is not JSON, in a batch",
            "work w-1: the payload is not JSON",
            Box::new(move |s| {
                let fine = NewWork::effect("w-0", "send-email", "{}");
                s.enqueue_batch(vec![fine, not_json()], K).map(drop)
            }),
        ),
        (
            "a payload that is not JSON, offered one by one",
            "work w-1: the payload is not JSON",
            Box::new(move |s| s.offer_batch(vec![not_json()], K).map(drop)),
        ),
        (
            "an empty compatibility key",
            "work w-1: compatibility key: must not be empty (given for handler send-email)",
            // What `authority.key_for("sendmail").unwrap_or_default()` hands over.
            Box::new(|s| {
                let empty = String::new();
                s.enqueue(NewWork::effect("w-1", "send-email", "{}"), &empty)
                    .map(drop)
            }),
        ),
        (
            "no attempts",
            "work w-1: max attempts must be at least 1",
            Box::new(move |s| s.enqueue(no_attempts(), K).map(drop)),
        ),
        (
            "a start past the year 9999",
            "work w-1: not before",
            Box::new(move |s| s.enqueue(too_late(), K).map(drop)),
        ),
        (
            "a schedule's payload that is not JSON",
            "schedule nightly: the payload is not JSON",
            Box::new(|s| {
                s.create_schedule("nightly", every_minute(), CatchUp::Latest, "h", "{", K)
                    .map(drop)
            }),
        ),
        (
            "a schedule's new payload that is not JSON",
            "schedule every: the payload is not JSON",
            Box::new(|s| {
                s.create_schedule("every", every_minute(), CatchUp::Latest, "h", "{}", K)?;
                let before = s.revision()?;
                let refused =
                    s.update_schedule("every", every_minute(), CatchUp::Latest, "h", "[", "al");
                assert_eq!(s.revision()?, before, "the update wrote");
                refused.map(drop)
            }),
        ),
    ]
}

#[test]
fn every_library_verb_refuses_work_that_could_never_run_and_writes_nothing() {
    for (what, says, verb) in cases() {
        let store = url::open("memory", OpenMode::ReadWrite).unwrap();
        let before = store.revision().unwrap();
        let err = match verb(&store) {
            Ok(()) => panic!("{what} was accepted"),
            Err(e) => e,
        };
        let text = err.to_string();
        assert_eq!(err.code(), "INVALID", "{what}: {text}");
        assert!(text.contains(says), "{what}: {text}");
        assert!(!text.contains('\n'), "{what}: one line: {text:?}");
        if !what.contains("new payload") {
            assert_eq!(store.revision().unwrap(), before, "{what} wrote");
        }
        assert!(
            store.work("w-0").unwrap().is_none(),
            "{what}: a batch wrote part of itself"
        );
    }
}

/// The bounds let through what is fine: JSON of every kind, one attempt, the last instant.
#[test]
fn work_at_the_bounds_is_taken() {
    let store = url::open("memory", OpenMode::ReadWrite).unwrap();
    for (i, payload) in ["{}", "[]", "\"text\"", "42", "null"]
        .into_iter()
        .enumerate()
    {
        let spec = NewWork {
            max_attempts: 1,
            not_before: Some(LATEST),
            ..NewWork::effect(format!("w-{i}"), "send-email", payload)
        };
        assert!(store.enqueue(spec, K).unwrap(), "{payload}");
    }
}
