//! Row → struct mapping for PostgreSQL. Columns are read by name; enums are stored as their
//! `as_str()` text and nested structs as JSON. A value this build cannot decode is reported
//! as `STORE_CORRUPT`, naming the column.

use postgres::Row;
use postgres::types::FromSql;
use serde::de::DeserializeOwned;

use crate::error::{Error, Result};
use crate::model::event::DedupRecord;
use crate::model::workflow::ActionOutcome;
use crate::model::{
    AuditEntry, Authority, DedupOutcome, Grant, GrantKind, HistoryPosition, HistoryRecord, Holder,
    IdempotentAnswer, Ingestion, InstanceRow, InstanceStatus, JournalEvent, Lease, Schedule,
    Subscription, Takeover, WorkItem, WorkKind, WorkState, WorkflowDefinitionRow, WriteRecord,
    WriteVerb,
};

fn bad(col: &str, why: impl std::fmt::Display) -> Error {
    Error::Corrupt(format!("unreadable row: column {col}: {why}"))
}

fn get<'a, T: FromSql<'a>>(row: &'a Row, col: &str) -> Result<T> {
    row.try_get(col).map_err(|e| bad(col, e))
}

fn get_u64(row: &Row, col: &str) -> Result<u64> {
    let v: i64 = get(row, col)?;
    u64::try_from(v).map_err(|e| bad(col, e))
}

fn get_u32(row: &Row, col: &str) -> Result<u32> {
    let v: i64 = get(row, col)?;
    u32::try_from(v).map_err(|e| bad(col, e))
}

fn get_enum<T>(row: &Row, col: &str, parse: fn(&str) -> Option<T>) -> Result<T> {
    let text: &str = get(row, col)?;
    parse(text).ok_or_else(|| bad(col, format!("unknown value {text:?}")))
}

fn get_json<T: DeserializeOwned>(row: &Row, col: &str) -> Result<T> {
    let text: &str = get(row, col)?;
    serde_json::from_str(text).map_err(|e| bad(col, e))
}

fn get_json_opt<T: DeserializeOwned>(row: &Row, col: &str) -> Result<Option<T>> {
    let text: Option<&str> = get(row, col)?;
    text.map(|t| serde_json::from_str(t).map_err(|e| bad(col, e)))
        .transpose()
}

pub(super) fn lease(row: &Row) -> Result<Lease> {
    Ok(Lease {
        resource_id: get(row, "resource_id")?,
        owner_id: get(row, "owner_id")?,
        token: get(row, "token")?,
        generation: get_u64(row, "generation")?,
        acquired_at: get(row, "acquired_at")?,
        expires_at: get(row, "expires_at")?,
        released_at: get(row, "released_at")?,
        checkpoint: get_json_opt(row, "checkpoint")?,
    })
}

pub(super) fn work(row: &Row) -> Result<WorkItem> {
    Ok(WorkItem {
        id: get(row, "id")?,
        kind: get_enum(row, "kind", WorkKind::parse)?,
        state: get_enum(row, "state", WorkState::parse)?,
        handler: get(row, "handler")?,
        payload: get(row, "payload")?,
        logical_effect_id: get(row, "logical_effect_id")?,
        idempotency_key: get(row, "idempotency_key")?,
        compat: get(row, "compat")?,
        owner_id: get(row, "owner_id")?,
        token: get(row, "token")?,
        generation: get_u64(row, "generation")?,
        claimed_at: get(row, "claimed_at")?,
        lease_expires_at: get(row, "lease_expires_at")?,
        attempt_number: get_u32(row, "attempt_number")?,
        uncertain_attempts: get_u32(row, "uncertain_attempts")?,
        max_attempts: get_u32(row, "max_attempts")?,
        last_attempt_at: get(row, "last_attempt_at")?,
        next_eligible_at: get(row, "next_eligible_at")?,
        last_failure: get_json_opt(row, "last_failure")?,
        result: get(row, "result")?,
        created_at: get(row, "created_at")?,
        updated_at: get(row, "updated_at")?,
    })
}

pub(super) fn dedup(row: &Row) -> Result<DedupRecord> {
    Ok(DedupRecord {
        source: get(row, "source")?,
        external_id: get(row, "external_id")?,
        fingerprint: get(row, "fingerprint")?,
        seq: get(row, "seq")?,
        first_seen_at: get(row, "first_seen_at")?,
    })
}

pub(super) fn journal(row: &Row) -> Result<JournalEvent> {
    Ok(JournalEvent {
        seq: get(row, "seq")?,
        event_type: get(row, "event_type")?,
        source: get(row, "source")?,
        external_id: get(row, "external_id")?,
        payload: get(row, "payload")?,
        fingerprint: get(row, "fingerprint")?,
        at: get(row, "at")?,
    })
}

pub(super) fn ingestion(row: &Row) -> Result<Ingestion> {
    Ok(Ingestion {
        id: get(row, "id")?,
        at: get(row, "at")?,
        event_type: get(row, "event_type")?,
        source: get(row, "source")?,
        external_id: get(row, "external_id")?,
        outcome: get_enum(row, "outcome", DedupOutcome::parse)?,
        seq: get(row, "seq")?,
    })
}

pub(super) fn subscription(row: &Row) -> Result<Subscription> {
    Ok(Subscription {
        subscription_id: get(row, "subscription_id")?,
        event_type: get(row, "event_type")?,
        sequence: get_u64(row, "sequence")?,
        generation: get_u64(row, "generation")?,
        updated_at: get(row, "updated_at")?,
        updated_by: get(row, "updated_by")?,
    })
}

pub(super) fn schedule(row: &Row) -> Result<Schedule> {
    Ok(Schedule {
        schedule_id: get(row, "schedule_id")?,
        trigger: get_json(row, "trigger")?,
        catch_up: get_json(row, "catch_up")?,
        handler: get(row, "handler")?,
        payload: get(row, "payload")?,
        compat: get(row, "compat")?,
        last_due: get(row, "last_due")?,
        next_due: get(row, "next_due")?,
        created_at: get(row, "created_at")?,
    })
}

pub(super) fn authority(row: &Row) -> Result<Authority> {
    Ok(Authority {
        instance_id: get(row, "instance_id")?,
        compat: get(row, "compat")?,
        build: get(row, "build")?,
        config: get(row, "config")?,
        started_at: get(row, "started_at")?,
        heartbeat_at: get(row, "heartbeat_at")?,
        stopped_at: get(row, "stopped_at")?,
        host: get(row, "host")?,
        pid: get_u32(row, "pid")?,
    })
}

pub(super) fn audit(row: &Row) -> Result<AuditEntry> {
    Ok(AuditEntry {
        id: get(row, "id")?,
        at: get(row, "at")?,
        actor: get(row, "actor")?,
        action: get(row, "action")?,
        target: get(row, "target")?,
        outcome: get(row, "outcome")?,
    })
}

pub(super) fn idempotent_answer(row: &Row) -> Result<IdempotentAnswer> {
    Ok(IdempotentAnswer {
        key: get(row, "key")?,
        answer: get(row, "answer")?,
        at: get(row, "at")?,
    })
}

pub(super) fn grant(row: &Row) -> Result<Grant> {
    Ok(Grant {
        revision: get_u64(row, "revision")?,
        resource_id: get(row, "resource_id")?,
        generation: get_u64(row, "generation")?,
        owner_id: get(row, "owner_id")?,
        how: get_enum(row, "how", GrantKind::parse)?,
        owner_compat: get(row, "owner_compat")?,
        item_compat: get(row, "item_compat")?,
        at: get(row, "at")?,
        took_over: match get::<Option<String>>(row, "from_owner")? {
            Some(from_owner) => Some(Takeover {
                from_owner,
                from_generation: get_u64(row, "from_generation")?,
                lapsed_ms: get(row, "lapsed_ms")?,
            }),
            None => None,
        },
    })
}

/// A history row's place in the newest-first incident lists.
fn position(row: &Row) -> Result<HistoryPosition> {
    Ok(HistoryPosition {
        at: get(row, "at")?,
        seq: get_u64(row, "seq")?,
    })
}

pub(super) fn failover(row: &Row) -> Result<(HistoryPosition, Grant)> {
    Ok((position(row)?, grant(row)?))
}

pub(super) fn refused_write(row: &Row) -> Result<(HistoryPosition, WriteRecord)> {
    Ok((position(row)?, write_record(row)?))
}

pub(super) fn write_record(row: &Row) -> Result<WriteRecord> {
    Ok(WriteRecord {
        revision: get_u64(row, "revision")?,
        resource_id: get(row, "resource_id")?,
        generation: get_u64(row, "generation")?,
        owner_id: get(row, "owner_id")?,
        verb: get_enum(row, "verb", WriteVerb::parse)?,
        accepted: get(row, "accepted")?,
        refusal: get(row, "refusal")?,
        detail: get(row, "detail")?,
        at: get(row, "at")?,
        holder: match get::<Option<i64>>(row, "holder_generation")? {
            Some(_) => Some(Holder {
                owner_id: get(row, "holder_id")?,
                generation: get_u64(row, "holder_generation")?,
            }),
            None => None,
        },
    })
}

pub(super) fn definition(row: &Row) -> Result<WorkflowDefinitionRow> {
    Ok(WorkflowDefinitionRow {
        workflow_id: get(row, "workflow_id")?,
        fingerprint: get(row, "fingerprint")?,
        definition: get(row, "definition")?,
        deployed_at: get(row, "deployed_at")?,
    })
}

pub(super) fn instance(row: &Row) -> Result<InstanceRow> {
    Ok(InstanceRow {
        instance_id: get(row, "instance_id")?,
        workflow_id: get(row, "workflow_id")?,
        status: get_enum(row, "status", InstanceStatus::parse)?,
        compat: get(row, "compat")?,
        instance_revision: get_u64(row, "instance_revision")?,
        next_eligible_at: get(row, "next_eligible_at")?,
        waiting_event: get(row, "waiting_event")?,
        principal: get(row, "principal")?,
        start_key: get(row, "start_key")?,
        state: get(row, "state")?,
        created_at: get(row, "created_at")?,
        updated_at: get(row, "updated_at")?,
    })
}

pub(super) fn history(row: &Row) -> Result<HistoryRecord> {
    Ok(HistoryRecord {
        instance_id: get(row, "instance_id")?,
        position: get_u64(row, "position")?,
        instance_revision: get_u64(row, "instance_revision")?,
        kind: get(row, "kind")?,
        at: get(row, "at")?,
        step_id: get(row, "step_id")?,
        activation_id: get(row, "activation_id")?,
        detail: get(row, "detail")?,
    })
}

pub(super) fn outcome(row: &Row) -> Result<ActionOutcome> {
    Ok(ActionOutcome {
        invocation_id: get(row, "invocation_id")?,
        attempt: get_u32(row, "attempt")?,
        outcome: get(row, "outcome")?,
        detail: get(row, "detail")?,
        at: get(row, "at")?,
    })
}
