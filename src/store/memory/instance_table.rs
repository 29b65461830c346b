//! The memory store's workflow instances: the rows by id, the index every poll reads and
//! the one retention reads, kept in step by the two methods that write a row.
//!
//! Why: an authority asks for the runnable instances of each of its keys at every poll.
//! Found by scanning every row, that cost grew with every instance ever started (finished
//! ones included) and was paid under the store's one lock. The index holds, per compat, each
//! instance with a next eligible instant, in that instant's order — the SQL providers'
//! `instances_runnable` — so a poll reads only what is due. Finished instances are indexed
//! by when they finished (`instances_finished`), so retention reads only what it removes.

use std::collections::{BTreeMap, BTreeSet};

use crate::clock::Millis;
use crate::model::InstanceRow;

/// (compat, next eligible instant, instance id).
type DueKey = (String, Millis, String);

#[derive(Default)]
pub(super) struct InstanceTable {
    rows: BTreeMap<String, InstanceRow>,
    due: BTreeSet<DueKey>,
    /// (finished at, instance id) of every completed, failed or cancelled instance.
    finished: BTreeSet<(Millis, String)>,
}

/// The index entry of `row`, if it is ever runnable.
fn due_key(row: &InstanceRow) -> Option<DueKey> {
    (row.next_eligible_at).map(|at| (row.compat.clone(), at, row.instance_id.clone()))
}

/// The finished index's entry of `row`, if it has finished.
fn finished_key(row: &InstanceRow) -> Option<(Millis, String)> {
    (row.status.is_terminal()).then(|| (row.updated_at, row.instance_id.clone()))
}

impl InstanceTable {
    pub fn get(&self, id: &str) -> Option<&InstanceRow> {
        self.rows.get(id)
    }

    /// The rows by id, for reads in id order.
    pub fn rows(&self) -> &BTreeMap<String, InstanceRow> {
        &self.rows
    }

    /// Writes `row` over the instance with its id (or adds it); returns the row replaced.
    pub fn put(&mut self, row: InstanceRow) -> Option<InstanceRow> {
        let (due, finished) = (due_key(&row), finished_key(&row));
        let old = self.rows.insert(row.instance_id.clone(), row);
        self.unindex(old.as_ref());
        if let Some(key) = due {
            self.due.insert(key);
        }
        if let Some(key) = finished {
            self.finished.insert(key);
        }
        old
    }

    /// Removes the instance `id`; returns its row.
    pub fn remove(&mut self, id: &str) -> Option<InstanceRow> {
        let old = self.rows.remove(id);
        self.unindex(old.as_ref());
        old
    }

    /// Puts back what a write replaced: `old`, or nothing (the instance `id` was added).
    pub fn restore(&mut self, id: &str, old: Option<InstanceRow>) {
        match old {
            Some(row) => drop(self.put(row)),
            None => drop(self.remove(id)),
        }
    }

    fn unindex(&mut self, old: Option<&InstanceRow>) {
        if let Some(key) = old.and_then(due_key) {
            self.due.remove(&key);
        }
        if let Some(key) = old.and_then(finished_key) {
            self.finished.remove(&key);
        }
    }

    /// The first `limit` instances that finished before `before`, oldest first.
    pub fn finished_before(&self, before: Millis, limit: usize) -> Vec<&InstanceRow> {
        (self.finished.iter())
            .take_while(|(at, _)| *at < before)
            .take(limit)
            .filter_map(|(_, id)| self.rows.get(id))
            .collect()
    }

    /// The first `limit` instances of `compat` eligible by `now`, earliest first (then by
    /// id).
    pub fn runnable(&self, compat: &str, now: Millis, limit: usize) -> Vec<&InstanceRow> {
        let from = (compat.to_owned(), Millis::MIN, String::new());
        (self.due.range(from..))
            .take_while(|(c, at, _)| c == compat && *at <= now)
            .take(limit)
            .filter_map(|(_, _, id)| self.rows.get(id))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::model::InstanceStatus;

    /// Instance `i<id>`; finished (completed at `at`) when `at` is odd.
    fn row(id: u8, compat: u8, at: Option<u8>) -> InstanceRow {
        let finished = at.is_some_and(|t| t % 2 == 1);
        InstanceRow {
            instance_id: format!("i{id:02}"),
            workflow_id: "wf".into(),
            status: if finished {
                InstanceStatus::Completed
            } else {
                InstanceStatus::Running
            },
            compat: format!("c{compat}"),
            instance_revision: 1,
            next_eligible_at: at.map(Millis::from),
            waiting_event: None,
            principal: "p".into(),
            start_key: None,
            state: "{}".into(),
            created_at: 0,
            updated_at: at.map_or(0, Millis::from),
        }
    }

    proptest! {
        /// After any writes, removals and restores, each compat's runnable instances and
        /// the finished ones are what a scan of every row finds, in (instant, id) order.
        #[test]
        fn the_runnable_index_answers_what_a_scan_of_the_rows_finds(
            writes in proptest::collection::vec(
                (0..10u8, 0..2u8, proptest::option::of(0..8u8), 0..5u8), 0..50),
        ) {
            let mut table = InstanceTable::default();
            let mut undo = Vec::new();
            for (id, compat, at, op) in writes {
                let key = format!("i{id:02}");
                let old = match op {
                    0 => table.remove(&key),
                    _ => table.put(row(id, compat, at)),
                };
                undo.push((key, old));
                // Every fifth write is rolled back, as a failed transaction's are.
                if op == 4
                    && let Some((key, old)) = undo.pop() {
                        table.restore(&key, old);
                    }
                for compat in ["c0", "c1"] {
                    for now in [0, 3, 7] {
                        let mut scan: Vec<&InstanceRow> = (table.rows.values())
                            .filter(|r| r.compat == compat)
                            .filter(|r| r.next_eligible_at.is_some_and(|t| t <= now))
                            .collect();
                        scan.sort_by_key(|r| (r.next_eligible_at, r.instance_id.clone()));
                        scan.truncate(4);
                        prop_assert_eq!(table.runnable(compat, now, 4), scan);
                    }
                }
                for before in [0, 4, 9] {
                    let mut scan: Vec<&InstanceRow> = (table.rows.values())
                        .filter(|r| r.status.is_terminal() && r.updated_at < before)
                        .collect();
                    scan.sort_by_key(|r| (r.updated_at, r.instance_id.clone()));
                    scan.truncate(3);
                    prop_assert_eq!(table.finished_before(before, 3), scan);
                }
                prop_assert_eq!(table.due.len(), table.rows.values().filter(|r| r.next_eligible_at.is_some()).count());
                prop_assert_eq!(table.finished.len(), table.rows.values().filter(|r| r.status.is_terminal()).count());
            }
        }
    }
}
