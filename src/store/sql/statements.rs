//! The statements both SQL providers run the same way, written once over [`Driver`]: reads
//! by key, counts, the meta counters, and the keyset-paged lists (forward and backward, by
//! text or integer key, and the checker's history pages).

use super::decode::{first_int, int_and_opt_int, int_pair};
use super::driver::Driver;
use super::encode::Table;
use super::query::Query;
use super::row::Decode;
use super::value::SqlValue;
use super::{bound, int, limit};
use crate::clock::Millis;
use crate::error::{Error, Result};
use crate::model::PageRequest;
use crate::store::epoch::STORE_EPOCH;

/// Shared statements, for every [`Driver`].
pub(crate) trait Statements: Driver {
    /// The first row a query returns, if any.
    fn one<T>(&mut self, sql: &str, params: &[SqlValue], decode: Decode<T>) -> Result<Option<T>> {
        Ok(self.query(sql, params, decode)?.into_iter().next())
    }

    /// The row of `table` whose single-column key is `key`.
    fn by_key<T>(&mut self, table: &Table, key: &str, decode: Decode<T>) -> Result<Option<T>> {
        self.one(Self::DIALECT.by_key(table), &[key.into()], decode)
    }

    /// A `count(*)` over an index range starting at `since` (the statement's only parameter).
    fn count(&mut self, sql: &str, since: Millis) -> Result<u64> {
        let n = self.one(sql, &[since.into()], first_int)?.flatten();
        Ok(n.unwrap_or(0).unsigned_abs())
    }

    /// A meta value (once per write transaction on PostgreSQL: only it can change it).
    fn meta(&mut self, key: &str) -> Result<i64> {
        if let Some(v) = self.known_meta(key) {
            return Ok(v);
        }
        let sql = Self::DIALECT.text("SELECT value FROM meta WHERE key = ?1");
        self.meta_row(sql, key)
    }

    /// Advances a meta counter by one and returns the new value.
    fn bump_meta(&mut self, key: &str) -> Result<i64> {
        super::driver::writable(self.is_writable())?;
        let sql =
            Self::DIALECT.text("UPDATE meta SET value = value + 1 WHERE key = ?1 RETURNING value");
        self.meta_row(sql, key)
    }

    /// The value `sql` returns for the meta row `key`, remembered.
    fn meta_row(&mut self, sql: &str, key: &str) -> Result<i64> {
        let v = self
            .one(sql, &[key.into()], first_int)?
            .flatten()
            .ok_or_else(|| missing_meta(self.label(), key))?;
        self.remember_meta(key, v);
        Ok(v)
    }

    /// Sets a meta value, after the held-back writes (a revision advanced earlier in the
    /// transaction among them), so the value set is the one that stays.
    fn set_meta(&mut self, key: &str, value: i64) -> Result<()> {
        self.settle()?;
        let sql = Self::DIALECT.text("UPDATE meta SET value = ?2 WHERE key = ?1");
        if self.execute(sql, &[key.into(), value.into()])? == 1 {
            self.remember_meta(key, value);
            Ok(())
        } else {
            Err(missing_meta(self.label(), key))
        }
    }

    /// The store's revision.
    fn stored_revision(&mut self) -> Result<u64> {
        let rev = self.meta(REVISION)?;
        self.revision_of(rev)
    }

    /// Advances the store's revision (once per transaction: the caller remembers it).
    /// Bumps the revision, and reads the store epoch in the same statement: nearly every
    /// write needs the epoch's generation floor, and on PostgreSQL each statement is a
    /// round trip.
    fn next_revision(&mut self) -> Result<u64> {
        super::driver::writable(self.is_writable())?;
        let sql = Self::DIALECT.text(
            "UPDATE meta SET value = value + 1 WHERE key = ?1 RETURNING value, \
             (SELECT value FROM meta WHERE key = ?2)",
        );
        let (rev, epoch) = self
            .one(sql, &[REVISION.into(), STORE_EPOCH.into()], int_and_opt_int)?
            .ok_or_else(|| missing_meta(self.label(), REVISION))?;
        self.remember_meta(REVISION, rev);
        if let Some(epoch) = epoch {
            self.remember_meta(STORE_EPOCH, epoch);
        }
        self.revision_of(rev)
    }

    /// A stored revision as a `u64`.
    fn revision_of(&self, rev: i64) -> Result<u64> {
        u64::try_from(rev)
            .map_err(|_| Error::Corrupt(format!("{}: negative revision {rev}", self.label())))
    }

    /// One keyset page: rows of `from` matching `q` strictly after (or, backwards, before)
    /// `after` in `key` order, returned ascending.
    #[allow(clippy::too_many_arguments)]
    fn page<T>(
        &mut self,
        from: &str,
        key: &str,
        mut q: Query,
        after: Option<SqlValue>,
        backwards: bool,
        n: usize,
        decode: Decode<T>,
    ) -> Result<Vec<T>> {
        let (cmp, dir) = if backwards {
            ("<", "DESC")
        } else {
            (">", "ASC")
        };
        if let Some(after) = after {
            q.cond(&format!("{key} {cmp}"), after);
        }
        let lim = q.bind(limit(n));
        let sql = format!(
            "SELECT * FROM {from}{} ORDER BY {key} {dir} LIMIT {lim}",
            q.filter()
        );
        let mut rows = self.query(&sql, q.values(), decode)?;
        if backwards {
            rows.reverse();
        }
        Ok(rows)
    }

    /// A page keyed by a text primary key, optionally narrowed by one equality.
    fn text_page<T>(
        &mut self,
        table: &str,
        key: &str,
        eq: Option<(&str, &str)>,
        page: &PageRequest,
        decode: Decode<T>,
    ) -> Result<Vec<T>> {
        let mut q = Query::new(Self::DIALECT);
        if let Some((col, v)) = eq {
            q.cond(&format!("{col} ="), v);
        }
        let after = page.after.clone().map(SqlValue::Text);
        self.page(
            table,
            key,
            q,
            after,
            page.backwards,
            page.limit.max(1),
            decode,
        )
    }

    /// A page keyed by an integer id; the cursor is its decimal text (zero-padded is fine).
    fn numeric_page<T>(
        &mut self,
        table: &str,
        page: &PageRequest,
        decode: Decode<T>,
    ) -> Result<Vec<T>> {
        let after = page
            .after
            .as_ref()
            .and_then(|k| k.parse::<i64>().ok())
            .map(SqlValue::Int);
        let q = Query::new(Self::DIALECT);
        self.page(
            table,
            "id",
            q,
            after,
            page.backwards,
            page.limit.max(1),
            decode,
        )
    }

    /// A page of the checker's history (`grants` or `writes`): the first `n` rows above
    /// revision `after` (and up to `through`, when given), then the rest of the last
    /// revision reached (see [`Tx::grants`](crate::store::backend::Tx::grants)).
    fn history_page<T>(
        &mut self,
        table: &str,
        resource: Option<&str>,
        (after, through): (u64, Option<u64>),
        n: usize,
        decode: Decode<T>,
        revision: fn(&T) -> u64,
    ) -> Result<Vec<T>> {
        self.settle()?;
        if resource.is_none() && Self::DIALECT.history_by_position() {
            let rows =
                self.history_page_by_position(table, (after, through), n, decode, revision)?;
            in_order(self.label(), table, (after, through), &rows, revision)?;
            return Ok(rows);
        }
        let mut q = Query::new(Self::DIALECT);
        q.cond("revision >", bound(after));
        if let Some(through) = through {
            q.cond("revision <=", bound(through));
        }
        if let Some(r) = resource {
            q.cond("resource_id =", r);
        }
        let lim = q.bind(limit(n));
        let sql = format!(
            "SELECT * FROM {table}{} ORDER BY revision, seq LIMIT {lim}",
            q.filter()
        );
        let mut rows = self.query(&sql, q.values(), decode)?;
        let Some(last) = cut_revision(&rows, n, revision) else {
            return Ok(rows);
        };
        rows.retain(|r| revision(r) != last);
        let mut q = Query::new(Self::DIALECT);
        q.cond("revision =", int(last)?);
        if let Some(r) = resource {
            q.cond("resource_id =", r);
        }
        let sql = format!("SELECT * FROM {table}{} ORDER BY seq", q.filter());
        rows.extend(self.query(&sql, q.values(), decode)?);
        Ok(rows)
    }

    /// [`history_page`](Self::history_page) without a resource, where the history has no
    /// revision index: the same rows, found by position.
    fn history_page_by_position<T>(
        &mut self,
        table: &str,
        (after, through): (u64, Option<u64>),
        n: usize,
        decode: Decode<T>,
        revision: fn(&T) -> u64,
    ) -> Result<Vec<T>> {
        let start = self.position_after(table, after)?;
        let end = match through {
            Some(through) => Some(self.position_after(table, through)?),
            None => None,
        };
        let mut rows = self.history_span(table, (start, end), Some(n), decode)?;
        let Some(last) = cut_revision(&rows, n, revision) else {
            return Ok(rows);
        };
        // Where revision `last` starts: the page's start when the page holds that revision
        // alone (as a one-record page does); `last` is above `after`, so at least 1.
        let from = match rows.first().map(revision) {
            Some(first) if first == last => start,
            _ => self.position_after(table, last.saturating_sub(1))?,
        };
        rows.retain(|r| revision(r) != last);
        let to = self.position_after(table, last)?;
        rows.extend(self.history_span(table, (from, Some(to)), None, decode)?);
        Ok(rows)
    }

    /// The records of `table` at positions `from` up to (not including) `to`, in order,
    /// at most `n` of them: a range of the primary key.
    fn history_span<T>(
        &mut self,
        table: &str,
        (from, to): (i64, Option<i64>),
        n: Option<usize>,
        decode: Decode<T>,
    ) -> Result<Vec<T>> {
        let mut q = Query::new(Self::DIALECT);
        q.cond("seq >=", from);
        if let Some(to) = to {
            q.cond("seq <", to);
        }
        let lim = match n {
            Some(n) => format!(" LIMIT {}", q.bind(limit(n))),
            None => String::new(),
        };
        let sql = format!("SELECT * FROM {table}{} ORDER BY seq{lim}", q.filter());
        self.query(&sql, q.values(), decode)
    }

    /// The first position (`seq`) of the history table `table` from which every record
    /// carries a revision above `revision` (one past the last record when none does). A
    /// writer stamps its records under the write lock with the revision it advanced, in
    /// the order it inserts them, so positions rise with revisions and a binary search over
    /// the primary key finds the boundary: about log2(records) seeks, with no index on
    /// `revision`. `leasehold check` proves that order (`Tx::history_out_of_order`).
    fn position_after(&mut self, table: &str, revision: u64) -> Result<i64> {
        let revision = bound(revision);
        // The ends first: a read above the newest record (a commit reading back its own
        // revision) or below the oldest one takes one seek.
        let end = |which: &str| {
            format!(
                "SELECT seq, revision FROM {table} WHERE seq = (SELECT {which}(seq) FROM {table})"
            )
        };
        let Some((last, newest)) = self.one(&end("max"), &[], int_pair)? else {
            return Ok(0);
        };
        if newest <= revision {
            return Ok(last.saturating_add(1));
        }
        let Some((first, oldest)) = self.one(&end("min"), &[], int_pair)? else {
            return Ok(0);
        };
        if oldest > revision {
            return Ok(first);
        }
        let probe = Self::DIALECT.marks(&format!(
            "SELECT seq, revision FROM {table} WHERE seq >= ?1 ORDER BY seq LIMIT 1"
        ));
        // Every record before `lo` is at or below `revision`; every one from `hi` is above.
        let (mut lo, mut hi) = (first.saturating_add(1), last);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            match self.one(&probe, &[mid.into()], int_pair)? {
                Some((seq, r)) if r <= revision => lo = seq.saturating_add(1),
                _ => hi = mid,
            }
        }
        Ok(lo)
    }
}

/// The revision a history page of `n` rows may have cut short: its last one, when the
/// limit was reached (the caller reads the rest of it).
fn cut_revision<T>(rows: &[T], n: usize, revision: fn(&T) -> u64) -> Option<u64> {
    rows.last()
        .map(revision)
        .filter(|_| n > 0 && rows.len() == n)
}

/// Refuses a history page read by position whose revisions are not what a range asks for
/// (above `after`, up to `through`, never falling): positions stopped rising with
/// revisions, so the store's history is out of order and a range read by position would
/// skip or repeat records.
fn in_order<T>(
    label: &str,
    table: &str,
    (after, through): (u64, Option<u64>),
    rows: &[T],
    revision: fn(&T) -> u64,
) -> Result<()> {
    let mut previous = after;
    for r in rows.iter().map(revision) {
        if r < previous || r == after || through.is_some_and(|t| r > t) {
            return Err(Error::Corrupt(format!(
                "{label}: the {table} record of revision {r} is stored after revision {previous}: the history is out of order (`leasehold check` names the first such record)"
            )));
        }
        previous = r;
    }
    Ok(())
}

impl<D: Driver> Statements for D {}

/// The meta row holding the store revision.
pub(crate) const REVISION: &str = "revision";

fn missing_meta(label: &str, key: &str) -> Error {
    Error::Corrupt(format!("{label}: the meta row {key:?} is missing"))
}
