//! Idempotency keys are unique in a store: a second enqueue with a key an item holds is a
//! repeat of that item (same kind, handler and payload: nothing written) or
//! `IDEMPOTENCY_CONFLICT` (nothing written), whatever id it gives or has minted for it —
//! alone, through group commit and in a batch, and in a store an older build left holding
//! a key twice.

use std::sync::Arc;

use crate::Store;
use crate::check::{CheckOptions, check, codes};
use crate::clock::Clock;
use crate::ids::SeededIds;
use crate::model::work::{NewWork, WorkFilter};
use crate::model::{PageRequest, WorkItem};
use crate::store::copy::copy_store;
use crate::store::memory::MemoryBackend;
use crate::store::{Backend, Counter, Enqueued};

use super::{Harness, K, ok, refused};

/// A charge under key `key`, with the id `id` and `amount` in its payload.
fn charge(id: &str, key: &str, amount: u32) -> NewWork {
    NewWork {
        idempotency_key: Some(key.into()),
        ..NewWork::effect(id, "charge-card", format!("{{\"amount\":{amount}}}"))
    }
}

/// Every item's id, in id order.
fn stored_ids(s: &Store) -> Vec<String> {
    ok(
        "list",
        s.list_work(&WorkFilter::default(), &PageRequest::first(100)),
    )
    .rows
    .into_iter()
    .map(|w| w.id)
    .collect()
}

/// The same key under another id, or under an id minted for it as for an offer that names
/// only its key, is a repeat of the first item: nothing is written, not even a revision,
/// and the answer names the item the key holds.
pub fn a_known_key_under_another_id_is_a_duplicate(h: &dyn Harness) {
    let s = h.store();
    assert!(ok("first", s.enqueue(charge("x", "K", 12), K)));
    let first = ok("read", s.work("x")).expect("x");
    let revision = ok("revision", s.revision());

    let other_id = ok("other id", s.offer_work(charge("y", "K", 12), K));
    assert_eq!(other_id, Enqueued::Duplicate("x".into()));
    let minted = s.ids().next_id("work");
    let spelt = NewWork {
        payload: "{ \"amount\": 12 }".into(),
        ..charge(&minted, "K", 12)
    };
    assert!(!ok(
        "minted id, payload spelt otherwise",
        s.enqueue(spelt, K)
    ));
    // An offer with no key defaults it to its id: the id "K" names the key's item too.
    let by_default = NewWork::effect("K", "charge-card", "{\"amount\":12}");
    assert_eq!(
        ok("the key as an id", h.reopen().offer_work(by_default, K)),
        Enqueued::Duplicate("x".into())
    );

    assert_eq!(stored_ids(&s), ["x"]);
    assert_eq!(ok("read", s.work("x")), Some(first));
    assert_eq!(
        ok("revision", s.revision()),
        revision,
        "nothing was written"
    );
}

/// Another payload or handler under a known key is `IDEMPOTENCY_CONFLICT`, one line
/// naming the item and the key, whatever the id; nothing is written.
pub fn another_effect_under_a_known_key_is_a_conflict(h: &dyn Harness) {
    let s = h.store();
    assert!(ok("first", s.enqueue(charge("x", "K", 12), K)));
    let revision = ok("revision", s.revision());
    let offers = [
        charge("y", "K", 13),
        charge("x", "K", 13),
        NewWork {
            handler: "refund".into(),
            ..charge("z", "K", 12)
        },
    ];
    for offer in offers {
        let id = offer.id.clone();
        let e = s.offer_work(offer, K).expect_err("another effect");
        assert_eq!(e.code(), "IDEMPOTENCY_CONFLICT", "{id}: {e}");
        let text = e.to_string();
        assert!(
            text.contains("work item x") && text.contains("idempotency key K"),
            "{text}"
        );
    }
    assert_eq!(stored_ids(&s), ["x"]);
    assert_eq!(
        ok("revision", s.revision()),
        revision,
        "nothing was written"
    );
}

/// A batch holding a key twice enqueues it once (the second is a repeat of the first), and
/// a batch holding a key twice with two payloads, or a key the store holds with another
/// payload, is refused whole: nothing of it is written.
pub fn a_batch_holding_a_key_twice_enqueues_it_once(h: &dyn Harness) {
    let s = h.store();
    let batch = vec![
        charge("a", "K1", 1),
        charge("b", "K1", 1),
        charge("c", "K2", 2),
    ];
    assert_eq!(ok("batch", s.enqueue_batch(batch, K)), 2);
    assert_eq!(stored_ids(&s), ["a", "c"]);
    let revision = ok("revision", s.revision());

    for batch in [
        vec![charge("d", "K3", 3), charge("e", "K3", 4)],
        vec![charge("d", "K3", 3), charge("e", "K1", 9)],
    ] {
        assert_eq!(
            refused("a conflicting batch", s.enqueue_batch(batch, K)),
            "IDEMPOTENCY_CONFLICT"
        );
    }
    assert_eq!(stored_ids(&s), ["a", "c"]);
    assert_eq!(
        ok("revision", s.revision()),
        revision,
        "nothing was written"
    );
}

/// A batch offered item by item answers each on its own: a conflict (with the store, or
/// with an earlier item of the batch) writes nothing for that item, and the rest commit.
pub fn an_offered_batch_answers_each_item(h: &dyn Harness) {
    let s = h.store();
    assert!(ok("first", s.enqueue(charge("x", "K", 12), K)));
    let batch = vec![
        charge("a", "K1", 1),
        charge("y", "K", 13),
        charge("b", "K1", 1),
        charge("c", "K1", 2),
        charge("z", "K", 12),
    ];
    let answers = ok("batch", s.offer_batch(batch, K));
    let codes: Vec<String> = answers
        .iter()
        .map(|a| match a {
            Ok(Enqueued::Created) => "created".to_owned(),
            Ok(Enqueued::Duplicate(id)) => format!("duplicate of {id}"),
            Err(e) => e.code().to_owned(),
        })
        .collect();
    assert_eq!(
        codes,
        [
            "created",
            "IDEMPOTENCY_CONFLICT",
            "duplicate of a",
            "IDEMPOTENCY_CONFLICT",
            "duplicate of x",
        ]
    );
    assert_eq!(stored_ids(&s), ["a", "x"]);
}

/// Concurrent single offers of one key (sharing commits) create exactly one item; the
/// others are repeats of it, whichever commit group each joined.
pub fn concurrent_offers_of_one_key_create_one_item(h: &dyn Harness) {
    let s = h.store();
    let answers: Vec<Enqueued> = std::thread::scope(|scope| {
        let calls: Vec<_> = (0..8)
            .map(|i| {
                let s = s.clone();
                scope.spawn(move || ok("offer", s.offer_work(charge(&format!("c-{i}"), "K", 5), K)))
            })
            .collect();
        calls
            .into_iter()
            .map(|c| c.join().expect("joined"))
            .collect()
    });
    let created = answers.iter().filter(|a| **a == Enqueued::Created).count();
    assert_eq!(created, 1, "{answers:?}");
    let ids = stored_ids(&s);
    assert_eq!(ids.len(), 1);
    assert!(
        answers
            .iter()
            .all(|a| *a == Enqueued::Created || *a == Enqueued::Duplicate(ids[0].clone())),
        "{answers:?}"
    );
}

/// A store an older build wrote, holding one key on two items (copied in as it was), still
/// opens and works: `check` reports the pair, and an offer of that key is a repeat of the
/// item with the lower id, or a conflict with it.
pub fn a_store_holding_a_key_twice_is_reported_and_still_deduplicates(h: &dyn Harness) {
    let backend = MemoryBackend::new();
    let old = Store::new(
        Arc::new(backend.clone()),
        Arc::new(h.clock().clone()),
        Arc::new(SeededIds::new(11)),
    );
    ok("first", old.enqueue(charge("k-1", "K", 1), K));
    ok("another key", old.enqueue(charge("k-3", "L", 3), K));
    // What an older build wrote: a second item under the key, its id alone checked.
    let twin = WorkItem::new(charge("k-2", "K", 2), K, h.clock().now());
    ok(
        "plant",
        backend.write(&mut |tx| {
            tx.commit_revision()?;
            assert!(tx.insert_work(&twin)?);
            tx.adjust_counter(&Counter::work(&twin).key(), 1)
        }),
    );
    let s = h.store();
    ok("copy", copy_store(&old, &s, &mut |_| {}));

    let report = ok("check", check(&s, &CheckOptions::at(h.clock().now())));
    let shared: Vec<&Vec<String>> = report
        .of(codes::IDEMPOTENCY_KEY_SHARED)
        .map(|v| &v.ids)
        .collect();
    assert_eq!(shared, [&vec!["K".to_owned(), "k-1".into(), "k-2".into()]]);

    assert_eq!(
        ok("a repeat", s.offer_work(charge("k-9", "K", 1), K)),
        Enqueued::Duplicate("k-1".into())
    );
    assert_eq!(
        refused("another payload", s.enqueue(charge("k-9", "K", 2), K)),
        "IDEMPOTENCY_CONFLICT"
    );
    assert!(ok("a new key", s.enqueue(charge("k-9", "M", 9), K)));
    assert_eq!(stored_ids(&s), ["k-1", "k-2", "k-3", "k-9"]);
}
