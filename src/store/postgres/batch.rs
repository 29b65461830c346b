//! A transaction's held-back writes, one batch of rows per table and form, and the
//! parameter path that sends a batch as one statement (one array per column, through
//! `unnest`). `literal.rs` writes the same batches as text for the commit's message.

use super::bind::{Param, array, sql_type};
use crate::store::sql::dialect::on_conflict_update;
use crate::store::sql::encode::{Kind, Table};
use crate::store::sql::value::SqlValue;

/// The counters: a delta per name, added to the stored value.
pub(super) const COUNTERS: Table = Table {
    name: "counters",
    key: &["name"],
    columns: &[("name", Kind::Text), ("value", Kind::Int)],
};

/// The meta values (the revision, when a transaction advances it).
pub(super) const META: Table = Table {
    name: "meta",
    key: &["key"],
    columns: &[("key", Kind::Text), ("value", Kind::Int)],
};

/// How a batch's rows meet the rows already stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Form {
    /// Replace the row with the same key.
    Upsert,
    /// A new row: one with the same key already stored fails the statement (and the
    /// transaction). For work items assumed absent without a read (see `tx.rs`).
    Insert,
    /// Add the row's `value` to the stored one's (the counters).
    Sum,
    /// Append in the listed order: the table's identity column numbers the rows, and the
    /// order of one revision's rows is the order they happened.
    Append,
}

/// Rows for one table, written in one statement.
pub(super) struct Batch {
    pub(super) table: &'static Table,
    pub(super) form: Form,
    pub(super) rows: Vec<Vec<SqlValue>>,
}

impl Batch {
    /// What follows the rows in either path's statement: the conflict clause of the form.
    pub(super) fn on_conflict(&self) -> String {
        match self.form {
            Form::Upsert => format!(" {}", on_conflict_update(self.table)),
            Form::Sum => format!(
                " ON CONFLICT ({}) DO UPDATE SET value = {}.value + EXCLUDED.value",
                self.table.key.join(", "),
                self.table.name
            ),
            Form::Insert | Form::Append => String::new(),
        }
    }

    /// The batch as one statement with one array parameter per column, and the arrays.
    /// Parameters are numbered from `$first`.
    fn with_arrays(self, first: usize) -> (String, Vec<Box<dyn postgres::types::ToSql + Sync>>) {
        let table = self.table;
        let on_conflict = self.on_conflict();
        let mut columns: Vec<Vec<SqlValue>> =
            vec![Vec::with_capacity(self.rows.len()); table.columns.len()];
        for row in self.rows {
            for (column, value) in columns.iter_mut().zip(row) {
                column.push(value);
            }
        }
        let arrays = table
            .columns
            .iter()
            .zip(columns)
            .map(|((_, kind), values)| array(*kind, values))
            .collect();
        let names = table.names().collect::<Vec<_>>().join(", ");
        let unnest = table
            .columns
            .iter()
            .enumerate()
            .map(|(i, (_, kind))| format!("${}::{}[]", first + i, sql_type(*kind)))
            .collect::<Vec<_>>()
            .join(", ");
        let sql = if self.form == Form::Append {
            format!(
                "INSERT INTO {t} ({names}) SELECT {names} FROM unnest({unnest})
                 WITH ORDINALITY AS held({names}, held_order) ORDER BY held_order",
                t = table.name
            )
        } else {
            format!(
                "INSERT INTO {} ({names}) SELECT * FROM unnest({unnest}){on_conflict}",
                table.name
            )
        };
        (sql, arrays)
    }
}

/// Every batch in one statement: all but the last as data-modifying `WITH` queries before
/// it, each with its own arrays. PostgreSQL runs them all, on the same snapshot, whatever
/// the outer statement reads, so the writes of several tables cost one round trip instead
/// of one each. The batches write distinct rows (one batch per table and form, a work id
/// in one of them only), so no two of them touch the same row.
pub(super) fn together(
    batches: Vec<Batch>,
) -> (String, Vec<Box<dyn postgres::types::ToSql + Sync>>) {
    let mut arrays = Vec::new();
    let mut statements = Vec::with_capacity(batches.len());
    for batch in batches {
        let (sql, mut own) = batch.with_arrays(arrays.len() + 1);
        arrays.append(&mut own);
        statements.push(sql);
    }
    let last = statements.pop().unwrap_or_default();
    if statements.is_empty() {
        return (last, arrays);
    }
    let with = statements
        .iter()
        .enumerate()
        .map(|(n, sql)| format!("held_{n} AS ({sql})"))
        .collect::<Vec<_>>()
        .join(", ");
    (format!("WITH {with} {last}"), arrays)
}

/// The arrays of [`together`] as parameters.
pub(super) fn params(arrays: &[Box<dyn postgres::types::ToSql + Sync>]) -> Vec<Param<'_>> {
    arrays.iter().map(|a| &**a as Param<'_>).collect()
}
