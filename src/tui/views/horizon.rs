//! Horizon: what becomes due over the next minutes ([`crate::ops::horizon`], the same
//! `inspect horizon` prints) — one row per minute with its count per source and a bar;
//! `d` on a row lists what is behind it.

use super::super::theme::Role;
use super::{Cell, Column, Row, TableData, col};
use crate::foundation::timefmt::TimeFmt;
use crate::ops::horizon::{Bucket, Horizon, Source};

pub const COLUMNS: &[Column] = &[
    col("from", 10, 0),
    col("firings", 7, 1),
    col("delayed", 7, 1),
    col("backoff", 7, 1),
    col("timers", 7, 1),
    col("load", 20, 2),
    col("first", 30, 2),
];

/// The widest bar, for the fullest slice.
const BAR: u64 = 20;

#[must_use]
pub fn table(h: &Horizon, fmt: TimeFmt) -> TableData {
    let most = h
        .buckets
        .iter()
        .map(Bucket::total)
        .max()
        .unwrap_or(0)
        .max(1);
    let rows: Vec<Row> = h
        .buckets
        .iter()
        .map(|b| {
            let n = |s: Source| b.counts.get(&s).copied().unwrap_or(0);
            let count = |s: Source| {
                let v = n(s);
                Cell::raw(&v.to_string(), 12).role_if(v == 0, Role::Muted)
            };
            let bar = "█".repeat(usize::try_from(b.total() * BAR / most).unwrap_or(0));
            let first: Vec<&str> = b.entries.iter().take(3).map(|e| e.id.as_str()).collect();
            Row {
                key: b.from.to_string(),
                cells: vec![
                    Cell::timed(fmt.relative(b.from), b.from),
                    count(Source::Firing),
                    count(Source::Delayed),
                    count(Source::Backoff),
                    count(Source::WorkflowTimer),
                    Cell::raw(&bar, 80).role(Role::Accent),
                    Cell::raw(&first.join(" "), 200).role(Role::Muted),
                ],
                detail: vec![
                    ("from".into(), fmt.at(b.from)),
                    ("due".into(), b.total().to_string()),
                ],
                ..Row::default()
            }
        })
        .collect();
    let total: u64 = h.buckets.iter().map(Bucket::total).sum();
    let summary = format!(
        "{}{total} due in the next {} min",
        if h.capped { "at least " } else { "" },
        h.bucket_ms * i64::try_from(h.buckets.len()).unwrap_or(0) / 60_000
    );
    TableData::new(COLUMNS, rows, summary)
}
