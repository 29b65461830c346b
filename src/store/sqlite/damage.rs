//! Finding damage in a store's file, at two costs.
//!
//! - [`roots`], at every writable open: each table's and index's root page is read and
//!   must be a b-tree page. A few dozen pages whatever the store's size, so a one-shot
//!   writer (`work enqueue`, `event`, `cancel` …) and a starting authority open in constant
//!   time. A damaged root makes its whole table or index unreadable, and is where a header
//!   overwritten from the start of a page lands first. SQLite itself refuses a file shorter
//!   than its header says (`SQLITE_CORRUPT` at the first read, before this runs).
//! - [`whole_file`], on demand (`leasehold store verify`), at `init` and `copy`, and beside a
//!   starting authority: SQLite's `quick_check` of every page, free list included. On a
//!   store of a million items it reads the whole file, seconds of I/O.
//!
//! Damage on a page neither looks at is found by SQLite when a command reads that page
//! (`SQLITE_CORRUPT`, `STORE_CORRUPT` with nothing committed), or by the whole-file check.

use rusqlite::Connection;

use super::step;
use crate::error::Error;
use crate::store::sql::Step;

/// The first table or index whose root page is not a b-tree page, as `dbstat` (which
/// reads a tree's pages root first, so `LIMIT 1` reads the root alone) finds it.
const DAMAGED_ROOT: &str = "SELECT s.name FROM sqlite_schema AS s \
     WHERE s.rootpage > 0 \
     AND coalesce((SELECT d.pagetype FROM dbstat AS d WHERE d.name = s.name LIMIT 1), '') \
         NOT IN ('internal', 'leaf') \
     LIMIT 1";

/// Refuses a store whose table or index root page is not a b-tree page.
pub(super) fn roots(conn: &Connection, label: &str) -> std::result::Result<(), Step> {
    use rusqlite::OptionalExtension;
    let damaged: Option<String> = conn
        .query_row(DAMAGED_ROOT, [], |r| r.get(0))
        .optional()
        .map_err(|e| step(label, &e))?;
    match damaged {
        None => Ok(()),
        Some(name) => Err(Step::Fail(Error::Corrupt(format!(
            "{label}: the database file is damaged (the root page of {name} is not a b-tree page); nothing was written"
        )))),
    }
}

/// SQLite's own check of every page (`PRAGMA quick_check`).
pub(super) fn whole_file(conn: &Connection, label: &str) -> std::result::Result<(), Step> {
    let verdict: String = conn
        .query_row("PRAGMA quick_check(1)", [], |r| r.get(0))
        .map_err(|e| step(label, &e))?;
    if verdict == "ok" {
        Ok(())
    } else {
        Err(Step::Fail(Error::Corrupt(format!(
            "{label}: the database file is damaged ({}); nothing was written",
            verdict.split_whitespace().collect::<Vec<_>>().join(" ")
        ))))
    }
}
