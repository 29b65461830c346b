//! External events: dedup on `(source, externalEventId)` and the durable journal.

use serde::{Deserialize, Serialize};

use crate::clock::Millis;

/// What ingestion made of one delivery.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DedupOutcome {
    /// First time this `(source, externalEventId)` was seen: one semantic event.
    Accepted,
    /// Same id, byte-equal canonical payload: nothing dispatched.
    Duplicate,
    /// Same id, different payload: refused, never a silent second event.
    #[serde(rename = "EVENT_ID_CONFLICT")]
    Conflict,
    /// No stable id: dispatched, at-least-once, dedup impossible.
    Unidentified,
}

impl DedupOutcome {
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Accepted => "accepted",
            Self::Duplicate => "duplicate",
            Self::Conflict => "EVENT_ID_CONFLICT",
            Self::Unidentified => "unidentified",
        }
    }

    #[must_use]
    pub fn parse(s: &str) -> Option<Self> {
        [
            Self::Accepted,
            Self::Duplicate,
            Self::Conflict,
            Self::Unidentified,
        ]
        .into_iter()
        .find(|o| o.as_str() == s)
    }
}

/// An event in the durable journal. `seq` is store-global and strictly increasing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct JournalEvent {
    pub seq: i64,
    pub event_type: String,
    pub source: Option<String>,
    pub external_id: Option<String>,
    /// Canonical JSON text.
    pub payload: String,
    /// Hex SHA-256 of the canonical payload.
    pub fingerprint: String,
    pub at: Millis,
}

/// One ingestion attempt and its outcome (kept for the dashboard's events view).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Ingestion {
    pub id: i64,
    pub at: Millis,
    pub event_type: String,
    pub source: Option<String>,
    pub external_id: Option<String>,
    pub outcome: DedupOutcome,
    /// The journal seq for accepted / unidentified events.
    pub seq: Option<i64>,
}

/// The durable dedup record for one `(source, externalEventId)`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DedupRecord {
    pub source: String,
    pub external_id: String,
    pub fingerprint: String,
    pub seq: i64,
    pub first_seen_at: Millis,
}

/// What a caller hands to ingestion.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewEvent {
    pub event_type: String,
    pub source: Option<String>,
    pub external_id: Option<String>,
    pub payload: serde_json::Value,
}
