//! What an authority says: log lines that name each item and generation, as the store
//! holds them; final counters that count a planted fence and a planted lease loss (they
//! match the store's own history); a handler's panic, with its message; and hostile values
//! written escaped in both formats.
//!
//! Every test here runs every authority call under its own subscriber. `tracing` caches
//! per call site whether anyone listens, and a site first reached on a thread with no
//! subscriber while a single one exists elsewhere is cached as silent — so tests that log
//! nothing (`tests/runtime.rs`) live in another binary.

#[path = "support/mod.rs"]
mod support;

use std::sync::{Arc, Mutex};

use leasehold::Store;
use leasehold::authority::workload::{self, EFFECT_HANDLERS};
use leasehold::authority::{Finished, RunOptions, Workload, run_authority_with};
use leasehold::cli::log::{LogFormat, dispatch};
use leasehold::clock::ManualClock;
use leasehold::ids::SeededIds;
use leasehold::model::event::NewEvent;
use leasehold::model::work::NewWork;
use leasehold::model::{WorkItem, WorkState};
use leasehold::store::Backend;
use leasehold::store::memory::MemoryBackend;
use serde_json::json;

use support::wait::{wait_until_async, within};

use support::runtime::{
    RUNNING, T0, compat, config, panicking_parsers, store, two_short_lease_cores, work_in,
};

/// The runtime's lines for a drained store: every claim and completion names its item, its
/// generation and its handler as the store holds them; the start line names the instance,
/// build and store; the last line's counters are the ones the runtime returns.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claims_and_completions_are_logged_with_item_and_generation() {
    let clock = ManualClock::new(T0);
    let s = store(&clock);
    let effects: Vec<NewWork> = (0..30)
        .map(|i| {
            NewWork::effect(
                format!("e{i:03}"),
                EFFECT_HANDLERS[i % EFFECT_HANDLERS.len()],
                json!({ "n": i }).to_string(),
            )
        })
        .collect();
    s.enqueue_batch(effects, &compat()).expect("enqueues");
    s.create_subscription(
        "orders",
        "order-placed",
        workload::CURSOR_HANDLER,
        &support::key(workload::CURSOR_HANDLER),
    )
    .expect("subscribes");
    for i in 0..5 {
        let event = NewEvent {
            event_type: "order-placed".into(),
            source: Some("shop".into()),
            external_id: Some(format!("o{i}")),
            payload: json!({ "i": i }),
        };
        s.ingest(&event).expect("ingests");
    }
    let running = Running::start(&s, &clock, "solo", LogFormat::Json);
    wait_until_async("the store to drain", within(RUNNING), || {
        work_in(&s, WorkState::Succeeded).len() == 30
            && s.subscription("orders")
                .ok()
                .flatten()
                .is_some_and(|sub| sub.sequence == 5)
    })
    .await;
    let (said, stats) = running.stop().await;
    // The authority's own log: every claim and completion names its item and generation,
    // as the store holds them, and the last line's counters are the returned ones.
    let said = said.json();
    let of = |message: &str| -> Vec<&serde_json::Value> {
        said.iter().filter(|l| l["message"] == message).collect()
    };
    assert_eq!(of("claimed").len() as u64, stats.claims, "{said:#?}");
    let completed = of("completed");
    assert_eq!(completed.len(), 30);
    for line in &completed {
        let id = line["item"].as_str().expect("an item id");
        let item = s.work(id).expect("reads").expect("the logged item exists");
        assert_eq!(item.state, WorkState::Succeeded);
        assert_eq!(line["generation"], item.generation, "{line}");
        assert_eq!(line["handler"], item.handler.as_str(), "{line}");
        assert_eq!(line["instance"], "solo");
    }
    // The cursor: claimed once, advanced under that one generation to the journal's end.
    let advanced = of("cursor-advanced");
    assert!(!advanced.is_empty(), "{said:#?}");
    assert!(
        advanced
            .iter()
            .all(|l| l["item"] == "cursor:orders" && l["generation"] == 1)
    );
    assert_eq!(advanced.last().expect("one")["to"], 5);
    assert_eq!(
        advanced
            .iter()
            .map(|l| l["delivered"].as_u64().expect("n"))
            .sum::<u64>(),
        5
    );
    let started = of("started");
    assert_eq!(started[0]["build"], "v1");
    assert_eq!(started[0]["store"], s.describe().as_str());
    let stopped = of("stopped");
    assert_eq!(stopped.len(), 1);
    assert_eq!(stopped[0]["claims"], stats.claims);
    assert_eq!(stopped[0]["completions"], stats.completions);
    assert_eq!(stopped[0]["fencedWritesRefused"], 0);
    assert_eq!(stopped[0]["leasesLost"], 0);
}

/// A claim that lapsed with its budget spent is ended as a dead letter by the authority
/// that takes it over: that authority says so in one line naming the item, the generation
/// the dead letter was written under and its handler, as the store holds them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dead_letter_decided_at_takeover_is_logged() {
    let clock = ManualClock::new(T0);
    let s = store(&clock);
    let handler = EFFECT_HANDLERS[0];
    let poison = NewWork {
        max_attempts: 1,
        ..NewWork::effect("poison", handler, "{}")
    };
    s.enqueue(poison, &compat()).expect("enqueues");
    s.claim("poison", "gone", support::key(handler), 1_000)
        .expect("claimed by an owner that dies");
    clock.advance(3_600_000);
    let running = Running::start(&s, &clock, "heir", LogFormat::Json);
    wait_until_async("the lapse to end as a dead letter", within(RUNNING), || {
        s.work("poison")
            .ok()
            .flatten()
            .is_some_and(|w| w.is_dead_letter())
    })
    .await;
    let (said, _) = running.stop().await;
    let item = s.work("poison").expect("reads").expect("the item");
    let said = said.json();
    let dead: Vec<_> = said
        .iter()
        .filter(|l| l["message"] == "dead-letter")
        .collect();
    assert_eq!(dead.len(), 1, "{said:#?}");
    assert_eq!(dead[0]["item"], "poison");
    assert_eq!(dead[0]["instance"], "heir");
    assert_eq!(dead[0]["generation"], item.generation, "{}", dead[0]);
    assert_eq!(dead[0]["handler"], handler);
    assert_eq!(
        dead[0]["code"],
        item.last_failure.as_ref().expect("a failure").code.as_str()
    );
}

/// A handler's panic, in a blocking handler (on the blocking pool) and in an async one (in
/// its task), is said in one line naming the item, the generation, the handler and the
/// panic's message; the outcome line after it names the failure's code.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_handlers_panic_is_logged_with_its_message() {
    let clock = ManualClock::new(T0);
    let s = store(&clock);
    let items = vec![
        NewWork::effect("b", "parse", "\"twelve\""),
        NewWork::effect("a", "parse-async", "\"twelve\""),
    ];
    s.enqueue_batch(items, &compat()).expect("enqueues");
    let running = Running::start_running(&s, &clock, "solo", LogFormat::Json, panicking_parsers());
    // The manual clock stands still, so each retry stays due later.
    wait_until_async("both failures recorded", within(RUNNING), || {
        work_in(&s, WorkState::Retry).len() == 2
    })
    .await;
    let (said, _) = running.stop().await;
    let said = said.json();
    let lines = |message: &str, id: &str| -> Vec<&serde_json::Value> {
        said.iter()
            .filter(|l| l["message"] == message && l["item"] == id)
            .collect()
    };
    for (id, handler, panic) in [
        ("b", "parse", "unparsable payload: \"twelve\""),
        (
            "a",
            "parse-async",
            "a number: ParseIntError { kind: InvalidDigit }",
        ),
    ] {
        let panicked = lines("handler-panicked", id);
        assert_eq!(panicked.len(), 1, "{said:#?}");
        assert_eq!(
            (
                &panicked[0]["instance"],
                &panicked[0]["generation"],
                &panicked[0]["handler"],
                &panicked[0]["panic"],
            ),
            (&json!("solo"), &json!(1), &json!(handler), &json!(panic)),
            "{}",
            panicked[0]
        );
        let retried = lines("retry-scheduled", id);
        assert_eq!(retried.len(), 1, "{said:#?}");
        assert_eq!(retried[0]["code"], "HANDLER_PANICKED", "{}", retried[0]);
    }
}

/// An authority running the `fast` demo set over a store, its lines kept in memory.
struct Running {
    said: LogBuffer,
    stop: tokio::sync::oneshot::Sender<()>,
    runtime: tokio::task::JoinHandle<leasehold::Result<leasehold::authority::Stats>>,
}

impl Running {
    /// Starts authority `id` over `s`, logging in `format` stamped with `clock`.
    fn start(s: &Store, clock: &ManualClock, id: &str, format: LogFormat) -> Self {
        let fast = workload::named("fast", 1).expect("fast");
        Self::start_running(s, clock, id, format, fast)
    }

    /// [`Self::start`] running `handlers`.
    fn start_running(
        s: &Store,
        clock: &ManualClock,
        id: &str,
        format: LogFormat,
        handlers: Workload,
    ) -> Self {
        let said = LogBuffer::default();
        let (stop, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let runtime = tokio::spawn(run_authority_with(
            s.clone(),
            config(id),
            handlers,
            RunOptions {
                log: Some(said.dispatch(format, clock)),
                ..RunOptions::default()
            },
            async move {
                let _ = stop_rx.await;
            },
        ));
        Self {
            said,
            stop,
            runtime,
        }
    }

    /// Stops it: what it said, and the counters it returned.
    async fn stop(self) -> (LogBuffer, leasehold::authority::Stats) {
        let _ = self.stop.send(());
        let stats = self.runtime.await.expect("joins").expect("runs");
        (self.said, stats)
    }
}

/// Log lines an authority wrote, kept in memory.
#[derive(Clone, Default)]
struct LogBuffer(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for LogBuffer {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().expect("lock").extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl LogBuffer {
    /// A subscriber writing `format` lines here, stamped with `clock`.
    fn dispatch(&self, format: LogFormat, clock: &ManualClock) -> tracing::Dispatch {
        let sink = self.clone();
        dispatch(format, Arc::new(clock.clone()), move || sink.clone())
    }

    fn text(&self) -> String {
        String::from_utf8(self.0.lock().expect("lock").clone()).expect("utf-8")
    }

    /// Every line, parsed as one JSON object.
    fn json(&self) -> Vec<serde_json::Value> {
        self.text()
            .lines()
            .map(|l| serde_json::from_str(l).expect("one JSON object per line"))
            .collect()
    }
}

/// The bug this guards: a stale owner whose successor had already finished the item was
/// answered `already-terminal` and counted as neither fenced nor lost, so the final line
/// said `fencedWritesRefused=0 leasesLost=0` after both had happened. Three claims are
/// planted: one finished by the successor, one still held by it, one found lost at renewal.
#[test]
fn the_final_counters_count_a_planted_fence_and_a_planted_lease_loss() {
    let clock = ManualClock::new(T0);
    let s = store(&clock);
    for id in ["e1", "e2", "e3"] {
        s.enqueue(NewWork::effect(id, "send-email", "{}"), &compat())
            .expect("enqueues");
    }
    let (a, b) = two_short_lease_cores(&s);
    let log = LogBuffer::default();
    let logs = log.dispatch(LogFormat::Json, &clock);

    tracing::dispatcher::with_default(&logs, || {
        let mut stalled: Vec<_> = a
            .poll()
            .expect("polls")
            .iter()
            .map(|job| (job.resource(), a.execute(job)))
            .collect();
        stalled.sort_by(|x, y| x.0.cmp(&y.0));
        assert_eq!(stalled.len(), 3);
        clock.advance(1_500);
        let taken = b.poll().expect("polls");
        assert_eq!(taken.len(), 3);
        let e1 = taken.iter().find(|j| j.resource() == "e1").expect("e1");
        assert_eq!(b.finish(b.execute(e1)), Finished::Completed);

        let mut stalled = stalled.into_iter().map(|(_, executed)| executed);
        let (e1, e2, e3) = (
            stalled.next().expect("e1"),
            stalled.next().expect("e2"),
            stalled.next().expect("e3"),
        );
        // e1: the successor finished it; e2: the successor still holds it.
        assert_eq!(a.finish(e1), Finished::Refused("already-terminal".into()));
        assert_eq!(a.finish(e2), Finished::Refused("WORK_FENCED".into()));
        // e3: the renewal finds it lost, and its outcome is dropped unwritten.
        assert_eq!(a.renew().lost, 1);
        assert_eq!(a.finish(e3), Finished::Abandoned("lost"));
    });
    let stats = a.shutdown().expect("stops");
    assert_eq!(
        (stats.fenced_writes_refused, stats.leases_lost),
        (2, 3),
        "{stats:?}"
    );
    assert!(stats.other_refusals.is_empty(), "{stats:?}");

    // The store's own history agrees: a's refused outcome writes, and a's claims that a
    // newer generation replaced.
    let (grants, writes) = s.ownership_history(None, 0, 10_000).expect("history");
    let refused_outcomes = writes
        .iter()
        .filter(|w| w.owner_id == "a" && !w.accepted && w.verb != "renew")
        .count() as u64;
    assert_eq!(stats.fenced_writes_refused, refused_outcomes);
    let lost = grants
        .iter()
        .filter(|g| g.owner_id == "a")
        .filter(|g| {
            grants
                .iter()
                .any(|n| n.resource_id == g.resource_id && n.generation > g.generation)
        })
        .count() as u64;
    assert_eq!(stats.leases_lost, lost);

    // Each line names its item and the generation it was held under.
    let said = log.json();
    let lines = |message: &str| -> Vec<(String, u64)> {
        said.iter()
            .filter(|l| l["message"] == message && l["instance"] == "a")
            .map(|l| {
                (
                    l["item"].as_str().expect("item").to_owned(),
                    l["generation"].as_u64().expect("generation"),
                )
            })
            .collect()
    };
    assert_eq!(
        lines("claimed"),
        [("e1".into(), 1), ("e2".into(), 1), ("e3".into(), 1)]
    );
    assert_eq!(lines("fenced"), [("e1".into(), 1), ("e2".into(), 1)]);
    assert_eq!(lines("lease-lost"), [("e3".into(), 1)]);
    assert!(
        said.iter()
            .filter(|l| l["message"] == "fenced" || l["message"] == "lease-lost")
            .all(|l| l["currentGeneration"] == 2 && l["handler"] == "send-email"),
        "{said:#?}"
    );
    let b_completed: Vec<_> = said
        .iter()
        .filter(|l| l["message"] == "completed")
        .collect();
    assert_eq!(b_completed.len(), 1);
    assert_eq!(
        (
            &b_completed[0]["instance"],
            &b_completed[0]["item"],
            &b_completed[0]["generation"]
        ),
        (&json!("b"), &json!("e1"), &json!(2))
    );
}

/// A hostile handler name (stored by whoever enqueued the work) reaches the log through the
/// real runtime: escaped in the human format, escaped by construction in JSON, and never a
/// raw escape sequence on the terminal in either.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hostile_value_is_logged_escaped_in_both_formats() {
    const HOSTILE: &str = "mail\u{1b}]0;owned\u{7}\u{1b}[2J\u{202e}";
    for format in [LogFormat::Human, LogFormat::Json] {
        let clock = ManualClock::new(T0);
        let backend = MemoryBackend::new();
        let s = Store::new(
            Arc::new(backend.clone()),
            Arc::new(clock.clone()),
            Arc::new(SeededIds::new(11)),
        );
        // The enqueue verb refuses such ids and names now; a store written by an older build
        // may still hold them, so the item is planted below the validator — under a key
        // this authority runs, so that it claims the item and finds no handler of its name.
        let key = support::key("send-email");
        let planted = WorkItem::new(NewWork::effect("e\u{9b}1", HOSTILE, "{}"), &key, T0);
        backend
            .write(&mut |tx| {
                tx.commit_revision()?;
                tx.insert_work(&planted)?;
                tx.adjust_counter(&format!("work|effect|pending|{key}"), 1)
            })
            .expect("plants");
        let running = Running::start(&s, &clock, "solo", format);
        // No handler of that name here: the item is handed back, pending, and never failed.
        wait_until_async("the unknown handler's hand-back", within(RUNNING), || {
            s.work("e\u{9b}1")
                .expect("reads")
                .is_some_and(|w| w.state == WorkState::Pending && w.generation == 1)
        })
        .await;
        let (log, _) = running.stop().await;

        let text = log.text();
        assert!(
            !text
                .chars()
                .any(|c| c != '\n' && (c.is_control() || c == '\u{202e}')),
            "{format:?}: a raw control or bidi character reached the log: {text:?}"
        );
        match format {
            LogFormat::Human => {
                let escaped = "handler=mail\\x1b]0;owned\\x07\\x1b[2J\\u{202e}";
                for message in [" claimed ", " no-handler "] {
                    let line = text
                        .lines()
                        .find(|l| l.contains(message))
                        .unwrap_or_else(|| panic!("no{message}line in {text}"));
                    assert!(line.contains(escaped), "{line}");
                    assert!(line.contains("item=e\\u{9b}1"), "{line}");
                    assert!(line.contains("generation=1"), "{line}");
                }
            }
            _ => {
                let handed_back = log
                    .json()
                    .into_iter()
                    .find(|l| l["message"] == "no-handler")
                    .expect("a no-handler line");
                assert_eq!(handed_back["handler"], HOSTILE);
                assert_eq!(handed_back["item"], "e\u{9b}1");
                assert_eq!(handed_back["generation"], 1);
            }
        }
    }
}
