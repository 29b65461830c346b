//! Whether the database and WAL files under the store's path are still the ones this
//! connection has open.
//!
//! SQLite keeps writing through the file descriptors it opened. If the database file is
//! removed or replaced (a restore moved into place) or the WAL file is deleted, its commits
//! go to files nobody will ever read again — acknowledged, and lost at the next restart.
//! So every write transaction compares the identity (device and inode) of the path and of
//! `PATH-wal` with the ones recorded when the store was opened, just before it commits, and
//! refuses to commit into files that are no longer the store's.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::error::{Error, Result};

/// A file's identity on its file system.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct FileId {
    dev: u64,
    ino: u64,
}

/// The identity of the files this connection opened.
#[derive(Debug)]
pub(super) struct OpenedFiles {
    db_path: PathBuf,
    wal_path: PathBuf,
    db: Option<FileId>,
    wal: Option<FileId>,
}

impl OpenedFiles {
    /// Records the files under `path` as they are now: call it once the connection has
    /// the database and its WAL open (after the first write transaction).
    pub(super) fn capture(path: &Path) -> Self {
        let mut wal_path = path.as_os_str().to_owned();
        wal_path.push("-wal");
        let wal_path = PathBuf::from(wal_path);
        Self {
            db: id_of(path),
            wal: id_of(&wal_path),
            db_path: path.to_owned(),
            wal_path,
        }
    }

    /// Checks that the path still names the files recorded by [`Self::capture`].
    ///
    /// # Errors
    /// `STORE_CORRUPT` naming the file that was removed or replaced.
    pub(super) fn verify(&self, label: &str) -> Result<()> {
        let gone = |what: &str, now: Option<FileId>| {
            let how = if now.is_some() { "replaced" } else { "removed" };
            Error::Corrupt(format!(
                "{label}: the {what} was {how} under this process; nothing more is written through it (restart against the store as it now is)"
            ))
        };
        if let Some(db) = self.db {
            let now = id_of(&self.db_path);
            if now != Some(db) {
                return Err(gone("database file", now));
            }
        }
        if let Some(wal) = self.wal {
            let now = id_of(&self.wal_path);
            if now != Some(wal) {
                return Err(gone("WAL file", now));
            }
        }
        Ok(())
    }
}

/// The database files this process has open through a handle, by identity, and how many
/// handles hold each.
///
/// POSIX record locks belong to the process, and closing *any* descriptor of a file drops
/// every lock the process holds on it, SQLite's included. A second handle opened in a
/// process that already holds the store (an authority's whole-file check beside its own
/// handle, an application opening two handles) must therefore not open and close the file
/// itself to read its header: the first handle would lose its locks, and another process
/// closing the store would take itself for the last one and delete the WAL under it.
static HELD: Mutex<BTreeMap<FileId, usize>> = Mutex::new(BTreeMap::new());

/// One handle's hold on its database file, counted in [`HELD`] until it is dropped.
#[derive(Debug)]
pub(super) struct HeldFile(Option<FileId>);

impl HeldFile {
    /// Whether a handle of this process holds the file at `path` now.
    pub(super) fn held_here(path: &Path) -> bool {
        id_of(path).is_some_and(|id| held().get(&id).is_some_and(|n| *n > 0))
    }

    /// Counts a handle on the file at `path` (open now).
    pub(super) fn hold(path: &Path) -> Self {
        let id = id_of(path);
        if let Some(id) = id {
            *held().entry(id).or_default() += 1;
        }
        Self(id)
    }
}

impl Drop for HeldFile {
    fn drop(&mut self) {
        if let Some(id) = self.0 {
            let mut held = held();
            if let Some(n) = held.get_mut(&id) {
                *n = n.saturating_sub(1);
                if *n == 0 {
                    held.remove(&id);
                }
            }
        }
    }
}

fn held() -> std::sync::MutexGuard<'static, BTreeMap<FileId, usize>> {
    HELD.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[cfg(unix)]
fn id_of(path: &Path) -> Option<FileId> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path).ok().map(|m| FileId {
        dev: m.dev(),
        ino: m.ino(),
    })
}

/// Without inode numbers there is nothing to compare: the check passes.
#[cfg(not(unix))]
fn id_of(_path: &Path) -> Option<FileId> {
    None
}
