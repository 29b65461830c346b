//! The shared, provider-generic harness of the workflow tests: a store on memory, SQLite or
//! Postgres (a database of its own on the test server) with a manual clock and seeded ids, a catalog derived from a definition, deployment and
//! the logical-history view (`kind:stepId`) every assertion compares.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use leasehold::Store;
use leasehold::clock::ManualClock;
use leasehold::ids::SeededIds;
use leasehold::model::HistoryRecord;
use leasehold::store::memory::MemoryBackend;
use leasehold::store::postgres::PostgresBackend;
use leasehold::store::sqlite::SqliteBackend;
use leasehold::store::url::OpenMode;
use leasehold::workflow::Catalog;
use serde_json::Value;

/// Where every deterministic run starts (2023-11-14T22:13:20Z).
pub const T0: i64 = 1_700_000_000_000;

/// The store providers every case and fixture runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Provider {
    Memory,
    Sqlite,
    Postgres,
}

/// One store under test with the clock that drives it. The temporary directory (SQLite) or
/// database (Postgres) lives as long as the environment.
pub struct Env {
    pub store: Store,
    pub clock: ManualClock,
    _dir: Option<tempfile::TempDir>,
    _db: Option<crate::pg_server::Database>,
}

impl Env {
    pub fn new(provider: Provider) -> Self {
        Self::with_seed(provider, 7)
    }

    pub fn with_seed(provider: Provider, seed: u64) -> Self {
        let clock = ManualClock::new(T0);
        let ids = Arc::new(SeededIds::new(seed));
        match provider {
            Provider::Memory => Self {
                store: Store::new(Arc::new(MemoryBackend::new()), Arc::new(clock.clone()), ids),
                clock,
                _dir: None,
                _db: None,
            },
            Provider::Sqlite => {
                let dir = tempfile::tempdir().expect("temp dir");
                let backend = SqliteBackend::open(dir.path().join("store.db"), OpenMode::ReadWrite)
                    .expect("open sqlite store");
                Self {
                    store: Store::new(Arc::new(backend), Arc::new(clock.clone()), ids),
                    clock,
                    _dir: Some(dir),
                    _db: None,
                }
            }
            Provider::Postgres => {
                let db = crate::pg_server::database();
                let backend = PostgresBackend::open(db.url(), OpenMode::ReadWrite)
                    .expect("open postgres store");
                Self {
                    store: Store::new(Arc::new(backend), Arc::new(clock.clone()), ids),
                    clock,
                    _dir: None,
                    _db: Some(db),
                }
            }
        }
    }
}

/// Every action (at handler version "1") and event a definition names: the runtime of a
/// test registers exactly what the definition needs.
pub fn catalog_for(definition: &Value) -> Catalog {
    let mut actions = BTreeMap::new();
    let mut events = BTreeSet::new();
    for step in definition["steps"].as_array().into_iter().flatten() {
        match step["type"].as_str() {
            Some("action") => {
                if let Some(a) = step["action"].as_str() {
                    actions.insert(a.to_string(), "1".to_string());
                }
            }
            Some("wait-event") => {
                if let Some(e) = step["event"].as_str() {
                    events.insert(e.to_string());
                }
            }
            _ => {}
        }
    }
    Catalog {
        actions,
        events,
        accept_unknown: false,
    }
}

/// Deploys a definition (which must validate) and returns its workflow id.
pub fn deploy(store: &Store, definition: &Value) -> String {
    let text = definition.to_string();
    match store
        .deploy_workflow(&text, &catalog_for(definition))
        .expect("deploy: store failure")
    {
        Ok(row) => row.workflow_id,
        Err(diags) => panic!(
            "definition does not validate: {}",
            diags
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("; ")
        ),
    }
}

/// One history record as the fixtures spell it: `kind` or `kind:stepId`.
pub fn line(record: &HistoryRecord) -> String {
    match &record.step_id {
        Some(step) => format!("{}:{step}", record.kind),
        None => record.kind.clone(),
    }
}

/// The logical history of an instance, oldest first.
pub fn history(store: &Store, instance_id: &str) -> Vec<String> {
    store
        .workflow_history(instance_id)
        .expect("history")
        .iter()
        .map(line)
        .collect()
}

/// `{"k": v}` as a map, for start arguments.
pub fn args(value: Value) -> serde_json::Map<String, Value> {
    match value {
        Value::Object(m) => m,
        Value::Null => serde_json::Map::new(),
        other => panic!("start arguments must be an object, got {other}"),
    }
}
