//! The dashboard's only doorway into the workflow engine's reads, for the detail view. Kept in one place so an engine signature change is a one-line edit.

use crate::error::Result;
use crate::model::{HistoryRecord, InstanceRow};
use crate::store::Store;
use crate::workflow::InstanceState;
use crate::workflow::engine::decode_state;

/// One instance row.
pub(crate) fn instance(store: &Store, id: &str) -> Result<Option<InstanceRow>> {
    store.instance(id)
}

/// The instance's durable transition log, oldest first.
pub(crate) fn history(store: &Store, id: &str) -> Result<Vec<HistoryRecord>> {
    store.workflow_history(id)
}

/// The machine state stored in a row (`None` when it cannot be decoded; the view then
/// shows the columns only and says so).
pub(crate) fn state(row: &InstanceRow) -> Option<InstanceState> {
    decode_state(row).ok().map(|(_, s)| s)
}

/// The lease resource the engine fences an instance's transitions on.
pub(crate) use crate::workflow::engine::instance_resource;
