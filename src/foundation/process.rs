//! Whether the process an authority registration names is still the one that registered,
//! judged on this host: what lets a crashed authority come back under its own instance id
//! at once instead of waiting out a lease (see `Store::register_authority`).
//!
//! A pid alone cannot say it: pids are reused, and the kernel hands a dead authority's pid
//! to the next process soon enough on a busy host. So a registration records its
//! process's *mark* next to the pid: the kernel's boot id and the process's start time in
//! clock ticks since boot (`/proc/PID/stat`, field 22). A process with that pid and that
//! start time on this boot is the registered one; a different start time is another
//! process under a reused pid. A mark from another boot proves nothing: it is either a
//! boot before a restart of the host or a different machine that happens to share the
//! host name, and only the first would be safe to take over.
//!
//! Without `/proc` (a Unix other than Linux) nothing can be told apart, and every answer
//! is "cannot say", which keeps a running registration's instance id refused.

use std::fmt;

use rustix::io::Errno;
use rustix::process::{Pid, test_kill_process};

/// How a registered process was found gone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Gone {
    /// No process has its pid any more (or only its unreaped zombie is left).
    Exited,
    /// Its pid now belongs to another process, started at another instant.
    Replaced,
}

impl Gone {
    /// `not running` or `reused by another process`, for the audit log and the log line.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Exited => "not running",
            Self::Replaced => "reused by another process",
        }
    }
}

impl fmt::Display for Gone {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// This process's mark (`BOOT-ID/START-TICKS`); `None` where `/proc` cannot tell.
#[must_use]
pub fn this_process() -> Option<String> {
    mark_of(std::process::id())
}

/// The mark of the process `pid` now running on this host; `None` when there is none or
/// `/proc` cannot tell.
#[must_use]
pub fn mark_of(pid: u32) -> Option<String> {
    let boot = boot_id()?;
    let stat = Stat::read(pid)?;
    Some(format!("{boot}/{}", stat.start_ticks))
}

/// Whether the process registered as `pid` with `mark` on this host is gone, and how;
/// `None` when it runs, or when that cannot be told (no `/proc`, a mark from another boot
/// or in an unknown form, a pid the kernel could not hold): the answer that refuses.
#[must_use]
pub fn gone(pid: u32, mark: &str) -> Option<Gone> {
    let (boot, ticks) = mark.split_once('/')?;
    let ticks: u64 = ticks.parse().ok()?;
    if boot != boot_id()? {
        return None;
    }
    let raw = Pid::from_raw(i32::try_from(pid).ok()?)?;
    match test_kill_process(raw) {
        Err(Errno::SRCH) => return Some(Gone::Exited),
        // Alive, though perhaps another user's process: the start time decides.
        Ok(()) | Err(Errno::PERM) => {}
        Err(_) => return None,
    }
    match Stat::read(pid) {
        // It exited between the two looks.
        None if !std::path::Path::new(&format!("/proc/{pid}")).exists() => Some(Gone::Exited),
        Some(stat) if stat.start_ticks != ticks => Some(Gone::Replaced),
        Some(stat) if stat.dead() => Some(Gone::Exited),
        // The recorded process, running; or its stat unreadable: cannot say.
        Some(_) | None => None,
    }
}

/// The kernel's id of this boot.
fn boot_id() -> Option<String> {
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .ok()
        .map(|id| id.trim().to_owned())
        .filter(|id| !id.is_empty() && !id.contains('/'))
}

/// The two fields of `/proc/PID/stat` a mark needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stat {
    /// Field 3: `R`, `S`, … `Z` for a zombie, `X` for a dead task.
    state: char,
    /// Field 22: when the process started, in clock ticks since boot.
    start_ticks: u64,
}

impl Stat {
    fn read(pid: u32) -> Option<Self> {
        Self::parse(&std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
    }

    /// The command name (field 2, in parentheses) may hold spaces and parentheses itself,
    /// so the fields are counted from the last `)`.
    fn parse(text: &str) -> Option<Self> {
        let (_, rest) = text.rsplit_once(')')?;
        let mut fields = rest.split_whitespace();
        let state = fields.next()?.chars().next()?;
        // Fields 4 to 21 lie between the state and the start time.
        let start_ticks = fields.nth(18)?.parse().ok()?;
        Some(Self { state, start_ticks })
    }

    /// A zombie has exited; only its parent has not collected it yet.
    fn dead(self) -> bool {
        matches!(self.state, 'Z' | 'X' | 'x')
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_start_time_is_read_past_a_command_name_with_spaces_and_parentheses() {
        let line = "6109 (my (odd) cmd) S 1 6109 6109 0 -1 4194560 100 0 0 0 5 3 0 0 20 0 4 0 \
                    987654 1000 200 18446744073709551615";
        assert_eq!(
            Stat::parse(line),
            Some(Stat {
                state: 'S',
                start_ticks: 987_654
            })
        );
        assert_eq!(Stat::parse("6109 (cut short) S 1 2"), None);
        assert!(
            Stat::parse("1 (z) Z 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 42 0 0")
                .is_some_and(Stat::dead)
        );
    }

    #[test]
    #[cfg(target_os = "linux")]
    fn this_process_runs_and_a_reaped_child_is_gone() {
        let mark = this_process().expect("this process has a mark on Linux");
        assert_eq!(gone(std::process::id(), &mark), None, "this process runs");

        let mut child = std::process::Command::new("sleep")
            .arg("600")
            .spawn()
            .expect("start sleep");
        let child_mark = mark_of(child.id()).expect("the child's mark");
        assert_ne!(child_mark, "", "{child_mark}");
        assert_eq!(gone(child.id(), &child_mark), None, "the child runs");
        // Another start time under the same pid is another process.
        let (boot, _) = child_mark.split_once('/').expect("boot/ticks");
        assert_eq!(gone(child.id(), &format!("{boot}/1")), Some(Gone::Replaced));
        child.kill().expect("kill");
        // Killed but not yet reaped: once the kernel has made it a zombie, it is gone.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while !Stat::read(child.id()).is_some_and(Stat::dead) {
            assert!(
                std::time::Instant::now() < deadline,
                "never became a zombie"
            );
            std::thread::yield_now();
        }
        assert_eq!(gone(child.id(), &child_mark), Some(Gone::Exited));
        child.wait().expect("reap");
        // Reaped, its pid is free (or, rarely, already another process's).
        assert!(gone(child.id(), &child_mark).is_some());

        // A mark of another boot, or one in no known form, cannot be judged here.
        assert_eq!(gone(child.id(), "another-boot/1"), None);
        assert_eq!(gone(child.id(), "garbage"), None);
    }
}
