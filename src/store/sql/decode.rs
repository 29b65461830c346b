//! Row → model, once for both SQL providers. Columns are read by name (work rows also by
//! position, see [`work`]); enums are stored as their `as_str()` text and nested structs as
//! JSON (the other direction is `encode.rs`).

use super::row::{
    Col, SqlRow, at, enumerated, flag, i32, int, json, opt_int, opt_json, opt_text, opt_u64, text,
    u32, u64, unreadable,
};
use crate::clock::Millis;
use crate::error::Result;
use crate::model::event::DedupRecord;
use crate::model::work::WorkLane;
use crate::model::workflow::ActionOutcome;
use crate::model::{
    AttemptError, AuditEntry, Authority, ChainCounts, ChainLink, DedupOutcome, FailureClass, Grant,
    GrantKind, HandlerPause, HistoryPosition, HistoryRecord, Holder, IdempotentAnswer, Ingestion,
    InstanceRow, InstanceStatus, JournalEvent, Lease, LinkHash, RateWindow, Schedule, Subscription,
    Takeover, WorkItem, WorkKind, WorkState, WorkflowDefinitionRow, WriteRecord, WriteVerb,
};

pub(crate) fn lease(row: &dyn SqlRow) -> Result<Lease> {
    Ok(Lease {
        resource_id: text(row, "resource_id")?,
        owner_id: text(row, "owner_id")?,
        token: text(row, "token")?,
        generation: u64(row, "generation")?,
        acquired_at: int(row, "acquired_at")?,
        expires_at: int(row, "expires_at")?,
        released_at: opt_int(row, "released_at")?,
        checkpoint: opt_json(row, "checkpoint")?,
    })
}

/// A `SELECT * FROM work` row. Work rows are read on every claim and completion, so each
/// column also names its position (the schema's column order, pinned by a SQLite test).
pub(crate) fn work(row: &dyn SqlRow) -> Result<WorkItem> {
    Ok(WorkItem {
        id: text(row, at(0, "id"))?,
        kind: enumerated(row, at(1, "kind"), WorkKind::parse)?,
        state: enumerated(row, at(2, "state"), WorkState::parse)?,
        handler: text(row, at(3, "handler"))?,
        payload: text(row, at(4, "payload"))?,
        logical_effect_id: text(row, at(5, "logical_effect_id"))?,
        idempotency_key: text(row, at(6, "idempotency_key"))?,
        compat: text(row, at(7, "compat"))?,
        owner_id: opt_text(row, at(8, "owner_id"))?,
        token: opt_text(row, at(9, "token"))?,
        generation: u64(row, at(10, "generation"))?,
        claimed_at: opt_int(row, at(11, "claimed_at"))?,
        lease_expires_at: opt_int(row, at(12, "lease_expires_at"))?,
        attempt_number: u32(row, at(13, "attempt_number"))?,
        uncertain_attempts: u32(row, at(14, "uncertain_attempts"))?,
        max_attempts: u32(row, at(15, "max_attempts"))?,
        last_attempt_at: opt_int(row, at(16, "last_attempt_at"))?,
        next_eligible_at: int(row, at(17, "next_eligible_at"))?,
        last_failure: opt_json(row, at(18, "last_failure"))?,
        result: opt_text(row, at(19, "result"))?,
        checkpoint: opt_text(row, at(23, "checkpoint"))?,
        priority: i32(row, at(24, "priority"))?,
        created_at: int(row, at(20, "created_at"))?,
        updated_at: int(row, at(21, "updated_at"))?,
    })
}

pub(crate) fn dedup(row: &dyn SqlRow) -> Result<DedupRecord> {
    Ok(DedupRecord {
        source: text(row, "source")?,
        external_id: text(row, "external_id")?,
        fingerprint: text(row, "fingerprint")?,
        seq: int(row, "seq")?,
        first_seen_at: int(row, "first_seen_at")?,
    })
}

pub(crate) fn journal(row: &dyn SqlRow) -> Result<JournalEvent> {
    Ok(JournalEvent {
        seq: int(row, "seq")?,
        event_type: text(row, "event_type")?,
        source: opt_text(row, "source")?,
        external_id: opt_text(row, "external_id")?,
        payload: text(row, "payload")?,
        fingerprint: text(row, "fingerprint")?,
        at: int(row, "at")?,
    })
}

pub(crate) fn ingestion(row: &dyn SqlRow) -> Result<Ingestion> {
    Ok(Ingestion {
        id: int(row, "id")?,
        at: int(row, "at")?,
        event_type: text(row, "event_type")?,
        source: opt_text(row, "source")?,
        external_id: opt_text(row, "external_id")?,
        outcome: enumerated(row, "outcome", DedupOutcome::parse)?,
        seq: opt_int(row, "seq")?,
    })
}

pub(crate) fn subscription(row: &dyn SqlRow) -> Result<Subscription> {
    Ok(Subscription {
        subscription_id: text(row, "subscription_id")?,
        event_type: text(row, "event_type")?,
        sequence: u64(row, "sequence")?,
        generation: u64(row, "generation")?,
        updated_at: int(row, "updated_at")?,
        updated_by: opt_text(row, "updated_by")?,
    })
}

pub(crate) fn schedule(row: &dyn SqlRow) -> Result<Schedule> {
    Ok(Schedule {
        schedule_id: text(row, "schedule_id")?,
        trigger: json(row, "trigger")?,
        catch_up: json(row, "catch_up")?,
        handler: text(row, "handler")?,
        payload: text(row, "payload")?,
        compat: text(row, "compat")?,
        last_due: opt_int(row, "last_due")?,
        next_due: int(row, "next_due")?,
        created_at: int(row, "created_at")?,
        paused_at: opt_int(row, "paused_at")?,
    })
}

pub(crate) fn handler_pause(row: &dyn SqlRow) -> Result<HandlerPause> {
    Ok(HandlerPause {
        handler: text(row, "handler")?,
        paused_at: int(row, "paused_at")?,
        paused_by: text(row, "paused_by")?,
        reason: text(row, "reason")?,
    })
}

pub(crate) fn rate_window(row: &dyn SqlRow) -> Result<RateWindow> {
    Ok(RateWindow {
        handler: text(row, "handler")?,
        window_start: int(row, "window_start")?,
        claims: u64(row, "claims")?,
    })
}

pub(crate) fn authority(row: &dyn SqlRow) -> Result<Authority> {
    Ok(Authority {
        instance_id: text(row, "instance_id")?,
        compat: text(row, "compat")?,
        build: text(row, "build")?,
        config: text(row, "config")?,
        started_at: int(row, "started_at")?,
        heartbeat_at: int(row, "heartbeat_at")?,
        stopped_at: opt_int(row, "stopped_at")?,
        host: text(row, "host")?,
        pid: u32(row, "pid")?,
        published: json(row, "published")?,
    })
}

pub(crate) fn audit(row: &dyn SqlRow) -> Result<AuditEntry> {
    Ok(AuditEntry {
        id: int(row, "id")?,
        at: int(row, "at")?,
        actor: text(row, "actor")?,
        action: text(row, "action")?,
        target: text(row, "target")?,
        outcome: text(row, "outcome")?,
    })
}

pub(crate) fn link(row: &dyn SqlRow) -> Result<ChainLink> {
    let hash = text(row, "link")?;
    Ok(ChainLink {
        revision: u64(row, "revision")?,
        link: LinkHash::parse(&hash).map_err(|e| unreadable("chain.link", e))?,
        nonce: text(row, "nonce")?,
        counts: ChainCounts {
            generations: u64(row, "generations")?,
            completions: u64(row, "completions")?,
        },
    })
}

pub(crate) fn idempotent_answer(row: &dyn SqlRow) -> Result<IdempotentAnswer> {
    Ok(IdempotentAnswer {
        key: text(row, "key")?,
        answer: text(row, "answer")?,
        at: int(row, "at")?,
    })
}

/// The `answer` column alone.
pub(crate) fn answer(row: &dyn SqlRow) -> Result<String> {
    text(row, "answer")
}

/// A `SELECT * FROM grants` row: `seq`, then [`GRANTS`](super::encode::GRANTS)'s columns.
/// The checker, the replay and the dashboard's rates read these by the thousand, so each
/// column also names its position (pinned by a SQLite test, on fresh and upgraded stores).
pub(crate) fn grant(row: &dyn SqlRow) -> Result<Grant> {
    Ok(Grant {
        revision: u64(row, at(1, "revision"))?,
        resource_id: text(row, at(2, "resource_id"))?,
        generation: u64(row, at(3, "generation"))?,
        owner_id: text(row, at(4, "owner_id"))?,
        how: enumerated(row, at(5, "how"), GrantKind::parse)?,
        owner_compat: opt_text(row, at(6, "owner_compat"))?,
        item_compat: opt_text(row, at(7, "item_compat"))?,
        at: int(row, at(GRANT_AT, "at"))?,
        took_over: match opt_text(row, at(9, "from_owner"))? {
            Some(from_owner) => Some(Takeover {
                from_owner,
                from_generation: u64(row, at(10, "from_generation"))?,
                lapsed_ms: int(row, at(11, "lapsed_ms"))?,
            }),
            None => None,
        },
    })
}

/// Where `at` is in a `SELECT *` row of `grants`, and of `writes`.
const GRANT_AT: usize = 8;
const WRITE_AT: usize = 9;

/// A history row's place in the newest-first incident lists; `at_pos` is where its table
/// keeps `at` (`seq` comes first in both).
fn position(row: &dyn SqlRow, at_pos: usize) -> Result<HistoryPosition> {
    Ok(HistoryPosition {
        at: int(row, at(at_pos, "at"))?,
        seq: u64(row, at(0, "seq"))?,
    })
}

pub(crate) fn failover(row: &dyn SqlRow) -> Result<(HistoryPosition, Grant)> {
    Ok((position(row, GRANT_AT)?, grant(row)?))
}

pub(crate) fn refused_write(row: &dyn SqlRow) -> Result<(HistoryPosition, WriteRecord)> {
    Ok((position(row, WRITE_AT)?, write_record(row)?))
}

/// A `SELECT * FROM writes` row: `seq`, then [`WRITES`](super::encode::WRITES)'s columns,
/// read by position as [`grant`] is.
pub(crate) fn write_record(row: &dyn SqlRow) -> Result<WriteRecord> {
    Ok(WriteRecord {
        revision: u64(row, at(1, "revision"))?,
        resource_id: text(row, at(2, "resource_id"))?,
        generation: u64(row, at(3, "generation"))?,
        owner_id: text(row, at(4, "owner_id"))?,
        verb: enumerated(row, at(5, "verb"), WriteVerb::parse)?,
        accepted: flag(row, at(6, "accepted"))?,
        refusal: opt_text(row, at(7, "refusal"))?,
        detail: text(row, at(8, "detail"))?,
        at: int(row, at(WRITE_AT, "at"))?,
        holder: match opt_u64(row, at(11, "holder_generation"))? {
            Some(generation) => Some(Holder {
                owner_id: opt_text(row, at(10, "holder_id"))?,
                generation,
            }),
            None => None,
        },
    })
}

pub(crate) fn definition(row: &dyn SqlRow) -> Result<WorkflowDefinitionRow> {
    Ok(WorkflowDefinitionRow {
        workflow_id: text(row, "workflow_id")?,
        fingerprint: text(row, "fingerprint")?,
        definition: text(row, "definition")?,
        deployed_at: int(row, "deployed_at")?,
    })
}

pub(crate) fn instance(row: &dyn SqlRow) -> Result<InstanceRow> {
    Ok(InstanceRow {
        instance_id: text(row, "instance_id")?,
        workflow_id: text(row, "workflow_id")?,
        status: enumerated(row, "status", InstanceStatus::parse)?,
        compat: text(row, "compat")?,
        instance_revision: u64(row, "instance_revision")?,
        next_eligible_at: opt_int(row, "next_eligible_at")?,
        waiting_event: opt_text(row, "waiting_event")?,
        principal: text(row, "principal")?,
        start_key: opt_text(row, "start_key")?,
        state: text(row, "state")?,
        created_at: int(row, "created_at")?,
        updated_at: int(row, "updated_at")?,
    })
}

pub(crate) fn history(row: &dyn SqlRow) -> Result<HistoryRecord> {
    Ok(HistoryRecord {
        instance_id: text(row, "instance_id")?,
        position: u64(row, "position")?,
        instance_revision: u64(row, "instance_revision")?,
        kind: text(row, "kind")?,
        at: int(row, "at")?,
        step_id: opt_text(row, "step_id")?,
        activation_id: opt_text(row, "activation_id")?,
        detail: text(row, "detail")?,
    })
}

pub(crate) fn outcome(row: &dyn SqlRow) -> Result<ActionOutcome> {
    Ok(ActionOutcome {
        invocation_id: text(row, "invocation_id")?,
        attempt: u32(row, "attempt")?,
        outcome: text(row, "outcome")?,
        detail: text(row, "detail")?,
        at: int(row, "at")?,
    })
}

pub(crate) fn attempt_error(row: &dyn SqlRow) -> Result<AttemptError> {
    Ok(AttemptError {
        work_id: text(row, "work_id")?,
        generation: u64(row, "generation")?,
        attempt: u32(row, "attempt")?,
        owner_id: text(row, "owner_id")?,
        at: int(row, "at")?,
        class: enumerated(row, "class", FailureClass::parse)?,
        code: text(row, "code")?,
        message: text(row, "message")?,
    })
}

/// The first column as an integer (`count(*)`, `max`, a meta value), NULL as `None`.
pub(crate) fn first_int(row: &dyn SqlRow) -> Result<Option<i64>> {
    opt_int(row, Col::Pos(0))
}

/// Three integers (a position, its revision and the revision before it).
pub(crate) fn int_triple(row: &dyn SqlRow) -> Result<(i64, i64, i64)> {
    Ok((
        int(row, Col::Pos(0))?,
        int(row, Col::Pos(1))?,
        int(row, Col::Pos(2))?,
    ))
}

/// Two integers (a history record's position and its revision).
pub(crate) fn int_pair(row: &dyn SqlRow) -> Result<(i64, i64)> {
    Ok((int(row, Col::Pos(0))?, int(row, Col::Pos(1))?))
}

/// A bumped meta value and a second, optional one read beside it (the revision and the
/// store epoch).
pub(crate) fn int_and_opt_int(row: &dyn SqlRow) -> Result<(i64, Option<i64>)> {
    Ok((int(row, Col::Pos(0))?, opt_int(row, Col::Pos(1))?))
}

/// An `(idempotency_key, id)` row of the work key index.
pub(crate) fn key_and_id(row: &dyn SqlRow) -> Result<(String, String)> {
    Ok((text(row, Col::Pos(0))?, text(row, Col::Pos(1))?))
}

/// A `(kind, handler)` row: one claim lane.
pub(crate) fn lane(row: &dyn SqlRow) -> Result<WorkLane> {
    Ok(WorkLane::new(
        enumerated(row, Col::Pos(0), WorkKind::parse)?,
        text(row, Col::Pos(1))?,
    ))
}

/// A `(kind, handler, next_eligible_at)` row: a lane and its oldest waiting instant.
pub(crate) fn lane_wait(row: &dyn SqlRow) -> Result<(WorkLane, Millis)> {
    Ok((lane(row)?, int(row, Col::Pos(2))?))
}
