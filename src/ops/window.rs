//! How far back the incident lists (failovers, refused writes) look — a span of time, not a
//! number of revisions, so a busy store shows the same quarter hour as a quiet one — and
//! the page of such a list both front ends print.

use serde::Serialize;

use crate::clock::{Millis, parse_duration};
use crate::error::{Error, Result};
use crate::model::HistoryPosition;
use crate::store::{Incidents, RETENTION};

/// A look-back span ending now.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Window {
    pub ms: Millis,
}

impl Default for Window {
    /// Fifteen minutes.
    fn default() -> Self {
        Self { ms: 15 * 60_000 }
    }
}

impl Window {
    /// Reads `15m`, `90s`, `1h`, `500ms` (plain numbers are seconds). At least one
    /// millisecond and at most as long as the store keeps incidents.
    ///
    /// # Errors
    /// `INVALID` for anything else, naming what is accepted.
    pub fn parse(text: &str) -> Result<Self> {
        let ms = parse_duration(text).ok_or_else(|| {
            Error::Invalid(format!(
                "cannot read window {:?}: use e.g. 15m, 90s, 1h",
                text.trim()
            ))
        })?;
        if ms <= 0 || ms > RETENTION.incidents_ms {
            return Err(Error::Invalid(format!(
                "window {:?} is out of range: from 1ms to {} (how long the store keeps them)",
                text.trim(),
                Self {
                    ms: RETENTION.incidents_ms
                }
                .label()
            )));
        }
        Ok(Self { ms })
    }

    /// The first instant inside the window ending at `now`.
    #[must_use]
    pub fn since(self, now: Millis) -> Millis {
        now.saturating_sub(self.ms)
    }

    /// `15m`, `1h`, `90s`, `1500ms`: the shortest exact spelling.
    #[must_use]
    pub fn label(self) -> String {
        match self.ms {
            ms if ms % 3_600_000 == 0 => format!("{}h", ms / 3_600_000),
            ms if ms % 60_000 == 0 => format!("{}m", ms / 60_000),
            ms if ms % 1_000 == 0 => format!("{}s", ms / 1_000),
            ms => format!("{ms}ms"),
        }
    }
}

/// One page of an incident list in a window.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listing<T> {
    pub window: Window,
    /// The window's first instant.
    pub since: Millis,
    /// Rows in the whole window.
    pub total: u64,
    /// This page, newest first.
    pub rows: Vec<T>,
    /// The next (older) page's start, when there is one.
    pub next: Option<HistoryPosition>,
}

impl<T> Listing<T> {
    /// The listing of one store page of `window` (starting at `since`), each stored record
    /// turned into the row both front ends print (`row` skips records it cannot state).
    pub fn of<R>(
        window: Window,
        since: Millis,
        page: &Incidents<R>,
        row: impl Fn(HistoryPosition, &R) -> Option<T>,
    ) -> Self {
        Self {
            window,
            since,
            total: page.total,
            rows: page.rows.iter().filter_map(|(p, r)| row(*p, r)).collect(),
            next: page.next,
        }
    }

    /// `last 15m · 3 failovers`, `last 1h · 1 refused write`: the headline both front
    /// ends print, with the noun for one row and for any other count.
    #[must_use]
    pub fn headline(&self, one: &str, many: &str) -> String {
        let noun = if self.total == 1 { one } else { many };
        format!("last {} · {} {noun}", self.window.label(), self.total)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_parse_label_and_refuse() {
        assert_eq!(Window::default().label(), "15m");
        for (text, ms, label) in [
            ("15m", 900_000, "15m"),
            ("90s", 90_000, "90s"),
            ("1h", 3_600_000, "1h"),
            ("120", 120_000, "2m"),
            ("1500ms", 1_500, "1500ms"),
        ] {
            let w = Window::parse(text).expect(text);
            assert_eq!((w.ms, w.label().as_str()), (ms, label));
        }
        for bad in ["", "0s", "15x", "-5m", "25h", "m"] {
            let e = Window::parse(bad).expect_err(bad);
            assert_eq!(e.code(), "INVALID");
            assert!(!e.to_string().contains('\n'));
        }
        assert_eq!(Window::default().since(1_000_000), 100_000);
    }
}
