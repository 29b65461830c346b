//! The invariant checker: every invariant planted once in a memory store's durable history
//! (through the provider seam, as a broken provider or a buggy authority would leave it)
//! must be reported with its code and ids; a realistic mixed workload through the public
//! store API must report nothing. One module per invariant or concern; the fixture that
//! plants histories is here.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "check/builds_and_cursors.rs"]
mod builds_and_cursors;
#[path = "check/effects.rs"]
mod effects;
#[path = "check/firings_and_events.rs"]
mod firings_and_events;
#[path = "check/generations.rs"]
mod generations;
#[path = "check/range.rs"]
mod range;
#[path = "check/rendering.rs"]
mod rendering;
#[path = "check/stranded_instances.rs"]
mod stranded_instances;
#[path = "check/stranded_work.rs"]
mod stranded_work;
#[path = "check/workflows.rs"]
mod workflows;
#[path = "check/workload.rs"]
mod workload;

use std::sync::Arc;

use leasehold::check::{CheckOptions, Report, check, render_text};
use leasehold::clock::{Clock, ManualClock, Millis};
use leasehold::ids::SeededIds;
use leasehold::model::work::NewWork;
use leasehold::model::{Authority, Grant, WorkItem, WorkKind, WriteRecord};
use leasehold::store::memory::MemoryBackend;
use leasehold::store::sqlite::SqliteBackend;
use leasehold::store::url::OpenMode;
use leasehold::store::{Backend, Store, Tx};
use serde_json::{Value, json};

const T0: Millis = 1_700_000_000_000;
/// The key of the `noop` handler's work at 1.0.0, which the authorities registered here
/// run ([`authority`]); [`k2`] is 2.0.0's, another major version.
fn k1() -> &'static str {
    static KEY: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| key_at("1.0.0"));
    &KEY
}

fn k2() -> &'static str {
    static KEY: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| key_at("2.0.0"));
    &KEY
}

fn key_at(version: &str) -> String {
    leasehold::model::handler_key(
        "noop",
        &leasehold::model::HandlerVersion::parse(version).expect("a version"),
    )
}

const V1: &str = "1.0.0";
const LEASE: Millis = 30_000;

struct Fixture {
    backend: Arc<dyn Backend>,
    store: Store,
    clock: ManualClock,
    _dir: Option<tempfile::TempDir>,
}

fn over(backend: Arc<dyn Backend>, dir: Option<tempfile::TempDir>) -> Fixture {
    let clock = ManualClock::new(T0);
    let store = Store::new(
        backend.clone(),
        Arc::new(clock.clone()),
        Arc::new(SeededIds::new(7)),
    );
    Fixture {
        backend,
        store,
        clock,
        _dir: dir,
    }
}

fn fixture() -> Fixture {
    over(Arc::new(MemoryBackend::new()), None)
}

fn sqlite_fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let backend = SqliteBackend::open(dir.path().join("store.db"), OpenMode::ReadWrite).unwrap();
    over(Arc::new(backend), Some(dir))
}

impl Fixture {
    /// Runs `f` in its own write transaction (so its own revision) and returns the revision.
    fn plant(&self, mut f: impl FnMut(&mut dyn Tx, u64) -> leasehold::Result<()>) -> u64 {
        let mut revision = 0;
        self.backend
            .write(&mut |tx| {
                let before = tx.revision()?;
                revision = tx.commit_revision()?;
                f(tx, revision)?;
                // Chained like every commit, so `check` reads a history with its links.
                let nonces = leasehold::ids::SeededIds::new(revision);
                leasehold::store::chain::extend(tx, before, &nonces).map(drop)
            })
            .expect("plant");
        revision
    }

    fn grant_with(
        &self,
        resource: &str,
        generation: u64,
        owner: &str,
        owner_compat: &str,
        item_compat: &str,
    ) -> u64 {
        self.plant(|tx, revision| {
            tx.add_grant(Grant {
                revision,
                resource_id: resource.into(),
                generation,
                owner_id: owner.into(),
                how: leasehold::model::GrantKind::Claim,
                owner_compat: Some(owner_compat.into()),
                item_compat: Some(item_compat.into()),
                at: T0,
                took_over: None,
            })
        })
    }

    fn grant(&self, resource: &str, generation: u64, owner: &str) -> u64 {
        self.grant_with(resource, generation, owner, k1(), k1())
    }

    #[allow(clippy::needless_pass_by_value)]
    fn write(
        &self,
        resource: &str,
        generation: u64,
        owner: &str,
        verb: &str,
        accepted: bool,
        detail: Value,
    ) -> u64 {
        self.plant(|tx, revision| {
            tx.add_write(WriteRecord {
                revision,
                resource_id: resource.into(),
                generation,
                owner_id: owner.into(),
                verb: leasehold::model::WriteVerb::parse(verb).expect("a write verb"),
                accepted,
                refusal: (!accepted).then(|| "WORK_FENCED".into()),
                detail: detail.to_string(),
                at: T0,
                holder: None,
            })
        })
    }

    /// An accepted `complete` of an effect whose logical id is its id.
    fn complete(&self, resource: &str, generation: u64, owner: &str) -> u64 {
        let detail =
            json!({"logicalEffectId": resource, "idempotencyKey": resource, "state": "succeeded"});
        self.write(resource, generation, owner, "complete", true, detail)
    }

    fn item(&self, id: &str, kind: WorkKind) {
        let spec = NewWork {
            kind,
            ..NewWork::effect(id, "noop", "{}")
        };
        self.plant(|tx, _| {
            tx.insert_work(&WorkItem::new(spec.clone(), k1(), T0))
                .map(|_| ())
        });
    }

    fn run_with(&self, page_size: usize) -> Report {
        let options = CheckOptions {
            page_size,
            ..CheckOptions::at(self.clock.now())
        };
        check(&self.store, &options).expect("check")
    }

    fn run(&self) -> Report {
        self.run_with(10_000)
    }
}

fn codes_of(report: &Report) -> Vec<&'static str> {
    report.violations.iter().map(|v| v.invariant).collect()
}

/// Asserts one violation with exactly this code and these ids.
#[track_caller]
fn assert_reported(report: &Report, code: &str, ids: &[&str]) {
    let found = report
        .of(code)
        .any(|v| v.ids.iter().map(String::as_str).eq(ids.iter().copied()));
    assert!(
        found,
        "expected {code} {ids:?}, got:\n{}",
        render_text(report)
    );
}

#[track_caller]
fn assert_codes(report: &Report, expected: &[&str]) {
    assert_eq!(codes_of(report), expected, "\n{}", render_text(report));
}

/// An authority that registers the `noop` handler at `version`.
fn authority(id: &str, version: &str, at: Millis) -> Authority {
    Authority {
        instance_id: id.into(),
        compat: "label".into(),
        build: "test".into(),
        config: format!(r#"{{"handlers":{{"noop":"{version}"}}}}"#),
        started_at: at,
        heartbeat_at: at,
        stopped_at: None,
        host: "localhost".into(),
        pid: 1,
        published: leasehold::model::Published::default(),
    }
}
