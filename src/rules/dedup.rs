//! External-event dedup over a canonical-JSON SHA-256 payload fingerprint.

use sha2::{Digest, Sha256};

use crate::model::event::{DedupOutcome, DedupRecord};

/// Canonical JSON: object keys sorted, no insignificant whitespace. Two payloads that mean
/// the same thing produce the same bytes whatever order their keys arrived in.
#[must_use]
pub fn canonical_json(value: &serde_json::Value) -> String {
    let mut out = String::new();
    write_canonical(value, &mut out);
    out
}

fn write_canonical(value: &serde_json::Value, out: &mut String) {
    match value {
        serde_json::Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&serde_json::Value::String(key.clone()).to_string());
                out.push(':');
                write_canonical(&map[key], out);
            }
            out.push('}');
        }
        serde_json::Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}

/// Hex SHA-256 of the canonical payload.
#[must_use]
pub fn fingerprint(canonical: &str) -> String {
    hex::encode(Sha256::digest(canonical.as_bytes()))
}

/// Classifies a delivery against the durable record for its id (if it has one).
#[must_use]
pub fn classify(has_stable_id: bool, existing: Option<&DedupRecord>, fingerprint: &str) -> DedupOutcome {
    match (has_stable_id, existing) {
        (false, _) => DedupOutcome::Unidentified,
        (true, None) => DedupOutcome::Accepted,
        (true, Some(record)) if record.fingerprint == fingerprint => DedupOutcome::Duplicate,
        (true, Some(_)) => DedupOutcome::Conflict,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn canonical_form_ignores_key_order() {
        let a = canonical_json(&json!({"b": 1, "a": {"y": [1, 2], "x": "s"}}));
        let b = canonical_json(&json!({"a": {"x": "s", "y": [1, 2]}, "b": 1}));
        assert_eq!(a, b);
        assert_eq!(a, r#"{"a":{"x":"s","y":[1,2]},"b":1}"#);
    }

    #[test]
    fn every_dedup_outcome() {
        let record = DedupRecord { source: "s".into(), external_id: "1".into(), fingerprint: "f".into(), seq: 1, first_seen_at: 0 };
        assert_eq!(classify(false, None, "f"), DedupOutcome::Unidentified);
        assert_eq!(classify(true, None, "f"), DedupOutcome::Accepted);
        assert_eq!(classify(true, Some(&record), "f"), DedupOutcome::Duplicate);
        assert_eq!(classify(true, Some(&record), "g"), DedupOutcome::Conflict);
    }
}
