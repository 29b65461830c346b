//! Model → row, once for both SQL providers: each table's columns (with the kind PostgreSQL
//! needs to type an array of them) and the values of one model in that order. Enums are
//! stored as their `as_str()` text and nested structs as JSON (`decode.rs` reads them back).

use super::value::SqlValue;
use super::{int, json};
use crate::error::Result;
use crate::model::event::DedupRecord;
use crate::model::workflow::ActionOutcome;
use crate::model::{
    AttemptError, AuditEntry, Authority, ChainLink, Grant, HandlerPause, HistoryRecord, Ingestion,
    InstanceRow, JournalEvent, Lease, RateWindow, Schedule, Subscription, WorkItem,
    WorkflowDefinitionRow, WriteRecord,
};

/// What a column holds.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Kind {
    Int,
    Text,
    Bool,
}

/// A table's name, key and columns in the order its encoder lists values.
pub(crate) struct Table {
    pub(crate) name: &'static str,
    /// The primary key's columns (empty for the append-only history tables).
    pub(crate) key: &'static [&'static str],
    pub(crate) columns: &'static [(&'static str, Kind)],
}

impl Table {
    pub(crate) fn names(&self) -> impl Iterator<Item = &'static str> {
        self.columns.iter().map(|(name, _)| *name)
    }

    /// The columns a conflicting row's update sets: all but the key.
    pub(crate) fn non_key(&self) -> impl Iterator<Item = &'static str> {
        self.names().filter(|c| !self.key.contains(c))
    }
}

use Kind::{Bool, Int, Text};

pub(crate) const WORK: Table = Table {
    name: "work",
    key: &["id"],
    columns: &[
        ("id", Text),
        ("kind", Text),
        ("state", Text),
        ("handler", Text),
        ("payload", Text),
        ("logical_effect_id", Text),
        ("idempotency_key", Text),
        ("compat", Text),
        ("owner_id", Text),
        ("token", Text),
        ("generation", Int),
        ("claimed_at", Int),
        ("lease_expires_at", Int),
        ("attempt_number", Int),
        ("uncertain_attempts", Int),
        ("max_attempts", Int),
        ("last_attempt_at", Int),
        ("next_eligible_at", Int),
        ("last_failure", Text),
        ("result", Text),
        ("created_at", Int),
        ("updated_at", Int),
        ("due_at", Int),
        ("checkpoint", Text),
        ("priority", Int),
    ],
};

/// A work row in [`WORK`]'s column order (the schema's order too).
pub(crate) fn work(item: &WorkItem) -> Result<Vec<SqlValue>> {
    Ok(vec![
        item.id.as_str().into(),
        item.kind.as_str().into(),
        item.state.as_str().into(),
        item.handler.as_str().into(),
        item.payload.as_str().into(),
        item.logical_effect_id.as_str().into(),
        item.idempotency_key.as_str().into(),
        item.compat.as_str().into(),
        item.owner_id.as_deref().into(),
        item.token.as_deref().into(),
        int(item.generation)?.into(),
        item.claimed_at.into(),
        item.lease_expires_at.into(),
        item.attempt_number.into(),
        item.uncertain_attempts.into(),
        item.max_attempts.into(),
        item.last_attempt_at.into(),
        item.next_eligible_at.into(),
        item.last_failure.as_ref().map(json).transpose()?.into(),
        item.result.as_deref().into(),
        item.created_at.into(),
        item.updated_at.into(),
        item.due_at().into(),
        item.checkpoint.as_deref().into(),
        i64::from(item.priority).into(),
    ])
}

pub(crate) const LEASES: Table = Table {
    name: "leases",
    key: &["resource_id"],
    columns: &[
        ("resource_id", Text),
        ("owner_id", Text),
        ("token", Text),
        ("generation", Int),
        ("acquired_at", Int),
        ("expires_at", Int),
        ("released_at", Int),
        ("checkpoint", Text),
    ],
};

pub(crate) fn lease(lease: &Lease) -> Result<Vec<SqlValue>> {
    Ok(vec![
        lease.resource_id.as_str().into(),
        lease.owner_id.as_str().into(),
        lease.token.as_str().into(),
        int(lease.generation)?.into(),
        lease.acquired_at.into(),
        lease.expires_at.into(),
        lease.released_at.into(),
        lease.checkpoint.as_ref().map(json).transpose()?.into(),
    ])
}

pub(crate) const INSTANCES: Table = Table {
    name: "instances",
    key: &["instance_id"],
    columns: &[
        ("instance_id", Text),
        ("workflow_id", Text),
        ("status", Text),
        ("compat", Text),
        ("instance_revision", Int),
        ("next_eligible_at", Int),
        ("waiting_event", Text),
        ("principal", Text),
        ("start_key", Text),
        ("state", Text),
        ("created_at", Int),
        ("updated_at", Int),
    ],
};

pub(crate) fn instance(row: &InstanceRow) -> Result<Vec<SqlValue>> {
    Ok(vec![
        row.instance_id.as_str().into(),
        row.workflow_id.as_str().into(),
        row.status.as_str().into(),
        row.compat.as_str().into(),
        int(row.instance_revision)?.into(),
        row.next_eligible_at.into(),
        row.waiting_event.as_deref().into(),
        row.principal.as_str().into(),
        row.start_key.as_deref().into(),
        row.state.as_str().into(),
        row.created_at.into(),
        row.updated_at.into(),
    ])
}

pub(crate) const HISTORY: Table = Table {
    name: "history",
    key: &["instance_id", "position"],
    columns: &[
        ("instance_id", Text),
        ("position", Int),
        ("instance_revision", Int),
        ("kind", Text),
        ("at", Int),
        ("step_id", Text),
        ("activation_id", Text),
        ("detail", Text),
    ],
};

pub(crate) fn history(h: &HistoryRecord) -> Result<Vec<SqlValue>> {
    Ok(vec![
        h.instance_id.as_str().into(),
        int(h.position)?.into(),
        int(h.instance_revision)?.into(),
        h.kind.as_str().into(),
        h.at.into(),
        h.step_id.as_deref().into(),
        h.activation_id.as_deref().into(),
        h.detail.as_str().into(),
    ])
}

pub(crate) const GRANTS: Table = Table {
    name: "grants",
    key: &[],
    columns: &[
        ("revision", Int),
        ("resource_id", Text),
        ("generation", Int),
        ("owner_id", Text),
        ("how", Text),
        ("owner_compat", Text),
        ("item_compat", Text),
        ("at", Int),
        ("from_owner", Text),
        ("from_generation", Int),
        ("lapsed_ms", Int),
    ],
};

pub(crate) fn grant(g: &Grant) -> Result<Vec<SqlValue>> {
    let took_over = g.took_over.as_ref();
    Ok(vec![
        int(g.revision)?.into(),
        g.resource_id.as_str().into(),
        int(g.generation)?.into(),
        g.owner_id.as_str().into(),
        g.how.as_str().into(),
        g.owner_compat.as_deref().into(),
        g.item_compat.as_deref().into(),
        g.at.into(),
        took_over.map(|t| t.from_owner.as_str()).into(),
        took_over
            .map(|t| int(t.from_generation))
            .transpose()?
            .into(),
        took_over.map(|t| t.lapsed_ms).into(),
    ])
}

pub(crate) const WRITES: Table = Table {
    name: "writes",
    key: &[],
    columns: &[
        ("revision", Int),
        ("resource_id", Text),
        ("generation", Int),
        ("owner_id", Text),
        ("verb", Text),
        ("accepted", Bool),
        ("refusal", Text),
        ("detail", Text),
        ("at", Int),
        ("holder_id", Text),
        ("holder_generation", Int),
    ],
};

pub(crate) fn write(w: &WriteRecord) -> Result<Vec<SqlValue>> {
    let holder = w.holder.as_ref();
    Ok(vec![
        int(w.revision)?.into(),
        w.resource_id.as_str().into(),
        int(w.generation)?.into(),
        w.owner_id.as_str().into(),
        w.verb.as_str().into(),
        w.accepted.into(),
        w.refusal.as_deref().into(),
        w.detail.as_str().into(),
        w.at.into(),
        holder.and_then(|h| h.owner_id.as_deref()).into(),
        holder.map(|h| int(h.generation)).transpose()?.into(),
    ])
}

pub(crate) const JOURNAL: Table = Table {
    name: "journal",
    key: &["seq"],
    columns: &[
        ("seq", Int),
        ("event_type", Text),
        ("source", Text),
        ("external_id", Text),
        ("payload", Text),
        ("fingerprint", Text),
        ("at", Int),
    ],
};

/// A journal row under `seq` (the event's own, or the next one when appending).
pub(crate) fn journal(seq: i64, e: &JournalEvent) -> Vec<SqlValue> {
    vec![
        seq.into(),
        e.event_type.as_str().into(),
        e.source.clone().into(),
        e.external_id.clone().into(),
        e.payload.clone().into(),
        e.fingerprint.clone().into(),
        e.at.into(),
    ]
}

pub(crate) const INGESTIONS: Table = Table {
    name: "ingestions",
    key: &["id"],
    columns: &[
        ("id", Int),
        ("at", Int),
        ("event_type", Text),
        ("source", Text),
        ("external_id", Text),
        ("outcome", Text),
        ("seq", Int),
    ],
};

/// An ingestion under `id`, or the next id when `None`.
pub(crate) fn ingestion(id: Option<i64>, i: &Ingestion) -> Vec<SqlValue> {
    vec![
        id.into(),
        i.at.into(),
        i.event_type.as_str().into(),
        i.source.as_deref().into(),
        i.external_id.as_deref().into(),
        i.outcome.as_str().into(),
        i.seq.into(),
    ]
}

pub(crate) const AUDIT: Table = Table {
    name: "audit",
    key: &["id"],
    columns: &[
        ("id", Int),
        ("at", Int),
        ("actor", Text),
        ("action", Text),
        ("target", Text),
        ("outcome", Text),
    ],
};

/// An audit entry under `id`, or the next id when `None`.
pub(crate) fn audit(id: Option<i64>, e: &AuditEntry) -> Vec<SqlValue> {
    vec![
        id.into(),
        e.at.into(),
        e.actor.as_str().into(),
        e.action.as_str().into(),
        e.target.as_str().into(),
        e.outcome.as_str().into(),
    ]
}

pub(crate) const CHAIN: Table = Table {
    name: "chain",
    key: &["revision"],
    columns: &[
        ("revision", Int),
        ("link", Text),
        ("nonce", Text),
        ("generations", Int),
        ("completions", Int),
    ],
};

pub(crate) fn link(l: &ChainLink) -> Result<Vec<SqlValue>> {
    Ok(vec![
        int(l.revision)?.into(),
        l.link.to_string().into(),
        l.nonce.as_str().into(),
        int(l.counts.generations)?.into(),
        int(l.counts.completions)?.into(),
    ])
}

pub(crate) const DEDUP: Table = Table {
    name: "dedup",
    key: &["source", "external_id"],
    columns: &[
        ("source", Text),
        ("external_id", Text),
        ("fingerprint", Text),
        ("seq", Int),
        ("first_seen_at", Int),
    ],
};

pub(crate) fn dedup(r: &DedupRecord) -> Vec<SqlValue> {
    vec![
        r.source.as_str().into(),
        r.external_id.as_str().into(),
        r.fingerprint.as_str().into(),
        r.seq.into(),
        r.first_seen_at.into(),
    ]
}

pub(crate) const SUBSCRIPTIONS: Table = Table {
    name: "subscriptions",
    key: &["subscription_id"],
    columns: &[
        ("subscription_id", Text),
        ("event_type", Text),
        ("sequence", Int),
        ("generation", Int),
        ("updated_at", Int),
        ("updated_by", Text),
    ],
};

pub(crate) fn subscription(s: &Subscription) -> Result<Vec<SqlValue>> {
    Ok(vec![
        s.subscription_id.as_str().into(),
        s.event_type.as_str().into(),
        int(s.sequence)?.into(),
        int(s.generation)?.into(),
        s.updated_at.into(),
        s.updated_by.clone().into(),
    ])
}

pub(crate) const SCHEDULES: Table = Table {
    name: "schedules",
    key: &["schedule_id"],
    columns: &[
        ("schedule_id", Text),
        ("trigger", Text),
        ("catch_up", Text),
        ("handler", Text),
        ("payload", Text),
        ("compat", Text),
        ("last_due", Int),
        ("next_due", Int),
        ("created_at", Int),
        ("paused_at", Int),
    ],
};

pub(crate) fn schedule(s: &Schedule) -> Result<Vec<SqlValue>> {
    Ok(vec![
        s.schedule_id.as_str().into(),
        json(&s.trigger)?.into(),
        json(&s.catch_up)?.into(),
        s.handler.as_str().into(),
        s.payload.as_str().into(),
        s.compat.as_str().into(),
        s.last_due.into(),
        s.next_due.into(),
        s.created_at.into(),
        s.paused_at.into(),
    ])
}

pub(crate) const HANDLER_PAUSES: Table = Table {
    name: "handler_pauses",
    key: &["handler"],
    columns: &[
        ("handler", Text),
        ("paused_at", Int),
        ("paused_by", Text),
        ("reason", Text),
    ],
};

pub(crate) fn handler_pause(p: &HandlerPause) -> Vec<SqlValue> {
    vec![
        p.handler.as_str().into(),
        p.paused_at.into(),
        p.paused_by.as_str().into(),
        p.reason.as_str().into(),
    ]
}

pub(crate) const HANDLER_RATES: Table = Table {
    name: "handler_rates",
    key: &["handler"],
    columns: &[("handler", Text), ("window_start", Int), ("claims", Int)],
};

pub(crate) fn rate_window(w: &RateWindow) -> Result<Vec<SqlValue>> {
    Ok(vec![
        w.handler.as_str().into(),
        w.window_start.into(),
        int(w.claims)?.into(),
    ])
}

pub(crate) const AUTHORITIES: Table = Table {
    name: "authorities",
    key: &["instance_id"],
    columns: &[
        ("instance_id", Text),
        ("compat", Text),
        ("build", Text),
        ("config", Text),
        ("started_at", Int),
        ("heartbeat_at", Int),
        ("stopped_at", Int),
        ("host", Text),
        ("pid", Int),
        ("published", Text),
    ],
};

pub(crate) fn authority(a: &Authority) -> Result<Vec<SqlValue>> {
    Ok(vec![
        a.instance_id.as_str().into(),
        a.compat.as_str().into(),
        a.build.as_str().into(),
        a.config.as_str().into(),
        a.started_at.into(),
        a.heartbeat_at.into(),
        a.stopped_at.into(),
        a.host.as_str().into(),
        a.pid.into(),
        json(&a.published)?.into(),
    ])
}

pub(crate) const IDEMPOTENCY: Table = Table {
    name: "idempotency",
    key: &["key"],
    columns: &[("key", Text), ("answer", Text), ("at", Int)],
};

pub(crate) const DEFINITIONS: Table = Table {
    name: "definitions",
    key: &["workflow_id"],
    columns: &[
        ("workflow_id", Text),
        ("fingerprint", Text),
        ("definition", Text),
        ("deployed_at", Int),
    ],
};

pub(crate) fn definition(d: &WorkflowDefinitionRow) -> Vec<SqlValue> {
    vec![
        d.workflow_id.as_str().into(),
        d.fingerprint.as_str().into(),
        d.definition.as_str().into(),
        d.deployed_at.into(),
    ]
}

pub(crate) const ACTION_OUTCOMES: Table = Table {
    name: "action_outcomes",
    key: &["invocation_id"],
    columns: &[
        ("invocation_id", Text),
        ("attempt", Int),
        ("outcome", Text),
        ("detail", Text),
        ("at", Int),
    ],
};

pub(crate) fn outcome(o: &ActionOutcome) -> Vec<SqlValue> {
    vec![
        o.invocation_id.as_str().into(),
        o.attempt.into(),
        o.outcome.as_str().into(),
        o.detail.as_str().into(),
        o.at.into(),
    ]
}

pub(crate) const ATTEMPT_ERRORS: Table = Table {
    name: "attempt_errors",
    key: &["work_id", "generation"],
    columns: &[
        ("work_id", Text),
        ("generation", Int),
        ("attempt", Int),
        ("owner_id", Text),
        ("at", Int),
        ("class", Text),
        ("code", Text),
        ("message", Text),
    ],
};

pub(crate) fn attempt_error(e: &AttemptError) -> Result<Vec<SqlValue>> {
    Ok(vec![
        e.work_id.as_str().into(),
        int(e.generation)?.into(),
        e.attempt.into(),
        e.owner_id.as_str().into(),
        e.at.into(),
        e.class.as_str().into(),
        e.code.as_str().into(),
        e.message.as_str().into(),
    ])
}
