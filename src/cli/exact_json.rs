//! JSON typed on the command line whose numbers mean exactly what was typed.
//!
//! A JSON value is held with 64-bit integers and 64-bit floats: an integer beyond 64 bits,
//! or a decimal with more digits than a float keeps, would be rounded silently — and two
//! different events would then have one canonical payload, the second answered `duplicate`
//! and dropped. So a number is taken only when the value it becomes reads back as the
//! same number; any other is refused with one line naming it (send it as a string). Two
//! different numbers accepted this way can never become one value.

use serde_json::Value;

use super::Failure;

/// Parses `text`, the value of `option`, as JSON whose every number is held exactly.
///
/// # Errors
/// Exit 2: not JSON (`{option} is not valid JSON: …`), or a number that would be rounded.
pub fn parse_exact(option: &str, text: &str) -> Result<Value, Failure> {
    let value = serde_json::from_str(text)
        .map_err(|e| Failure::usage(format!("{option} is not valid JSON: {e}")))?;
    if let Some((literal, held)) = numbers(text).find_map(|n| rounded(n).map(|h| (n, h))) {
        return Err(Failure::usage(format!(
            "{option} holds the number {literal}, which would be stored as {held}: numbers beyond 64-bit integers or floats are refused, send it as a string"
        )));
    }
    Ok(value)
}

/// The number literals of a valid JSON text, outside its strings.
fn numbers(text: &str) -> impl Iterator<Item = &str> {
    let bytes = text.as_bytes();
    let mut i = 0;
    let mut in_string = false;
    std::iter::from_fn(move || {
        while i < bytes.len() {
            let b = bytes[i];
            if in_string {
                match b {
                    b'\\' => i += 1,
                    b'"' => in_string = false,
                    _ => {}
                }
                i += 1;
            } else if b == b'"' {
                in_string = true;
                i += 1;
            } else if b == b'-' || b.is_ascii_digit() {
                let start = i;
                while i < bytes.len()
                    && matches!(bytes[i], b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E')
                {
                    i += 1;
                }
                return text.get(start..i);
            } else {
                i += 1;
            }
        }
        None
    })
}

/// What `literal` would be stored as, when that is another number; `None` when exact.
fn rounded(literal: &str) -> Option<String> {
    let integer = !literal.contains(['.', 'e', 'E']);
    if integer && (literal.parse::<i64>().is_ok() || literal.parse::<u64>().is_ok()) {
        return None;
    }
    let held = literal.parse::<f64>().ok()?;
    let shown = format!("{held}");
    (decimal(&shown) != decimal(literal)).then_some(shown)
}

/// A decimal literal as (negative, significant digits, exponent): the value is
/// `0.DIGITS × 10^exponent`; zero has no digits and no sign.
fn decimal(literal: &str) -> (bool, String, i64) {
    let (negative, unsigned) = match literal.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, literal),
    };
    let (mantissa, exponent) = match unsigned.split_once(['e', 'E']) {
        Some((m, e)) => (m, e.parse::<i64>().unwrap_or(0)),
        None => (unsigned, 0),
    };
    let (whole, fraction) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let digits = format!("{whole}{fraction}");
    let mut exponent = exponent + i64::try_from(whole.len()).unwrap_or(i64::MAX);
    let trimmed = digits.trim_start_matches('0');
    exponent -= i64::try_from(digits.len() - trimmed.len()).unwrap_or(0);
    let significant = trimmed.trim_end_matches('0');
    if significant.is_empty() {
        return (false, String::new(), 0);
    }
    (negative, significant.to_owned(), exponent)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn exact_numbers_pass_and_keep_their_value() {
        for text in [
            "0",
            "-0",
            "9223372036854775807",
            "-9223372036854775808",
            "18446744073709551615",
            "0.1",
            "1.0",
            "1e2",
            "-2.5E-3",
            "0.30000000000000004",
            r#"{"a": [1, 2.75, "12345678901234567890123"]}"#,
        ] {
            assert!(parse_exact("--payload", text).is_ok(), "{text}");
        }
    }

    #[test]
    fn numbers_that_would_be_rounded_are_refused_by_name() {
        for (text, literal) in [
            ("18446744073709551616", "18446744073709551616"),
            (
                r#"{"id": 123456789012345678901234567890}"#,
                "123456789012345678901234567890",
            ),
            ("[1, -99999999999999999999]", "-99999999999999999999"),
            ("0.1000000000000000000001", "0.1000000000000000000001"),
        ] {
            let failure = parse_exact("--payload", text).unwrap_err();
            assert_eq!(failure.exit, crate::cli::EXIT_USAGE);
            assert!(failure.message.contains(literal), "{}", failure.message);
        }
    }

    #[test]
    fn two_different_big_numbers_never_become_one_value() {
        // Both would round to the same float: both are refused rather than one accepted
        // and the other then judged its duplicate.
        assert!(parse_exact("--payload", "{\"n\": 18446744073709551617}").is_err());
        assert!(parse_exact("--payload", "{\"n\": 18446744073709551618}").is_err());
    }

    #[test]
    fn text_that_is_not_json_keeps_its_message() {
        let failure = parse_exact("--args", "{").unwrap_err();
        assert!(failure.message.starts_with("--args is not valid JSON: "));
    }
}
