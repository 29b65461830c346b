//! External-event dedup over a canonical-JSON SHA-256 payload fingerprint.

use sha2::{Digest, Sha256};

use crate::model::event::{DedupOutcome, DedupRecord};

pub use crate::canonical::canonical_json;

/// Hex SHA-256 of the canonical payload.
#[must_use]
pub fn fingerprint(canonical: &str) -> String {
    hex::encode(Sha256::digest(canonical.as_bytes()))
}

/// Classifies a delivery against the durable record for its id (if it has one).
#[must_use]
pub fn classify(
    has_stable_id: bool,
    existing: Option<&DedupRecord>,
    fingerprint: &str,
) -> DedupOutcome {
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
        let record = DedupRecord {
            source: "s".into(),
            external_id: "1".into(),
            fingerprint: "f".into(),
            seq: 1,
            first_seen_at: 0,
        };
        assert_eq!(classify(false, None, "f"), DedupOutcome::Unidentified);
        assert_eq!(classify(true, None, "f"), DedupOutcome::Accepted);
        assert_eq!(classify(true, Some(&record), "f"), DedupOutcome::Duplicate);
        assert_eq!(classify(true, Some(&record), "g"), DedupOutcome::Conflict);
    }
}
