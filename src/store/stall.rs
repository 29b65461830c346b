//! Waiting on the store's write lock, made visible. A writer paused inside its transaction
//! (a stopped process, a debugger, a long fsync) holds the one write lock every other
//! writer queues on; without a word they would all freeze together. A write that has
//! waited longer than [`STALL_AFTER`] logs `store-write-stalled` (again every
//! [`STALL_AFTER`] while it waits, naming the holder when the provider can tell) and
//! `store-write-resumed` once it got through.

use std::time::{Duration, Instant};

use tracing::warn;

/// How long a write may wait for the lock before the wait is logged as a stall.
pub const STALL_AFTER: Duration = Duration::from_secs(3);

/// One write transaction's wait for the write lock.
pub(crate) struct StallWatch<'a> {
    store: &'a str,
    began: Instant,
    last_report: Option<Instant>,
}

impl<'a> StallWatch<'a> {
    /// Starts watching a write to `store` (its label, as errors name it).
    pub(crate) fn new(store: &'a str) -> Self {
        Self {
            store,
            began: Instant::now(),
            last_report: None,
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
        let holder = holder().unwrap_or_else(|| "unknown (the store does not say)".into());
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
