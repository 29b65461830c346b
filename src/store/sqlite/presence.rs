//! What lies at a store path, looked at before SQLite is let near it: SQLite opens a
//! directory's neighbour, a device or a FIFO as happily as a file and then creates
//! `PATH-journal` / `PATH-wal` beside it, so anything but a regular file (or nothing at
//! all, in a directory that exists) is refused here, by name, with nothing touched.

use std::fs::{FileType, Metadata};
use std::path::Path;

use crate::error::{Error, Result};

/// A store path's state before it is opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Presence {
    /// Nothing there.
    Missing,
    /// A regular file of no bytes: a store nobody has created yet.
    Empty,
    /// A regular file with content: to be recognised as a store (or refused).
    Data,
}

/// Looks at `path` (following symbolic links).
///
/// # Errors
/// `STORE_REFUSED` for a directory, a device, a FIFO, a socket, a path in a directory
/// that does not exist, or a path this process may not look at; `STORE_UNAVAILABLE` when
/// looking fails otherwise.
pub(super) fn presence(path: &Path, label: &str) -> Result<Presence> {
    match std::fs::metadata(path) {
        Ok(meta) if meta.is_file() => Ok(if meta.len() == 0 {
            Presence::Empty
        } else {
            Presence::Data
        }),
        Ok(meta) => Err(Error::Refused(format!(
            "{label}: {}, not a store file (nothing was created)",
            what(&meta)
        ))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => match missing_directory(path) {
            Some(dir) => Err(Error::Refused(format!(
                "{label}: the directory {} does not exist (nothing was created)",
                dir.display()
            ))),
            None => Ok(Presence::Missing),
        },
        Err(e) => Err(io_error(label, &e)),
    }
}

/// The directory of a missing store path, when it is missing too. No store is there and
/// none can be made there (SQLite would say only "unable to open database file"), so the
/// refusal names the directory instead of pointing at `leasehold init`, which would fail.
fn missing_directory(path: &Path) -> Option<&Path> {
    let dir = directory_of(path)?;
    matches!(std::fs::metadata(dir), Err(e) if e.kind() == std::io::ErrorKind::NotFound)
        .then_some(dir)
}

/// The directory a store path names, `None` for a bare file name (the current directory).
pub(super) fn directory_of(path: &Path) -> Option<&Path> {
    path.parent().filter(|dir| !dir.as_os_str().is_empty())
}

/// A failure to look at or read the store path: no permission, or a path through a
/// file, will not change by retrying (`STORE_REFUSED`); anything else may
/// (`STORE_UNAVAILABLE`).
pub(super) fn io_error(label: &str, e: &std::io::Error) -> Error {
    use std::io::ErrorKind;
    match e.kind() {
        ErrorKind::PermissionDenied | ErrorKind::NotADirectory => {
            Error::Refused(format!("{label}: {e}"))
        }
        _ => Error::Unavailable(format!("{label}: {e}")),
    }
}

/// The refusal of a missing or empty path by a command that never creates a store.
pub(super) fn not_created(label: &str, presence: Presence) -> Error {
    let why = match presence {
        Presence::Missing => "no store here",
        Presence::Empty | Presence::Data => "an empty file, not a leasehold store yet",
    };
    Error::Refused(format!(
        "{label}: {why} (nothing was created; `leasehold init {label}` creates a store)"
    ))
}

/// What a non-regular file is, for the refusal.
fn what(meta: &Metadata) -> &'static str {
    let kind = meta.file_type();
    if kind.is_dir() {
        "a directory"
    } else {
        special(kind)
    }
}

#[cfg(unix)]
fn special(kind: FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    if kind.is_char_device() {
        "a character device"
    } else if kind.is_block_device() {
        "a block device"
    } else if kind.is_fifo() {
        "a FIFO"
    } else if kind.is_socket() {
        "a socket"
    } else {
        "not a regular file"
    }
}

#[cfg(not(unix))]
fn special(_: FileType) -> &'static str {
    "not a regular file"
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn regular_files_are_told_apart_from_everything_else() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("s.db");
        assert_eq!(presence(&file, "s").unwrap(), Presence::Missing);
        std::fs::write(&file, b"").unwrap();
        assert_eq!(presence(&file, "s").unwrap(), Presence::Empty);
        std::fs::write(&file, b"x").unwrap();
        assert_eq!(presence(&file, "s").unwrap(), Presence::Data);
        let e = presence(dir.path(), "d").unwrap_err().to_string();
        assert!(e.contains("d: a directory, not a store file"), "{e}");
        let nowhere = dir.path().join("nodir");
        let e = presence(&nowhere.join("s.db"), "n")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains(&format!(
                "n: the directory {} does not exist",
                nowhere.display()
            )),
            "{e}"
        );
        let here = Path::new("no-store-of-this-name.db");
        assert_eq!(
            presence(here, "h").unwrap(),
            Presence::Missing,
            "in the working directory"
        );
        #[cfg(unix)]
        {
            let e = presence(Path::new("/dev/null"), "/dev/null")
                .unwrap_err()
                .to_string();
            assert!(e.contains("/dev/null: a character device"), "{e}");
        }
    }
}
