//! The one row renderer every `inspect` view prints through. A view declares its columns
//! and how one of its rows yields its cells ([`ViewRow`]); the row's `Serialize` is its
//! JSON object. Printing a page as an aligned table or as JSON lines is written here once,
//! so every view keeps the same contract (camelCase keys, escaped cells, `(no rows)`).

use std::io::Write;

use serde::Serialize;

use super::{Ctx, Failure};
use crate::cli::output::{Table, json_line};
use crate::clock::Millis;

/// One row of a view: its JSON object (`Serialize`, camelCase) and its table cells.
pub(super) trait ViewRow: Serialize {
    /// The table's column headers, in order.
    const COLUMNS: &'static [&'static str];

    /// This row's cells, one per column, already safe to print (`cell` and friends);
    /// instants are written relative to `now`.
    fn cells(&self, now: Millis) -> Vec<String>;
}

/// The table of `rows` for people.
pub(super) fn table<R: ViewRow>(rows: &[R], now: Millis) -> Table {
    let mut table = Table::new(R::COLUMNS);
    for row in rows {
        table.row(row.cells(now));
    }
    table
}

impl Ctx<'_> {
    /// Prints the rows as JSON lines or the table, and returns the continuation key.
    pub(super) fn emit<R: ViewRow>(
        &self,
        out: &mut dyn Write,
        rows: &[R],
        next: Option<String>,
    ) -> Result<Option<String>, Failure> {
        if self.json {
            for row in rows {
                json_line(out, row)?;
            }
        } else {
            out.write_all(table(rows, self.now).render().as_bytes())?;
        }
        Ok(next)
    }
}
