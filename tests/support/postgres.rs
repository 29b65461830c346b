//! A throwaway PostgreSQL for the tests, from the installed server binaries
//! (`/usr/lib/postgresql/<version>/bin`, the newest installed; `LEASEHOLD_TEST_PG_BIN`
//! overrides): a fresh data directory, a free loopback port, trust authentication, default
//! durability settings (`fsync`, `synchronous_commit` on). The data directory is on a
//! RAM-backed file system when there is one (`/dev/shm`), like the SQLite model runs: the
//! subject is the provider's logic and crash behaviour against killed processes, not the
//! disk's flush latency (a measurement of throughput uses [`Server::start_on_disk`]).
//!
//! - [`shared`] starts one server per test binary, on first use; every test gets its own
//!   database from [`database`], so tests stay isolated and run in parallel.
//! - [`Server::dedicated`] starts a server of its own (a test that restarts it);
//!   [`Server::with_tls`] one with `ssl=on`, serving a certificate the test made.
//! - `LEASEHOLD_TEST_PG_URL=postgres://user:pw@host:port/db` points the tests at an
//!   existing server instead: each test creates (and drops) its own database there.
//!
//! Run as root, the server runs as the `postgres` user (`runuser`); otherwise as the
//! current user. Every server is stopped when its owner drops it and, should the test
//! process die first, by a watchdog shell that waits for the test process to go away.
//! Missing binaries fail loudly with what to install: the tests never skip silently.

#![allow(dead_code, clippy::unwrap_used)]

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

/// The environment variable naming an existing server.
pub const URL_VAR: &str = "LEASEHOLD_TEST_PG_URL";

/// A running throwaway server.
pub struct Server {
    bin: PathBuf,
    dir: PathBuf,
    port: u16,
    as_postgres: bool,
    /// `ssl=on` ([`Server::with_tls`]; the files are the data directory's `server.crt`
    /// and `server.key`).
    ssl: bool,
}

/// What [`Server::with_tls`] serves: a certificate (chain) and its key, PEM files the test
/// made, and `pg_hba.conf` lines placed before the default trust lines.
pub struct Tls<'a> {
    pub cert: &'a Path,
    pub key: &'a Path,
    pub hba: &'a [&'a str],
}

/// Where tests get databases: the throwaway server, or the one `LEASEHOLD_TEST_PG_URL` names.
enum Source {
    Throwaway(Server),
    External(String),
}

/// The server of this test binary, started on first use.
fn source() -> &'static Source {
    static SOURCE: OnceLock<Source> = OnceLock::new();
    SOURCE.get_or_init(|| match std::env::var(URL_VAR) {
        Ok(url) if !url.trim().is_empty() => Source::External(url),
        _ => Source::Throwaway(Server::start(true)),
    })
}

/// The shared throwaway server, or `None` when the tests run against an external one.
pub fn shared() -> Option<&'static Server> {
    match source() {
        Source::Throwaway(server) => Some(server),
        Source::External(_) => None,
    }
}

/// A database of its own for one test, dropped with the guard.
pub struct Database {
    admin_url: String,
    name: String,
    url: String,
}

impl Database {
    /// `postgres://…/<name>`: a store URL for this database.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Ends every other session connected to this database (`pg_terminate_backend`), as an
    /// operator or a failing network would; returns how many were ended.
    pub fn terminate_sessions(&self) -> u64 {
        let mut admin = postgres::Client::connect(&self.admin_url, postgres::NoTls).unwrap();
        let row = admin
            .query_one(
                "SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) FROM pg_stat_activity
                 WHERE datname = $1 AND pid <> pg_backend_pid()",
                &[&self.name],
            )
            .unwrap();
        u64::try_from(row.get::<_, i64>(0)).unwrap()
    }
}

impl Database {
    /// A copy of this database as it is now (`CREATE DATABASE … TEMPLATE`, a copy of its
    /// files: the store id and everything else), ending the sessions connected to it.
    pub fn snapshot(&self) -> Database {
        self.terminate_sessions();
        let name = format!("{}_copy", self.name);
        let mut admin = postgres::Client::connect(&self.admin_url, postgres::NoTls).unwrap();
        admin
            .batch_execute(&format!(
                "CREATE DATABASE \"{name}\" TEMPLATE \"{}\"",
                self.name
            ))
            .unwrap();
        Database {
            url: self.url.replace(&self.name, &name),
            admin_url: self.admin_url.clone(),
            name,
        }
    }

    /// Puts `older` (a [`Self::snapshot`]) back in this database's place, as a restore of
    /// a backup would.
    pub fn restore(&self, older: &Database) {
        let mut admin = postgres::Client::connect(&self.admin_url, postgres::NoTls).unwrap();
        admin
            .batch_execute(&format!("DROP DATABASE \"{}\" WITH (FORCE)", self.name))
            .unwrap();
        admin
            .batch_execute(&format!(
                "CREATE DATABASE \"{}\" TEMPLATE \"{}\"",
                self.name, older.name
            ))
            .unwrap();
    }
}

impl Drop for Database {
    fn drop(&mut self) {
        if let Ok(mut admin) = postgres::Client::connect(&self.admin_url, postgres::NoTls) {
            let _ = admin.batch_execute(&format!(
                "DROP DATABASE IF EXISTS \"{}\" WITH (FORCE)",
                self.name
            ));
        }
    }
}

/// A fresh, empty database on the test server.
pub fn database() -> Database {
    match source() {
        Source::Throwaway(server) => server.database(),
        Source::External(url) => create_database(url),
    }
}

fn create_database(admin_url: &str) -> Database {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let name = format!(
        "leasehold_t{}_{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    );
    create_named(admin_url, name)
}

fn create_named(admin_url: &str, name: String) -> Database {
    let mut admin = postgres::Client::connect(admin_url, postgres::NoTls)
        .unwrap_or_else(|e| panic!("cannot reach the test server: {e}"));
    admin
        .batch_execute(&format!("CREATE DATABASE \"{name}\""))
        .unwrap_or_else(|e| panic!("CREATE DATABASE {name}: {e}"));
    Database {
        admin_url: admin_url.to_owned(),
        url: with_database(admin_url, &name),
        name,
    }
}

/// `admin_url` with its database replaced by `name` (query parameters kept).
fn with_database(admin_url: &str, name: &str) -> String {
    let (base, query) = admin_url
        .split_once('?')
        .map_or((admin_url, None), |(b, q)| (b, Some(q)));
    let (scheme, rest) = base.split_once("://").expect("a postgres:// URL");
    let authority = rest.split('/').next().unwrap_or("");
    match query {
        Some(q) => format!("{scheme}://{authority}/{name}?{q}"),
        None => format!("{scheme}://{authority}/{name}"),
    }
}

/// The newest installed server binaries.
fn bin_dir() -> PathBuf {
    if let Ok(dir) = std::env::var("LEASEHOLD_TEST_PG_BIN") {
        return dir.into();
    }
    let newest = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|v| Path::new(&format!("/usr/lib/postgresql/{v}/bin/initdb")).exists())
        .max();
    match newest {
        Some(v) => format!("/usr/lib/postgresql/{v}/bin").into(),
        None => panic!(
            "the PostgreSQL tests need a server: install the binaries (`apt-get install -y \
             postgresql-15`, as .ci/run does) or set {URL_VAR}=postgres://user:password@host:port/db"
        ),
    }
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

/// A loopback port nobody listens on right now.
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free loopback port")
        .port()
}

impl Server {
    /// A dedicated server (its data on a RAM-backed file system when there is one).
    pub fn dedicated() -> Self {
        Self::start(true)
    }

    /// A dedicated server with `ssl=on`, serving `tls.cert` (plain connections are still
    /// accepted, as by a default `pg_hba.conf`).
    pub fn with_tls(tls: &Tls<'_>) -> Self {
        Self::start_with(true, Some(tls))
    }

    /// A dedicated server with its data in the temp dir on disk (every commit pays a real
    /// flush), for measurements.
    pub fn start_on_disk() -> Self {
        Self::start(false)
    }

    /// Initialises a data directory and starts a server on a free loopback port.
    fn start(in_ram: bool) -> Self {
        Self::start_with(in_ram, None)
    }

    /// A dedicated server on loopback port `port` (one an earlier server used): another
    /// database cluster answering under the same URL.
    pub fn dedicated_on(port: u16) -> Self {
        Self::start_on(true, None, Some(port))
    }

    /// The loopback port it listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    fn start_with(in_ram: bool, tls: Option<&Tls<'_>>) -> Self {
        Self::start_on(in_ram, tls, None)
    }

    fn start_on(in_ram: bool, tls: Option<&Tls<'_>>, port: Option<u16>) -> Self {
        let bin = bin_dir();
        let as_postgres = is_root();
        let shm = Path::new("/dev/shm");
        let builder = {
            let mut b = tempfile::Builder::new();
            b.prefix("leasehold-pg-");
            b
        };
        let dir = if in_ram && shm.is_dir() {
            builder.tempdir_in(shm)
        } else {
            builder.tempdir()
        }
        .expect("temp dir")
        .keep();
        if as_postgres {
            run(Command::new("chown")
                .args(["-R", "postgres:postgres"])
                .arg(&dir));
        }
        let mut server = Self {
            bin,
            dir,
            port: 0,
            as_postgres,
            ssl: false,
        };
        // Only the catalog files are written unsynced; the server itself runs with the
        // default durability settings.
        server.run_pg(
            "initdb",
            &[
                "-D",
                &server.data().display().to_string(),
                "-A",
                "trust",
                "-U",
                "postgres",
                "-E",
                "UTF8",
                "--no-locale",
                "--no-sync",
            ],
        );
        server.watchdog();
        if let Some(tls) = tls {
            server.serve_tls(tls);
        }
        for attempt in 0.. {
            server.port = port.unwrap_or_else(free_port);
            if server.try_start() {
                return server;
            }
            assert!(
                attempt < 5,
                "the test server did not start: {}",
                server.log()
            );
        }
        unreachable!()
    }

    /// Copies the certificate and key into the data directory (the server insists on a key
    /// only its user can read), turns `ssl` on and puts `tls.hba` first in `pg_hba.conf`.
    fn serve_tls(&mut self, tls: &Tls<'_>) {
        let data = self.data();
        std::fs::copy(tls.cert, data.join("server.crt")).unwrap();
        std::fs::copy(tls.key, data.join("server.key")).unwrap();
        let hba = data.join("pg_hba.conf");
        let defaults = std::fs::read_to_string(&hba).unwrap();
        std::fs::write(&hba, format!("{}\n{defaults}", tls.hba.join("\n"))).unwrap();
        if self.as_postgres {
            run(Command::new("chown")
                .args([
                    "postgres:postgres",
                    "server.crt",
                    "server.key",
                    "pg_hba.conf",
                ])
                .current_dir(&data));
        }
        run(Command::new("chmod")
            .args(["600", "server.key"])
            .current_dir(&data));
        self.ssl = true;
    }

    fn data(&self) -> PathBuf {
        self.dir.join("data")
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("server.log")).unwrap_or_default()
    }

    /// Runs a server binary (as `postgres` when root) and returns whether it succeeded.
    fn pg(&self, program: &str, args: &[&str]) -> bool {
        let exe = self.bin.join(program);
        let mut cmd = if self.as_postgres {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(exe);
            c
        } else {
            Command::new(exe)
        };
        cmd.args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    }

    fn run_pg(&self, program: &str, args: &[&str]) {
        assert!(
            self.pg(program, args),
            "{program} {args:?} failed: {}",
            self.log()
        );
    }

    fn try_start(&self) -> bool {
        let options = format!(
            "-p {} -k {} -c listen_addresses=127.0.0.1 -c max_connections=300 -c ssl={}",
            self.port,
            self.dir.display(),
            if self.ssl { "on" } else { "off" },
        );
        self.pg(
            "pg_ctl",
            &[
                "-D",
                &self.data().display().to_string(),
                "-l",
                &self.dir.join("server.log").display().to_string(),
                "-w",
                "-t",
                "120",
                "-o",
                &options,
                "start",
            ],
        )
    }

    /// Stops the server when this test process is gone (whatever killed it) and removes its
    /// directory. Detached from the test's output so `cargo test` never waits for it; it
    /// outlives this process by design, so it is never waited for.
    #[allow(clippy::zombie_processes)]
    fn watchdog(&self) {
        let data = self.data().display().to_string();
        let dir = self.dir.display().to_string();
        let pg_ctl = self.bin.join("pg_ctl").display().to_string();
        let stop = if self.as_postgres {
            format!("runuser -u postgres -- {pg_ctl} -D {data} stop -m immediate")
        } else {
            format!("{pg_ctl} -D {data} stop -m immediate")
        };
        let script = format!(
            "while kill -0 {pid} 2>/dev/null; do sleep 1; done; {stop} >/dev/null 2>&1; rm -rf {dir}",
            pid = std::process::id()
        );
        Command::new("sh")
            .args(["-c", &script])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start the server watchdog");
    }

    /// The superuser URL of the `postgres` database.
    pub fn admin_url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }

    /// A fresh database on this server.
    pub fn database(&self) -> Database {
        create_database(&self.admin_url())
    }

    /// A fresh database called `name` on this server.
    pub fn database_named(&self, name: &str) -> Database {
        create_named(&self.admin_url(), name.to_owned())
    }

    /// Restarts the server (fast shutdown: sessions are ended, committed data stays).
    pub fn restart(&self) {
        self.run_pg(
            "pg_ctl",
            &[
                "-D",
                &self.data().display().to_string(),
                "-w",
                "-t",
                "120",
                "-m",
                "fast",
                "restart",
            ],
        );
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.pg(
            "pg_ctl",
            &[
                "-D",
                &self.data().display().to_string(),
                "stop",
                "-m",
                "immediate",
            ],
        );
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn run(cmd: &mut Command) {
    let status = cmd.status().expect("run a command");
    assert!(status.success(), "{cmd:?} failed");
}
