//! The generation timeline of one resource: every grant (who held it, from when to when,
//! under which generation, how: acquire / claim / handoff) and every fenced write against
//! it, accepted or refused, in store-revision order — so a reclaim and the stale owner's
//! refused write read as one story.

use super::super::text::clean;
use super::super::theme::Role;
use super::{Cell, Column, Row, TableData, col, version};
use crate::clock::format_duration;
use crate::foundation::timefmt::TimeFmt;
use crate::model::{Grant, Lease, WorkItem, WriteRecord};

pub const COLUMNS: &[Column] = &[
    col("rev", 6, 0),
    col("at", 12, 1),
    col("gen", 4, 0),
    col("owner", 14, 0),
    col("event", 16, 0),
    col("outcome", 18, 0),
    col("held", 14, 2),
];

enum Entry<'a> {
    Grant(&'a Grant, usize),
    Write(&'a WriteRecord),
}

impl Entry<'_> {
    fn revision(&self) -> u64 {
        match self {
            Self::Grant(g, _) => g.revision,
            Self::Write(w) => w.revision,
        }
    }
}

/// The rows; `limit` is the per-list read limit the reader used.
#[must_use]
#[expect(
    clippy::too_many_lines,
    reason = "the timeline's columns, one per line"
)]
pub fn table(
    resource: Option<&str>,
    grants: &[Grant],
    writes: &[WriteRecord],
    lease: Option<&Lease>,
    item: Option<&WorkItem>,
    limit: usize,
    fmt: TimeFmt,
) -> TableData {
    let now = fmt.now;
    // A list that filled its limit may continue past its last row: only show revisions
    // both lists are complete for, and continue from there.
    let cut = [
        (grants.len() >= limit)
            .then(|| grants.last().map(|g| g.revision))
            .flatten(),
        (writes.len() >= limit)
            .then(|| writes.last().map(|w| w.revision))
            .flatten(),
    ]
    .into_iter()
    .flatten()
    .min();
    let mut entries: Vec<Entry<'_>> = grants
        .iter()
        .enumerate()
        .map(|(i, g)| Entry::Grant(g, i))
        .chain(writes.iter().map(Entry::Write))
        .collect();
    entries.retain(|e| cut.is_none_or(|c| e.revision() <= c));
    entries.sort_by_key(|e| (e.revision(), matches!(e, Entry::Write(..))));
    let holder_now = lease
        .filter(|l| l.is_live(now))
        .map(|l| l.generation)
        .or_else(|| item.and_then(|w| w.current_owner().map(|_| w.generation)));
    let rows: Vec<Row> = entries
        .iter()
        .map(|e| match e {
            Entry::Grant(g, i) => {
                let until = grants.get(i + 1).map(|n| n.at);
                let held = match until {
                    Some(end) => format!("{} → {}", format_duration(end - g.at), fmt.wall(end)),
                    None if holder_now == Some(g.generation) => {
                        format!("{} → now", format_duration(now - g.at))
                    }
                    None => "ended".into(),
                };
                let reclaim = g.generation > 1 && g.how == "claim";
                Row {
                    key: format!("{:020}g{}", g.revision, g.generation),
                    cells: vec![
                        Cell::num(i64::try_from(g.revision).unwrap_or(i64::MAX)),
                        Cell::timed(fmt.wall(g.at), g.at),
                        Cell::num(i64::try_from(g.generation).unwrap_or(i64::MAX))
                            .role(Role::Accent),
                        Cell::raw(&g.owner_id, 40),
                        Cell::text(format!("grant: {}", clean(g.how.as_str(), 12)))
                            .role(Role::LeaseLive),
                        Cell::text(if g.generation == 1 {
                            "first holder"
                        } else {
                            "new generation"
                        })
                        .role_if(reclaim, Role::Warning),
                        Cell::text(held),
                    ],
                    detail: vec![
                        ("revision".into(), g.revision.to_string()),
                        ("at".into(), fmt.at(g.at)),
                        (
                            "grant".into(),
                            format!(
                                "generation {} to {} by {}",
                                g.generation,
                                clean(&g.owner_id, 100),
                                clean(g.how.as_str(), 40)
                            ),
                        ),
                        (
                            "holder compat / item compat".into(),
                            format!(
                                "{} / {}",
                                g.owner_compat.as_deref().unwrap_or("-"),
                                g.item_compat.as_deref().unwrap_or("-")
                            ),
                        ),
                        (
                            "held until".into(),
                            until.map_or_else(|| "the next grant (none yet)".into(), |t| fmt.at(t)),
                        ),
                    ],
                    version: version(g),
                    ..Row::default()
                }
            }
            Entry::Write(w) => {
                let outcome = if w.accepted {
                    "accepted".to_owned()
                } else {
                    format!("FENCED {}", w.refusal.as_deref().unwrap_or("refused"))
                };
                Row {
                    key: format!("{:020}w{}", w.revision, w.generation),
                    cells: vec![
                        Cell::num(i64::try_from(w.revision).unwrap_or(i64::MAX)),
                        Cell::timed(fmt.wall(w.at), w.at),
                        Cell::num(i64::try_from(w.generation).unwrap_or(i64::MAX)),
                        Cell::raw(&w.owner_id, 40),
                        Cell::text(format!("write: {}", clean(w.verb.as_str(), 12))),
                        Cell::text(outcome.clone()).role(if w.accepted {
                            Role::Ok
                        } else {
                            Role::Fenced
                        }),
                        Cell::text(""),
                    ],
                    detail: vec![
                        ("revision".into(), w.revision.to_string()),
                        ("at".into(), fmt.at(w.at)),
                        (
                            "write".into(),
                            format!(
                                "{} by {} presenting generation {}",
                                clean(w.verb.as_str(), 40),
                                clean(&w.owner_id, 100),
                                w.generation
                            ),
                        ),
                        ("outcome".into(), outcome),
                        ("detail".into(), clean(&w.detail, 2_000)),
                    ],
                    version: version(w),
                    ..Row::default()
                }
            }
        })
        .collect();
    let fenced = entries
        .iter()
        .filter(|e| matches!(e, Entry::Write(w) if !w.accepted))
        .count();
    let n_grants = entries
        .iter()
        .filter(|e| matches!(e, Entry::Grant(..)))
        .count();
    let mut data = TableData::new(
        COLUMNS,
        rows,
        match resource {
            // Nothing in the history, no lease and no item by that name: most likely a
            // mistyped resource, which an empty table alone would not say.
            Some(r) if entries.is_empty() && lease.is_none() && item.is_none() => format!(
                "nothing recorded for {}: no grant or write in the store's history (mistyped, or trimmed by retention)",
                clean(r, 60)
            ),
            Some(_) => format!(
                "{n_grants} grants, {} writes, {fenced} fenced",
                entries.len() - n_grants
            ),
            None => String::new(),
        },
    );
    data.last_key = entries.last().map(|e| e.revision().to_string());
    data.first_key = None;
    data.fetched = if cut.is_some() { usize::MAX } else { 0 };
    data
}
