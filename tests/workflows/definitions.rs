//! What every workflow test does with a definition: the catalog it needs, deploying it,
//! start arguments, and the logical-history view (`kind:stepId`) every assertion compares.
//! The stores themselves come from the shared provider harness (`tests/support`).

use std::collections::{BTreeMap, BTreeSet};

use leasehold::Store;
use leasehold::model::HistoryRecord;
use leasehold::workflow::Catalog;
use serde_json::Value;

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
        ..Catalog::default()
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
