//! What the two SQL providers (SQLite, PostgreSQL) share: everything but the driver and
//! the dialect. A provider implements [`Driver`] (run a statement, run a query, and the
//! tables it stores its own way); [`Tx`](crate::store::backend::Tx) is written once over it.
//!
//! - `value.rs`, `row.rs`: the values both drivers bind and read, and the typed getters.
//! - `encode.rs`, `decode.rs`: model ↔ row, one place per table.
//! - `dialect.rs`: parameter marks, upserts, booleans, index hints, new ids.
//! - `query.rs`, `statements.rs`: assembled conditions, reads by key, meta counters and
//!   the keyset-paged lists; `lanes.rs`: the claim lanes' skip-scans.
//! - `driver.rs`, `tx.rs`: the provider seam and the shared `Tx`; `attempt_errors.rs`: the
//!   statements of work items' attempt errors.
//! - here: the bounded retry loop around a whole transaction, the choice of schema
//!   upgrades, and the encodings of values that have no native column type.

mod attempt_errors;
pub(crate) mod decode;
pub(crate) mod dialect;
mod driver;
pub(crate) mod encode;
pub(crate) mod lanes;
pub(crate) mod query;
pub(crate) mod row;
pub(crate) mod statements;
mod tx;
pub(crate) mod value;

#[cfg(feature = "postgres")]
pub(crate) use driver::KnownEmpty;
pub(crate) use driver::{Driver, stamped_among, writable};

use std::hash::{BuildHasher, Hasher};
use std::time::Duration;

use crate::error::{Error, Result};

/// One attempt's failure: retry after a transient failure, or give up.
pub(crate) enum Step {
    Retry(Transient),
    Fail(Error),
}

/// A failure that may pass if the whole transaction runs again.
pub(crate) enum Transient {
    /// Another writer holds a lock, or the server aborted us to serialise (busy, 40001).
    Contention,
    /// The connection was lost before anything was committed; the text says how.
    Disconnected(String),
}

/// Refuses a write to a store opened read-only, before any transaction begins.
pub(crate) fn refuse_read_only(read_only: bool, label: &str) -> Result<()> {
    if read_only {
        Err(Error::ReadOnly(format!(
            "{label}: the store was opened read-only"
        )))
    } else {
        Ok(())
    }
}

/// Runs `attempt` until it succeeds, fails for good, or stays transient `max_attempts`
/// times; then the caller sees `STORE_CONTENTION` (contention) or `STORE_UNAVAILABLE`
/// (a connection that cannot be re-established), never a backend message about a lock.
pub(crate) fn retry<T>(
    max_attempts: u32,
    mut attempt: impl FnMut() -> std::result::Result<T, Step>,
) -> Result<T> {
    let mut last = Transient::Contention;
    for n in 1..=max_attempts {
        match attempt() {
            Ok(v) => return Ok(v),
            Err(Step::Fail(e)) => return Err(e),
            Err(Step::Retry(why)) => {
                last = why;
                if n < max_attempts {
                    backoff(n);
                }
            }
        }
    }
    Err(match last {
        Transient::Contention => Error::Contention {
            attempts: max_attempts,
        },
        Transient::Disconnected(why) => Error::Unavailable(format!(
            "{why} (still failing after {max_attempts} attempts)"
        )),
    })
}

/// Sleeps 1–64 ms, growing with the attempt, with random jitter so retriers spread out.
pub(crate) fn backoff(attempt: u32) {
    let base = 1u64 << attempt.min(5);
    let jitter = std::collections::hash_map::RandomState::new()
        .build_hasher()
        .finish()
        % (base + 1);
    std::thread::sleep(Duration::from_millis(base + jitter));
}

/// The refusal of a schema version below 1: no leasehold build ever wrote one, so the
/// store's contents cannot be read as any known schema (refused like a newer one).
pub(crate) fn unknown_version(label: &str, version: i64) -> Error {
    Error::Corrupt(format!(
        "{label}: store schema version {version} is not one any leasehold build wrote: not a store this build can trust"
    ))
}

/// The tables a schema script creates (`CREATE TABLE IF NOT EXISTS name`), in order.
pub(crate) fn schema_tables(schema: &str) -> Vec<&str> {
    schema
        .split("CREATE TABLE IF NOT EXISTS ")
        .skip(1)
        .filter_map(|rest| rest.split_whitespace().next())
        .collect()
}

/// The upgrades a store at schema `version` runs, in order, where `upgrades[n]` brings
/// version `n + 1` to `n + 2`: none for the current version, every one for version 1.
pub(crate) fn upgrades_from<'a>(upgrades: &'a [&'a str], version: i64) -> &'a [&'a str] {
    usize::try_from(version.saturating_sub(1))
        .ok()
        .and_then(|from| upgrades.get(from..))
        .unwrap_or(&[])
}

/// A `u64` as a 64-bit signed column; values beyond `i64::MAX` are refused, never wrapped.
pub(crate) fn int(v: u64) -> Result<i64> {
    i64::try_from(v).map_err(|_| {
        Error::Invalid(format!(
            "{v} does not fit the store's 64-bit signed integers"
        ))
    })
}

/// A `u64` query bound, saturated (a bound beyond every stored value stays beyond it).
pub(crate) fn bound(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

/// A row limit for `LIMIT ?`.
pub(crate) fn limit(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// JSON text of a nested struct.
pub(crate) fn json<T: serde::Serialize>(value: &T) -> Result<String> {
    serde_json::to_string(value)
        .map_err(|e| Error::Invalid(format!("cannot encode a stored value: {e}")))
}

/// The exclusive upper `(at, seq)` bound of an incident page: everything when there is no
/// previous page.
pub(crate) fn incident_bound(before: Option<crate::model::HistoryPosition>) -> (i64, i64) {
    before.map_or((i64::MAX, i64::MAX), |p| (p.at, bound(p.seq)))
}

/// The reclaim index's condition (`work_reclaim` in both schemas, written identically so
/// each planner matches the partial index): claims, and retries a lapsed claim left
/// backing off (they keep the lapsed expiry).
pub(crate) const RECLAIM: &str =
    "(state = 'claimed' OR (state = 'retry' AND lease_expires_at IS NOT NULL)) AND ";

#[cfg(test)]
mod tests {
    use super::upgrades_from;

    #[test]
    fn a_store_runs_every_upgrade_from_its_version_on() {
        let upgrades = ["1 to 2", "2 to 3"];
        assert_eq!(upgrades_from(&upgrades, 1), upgrades);
        assert_eq!(upgrades_from(&upgrades, 2), ["2 to 3"]);
        assert!(upgrades_from(&upgrades, 3).is_empty());
        for nonsense in [0, -1, i64::MIN, i64::MAX] {
            assert!(upgrades_from(&upgrades, nonsense).is_empty(), "{nonsense}");
        }
    }
}
