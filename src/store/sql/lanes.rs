//! The claim lanes on SQL: the statements that find each (kind, handler) lane by a
//! skip-scan of its index — seeks past the previous lane, never a read of a lane's items —
//! and read one lane's due items in claim order. Shared by both providers; each runs the
//! item read itself, to remember the rows it fetched.
//!
//! The seek past a lane is two `LIMIT 1` seeks, the next handler of the same kind and the
//! first lane of the next kind, rather than a row-value `(kind, handler) > (?, ?)`: SQLite
//! seeks a row-value inequality on its first column only and filters the rest, which reads
//! the whole of the previous lane — a backlog — on every claim.
//!
//! The statements every claim sends are built once per dialect and kept
//! ([`Dialect::memo`]): a claim runs under the write lock, and formatting them anew at each
//! one was work done there for nothing.

use super::RECLAIM;
use super::decode;
use super::dialect::Dialect;
use super::driver::Driver;
use super::encode::Kind;
use super::limit;
use super::row::{SqlRow, enumerated, int, text};
use super::statements::Statements;
use super::value::SqlValue;
use crate::clock::Millis;
use crate::error::Result;
use crate::model::work::WorkLane;
use crate::model::{WorkItem, WorkKind};

/// The lane index's condition beyond `due_at` (`work_lane` in both schemas, written
/// identically so each planner matches the partial index): claims are not in a lane.
macro_rules! in_lane {
    () => {
        "state <> 'claimed'"
    };
}
const IN_LANE: &str = in_lane!();

/// One lane's items of a compat digest due by an instant, in claim order; parameters:
/// compat, kind, handler, now, limit (see [`lane_items_params`]).
pub(crate) fn lane_items_sql(dialect: &Dialect) -> &'static str {
    dialect.memo("lanes", "lane_items", || {
        dialect.marks(&format!(
            "SELECT * FROM {} WHERE compat = ?1 AND kind = ?2 AND handler = ?3 AND due_at <= ?4 \
             AND {IN_LANE} ORDER BY priority DESC, due_at, id LIMIT ?5",
            dialect.from("work", "work_lane")
        ))
    })
}

pub(crate) fn lane_items_params(
    compat: &str,
    lane: &WorkLane,
    now: Millis,
    n: usize,
) -> Vec<SqlValue> {
    vec![
        compat.into(),
        lane.kind.as_str().into(),
        lane.handler.as_str().into(),
        now.into(),
        limit(n).into(),
    ]
}

/// The first row (`columns`, led by kind and handler, in index order) of the lane after
/// `(kind, handler)` = `after` among the rows of `from` matching `cond`: the next handler of
/// the same kind, else the first of the next kind — each a seek of the lane index.
pub(crate) fn after_lane(columns: &str, from: &str, cond: &str, after: (&str, &str)) -> String {
    let (kind, handler) = after;
    format!(
        "SELECT {columns} FROM (SELECT {columns} FROM {from} WHERE {cond} AND kind = {kind} \
         AND handler > {handler} ORDER BY {columns} LIMIT 1) AS same_kind \
         UNION ALL SELECT {columns} FROM (SELECT {columns} FROM {from} WHERE {cond} \
         AND kind > {kind} ORDER BY {columns} LIMIT 1) AS next_kind \
         ORDER BY 1, 2 LIMIT 1"
    )
}

/// Where a claim lane is: an unclaimed, non-terminal item of compat digest `?1`.
pub(crate) const CLAIM_LANE: &str = concat!("compat = ?1 AND due_at IS NOT NULL AND ", in_lane!());

/// The lanes of `compat` with an unclaimed, non-terminal item, in [`WorkLane::sort_key`]
/// order.
pub(crate) fn claim_lanes<D: Driver>(tx: &mut D, compat: &str) -> Result<Vec<WorkLane>> {
    tx.settle()?;
    let sql = D::DIALECT.marks(&after_lane(
        "kind, handler",
        &D::DIALECT.from("work", "work_lane"),
        CLAIM_LANE,
        ("?2", "?3"),
    ));
    let mut lanes: Vec<WorkLane> = Vec::new();
    loop {
        let (kind, handler) = lanes
            .last()
            .map_or(("", ""), |l| (l.kind.as_str(), l.handler.as_str()));
        let params = [compat.into(), kind.into(), handler.into()];
        match tx.one(&sql, &params, decode::lane)? {
            Some(lane) => lanes.push(lane),
            None => return Ok(lanes),
        }
    }
}

/// [`claim_lanes`] as one statement (parameter: compat): the same seeks, chained by a
/// recursive query on the server, for a provider where each statement is a round trip
/// under the write lock. Rows in the same order.
pub(crate) fn claim_lanes_at_once(dialect: &Dialect) -> &'static str {
    dialect.memo("lanes", "claim_lanes_at_once", || {
        dialect.marks(&format!(
            "{} SELECT kind, handler FROM lane ORDER BY n",
            lane_cte(dialect)
        ))
    })
}

/// `WITH RECURSIVE lane(kind, handler, n) AS (…)`: the claim lanes of compat `?1`, numbered
/// in [`claim_lanes`] order, each found by the seeks of [`after_lane`] from the one before.
fn lane_cte(dialect: &Dialect) -> String {
    let from = dialect.from("work", "work_lane");
    let seek = |after| after_lane("kind, handler", &from, CLAIM_LANE, after);
    format!(
        "WITH RECURSIVE lane(kind, handler, n) AS (\
         SELECT kind, handler, 1 FROM ({first}) AS first \
         UNION ALL SELECT next.kind, next.handler, lane.n + 1 \
         FROM lane CROSS JOIN LATERAL ({next}) AS next)",
        first = seek(("''", "''")),
        next = seek(("lane.kind", "lane.handler")),
    )
}

/// What [`claim_reads_at_once`] answers, row by row.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum ClaimRead {
    /// A lapsed claim, in reclaim order.
    Lapsed(WorkItem),
    /// A claim lane, with one of its due items in claim order (`None`: none is due).
    Lane(WorkLane, Option<WorkItem>),
}

/// A row of [`claim_reads_at_once`].
pub(crate) fn claim_read(row: &dyn SqlRow) -> Result<ClaimRead> {
    if int(row, "lane_n")? == 0 {
        return Ok(ClaimRead::Lapsed(decode::work(row)?));
    }
    let lane = WorkLane::new(
        enumerated(row, "lane_kind", WorkKind::parse)?,
        text(row, "lane_handler")?,
    );
    let item = match row.value("id".into(), Kind::Text)? {
        SqlValue::Null => None,
        _ => Some(decode::work(row)?),
    };
    Ok(ClaimRead::Lane(lane, item))
}

/// Everything a claim of one compat digest reads before it writes, as one statement
/// (parameters: compat, now, limit), for a provider where each statement is a round trip
/// under the write lock (it needs `LATERAL`): the lapsed claims due by `now` (`lane_n` 0,
/// in reclaim order, at most `limit`), then each claim lane (`lane_n` from 1, in
/// [`claim_lanes`] order) with its first items due by `now` in claim order, at most
/// `limit` over all the lanes (a lane's share rounded up: [`lane_share`]), or one row
/// without an item when none is due. Each part reads what [`lane_items_sql`],
/// [`claim_lanes_at_once`] and the lapsed claims' read would, by the same index seeks.
pub(crate) fn claim_reads_at_once(dialect: &Dialect) -> &'static str {
    dialect.memo("lanes", "claim_reads_at_once", || {
        let from = dialect.from("work", "work_lane");
        dialect.marks(&format!(
            "{lanes}, \
             share AS (SELECT CASE WHEN ?3::bigint > 0 \
             THEN (?3::bigint - 1) / greatest(count(*), 1) + 1 ELSE 0 END \
             AS per_lane FROM lane) \
             SELECT 0::bigint AS lane_n, NULL::text AS lane_kind, NULL::text AS lane_handler, \
             lapsed.* FROM (SELECT row_number() OVER (ORDER BY due_at, id) AS seq, * FROM work \
             WHERE compat = ?1 AND {RECLAIM}due_at <= ?2 ORDER BY due_at, id LIMIT ?3) AS lapsed \
             UNION ALL SELECT lane.n::bigint, lane.kind, lane.handler, due.* \
             FROM lane CROSS JOIN share LEFT JOIN LATERAL (\
             SELECT row_number() OVER (ORDER BY priority DESC, due_at, id) AS seq, * FROM {from} \
             WHERE compat = ?1 AND kind = lane.kind AND handler = lane.handler AND due_at <= ?2 \
             AND {IN_LANE} ORDER BY priority DESC, due_at, id LIMIT share.per_lane) AS due ON TRUE \
             ORDER BY lane_n, seq",
            lanes = lane_cte(dialect),
        ))
    })
}

/// How many items [`claim_reads_at_once`] reads of each of `lanes` lanes for a claim of
/// `n`: the statement's limit over the lanes, rounded up.
pub(crate) fn lane_share(n: usize, lanes: usize) -> usize {
    let bound = usize::try_from(limit(n)).unwrap_or(usize::MAX);
    bound.div_ceil(lanes.max(1))
}

/// Per lane, the earliest `next_eligible_at` of its pending / retry items.
pub(crate) fn waiting_lanes<D: Driver>(tx: &mut D) -> Result<Vec<(WorkLane, Millis)>> {
    tx.settle()?;
    let sql = D::DIALECT.marks(&after_lane(
        "kind, handler, next_eligible_at",
        &D::DIALECT.from("work", "work_lane_waiting"),
        "state IN ('pending', 'retry')",
        ("?1", "?2"),
    ));
    let mut lanes: Vec<(WorkLane, Millis)> = Vec::new();
    loop {
        let (kind, handler) = lanes
            .last()
            .map_or(("", ""), |(l, _)| (l.kind.as_str(), l.handler.as_str()));
        match tx.one(&sql, &[kind.into(), handler.into()], decode::lane_wait)? {
            Some(found) => lanes.push(found),
            None => return Ok(lanes),
        }
    }
}
