//! The memory store's schedules: the rows by id and the index every poll reads, kept in
//! step by the two methods that write a row.
//!
//! Why: every authority's poll asks which schedules are due, and the dashboard's and the
//! idle probe's reads ask too. Found by scanning every row, that cost grew with every
//! schedule — paused ones included — and was paid under the store's one lock. The index
//! holds each unpaused schedule by its next due instant (the SQL providers'
//! `schedules_due_unpaused`), so a poll reads only what is due.

use std::collections::{BTreeMap, BTreeSet};

use crate::clock::Millis;
use crate::model::Schedule;

#[derive(Default)]
pub(super) struct ScheduleTable {
    rows: BTreeMap<String, Schedule>,
    /// (next due, schedule id) of every schedule not paused.
    due: BTreeSet<(Millis, String)>,
}

/// The index entry of the row `id`, unless it is paused.
fn due_key(id: &str, schedule: &Schedule) -> Option<(Millis, String)> {
    (schedule.paused_at.is_none()).then(|| (schedule.next_due, id.to_owned()))
}

impl ScheduleTable {
    pub fn get(&self, id: &str) -> Option<&Schedule> {
        self.rows.get(id)
    }

    /// The rows by id, for reads in id order.
    pub fn rows(&self) -> &BTreeMap<String, Schedule> {
        &self.rows
    }

    /// Writes `schedule` as the row `id` (or adds it); returns the row replaced. The
    /// signature of a map's, so the undo log's `put!` writes through it.
    pub fn insert(&mut self, id: String, schedule: Schedule) -> Option<Schedule> {
        let due = due_key(&id, &schedule);
        let old = self.rows.insert(id.clone(), schedule);
        self.unindex(&id, old.as_ref());
        if let Some(key) = due {
            self.due.insert(key);
        }
        old
    }

    /// Removes the schedule `id`; returns its row.
    pub fn remove(&mut self, id: &str) -> Option<Schedule> {
        let old = self.rows.remove(id);
        self.unindex(id, old.as_ref());
        old
    }

    fn unindex(&mut self, id: &str, old: Option<&Schedule>) {
        if let Some(key) = old.and_then(|old| due_key(id, old)) {
            self.due.remove(&key);
        }
    }

    /// The first `limit` unpaused schedules due by `now`, earliest first (then by id).
    pub fn due(&self, now: Millis, limit: usize) -> Vec<&Schedule> {
        (self.due.iter())
            .take_while(|(at, _)| *at <= now)
            .take(limit)
            .filter_map(|(_, id)| self.rows.get(id))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::model::schedule::{CatchUp, Trigger};

    /// Schedule `s<id>`, next due at `due`, paused when `paused`.
    fn schedule(id: u8, due: u8, paused: bool) -> Schedule {
        Schedule {
            schedule_id: format!("s{id:02}"),
            trigger: Trigger::Interval { every_ms: 10 },
            catch_up: CatchUp::Latest,
            handler: "h".into(),
            payload: "{}".into(),
            compat: "c".into(),
            last_due: None,
            next_due: Millis::from(due),
            created_at: 0,
            paused_at: paused.then_some(1),
        }
    }

    proptest! {
        /// After any writes and removals, and rolling some back as a failed transaction's
        /// are, the due schedules are what a scan of every row finds, in (due, id) order.
        #[test]
        fn the_due_index_answers_what_a_scan_of_the_rows_finds(
            writes in proptest::collection::vec((0..10u8, 0..8u8, any::<bool>(), 0..5u8), 0..50),
        ) {
            let mut table = ScheduleTable::default();
            for (id, due, paused, op) in writes {
                let key = format!("s{id:02}");
                let old = match op {
                    0 => table.remove(&key),
                    _ => table.insert(key.clone(), schedule(id, due, paused)),
                };
                if op == 4 {
                    match old {
                        Some(row) => drop(table.insert(key, row)),
                        None => drop(table.remove(&key)),
                    }
                }
                for now in [0, 3, 7] {
                    let mut scan: Vec<&Schedule> = (table.rows.values())
                        .filter(|s| s.paused_at.is_none() && s.next_due <= now)
                        .collect();
                    scan.sort_by_key(|s| (s.next_due, s.schedule_id.clone()));
                    scan.truncate(4);
                    prop_assert_eq!(table.due(now, 4), scan);
                }
            }
        }
    }
}
