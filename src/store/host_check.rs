//! One whole-store check per host at a time.
//!
//! Every authority process checks the whole store when it starts (`Store::verify`: on
//! SQLite a `quick_check` that reads every page), beside its work. A fleet started together
//! on one host would read the whole store once per process, each competing with the
//! drain for the cores and the disk: six processes on two cores cost the drain about 4 %
//! while they ran, and on a store of millions of items each check takes seconds. So the
//! checks of one store on one host take turns on a lock file, and a process whose turn
//! comes after a check that *finished after it asked* takes that check's verdict instead
//! of reading the store again. That check read the store this process started on: a check
//! is a sample in time either way (damage can arise in a page the moment after it was
//! read), and a shared one differs from the process's own only by the milliseconds between
//! the other process's start and this one's.
//!
//! Only a clean verdict is shared. A check that found damage leaves no verdict, so the
//! next process checks for itself, finds the same damage and stops on it, as each would
//! alone; so does a check that failed or whose process died mid-way (its lock goes with
//! it).
//!
//! The lock file lives in the system's temporary directory, named after the store's
//! identity (`leasehold-<digest>.checked`), and holds the last clean verdict's instant and
//! process. A turn held too long (a process stopped mid-check) is not waited for past
//! [`TURN_WAIT`]: the process then checks without it.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, Write};
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use rustix::fs::{FlockOperation, flock};
use sha2::{Digest, Sha256};

use crate::error::Result;

/// How long a process waits for another's check before it checks without its turn.
pub(crate) const TURN_WAIT: Duration = Duration::from_secs(600);

/// How often a waiting process looks whether the turn is free.
const LOOK_EVERY: Duration = Duration::from_millis(50);

/// Runs `check` on the store whose lock file is `lock` ([`lock_path`]) unless a check on
/// this host finished cleanly at or after `since` (epoch milliseconds, when the caller
/// began to want one); answers what was checked, or whose check it takes.
///
/// # Errors
/// Whatever `check` returns.
pub(crate) fn once_per_host(
    lock: &Path,
    since: u64,
    check: impl FnOnce() -> Result<String>,
) -> Result<String> {
    let Some(mut turn) = Turn::wait(lock, TURN_WAIT) else {
        return check();
    };
    if let Some(verdict) = turn.verdict().filter(|v| v.at >= since) {
        return Ok(format!(
            "checked by process {} on this host, {} ms after this one asked",
            verdict.pid,
            verdict.at - since
        ));
    }
    let checked = check()?;
    turn.record(&Verdict {
        at: now_ms(),
        pid: std::process::id(),
    });
    Ok(checked)
}

/// Milliseconds since the epoch, by the wall clock: the verdicts of several processes
/// are compared by it.
pub(crate) fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// A clean check: when it finished, by which process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Verdict {
    at: u64,
    pid: u32,
}

/// This process's turn at checking the store; let go when dropped (closing the file).
struct Turn {
    file: File,
}

impl Turn {
    /// The turn, waited for at most `bound`; `None` when it did not come, or the lock
    /// file cannot be opened or locked.
    fn wait(path: &Path, bound: Duration) -> Option<Self> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .ok()?;
        let deadline = Instant::now() + bound;
        loop {
            if flock(file.as_fd(), FlockOperation::NonBlockingLockExclusive).is_ok() {
                return Some(Self { file });
            }
            if Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(LOOK_EVERY);
        }
    }

    /// The last clean verdict recorded, if the file holds one (`<at> <pid>`).
    fn verdict(&mut self) -> Option<Verdict> {
        let mut text = String::new();
        self.file.rewind().ok()?;
        self.file.read_to_string(&mut text).ok()?;
        let mut words = text.split_whitespace();
        let at = words.next()?.parse().ok()?;
        let pid = words.next()?.parse().ok()?;
        Some(Verdict { at, pid })
    }

    /// Records `verdict` over the last one. Best effort: a verdict not recorded only
    /// makes the next process check for itself.
    fn record(&mut self, verdict: &Verdict) {
        let _ = self
            .file
            .set_len(0)
            .and_then(|()| self.file.rewind())
            .and_then(|()| writeln!(self.file, "{} {}", verdict.at, verdict.pid));
    }
}

/// The lock file of the store `identity` names, in `dir`.
pub(crate) fn lock_path(dir: &Path, identity: &str) -> PathBuf {
    let digest = hex::encode(Sha256::digest(identity.as_bytes()));
    dir.join(format!("leasehold-{}.checked", &digest[..32]))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::sync::mpsc::channel;

    use super::*;
    use crate::error::Error;

    fn counted(runs: &mut u32) -> impl FnOnce() -> Result<String> + '_ {
        move || {
            *runs += 1;
            Ok("every page".into())
        }
    }

    #[test]
    fn a_clean_check_finished_since_a_process_asked_is_taken_instead_of_another() {
        let dir = tempfile::tempdir().unwrap();
        let mut runs = 0;
        let asked = now_ms();
        let first = once_per_host(&lock_path(dir.path(), "s"), asked, counted(&mut runs)).unwrap();
        assert_eq!((first.as_str(), runs), ("every page", 1));
        let taken = once_per_host(&lock_path(dir.path(), "s"), asked, counted(&mut runs)).unwrap();
        assert_eq!(runs, 1, "not checked again: {taken}");
        assert!(taken.contains(&std::process::id().to_string()), "{taken}");
        // A process that asks after that check finished checks for itself; so does one
        // asking about another store.
        let later = now_ms() + 60_000;
        once_per_host(&lock_path(dir.path(), "s"), later, counted(&mut runs)).unwrap();
        once_per_host(&lock_path(dir.path(), "other"), asked, counted(&mut runs)).unwrap();
        assert_eq!(runs, 3);
    }

    #[test]
    fn damage_found_is_not_shared_the_next_process_checks_for_itself() {
        let dir = tempfile::tempdir().unwrap();
        let asked = now_ms();
        let damaged = once_per_host(&lock_path(dir.path(), "s"), asked, || {
            Err(Error::Corrupt("page 7".into()))
        });
        assert!(damaged.is_err());
        let mut runs = 0;
        once_per_host(&lock_path(dir.path(), "s"), asked, counted(&mut runs)).unwrap();
        assert_eq!(runs, 1);
    }

    #[test]
    fn a_process_waits_for_the_check_in_progress_and_takes_its_verdict() {
        let dir = tempfile::tempdir().unwrap();
        let asked = now_ms();
        let (started, checking) = channel();
        let (finish, finished) = channel::<()>();
        let path = dir.path().to_owned();
        let first = std::thread::spawn(move || {
            once_per_host(&lock_path(&path, "s"), asked, || {
                started.send(()).unwrap();
                finished.recv().unwrap();
                Ok("every page".into())
            })
        });
        checking.recv().unwrap();
        let path = dir.path().to_owned();
        let second = std::thread::spawn(move || {
            let mut runs = 0;
            let answer = once_per_host(&lock_path(&path, "s"), asked, counted(&mut runs));
            (answer, runs)
        });
        finish.send(()).unwrap();
        assert_eq!(first.join().unwrap().unwrap(), "every page");
        let (answer, runs) = second.join().unwrap();
        assert_eq!(runs, 0, "the second took the first's verdict: {answer:?}");
    }
}
