//! Identifiers from outside are checked by the library verbs themselves, not only by the
//! command line: control characters, bidirectional and zero-width characters and values
//! past the length bound are refused with `INVALID` naming the field, and nothing is
//! written.

use leasehold::Store;
use leasehold::model::Authority;
use leasehold::model::event::NewEvent;
use leasehold::model::schedule::{CatchUp, Trigger};
use leasehold::model::work::NewWork;
use leasehold::store::Keyed;
use leasehold::store::url::{self, OpenMode};
use leasehold::workflow::Catalog;

use crate::support::K;

/// One hostile value per rule.
fn hostile() -> Vec<(&'static str, String)> {
    vec![
        ("an escape sequence", "id\u{1b}]0;pwned\u{7}".to_owned()),
        ("a newline", "two\nlines".to_owned()),
        ("a bidi override", "\u{202e}gpj.exe".to_owned()),
        ("an isolate", "a\u{2066}b".to_owned()),
        ("a zero-width space", "a\u{200b}b".to_owned()),
        ("10 KB", "x".repeat(10_000)),
        ("nothing", String::new()),
    ]
}

type Verb = Box<dyn Fn(&Store, &str) -> leasehold::Result<()>>;

#[expect(
    clippy::too_many_lines,
    reason = "a scripted scenario: its steps in the order they happen"
)]
fn verbs() -> Vec<(&'static str, Verb)> {
    vec![
        (
            "work id",
            Box::new(|s, v| s.enqueue(NewWork::effect(v, "h", "{}"), K).map(drop)),
        ),
        (
            "handler",
            Box::new(|s, v| s.enqueue(NewWork::effect("w-1", v, "{}"), K).map(drop)),
        ),
        (
            "idempotency key",
            Box::new(|s, v| {
                let spec = NewWork {
                    idempotency_key: Some(v.into()),
                    ..NewWork::effect("w-1", "h", "{}")
                };
                s.enqueue(spec, K).map(drop)
            }),
        ),
        (
            "schedule id",
            Box::new(|s, v| {
                let every = Trigger::Interval { every_ms: 60_000 };
                s.create_schedule(v, every, CatchUp::Latest, "h", "{}", K)
                    .map(drop)
            }),
        ),
        (
            "subscription id",
            Box::new(|s, v| s.create_subscription(v, "paid", "h", K).map(drop)),
        ),
        (
            "event type",
            Box::new(|s, v| s.ingest(&event(v, Some("src"), Some("e-1"))).map(drop)),
        ),
        (
            "event source",
            Box::new(|s, v| s.ingest(&event("paid", Some(v), Some("e-1"))).map(drop)),
        ),
        (
            "event id",
            Box::new(|s, v| s.ingest(&event("paid", Some("src"), Some(v))).map(drop)),
        ),
        (
            "instance id",
            Box::new(|s, v| s.register_authority(&authority(v, "b1")).map(drop)),
        ),
        (
            "build",
            Box::new(|s, v| s.register_authority(&authority("a-1", v)).map(drop)),
        ),
        (
            "workflow id",
            Box::new(|s, v| {
                s.start_workflow(v, serde_json::Map::new(), "alice", None, K)
                    .map(drop)
            }),
        ),
        (
            "idempotency key",
            Box::new(|s, v| {
                s.start_workflow("reminder", serde_json::Map::new(), "alice", Some(v), K)
                    .map(drop)
            }),
        ),
        (
            "instance id",
            Box::new(|s, v| s.cancel_workflow(v, None, "alice", "why").map(drop)),
        ),
        (
            "work id",
            Box::new(|s, v| s.requeue_work(v, "alice", "why").map(drop)),
        ),
        (
            "work id",
            Box::new(|s, v| s.discard_work(v, "alice", "why").map(drop)),
        ),
        (
            "lease resource",
            Box::new(|s, v| s.acquire(v, "a-1", 1_000.0, Keyed { key: None }).map(drop)),
        ),
        (
            "owner",
            Box::new(|s, v| s.acquire("r-1", v, 1_000.0, Keyed { key: None }).map(drop)),
        ),
        (
            "idempotency key",
            Box::new(|s, v| {
                s.acquire("r-1", "a-1", 1_000.0, Keyed { key: Some(v) })
                    .map(drop)
            }),
        ),
        (
            "recipient",
            Box::new(|s, v| {
                let held = s.lease("r-held")?.expect("fresh() holds r-held");
                let key = Keyed { key: None };
                s.handoff(
                    "r-held",
                    "a-1",
                    &held.token,
                    held.generation,
                    v,
                    1_000.0,
                    key,
                )
                .map(drop)
            }),
        ),
        (
            "owner",
            Box::new(|s, v| s.claim_batch(v, K, 5, 1_000).map(drop)),
        ),
        (
            "owner",
            Box::new(|s, v| s.claim("w-1", v, K, 1_000).map(drop)),
        ),
    ]
}

fn event(event_type: &str, source: Option<&str>, id: Option<&str>) -> NewEvent {
    NewEvent {
        event_type: event_type.into(),
        source: source.map(Into::into),
        external_id: id.map(Into::into),
        payload: serde_json::json!({}),
    }
}

fn authority(instance: &str, build: &str) -> Authority {
    Authority {
        instance_id: instance.into(),
        compat: K.into(),
        build: build.into(),
        config: "{}".into(),
        started_at: 0,
        heartbeat_at: 0,
        stopped_at: None,
        host: "h".into(),
        pid: 1,
        published: leasehold::model::Published::default(),
    }
}

/// A fresh store with the reminder workflow deployed (so a start can get past the lookup)
/// and a lease held (so a handoff can).
fn fresh() -> Store {
    let store = url::open("memory", OpenMode::ReadWrite).unwrap();
    let (_, reminder) = leasehold::workflow::SHIPPED_DEFINITIONS
        .iter()
        .find(|(name, _)| name.contains("reminder"))
        .expect("the reminder definition ships");
    store
        .deploy_workflow(reminder, &Catalog::demo())
        .unwrap()
        .unwrap();
    store
        .acquire("r-held", "a-1", 60_000.0, Keyed { key: None })
        .unwrap();
    store
}

#[test]
fn every_library_verb_refuses_hostile_ids_and_writes_nothing() {
    for (field, verb) in verbs() {
        for (what, value) in hostile() {
            // An event without a source or id is "unidentified" (recorded, never deduped);
            // an authority's build label may be blank. Those are meanings, not bad ids.
            if value.is_empty() && matches!(field, "event source" | "event id" | "build") {
                continue;
            }
            let store = fresh();
            let before = store.revision().unwrap();
            let err = match verb(&store, &value) {
                Ok(()) => panic!("{field} with {what} was accepted"),
                Err(e) => e,
            };
            let text = err.to_string();
            assert_eq!(err.code(), "INVALID", "{field} with {what}: {text}");
            assert!(
                text.starts_with(&format!("INVALID: {field}: ")),
                "{field} with {what} names the field: {text}"
            );
            assert!(
                !text.contains(['\n', '\u{1b}', '\u{202e}']) && text.len() < 200,
                "one short clean line: {text:?}"
            );
            assert_eq!(
                store.revision().unwrap(),
                before,
                "{field} with {what} wrote"
            );
        }
        // A plain id gets past the check (it may still be unknown).
        let store = fresh();
        let plain = verb(&store, "plain-id.1");
        assert!(
            plain
                .as_ref()
                .err()
                .is_none_or(|e| !e.to_string().starts_with(&format!("INVALID: {field}:"))),
            "{field}: a plain id is accepted: {plain:?}"
        );
    }
}
