//! Criterion benches of the pure hot paths (`cargo bench --bench hot_paths`): lease
//! acquire and the fence check on the memory store, a batch claimed and completed on the
//! memory store with no runtime around it (what its one mutex is held for), one workflow
//! step, the semantic fingerprint, and one dashboard frame drawn from a snapshot.
//! Whole-store throughput, with authorities, is `leasehold bench`, not here.

#![allow(clippy::unwrap_used)]

use std::hint::black_box;
use std::sync::Arc;

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use serde_json::{Map, json};

use leasehold::Store;
use leasehold::clock::ManualClock;
use leasehold::ids::SeededIds;
use leasehold::model::work::NewWork;
use leasehold::store::memory::MemoryBackend;
use leasehold::store::{Claim, Completion, Keyed};
use leasehold::tui::action::{Action, ViewId};
use leasehold::tui::app::AppOptions;
use leasehold::tui::harness::{Harness, render_app};
use leasehold::tui::theme::Theme;
use leasehold::workflow::Catalog;
use leasehold::workflow::def::parse_definition;
use leasehold::workflow::fingerprint::semantic_fingerprint;
use leasehold::workflow::machine::{self, Trigger};

/// The binary's allocator, so the store's figures here are the ones it runs with.
#[cfg(all(feature = "jemalloc", not(target_env = "msvc")))]
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

const ORDER: &str = include_str!("../workflows/order-fulfilment.json");

fn memory_store() -> Store {
    Store::new(
        Arc::new(MemoryBackend::new()),
        Arc::new(ManualClock::new(1_700_000_000_000)),
        Arc::new(SeededIds::new(7)),
    )
}

fn leases(c: &mut Criterion) {
    let store = memory_store();
    let mut n = 0u64;
    c.bench_function("lease acquire (memory)", |b| {
        b.iter(|| {
            n += 1;
            // A fresh resource each time, spread over owners to stay under the owner cap.
            store
                .acquire(
                    &format!("r{n}"),
                    &format!("a{}", n / 10),
                    30_000.0,
                    Keyed { key: None },
                )
                .unwrap()
        });
    });
    let lease = store
        .acquire("fenced", "a1", 30_000.0, Keyed { key: None })
        .unwrap();
    c.bench_function("fence check (memory)", |b| {
        b.iter(|| {
            store
                .check_ownership(black_box("fenced"), &lease.token, lease.generation)
                .unwrap();
        });
    });
}

/// One claim batch of 256 items and their fenced completion, as an authority's trip does
/// it, on a store holding a backlog (enqueued outside the measurement).
fn claim_and_complete(c: &mut Criterion) {
    const BATCH: u64 = 256;
    let store = memory_store();
    let mut next = 0u64;
    let mut enqueue = |n: u64| {
        let specs = (next..next + n)
            .map(|i| NewWork::effect(format!("bench-{i:09}"), "noop", "{}"))
            .collect();
        next += n;
        store.enqueue_batch(specs, "k").unwrap();
    };
    enqueue(20_000);
    let mut group = c.benchmark_group("memory store");
    group.throughput(Throughput::Elements(BATCH));
    group.bench_function("claim + complete 256 items", |b| {
        b.iter_batched(
            || enqueue(BATCH),
            |()| {
                let claims = store.claim_work("a1", "k", BATCH as usize, 30_000).unwrap();
                let done: Vec<Completion> = (claims.iter())
                    .map(|Claim { item, .. }| Completion {
                        id: item.id.clone(),
                        owner: "a1".into(),
                        generation: item.generation,
                        outcome: Ok(None),
                        retry: leasehold::rules::retry::Retry::default(),
                    })
                    .collect();
                black_box(store.complete_batch(&done).unwrap());
            },
            BatchSize::PerIteration,
        );
    });
    group.finish();
}

fn workflow_step(c: &mut Criterion) {
    let def = parse_definition(ORDER).unwrap();
    let mut inputs = Map::new();
    inputs.insert("orderId".into(), json!("o-1"));
    inputs.insert("amount".into(), json!(42));
    let started = machine::start(&def, "wf-1", inputs, "bench", 0, 0).unwrap();
    c.bench_function("workflow step: action succeeded", |b| {
        b.iter(|| {
            machine::apply(
                &def,
                black_box(&started.0),
                Trigger::ActionSucceeded {
                    output: json!({"reservationId": "r-1"}),
                },
                10,
                0,
            )
            .unwrap()
        });
    });
}

fn fingerprint(c: &mut Criterion) {
    let def = parse_definition(ORDER).unwrap();
    let catalog = Catalog::demo();
    c.bench_function("semantic fingerprint", |b| {
        b.iter(|| semantic_fingerprint(black_box(&def), &catalog));
    });
}

fn dashboard_frame(c: &mut Criterion) {
    let store = memory_store();
    let specs = (0..500)
        .map(|i| leasehold::model::work::NewWork::effect(format!("e{i:04}"), "send-email", "{}"))
        .collect();
    store.enqueue_batch(specs, "compat").unwrap();
    let mut harness = Harness::new(
        store,
        AppOptions::default(),
        Theme::builtin("dark").unwrap(),
        None,
        160,
        48,
    );
    for view in [ViewId::Overview, ViewId::Work] {
        harness.dispatch(Action::SwitchView(view));
        c.bench_function(&format!("dashboard frame 160x48: {}", view.name()), |b| {
            b.iter(|| render_app(black_box(&harness.app), 160, 48));
        });
    }
}

criterion_group!(
    benches,
    leases,
    claim_and_complete,
    workflow_step,
    fingerprint,
    dashboard_frame
);
criterion_main!(benches);
