//! Reading one result row, whatever the driver: [`SqlRow`] is the three reads a driver
//! provides, and the typed getters here are the checks every decoder shares. A value this
//! build cannot decode is `STORE_CORRUPT` naming the column, never a panic or a default.

use serde::de::DeserializeOwned;

use super::encode::Kind;
use super::value::SqlValue;
use crate::error::{Error, Result};

/// Turns one row into a model value.
pub(crate) type Decode<T> = fn(&dyn SqlRow) -> Result<T>;

/// A column by name, and by position where a decoder pins it: the hot work rows are read by
/// position on SQLite (a lookup by name scans the column names). PostgreSQL reads by name
/// wherever there is one.
#[derive(Clone, Copy)]
pub(crate) enum Col {
    Name(&'static str),
    /// The column `name` at position `pos` of `SELECT *` (the schema's column order).
    Both(usize, &'static str),
    /// An unnamed result column (`count(*)`, `max(…)`).
    Pos(usize),
}

impl Col {
    /// How errors name the column.
    pub(crate) fn label(self) -> String {
        match self {
            Self::Name(name) | Self::Both(_, name) => name.to_owned(),
            Self::Pos(pos) => format!("#{pos}"),
        }
    }
}

impl From<&'static str> for Col {
    fn from(name: &'static str) -> Self {
        Self::Name(name)
    }
}

/// The column `name` at position `pos` of `SELECT *`.
pub(crate) fn at(pos: usize, name: &'static str) -> Col {
    Col::Both(pos, name)
}

/// One result row of a driver: a column's value, read as `kind` where the driver needs to
/// know (PostgreSQL's columns are typed; SQLite's values carry their own type).
pub(crate) trait SqlRow {
    fn value(&self, col: Col, kind: Kind) -> Result<SqlValue>;
}

/// The error for a column this build cannot read.
pub(crate) fn unreadable(col: &str, why: impl std::fmt::Display) -> Error {
    Error::Corrupt(format!("unreadable row: column {col}: {why}"))
}

fn present<T>(col: Col, v: Option<T>) -> Result<T> {
    v.ok_or_else(|| unreadable(&col.label(), "NULL in a NOT NULL column"))
}

pub(crate) fn opt_int(row: &dyn SqlRow, col: impl Into<Col>) -> Result<Option<i64>> {
    let col = col.into();
    match row.value(col, Kind::Int)? {
        SqlValue::Null => Ok(None),
        SqlValue::Int(v) => Ok(Some(v)),
        other => Err(unreadable(
            &col.label(),
            format!("{other:?} is not an integer"),
        )),
    }
}

pub(crate) fn opt_text(row: &dyn SqlRow, col: impl Into<Col>) -> Result<Option<String>> {
    let col = col.into();
    match row.value(col, Kind::Text)? {
        SqlValue::Null => Ok(None),
        SqlValue::Text(v) => Ok(Some(v)),
        other => Err(unreadable(&col.label(), format!("{other:?} is not a text"))),
    }
}

/// A boolean: PostgreSQL's own, or SQLite's 0 / 1.
pub(crate) fn flag(row: &dyn SqlRow, col: impl Into<Col>) -> Result<bool> {
    let col = col.into();
    match row.value(col, Kind::Bool)? {
        SqlValue::Bool(v) => Ok(v),
        SqlValue::Int(v @ (0 | 1)) => Ok(v == 1),
        other => Err(unreadable(
            &col.label(),
            format!("{other:?} is not a boolean"),
        )),
    }
}

pub(crate) fn int(row: &dyn SqlRow, col: impl Into<Col>) -> Result<i64> {
    let col = col.into();
    present(col, opt_int(row, col)?)
}

pub(crate) fn text(row: &dyn SqlRow, col: impl Into<Col>) -> Result<String> {
    let col = col.into();
    present(col, opt_text(row, col)?)
}

pub(crate) fn u64(row: &dyn SqlRow, col: impl Into<Col>) -> Result<u64> {
    let col = col.into();
    present(col, opt_u64(row, col)?)
}

pub(crate) fn opt_u64(row: &dyn SqlRow, col: impl Into<Col>) -> Result<Option<u64>> {
    let col = col.into();
    (opt_int(row, col)?)
        .map(|v| u64::try_from(v).map_err(|e| unreadable(&col.label(), e)))
        .transpose()
}

pub(crate) fn u32(row: &dyn SqlRow, col: impl Into<Col>) -> Result<u32> {
    let col = col.into();
    let v = int(row, col)?;
    u32::try_from(v).map_err(|e| unreadable(&col.label(), e))
}

pub(crate) fn i32(row: &dyn SqlRow, col: impl Into<Col>) -> Result<i32> {
    let col = col.into();
    let v = int(row, col)?;
    i32::try_from(v).map_err(|e| unreadable(&col.label(), e))
}

/// An enum stored as its `as_str()` text.
pub(crate) fn enumerated<T>(
    row: &dyn SqlRow,
    col: impl Into<Col>,
    parse: fn(&str) -> Option<T>,
) -> Result<T> {
    let col = col.into();
    let text = text(row, col)?;
    parse(&text).ok_or_else(|| unreadable(&col.label(), format!("unknown value {text:?}")))
}

/// A nested struct stored as JSON text.
pub(crate) fn json<T: DeserializeOwned>(row: &dyn SqlRow, col: impl Into<Col>) -> Result<T> {
    let col = col.into();
    let text = text(row, col)?;
    serde_json::from_str(&text).map_err(|e| unreadable(&col.label(), e))
}

pub(crate) fn opt_json<T: DeserializeOwned>(
    row: &dyn SqlRow,
    col: impl Into<Col>,
) -> Result<Option<T>> {
    let col = col.into();
    opt_text(row, col)?
        .map(|t| serde_json::from_str(&t).map_err(|e| unreadable(&col.label(), e)))
        .transpose()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::WorkState;

    /// A row of one column, `state`, holding `value`.
    struct One(SqlValue);

    impl SqlRow for One {
        fn value(&self, col: Col, _kind: Kind) -> Result<SqlValue> {
            match col {
                Col::Name("state") | Col::Both(_, "state") | Col::Pos(0) => Ok(self.0.clone()),
                _ => Err(unreadable(&col.label(), "no such column")),
            }
        }
    }

    fn corrupt(r: Result<impl std::fmt::Debug>) -> String {
        match r {
            Err(Error::Corrupt(why)) => why,
            other => panic!("expected STORE_CORRUPT, got {other:?}"),
        }
    }

    #[test]
    fn an_unknown_stored_value_is_corrupt_naming_the_column() {
        let row = One(SqlValue::Text("sleeping".into()));
        let why = corrupt(enumerated(&row, "state", WorkState::parse));
        assert!(
            why.contains("column state") && why.contains("sleeping"),
            "{why}"
        );
    }

    #[test]
    fn null_in_a_required_column_is_corrupt_not_a_default() {
        let row = One(SqlValue::Null);
        assert!(corrupt(text(&row, "state")).contains("NULL"));
        assert_eq!(opt_text(&row, "state").expect("optional"), None);
    }

    #[test]
    fn a_value_of_the_wrong_type_or_range_is_corrupt() {
        assert!(corrupt(int(&One(SqlValue::Text("7".into())), "state")).contains("integer"));
        assert!(corrupt(u64(&One(SqlValue::Int(-1)), "state")).contains("column state"));
        assert!(corrupt(flag(&One(SqlValue::Int(2)), "state")).contains("boolean"));
    }

    #[test]
    fn booleans_read_from_either_driver() {
        assert!(flag(&One(SqlValue::Bool(true)), "state").expect("bool"));
        assert!(flag(&One(SqlValue::Int(1)), "state").expect("0 / 1"));
        assert!(!flag(&One(SqlValue::Int(0)), "state").expect("0 / 1"));
    }
}
