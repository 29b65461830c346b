//! The values both SQL drivers bind and read: a column is an integer, a text, a boolean or
//! NULL, nothing else (times are milliseconds, enums their `as_str()` text, nested structs
//! JSON text). Each driver converts these to its own parameter type in one place.

/// One bound parameter or one row's column value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum SqlValue {
    Null,
    Int(i64),
    Text(String),
    Bool(bool),
}

impl SqlValue {
    /// The integer, if this is one.
    pub(crate) fn into_int(self) -> Option<i64> {
        match self {
            Self::Int(v) => Some(v),
            _ => None,
        }
    }

    /// The text, if this is one.
    pub(crate) fn into_text(self) -> Option<String> {
        match self {
            Self::Text(v) => Some(v),
            _ => None,
        }
    }

    /// The boolean, if this is one.
    pub(crate) fn into_bool(self) -> Option<bool> {
        match self {
            Self::Bool(v) => Some(v),
            _ => None,
        }
    }
}

impl From<i64> for SqlValue {
    fn from(v: i64) -> Self {
        Self::Int(v)
    }
}

impl From<u32> for SqlValue {
    fn from(v: u32) -> Self {
        Self::Int(i64::from(v))
    }
}

impl From<bool> for SqlValue {
    fn from(v: bool) -> Self {
        Self::Bool(v)
    }
}

impl From<String> for SqlValue {
    fn from(v: String) -> Self {
        Self::Text(v)
    }
}

impl From<&str> for SqlValue {
    fn from(v: &str) -> Self {
        Self::Text(v.to_owned())
    }
}

impl From<&String> for SqlValue {
    fn from(v: &String) -> Self {
        Self::Text(v.clone())
    }
}

impl<T: Into<SqlValue>> From<Option<T>> for SqlValue {
    fn from(v: Option<T>) -> Self {
        v.map_or(Self::Null, Into::into)
    }
}
