//! Write stalls posted beside the database file. While a writer sits inside its
//! transaction, no other process can write a row — the stall itself included — so a
//! process whose write waits past [`crate::store::stall::STALL_AFTER`] says so in a small
//! file of its own next to the database (`PATH-stall-PID-N`, one per open handle), and
//! removes it once the write got through. Readers list those files; one left by a process
//! that died (no `/proc/PID` on this host) is not a stall any more and is skipped. SQLite
//! stores are used from one host only, so the pid is enough to tell.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::clock::Millis;
use crate::error::{Error, Result};
use crate::foundation::actor::host_name;
use crate::store::stall::{ProcessStall, StallBoard};

/// Handles opened by this process so far: each posts in a file of its own.
static OPENED: AtomicU64 = AtomicU64::new(0);

/// The name every stall file of the store at `db` starts with.
fn prefix(db: &Path) -> String {
    let name = db
        .file_name()
        .map_or_else(|| "store".into(), |n| n.to_string_lossy().into_owned());
    format!("{name}-stall-")
}

/// One open handle's stall file.
#[derive(Debug)]
pub(super) struct StallFile {
    path: PathBuf,
    host: String,
    pid: u32,
}

impl StallFile {
    /// The file a handle on the store at `db` posts its stalls in.
    pub(super) fn beside(db: &Path) -> Self {
        let pid = std::process::id();
        let n = OPENED.fetch_add(1, Ordering::Relaxed);
        Self {
            path: db.with_file_name(format!("{}{pid}-{n}", prefix(db))),
            host: host_name(),
            pid,
        }
    }
}

impl StallBoard for StallFile {
    /// Written whole to a temporary name and renamed into place, so a reader sees the old
    /// post or the new one. A post that cannot be written costs only its visibility: the
    /// stall is logged anyway, and the write it describes must not fail for it.
    fn post(&self, since: Millis, holder: Option<&str>) {
        let stall = ProcessStall {
            host: self.host.clone(),
            pid: self.pid,
            since,
            holder: holder.map(str::to_owned),
        };
        let Ok(text) = serde_json::to_vec(&stall) else {
            return;
        };
        let mut temp = self.path.clone().into_os_string();
        temp.push(".tmp");
        let temp = PathBuf::from(temp);
        if std::fs::write(&temp, text).is_ok() {
            let _ = std::fs::rename(&temp, &self.path);
        }
    }

    fn clear(&self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

impl Drop for StallFile {
    /// A handle closed while its write waited leaves no post behind.
    fn drop(&mut self) {
        self.clear();
    }
}

/// The stalls posted beside the store at `db` by processes still running, longest first.
///
/// # Errors
/// `STORE_UNAVAILABLE` when the database's directory cannot be listed.
pub(super) fn posted(db: &Path, label: &str) -> Result<Vec<ProcessStall>> {
    let dir = match db.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_owned(),
        _ => PathBuf::from("."),
    };
    let prefix = prefix(db);
    let entries = std::fs::read_dir(&dir)
        .map_err(|e| Error::Unavailable(format!("{label}: cannot list its directory: {e}")))?;
    let here = host_name();
    let mut stalls: Vec<ProcessStall> = entries
        .filter_map(std::result::Result::ok)
        .filter(|e| {
            let name = e.file_name();
            let name = name.to_string_lossy();
            name.starts_with(&prefix) && !name.ends_with(".tmp")
        })
        // A file removed between the listing and the read, or half-written by an older
        // build, is no stall to report.
        .filter_map(|e| std::fs::read(e.path()).ok())
        .filter_map(|bytes| serde_json::from_slice::<ProcessStall>(&bytes).ok())
        .filter(|s| s.host != here || Path::new(&format!("/proc/{}", s.pid)).exists())
        .collect();
    stalls.sort_by_key(|s| (s.since, s.pid));
    Ok(stalls)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_post_is_listed_until_cleared_and_a_dead_processes_post_is_not() {
        let dir = tempfile::tempdir().expect("temp dir");
        let db = dir.path().join("s.db");
        let file = StallFile::beside(&db);
        assert!(posted(&db, "s").expect("lists").is_empty());
        file.post(1_000, Some("pid 9"));
        let listed = posted(&db, "s").expect("lists");
        assert_eq!(listed.len(), 1);
        assert_eq!(
            (listed[0].pid, listed[0].since, listed[0].holder.as_deref()),
            (std::process::id(), 1_000, Some("pid 9"))
        );
        file.clear();
        assert!(posted(&db, "s").expect("lists").is_empty());

        // A post left by a process that is gone (pid above the kernel's maximum).
        let dead = ProcessStall {
            host: host_name(),
            pid: u32::MAX,
            since: 5,
            holder: None,
        };
        std::fs::write(
            dir.path().join(format!("{}1-0", prefix(&db))),
            serde_json::to_vec(&dead).expect("json"),
        )
        .expect("writes");
        assert!(posted(&db, "s").expect("lists").is_empty());
        // Another store's posts beside it are not this store's.
        StallFile::beside(&dir.path().join("other.db")).post(7, None);
        assert!(posted(&db, "s").expect("lists").is_empty());
    }
}
