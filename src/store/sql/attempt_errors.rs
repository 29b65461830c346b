//! The attempt errors of work items (`attempt_errors`, keyed by work id and generation),
//! the same statements on both SQL providers; every one is a range of the primary key.

use super::decode;
use super::driver::Driver;
use super::encode;
use super::limit;
use crate::error::Result;
use crate::model::AttemptError;

/// Adds `error` and drops its item's errors below the newest `keep`: the generation of
/// the `keep`-th newest bounds them (none is dropped while the item has fewer).
pub(crate) fn add<D: Driver>(tx: &mut D, error: &AttemptError, keep: usize) -> Result<()> {
    tx.execute(
        D::DIALECT.upsert(&encode::ATTEMPT_ERRORS),
        &encode::attempt_error(error)?,
    )?;
    tx.execute(
        D::DIALECT.text(
            "DELETE FROM attempt_errors WHERE work_id = ?1 AND generation < (SELECT generation FROM attempt_errors WHERE work_id = ?1 ORDER BY generation DESC LIMIT 1 OFFSET ?2)",
        ),
        &[error.work_id.as_str().into(), limit(keep.max(1) - 1).into()],
    )?;
    Ok(())
}

/// An item's errors, newest first.
pub(crate) fn of<D: Driver>(tx: &mut D, work_id: &str) -> Result<Vec<AttemptError>> {
    tx.query(
        D::DIALECT.text("SELECT * FROM attempt_errors WHERE work_id = ?1 ORDER BY generation DESC"),
        &[work_id.into()],
        decode::attempt_error,
    )
}

/// A page of every item's errors in key order, strictly after `after`.
pub(crate) fn page<D: Driver>(
    tx: &mut D,
    after: Option<(&str, u64)>,
    n: usize,
) -> Result<Vec<AttemptError>> {
    match after {
        Some((work_id, generation)) => tx.query(
            D::DIALECT.text(
                "SELECT * FROM attempt_errors WHERE (work_id, generation) > (?1, ?2) ORDER BY work_id, generation LIMIT ?3",
            ),
            &[
                work_id.into(),
                super::int(generation)?.into(),
                limit(n).into(),
            ],
            decode::attempt_error,
        ),
        None => tx.query(
            D::DIALECT.text("SELECT * FROM attempt_errors ORDER BY work_id, generation LIMIT ?1"),
            &[limit(n).into()],
            decode::attempt_error,
        ),
    }
}

/// Drops an item's errors (with the item).
pub(crate) fn delete<D: Driver>(tx: &mut D, work_id: &str) -> Result<()> {
    tx.execute(
        D::DIALECT.text("DELETE FROM attempt_errors WHERE work_id = ?1"),
        &[work_id.into()],
    )?;
    Ok(())
}
