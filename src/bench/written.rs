//! What a run wrote to durable storage: the write amplification of a drain, in bytes per
//! item, read from the writer's own accounting rather than estimated.
//!
//! - **PostgreSQL**: the server's write-ahead log position ([`Store::wal_position`]) before
//!   and after. Every durable change is in the WAL before its commit returns, so the
//!   difference is what the run cost the server's log (heap and index records, commit
//!   records, full-page images after a checkpoint).
//! - **SQLite**: the log is this process's own file, so the bytes its write calls passed to
//!   the kernel (`wchar` of `/proc/<pid>/io`: WAL frames, and the checkpoints that copy
//!   them into the database file) — of this process, plus the whole life of each authority
//!   process of the fleet. The file sizes would not do: the WAL is reused from its start
//!   after every checkpoint.
//! - **Memory**: nothing is written; no figure.

use super::Fleet;
use crate::store::{Store, StoreKind};

/// A reading taken before a run.
pub(super) enum Meter {
    /// The server's WAL position.
    Server(u64),
    /// This process's bytes written so far.
    Process(u64),
    /// Nothing to measure on this store (or this system).
    Unmeasured,
}

impl Meter {
    /// Reads the starting point.
    pub(super) fn start(store: &Store) -> Self {
        let reading = match store.kind() {
            StoreKind::Postgres => store.wal_position().map(Self::Server),
            StoreKind::Sqlite => written_by("self").map(Self::Process),
            StoreKind::Memory => None,
        };
        reading.unwrap_or(Self::Unmeasured)
    }

    /// Bytes written since [`Meter::start`], counting `fleet`'s authority processes (read
    /// while they still run: a process's counters go with it).
    pub(super) fn since(&self, store: &Store, fleet: &Fleet) -> Option<u64> {
        match *self {
            Self::Server(before) => Some(store.wal_position()?.saturating_sub(before)),
            Self::Process(before) => {
                let mut total = written_by("self")?.saturating_sub(before);
                for pid in fleet.process_ids() {
                    total += written_by(&pid.to_string())?;
                }
                Some(total)
            }
            Self::Unmeasured => None,
        }
    }

    /// How the figure was taken, for the report's notes.
    pub(super) fn source(&self) -> Option<&'static str> {
        match self {
            Self::Server(_) => Some(
                "bytes written: the server's WAL across the run (pg_current_wal_lsn before and after)",
            ),
            Self::Process(_) => Some(
                "bytes written: the write calls of the bench and its authority processes across the run (wchar of /proc/<pid>/io): WAL frames and their checkpoints into the database file",
            ),
            Self::Unmeasured => None,
        }
    }
}

/// `wchar` of `/proc/<pid>/io`: what a process passed to write calls, whatever the file
/// system does with it. `None` where the system has no such file.
fn written_by(pid: &str) -> Option<u64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/io")).ok()?;
    text.lines()
        .find_map(|line| line.strip_prefix("wchar:"))
        .and_then(|n| n.trim().parse().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_counts_what_it_writes() {
        let Some(before) = written_by("self") else {
            // No per-process I/O accounting on this system: nothing to read.
            assert!(!std::path::Path::new("/proc/self/io").exists());
            return;
        };
        let dir = tempfile::tempdir().expect("a temp dir");
        std::fs::write(dir.path().join("f"), vec![7_u8; 64 * 1024]).expect("written");
        let after = written_by("self").expect("still readable");
        assert!(after >= before + 64 * 1024, "{before} -> {after}");
    }
}
