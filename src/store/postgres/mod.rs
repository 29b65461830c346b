//! The PostgreSQL provider: the scale-out. Many authority processes on many hosts share one
//! PostgreSQL database; the semantics are the generic ones of [`Store`](super::Store), run
//! inside PostgreSQL transactions.
//!
//! - **Serialisation.** Every write transaction starts with
//!   `pg_advisory_xact_lock(WRITE_LOCK)` (READ COMMITTED): writers queue on one lock per
//!   database, and after it every statement sees everything committed before, so the reads
//!   inside a store operation and the writes that follow are serialised against every other
//!   writer — the same contract as SQLite's `BEGIN IMMEDIATE`, and the generation / revision
//!   checks happen inside the writing transaction. Reads are one `REPEATABLE READ READ ONLY`
//!   snapshot and never wait for writers.
//! - **Claims** are one `SELECT … ORDER BY due_at LIMIT n` over the claim index inside the
//!   locked transaction (no per-candidate round trips to find work).
//! - **Failures.** Serialization failures and deadlocks (40001 / 40P01), and a connection
//!   lost before COMMIT, run the whole transaction again on a fresh connection, a bounded
//!   number of times with jittered backoff; after that the caller sees `STORE_CONTENTION`
//!   or `STORE_UNAVAILABLE`. A connection lost *during* COMMIT is resolved by asking the
//!   server what became of the transaction id (`txid_status`): committed, or safely re-run
//!   after an abort; if that cannot be established the caller sees `OUTCOME_UNKNOWN`,
//!   never a guess. A transaction that assumed a new work item's id free (`tx.rs`) and
//!   failed for any other reason runs again at once, reading first.
//! - **Stalled sessions.** Sessions set `idle_in_transaction_session_timeout`, so a process
//!   paused (SIGSTOP) inside a write transaction loses its session and the write lock after
//!   a few seconds instead of stalling every writer until it resumes; its transaction was
//!   never committed and runs again when it resumes.
//! - **Connections** come from a small pool per backend, opened on demand up to
//!   [`DEFAULT_POOL_SIZE`], or as many as the authority runtime says it calls the store
//!   concurrently (its workers, the poller and the renewer: [`Backend::fit_concurrency`]),
//!   never more than [`POOL_CAP`];
//!   a broken connection is dropped and replaced on the next attempt.
//!   Each connection caches its prepared statements and sets `synchronous_commit = on`:
//!   a commit is durable when it returns, whatever the server's default.
//! - **TLS** (`tls.rs`): libpq's `sslmode` (default `prefer`) and `sslrootcert` URL
//!   parameters, on rustls; a failed check is named in the error (unknown CA, name
//!   mismatch, a server without TLS under `require`).
//! - **Secrets.** [`Backend::describe`] and every error text name the server as
//!   `postgres://user@host:port/db`; the password never appears.
//! - **Lost commits.** A backend remembers the highest revision it has seen committed; a
//!   write transaction that finds the store below it (a failover to a replica that missed
//!   acknowledged commits, which could mint a generation twice) fails closed with
//!   `STORE_CORRUPT` instead of fencing wrongly. It guards each process from the moment it
//!   opens the store.
//! - **Schema** (`schema.sql`): idempotent, run in one transaction under a second advisory
//!   lock, so any number of authorities may start at once; `meta.schema_version` records
//!   the version and a newer one is refused. Tables live in the connection's default schema
//!   (choose another with `?options=-csearch_path%3Dname`).
//!
//! Files: `pool.rs` holds the connections, `tls.rs` (and `tls/`) their encryption, `errors.rs` maps driver errors, `bind.rs` binds and reads the shared SQL layer's values, `tx.rs` is this
//! provider's side of that layer (`store/sql/`), `batch.rs` and `literal.rs` send its held-back
//! writes (as arrays, or as text with the commit), `schema.sql` with `intake.sql` (the
//! intake applications enqueue into inside their own transactions), `upgrade_1.sql` to
//! `upgrade_10.sql`, which bring a store of schema 1 to 10 to 11 in place, and `additions.sql`,
//! the indexes added since, which every read-write open creates where missing.

mod batch;
mod begin;
mod bind;
mod errors;
pub mod intake;
mod literal;
mod notify;
mod pool;
mod server_identity;
mod tls;
mod tx;

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

use postgres::Config;
use postgres::error::SqlState;

use super::backend::{Backend, CommitFeed, RoundTrips, ServerIdentity, StoreKind, Tx, WriteReads};
use super::capability::{Capability, WORK_MODEL};
use super::sql::{Step, Transient, backoff, refuse_read_only, retry};
use super::stall::StallWatch;
use super::url::OpenMode;
use crate::error::{Error, Result};
use begin::{Begun, begin_write};
use errors::{map_error, step, transient};
use pool::{Conn, Pool, PoolState, connect};
use tx::{Inserts, PgTx};

/// The schema this build reads and writes (`meta.schema_version`).
pub const SCHEMA_VERSION: i64 = 11;

/// The schema, run idempotently at every read-write open of an uninitialised database: the
/// tables SQLite has too, then the intake.
const SCHEMA: &str = concat!(include_str!("schema.sql"), include_str!("intake.sql"));

/// The identity and epoch rows (`store/epoch.rs`), added at every read-write open.
const IDENTITY: &str = include_str!("identity.sql");

/// The indexes added since the schema's version, at every read-write open.
const ADDITIONS: &str = include_str!("additions.sql");

/// The upgrades, in order: entry `n` brings a version `n + 1` store to `n + 2`.
const UPGRADES: [&str; 10] = [
    include_str!("upgrade_1.sql"),
    include_str!("upgrade_2.sql"),
    include_str!("upgrade_3.sql"),
    include_str!("upgrade_4.sql"),
    include_str!("upgrade_5.sql"),
    concat!(include_str!("intake.sql"), include_str!("upgrade_6.sql")),
    include_str!("upgrade_7.sql"),
    include_str!("upgrade_8.sql"),
    include_str!("upgrade_9.sql"),
    include_str!("upgrade_10.sql"),
];

/// Whole-transaction attempts before `STORE_CONTENTION` / `STORE_UNAVAILABLE`.
pub const MAX_ATTEMPTS: u32 = 50;

/// Connections per backend at most unless a caller asks for more
/// ([`Backend::fit_concurrency`]): six covers an authority at its default settings (four
/// workers, its poller and its renewer, each calling the store at once) while staying well
/// under [`POOL_CAP`]. Connections open on demand, so a reader uses one. The store does not
/// read the authority's settings; the authority's tests check that this covers them.
pub const DEFAULT_POOL_SIZE: usize = 6;

/// Connections per backend at most, however many callers: writers serialise on one lock,
/// so more sessions would only load the server.
pub const POOL_CAP: usize = 16;

/// Run on every new session: every commit waits for its WAL flush whatever the server's
/// default (an acknowledged claim or completion is durable), and a session that sits inside
/// a transaction for 5 s without sending anything is ended by the server (a paused or hung
/// process must not hold the write lock for long; its transaction was not committed and
/// runs again).
const SESSION_SETUP: &str =
    "SET synchronous_commit = on; SET idle_in_transaction_session_timeout = 5000";

/// Opening a connection gives up after this long (the server is down or unreachable).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// The write lock's advisory key, as `pg_locks` shows it: `(classid, objid)`, the key's
/// high and low 32 bits.
const WRITE_LOCK_KEY: (u32, u32) = split_key(7_810_756_276_994_469_740);

const fn split_key(key: u64) -> (u32, u32) {
    #[allow(clippy::cast_possible_truncation)] // the halves of a 64-bit key
    ((key >> 32) as u32, key as u32)
}

/// Who holds the write lock now: the session's pid, application, client and how long its
/// transaction has been open, as `pg_locks` and `pg_stat_activity` tell.
fn write_lock_holder(conn: &mut Conn) -> Option<String> {
    let (class, obj) = WRITE_LOCK_KEY;
    let rows = conn
        .client
        .query(
            "SELECT a.pid, coalesce(a.application_name, ''), coalesce(a.client_addr::text, 'local'), \
                    coalesce(a.state, ''), \
                    coalesce(extract(epoch FROM now() - a.xact_start), 0)::float8 \
             FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid \
             WHERE l.locktype = 'advisory' AND l.granted \
               AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database()) \
               AND l.classid::bigint = $1 AND l.objid::bigint = $2",
            &[&i64::from(class), &i64::from(obj)],
        )
        .ok()?;
    let row = rows.first()?;
    let (pid, app, client, state, open_s): (i32, String, String, String, f64) =
        (row.get(0), row.get(1), row.get(2), row.get(3), row.get(4));
    Some(format!(
        "pid {pid} ({app}) from {client}, {state}, its transaction open {open_s:.0} s"
    ))
}

/// Begins a read: one snapshot for every statement of the read, and in the same message
/// the schema's version in that snapshot (a newer build may have upgraded the database
/// since this handle opened it: then the read is refused, as a write is).
const BEGIN_READ: &str = "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY; \
     SELECT value FROM meta WHERE key = 'schema_version'";

/// Begins schema initialisation under its own advisory lock (`WRITE_LOCK + 1`).
const BEGIN_INIT: &str = "BEGIN; SELECT pg_advisory_xact_lock(7810756276994469741)";

/// Taken by an upgrade, after the initialisation lock, before it changes anything: the
/// write lock, so every write of an older build already under way commits first, and
/// every later one reads the new version when it takes the lock and is refused
/// (`begin.rs`). Writers never take the initialisation lock, so the two cannot deadlock.
const UPGRADE_LOCK: &str = "SELECT pg_advisory_xact_lock(7810756276994469740)";

/// A leasehold store in one PostgreSQL database.
pub struct PostgresBackend {
    pool: Pool,
    names: Names,
    read_only: bool,
    /// Whether this open created the schema (`leasehold init`).
    created: bool,
    /// The highest revision this backend has seen committed. The database never goes
    /// below it unless it lost acknowledged commits (a failover to a replica that was
    /// behind): then a generation could be minted twice, so writes fail closed.
    high_water: AtomicU64,
    /// Committed write transactions, the round trips they took and the microseconds they
    /// held the write lock ([`RoundTrips`]).
    writes: AtomicU64,
    write_round_trips: AtomicU64,
    write_held_micros: AtomicU64,
}

/// How the server is named in messages, and the secret that must never appear in them.
pub(super) struct Names {
    label: String,
    password: Option<String>,
}

impl Names {
    fn new(config: &Config) -> Self {
        Self {
            label: label(config),
            password: config
                .get_password()
                .map(|p| String::from_utf8_lossy(p).into_owned())
                .filter(|p| !p.is_empty()),
        }
    }

    /// A driver error as one line, prefixed by the label, with the password removed.
    pub(super) fn text(&self, e: &postgres::Error) -> String {
        let detail = match e.as_db_error() {
            Some(db) => format!("{}: {} ({})", db.severity(), db.message(), db.code().code()),
            None => match std::error::Error::source(e) {
                Some(cause) => format!("{e}: {cause}"),
                None => e.to_string(),
            },
        };
        let detail = detail.split_whitespace().collect::<Vec<_>>().join(" ");
        let detail = match &self.password {
            Some(p) => detail.replace(p.as_str(), "***"),
            None => detail,
        };
        format!("{}: {detail}", self.label)
    }
}

/// `postgres://user@host:port/db`, without the password or any other parameter.
fn label(config: &Config) -> String {
    let user = config.get_user().unwrap_or("");
    let user = if user.is_empty() {
        String::new()
    } else {
        format!("{user}@")
    };
    let port = config.get_ports().first().copied().unwrap_or(5432);
    let db = config
        .get_dbname()
        .unwrap_or(config.get_user().unwrap_or(""));
    match config.get_hosts().first() {
        Some(postgres::config::Host::Tcp(host)) => {
            format!("postgres://{user}{host}:{port}/{db}")
        }
        Some(postgres::config::Host::Unix(dir)) => {
            format!("postgres://{user}/{db}?host={}&port={port}", dir.display())
        }
        None => format!("postgres://{user}localhost:{port}/{db}"),
    }
}

/// A URL that did not parse, for its error message: the scheme and host part only (no
/// user info, no parameters), so a password can never be echoed.
pub(crate) fn redact_url(url: &str) -> String {
    let (scheme, rest) = url.split_once("://").unwrap_or(("postgres", url));
    let rest = rest.split(['?', '#']).next().unwrap_or("");
    let rest = rest.rsplit_once('@').map_or(rest, |(_, host)| host);
    format!("{scheme}://{rest}")
}

/// What a database holds, read before anything is changed.
enum Found {
    /// No `meta` table: a new (or being-created) store.
    Empty,
    /// A leasehold store of this schema version.
    Leasehold(i64),
}

impl PostgresBackend {
    /// Connects to the database at `url` (`postgres://…` or `postgresql://…`) and, in
    /// `ReadWrite` mode, creates the schema if the database has none. A database holding a
    /// newer schema is refused before anything is changed.
    ///
    /// # Errors
    /// `INVALID` (not a PostgreSQL URL), `STORE_UNAVAILABLE` (connection refused,
    /// unreachable), `STORE_REFUSED` (bad credentials, no such database, no permission, a
    /// server certificate that fails verification; another application's database, an
    /// uninitialised one opened without creating, a newer schema, an older one opened
    /// read-only), `STORE_CORRUPT` (a damaged `meta` table, a missing table).
    pub fn open(url: &str, mode: OpenMode) -> Result<Self> {
        Self::open_with_pool(url, mode, DEFAULT_POOL_SIZE)
    }

    /// [`Self::open`] with at most `pool_size` connections (at least one).
    ///
    /// # Errors
    /// As [`Self::open`].
    pub fn open_with_pool(url: &str, mode: OpenMode, pool_size: usize) -> Result<Self> {
        let (url, tls) = tls::split_url(url)?;
        let url = url.as_str();
        let mut config: Config = url.parse().map_err(|e: postgres::Error| {
            let why =
                std::error::Error::source(&e).map_or_else(|| e.to_string(), ToString::to_string);
            Error::Invalid(format!("{}: not a PostgreSQL URL ({why})", redact_url(url)))
        })?;
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(CONNECT_TIMEOUT);
        }
        if config.get_application_name().is_none() {
            config.application_name("leasehold");
        }
        config.ssl_mode(tls.driver_mode());
        let names = Names::new(&config);
        let read_only = mode == OpenMode::ReadOnly;
        let pool = Pool {
            config,
            tls: tls.connector(&names.label)?,
            max: AtomicUsize::new(pool_size.max(1)),
            state: Mutex::new(PoolState {
                idle: Vec::new(),
                open: 0,
            }),
            returned: Condvar::new(),
        };
        // The first connection is not retried: a server that is not there now is reported
        // at once (an authority's supervisor restarts it); later losses are retried.
        drop(pool.get(&names).map_err(|s| match s {
            Step::Fail(e) => e,
            Step::Retry(Transient::Disconnected(why)) => Error::Unavailable(why),
            Step::Retry(Transient::Contention) => Error::Contention { attempts: 1 },
        })?);
        let created = retry(MAX_ATTEMPTS, || {
            init(pool.get(&names)?.conn(), &names, read_only, mode.creates())
        })?;
        Ok(Self {
            pool,
            names,
            read_only,
            created,
            high_water: AtomicU64::new(0),
            writes: AtomicU64::new(0),
            write_round_trips: AtomicU64::new(0),
            write_held_micros: AtomicU64::new(0),
        })
    }

    /// Whether this open created the schema (the database had none before).
    #[must_use]
    pub fn created(&self) -> bool {
        self.created
    }

    /// Whether writes are refused (opened read-only).
    #[must_use]
    pub fn is_read_only(&self) -> bool {
        self.read_only
    }

    /// Runs `f` in a transaction: a write when `write` names the work items it reads first
    /// (read with the write lock), a read-only snapshot otherwise.
    fn run(
        &self,
        write: Option<WriteReads<'_>>,
        f: &mut dyn FnMut(&mut dyn Tx) -> Result<()>,
    ) -> Result<()> {
        let mut watch = StallWatch::new(&self.names.label);
        retry(MAX_ATTEMPTS, || {
            let mut pooled = self.pool.get(&self.names)?;
            let conn = pooled.conn();
            match self.attempt(conn, write, Inserts::Assume, f, &mut watch) {
                // Again at once on the same session, unless its rollback failed: then on a
                // fresh one, through the retry.
                Err(Failed::Assumed) if !conn.in_transaction => {
                    self.attempt(conn, write, Inserts::Read, f, &mut watch)
                }
                other => other,
            }
            .map_err(Failed::into_step)
        })
    }

    /// Begins a transaction on `conn`: a write (`write`: what it reads first) under the
    /// write lock, answering what its first statement read, or a read. Either is refused
    /// when the schema version it finds is newer than this build's.
    fn begin(
        &self,
        conn: &mut Conn,
        write: Option<WriteReads<'_>>,
        watch: &mut StallWatch<'_>,
    ) -> std::result::Result<Option<Begun>, Failed> {
        let names = &self.names;
        conn.in_transaction = true;
        let mut began = |conn: &mut Conn, e: &postgres::Error| {
            if e.code() == Some(&SqlState::LOCK_NOT_AVAILABLE) {
                // The write lock was not ours within the bound: a stall. Name the holder
                // (outside the aborted transaction) and queue again.
                rollback(conn);
                watch.waiting(|| write_lock_holder(conn));
                return Step::Retry(Transient::Contention);
            }
            let failed = step(names, e, &conn.client);
            rollback(conn);
            failed
        };
        let (begun, version) = if let Some(reads) = write {
            let (begin, reads) = begin_write(reads);
            let messages = conn
                .client
                .simple_query(&begin)
                .map_err(|e| began(conn, &e))?;
            let begun = Begun::of(&messages, reads).ok_or_else(|| {
                Step::Fail(Error::Unavailable(format!(
                    "{}: the server did not return a transaction id",
                    names.label
                )))
            })?;
            let version = begun.schema_version();
            (Some(begun), version)
        } else {
            let messages = conn
                .client
                .simple_query(BEGIN_READ)
                .map_err(|e| began(conn, &e))?;
            (None, version_in(&messages))
        };
        // A newer build upgraded the database since this handle opened it: this build's
        // statements and rows are no longer the store's (an index may have another
        // condition, a count another name), so it neither reads nor writes, and a running
        // authority stops, saying so, instead of writing what the newer build cannot read.
        if let Some(version) = version.filter(|v| *v > SCHEMA_VERSION) {
            rollback(conn);
            return Err(Failed::Step(Step::Fail(newer(names, version))));
        }
        Ok(begun)
    }

    /// One attempt at a whole transaction on one connection.
    fn attempt(
        &self,
        conn: &mut Conn,
        write: Option<WriteReads<'_>>,
        inserts: Inserts,
        f: &mut dyn FnMut(&mut dyn Tx) -> Result<()>,
        watch: &mut StallWatch<'_>,
    ) -> std::result::Result<(), Failed> {
        let names = &self.names;
        let begun = self.begin(conn, write, watch)?;
        // The write lock is held from here (its statement answered) to the commit's answer.
        let held_from = Instant::now();
        let (ending, failed_transiently, revision, assumed, round_trips) = {
            let high_water = self.high_water.load(Ordering::Acquire);
            let mut tx = PgTx::new(conn, names, write.is_some(), high_water, inserts);
            if let (Some(begun), Some(reads)) = (&begun, write) {
                begun.remember(&mut tx, reads.items);
            }
            let ending = f(&mut tx).and_then(|()| tx.commit_statement());
            (
                ending,
                tx.take_transient(),
                tx.seen_revision(),
                tx.assumed(),
                tx.round_trips(),
            )
        };
        // A transaction that assumed new ids free and failed for good may have failed
        // because one was taken: it runs again, reading first, for the true outcome.
        let assumed_wrongly = |transient: &Option<Transient>| assumed > 0 && transient.is_none();
        let ending = match ending {
            Ok(ending) => ending,
            Err(e) => {
                rollback(conn);
                if assumed_wrongly(&failed_transiently) {
                    return Err(Failed::Assumed);
                }
                return Err(Failed::Step(match failed_transiently {
                    Some(t) => Step::Retry(t),
                    None => Step::Fail(e),
                }));
            }
        };
        match conn.client.simple_query(&ending) {
            Ok(_) => {
                conn.in_transaction = false;
                self.saw_committed(revision);
                if write.is_some() {
                    // The write lock's statement and the commit's, around the
                    // transaction's own.
                    self.writes.fetch_add(1, Ordering::Relaxed);
                    self.write_round_trips
                        .fetch_add(round_trips + 2, Ordering::Relaxed);
                    let held = u64::try_from(held_from.elapsed().as_micros()).unwrap_or(u64::MAX);
                    self.write_held_micros.fetch_add(held, Ordering::Relaxed);
                }
                Ok(())
            }
            Err(e) => {
                let transient = transient(names, &e, &conn.client);
                match (&begun, transient) {
                    (Some(begun), Some(Transient::Disconnected(why))) => {
                        self.resolve(begun.txid, &why)?;
                        self.saw_committed(revision);
                        Ok(())
                    }
                    // The server refused a statement or the commit: nothing was committed,
                    // and what the message held after the refusal did not run.
                    (_, transient) => {
                        rollback(conn);
                        if assumed_wrongly(&transient) {
                            return Err(Failed::Assumed);
                        }
                        Err(Failed::Step(match transient {
                            Some(t) => Step::Retry(t),
                            None => Step::Fail(map_error(names, &e)),
                        }))
                    }
                }
            }
        }
    }

    /// Raises the high-water mark to a revision known to be committed.
    fn saw_committed(&self, revision: Option<u64>) {
        if let Some(revision) = revision {
            self.high_water.fetch_max(revision, Ordering::AcqRel);
        }
    }

    /// Establishes what became of a write transaction whose COMMIT got no answer: committed
    /// (success), aborted (run it again), or unknown (`OUTCOME_UNKNOWN`). Asked on a new
    /// session outside the pool (the broken one still counts against it); a transaction
    /// still "in progress" is the old session finishing, so ask again.
    fn resolve(&self, txid: i64, why: &str) -> std::result::Result<(), Step> {
        let unknown = |detail: &str| {
            Step::Fail(Error::OutcomeUnknown(format!(
                "{why}; the commit's outcome could not be established ({detail}): re-read before acting"
            )))
        };
        for n in 1..=MAX_ATTEMPTS {
            let status = connect(&self.pool, &self.names).and_then(|mut conn| {
                let client = &mut conn.client;
                client
                    .query_one("SELECT txid_status($1)", &[&txid])
                    .and_then(|row| row.try_get::<_, Option<String>>(0))
                    .map_err(|e| step(&self.names, &e, client))
            });
            match status {
                Ok(Some(s)) if s == "committed" => return Ok(()),
                Ok(Some(s)) if s == "aborted" => {
                    return Err(Step::Retry(Transient::Disconnected(why.to_owned())));
                }
                Ok(Some(_)) | Err(Step::Retry(_)) => backoff(n),
                Ok(None) => return Err(unknown("the transaction id is no longer known")),
                Err(Step::Fail(e)) => return Err(unknown(&e.to_string())),
            }
        }
        Err(unknown("the server did not answer"))
    }
}

/// How one attempt at a transaction failed.
enum Failed {
    Step(Step),
    /// It assumed a new work item's id free and failed for good: run it again reading
    /// first ([`Inserts::Read`]).
    Assumed,
}

impl From<Step> for Failed {
    fn from(step: Step) -> Self {
        Self::Step(step)
    }
}

impl Failed {
    fn into_step(self) -> Step {
        match self {
            Self::Step(step) => step,
            // Only an attempt that assumed can say so, and the second one reads.
            Self::Assumed => Step::Retry(Transient::Contention),
        }
    }
}

/// Rolls back; a connection that cannot is left marked mid-transaction and is dropped.
/// What the transaction wrote of the server's record is undone with it, so the connection
/// no longer knows the store to name its server (`store/server_record.rs`).
fn rollback(conn: &mut Conn) {
    if let Some(server) = conn.server.as_mut() {
        server.recorded = false;
    }
    if conn.client.batch_execute("ROLLBACK").is_ok() {
        conn.in_transaction = false;
    }
}

impl Backend for PostgresBackend {
    fn kind(&self) -> StoreKind {
        StoreKind::Postgres
    }

    fn describe(&self) -> String {
        self.names.label.clone()
    }

    /// One connection per concurrent caller, up to [`POOL_CAP`].
    fn fit_concurrency(&self, callers: usize) {
        self.pool
            .max
            .store(callers.clamp(1, POOL_CAP), Ordering::Relaxed);
        self.pool.returned.notify_all();
    }

    fn physical_durability(&self) -> bool {
        true
    }

    fn capabilities(&self) -> Vec<Capability> {
        let mut all = WORK_MODEL.to_vec();
        all.extend([
            Capability::Durable,
            Capability::SharedAcrossProcesses,
            Capability::SharedAcrossHosts,
            Capability::PushesCommits,
        ]);
        all
    }

    fn write(&self, f: &mut dyn FnMut(&mut dyn Tx) -> Result<()>) -> Result<()> {
        self.write_reading(false, WriteReads::default(), f)
    }

    /// The items and links are read in the write lock's message (`postgres/begin.rs`).
    fn write_reading(
        &self,
        _urgent: bool,
        reads: WriteReads<'_>,
        f: &mut dyn FnMut(&mut dyn Tx) -> Result<()>,
    ) -> Result<()> {
        refuse_read_only(self.read_only, &self.names.label)?;
        self.run(Some(reads), f)
    }

    fn read(&self, f: &mut dyn FnMut(&mut dyn Tx) -> Result<()>) -> Result<()> {
        self.run(None, f)
    }

    /// The schema version and every table again, as an open checks them. The pages are
    /// the server's: it checks them as it reads them when the cluster has data checksums,
    /// and nothing a client can run reads every page of every table and index short of an
    /// extension (`amcheck`) a store cannot count on, so the answer says which it is.
    fn verify(&self) -> Result<String> {
        let checksums = retry(MAX_ATTEMPTS, || {
            let mut pooled = self.pool.get(&self.names)?;
            let conn = pooled.conn();
            inspect(conn, &self.names)?;
            conn.client
                .query_one("SHOW data_checksums", &[])
                .and_then(|r| r.try_get::<_, String>(0))
                .map_err(|e| step(&self.names, &e, &conn.client))
        })?;
        let pages = if checksums == "on" {
            "the server checks each page's checksum as it reads it"
        } else {
            "the cluster has no data checksums, so nothing checks its pages"
        };
        Ok(format!(
            "nothing to verify beyond the schema version and its tables on postgres ({pages})"
        ))
    }

    /// Drops every table and function of `schema.sql` when this open created them (the
    /// database held no store), in one transaction.
    fn discard_created(&self) -> Result<()> {
        if !self.created {
            return Ok(());
        }
        let functions = SCHEMA
            .split("CREATE OR REPLACE FUNCTION ")
            .skip(1)
            .filter_map(|rest| rest.split('(').next())
            .collect::<Vec<_>>()
            .join(", ");
        let tables = super::sql::schema_tables(SCHEMA).join(", ");
        let sql = format!(
            "BEGIN; DROP FUNCTION IF EXISTS {functions}; DROP TABLE IF EXISTS {tables} CASCADE; COMMIT"
        );
        retry(MAX_ATTEMPTS, || {
            let mut pooled = self.pool.get(&self.names)?;
            let conn = pooled.conn();
            conn.in_transaction = true;
            match conn.client.batch_execute(&sql) {
                Ok(()) => {
                    conn.in_transaction = false;
                    Ok(())
                }
                Err(e) => {
                    let failed = step(&self.names, &e, &conn.client);
                    rollback(conn);
                    Err(failed)
                }
            }
        })
    }

    /// What a pooled connection read when it was opened (`server_identity.rs`).
    fn server_identity(&self) -> Option<ServerIdentity> {
        let mut pooled = self.pool.get(&self.names).ok()?;
        pooled.conn().server.map(|s| s.identity)
    }

    fn write_round_trips(&self) -> Option<RoundTrips> {
        Some(RoundTrips {
            writes: self.writes.load(Ordering::Relaxed),
            round_trips: self.write_round_trips.load(Ordering::Relaxed),
            held_micros: self.write_held_micros.load(Ordering::Relaxed),
        })
    }

    fn wal_position(&self) -> Option<u64> {
        let mut pooled = self.pool.get(&self.names).ok()?;
        let row = pooled
            .conn()
            .client
            .query_one("SELECT (pg_current_wal_lsn() - '0/0'::pg_lsn)::bigint", &[])
            .ok()?;
        u64::try_from(row.try_get::<_, i64>(0).ok()?).ok()
    }

    fn commit_feed(&self) -> Result<Option<Box<dyn CommitFeed>>> {
        Ok(Some(Box::new(notify::PgCommitFeed::open(
            &self.pool,
            &self.names,
        )?)))
    }

    /// The store revision, read outside any transaction: it moves with every commit of
    /// every process, so the dashboard re-reads exactly when something changed.
    fn change_token(&self) -> Result<u64> {
        retry(MAX_ATTEMPTS, || {
            let mut pooled = self.pool.get(&self.names)?;
            let conn = pooled.conn();
            let revision = conn
                .statement("SELECT value FROM meta WHERE key = 'revision'")
                .and_then(|s| conn.client.query_one(&s, &[]))
                .and_then(|row| row.try_get::<_, i64>(0))
                .map_err(|e| step(&self.names, &e, &conn.client))?;
            let revision = u64::try_from(revision).unwrap_or(0);
            self.saw_committed(Some(revision));
            Ok(revision)
        })
    }
}

/// The schema version a read's first statement found.
fn version_in(messages: &[postgres::SimpleQueryMessage]) -> Option<i64> {
    messages.iter().find_map(|m| match m {
        postgres::SimpleQueryMessage::Row(row) => row.get(0).and_then(|v| v.parse().ok()),
        _ => None,
    })
}

fn newer(names: &Names, version: i64) -> Error {
    Error::Refused(format!(
        "{}: store schema version {version} is newer than this build ({SCHEMA_VERSION}): upgrade leasehold",
        names.label
    ))
}

/// Recognises the database and, unless read-only, creates whatever is missing — all in one
/// transaction under the initialisation lock, so concurrent first opens are safe.
fn init(
    conn: &mut Conn,
    names: &Names,
    read_only: bool,
    create: bool,
) -> std::result::Result<bool, Step> {
    conn.in_transaction = true;
    let begin = if read_only { "BEGIN" } else { BEGIN_INIT };
    let result = conn
        .client
        .batch_execute(begin)
        .map_err(|e| step(names, &e, &conn.client))
        .and_then(|()| inspect(conn, names))
        .and_then(|found| match found {
            Found::Leasehold(v) if v > SCHEMA_VERSION => Err(Step::Fail(newer(names, v))),
            Found::Leasehold(v) if v < 1 => Err(Step::Fail(super::sql::unknown_version(
                &names.label,
                v,
            ))),
            Found::Leasehold(v) if v < SCHEMA_VERSION && read_only => {
                Err(Step::Fail(Error::Refused(format!(
                    "{}: store schema version {v} predates this build ({SCHEMA_VERSION}); any command that writes to it upgrades it",
                    names.label
                ))))
            }
            Found::Leasehold(v) if v < SCHEMA_VERSION => std::iter::once(UPGRADE_LOCK)
                .chain(super::sql::upgrades_from(&UPGRADES, v).iter().copied())
                .try_for_each(|sql| conn.client.batch_execute(sql))
                .map(|()| false)
                .map_err(|e| step(names, &e, &conn.client)),
            Found::Leasehold(_) => Ok(false),
            Found::Empty if read_only || !create => Err(Step::Fail(Error::Refused(format!(
                "{}: not a leasehold store yet (nothing was created; `leasehold init` creates one)",
                names.label
            )))),
            Found::Empty => conn
                .client
                .batch_execute(SCHEMA)
                .map(|()| true)
                .map_err(|e| step(names, &e, &conn.client)),
        })
        .and_then(|created| {
            if read_only {
                return Ok(created);
            }
            conn.client
                .batch_execute(IDENTITY)
                .and_then(|()| conn.client.batch_execute(ADDITIONS))
                .map(|()| created)
                .map_err(|e| step(names, &e, &conn.client))
        })
        .and_then(|created| {
            conn.client
                .batch_execute("COMMIT")
                .map(|()| created)
                .map_err(|e| step(names, &e, &conn.client))
        });
    match result {
        Ok(created) => {
            conn.in_transaction = false;
            Ok(created)
        }
        Err(e) => {
            rollback(conn);
            Err(e)
        }
    }
}

/// Reads the schema version, if the database has a `meta` table.
fn inspect(conn: &mut Conn, names: &Names) -> std::result::Result<Found, Step> {
    let client = &mut conn.client;
    let has_meta: bool = client
        .query_one("SELECT to_regclass('meta') IS NOT NULL", &[])
        .and_then(|r| r.try_get(0))
        .map_err(|e| step(names, &e, client))?;
    if !has_meta {
        return Ok(Found::Empty);
    }
    let version: Option<i64> = client
        .query_opt("SELECT value FROM meta WHERE key = 'schema_version'", &[])
        .and_then(|r| r.map(|r| r.try_get(0)).transpose())
        .map_err(|e| match step(names, &e, client) {
            // Not being allowed to read it says nothing about what the table holds.
            Step::Fail(_) if errors::is_permission(&e) => Step::Fail(map_error(names, &e)),
            Step::Fail(_) if e.as_db_error().is_some() => Step::Fail(Error::Refused(format!(
                "{}: a meta table that is not leasehold's (not a leasehold store)",
                names.label
            ))),
            other => other,
        })?;
    match version {
        Some(SCHEMA_VERSION) => {
            missing_table(client, names)?;
            Ok(Found::Leasehold(SCHEMA_VERSION))
        }
        Some(v) => Ok(Found::Leasehold(v)),
        None => Err(Step::Fail(Error::Corrupt(format!(
            "{}: a leasehold meta table without a schema version",
            names.label
        )))),
    }
}

/// Refuses a store of the current schema missing one of its tables: writers never
/// recreate one (it would come back empty), so the store is damaged.
fn missing_table(client: &mut postgres::Client, names: &Names) -> std::result::Result<(), Step> {
    let tables: Vec<String> = super::sql::schema_tables(SCHEMA)
        .into_iter()
        .map(str::to_owned)
        .collect();
    let missing: Option<String> = client
        .query_opt(
            "SELECT t FROM unnest($1::text[]) AS t WHERE to_regclass(t) IS NULL LIMIT 1",
            &[&tables],
        )
        .and_then(|r| r.map(|r| r.try_get(0)).transpose())
        .map_err(|e| step(names, &e, client))?;
    match missing {
        Some(table) => Err(Step::Fail(Error::Corrupt(format!(
            "{}: the {table} table is missing from this leasehold store: it is damaged (nothing was recreated)",
            names.label
        )))),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_never_carry_the_password() {
        let config: Config = "postgres://app:pw-123@db.internal:6543/work?application_name=x"
            .parse()
            .expect("a URL");
        let names = Names::new(&config);
        assert_eq!(names.label, "postgres://app@db.internal:6543/work");
        assert_eq!(names.password.as_deref(), Some("pw-123"));

        let config: Config = "postgresql:///work?host=/run/pg&user=app&password=pw"
            .parse()
            .expect("a URL");
        let label = Names::new(&config).label;
        assert_eq!(label, "postgres://app@/work?host=/run/pg&port=5432");
        assert!(!label.contains("pw"));
    }

    #[test]
    fn unparsable_urls_are_echoed_without_user_info_or_parameters() {
        assert_eq!(
            redact_url("postgres://app:p@ss@host:bad/db?password=x"),
            "postgres://host:bad/db"
        );
        assert_eq!(redact_url("postgresql://host/db"), "postgresql://host/db");
        let e = PostgresBackend::open("postgres://app:secret@host:bad/db", OpenMode::ReadWrite)
            .err()
            .expect("refused");
        assert_eq!(e.code(), "INVALID");
        assert!(!e.to_string().contains("secret"), "{e}");
        assert!(
            !format!(
                "{:?}",
                super::super::url::StoreUrl::parse("postgres://a:secret@h/d")
            )
            .contains("secret")
        );
    }
}
