//! The work list on SQLite. One filter leads through its `(column, id)` index (one seek per
//! value, merged); the others narrow the rows that index yields. SQLite's planner would
//! otherwise scan the primary key for a selective filter, so the lead index is named with
//! `INDEXED BY` (see the query-plan tests in `tests.rs`).

use super::tx::SqliteTx;
use crate::error::Result;
use crate::model::work::WorkFilter;
use crate::model::{PageRequest, WorkItem, WorkState};
use crate::store::sql::decode;
use crate::store::sql::dialect::SQLITE;
use crate::store::sql::query::Query;
use crate::store::sql::statements::Statements;
use crate::store::sql::value::SqlValue;

/// The filter's values, deduplicated and sorted.
struct Wanted<'f> {
    filter: &'f WorkFilter,
    states: Vec<&'static str>,
    compats: Vec<&'f str>,
    /// "What does this authority hold now" (the dashboard asks it for every authority on
    /// every refresh) reads the small partial index of claimed items, not every item the
    /// owner ever touched.
    claimed_by: bool,
}

impl Wanted<'_> {
    /// Adds every filter but the one on `lead` (which the caller seeks on).
    fn narrow(&self, q: &mut Query, lead: Option<&str>) {
        if lead != Some("owner_id")
            && let Some(owner) = &self.filter.owner
        {
            q.cond("owner_id =", owner.as_str());
        }
        if self.claimed_by {
            // A literal, so the planner sees the partial index's condition.
            q.literal("state = 'claimed'");
        } else if lead != Some("state") && !self.states.is_empty() {
            q.cond_in("state", &self.states);
        }
        if lead != Some("compat") && !self.compats.is_empty() {
            q.cond_in("compat", &self.compats);
        }
        if lead != Some("kind")
            && let Some(kind) = self.filter.kind
        {
            q.cond("kind =", kind.as_str());
        }
        if let Some(prefix) = &self.filter.id_prefix {
            q.cond("id >=", prefix.as_str());
            if let Some(end) = crate::model::page::prefix_end(prefix) {
                q.cond("id <", end);
            }
        }
    }

    /// The leading index, its column and the values to seek, if any filter leads.
    fn lead(&self) -> Option<(&'static str, &'static str, Vec<String>)> {
        let f = self.filter;
        let owned = |v: &[&str]| v.iter().map(|s| (*s).to_owned()).collect();
        if let (true, Some(owner)) = (self.claimed_by, &f.owner) {
            Some(("work_claimed_by", "owner_id", vec![owner.clone()]))
        } else if let Some(owner) = &f.owner {
            Some(("work_owner", "owner_id", vec![owner.clone()]))
        } else if !self.states.is_empty() {
            Some(("work_state", "state", owned(&self.states)))
        } else if !self.compats.is_empty() {
            Some(("work_compat", "compat", owned(&self.compats)))
        } else {
            f.kind
                .map(|kind| ("work_kind", "kind", vec![kind.as_str().to_owned()]))
        }
    }
}

pub(super) fn list_work(
    tx: &mut SqliteTx<'_>,
    filter: &WorkFilter,
    page: &PageRequest,
) -> Result<Vec<WorkItem>> {
    let n = page.limit.max(1);
    let mut states: Vec<&'static str> = filter.states.iter().map(|s| s.as_str()).collect();
    states.sort_unstable();
    states.dedup();
    let mut compats: Vec<&str> = filter.compats.iter().map(String::as_str).collect();
    compats.sort_unstable();
    compats.dedup();
    let claimed_by = filter.owner.is_some() && states == [WorkState::Claimed.as_str()];
    let wanted = Wanted {
        filter,
        states,
        compats,
        claimed_by,
    };
    let after = page.after.clone().map(SqlValue::Text);
    let Some((index, col, values)) = wanted.lead() else {
        let mut q = Query::new(&SQLITE);
        wanted.narrow(&mut q, None);
        return tx.page("work", "id", q, after, page.backwards, n, decode::work);
    };
    // The claimed-by index is left to the planner: a store created before it existed
    // (opened read-only, so nothing is added) still answers, through `work_owner`.
    let from = if claimed_by {
        "work".to_owned()
    } else {
        SQLITE.from("work", index)
    };
    let mut rows = Vec::new();
    for v in values {
        let mut q = Query::new(&SQLITE);
        q.cond(&format!("{col} ="), v);
        wanted.narrow(&mut q, Some(col));
        rows.extend(tx.page(
            &from,
            "id",
            q,
            after.clone(),
            page.backwards,
            n,
            decode::work,
        )?);
    }
    rows.sort_by(|a, b| a.id.cmp(&b.id));
    if page.backwards {
        let skip = rows.len().saturating_sub(n);
        rows.drain(..skip);
    } else {
        rows.truncate(n);
    }
    Ok(rows)
}
