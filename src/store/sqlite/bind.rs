//! The shared SQL layer's values and rows on rusqlite: [`SqlValue`] binds as a parameter,
//! and a result row reads as [`SqlRow`] (by position where the decoder names one). A value
//! of the wrong type is `STORE_CORRUPT`, naming the column.

use rusqlite::Row;
use rusqlite::types::{ToSql, ToSqlOutput, ValueRef};

use crate::error::Result;
use crate::store::sql::encode::Kind;
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

impl SqlRow for SqliteRow<'_, '_> {
    fn value(&self, col: Col, _kind: Kind) -> Result<SqlValue> {
        let got = match col {
            Col::Name(name) => self.0.get_ref(name),
            Col::Both(pos, _) | Col::Pos(pos) => self.0.get_ref(pos),
        };
        let why = |e: &dyn std::fmt::Display| unreadable(&col.label(), e);
        match got.map_err(|e| why(&e))? {
            ValueRef::Null => Ok(SqlValue::Null),
            ValueRef::Integer(v) => Ok(SqlValue::Int(v)),
            ValueRef::Text(v) => String::from_utf8(v.to_vec())
                .map(SqlValue::Text)
                .map_err(|e| why(&e)),
            other => Err(why(&format!("unexpected {:?} value", other.data_type()))),
        }
    }
}
