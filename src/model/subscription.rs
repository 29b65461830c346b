//! Subscription delivery cursors: a per-subscription monotone `sequence`.

use serde::{Deserialize, Serialize};

use crate::clock::Millis;

/// A subscription's durable cursor. Its ownership is the claim on the cursor work item
/// `cursor:<subscriptionId>`; the cursor write is fenced on that item's generation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Subscription {
    pub subscription_id: String,
    /// Event type delivered to this subscription.
    pub event_type: String,
    /// Last journal seq delivered (monotone).
    pub sequence: u64,
    /// Generation of the claim that last moved the cursor.
    pub generation: u64,
    pub updated_at: Millis,
    pub updated_by: Option<String>,
}

impl Subscription {
    /// The id of the work item that carries this cursor's ownership.
    #[must_use]
    pub fn work_id(subscription_id: &str) -> String {
        format!("cursor:{subscription_id}")
    }
}
