//! The SQLite provider: the embedded default and the cross-process reference. One database
//! file shared by independent OS processes on one host (WAL; never a network filesystem).
//!
//! - One [`Connection`] per backend behind a mutex; [`super::Store`] clones share it.
//! - Every write is `BEGIN IMMEDIATE`, so the reads inside a store operation and the writes
//!   that follow are serialised against every other process; reads are one deferred
//!   transaction (one consistent snapshot).
//! - Writers on one host queue for the write lock in the kernel (`queue.rs`: a lock file
//!   of the store's in the temporary directory, the next writer woken at the release);
//!   renewals and heartbeats
//!   skip the queue. Past the queue,
//!   `SQLITE_BUSY` / `SQLITE_LOCKED` wait in short naps (`busy.rs`: a waiter sees a release
//!   within about a millisecond, where SQLite's own handler sleeps up to 100 ms), up to
//!   five seconds a statement, then the whole transaction is
//!   retried a bounded number of times with jittered backoff; after that the caller sees
//!   `STORE_CONTENTION`, never a backend message. A write kept waiting past
//!   [`super::stall::STALL_AFTER`] is logged as a stall (`store/stall.rs`) and posted
//!   beside the database file while it lasts (`stalls.rs`), where readers list it.
//! - `synchronous=FULL`: a committed claim survives power loss.
//! - The schema (`schema.sql`) is idempotent, so N processes may initialise one file at
//!   once; its version lives in the `meta` table with the revision and the journal
//!   high-water. A file that is not a leasehold store (not SQLite, damaged, another
//!   application's database, a schema version below 1 or newer than this build, a current
//!   store missing a table) is refused with one line and left untouched: nothing is
//!   created or converted before the file has been recognised, and a writable open of an
//!   existing store reads every table's and index's root page first (`damage.rs`: a
//!   constant cost; the whole-file check is [`Backend::verify`]).
//! - Every write transaction checks, just before committing, that the path still names
//!   the database and WAL files this connection opened (`files.rs`).
//!
//! Files: `bind.rs` binds and reads the shared SQL layer's values, `damage.rs` the checks
//! for a damaged file, `files.rs` the identity
//! of the files opened, `queue.rs` the host's queue of writers, `stalls.rs` the posted
//! write stalls, `tx.rs` is this
//! provider's side of that layer (`store/sql/`), `list_work.rs` the work list's index
//! choice, `schema.sql`, and
//! `upgrade_1.sql` to `upgrade_11.sql`, which bring a store of schema 1 to 11 to 12 in place.

mod bind;
mod busy;
mod damage;
#[cfg(test)]
mod differential_tests;
mod files;
mod list_work;
mod lock_holder;
#[cfg(test)]
mod plan_tests;
mod presence;
mod queue;
mod stalls;
#[cfg(test)]
mod tests;
mod tx;
#[cfg(test)]
mod upgrade_tests;

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use rusqlite::{Connection, ErrorCode, OpenFlags, TransactionBehavior};

use super::Store;
use super::backend::{Backend, StoreKind, Tx};
use super::capability::{Capability, WORK_MODEL};
use super::sql::{Step, Transient, refuse_read_only, retry};
use super::stall::{ProcessStall, StallWatch};
use super::url::OpenMode;
use crate::clock::SystemClock;
use crate::error::{Error, Result};
use crate::ids::SeededIds;
use files::{HeldFile, OpenedFiles};
use presence::Presence;
use queue::{TURN_WAIT, WriteQueue};
use stalls::StallFile;
use tx::SqliteTx;

/// The schema this build reads and writes (`meta.schema_version`).
pub const SCHEMA_VERSION: i64 = 12;

/// The schema, run idempotently at every read-write open.
const SCHEMA: &str = include_str!("schema.sql");

/// The upgrades, in order: entry `n` brings a version `n + 1` store to `n + 2`. An older
/// store runs every one from its version on, before [`SCHEMA`].
const UPGRADES: [&str; 11] = [
    include_str!("upgrade_1.sql"),
    include_str!("upgrade_2.sql"),
    include_str!("upgrade_3.sql"),
    include_str!("upgrade_4.sql"),
    include_str!("upgrade_5.sql"),
    include_str!("upgrade_6.sql"),
    include_str!("upgrade_7.sql"),
    include_str!("upgrade_8.sql"),
    include_str!("upgrade_9.sql"),
    include_str!("upgrade_10.sql"),
    include_str!("upgrade_11.sql"),
];

/// Whole-transaction attempts before `STORE_CONTENTION`.
pub const MAX_ATTEMPTS: u32 = 50;

/// A leasehold store in one SQLite file.
pub struct SqliteBackend {
    conn: Mutex<Connection>,
    path: PathBuf,
    label: String,
    read_only: bool,
    /// Whether this open created the schema in an empty file (`leasehold init`).
    created: bool,
    /// The files a writable handle opened; checked before every commit.
    files: Option<OpenedFiles>,
    /// Where a writable handle posts a write stall while it lasts.
    stall_file: Option<StallFile>,
    /// The host's queue of this file's writers (`queue.rs`).
    queue: Option<WriteQueue>,
    /// This handle's count in the process's held files (`files.rs`); declared last, so it
    /// is released after the connection has closed.
    _held: HeldFile,
}

/// How long a closing writer waits for readers to let it empty the WAL.
const CLOSE_CHECKPOINT_WAIT: Duration = Duration::from_millis(200);

/// A writer that closes empties the WAL into the database file and truncates it, when no
/// reader is in the way. SQLite does so itself only when the last connection closes, and
/// the last one is often a read-only dashboard, which cannot: the WAL then stays behind
/// at whatever size it grew to, and the next process to open the store reads all of it
/// to rebuild its index before its first query (a quarter of a second for 250 MB). A
/// writer whose files are no longer the ones it opened writes nothing more, this included.
impl Drop for SqliteBackend {
    fn drop(&mut self) {
        let Some(files) = &self.files else {
            return;
        };
        if files.verify(&self.label).is_err() {
            return;
        }
        let conn = self.lock();
        // Best effort: busy readers or a failure leave the WAL as it is, which is safe.
        if conn.busy_timeout(CLOSE_CHECKPOINT_WAIT).is_ok() {
            let _ = conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE)");
        }
    }
}

/// Where the rewind witness beside the store at `path` lives: `<path>.leasehold-witness`.
fn witness_path(path: &Path) -> PathBuf {
    let mut beside = path.as_os_str().to_owned();
    beside.push(".leasehold-witness");
    beside.into()
}

/// Opens the store at `path`; see [`SqliteBackend::open`].
///
/// # Errors
/// `STORE_UNAVAILABLE`, `STORE_REFUSED`, `STORE_CORRUPT`, `STORE_READ_ONLY`.
pub fn open(path: impl AsRef<Path>, mode: OpenMode) -> Result<SqliteBackend> {
    SqliteBackend::open(path, mode)
}

/// A read-write [`Store`] over the SQLite file at `path`, with the system clock and random
/// tokens.
///
/// # Errors
/// As [`SqliteBackend::open`].
pub fn sqlite_store(path: impl AsRef<Path>) -> Result<Store> {
    let backend = SqliteBackend::open(path, OpenMode::ReadWrite)?;
    Ok(Store::new(
        Arc::new(backend),
        Arc::new(SystemClock),
        Arc::new(SeededIds::random()),
    ))
}

/// What an existing database holds, read before anything is changed.
enum Found {
    /// No tables at all: a new (or being-created) store.
    Empty,
    /// A leasehold store of this schema version.
    Leasehold(i64),
}

impl SqliteBackend {
    /// Opens (in `ReadWrite` mode, creating if missing) the store at `path`.
    ///
    /// Before anything is written the file is recognised: a non-SQLite file, a damaged one,
    /// another application's database or a newer schema is refused and left byte-for-byte
    /// as it was. `ReadOnly` opens with `SQLITE_OPEN_READ_ONLY`, creates nothing and refuses
    /// a missing file; a file without write permission opens read-only in either mode and
    /// its writes fail with `STORE_READ_ONLY`.
    ///
    /// # Errors
    /// `STORE_REFUSED` (missing, or empty, where nothing is created; in a missing
    /// directory; cannot open; no permission; not a leasehold store; a newer schema, or an
    /// older one read-only), `STORE_CORRUPT` (damaged), `STORE_UNAVAILABLE` (an I/O
    /// failure that may pass), `STORE_CONTENTION` (initialisation stayed busy).
    pub fn open(path: impl AsRef<Path>, mode: OpenMode) -> Result<Self> {
        let path = path.as_ref();
        let label = path.display().to_string();
        let presence = presence::presence(path, &label)?;
        match presence {
            Presence::Missing | Presence::Empty if !mode.creates() => {
                return Err(presence::not_created(&label, presence));
            }
            // A file a handle of this process holds is a store already, and reading its
            // header through a descriptor of our own would drop that handle's locks.
            Presence::Data if HeldFile::held_here(path) => {}
            Presence::Data => check_header(path, &label)?,
            Presence::Missing | Presence::Empty => {}
        }
        let flags = match mode {
            OpenMode::ReadOnly => {
                OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX
            }
            OpenMode::Existing => {
                OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX
            }
            OpenMode::ReadWrite => {
                OpenFlags::SQLITE_OPEN_READ_WRITE
                    | OpenFlags::SQLITE_OPEN_CREATE
                    | OpenFlags::SQLITE_OPEN_NO_MUTEX
            }
        };
        let mut conn =
            Connection::open_with_flags(path, flags).map_err(|e| map_error(&label, &e))?;
        conn.busy_handler(Some(busy::nap_and_retry))
            .map_err(|e| map_error(&label, &e))?;
        conn.set_prepared_statement_cache_capacity(128);
        let read_only = mode == OpenMode::ReadOnly
            || conn
                .is_readonly(rusqlite::MAIN_DB)
                .map_err(|e| map_error(&label, &e))?;

        // Recognise the file before changing anything.
        let found = retry(MAX_ATTEMPTS, || inspect(&conn, &label))?;
        match found {
            Found::Leasehold(v) if v > SCHEMA_VERSION => return Err(newer(&label, v)),
            Found::Leasehold(v) if v < 1 => return Err(super::sql::unknown_version(&label, v)),
            Found::Leasehold(v) if v < SCHEMA_VERSION && read_only => {
                return Err(Error::Refused(format!(
                    "{label}: store schema version {v} predates this build ({SCHEMA_VERSION}); any command that writes to it upgrades it"
                )));
            }
            Found::Empty if read_only || !mode.creates() => {
                return Err(Error::Refused(format!(
                    "{label}: a SQLite database without tables, not a leasehold store yet (nothing was created; `leasehold init {label}` creates a store)"
                )));
            }
            _ => {}
        }
        if !read_only && matches!(found, Found::Leasehold(_)) {
            // A writer to an existing store reads the root of every table and index
            // before writing anything: damage found now refuses the command with nothing
            // written. Deeper damage is SQLite's to find on the pages a command reads.
            retry(MAX_ATTEMPTS, || damage::roots(&conn, &label))?;
        }
        let mut created = false;
        if !read_only {
            conn.pragma_update(None, "synchronous", "FULL")
                .map_err(|e| map_error(&label, &e))?;
            retry(MAX_ATTEMPTS, || {
                let mode: String = conn
                    .pragma_update_and_check(None, "journal_mode", "WAL", |r| r.get(0))
                    .map_err(|e| step(&label, &e))?;
                if mode.eq_ignore_ascii_case("wal") {
                    Ok(())
                } else {
                    Err(Step::Fail(Error::Refused(format!(
                        "{label}: cannot use WAL (journal mode stayed {mode})"
                    ))))
                }
            })?;
            created = retry(MAX_ATTEMPTS, || init(&mut conn, &label))?;
        }
        if created {
            // A rewind witness beside a file that held no store was left by a store removed
            // from this path: it says nothing of this one.
            let _ = std::fs::remove_file(witness_path(path));
        }
        Ok(Self {
            conn: Mutex::new(conn),
            path: path.to_owned(),
            label,
            read_only,
            created,
            files: (!read_only).then(|| OpenedFiles::capture(path)),
            stall_file: (!read_only).then(|| StallFile::beside(path)),
            queue: (!read_only).then(|| WriteQueue::of(path)),
            _held: HeldFile::hold(path),
        })
    }

    /// The database file.
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether this open created the store (the file held no schema before it).
    #[must_use]
    pub fn created(&self) -> bool {
        self.created
    }

    /// Whether writes are refused (opened read-only, or the file is not writable).
    #[must_use]
    pub fn is_read_only(&self) -> bool {
        self.read_only
    }

    fn lock(&self) -> MutexGuard<'_, Connection> {
        // A panic inside a transaction dropped (rolled back) the rusqlite transaction while
        // unwinding, so the connection itself is consistent.
        self.conn.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Runs `f` in one transaction: a write (`Immediate`) in this host's queue of writers
    /// unless `urgent`, a read (`Deferred`) as it comes.
    fn run(
        &self,
        behavior: TransactionBehavior,
        urgent: bool,
        f: &mut dyn FnMut(&mut dyn Tx) -> Result<()>,
    ) -> Result<()> {
        let writable = matches!(behavior, TransactionBehavior::Immediate);
        let mut conn = self.lock();
        // Held until the transaction has committed or rolled back, as the last local dropped.
        let _turn = (self.queue.as_ref())
            .filter(|_| writable && !urgent)
            .and_then(|queue| queue.turn(TURN_WAIT));
        let label = self.label.as_str();
        let mut watch = StallWatch::new(label);
        if let Some(board) = self.stall_file.as_ref().filter(|_| writable) {
            watch = watch.posting(board);
        }
        let mut attempts = 0;
        retry(MAX_ATTEMPTS, || {
            attempts += 1;
            if attempts > 1 && writable {
                watch.waiting(|| lock_holder::write_lock_holder(&self.path));
            }
            let tx = conn
                .transaction_with_behavior(behavior)
                .map_err(|e| step(label, &e))?;
            still_ours(&tx, label)?;
            let mut stx = SqliteTx::new(&tx, label, writable);
            let result = f(&mut stx)
                .and_then(|()| stx.flush())
                .and_then(|()| match &self.files {
                    Some(files) if writable => files.verify(label),
                    _ => Ok(()),
                });
            let busy = stx.hit_busy();
            match result {
                // Dropping `tx` rolls back.
                Err(_) if busy => Err(Step::Retry(Transient::Contention)),
                Err(e) => Err(Step::Fail(e)),
                Ok(()) if !writable => Ok(()),
                Ok(()) => tx.commit().map_err(|e| {
                    if is_busy(&e) {
                        // Not committed: SQLite reports busy before anything is durable.
                        Step::Retry(Transient::Contention)
                    } else {
                        Step::Fail(Error::OutcomeUnknown(format!(
                            "{label}: the commit failed: {}",
                            one_line(&e)
                        )))
                    }
                }),
            }
        })
    }
}

impl Backend for SqliteBackend {
    fn kind(&self) -> StoreKind {
        StoreKind::Sqlite
    }

    fn describe(&self) -> String {
        self.label.clone()
    }

    /// The file's canonical path: two spellings of one file are one store.
    fn identity(&self) -> String {
        self.path
            .canonicalize()
            .unwrap_or_else(|_| self.path.clone())
            .display()
            .to_string()
    }

    fn witness_beside(&self) -> Option<PathBuf> {
        Some(witness_path(&self.path))
    }

    fn physical_durability(&self) -> bool {
        true
    }

    /// One file on one host: processes there share it; another host must not (SQLite's
    /// locks are not safe over a network file system).
    fn capabilities(&self) -> Vec<Capability> {
        let mut all = WORK_MODEL.to_vec();
        all.extend([Capability::Durable, Capability::SharedAcrossProcesses]);
        all
    }

    /// In this host's queue of the file's writers (`queue.rs`).
    fn write(&self, f: &mut dyn FnMut(&mut dyn Tx) -> Result<()>) -> Result<()> {
        refuse_read_only(self.read_only, &self.label)?;
        self.run(TransactionBehavior::Immediate, false, f)
    }

    /// Straight to SQLite's lock, ahead of the queued writers.
    fn write_urgent(&self, f: &mut dyn FnMut(&mut dyn Tx) -> Result<()>) -> Result<()> {
        refuse_read_only(self.read_only, &self.label)?;
        self.run(TransactionBehavior::Immediate, true, f)
    }

    /// Posted beside the database file by the waiting processes (`stalls.rs`).
    fn write_stalls(&self) -> Result<Vec<ProcessStall>> {
        stalls::posted(&self.path, &self.label)
    }

    fn read(&self, f: &mut dyn FnMut(&mut dyn Tx) -> Result<()>) -> Result<()> {
        self.run(TransactionBehavior::Deferred, false, f)
    }

    /// `quick_check` of every page, on this handle's connection (its other callers wait).
    fn verify(&self) -> Result<String> {
        let conn = self.lock();
        retry(MAX_ATTEMPTS, || damage::whole_file(&conn, &self.label))?;
        Ok("every page of the SQLite file checked (quick_check)".into())
    }

    fn change_token(&self) -> Result<u64> {
        let conn = self.lock();
        let label = self.label.as_str();
        // `data_version` moves when another connection commits; the revision moves with
        // every commit (ours included). Both only grow, so their sum changes on any commit.
        retry(MAX_ATTEMPTS, || {
            let token = conn
                .prepare_cached("PRAGMA data_version")
                .and_then(|mut s| s.query_row([], |r| r.get::<_, i64>(0)))
                .and_then(|dv| {
                    let rev = conn
                        .prepare_cached("SELECT value FROM meta WHERE key = 'revision'")?
                        .query_row([], |r| r.get::<_, i64>(0))?;
                    Ok(dv.wrapping_add(rev))
                })
                .map_err(|e| step(label, &e))?;
            Ok(u64::from_ne_bytes(token.to_ne_bytes()))
        })
    }
}

/// Whether an error is physical contention (retried, never shown).
fn is_busy(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked)
    )
}

fn step(label: &str, e: &rusqlite::Error) -> Step {
    if is_busy(e) {
        Step::Retry(Transient::Contention)
    } else {
        Step::Fail(map_error(label, e))
    }
}

/// An error's text on one line.
fn one_line(e: &rusqlite::Error) -> String {
    e.to_string()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

/// Why a store in a directory this user cannot write to is refused, even to a reader: a
/// WAL database is read through its shared-memory file, which is missing whenever no
/// process has the store open (the last one to close removes it), and SQLite cannot make
/// one there. Reading the file as immutable instead would be wrong as soon as a writer
/// started, so the message says how to read it.
fn read_only_directory(label: &str) -> String {
    let dir = presence::directory_of(Path::new(label)).map_or_else(
        || "the current directory".to_owned(),
        |d| format!("the directory {}", d.display()),
    );
    format!(
        "{label}: {dir} is read-only to this user, and SQLite must create the store's -shm file there even to read it (no process has the store open now); read it as a user who can write there, or read a copy"
    )
}

/// The one translation from SQLite errors to store errors.
pub(super) fn map_error(label: &str, e: &rusqlite::Error) -> Error {
    match e.sqlite_error_code() {
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => {
            Error::Contention { attempts: 1 }
        }
        Some(ErrorCode::NotADatabase) => Error::Corrupt(format!("{label}: not a SQLite database")),
        Some(ErrorCode::DatabaseCorrupt) => Error::Corrupt(format!(
            "{label}: the database file is damaged ({})",
            one_line(e)
        )),
        Some(ErrorCode::CannotOpen) => Error::Refused(format!(
            "{label}: cannot open the store file ({})",
            one_line(e)
        )),
        // A WAL database whose `-shm` file is missing and cannot be created there.
        Some(ErrorCode::ReadOnly)
            if e.sqlite_error().map(|f| f.extended_code)
                == Some(rusqlite::ffi::SQLITE_READONLY_DIRECTORY) =>
        {
            Error::ReadOnly(read_only_directory(label))
        }
        Some(ErrorCode::ReadOnly) => {
            Error::ReadOnly(format!("{label}: the store file is read-only"))
        }
        Some(ErrorCode::PermissionDenied) => Error::Refused(format!("{label}: permission denied")),
        Some(ErrorCode::DiskFull) => Error::Unavailable(format!("{label}: the disk is full")),
        _ => match e {
            rusqlite::Error::FromSqlConversionFailure(..)
            | rusqlite::Error::InvalidColumnType(..)
            | rusqlite::Error::IntegralValueOutOfRange(..)
            | rusqlite::Error::InvalidColumnName(_) => {
                Error::Corrupt(format!("{label}: unreadable row: {}", one_line(e)))
            }
            // A statement naming a table or column the file lacks: a damaged store.
            rusqlite::Error::SqliteFailure(_, Some(message))
                if message.starts_with("no such table")
                    || message.starts_with("no such column") =>
            {
                Error::Corrupt(format!(
                    "{label}: {message}: the store is damaged or not of this version"
                ))
            }
            _ => Error::Unavailable(format!("{label}: {}", one_line(e))),
        },
    }
}

/// Refuses a transaction on a store a newer build upgraded since this handle opened it
/// (the open refuses one it finds newer already): this build's statements and rows are
/// no longer the store's — an index they name may have another condition, a count another
/// name — so it neither reads nor writes, and a running authority stops, saying so, instead
/// of failing at random or writing what the newer build cannot read. One primary-key seek
/// of `meta` per transaction, on a page every commit touches.
fn still_ours(conn: &Connection, label: &str) -> std::result::Result<(), Step> {
    match schema_version(conn).map_err(|e| step(label, &e))? {
        Some(v) if v > SCHEMA_VERSION => Err(Step::Fail(newer(label, v))),
        _ => Ok(()),
    }
}

fn newer(label: &str, version: i64) -> Error {
    Error::Refused(format!(
        "{label}: store schema version {version} is newer than this build ({SCHEMA_VERSION}): upgrade leasehold"
    ))
}

/// Refuses a non-empty file that does not start with the SQLite header, without opening it
/// as a database.
fn check_header(path: &Path, label: &str) -> Result<()> {
    const MAGIC: &[u8; 16] = b"SQLite format 3\0";
    let mut head = [0u8; 16];
    let mut file = std::fs::File::open(path).map_err(|e| presence::io_error(label, &e))?;
    let mut read = 0;
    while read < head.len() {
        match file.read(&mut head[read..]) {
            Ok(0) => break,
            Ok(n) => read += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(presence::io_error(label, &e)),
        }
    }
    if read < head.len() || &head != MAGIC {
        return Err(Error::Refused(format!(
            "{label}: not a SQLite database (not a leasehold store)"
        )));
    }
    Ok(())
}

/// Reads what the file holds (the first read: a damaged file fails here).
fn inspect(conn: &Connection, label: &str) -> std::result::Result<Found, Step> {
    let tables: Vec<String> = conn
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table'")
        .and_then(|mut s| s.query_map([], |r| r.get(0))?.collect())
        .map_err(|e| step(label, &e))?;
    if tables.is_empty() {
        return Ok(Found::Empty);
    }
    if !tables.iter().any(|t| t == "meta") {
        return Err(Step::Fail(Error::Refused(format!(
            "{label}: a SQLite database, but not a leasehold store"
        ))));
    }
    match schema_version(conn).map_err(|e| step(label, &e))? {
        Some(SCHEMA_VERSION) => {
            // The schema script would silently recreate a dropped table, empty: a store of
            // this version missing one is damaged.
            if let Some(missing) = super::sql::schema_tables(SCHEMA)
                .into_iter()
                .find(|t| !tables.iter().any(|have| have == t))
            {
                return Err(Step::Fail(Error::Corrupt(format!(
                    "{label}: the {missing} table is missing from this leasehold store: it is damaged (nothing was recreated)"
                ))));
            }
            Ok(Found::Leasehold(SCHEMA_VERSION))
        }
        Some(v) => Ok(Found::Leasehold(v)),
        None => Err(Step::Fail(Error::Corrupt(format!(
            "{label}: a leasehold meta table without a schema version"
        )))),
    }
}

fn schema_version(conn: &Connection) -> rusqlite::Result<Option<i64>> {
    use rusqlite::OptionalExtension;
    conn.prepare_cached("SELECT value FROM meta WHERE key = 'schema_version'")?
        .query_row([], |r| r.get(0))
        .optional()
}

/// Creates whatever is missing, inside `BEGIN IMMEDIATE`, after re-checking the version
/// (another process may have initialised the file since it was inspected). True when this
/// call created the store.
fn init(conn: &mut Connection, label: &str) -> std::result::Result<bool, Step> {
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(|e| step(label, &e))?;
    let has_meta: bool = tx
        .query_row(
            "SELECT count(*) > 0 FROM sqlite_master WHERE type = 'table' AND name = 'meta'",
            [],
            |r| r.get(0),
        )
        .map_err(|e| step(label, &e))?;
    if has_meta {
        match schema_version(&tx).map_err(|e| step(label, &e))? {
            Some(v) if v > SCHEMA_VERSION => return Err(Step::Fail(newer(label, v))),
            Some(v) => {
                for upgrade in super::sql::upgrades_from(&UPGRADES, v) {
                    tx.execute_batch(upgrade).map_err(|e| step(label, &e))?;
                }
            }
            None => {}
        }
    }
    tx.execute_batch(SCHEMA).map_err(|e| step(label, &e))?;
    tx.commit().map_err(|e| step(label, &e))?;
    Ok(!has_meta)
}
