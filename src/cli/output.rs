//! What the CLI prints: aligned tables for people, one JSON object per line for scripts.
//!
//! Anything that came out of a store (ids, handler names, event types, messages) may be
//! hostile: in tables it goes through [`crate::foundation::text_cell`]. `--json` output is
//! serialised by `serde_json`, which escapes for JSON.

use std::io::{self, Write};

use serde::Serialize;

use crate::clock::Millis;
use crate::foundation::text_cell::cell_max;
use crate::foundation::timefmt::{TimeFmt, Zone};

/// `yes` or `no`.
#[must_use]
pub fn yes_no(b: bool) -> String {
    if b { "yes" } else { "no" }.to_owned()
}

/// A short form of a digest or token for people (the first 8 characters).
#[must_use]
pub fn short(digest: &str) -> String {
    cell_max(&digest.chars().take(8).collect::<String>(), 8)
}

/// An instant for people: local wall time and distance from `now`, in the dashboard's
/// words (`14:03:07 · in 4.2s`, `14:00:02 · 3m ago`).
#[must_use]
pub fn when(at: Millis, now: Millis) -> String {
    TimeFmt::new(now, Zone::Local).at(at)
}

/// An optional instant as [`when`]; `-` when absent.
#[must_use]
pub fn opt_when(at: Option<Millis>, now: Millis) -> String {
    at.map_or_else(|| "-".to_owned(), |at| when(at, now))
}

/// An aligned, headed table. Cells must already be safe (`foundation::text_cell`).
#[derive(Debug, Clone)]
pub struct Table {
    headers: Vec<&'static str>,
    rows: Vec<Vec<String>>,
}

impl Table {
    /// An empty table with these column headers.
    #[must_use]
    pub fn new(headers: &[&'static str]) -> Self {
        Self {
            headers: headers.to_vec(),
            rows: Vec::new(),
        }
    }

    /// Adds one row (missing cells print empty, extra cells are dropped).
    pub fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// Renders the table: a header line, then one line per row, columns separated by two
    /// spaces; `(no rows)` under the header when empty.
    #[must_use]
    pub fn render(&self) -> String {
        let columns = self.headers.len();
        let mut widths: Vec<usize> = self.headers.iter().map(|h| h.chars().count()).collect();
        for row in &self.rows {
            for (i, text) in row.iter().take(columns).enumerate() {
                widths[i] = widths[i].max(text.chars().count());
            }
        }
        let mut out = String::new();
        let mut line = |cells: &mut dyn Iterator<Item = &str>| {
            let mut text = String::new();
            for (i, width) in widths.iter().enumerate() {
                let value = cells.next().unwrap_or("");
                if i > 0 {
                    text.push_str("  ");
                }
                text.push_str(value);
                let pad = width.saturating_sub(value.chars().count());
                text.extend(std::iter::repeat_n(' ', pad));
            }
            out.push_str(text.trim_end());
            out.push('\n');
        };
        line(&mut self.headers.iter().copied());
        for row in &self.rows {
            line(&mut row.iter().map(String::as_str));
        }
        if self.rows.is_empty() {
            out.push_str("(no rows)\n");
        }
        out
    }
}

/// Writes `value` as one line of JSON.
///
/// # Errors
/// An I/O error from `out`.
pub fn json_line(out: &mut dyn Write, value: &impl Serialize) -> io::Result<()> {
    let text = serde_json::to_string(value).map_err(io::Error::other)?;
    writeln!(out, "{text}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_align_and_say_when_empty() {
        let mut table = Table::new(&["ID", "STATE"]);
        assert_eq!(table.render(), "ID  STATE\n(no rows)\n");
        table.row(vec!["long-id".into(), "pending".into()]);
        table.row(vec!["x".into(), "claimed".into()]);
        assert_eq!(
            table.render(),
            "ID       STATE\nlong-id  pending\nx        claimed\n"
        );
    }

    #[test]
    fn instants_read_relative_to_now() {
        // The wall time is the machine's zone; the distance is not.
        let now = 1_796_047_382_800;
        assert!(when(now + 500, now).ends_with(" · in 500ms"));
        assert!(when(now - 180_000, now).ends_with(" · 3m ago"));
        assert!(when(now, now).ends_with(" · now"));
    }
}
