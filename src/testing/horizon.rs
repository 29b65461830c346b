//! The horizon over planted due times: a schedule's next firing, an item held back until
//! later, a retry backing off — each in the slice its instant falls in, and nothing that
//! is due only after the horizon.

use crate::model::schedule::{CatchUp, Trigger};
use crate::model::work::NewWork;
use crate::ops::horizon::{Source, horizon};

use super::work::{effect, retryable};
use super::{Harness, K, ok};

pub fn the_horizon_puts_each_due_instant_in_its_slice(h: &dyn Harness) {
    let s = h.store();
    let now = s.now();
    // A one-off schedule due in 150 s: the second slice of two minutes.
    ok(
        "schedule",
        s.create_schedule(
            "tick",
            Trigger::Delay {
                after_ms: now + 150_000,
            },
            CatchUp::Latest,
            "h",
            "{}",
            K,
        ),
    );
    let held = NewWork {
        not_before: Some(now + 90_000),
        ..effect("held")
    };
    ok("held", s.enqueue(held, K));
    ok(
        "too late",
        s.enqueue(
            NewWork {
                not_before: Some(now + 900_000),
                ..effect("later")
            },
            K,
        ),
    );
    ok("retried", s.enqueue(effect("retried"), K));
    let c = ok("claim", s.claim("retried", "a", K, 30_000));
    ok("fail", s.fail("retried", "a", c.generation, retryable("E")));
    let retry_at = s
        .work("retried")
        .unwrap()
        .unwrap()
        .due_at()
        .expect("backing off");
    assert!(retry_at > now && retry_at < now + 60_000, "{retry_at}");

    // Ten minutes in five slices of two.
    let hz = ok("horizon", horizon(&s, now, 600_000, 5, 100));
    assert!(!hz.capped);
    assert_eq!(hz.bucket_ms, 120_000);
    let sources = |i: usize| -> Vec<(Source, String)> {
        hz.buckets[i]
            .entries
            .iter()
            .map(|e| (e.source, e.id.clone()))
            .collect()
    };
    assert_eq!(
        sources(0),
        [
            (Source::Backoff, "retried".to_owned()),
            (Source::Delayed, "held".to_owned())
        ]
    );
    assert_eq!(sources(1), [(Source::Firing, "tick".to_owned())]);
    assert_eq!(
        hz.buckets
            .iter()
            .map(crate::ops::horizon::Bucket::total)
            .sum::<u64>(),
        3
    );
    assert_eq!(hz.buckets[0].counts.get(&Source::Delayed), Some(&1));
}
