//! One whole-store check per host at a time.
//!
//! Every authority process checks the whole store when it starts (`Store::verify`: on
//! SQLite a `quick_check` that reads every page), beside its work. A fleet started together
//! on one host would read the whole store once per process, each competing with the
//! drain for the cores and the disk, and on a store of millions of items each check takes
//! seconds. So the checks of one SQLite store on one host take turns on a lock file, and a
//! process whose turn comes after a check that *finished since it started* takes that
//! check's verdict instead of reading the store again. Which verdict is new is told by the
//! file's contents (the one a process saw when it started is not), never by comparing
//! clocks. That check read the store this process started on: a check is a sample in time
//! either way (damage can arise in a page the moment after it was read), and a shared one
//! differs from the process's own only by the moments between the two processes' starts.
//!
//! Only a clean verdict is shared. A check that found damage (or failed) clears the
//! verdict, so every process after it checks for itself, finds the same damage and stops
//! on it, as each would alone; a check whose process died mid-way records nothing (its
//! lock goes with it). PostgreSQL's check reads the schema, not the data: nothing to share.
//!
//! The lock file lives in the system's temporary directory, named after the store's
//! identity (`leasehold-<digest>.checked`), readable and writable by its user alone, and
//! holds the last clean verdict's instant and process. A file there that is not the user's
//! own (another user could place one), or a link (symbolic or hard), is not used: each
//! process then checks alone. A turn held too long (a process stopped mid-check) is not
//! waited for past [`TURN_WAIT`]: the process then checks without it.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, Write};
use std::os::fd::AsFd;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime};

use rustix::fs::{FlockOperation, OFlags, flock};
use sha2::{Digest, Sha256};

use crate::error::Result;

/// How long a process waits for another's check before it checks without its turn.
pub(crate) const TURN_WAIT: Duration = Duration::from_secs(600);

/// How often a waiting process looks whether the turn is free.
const LOOK_EVERY: Duration = Duration::from_millis(50);

/// A process's wish to check a store, made when it started: the verdict the host held
/// then, so that one written since (by a check that finished after this process started)
/// is told from it without comparing clocks.
pub struct HostCheck {
    /// The store's lock file; `None` where checks are not shared (the check is cheap, or
    /// the file is not this user's alone).
    lock: Option<PathBuf>,
    seen: Option<Verdict>,
}

impl HostCheck {
    /// Asked now, through the lock file `lock` (`None`: the check is this process's alone).
    pub(crate) fn asked(lock: Option<PathBuf>) -> Self {
        let Some(mut file) = lock.as_deref().and_then(open_lock) else {
            return Self {
                lock: None,
                seen: None,
            };
        };
        let seen = verdict(&mut file);
        Self { lock, seen }
    }

    /// Runs `check` unless a clean check of the same store on this host finished since
    /// this was asked (waiting for one in progress); answers what was checked, or whose
    /// check it takes.
    ///
    /// # Errors
    /// Whatever `check` returns.
    pub(crate) fn run(self, check: impl FnOnce() -> Result<String>) -> Result<String> {
        let Some(mut turn) = self.lock.as_deref().and_then(|l| Turn::wait(l, TURN_WAIT)) else {
            return check();
        };
        if let Some(taken) = verdict(&mut turn.file).filter(|v| Some(*v) != self.seen) {
            return Ok(format!(
                "checked by process {} on this host since this one started",
                taken.pid
            ));
        }
        let checked = check();
        let clean = checked.is_ok().then(Verdict::now);
        turn.record(clean.as_ref());
        checked
    }
}

/// Milliseconds since the epoch: with the process id, what tells one verdict from another.
fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// A clean check: when it finished, by which process, and which of that process's checks
/// it was (two finished in one millisecond are still two verdicts).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Verdict {
    at: u64,
    pid: u32,
    nth: u64,
}

impl Verdict {
    /// A check of this process's finished now.
    fn now() -> Self {
        static CHECKS: AtomicU64 = AtomicU64::new(0);
        Self {
            at: now_ms(),
            pid: std::process::id(),
            nth: CHECKS.fetch_add(1, Ordering::Relaxed),
        }
    }
}

/// The last clean verdict `file` records, if it holds one (`<at> <pid> <nth>`).
fn verdict(file: &mut File) -> Option<Verdict> {
    let mut text = String::new();
    file.rewind().ok()?;
    file.read_to_string(&mut text).ok()?;
    let mut words = text.split_whitespace();
    let at = words.next()?.parse().ok()?;
    let pid = words.next()?.parse().ok()?;
    let nth = words.next()?.parse().ok()?;
    Some(Verdict { at, pid, nth })
}

/// The lock file at `path`, opened (created readable and writable by this user alone)
/// only if it is a plain file of this user's that no one else may write, and no other
/// name links to: in a shared temporary directory, a file another user placed there would
/// let them hand out verdicts, and a link (symbolic, or a hard link to one of this user's
/// files) would have a check write over that file, so neither is used.
fn open_lock(path: &Path) -> Option<File> {
    let no_follow = i32::try_from(OFlags::NOFOLLOW.bits()).ok()?;
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .custom_flags(no_follow)
        .open(path)
        .ok()?;
    let meta = file.metadata().ok()?;
    let ours = meta.is_file()
        && meta.nlink() == 1
        && meta.uid() == rustix::process::geteuid().as_raw()
        && meta.mode() & 0o022 == 0;
    ours.then_some(file)
}

/// This process's turn at checking the store; let go when dropped (closing the file).
struct Turn {
    file: File,
}

impl Turn {
    /// The turn, waited for at most `bound`; `None` when it did not come, or the lock
    /// file cannot be used.
    fn wait(path: &Path, bound: Duration) -> Option<Self> {
        let file = open_lock(path)?;
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

    /// Records `verdict` over the last one, or clears it (a check that did not come out
    /// clean: no process may take the one before it). The new line is written over the
    /// old before the file is cut to its length, so a process reading it as it starts
    /// (without the turn) never finds it empty in between and mistakes the verdict being
    /// recorded for one made after it started. Best effort: a verdict not recorded only
    /// makes the next process check for itself, and one not cleared is one it had seen
    /// already.
    fn record(&mut self, verdict: Option<&Verdict>) {
        let line = verdict.map_or_else(String::new, |v| format!("{} {} {}\n", v.at, v.pid, v.nth));
        let _ = (self.file.rewind())
            .and_then(|()| self.file.write_all(line.as_bytes()))
            .and_then(|()| self.file.set_len(line.len() as u64));
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

    fn asked(dir: &Path, identity: &str) -> HostCheck {
        HostCheck::asked(Some(lock_path(dir, identity)))
    }

    #[test]
    fn a_clean_check_finished_since_a_process_asked_is_taken_instead_of_another() {
        let dir = tempfile::tempdir().unwrap();
        let mut runs = 0;
        let (first, second) = (asked(dir.path(), "s"), asked(dir.path(), "s"));
        let other = asked(dir.path(), "other");
        assert_eq!(first.run(counted(&mut runs)).unwrap(), "every page");
        let taken = second.run(counted(&mut runs)).unwrap();
        assert_eq!(runs, 1, "not checked again: {taken}");
        assert!(taken.contains(&std::process::id().to_string()), "{taken}");
        // One that asks after that check finished checks for itself; so does one asking
        // about another store.
        asked(dir.path(), "s").run(counted(&mut runs)).unwrap();
        other.run(counted(&mut runs)).unwrap();
        assert_eq!(runs, 3);
    }

    #[test]
    fn damage_found_clears_the_verdict_the_next_process_checks_for_itself() {
        let dir = tempfile::tempdir().unwrap();
        let mut runs = 0;
        asked(dir.path(), "s").run(counted(&mut runs)).unwrap();
        let (before, after) = (asked(dir.path(), "s"), asked(dir.path(), "s"));
        // A clean check after both asked, then one that finds damage.
        asked(dir.path(), "s").run(counted(&mut runs)).unwrap();
        let damaged = asked(dir.path(), "s").run(|| Err(Error::Corrupt("page 7".into())));
        assert!(damaged.is_err());
        before.run(counted(&mut runs)).unwrap();
        assert_eq!(
            runs, 3,
            "the clean verdict the damage came after is not taken"
        );
        // The check made since is.
        after.run(counted(&mut runs)).unwrap();
        assert_eq!(runs, 3);
    }

    #[test]
    fn a_process_waits_for_the_check_in_progress_and_takes_its_verdict() {
        let dir = tempfile::tempdir().unwrap();
        let first = asked(dir.path(), "s");
        let second = asked(dir.path(), "s");
        let (started, checking) = channel();
        let (finish, finished) = channel::<()>();
        let first = std::thread::spawn(move || {
            first.run(|| {
                started.send(()).unwrap();
                finished.recv().unwrap();
                Ok("every page".into())
            })
        });
        checking.recv().unwrap();
        let second = std::thread::spawn(move || {
            let mut runs = 0;
            let answer = second.run(counted(&mut runs));
            (answer, runs)
        });
        finish.send(()).unwrap();
        assert_eq!(first.join().unwrap().unwrap(), "every page");
        let (answer, runs) = second.join().unwrap();
        assert_eq!(runs, 0, "the second took the first's verdict: {answer:?}");
    }

    #[test]
    fn a_lock_file_others_may_write_or_a_link_is_not_used() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let open = lock_path(dir.path(), "open");
        std::fs::write(&open, "").unwrap();
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o666)).unwrap();
        let linked = lock_path(dir.path(), "linked");
        let target = dir.path().join("elsewhere");
        std::fs::write(&target, "keep").unwrap();
        std::os::unix::fs::symlink(&target, &linked).unwrap();
        // A hard link to a file of the user's own, mode 0600 like a lock file.
        let hard = lock_path(dir.path(), "hard");
        let own = dir.path().join("own");
        std::fs::write(&own, "mine").unwrap();
        std::fs::set_permissions(&own, std::fs::Permissions::from_mode(0o600)).unwrap();
        std::fs::hard_link(&own, &hard).unwrap();
        for identity in ["open", "linked", "hard"] {
            let mut runs = 0;
            asked(dir.path(), identity).run(counted(&mut runs)).unwrap();
            asked(dir.path(), identity).run(counted(&mut runs)).unwrap();
            assert_eq!(runs, 2, "{identity}: each checked alone");
        }
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep");
        assert_eq!(std::fs::read_to_string(&own).unwrap(), "mine");
    }
}
