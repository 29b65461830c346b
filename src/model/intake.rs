//! The intake: enqueue requests an application writes inside its own database transaction,
//! with a plain `INSERT` that takes none of the store's locks
//! (docs/ARCHITECTURE.md#intake). A request exists exactly when the application's
//! transaction commits; the next claim or enqueue of any authority moves it into a work
//! item under the ordinary enqueue rules, or keeps it refused with the reason.

use serde::Serialize;

use crate::clock::Millis;

/// One committed request, as the application wrote it. The values are checked only when it
/// is moved (an application in any language wrote them), so they are kept raw here.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct IntakeRow {
    /// Insertion order: requests are moved oldest first.
    pub seq: i64,
    /// The work item's id.
    pub id: String,
    pub handler: String,
    /// The handler's semantic version the producer means to run; the item is stamped with
    /// `handler_key(handler, version)`. Exactly one of this and [`Self::compat`] is set.
    pub handler_version: Option<String>,
    /// A compatibility digest the producer already holds, stamped as it is.
    pub compat: Option<String>,
    pub payload: String,
    pub logical_effect_id: Option<String>,
    pub idempotency_key: Option<String>,
    pub max_attempts: i64,
    /// Not claimable before this instant (epoch milliseconds); none: once moved.
    pub not_before: Option<Millis>,
    pub priority: i64,
}

/// How many intake requests wait to be moved, and how many the move refused (kept with
/// their reason for a person).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct IntakeCounts {
    pub waiting: u64,
    pub refused: u64,
}

impl IntakeCounts {
    /// `3 waiting, 1 refused`, or `none`.
    #[must_use]
    pub fn line(&self) -> String {
        if *self == Self::default() {
            "none".into()
        } else {
            format!("{} waiting, {} refused", self.waiting, self.refused)
        }
    }
}
