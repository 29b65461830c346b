//! Progress of a long benchmark phase on stderr: a self-overwriting line on a terminal, a
//! line every few seconds otherwise (CI logs), nothing once finished. Stdout stays the
//! report alone, so `--json` output can be piped.

use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

/// How often a terminal line is redrawn, and how often a plain line is written.
const TERMINAL_EVERY: Duration = Duration::from_millis(200);
const LOG_EVERY: Duration = Duration::from_secs(5);

/// One phase's progress towards `total`.
pub struct Progress {
    label: String,
    total: u64,
    started: Instant,
    last: Option<Instant>,
    terminal: bool,
    quiet: bool,
    drawn: bool,
}

impl Progress {
    /// Starts reporting `label`; `quiet` prints nothing.
    #[must_use]
    pub fn new(label: &str, total: u64, quiet: bool) -> Self {
        Self {
            label: label.to_owned(),
            total,
            started: Instant::now(),
            last: None,
            terminal: std::io::stderr().is_terminal(),
            quiet,
            drawn: false,
        }
    }

    /// Reports `done` of the total: redrawn every 200 ms on a terminal, a line every 5 s
    /// otherwise (the first one only after 5 s, so short phases stay silent in logs).
    pub fn update(&mut self, done: u64) {
        if self.quiet {
            return;
        }
        let now = Instant::now();
        let every = if self.terminal {
            TERMINAL_EVERY
        } else {
            LOG_EVERY
        };
        if now - self.last.unwrap_or(self.started) < every {
            return;
        }
        self.last = Some(now);
        let pct = done
            .saturating_mul(100)
            .checked_div(self.total)
            .unwrap_or(100);
        let line = format!(
            "{}: {done}/{} ({pct}%) {:.1} s",
            self.label,
            self.total,
            self.started.elapsed().as_secs_f64()
        );
        let mut err = std::io::stderr().lock();
        let _ = if self.terminal {
            write!(err, "\r\x1b[2K{line}")
        } else {
            writeln!(err, "{line}")
        };
        self.drawn = true;
    }

    /// Clears the terminal line.
    pub fn finish(&mut self) {
        if self.terminal && self.drawn {
            let _ = write!(std::io::stderr().lock(), "\r\x1b[2K");
            self.drawn = false;
        }
    }
}
