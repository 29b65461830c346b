//! Who holds a SQLite store's write lock, where the operating system can tell.
//!
//! In WAL mode a writer holds a POSIX write lock on byte 120 of the `-shm` file (the WAL
//! index's write lock) for the whole of its transaction, and Linux lists every POSIX lock
//! in `/proc/locks` with the pid of the process holding it and the device and inode of the
//! file. So a write that stalls names its holder by pid and command line, as PostgreSQL's
//! stalls name the holding session. Where `/proc/locks` is missing (another OS), or the
//! lock is an open-file-description lock (pid -1), the holder stays unknown.

use std::path::Path;

/// The byte of the `-shm` file whose exclusive lock is SQLite's write lock in WAL mode.
const WAL_WRITE_LOCK_BYTE: u64 = 120;

/// The longest command line quoted for a holder.
const MAX_COMMAND: usize = 120;

/// The holder of the write lock of the store at `db`: `pid N (command line)`, or `None`
/// when the OS does not say.
pub(super) fn write_lock_holder(db: &Path) -> Option<String> {
    let shm = shm_path(db);
    let (device, inode) = file_id(&shm)?;
    let locks = std::fs::read_to_string("/proc/locks").ok()?;
    let pid = holder_pid(&locks, &device, inode)?;
    let command = std::fs::read(format!("/proc/{pid}/cmdline"))
        .ok()
        .map(|raw| {
            let text: String = String::from_utf8_lossy(&raw)
                .split('\0')
                .filter(|a| !a.is_empty())
                .collect::<Vec<_>>()
                .join(" ");
            text.chars()
                .map(|c| if c.is_control() { ' ' } else { c })
                .take(MAX_COMMAND)
                .collect::<String>()
        })
        .filter(|c| !c.is_empty());
    Some(match command {
        Some(command) => format!("pid {pid} ({command})"),
        None => format!("pid {pid}"),
    })
}

fn shm_path(db: &Path) -> std::path::PathBuf {
    let mut name = db.as_os_str().to_owned();
    name.push("-shm");
    name.into()
}

/// The file's device as `/proc/locks` writes it (`MAJ:MIN`, hex) and its inode.
#[cfg(unix)]
fn file_id(path: &Path) -> Option<(String, u64)> {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::metadata(path).ok()?;
    let dev = meta.dev();
    // Linux's encoding of a device number (glibc's `gnu_dev_major` / `gnu_dev_minor`).
    let major = ((dev >> 8) & 0xfff) | ((dev >> 32) & !0xfff);
    let minor = (dev & 0xff) | ((dev >> 12) & !0xff);
    Some((format!("{major:02x}:{minor:02x}"), meta.ino()))
}

#[cfg(not(unix))]
fn file_id(_path: &Path) -> Option<(String, u64)> {
    None
}

/// The pid holding a POSIX write lock over [`WAL_WRITE_LOCK_BYTE`] of the file `device`,
/// `inode` in the text of `/proc/locks`; waiters (`->` lines) are not holders.
fn holder_pid(locks: &str, device: &str, inode: u64) -> Option<u32> {
    let file = format!("{device}:{inode}");
    locks.lines().find_map(|line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let [_, kind, _, mode, pid, id, start, end] = fields.as_slice() else {
            return None;
        };
        let end = if *end == "EOF" {
            u64::MAX
        } else {
            end.parse().ok()?
        };
        let covers =
            start.parse::<u64>().ok()? <= WAL_WRITE_LOCK_BYTE && WAL_WRITE_LOCK_BYTE <= end;
        (*kind == "POSIX" && *mode == "WRITE" && *id == file && covers)
            .then(|| pid.parse().ok())
            .flatten()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const LOCKS: &str = "\
1: POSIX  ADVISORY  READ 4242 08:01:77 128 128
2: POSIX  ADVISORY  WRITE 5151 08:01:99 120 120
2: -> POSIX  ADVISORY  WRITE 6161 08:01:77 120 120
3: POSIX  ADVISORY  WRITE 7171 08:01:77 120 120
4: FLOCK  ADVISORY  WRITE 8181 08:01:77 0 EOF
";

    #[test]
    fn the_holder_is_the_write_lock_over_byte_120_of_that_file_not_a_waiter() {
        assert_eq!(holder_pid(LOCKS, "08:01", 77), Some(7171));
        assert_eq!(holder_pid(LOCKS, "08:01", 99), Some(5151));
        assert_eq!(holder_pid(LOCKS, "08:02", 77), None, "another device");
        assert_eq!(holder_pid(LOCKS, "08:01", 55), None);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_connection_holding_the_write_lock_is_named_by_its_pid() {
        let dir = tempfile::tempdir().expect("temp dir");
        let db = dir.path().join("store.db");
        let conn = rusqlite::Connection::open(&db).expect("open");
        conn.execute_batch("PRAGMA journal_mode=WAL; CREATE TABLE t (x)")
            .expect("wal");
        assert_eq!(write_lock_holder(&db), None, "nobody writes");
        conn.execute_batch("BEGIN IMMEDIATE").expect("begin");
        let holder = write_lock_holder(&db).expect("named");
        assert!(
            holder.starts_with(&format!("pid {} (", std::process::id())),
            "{holder}"
        );
        conn.execute_batch("COMMIT").expect("commit");
    }
}
