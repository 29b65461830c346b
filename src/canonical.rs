//! Canonical JSON, the one byte form that fingerprints hash: event payload dedup and the
//! workflow semantic fingerprint both use it, so two encodings of one value always agree.

use std::fmt::Write as _;

use serde_json::Value;

/// Canonical JSON: object keys sorted by code point, no whitespace, strings escaped as
/// `serde_json` does, integral numbers (including `1.0` and `-0.0`) without a fraction.
/// Event payload fingerprints use the same form, so two encodings of one payload agree.
#[must_use]
pub fn canonical_json(value: &Value) -> String {
    let mut out = String::new();
    write_canonical(value, &mut out);
    out
}

fn write_canonical(value: &Value, out: &mut String) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => {
            let integral = n
                .as_f64()
                .filter(|f| f.fract() == 0.0 && f.abs() < 9_007_199_254_740_992.0);
            match (n.is_f64(), integral) {
                // Exact below 2^53, so the cast cannot lose information.
                #[allow(clippy::cast_possible_truncation)]
                (true, Some(f)) => {
                    let _ = write!(out, "{}", f as i64);
                }
                _ => {
                    let _ = write!(out, "{n}");
                }
            }
        }
        Value::String(s) => out.push_str(&Value::String(s.clone()).to_string()),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(key.clone()).to_string());
                out.push(':');
                write_canonical(&map[key], out);
            }
            out.push('}');
        }
    }
}
