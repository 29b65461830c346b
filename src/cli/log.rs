//! How `leasehold authority` writes its log: a `tracing` subscriber per authority, in the
//! human format (one line per event, every value escaped) or as one JSON object per line.
//!
//! Log values come from other people: instance ids, build tags, handler names and item ids
//! may hold terminal escapes, control characters or bidirectional overrides. In the human
//! format every value, the message included, goes through
//! [`crate::foundation::text_cell::escape`], so `cat`-ing a log can never move the cursor,
//! retitle the terminal or reorder text. JSON
//! escapes control characters by construction; DEL, C1 controls and the characters that
//! reorder text, which JSON allows raw, are written as `\uXXXX` escapes as well.

use std::fmt;
use std::io::{self, Write};
use std::sync::Arc;

use tracing::field::{Field, Visit};
use tracing::{Dispatch, Level};
use tracing_subscriber::field::RecordFields;
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::time::FormatTime;
use tracing_subscriber::fmt::{FormatFields, MakeWriter};

use crate::clock::{Clock, format_instant};
use crate::foundation::text_cell::escape;

/// The shape of the log lines on stderr.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// `2026-01-01T00:00:00.000Z  INFO claimed instance=a1 item=e1 generation=3 …`.
    #[default]
    #[value(alias = "text")]
    Human,
    /// One JSON object per line: `{"timestamp":…,"level":"INFO","message":"claimed",…}`.
    Json,
    /// Nothing (benchmarks report on their own).
    Off,
}

/// A subscriber writing `format` lines to `writer`, stamped with `clock`'s time (the
/// store's clock, so a test on a manual clock gets fixed timestamps).
pub fn dispatch<W>(format: LogFormat, clock: Arc<dyn Clock>, writer: W) -> Dispatch
where
    W: for<'w> MakeWriter<'w> + Send + Sync + 'static,
{
    let builder = tracing_subscriber::fmt()
        .with_max_level(Level::INFO)
        .with_target(false)
        .with_ansi(false)
        .with_timer(ClockTime(clock));
    match format {
        LogFormat::Human => Dispatch::new(
            builder
                .fmt_fields(EscapedFields)
                .with_writer(writer)
                .finish(),
        ),
        LogFormat::Json => Dispatch::new(
            builder
                .json()
                .flatten_event(true)
                .with_current_span(false)
                .with_span_list(false)
                .with_writer(JsonSafe(writer))
                .finish(),
        ),
        LogFormat::Off => Dispatch::none(),
    }
}

/// Timestamps from an injected clock, as `2026-01-01T00:00:00.000Z`.
struct ClockTime(Arc<dyn Clock>);

impl FormatTime for ClockTime {
    fn format_time(&self, w: &mut Writer<'_>) -> fmt::Result {
        w.write_str(&format_instant(self.0.now()))
    }
}

/// The human field format: the message, then ` key=value` pairs; every value escaped, and
/// quoted when it is empty or holds a space, a quote or `=`, so a line splits one way only.
struct EscapedFields;

impl<'w> FormatFields<'w> for EscapedFields {
    fn format_fields<R: RecordFields>(&self, writer: Writer<'w>, fields: R) -> fmt::Result {
        let mut visitor = EscapingVisitor {
            writer,
            result: Ok(()),
            first: true,
        };
        fields.record(&mut visitor);
        visitor.result
    }
}

struct EscapingVisitor<'w> {
    writer: Writer<'w>,
    result: fmt::Result,
    first: bool,
}

impl EscapingVisitor<'_> {
    fn put(&mut self, field: &Field, value: &str) {
        if self.result.is_err() {
            return;
        }
        let mut text = escape(value);
        if text.is_empty() || text.contains([' ', '"', '=']) {
            text = format!("\"{}\"", text.replace('"', "\\\""));
        }
        let space = if self.first { "" } else { " " };
        self.first = false;
        self.result = if field.name() == "message" {
            write!(self.writer, "{space}{text}")
        } else {
            write!(self.writer, "{space}{}={text}", escape(field.name()))
        };
    }
}

impl Visit for EscapingVisitor<'_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.put(field, value);
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.put(field, &format!("{value:?}"));
    }
}

/// A writer factory whose writers escape, inside the JSON they are given, the characters
/// JSON leaves raw but a terminal acts on.
struct JsonSafe<W>(W);

impl<'w, W: MakeWriter<'w>> MakeWriter<'w> for JsonSafe<W> {
    type Writer = JsonSafeWriter<W::Writer>;

    fn make_writer(&'w self) -> Self::Writer {
        JsonSafeWriter(self.0.make_writer())
    }
}

/// See [`JsonSafe`]. Such characters can only stand inside JSON strings (the syntax is
/// ASCII), where `\uXXXX` means the same character: the line parses to the same values.
struct JsonSafeWriter<W>(W);

impl<W: Write> Write for JsonSafeWriter<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let text = String::from_utf8_lossy(buf);
        let mut out = String::with_capacity(text.len());
        for c in text.chars() {
            if terminal_acts_on(c) {
                out.push_str(&format!("\\u{:04x}", c as u32));
            } else {
                out.push(c);
            }
        }
        self.0.write_all(out.as_bytes())?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.0.flush()
    }
}

/// DEL, C1 controls, and the format characters that reorder or hide text.
fn terminal_acts_on(c: char) -> bool {
    matches!(c as u32, 0x7F..=0x9F | 0x200B..=0x200F | 0x2028..=0x202E | 0x2060..=0x2069 | 0xFEFF)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::ManualClock;
    use std::sync::Mutex;

    /// A shared buffer the subscriber writes into.
    #[derive(Clone, Default)]
    struct Buffer(Arc<Mutex<Vec<u8>>>);

    impl Write for Buffer {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.0
                .lock()
                .map_err(|_| io::Error::other("poisoned"))?
                .extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    fn logged(format: LogFormat) -> String {
        let buffer = Buffer::default();
        let sink = buffer.clone();
        let clock: Arc<dyn Clock> = Arc::new(ManualClock::new(1_767_225_600_000));
        let dispatch = dispatch(format, clock, move || sink.clone());
        tracing::dispatcher::with_default(&dispatch, || {
            tracing::info!(
                instance = "a\u{1b}]0;owned\u{7}",
                item = "e\u{9b}31m\u{202e}1",
                build = "v 1\u{7f}",
                generation = 3_u64,
                "claimed"
            );
        });
        let bytes = buffer.0.lock().expect("lock").clone();
        String::from_utf8(bytes).expect("utf-8")
    }

    #[test]
    fn human_lines_escape_every_value() {
        let line = logged(LogFormat::Human);
        assert_eq!(
            line,
            "2026-01-01T00:00:00.000Z  INFO claimed instance=a\\x1b]0;owned\\x07 \
             item=e\\u{9b}31m\\u{202e}1 build=\"v 1\\x7f\" generation=3\n"
        );
    }

    #[test]
    fn json_lines_escape_what_a_terminal_acts_on_and_parse_back() {
        let line = logged(LogFormat::Json);
        assert!(
            !line
                .chars()
                .any(|c| c.is_control() && c != '\n' || terminal_acts_on(c)),
            "{line:?}"
        );
        let v: serde_json::Value = serde_json::from_str(line.trim_end()).expect("one object");
        assert_eq!(v["message"], "claimed");
        assert_eq!(v["instance"], "a\u{1b}]0;owned\u{7}");
        assert_eq!(v["item"], "e\u{9b}31m\u{202e}1");
        assert_eq!(v["generation"], 3);
        assert_eq!(v["timestamp"], "2026-01-01T00:00:00.000Z");
    }
}
