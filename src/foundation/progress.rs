//! Progress of a long command on stderr (`leasehold bench`, `leasehold copy`): one
//! self-overwriting line on a terminal, redrawn at most every 200 ms; in a log (stderr not a
//! terminal) a plain line every 5 s, or nothing for commands that only report on a
//! terminal. Stdout stays the command's output alone, so `--json` can be piped.

use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

/// How often a terminal line is redrawn, and how often a plain line is written.
const TERMINAL_EVERY: Duration = Duration::from_millis(200);
const LOG_EVERY: Duration = Duration::from_secs(5);

/// One command's progress line.
pub struct Progress {
    started: Instant,
    last: Option<Instant>,
    terminal: bool,
    /// Write plain lines when stderr is not a terminal.
    log: bool,
    quiet: bool,
    drawn: bool,
}

impl Progress {
    /// A progress line; `quiet` prints nothing at all.
    #[must_use]
    pub fn new(quiet: bool) -> Self {
        Self {
            started: Instant::now(),
            last: None,
            terminal: std::io::stderr().is_terminal(),
            log: true,
            quiet,
            drawn: false,
        }
    }

    /// A progress line shown only on a terminal, never in a log.
    #[must_use]
    pub fn terminal_only() -> Self {
        Self {
            log: false,
            ..Self::new(false)
        }
    }

    /// Shows `line()` if it is time to (the first plain log line only after 5 s, so short
    /// phases stay silent in logs).
    pub fn show(&mut self, line: impl FnOnce() -> String) {
        if self.quiet || !(self.terminal || self.log) {
            return;
        }
        let now = Instant::now();
        let every = if self.terminal {
            TERMINAL_EVERY
        } else {
            LOG_EVERY
        };
        let due = match (self.last, self.terminal) {
            (Some(last), _) => now.duration_since(last) >= every,
            (None, true) => true,
            (None, false) => now.duration_since(self.started) >= every,
        };
        if !due {
            return;
        }
        self.last = Some(now);
        let mut err = std::io::stderr().lock();
        let _ = if self.terminal {
            write!(err, "\r\x1b[2K{}", line())
        } else {
            writeln!(err, "{}", line())
        };
        self.drawn = true;
    }

    /// Shows `label: done/total (pct%) seconds`.
    pub fn count(&mut self, label: &str, done: u64, total: u64) {
        let started = self.started;
        self.show(|| {
            let pct = done.saturating_mul(100).checked_div(total).unwrap_or(100);
            format!(
                "{label}: {done}/{total} ({pct}%) {:.1} s",
                started.elapsed().as_secs_f64()
            )
        });
    }

    /// Clears the terminal line.
    pub fn finish(&mut self) {
        if self.terminal && self.drawn {
            let _ = write!(std::io::stderr().lock(), "\r\x1b[2K");
            self.drawn = false;
        }
    }
}
