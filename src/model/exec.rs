//! The execution log's record: one line per physical attempt an authority starts or ends,
//! written by the runtime (`--exec-log FILE`) and read by the checker, which lists the
//! attempts a killed process left without an end.

use serde::{Deserialize, Serialize};

use crate::clock::Millis;

/// One line of the execution log: one physical attempt starting ([`ExecRecord::STARTED`]),
/// or how it ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExecRecord {
    pub work_id: String,
    pub logical_effect_id: String,
    pub idempotency_key: String,
    pub attempt: u32,
    pub owner_id: String,
    pub generation: u64,
    /// `started` before the handler runs; then `succeeded`, `retryable`, `terminal`,
    /// `uncertain`, `lost`, `released`, or a refusal code (`WORK_FENCED`,
    /// `already-terminal`, …) when the store refused the record.
    pub outcome: String,
    pub at: Millis,
}

impl ExecRecord {
    /// The outcome of the line written as an attempt starts: a process killed while its
    /// handler runs leaves this line and no end.
    pub const STARTED: &'static str = "started";
}
