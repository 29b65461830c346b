//! Enqueueing work: idempotent per id, large batches with stored ids, texts and extreme
//! numbers stored exactly, and concurrent enqueues each committed before they return.

use std::collections::BTreeMap;
use std::sync::Barrier;
use std::sync::atomic::AtomicU64;

use crate::model::work::NewWork;
use crate::model::{WorkKind, WorkState};

use super::work::{effect, item};
use super::{Harness, K, K_OTHER, ok, refused, retry_contention};

/// How many items the counts say are pending, read through a fresh handle.
fn pending_items(h: &dyn Harness) -> u64 {
    ok("overview", h.reopen().overview())
        .work
        .iter()
        .filter(|c| c.state == WorkState::Pending)
        .map(|c| c.count)
        .sum()
}

/// Enqueue is idempotent per id: one logical effect however often it is offered, the first
/// offer's content kept, counted once; another effect under the id is refused.
pub fn enqueue_is_idempotent_per_id(h: &dyn Harness) {
    let s = h.store();
    assert!(ok("first", s.enqueue(effect("e"), K)));
    let first = item(h, "e");
    assert_eq!(
        refused(
            "again, other handler and payload",
            s.enqueue(NewWork::effect("e", "other", "{}"), K)
        ),
        "IDEMPOTENCY_CONFLICT"
    );
    assert!(!ok(
        "again, other build",
        h.reopen().enqueue(effect("e"), K_OTHER)
    ));
    assert_eq!(item(h, "e"), first);
    assert_eq!(
        ok(
            "batch with repeats",
            s.enqueue_batch(vec![effect("e"), effect("f"), effect("f")], K)
        ),
        1
    );
    let counts = ok("overview", s.overview()).work;
    let pending: u64 = counts
        .iter()
        .filter(|c| c.state == WorkState::Pending && c.kind == WorkKind::Effect)
        .map(|c| c.count)
        .sum();
    assert_eq!(pending, 2);
}

/// A batch with stored ids among its new ones — larger than a commit carries as text on
/// PostgreSQL — writes only the new ones, counts them once, and leaves the stored items
/// as they were.
pub fn a_large_batch_with_stored_ids_writes_only_the_new_ones(h: &dyn Harness) {
    let s = h.store();
    for id in ["b-007", "b-070", "b-149"] {
        assert!(ok("first", s.enqueue(effect(id), K)));
    }
    let before = item(h, "b-070");
    let batch = (0..150)
        .map(|i| NewWork::effect(format!("b-{i:03}"), "h", "{\"second\":true}"))
        .map(|spec| match spec.id.as_str() {
            "b-007" | "b-070" | "b-149" => effect(&spec.id),
            _ => spec,
        })
        .collect();
    assert_eq!(ok("batch", s.enqueue_batch(batch, K)), 147);
    assert_eq!(item(h, "b-070"), before);
    assert_eq!(item(h, "b-071").payload, "{\"second\":true}");
    assert_eq!(pending_items(h), 150);
}

/// Texts are stored as given, whatever they hold: quotes, backslashes, dollar signs,
/// comment and statement separators and non-ASCII characters in an item's id, handler,
/// keys, payload (as JSON text, the one shape a payload takes) and result read back
/// exactly, alone and in a batch (PostgreSQL sends a small commit's rows as SQL text).
pub fn texts_are_stored_exactly_as_given(h: &dyn Harness) {
    let s = h.store();
    let odd = r#"o'brien\'; DROP TABLE work; -- $$ E'\x00' "q" é 🦀"#;
    let payload = serde_json::json!({ "odd": odd, "raw": odd.len() }).to_string();
    let spec = |id: &str| NewWork {
        logical_effect_id: Some(format!("{id}{odd}")),
        idempotency_key: Some(format!("{id}key{odd}")),
        ..NewWork::effect(format!("{id}{odd}"), format!("h{odd}"), payload.clone())
    };
    assert!(ok("alone", s.enqueue(spec("one"), K)));
    assert_eq!(
        ok(
            "batch",
            s.enqueue_batch(vec![spec("two"), spec("three")], K)
        ),
        2
    );
    for id in ["one", "two", "three"] {
        let stored = item(h, &format!("{id}{odd}"));
        assert_eq!(stored.payload, payload);
        assert_eq!(stored.handler, format!("h{odd}"));
        assert_eq!(stored.logical_effect_id, format!("{id}{odd}"));
        assert_eq!(stored.idempotency_key, format!("{id}key{odd}"));
    }
    let again = NewWork {
        idempotency_key: Some(format!("onekey{odd}")),
        ..spec("four")
    };
    assert!(!ok("the first key again", s.enqueue(again, K)));
    assert!(ok("read", s.work(&format!("four{odd}"))).is_none());
    let id = format!("one{odd}");
    let claimed = ok("claim", s.claim(&id, "a", K, 30_000));
    let done = ok(
        "complete",
        s.complete(&id, "a", claimed.generation, Some(odd.to_owned())),
    );
    assert_eq!(done.result.as_deref(), Some(odd));
    assert_eq!(item(h, &id).result.as_deref(), Some(odd));
}

/// Numbers at the ends of their ranges are stored exactly (PostgreSQL writes a small
/// commit's values as SQL text, where the most negative 64-bit integer needs care).
pub fn extreme_numbers_are_stored_exactly(h: &dyn Harness) {
    let s = h.store();
    let low = NewWork {
        not_before: Some(i64::MIN),
        priority: i32::MIN,
        max_attempts: 1,
        ..effect("low")
    };
    // The latest start an item takes: later ones are refused as parking it for good.
    let high = NewWork {
        not_before: Some(crate::clock::LATEST),
        priority: i32::MAX,
        max_attempts: u32::MAX,
        ..effect("high")
    };
    assert!(ok("low", s.enqueue(low, K)));
    assert!(ok("high", s.enqueue(high, K)));
    for (id, priority, max_attempts) in [("low", i32::MIN, 1), ("high", i32::MAX, u32::MAX)] {
        let stored = item(h, id);
        assert_eq!(
            (stored.priority, stored.max_attempts),
            (priority, max_attempts)
        );
        assert_eq!(
            ok("read back", h.reopen().work(id)),
            Some(stored),
            "{id}: another handle reads the same"
        );
    }
    assert_eq!(item(h, "high").next_eligible_at, crate::clock::LATEST);
}

/// Single-item enqueues from many threads at once (group commit): every call gets its own
/// answer — of two calls with one id exactly one is new — and each item is visible to
/// another handle as soon as its call returns, so no call is answered before the commit
/// holding its item.
pub fn concurrent_enqueues_are_each_committed_before_they_return(h: &dyn Harness) {
    const THREADS: usize = 16;
    const EACH: usize = 25;
    let s = h.store();
    let reader = h.reopen();
    let start = Barrier::new(THREADS);
    let contention = AtomicU64::new(0);
    let answers: Vec<Vec<(String, bool)>> = std::thread::scope(|scope| {
        let calls: Vec<_> = (0..THREADS)
            .map(|t| {
                let (s, reader, start, contention) = (s.clone(), &reader, &start, &contention);
                scope.spawn(move || {
                    start.wait();
                    (0..EACH)
                        .map(|i| {
                            // Pairs of threads offer the same ids: each id twice.
                            let id = format!("c{:02}-{i:02}", t / 2);
                            let new = retry_contention(contention, || s.enqueue(effect(&id), K))
                                .unwrap_or_else(|e| panic!("enqueue {id}: {e}"));
                            assert!(
                                ok("read back", reader.work(&id)).is_some(),
                                "{id} was answered before its commit"
                            );
                            (id, new)
                        })
                        .collect()
                })
            })
            .collect();
        calls.into_iter().map(|c| c.join().unwrap()).collect()
    });
    let mut new_per_id: BTreeMap<String, usize> = BTreeMap::new();
    for (id, new) in answers.into_iter().flatten() {
        *new_per_id.entry(id).or_default() += usize::from(new);
    }
    assert_eq!(new_per_id.len(), THREADS / 2 * EACH);
    assert!(
        new_per_id.values().all(|n| *n == 1),
        "each id new exactly once: {new_per_id:?}"
    );
    assert_eq!(pending_items(h), (THREADS / 2 * EACH) as u64);
}
