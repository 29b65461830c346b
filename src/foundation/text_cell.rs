//! Table cells from untrusted text. Anything that came out of a store (ids, handler names,
//! event types, messages) may be hostile: [`cell`] escapes control characters, escape
//! sequences and bidirectional overrides (`\u{1b}` prints as `\x1b`) and truncates long
//! values with `…`, so printing it cannot move the cursor, recolour or reorder a line.

use std::fmt::Write as _;

use crate::ids::is_invisible_or_reordering as is_reordering;

/// The longest a table cell may be, in characters, unless a column says otherwise.
pub const MAX_CELL: usize = 40;

/// Escapes `text` so that printing it cannot move the cursor, change colours, reorder text
/// or break a line: C0/C1 controls and DEL become `\xNN` / `\u{NNNN}`, Unicode format
/// characters that reorder text (bidi overrides and isolates) become `\u{NNNN}`, and a
/// backslash is doubled so that an escape is never ambiguous.
#[must_use]
pub fn escape(text: &str) -> String {
    escaped(text, true)
}

/// [`escape`] for a message whose values may have been escaped already (an id shown as a
/// [`cell`] inside an error): the same characters are escaped, but a backslash is left
/// as it is, so an escape already made reads `\u{202e}`, not `\\u{202e}`. What it
/// prints still cannot act on the terminal.
#[must_use]
pub fn defang(text: &str) -> String {
    escaped(text, false)
}

fn escaped(text: &str, double_backslash: bool) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\\' if double_backslash => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x80 && c.is_control() => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c if c.is_control() || is_reordering(c) => {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
            c => out.push(c),
        }
    }
    out
}

/// Cuts `text` to at most `max` characters, ending with `…` when something was cut.
#[must_use]
pub fn truncate(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let mut out: String = text.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// A table cell from untrusted text: escaped, then truncated to `max` characters.
#[must_use]
pub fn cell_max(text: &str, max: usize) -> String {
    truncate(&escape(text), max)
}

/// A table cell from untrusted text, at most [`MAX_CELL`] characters.
#[must_use]
pub fn cell(text: &str) -> String {
    cell_max(text, MAX_CELL)
}

/// An optional cell: `-` when absent.
#[must_use]
pub fn opt_cell(text: Option<&str>) -> String {
    text.map_or_else(|| "-".to_owned(), cell)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hostile_text_is_escaped() {
        assert_eq!(escape("a\u{1b}[31mred"), "a\\x1b[31mred");
        assert_eq!(escape("line\nbreak\u{7f}"), "line\\nbreak\\x7f");
        assert_eq!(escape("rtl\u{202e}x"), "rtl\\u{202e}x");
        assert_eq!(escape("c1\u{9b}"), "c1\\u{9b}");
        assert_eq!(escape("back\\slash"), "back\\\\slash");
        assert_eq!(escape("plain-id_1 ü"), "plain-id_1 ü");
    }

    #[test]
    fn long_text_is_truncated_with_an_ellipsis() {
        assert_eq!(truncate("abcdef", 4), "abc…");
        assert_eq!(truncate("abcd", 4), "abcd");
        assert_eq!(cell(&"x".repeat(100)).chars().count(), MAX_CELL);
    }
}
