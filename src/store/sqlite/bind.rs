//! The shared SQL layer's values and rows on rusqlite: [`SqlValue`] binds as a parameter,
//! and a result row reads as [`SqlRow`] (by position where the decoder names one). A value
//! of the wrong type is `STORE_CORRUPT`, naming the column.

use rusqlite::Row;
use rusqlite::types::{ToSql, ToSqlOutput, ValueRef};

use crate::error::Result;
use crate::store::sql::row::{Col, SqlRow, unreadable};
use crate::store::sql::value::SqlValue;

impl ToSql for SqlValue {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(ToSqlOutput::Borrowed(match self {
            Self::Null => ValueRef::Null,
            Self::Int(v) => ValueRef::Integer(*v),
            Self::Text(v) => ValueRef::Text(v.as_bytes()),
            Self::Bool(v) => ValueRef::Integer(i64::from(*v)),
        }))
    }
}

/// One rusqlite result row.
pub(super) struct SqliteRow<'r, 's>(pub(super) &'r Row<'s>);

impl SqliteRow<'_, '_> {
    fn get<T: rusqlite::types::FromSql>(&self, col: Col) -> Result<T> {
        let got = match col {
            Col::Name(name) => self.0.get(name),
            Col::Both(pos, _) | Col::Pos(pos) => self.0.get(pos),
        };
        got.map_err(|e| unreadable(&col.label(), e))
    }
}

impl SqlRow for SqliteRow<'_, '_> {
    fn int(&self, col: Col) -> Result<Option<i64>> {
        self.get(col)
    }

    fn text(&self, col: Col) -> Result<Option<String>> {
        self.get(col)
    }

    fn flag(&self, col: Col) -> Result<Option<bool>> {
        self.get(col)
    }
}
