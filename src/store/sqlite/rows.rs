//! Row ↔ struct mapping. Columns are read by name (work rows by position, see
//! [`work`]); enums are stored as their `as_str()`
//! text and nested structs as JSON. A value this build cannot decode is reported as a
//! conversion failure, which the provider maps to `STORE_CORRUPT`.

use rusqlite::types::Type;
use rusqlite::{Row, RowIndex};
use serde::de::DeserializeOwned;

use crate::model::event::DedupRecord;
use crate::model::workflow::ActionOutcome;
use crate::model::{
    AuditEntry, Authority, DedupOutcome, Grant, GrantKind, HistoryPosition, HistoryRecord, Holder,
    IdempotentAnswer, Ingestion, InstanceRow, InstanceStatus, JournalEvent, Lease, Schedule,
    Subscription, Takeover, WorkItem, WorkKind, WorkState, WorkflowDefinitionRow, WriteRecord,
    WriteVerb,
};

type SqlResult<T> = rusqlite::Result<T>;

fn bad(col: &str, ty: Type, why: impl std::fmt::Display) -> rusqlite::Error {
    rusqlite::Error::FromSqlConversionFailure(0, ty, format!("column {col}: {why}").into())
}

/// A column by name, or by position (the hot work rows, see [`work`]).
trait Col: RowIndex + Copy + std::fmt::Display {}
impl Col for &str {}
impl Col for usize {}

fn get_u64(row: &Row<'_>, col: impl Col) -> SqlResult<u64> {
    let v: i64 = row.get(col)?;
    u64::try_from(v).map_err(|e| bad(&col.to_string(), Type::Integer, e))
}

fn get_u32(row: &Row<'_>, col: impl Col) -> SqlResult<u32> {
    let v: i64 = row.get(col)?;
    u32::try_from(v).map_err(|e| bad(&col.to_string(), Type::Integer, e))
}

fn get_enum<T>(row: &Row<'_>, col: impl Col, parse: fn(&str) -> Option<T>) -> SqlResult<T> {
    let text: String = row.get(col)?;
    parse(&text).ok_or_else(|| {
        bad(
            &col.to_string(),
            Type::Text,
            format!("unknown value {text:?}"),
        )
    })
}

fn get_json<T: DeserializeOwned>(row: &Row<'_>, col: &str) -> SqlResult<T> {
    let text: String = row.get(col)?;
    serde_json::from_str(&text).map_err(|e| bad(col, Type::Text, e))
}

fn get_json_opt<T: DeserializeOwned>(row: &Row<'_>, col: impl Col) -> SqlResult<Option<T>> {
    let text: Option<String> = row.get(col)?;
    text.map(|t| serde_json::from_str(&t).map_err(|e| bad(&col.to_string(), Type::Text, e)))
        .transpose()
}

pub(super) fn lease(row: &Row<'_>) -> SqlResult<Lease> {
    Ok(Lease {
        resource_id: row.get("resource_id")?,
        owner_id: row.get("owner_id")?,
        token: row.get("token")?,
        generation: get_u64(row, "generation")?,
        acquired_at: row.get("acquired_at")?,
        expires_at: row.get("expires_at")?,
        released_at: row.get("released_at")?,
        checkpoint: get_json_opt(row, "checkpoint")?,
    })
}

/// A `SELECT * FROM work` row, mapped by position: work rows are read on every claim and
/// completion. The column order is `schema.sql`'s, pinned by a test in `tests.rs`.
pub(super) fn work(row: &Row<'_>) -> SqlResult<WorkItem> {
    Ok(WorkItem {
        id: row.get(0)?,
        kind: get_enum(row, 1, WorkKind::parse)?,
        state: get_enum(row, 2, WorkState::parse)?,
        handler: row.get(3)?,
        payload: row.get(4)?,
        logical_effect_id: row.get(5)?,
        idempotency_key: row.get(6)?,
        compat: row.get(7)?,
        owner_id: row.get(8)?,
        token: row.get(9)?,
        generation: get_u64(row, 10)?,
        claimed_at: row.get(11)?,
        lease_expires_at: row.get(12)?,
        attempt_number: get_u32(row, 13)?,
        uncertain_attempts: get_u32(row, 14)?,
        max_attempts: get_u32(row, 15)?,
        last_attempt_at: row.get(16)?,
        next_eligible_at: row.get(17)?,
        last_failure: get_json_opt(row, 18)?,
        result: row.get(19)?,
        created_at: row.get(20)?,
        updated_at: row.get(21)?,
    })
}

pub(super) fn dedup(row: &Row<'_>) -> SqlResult<DedupRecord> {
    Ok(DedupRecord {
        source: row.get("source")?,
        external_id: row.get("external_id")?,
        fingerprint: row.get("fingerprint")?,
        seq: row.get("seq")?,
        first_seen_at: row.get("first_seen_at")?,
    })
}

pub(super) fn journal(row: &Row<'_>) -> SqlResult<JournalEvent> {
    Ok(JournalEvent {
        seq: row.get("seq")?,
        event_type: row.get("event_type")?,
        source: row.get("source")?,
        external_id: row.get("external_id")?,
        payload: row.get("payload")?,
        fingerprint: row.get("fingerprint")?,
        at: row.get("at")?,
    })
}

pub(super) fn ingestion(row: &Row<'_>) -> SqlResult<Ingestion> {
    Ok(Ingestion {
        id: row.get("id")?,
        at: row.get("at")?,
        event_type: row.get("event_type")?,
        source: row.get("source")?,
        external_id: row.get("external_id")?,
        outcome: get_enum(row, "outcome", DedupOutcome::parse)?,
        seq: row.get("seq")?,
    })
}

pub(super) fn subscription(row: &Row<'_>) -> SqlResult<Subscription> {
    Ok(Subscription {
        subscription_id: row.get("subscription_id")?,
        event_type: row.get("event_type")?,
        sequence: get_u64(row, "sequence")?,
        generation: get_u64(row, "generation")?,
        updated_at: row.get("updated_at")?,
        updated_by: row.get("updated_by")?,
    })
}

pub(super) fn schedule(row: &Row<'_>) -> SqlResult<Schedule> {
    Ok(Schedule {
        schedule_id: row.get("schedule_id")?,
        trigger: get_json(row, "trigger")?,
        catch_up: get_json(row, "catch_up")?,
        handler: row.get("handler")?,
        payload: row.get("payload")?,
        compat: row.get("compat")?,
        last_due: row.get("last_due")?,
        next_due: row.get("next_due")?,
        created_at: row.get("created_at")?,
    })
}

pub(super) fn authority(row: &Row<'_>) -> SqlResult<Authority> {
    Ok(Authority {
        instance_id: row.get("instance_id")?,
        compat: row.get("compat")?,
        build: row.get("build")?,
        config: row.get("config")?,
        started_at: row.get("started_at")?,
        heartbeat_at: row.get("heartbeat_at")?,
        stopped_at: row.get("stopped_at")?,
        host: row.get("host")?,
        pid: get_u32(row, "pid")?,
    })
}

pub(super) fn audit(row: &Row<'_>) -> SqlResult<AuditEntry> {
    Ok(AuditEntry {
        id: row.get("id")?,
        at: row.get("at")?,
        actor: row.get("actor")?,
        action: row.get("action")?,
        target: row.get("target")?,
        outcome: row.get("outcome")?,
    })
}

pub(super) fn idempotent_answer(row: &Row<'_>) -> SqlResult<IdempotentAnswer> {
    Ok(IdempotentAnswer {
        key: row.get("key")?,
        answer: row.get("answer")?,
        at: row.get("at")?,
    })
}

pub(super) fn grant(row: &Row<'_>) -> SqlResult<Grant> {
    Ok(Grant {
        revision: get_u64(row, "revision")?,
        resource_id: row.get("resource_id")?,
        generation: get_u64(row, "generation")?,
        owner_id: row.get("owner_id")?,
        how: get_enum(row, "how", GrantKind::parse)?,
        owner_compat: row.get("owner_compat")?,
        item_compat: row.get("item_compat")?,
        at: row.get("at")?,
        took_over: match row.get::<_, Option<String>>("from_owner")? {
            Some(from_owner) => Some(Takeover {
                from_owner,
                from_generation: get_u64(row, "from_generation")?,
                lapsed_ms: row.get("lapsed_ms")?,
            }),
            None => None,
        },
    })
}

/// A history row's place in the newest-first incident lists.
fn position(row: &Row<'_>) -> SqlResult<HistoryPosition> {
    Ok(HistoryPosition {
        at: row.get("at")?,
        seq: get_u64(row, "seq")?,
    })
}

pub(super) fn failover(row: &Row<'_>) -> SqlResult<(HistoryPosition, Grant)> {
    Ok((position(row)?, grant(row)?))
}

pub(super) fn refused_write(row: &Row<'_>) -> SqlResult<(HistoryPosition, WriteRecord)> {
    Ok((position(row)?, write_record(row)?))
}

pub(super) fn write_record(row: &Row<'_>) -> SqlResult<WriteRecord> {
    Ok(WriteRecord {
        revision: get_u64(row, "revision")?,
        resource_id: row.get("resource_id")?,
        generation: get_u64(row, "generation")?,
        owner_id: row.get("owner_id")?,
        verb: get_enum(row, "verb", WriteVerb::parse)?,
        accepted: row.get("accepted")?,
        refusal: row.get("refusal")?,
        detail: row.get("detail")?,
        at: row.get("at")?,
        holder: match row.get::<_, Option<i64>>("holder_generation")? {
            Some(_) => Some(Holder {
                owner_id: row.get("holder_id")?,
                generation: get_u64(row, "holder_generation")?,
            }),
            None => None,
        },
    })
}

pub(super) fn definition(row: &Row<'_>) -> SqlResult<WorkflowDefinitionRow> {
    Ok(WorkflowDefinitionRow {
        workflow_id: row.get("workflow_id")?,
        fingerprint: row.get("fingerprint")?,
        definition: row.get("definition")?,
        deployed_at: row.get("deployed_at")?,
    })
}

pub(super) fn instance(row: &Row<'_>) -> SqlResult<InstanceRow> {
    Ok(InstanceRow {
        instance_id: row.get("instance_id")?,
        workflow_id: row.get("workflow_id")?,
        status: get_enum(row, "status", InstanceStatus::parse)?,
        compat: row.get("compat")?,
        instance_revision: get_u64(row, "instance_revision")?,
        next_eligible_at: row.get("next_eligible_at")?,
        waiting_event: row.get("waiting_event")?,
        principal: row.get("principal")?,
        start_key: row.get("start_key")?,
        state: row.get("state")?,
        created_at: row.get("created_at")?,
        updated_at: row.get("updated_at")?,
    })
}

pub(super) fn history(row: &Row<'_>) -> SqlResult<HistoryRecord> {
    Ok(HistoryRecord {
        instance_id: row.get("instance_id")?,
        position: get_u64(row, "position")?,
        instance_revision: get_u64(row, "instance_revision")?,
        kind: row.get("kind")?,
        at: row.get("at")?,
        step_id: row.get("step_id")?,
        activation_id: row.get("activation_id")?,
        detail: row.get("detail")?,
    })
}

pub(super) fn outcome(row: &Row<'_>) -> SqlResult<ActionOutcome> {
    Ok(ActionOutcome {
        invocation_id: row.get("invocation_id")?,
        attempt: get_u32(row, "attempt")?,
        outcome: row.get("outcome")?,
        detail: row.get("detail")?,
        at: row.get("at")?,
    })
}
