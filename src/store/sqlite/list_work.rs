//! The work list on SQLite. One filter leads through its `(column, id)` index (one seek per
//! value, merged); the others narrow the rows that index yields. The state and owner
//! indexes hold no claimed item, so claimed ones are sought in `work_claimed_by`. SQLite's
//! planner would otherwise scan the primary key for a selective filter, so the lead index
//! is named with `INDEXED BY` (see the query-plan tests in `plan_tests.rs`).

use super::tx::SqliteTx;
use crate::error::Result;
use crate::model::work::WorkFilter;
use crate::model::{PageRequest, WorkItem, WorkState};
use crate::store::sql::decode;
use crate::store::sql::dialect::SQLITE;
use crate::store::sql::query::Query;
use crate::store::sql::statements::Statements;
use crate::store::sql::value::SqlValue;

/// Claimed items: the rows of `work_claimed_by`, and the condition a query names (as a
/// literal, so the planner sees the partial index's condition) to read through it.
const CLAIMED: &str = "state = 'claimed'";
/// Every item but the claimed ones: the rows `work_state` and `work_owner` hold.
const UNCLAIMED: &str = "state <> 'claimed'";

/// One seek of the list: through `index`, the rows whose `column` is `value`, all of which
/// meet `only`.
struct Seek {
    index: &'static str,
    column: &'static str,
    value: String,
    only: &'static str,
}

impl Seek {
    fn new(index: &'static str, column: &'static str, value: &str, only: &'static str) -> Self {
        Self {
            index,
            column,
            value: value.to_owned(),
            only,
        }
    }
}

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
        if !self.claimed_by && lead != Some("state") && !self.states.is_empty() {
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

    /// Whether the filter lets claimed items (or other ones) through.
    fn wants(&self, claimed: bool) -> bool {
        self.states.is_empty()
            || self
                .states
                .iter()
                .any(|s| (*s == WorkState::Claimed.as_str()) == claimed)
    }

    /// The seeks the list is merged from, if any filter leads. The state and owner
    /// indexes leave claimed items to `work_claimed_by` (see `schema.sql`), so a filter
    /// that lets claimed items through seeks it too.
    fn seeks(&self) -> Option<Vec<Seek>> {
        let f = self.filter;
        if let Some(owner) = &f.owner {
            let mut seeks = Vec::new();
            if self.wants(false) {
                seeks.push(Seek::new("work_owner", "owner_id", owner, UNCLAIMED));
            }
            if self.wants(true) {
                seeks.push(Seek::new("work_claimed_by", "owner_id", owner, CLAIMED));
            }
            Some(seeks)
        } else if !self.states.is_empty() {
            let seeks = self.states.iter().map(|state| {
                if *state == WorkState::Claimed.as_str() {
                    // Every claimed item, sorted: as many as the fleet has in flight.
                    Seek::new("work_claimed_by", "state", state, CLAIMED)
                } else {
                    Seek::new("work_state", "state", state, UNCLAIMED)
                }
            });
            Some(seeks.collect())
        } else if !self.compats.is_empty() {
            let seeks = self.compats.iter();
            Some(
                seeks
                    .map(|c| Seek::new("work_compat", "compat", c, ""))
                    .collect(),
            )
        } else {
            f.kind
                .map(|kind| vec![Seek::new("work_kind", "kind", kind.as_str(), "")])
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
    let Some(seeks) = wanted.seeks() else {
        let mut q = Query::new(&SQLITE);
        wanted.narrow(&mut q, None);
        return tx.page("work", "id", q, after, page.backwards, n, decode::work);
    };
    let mut rows = Vec::new();
    for seek in seeks {
        let mut q = Query::new(&SQLITE);
        q.cond(&format!("{} =", seek.column), seek.value);
        if !seek.only.is_empty() {
            q.literal(seek.only);
        }
        wanted.narrow(&mut q, Some(seek.column));
        rows.extend(tx.page(
            &SQLITE.from("work", seek.index),
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
