//! Waiting on the store's write lock, made visible. A writer paused inside its transaction
//! (a stopped process, a debugger, a long fsync) holds the one write lock every other
//! writer queues on; without a word they would all freeze together. A write that has
//! waited longer than [`STALL_AFTER`] logs `store-write-stalled` (again every
//! [`STALL_AFTER`] while it waits, naming the holder when the provider can tell) and
//! `store-write-resumed` once it got through.
//!
//! A stall is also posted where a reader can see it while it lasts (`StallBoard`): the
//! store's own tables cannot hold it, since writing there needs the very lock that is
//! taken. The SQLite provider posts it beside the database file (`sqlite/stalls.rs`);
//! readers list it with [`super::Store::write_stalls`].

use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use tracing::warn;

use crate::clock::{Clock, Millis, SystemClock};

/// A process's write waiting on the store's write lock right now.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProcessStall {
    /// The waiting process's host and pid (an authority's registration names both).
    pub host: String,
    pub pid: u32,
    /// When the write began waiting (wall clock).
    pub since: Millis,
    /// Who holds the lock, when the provider can tell.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub holder: Option<String>,
}

/// Where a stall is posted while it lasts, and taken down once the write got through.
pub(crate) trait StallBoard: Send + Sync {
    /// The write began waiting at `since` (wall clock); `holder` when known.
    fn post(&self, since: Millis, holder: Option<&str>);
    /// The write got through (or gave up): nothing waits any more.
    fn clear(&self);
}

/// How long a write may wait for the lock before the wait is logged as a stall.
pub const STALL_AFTER: Duration = Duration::from_secs(3);

/// One write transaction's wait for the write lock.
pub(crate) struct StallWatch<'a> {
    store: &'a str,
    began: Instant,
    last_report: Option<Instant>,
    board: Option<&'a dyn StallBoard>,
}

impl<'a> StallWatch<'a> {
    /// Starts watching a write to `store` (its label, as errors name it).
    pub(crate) fn new(store: &'a str) -> Self {
        Self {
            store,
            began: Instant::now(),
            last_report: None,
            board: None,
        }
    }

    /// The same watch, posting its stall on `board` while it lasts.
    pub(crate) fn posting(self, board: &'a dyn StallBoard) -> Self {
        Self {
            board: Some(board),
            ..self
        }
    }

    /// The write found the lock taken and waits again: logs the stall once it has lasted
    /// [`STALL_AFTER`], then at most once per [`STALL_AFTER`]. `holder` says who holds the
    /// lock, when the provider can tell (asked only when a line is logged).
    pub(crate) fn waiting(&mut self, holder: impl FnOnce() -> Option<String>) {
        let now = Instant::now();
        let waited = now.duration_since(self.began);
        let due = self.last_report.map_or(waited >= STALL_AFTER, |last| {
            now.duration_since(last) >= STALL_AFTER
        });
        if !due {
            return;
        }
        self.last_report = Some(now);
        let named = holder();
        if let Some(board) = self.board {
            // A stall is a physical wait of a real process, stamped on the wall clock for
            // readers in other processes.
            let since = SystemClock.now().saturating_sub(millis_i64(waited));
            board.post(since, named.as_deref());
        }
        let holder = named.unwrap_or_else(|| "unknown (the store does not say)".into());
        warn!(
            store = self.store,
            waited_ms = millis(waited),
            holder = holder.as_str(),
            "store-write-stalled"
        );
    }
}

impl Drop for StallWatch<'_> {
    /// A stall that was logged is closed by a line saying how long it lasted.
    fn drop(&mut self) {
        if self.last_report.is_some() {
            if let Some(board) = self.board {
                board.clear();
            }
            warn!(
                store = self.store,
                waited_ms = millis(self.began.elapsed()),
                "store-write-resumed"
            );
        }
    }
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

fn millis_i64(d: Duration) -> Millis {
    Millis::try_from(d.as_millis()).unwrap_or(Millis::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_short_wait_is_not_a_stall_and_asks_nobody() {
        let mut watch = StallWatch::new("sqlite:x");
        watch.waiting(|| panic!("the holder is asked only for a stall"));
        assert!(watch.last_report.is_none());
    }

    #[test]
    fn a_long_wait_is_reported_once_per_interval() {
        let mut watch = StallWatch::new("sqlite:x");
        watch.began = Instant::now()
            .checked_sub(STALL_AFTER * 2)
            .unwrap_or_else(Instant::now);
        let mut asked = 0;
        watch.waiting(|| {
            asked += 1;
            Some("pid 7".into())
        });
        watch.waiting(|| {
            asked += 1;
            None
        });
        assert_eq!(asked, 1, "the second wait came within the interval");
        assert!(watch.last_report.is_some());
    }
}
