//! The instance row as stored, and the one way a transition is written: the new row at
//! the next instance revision, its history entries and the status counters, together.

use serde::{Deserialize, Serialize};

use super::corrupt;
use crate::clock::Millis;
use crate::error::{Error, Result};
use crate::model::{HistoryRecord, InstanceRow};
use crate::store::{Counter, Tx};
use crate::workflow::machine::{self, InstanceState, Waiting};

/// The instance state as stored: the machine state plus the definition version it runs.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Stored {
    definition: String,
    #[serde(flatten)]
    state: InstanceState,
}

/// Decodes an instance row's state.
///
/// # Errors
/// `STORE_CORRUPT` when the JSON is not an instance state.
pub fn decode_state(row: &InstanceRow) -> Result<(String, InstanceState)> {
    let stored: Stored = serde_json::from_str(&row.state)
        .map_err(|e| corrupt(&format!("instance {}", row.instance_id), e))?;
    Ok((stored.definition, stored.state))
}

/// `row` carrying `state` at `now`: the state JSON and the columns lists filter on.
pub(super) fn encode_row(
    row: &InstanceRow,
    definition: &str,
    state: &InstanceState,
    now: Millis,
) -> Result<InstanceRow> {
    let text = serde_json::to_string(&Stored {
        definition: definition.into(),
        state: state.clone(),
    })
    .map_err(|e| Error::Invalid(e.to_string()))?;
    Ok(InstanceRow {
        status: state.status,
        next_eligible_at: if state.status.is_terminal() {
            None
        } else {
            state.next_eligible_at
        },
        waiting_event: match &state.waiting {
            Some(Waiting::Event { event, .. }) if !state.status.is_terminal() => {
                Some(event.clone())
            }
            _ => None,
        },
        state: text,
        updated_at: now,
        ..row.clone()
    })
}

/// Appends `entries` to `row`'s transition log from `position`, stamped with the row's
/// instance revision.
pub(super) fn add_history(
    tx: &mut dyn Tx,
    row: &InstanceRow,
    position: u64,
    entries: &[machine::HistoryEntry],
) -> Result<()> {
    for (position, entry) in (position..).zip(entries) {
        tx.add_history(&HistoryRecord {
            instance_id: row.instance_id.clone(),
            position,
            instance_revision: row.instance_revision,
            kind: entry.kind.as_str().into(),
            at: entry.at,
            step_id: entry.step_id.clone(),
            activation_id: entry.activation_id.clone(),
            detail: entry.detail.to_string(),
        })?;
    }
    Ok(())
}

/// The status counter an instance row is counted in.
pub(super) fn counter(row: &InstanceRow) -> Counter {
    Counter::Workflows {
        status: row.status,
        compat: row.compat.clone(),
    }
}

/// Writes a transition: new row (revision + 1), history entries, status counters.
pub(super) fn commit_transition(
    tx: &mut dyn Tx,
    before: &InstanceRow,
    definition: &str,
    state: &InstanceState,
    entries: &[machine::HistoryEntry],
    now: Millis,
) -> Result<InstanceRow> {
    tx.commit_revision()?;
    let mut row = encode_row(before, definition, state, now)?;
    row.instance_revision = before.instance_revision + 1;
    let next = tx.history(&before.instance_id)?.len() as u64 + 1;
    add_history(tx, &row, next, entries)?;
    tx.update_instance(&row)?;
    if before.status != row.status {
        counter(before).adjust(tx, -1)?;
        counter(&row).adjust(tx, 1)?;
    }
    Ok(row)
}
