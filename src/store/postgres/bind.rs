//! The shared SQL layer's values and rows on the `postgres` driver: a [`SqlValue`] binds as
//! the type the prepared statement expects (a NULL needs one), a column of values binds as
//! one typed array (for `unnest`), and a result row reads as [`SqlRow`], by name. A value
//! of the wrong type is `STORE_CORRUPT`, naming the column.

use std::fmt::Display;

use postgres::row::RowIndex;
use postgres::types::{ToSql, Type};
use postgres::{Error, Row, SimpleQueryRow, Statement};

use crate::error::Result;
use crate::store::sql::encode::Kind;
use crate::store::sql::row::{Col, SqlRow, unreadable};
use crate::store::sql::value::SqlValue;

pub(super) type Param<'a> = &'a (dyn ToSql + Sync);

/// `value` as a parameter of type `ty`.
fn param<'a>(value: &'a SqlValue, ty: &Type) -> Param<'a> {
    match value {
        SqlValue::Int(v) => v,
        SqlValue::Text(v) => v,
        SqlValue::Bool(v) => v,
        SqlValue::Null => match *ty {
            Type::INT8 => &None::<i64>,
            Type::BOOL => &None::<bool>,
            _ => &None::<String>,
        },
    }
}

/// One column of values as a typed array (`$n::bigint[]`, …); a value of another kind is
/// NULL (the encoders list each column's kind, so none is).
pub(super) fn array(kind: Kind, values: Vec<SqlValue>) -> Box<dyn ToSql + Sync> {
    let values = values.into_iter();
    match kind {
        Kind::Int => Box::new(values.map(SqlValue::into_int).collect::<Vec<_>>()),
        Kind::Text => Box::new(values.map(SqlValue::into_text).collect::<Vec<_>>()),
        Kind::Bool => Box::new(values.map(SqlValue::into_bool).collect::<Vec<_>>()),
    }
}

/// `values` as the parameters `statement` expects.
pub(super) fn params<'v>(values: &'v [SqlValue], statement: &Statement) -> Vec<Param<'v>> {
    values
        .iter()
        .zip(statement.params())
        .map(|(v, ty)| param(v, ty))
        .collect()
}

/// The SQL type of a column kind (its arrays are this with `[]`).
pub(super) fn sql_type(kind: Kind) -> &'static str {
    match kind {
        Kind::Int => "bigint",
        Kind::Text => "text",
        Kind::Bool => "boolean",
    }
}

/// One PostgreSQL result row.
pub(super) struct PgRow<'r>(pub(super) &'r Row);

/// A row of a simple query, every value as the server's text (the write lock's statement
/// reads rows this way, in the same message as the lock).
pub(super) struct TextRow<'r>(pub(super) &'r SimpleQueryRow);

impl SqlRow for TextRow<'_> {
    fn value(&self, col: Col, kind: Kind) -> Result<SqlValue> {
        let got = match col {
            Col::Name(name) | Col::Both(_, name) => self.0.try_get(name),
            Col::Pos(pos) => self.0.try_get(pos),
        };
        let text = got.map_err(|e| unreadable(&col.label(), e))?;
        let Some(text) = text else {
            return Ok(SqlValue::Null);
        };
        Ok(match kind {
            Kind::Int => SqlValue::Int(
                text.parse()
                    .map_err(|e| unreadable(&col.label(), format!("{text:?}: {e}")))?,
            ),
            Kind::Text => SqlValue::Text(text.to_owned()),
            Kind::Bool => match text {
                "t" => SqlValue::Bool(true),
                "f" => SqlValue::Bool(false),
                other => {
                    return Err(unreadable(
                        &col.label(),
                        format!("{other:?} is not a boolean"),
                    ));
                }
            },
        })
    }
}

impl SqlRow for PgRow<'_> {
    fn value(&self, col: Col, kind: Kind) -> Result<SqlValue> {
        let got = match col {
            Col::Name(name) | Col::Both(_, name) => read(self.0, name, kind),
            Col::Pos(pos) => read(self.0, pos, kind),
        };
        got.map_err(|e| unreadable(&col.label(), e))
    }
}

fn read<I: RowIndex + Display>(row: &Row, col: I, kind: Kind) -> Result<SqlValue, Error> {
    Ok(match kind {
        Kind::Int => row.try_get::<_, Option<i64>>(col)?.into(),
        Kind::Text => row.try_get::<_, Option<String>>(col)?.into(),
        Kind::Bool => row.try_get::<_, Option<bool>>(col)?.into(),
    })
}
