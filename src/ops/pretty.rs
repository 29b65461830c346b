//! JSON for people: pretty-printed, two-space indented, with every number that names an
//! instant annotated in place (`"timeoutAt": 1796086160176 (14:03:07, in 4.2s)`), and JSON
//! held inside strings (payloads, workflow state, results) unfolded into real structure.
//! Strings keep JSON escaping, so a control character in a value prints as `\u001b`, never
//! raw.

use serde_json::Value;

use crate::foundation::timefmt::TimeFmt;

/// String fields whose text is itself JSON (an event payload, a workflow's state, an
/// authority's config, a work item's checkpoint): [`unfold`] parses them into structure.
const NESTED_JSON: &[&str] = &[
    "payload",
    "state",
    "result",
    "config",
    "detail",
    "args",
    "input",
    "inputs",
    "output",
    "checkpoint",
];

/// Replaces string values of the nested-JSON fields that hold a JSON object or array by
/// the parsed value, recursively.
#[must_use]
pub fn unfold(value: Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.into_iter()
                .map(|(k, v)| {
                    let v = match v {
                        Value::String(s) if NESTED_JSON.contains(&k.as_str()) => parse_nested(s),
                        other => other,
                    };
                    (k, unfold(v))
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.into_iter().map(unfold).collect()),
        other => other,
    }
}

fn parse_nested(text: String) -> Value {
    match serde_json::from_str::<Value>(&text) {
        Ok(v @ (Value::Object(_) | Value::Array(_))) => v,
        _ => Value::String(text),
    }
}

/// `value` on one line, compact, instants annotated by `fmt`:
/// `{"step":"wait","timeoutAt":1796086160176 (14:03:07, in 4.2s)}`.
#[must_use]
pub fn inline(value: &Value, fmt: TimeFmt) -> String {
    let mut out = String::new();
    write_inline(&mut out, None, value, fmt);
    out
}

fn write_inline(out: &mut String, key: Option<&str>, value: &Value, fmt: TimeFmt) {
    match value {
        Value::Object(map) => {
            out.push('{');
            for (i, (k, v)) in map.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&quoted(k));
                out.push(':');
                write_inline(out, Some(k), v, fmt);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, v) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_inline(out, None, v, fmt);
            }
            out.push(']');
        }
        other => write_scalar(out, key, other, fmt),
    }
}

/// A scalar, with the annotation when it is an instant under a time key.
fn write_scalar(out: &mut String, key: Option<&str>, value: &Value, fmt: TimeFmt) {
    out.push_str(&json_text(value));
    let note = match value {
        Value::Number(n) => key.zip(n.as_i64()).and_then(|(k, v)| fmt.annotate(k, v)),
        _ => None,
    };
    if let Some(note) = note {
        out.push_str(&format!(" ({note})"));
    }
}

/// `value` as indented lines, instants annotated by `fmt`.
#[must_use]
pub fn lines(value: &Value, fmt: TimeFmt) -> Vec<String> {
    let mut out = Vec::new();
    let mut first = String::new();
    write_value(&mut out, &mut first, None, value, 0, fmt);
    out.push(first);
    out
}

/// Appends `value` to the line being built in `line`, pushing finished lines to `out`.
fn write_value(
    out: &mut Vec<String>,
    line: &mut String,
    key: Option<&str>,
    value: &Value,
    depth: usize,
    fmt: TimeFmt,
) {
    match value {
        Value::Object(map) if !map.is_empty() => {
            line.push('{');
            out.push(std::mem::take(line));
            let n = map.len();
            for (i, (k, v)) in map.iter().enumerate() {
                *line = format!("{}{}: ", indent(depth + 1), quoted(k));
                write_value(out, line, Some(k), v, depth + 1, fmt);
                if i + 1 < n {
                    line.push(',');
                }
                out.push(std::mem::take(line));
            }
            *line = format!("{}}}", indent(depth));
        }
        Value::Array(items) if !items.is_empty() => {
            line.push('[');
            out.push(std::mem::take(line));
            let n = items.len();
            for (i, v) in items.iter().enumerate() {
                *line = indent(depth + 1);
                write_value(out, line, None, v, depth + 1, fmt);
                if i + 1 < n {
                    line.push(',');
                }
                out.push(std::mem::take(line));
            }
            *line = format!("{}]", indent(depth));
        }
        other => write_scalar(line, key, other, fmt),
    }
}

fn quoted(key: &str) -> String {
    json_text(&Value::String(key.to_owned()))
}

/// `value` as JSON, with the characters JSON leaves raw but a terminal would obey (bidi
/// overrides, invisible ones) written as `\uXXXX` escapes too, so what a handler returned
/// cannot reorder or hide the text around it. Still valid JSON.
fn json_text(value: &Value) -> String {
    let text = value.to_string();
    if !text.chars().any(crate::ids::is_invisible_or_reordering) {
        return text;
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if crate::ids::is_invisible_or_reordering(c) {
            let mut units = [0u16; 2];
            for unit in c.encode_utf16(&mut units) {
                out.push_str(&format!("\\u{unit:04x}"));
            }
        } else {
            out.push(c);
        }
    }
    out
}

fn indent(depth: usize) -> String {
    "  ".repeat(depth)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::foundation::timefmt::Zone;

    const NOW: i64 = 1_796_047_382_800;

    #[test]
    fn pretty_prints_with_annotated_instants() {
        let fmt = TimeFmt::new(NOW, Zone::Utc);
        let v = json!({"timeoutAt": NOW + 4_200, "inputs": {"n": 3, "tags": ["a"]}, "e": []});
        assert_eq!(
            lines(&v, fmt),
            [
                "{",
                "  \"e\": [],",
                "  \"inputs\": {",
                "    \"n\": 3,",
                "    \"tags\": [",
                "      \"a\"",
                "    ]",
                "  },",
                "  \"timeoutAt\": 1796047387000 (14:03:07, in 4.2s)",
                "}",
            ]
        );
    }

    #[test]
    fn inline_is_compact_and_annotated() {
        let fmt = TimeFmt::new(NOW, Zone::Utc);
        let v = json!({"step": "wait", "timeoutAt": NOW + 4_200, "n": [1, 2]});
        assert_eq!(
            inline(&v, fmt),
            "{\"n\":[1,2],\"step\":\"wait\",\"timeoutAt\":1796047387000 (14:03:07, in 4.2s)}"
        );
    }

    #[test]
    fn unfolds_json_held_in_strings_and_escapes_controls() {
        let v = unfold(json!({"payload": "{\"order\":7}", "state": "not json", "id": "x\u{1b}"}));
        assert_eq!(v["payload"]["order"], 7);
        assert_eq!(v["state"], "not json");
        let text = lines(&v, TimeFmt::new(NOW, Zone::Utc)).join("\n");
        assert!(text.contains("\\u001b"), "{text}");
        assert!(!text.contains('\u{1b}'));
    }

    #[test]
    fn bidi_overrides_and_invisible_characters_are_escaped_and_stay_json() {
        let v = json!({"s": "red\u{202e}olleh\u{200b}", "k\u{202e}": 1});
        let text = lines(&v, TimeFmt::new(NOW, Zone::Utc)).join("");
        assert!(
            !text.contains('\u{202e}') && !text.contains('\u{200b}'),
            "{text}"
        );
        let back: Value = serde_json::from_str(&text).expect("still JSON");
        assert_eq!(back, v);
    }
}
