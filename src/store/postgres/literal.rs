//! Held-back writes as SQL text, so they travel with the COMMIT in one simple query.
//!
//! A lone write — one enqueue, one completion — holds back a row or two per table. Sent as
//! prepared statements they cost a round trip per table, then one more to commit; written
//! out here they join the notification and the `COMMIT` in one message. The simple-query
//! protocol runs the statements in order and stops at the first error, which leaves the
//! transaction aborted: the writes and the commit succeed or fail together, as before.
//!
//! Values are literals cast to their column's type: integers and booleans by formatting,
//! texts as `E'…'` escape strings with the backslash and the quote doubled, which reads the
//! same whatever the server's `standard_conforming_strings`. A text holding a NUL byte
//! cannot be a literal (PostgreSQL text cannot hold one either); the commit's batches are
//! then sent as parameters, so the server refuses it exactly as before.

use std::fmt::Write as _;

use super::batch::{Batch, Form};
use super::bind::sql_type;
use crate::store::sql::encode::Kind;
use crate::store::sql::value::SqlValue;

/// The statements writing `batches`, each ended by `;`, or `None` when a text cannot be
/// a literal.
pub(super) fn statements(batches: &[Batch]) -> Option<String> {
    let mut sql = String::new();
    for batch in batches {
        statement(batch, &mut sql)?;
    }
    Some(sql)
}

/// The statement that fails when one of `keys` (the idempotency keys of the work items
/// this transaction inserted assuming their key free) is held by more than one item: per
/// key, a scalar subquery over the `work_key` index, which PostgreSQL refuses when it
/// finds two rows (`cardinality_violation`), so the commit after it never runs. `None`
/// when a key cannot be a literal. The parameter path's form is [`KEY_GUARD`].
pub(super) fn key_guard(keys: &[String]) -> Option<String> {
    let mut sql =
        String::from("SELECT (SELECT 1 FROM work WHERE idempotency_key = held.key) FROM (VALUES ");
    for (n, key) in keys.iter().enumerate() {
        sql.push_str(if n == 0 { "(" } else { ", (" });
        literal(&SqlValue::Text(key.clone()), Kind::Text, &mut sql)?;
        sql.push(')');
    }
    sql.push_str(") AS held (key); ");
    Some(sql)
}

/// The statement reading the work items `ids` (in any order), or `None` when an id cannot
/// be a literal. It goes with the write lock's statement ([`super::begin::begin_write`]).
pub(super) fn work_by_ids(ids: &[&str]) -> Option<String> {
    let mut sql = String::from("SELECT * FROM work WHERE id IN (");
    for (n, id) in ids.iter().enumerate() {
        if n > 0 {
            sql.push_str(", ");
        }
        literal(&SqlValue::Text((*id).to_owned()), Kind::Text, &mut sql)?;
    }
    sql.push(')');
    Some(sql)
}

/// [`key_guard`] with the keys as one text array parameter.
pub(super) const KEY_GUARD: &str = "SELECT (SELECT 1 FROM work WHERE idempotency_key = held.key) FROM unnest($1::text[]) AS held (key)";

/// One batch's statement: the same forms as the parameter path's
/// ([`Batch::with_arrays`]), with a `VALUES` list where that one has `unnest`.
fn statement(batch: &Batch, sql: &mut String) -> Option<()> {
    let table = batch.table;
    let names = table.names().collect::<Vec<_>>().join(", ");
    let append = matches!(batch.form, Form::Append);
    let _ = write!(sql, "INSERT INTO {} ({names}) ", table.name);
    if append {
        // The identity column numbers the rows in the order they are listed: keep it.
        sql.push_str("SELECT ");
        sql.push_str(&names);
        sql.push_str(" FROM (");
    }
    sql.push_str("VALUES ");
    for (n, row) in batch.rows.iter().enumerate() {
        sql.push_str(if n == 0 { "(" } else { ", (" });
        for (i, (value, (_, kind))) in row.iter().zip(table.columns).enumerate() {
            if i > 0 {
                sql.push_str(", ");
            }
            literal(value, *kind, sql)?;
        }
        if append {
            let _ = write!(sql, ", {n}");
        }
        sql.push(')');
    }
    if append {
        let _ = write!(sql, ") AS held ({names}, held_order) ORDER BY held_order");
    }
    sql.push_str(&batch.on_conflict());
    sql.push_str("; ");
    Some(())
}

/// `value` as a literal of the column type `kind`; `None` for a text holding a NUL.
fn literal(value: &SqlValue, kind: Kind, sql: &mut String) -> Option<()> {
    match value {
        SqlValue::Null => sql.push_str("NULL"),
        // In parentheses when negative: `::` binds tighter than the minus sign, and
        // `9223372036854775808::bigint` (the magnitude of `i64::MIN`) is out of range.
        SqlValue::Int(v) if *v < 0 => {
            let _ = write!(sql, "({v})");
        }
        SqlValue::Int(v) => {
            let _ = write!(sql, "{v}");
        }
        SqlValue::Bool(v) => sql.push_str(if *v { "TRUE" } else { "FALSE" }),
        SqlValue::Text(text) => {
            if text.contains('\0') {
                return None;
            }
            sql.push_str("E'");
            for c in text.chars() {
                match c {
                    '\'' => sql.push_str("''"),
                    '\\' => sql.push_str("\\\\"),
                    c => sql.push(c),
                }
            }
            sql.push('\'');
        }
    }
    let _ = write!(sql, "::{}", sql_type(kind));
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::sql::encode::Table;

    const PAIRS: Table = Table {
        name: "pairs",
        key: &["k"],
        columns: &[("k", Kind::Text), ("v", Kind::Int), ("b", Kind::Bool)],
    };

    fn one(value: SqlValue, kind: Kind) -> Option<String> {
        let mut sql = String::new();
        literal(&value, kind, &mut sql).map(|()| sql)
    }

    #[test]
    fn texts_are_escape_strings_with_quotes_and_backslashes_doubled() {
        assert_eq!(
            one(
                SqlValue::Text(r"it's a \'; DROP TABLE work; --".into()),
                Kind::Text
            )
            .as_deref(),
            Some(r"E'it''s a \\''; DROP TABLE work; --'::text")
        );
        assert_eq!(
            one(SqlValue::Text("$$ é 🦀".into()), Kind::Text).as_deref(),
            Some("E'$$ é 🦀'::text")
        );
    }

    #[test]
    fn numbers_booleans_and_nulls_are_typed_literals() {
        assert_eq!(
            one(SqlValue::Int(-42), Kind::Int).as_deref(),
            Some("(-42)::bigint")
        );
        assert_eq!(
            one(SqlValue::Int(i64::MIN), Kind::Int).as_deref(),
            Some("(-9223372036854775808)::bigint")
        );
        assert_eq!(
            one(SqlValue::Bool(true), Kind::Bool).as_deref(),
            Some("TRUE::boolean")
        );
        assert_eq!(
            one(SqlValue::Null, Kind::Int).as_deref(),
            Some("NULL::bigint")
        );
    }

    #[test]
    fn a_nul_byte_makes_the_batch_go_as_parameters() {
        assert_eq!(one(SqlValue::Text("a\0b".into()), Kind::Text), None);
        let batch = Batch {
            table: &PAIRS,
            form: Form::Upsert,
            rows: vec![vec!["a\0".into(), 1i64.into(), true.into()]],
        };
        assert_eq!(statements(&[batch]), None);
    }

    #[test]
    fn the_key_guard_lists_each_key_as_a_text_literal() {
        let keys = ["k-1".to_owned(), "it's".to_owned()];
        assert_eq!(
            key_guard(&keys).as_deref(),
            Some(
                "SELECT (SELECT 1 FROM work WHERE idempotency_key = held.key) FROM \
                 (VALUES (E'k-1'::text), (E'it''s'::text)) AS held (key); "
            )
        );
        assert_eq!(key_guard(&["a\0".to_owned()]), None);
    }

    #[test]
    fn each_form_writes_its_statement() {
        let rows = || {
            vec![
                vec!["a".into(), 1i64.into(), true.into()],
                vec!["b".into(), SqlValue::Null, false.into()],
            ]
        };
        let sql = |form| {
            statements(&[Batch {
                table: &PAIRS,
                form,
                rows: rows(),
            }])
            .expect("no NUL, so a literal")
        };
        let values =
            "(E'a'::text, 1::bigint, TRUE::boolean), (E'b'::text, NULL::bigint, FALSE::boolean)";
        assert_eq!(
            sql(Form::Upsert),
            format!(
                "INSERT INTO pairs (k, v, b) VALUES {values} ON CONFLICT (k) DO UPDATE SET v = EXCLUDED.v, b = EXCLUDED.b; "
            )
        );
        assert_eq!(
            sql(Form::Insert),
            format!("INSERT INTO pairs (k, v, b) VALUES {values}; ")
        );
        assert_eq!(
            sql(Form::Append),
            "INSERT INTO pairs (k, v, b) SELECT k, v, b FROM (VALUES \
             (E'a'::text, 1::bigint, TRUE::boolean, 0), (E'b'::text, NULL::bigint, FALSE::boolean, 1)) \
             AS held (k, v, b, held_order) ORDER BY held_order; "
        );
    }
}
