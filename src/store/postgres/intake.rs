//! The PostgreSQL intake (docs/ARCHITECTURE.md#intake, `intake.sql`): the producer's side,
//! [`enqueue_in`], which writes a request inside the application's own transaction, and the
//! store's side, which takes committed requests out under the write lock and keeps the
//! refused ones.

use super::tx::PgTx;
use crate::clock::Millis;
use crate::error::{Error, Result};
use crate::model::work::{NewWork, WorkKind};
use crate::model::{HandlerKeys, IntakeCounts, IntakeRow};
use crate::store::sql::row::{Col, SqlRow, int, opt_int, opt_text, text};
use crate::store::sql::{Driver, limit};

/// The oldest requests, removed and answered in one statement: the write lock keeps every
/// other mover out, and the application's transactions only ever insert.
const TAKE: &str = "DELETE FROM intake WHERE seq IN (SELECT seq FROM intake ORDER BY seq LIMIT $1) \
                    RETURNING *";

const REFUSE: &str = "INSERT INTO intake_refused (seq, id, handler, handler_version, compat, \
                      payload, logical_effect_id, idempotency_key, max_attempts, not_before, \
                      priority, reason, refused_at) \
                      VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)";

/// Both tables are drained (the intake at every claim) or wait for a person, so they stay
/// small enough to count.
const COUNTS: &str = "SELECT (SELECT count(*) FROM intake), (SELECT count(*) FROM intake_refused)";

const INSERT: &str = "INSERT INTO intake (id, handler, compat, payload, logical_effect_id, \
                      idempotency_key, max_attempts, not_before, priority) \
                      VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING seq";

/// Writes `spec`, an effect stamped with the key `keys` gives its handler, into the intake
/// through the application's own `client` — a `postgres::Transaction` it holds, typically —
/// so the effect exists exactly when that transaction commits and not at all after a
/// rollback. No lock of the store is taken: the application's transaction waits for no
/// claimer, and no claimer for it. The next claim (or enqueue) of any authority moves the
/// request into a work item under the rules of [`crate::Store::enqueue`]: a repeat of an
/// item (by id or idempotency key) adds nothing, and a request another effect's key or id
/// conflicts with is kept refused, with the reason, in `intake_refused`. Answers the
/// request's `seq`.
///
/// The client must reach the store's database and schema (its `search_path`).
///
/// # Errors
/// `INVALID` for a kind other than an effect, an id, handler, logical effect id or
/// idempotency key that fails [`crate::ids::check_id`], a handler `keys` has no (or an
/// empty) key for, a payload that is not JSON, `max_attempts` 0 or a `not_before` past the
/// end of the year 9999, as [`crate::Store::enqueue`] (nothing is written); `STORE_UNAVAILABLE` when the insert fails (a store without the
/// intake, a lost connection), with the server's message.
pub fn enqueue_in(
    client: &mut impl postgres::GenericClient,
    spec: &NewWork,
    keys: impl HandlerKeys,
) -> Result<i64> {
    if spec.kind != WorkKind::Effect {
        return Err(Error::Invalid(format!(
            "work {}: the intake takes effects only, not {}",
            spec.id,
            spec.kind.as_str()
        )));
    }
    let (spec, compat) = crate::store::work::stamp(spec.clone(), &keys)?;
    let row = client
        .query_one(
            INSERT,
            &[
                &spec.id,
                &spec.handler,
                &compat,
                &spec.payload,
                &spec.logical_effect_id,
                &spec.idempotency_key,
                &i64::from(spec.max_attempts),
                &spec.not_before,
                &i64::from(spec.priority),
            ],
        )
        .map_err(|e| Error::Unavailable(format!("enqueue of {} into the intake: {e}", spec.id)))?;
    row.try_get(0)
        .map_err(|e| Error::Unavailable(format!("enqueue of {} into the intake: {e}", spec.id)))
}

/// Removes up to `n` committed requests, oldest first.
pub(super) fn take(tx: &mut PgTx<'_>, n: usize) -> Result<Vec<IntakeRow>> {
    let mut rows = tx.query(TAKE, &[limit(n).into()], decode)?;
    rows.sort_unstable_by_key(|r| r.seq);
    Ok(rows)
}

/// Keeps a refused request as written, with why and when.
pub(super) fn refuse(tx: &mut PgTx<'_>, row: &IntakeRow, reason: &str, at: Millis) -> Result<()> {
    tx.execute(
        REFUSE,
        &[
            row.seq.into(),
            (&row.id).into(),
            (&row.handler).into(),
            row.handler_version.as_ref().into(),
            row.compat.as_ref().into(),
            (&row.payload).into(),
            row.logical_effect_id.as_ref().into(),
            row.idempotency_key.as_ref().into(),
            row.max_attempts.into(),
            row.not_before.into(),
            row.priority.into(),
            reason.into(),
            at.into(),
        ],
    )?;
    Ok(())
}

/// How many requests wait, and how many were refused.
pub(super) fn counts(tx: &mut PgTx<'_>) -> Result<IntakeCounts> {
    let counted = tx.query(COUNTS, &[], |row| {
        Ok((int(row, Col::Pos(0))?, int(row, Col::Pos(1))?))
    })?;
    let (waiting, refused) = counted.into_iter().next().unwrap_or_default();
    Ok(IntakeCounts {
        waiting: u64::try_from(waiting).unwrap_or(0),
        refused: u64::try_from(refused).unwrap_or(0),
    })
}

fn decode(row: &dyn SqlRow) -> Result<IntakeRow> {
    Ok(IntakeRow {
        seq: int(row, "seq")?,
        id: text(row, "id")?,
        handler: text(row, "handler")?,
        handler_version: opt_text(row, "handler_version")?,
        compat: opt_text(row, "compat")?,
        payload: text(row, "payload")?,
        logical_effect_id: opt_text(row, "logical_effect_id")?,
        idempotency_key: opt_text(row, "idempotency_key")?,
        max_attempts: int(row, "max_attempts")?,
        not_before: opt_int(row, "not_before")?,
        priority: int(row, "priority")?,
    })
}
