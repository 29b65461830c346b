//! Keyset paging: every list the dashboard reads is a page after an exclusive cursor, so a
//! table of a million rows costs one index seek per page, never a scan.

use serde::{Deserialize, Serialize};

/// Which page to read: rows strictly after `after` (a sort key), at most `limit` of them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PageRequest {
    pub after: Option<String>,
    pub limit: usize,
    /// Read backwards: rows strictly before `after`, nearest first, for PageUp and End.
    pub backwards: bool,
}

impl PageRequest {
    /// The first page of `limit` rows.
    #[must_use]
    pub fn first(limit: usize) -> Self {
        Self {
            after: None,
            limit,
            backwards: false,
        }
    }

    /// The page after the row whose key is `key`.
    #[must_use]
    pub fn after(key: impl Into<String>, limit: usize) -> Self {
        Self {
            after: Some(key.into()),
            limit,
            backwards: false,
        }
    }

    /// The page after `key`, or the first page when there is none: the form of the
    /// store's forward-only lists that take `after: Option<&str>`.
    #[must_use]
    pub fn resume(key: Option<&str>, limit: usize) -> Self {
        Self {
            after: key.map(str::to_owned),
            limit,
            backwards: false,
        }
    }

    /// The last page of `limit` rows (for End), nearest-to-end first.
    #[must_use]
    pub fn last(limit: usize) -> Self {
        Self {
            after: None,
            limit,
            backwards: true,
        }
    }

    /// The page before the row whose key is `key` (for PageUp).
    #[must_use]
    pub fn before(key: impl Into<String>, limit: usize) -> Self {
        Self {
            after: Some(key.into()),
            limit,
            backwards: true,
        }
    }
}

/// The least key above every key that starts with `prefix` (keys order by bytes, so by
/// code point): the exclusive upper end of the prefix's key range. `None` when no such key
/// exists (the prefix is empty or all `U+10FFFF`), so the range is open above.
#[must_use]
pub fn prefix_end(prefix: &str) -> Option<String> {
    let mut chars: Vec<char> = prefix.chars().collect();
    while let Some(last) = chars.pop() {
        let next = match last {
            '\u{D7FF}' => Some('\u{E000}'),
            c => char::from_u32(u32::from(c) + 1),
        };
        if let Some(next) = next {
            chars.push(next);
            return Some(chars.into_iter().collect());
        }
    }
    None
}

/// One page of rows in ascending key order, with the cursor to continue from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Page<T> {
    pub rows: Vec<T>,
    /// The key to pass as `after` for the next page; `None` when this was the last.
    pub next: Option<String>,
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::prefix_end;

    #[test]
    fn prefix_end_bounds_exactly_the_keys_with_the_prefix() {
        assert_eq!(prefix_end("w01").as_deref(), Some("w02"));
        assert_eq!(prefix_end("a\u{10ffff}").as_deref(), Some("b"));
        assert_eq!(prefix_end("\u{d7ff}").as_deref(), Some("\u{e000}"));
        assert_eq!(prefix_end(""), None);
        assert_eq!(prefix_end("\u{10ffff}"), None);
        let end = prefix_end("ab").unwrap();
        for key in ["ab", "ab\u{0}", "ab\u{10ffff}\u{10ffff}", "abz"] {
            assert!(key >= "ab" && key < end.as_str(), "{key:?} in range");
        }
        for key in ["aa\u{10ffff}", "ac", "b"] {
            assert!(!(key >= "ab" && key < end.as_str()), "{key:?} out of range");
        }
    }
}
