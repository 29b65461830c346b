//! The input of `leasehold work enqueue --from FILE|-`: JSON lines, one work item a line,
//! with the fields the single enqueue takes as flags — `handler` and `payload` (required),
//! `id`, `idempotencyKey`, `delay` (`"30s"`, `"5m"`), `maxAttempts`, `priority` — and no
//! other (a misspelt field would otherwise be dropped silently). Blank lines are skipped;
//! line numbers count every line, so an error names the line an editor shows.
//!
//! A line with neither `id` nor `idempotencyKey` is keyed by what it asks for: its handler
//! and its payload as stored, hashed ([`derived_key`]). A re-run of the same file then
//! offers the same keys and is answered `duplicate`, however the run before it ended; the
//! same handler and payload on two lines are one item (give each an `idempotencyKey` to
//! enqueue both). Its id is not that hash but the run's own, in line order
//! ([`LineItem::spec`]): the key is all the deduplication needs, and ids in order let the
//! store's id and claim-order indexes take a run's items at one end instead of all over.
//!
//! Every line is bounded ([`MAX_LINE_BYTES`], read no further than one byte past it) and
//! its payload by the single enqueue's bound, so a stray binary file or an endless line is
//! refused without being loaded whole.

use std::io::{BufRead, Read};

use serde::Deserialize;
use serde_json::Value;
use sha2::{Digest, Sha256};

use super::Failure;
use super::enqueue::delay_ms;
use super::exact_json::parse_exact;
use crate::clock::Millis;
use crate::foundation::file_input::MAX_PAYLOAD_BYTES;
use crate::ids::{check_id, check_opt_id};
use crate::model::work::NewWork;

/// The longest line read: a payload at its bound, with room for the other fields and
/// for the spacing and escapes a JSON writer may add.
pub const MAX_LINE_BYTES: u64 = 2 * MAX_PAYLOAD_BYTES;

/// The prefix of the keys (and ids) derived from a line's handler and payload.
pub const DERIVED_KEY_PREFIX: &str = "line";

/// One line as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Line {
    handler: String,
    payload: Value,
    id: Option<String>,
    idempotency_key: Option<String>,
    delay: Option<String>,
    max_attempts: Option<u32>,
    priority: Option<i32>,
}

/// One line read and checked: everything but the instant its delay counts from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineItem {
    /// Its line number, from 1.
    pub line: u64,
    /// As given, else the key as given; `None` for a line keyed by what it asks for,
    /// which takes the run's id ([`Self::spec`]).
    pub id: Option<String>,
    /// As given, else derived for a line with neither id nor key; `None` leaves the
    /// store's default (the id).
    pub idempotency_key: Option<String>,
    pub handler: String,
    /// The payload as stored (compact JSON, keys in order).
    pub payload: String,
    pub delay: Option<Millis>,
    pub max_attempts: Option<u32>,
    pub priority: i32,
}

impl LineItem {
    /// The item to offer, its delay counted from `now`; a line without an id of its own
    /// takes `run`'s id and its line number (`<run>-000000042`), so a run's items are
    /// numbered in order.
    #[must_use]
    pub fn spec(&self, now: Millis, run: &str) -> NewWork {
        let id = self
            .id
            .clone()
            .unwrap_or_else(|| format!("{run}-{:09}", self.line));
        let mut spec = NewWork::effect(id, self.handler.clone(), self.payload.clone());
        spec.idempotency_key.clone_from(&self.idempotency_key);
        spec.not_before = self.delay.map(|d| now.saturating_add(d));
        if let Some(n) = self.max_attempts {
            spec.max_attempts = n;
        }
        spec.priority = self.priority;
        spec
    }
}

/// The key of a line that names neither id nor key: `line-` and 32 hex digits of the
/// SHA-256 of its handler and its payload as stored.
#[must_use]
pub fn derived_key(handler: &str, payload: &str) -> String {
    let mut hasher = Sha256::new();
    hasher.update(handler.as_bytes());
    hasher.update([0]);
    hasher.update(payload.as_bytes());
    let digest = hex::encode(hasher.finalize());
    format!("{DERIVED_KEY_PREFIX}-{}", &digest[..32])
}

/// Reads `text`, line `line` of the input.
///
/// # Errors
/// Exit 2, one line starting `line N:`: not JSON, a number that would be rounded, a
/// missing, unknown or mistyped field, an id, key or handler that is not printable, an
/// unreadable delay, `maxAttempts` 0, a payload over the bound.
pub fn parse_line(line: u64, text: &str) -> Result<LineItem, Failure> {
    let at = |message: String| Failure::usage(format!("line {line}: {message}"));
    let value = parse_exact(&format!("line {line}"), text)?;
    let fields: Line = serde_json::from_value(value).map_err(|e| at(e.to_string()))?;
    let invalid = |e: crate::error::Error| at(e.to_string());
    check_id("handler", &fields.handler).map_err(invalid)?;
    check_opt_id("work id", fields.id.as_deref()).map_err(invalid)?;
    check_opt_id("idempotency key", fields.idempotency_key.as_deref()).map_err(invalid)?;
    let delay = fields
        .delay
        .as_deref()
        .map(|d| delay_ms("delay", d))
        .transpose()
        .map_err(|f| at(f.message))?;
    if fields.max_attempts == Some(0) {
        return Err(at("maxAttempts must be at least 1".into()));
    }
    let payload = fields.payload.to_string();
    if payload.len() as u64 > MAX_PAYLOAD_BYTES {
        return Err(at("the payload is larger than 1 MiB".into()));
    }
    let id = fields.id.or_else(|| fields.idempotency_key.clone());
    let idempotency_key = match (&id, fields.idempotency_key) {
        (None, _) => Some(derived_key(&fields.handler, &payload)),
        (Some(_), key) => key,
    };
    Ok(LineItem {
        line,
        id,
        idempotency_key,
        handler: fields.handler,
        payload,
        delay,
        max_attempts: fields.max_attempts,
        priority: fields.priority.unwrap_or_default(),
    })
}

/// A line that could not be read or is not an item: its number and the one-line refusal.
#[derive(Debug)]
pub struct BadLine {
    pub line: u64,
    pub failure: Failure,
}

/// The items of a JSON-lines input, in order, blank lines skipped; `name` is how errors
/// name the input.
pub struct Lines<R> {
    reader: R,
    name: String,
    number: u64,
    buf: Vec<u8>,
}

impl<R: BufRead> Lines<R> {
    #[must_use]
    pub fn new(reader: R, name: impl Into<String>) -> Self {
        Self {
            reader,
            name: name.into(),
            number: 0,
            buf: Vec::new(),
        }
    }

    /// The next line's number and text, bounded; `None` at the end.
    fn next_text(&mut self) -> Option<(u64, Result<&str, Failure>)> {
        self.buf.clear();
        let read = self
            .reader
            .by_ref()
            .take(MAX_LINE_BYTES + 1)
            .read_until(b'\n', &mut self.buf);
        self.number += 1;
        let line = self.number;
        match read {
            Ok(0) => return None,
            Ok(_) => {}
            Err(e) => {
                let name = &self.name;
                return Some((
                    line,
                    Err(Failure::usage(format!(
                        "cannot read line {line} of {name}: {e}"
                    ))),
                ));
            }
        }
        if self.buf.len() as u64 > MAX_LINE_BYTES {
            return Some((
                line,
                Err(Failure::usage(format!(
                    "line {line}: longer than {MAX_LINE_BYTES} bytes"
                ))),
            ));
        }
        let text = std::str::from_utf8(&self.buf)
            .map_err(|_| Failure::usage(format!("line {line}: not UTF-8 text")));
        Some((line, text))
    }
}

impl<R: BufRead> Iterator for Lines<R> {
    type Item = Result<LineItem, BadLine>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            let (line, read) = self.next_text()?;
            let bad = |failure| BadLine { line, failure };
            let text = match read {
                Ok(text) if text.trim().is_empty() => continue,
                Ok(text) => text,
                Err(failure) => return Some(Err(bad(failure))),
            };
            return Some(parse_line(line, text).map_err(bad));
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn items(input: &str) -> Vec<Result<LineItem, String>> {
        Lines::new(input.as_bytes(), "input")
            .map(|r| r.map_err(|bad| bad.failure.message))
            .collect()
    }

    #[test]
    fn every_field_of_the_single_enqueue() {
        let [Ok(item)] = &items(
            r#"{"handler":"mail","payload":{"to":"ann","n":1},"id":"m-1","idempotencyKey":"k-1","delay":"90s","maxAttempts":3,"priority":-4}"#,
        )[..] else {
            panic!("one item");
        };
        assert_eq!(
            item,
            &LineItem {
                line: 1,
                id: Some("m-1".into()),
                idempotency_key: Some("k-1".into()),
                handler: "mail".into(),
                payload: r#"{"n":1,"to":"ann"}"#.into(),
                delay: Some(90_000),
                max_attempts: Some(3),
                priority: -4,
            }
        );
        let spec = item.spec(1_000, "line-run");
        assert_eq!(spec.id, "m-1");
        assert_eq!(spec.not_before, Some(91_000));
        assert_eq!((spec.max_attempts, spec.priority), (3, -4));
    }

    #[test]
    fn ids_default_to_the_key_else_keys_to_the_handler_and_payload() {
        let read = items(concat!(
            "{\"handler\":\"h\",\"payload\":1,\"idempotencyKey\":\"k\"}\n",
            "\n   \n",
            "{\"handler\":\"h\",\"payload\":{\"b\":1,\"a\":2}}\n",
            "{\"payload\":{\"a\":2, \"b\":1},\"handler\":\"h\",\"priority\":5}\n",
            "{\"handler\":\"h2\",\"payload\":{\"a\":2,\"b\":1}}",
        ));
        let read: Vec<LineItem> = read.into_iter().map(Result::unwrap).collect();
        assert_eq!(read[0].id.as_deref(), Some("k"));
        assert_eq!(read[0].idempotency_key.as_deref(), Some("k"));
        assert_eq!(
            read.iter().map(|i| i.line).collect::<Vec<_>>(),
            [1, 4, 5, 6],
            "blank lines are counted and skipped"
        );
        let key = |i: usize| read[i].idempotency_key.clone().unwrap();
        assert!(
            key(1).starts_with("line-") && key(1).len() == 37,
            "{}",
            key(1)
        );
        assert_eq!(read[1].id, None, "the id is the run's");
        assert_eq!(key(1), key(2), "the payload as stored, not as spelt");
        assert_ne!(key(1), key(3), "another handler");
        let ids: Vec<String> = read[1..].iter().map(|i| i.spec(0, "line-r").id).collect();
        assert_eq!(
            ids,
            ["line-r-000000004", "line-r-000000005", "line-r-000000006"],
            "numbered by line, in order"
        );
    }

    #[test]
    fn a_bad_line_is_named_by_its_number() {
        let refused = |line: &str| items(&format!("\n{line}\n")).remove(0).unwrap_err();
        for (line, says) in [
            ("{", "line 2 is not valid JSON"),
            (r#"{"payload":1}"#, "line 2: missing field `handler`"),
            (r#"{"handler":"h"}"#, "line 2: missing field `payload`"),
            (
                r#"{"handler":"h","payload":1,"prio":1}"#,
                "line 2: unknown field `prio`",
            ),
            (
                r#"{"handler":"h","payload":1,"priority":"high"}"#,
                "line 2: invalid type",
            ),
            (
                r#"{"handler":"h","payload":1,"delay":"soon"}"#,
                "line 2: cannot read delay soon",
            ),
            (
                r#"{"handler":"h","payload":1,"maxAttempts":0}"#,
                "line 2: maxAttempts must be at least 1",
            ),
            (
                r#"{"handler":"h","payload":1,"id":""}"#,
                "line 2: INVALID: work id: must not be empty",
            ),
            (
                r#"{"handler":"h","payload":18446744073709551616}"#,
                "line 2 holds the number",
            ),
            ("[1]", "line 2: invalid type"),
        ] {
            let message = refused(line);
            assert!(message.starts_with(says), "{line}: {message}");
        }
        let not_text = Lines::new(&b"\xff\n"[..], "input").next().unwrap();
        assert_eq!(
            not_text.unwrap_err().failure.message,
            "line 1: not UTF-8 text"
        );
    }

    #[test]
    fn a_line_over_the_bound_is_refused_unread() {
        let limit = usize::try_from(MAX_LINE_BYTES).unwrap();
        let long = format!("{}\n{{}}\n", " ".repeat(limit + 10));
        let mut lines = Lines::new(long.as_bytes(), "input");
        let message = lines.next().unwrap().unwrap_err().failure.message;
        assert!(message.starts_with("line 1: longer than"), "{message}");
    }
}
