//! Making store text safe to draw: ids, payloads and messages come from other processes and
//! may hold control characters, terminal escapes, bidi overrides or megabytes of text. All
//! of it passes through [`clean`] before it reaches a cell.

use crate::clock::{Millis, format_duration};

/// Hard cap on how much of one string is even looked at.
const SCAN_LIMIT: usize = 8_192;

/// `s` with control and bidi-formatting characters escaped (`\n`, `\u{1b}`), cut to at most
/// `max` characters (ending in `…` when cut).
#[must_use]
pub fn clean(s: &str, max: usize) -> String {
    let max = max.max(1);
    let mut out = String::with_capacity(s.len().min(max + 8));
    let mut count = 0usize;
    for (i, c) in s.chars().enumerate() {
        if i >= SCAN_LIMIT {
            out.push('…');
            return out;
        }
        let piece: std::borrow::Cow<'_, str> = match c {
            '\n' => "\\n".into(),
            '\r' => "\\r".into(),
            '\t' => "\\t".into(),
            c if c.is_control() || is_format(c) => format!("\\u{{{:x}}}", c as u32).into(),
            c => c.to_string().into(),
        };
        let len = piece.chars().count();
        if count + len > max {
            // Leave room for the ellipsis.
            while count + 1 > max && out.pop().is_some() {
                count -= 1;
            }
            out.push('…');
            return out;
        }
        out.push_str(&piece);
        count += len;
    }
    out
}

/// Invisible formatting characters that can reorder or hide text on a terminal.
fn is_format(c: char) -> bool {
    matches!(c, '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2060}'..='\u{2069}' | '\u{feff}')
}

/// The first `n` characters of an id or token, for narrow columns.
#[must_use]
pub fn short(s: &str, n: usize) -> String {
    clean(s, n)
}

/// Time until `at` (`in 4.0s`) or since it (`4.0s ago`).
#[must_use]
pub fn relative(now: Millis, at: Option<Millis>) -> String {
    match at {
        None => "-".into(),
        Some(at) if at >= now => format!("in {}", format_duration(at - now)),
        Some(at) => format!("{} ago", format_duration(now - at)),
    }
}

/// A clock time `HH:MM:SS.mmm` (UTC) for tables; the full instant lives in detail views.
#[must_use]
pub fn clock_time(at: Millis) -> String {
    chrono::DateTime::from_timestamp_millis(at)
        .map_or_else(|| at.to_string(), |t| t.format("%H:%M:%S%.3f").to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_controls_and_truncates() {
        assert_eq!(clean("a\nb\u{1b}[31m", 40), "a\\nb\\u{1b}[31m");
        assert_eq!(clean("abcdef", 4), "abc…");
        assert_eq!(clean("abc", 3), "abc");
        assert_eq!(clean("\u{202e}evil", 40), "\\u{202e}evil");
        assert_eq!(clean(&"x".repeat(1_000_000), 10).chars().count(), 10);
        assert_eq!(clean("\n\n\n", 3), "\\n…");
    }
}
