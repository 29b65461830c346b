//! TLS to PostgreSQL against real servers: one throwaway server with `ssl=on` serving a
//! certificate signed by a CA this test makes (`openssl`), and one without TLS. Every
//! answer about encryption is the server's own (`pg_stat_ssl` for the store's sessions);
//! every refusal names the check that failed, in one line, without the password.
//!
//! The server certificate names `localhost` and `127.0.0.1`; other host names are asked
//! for with `hostaddr=127.0.0.1`, so every connection stays on loopback.

#![cfg(feature = "postgres")]
#![allow(clippy::unwrap_used)]

#[path = "support/mod.rs"]
mod support;

use support::leasehold;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use leasehold::store::Backend;
use leasehold::store::postgres::PostgresBackend;
use leasehold::store::url::OpenMode;

use support::authorities::Authorities;
use support::postgres::{Database, Server, Tls};

const SECRET: &str = "s3cr3t-TLS-Pa55word";

/// The role that must authenticate with SCRAM over TLS (a `hostssl` line of its own).
const SCRAM_USER: &str = "scram_user";

/// The certificates, and the two servers of this test binary.
struct Fixture {
    dir: tempfile::TempDir,
    tls: Server,
    plain: Server,
}

impl Fixture {
    /// The CA that signed the server's certificate.
    fn ca(&self) -> PathBuf {
        self.dir.path().join("ca.pem")
    }

    /// A CA that signed nothing the server holds.
    fn other_ca(&self) -> PathBuf {
        self.dir.path().join("other-ca.pem")
    }

    /// The server's private key (never a valid root file).
    fn server_key(&self) -> PathBuf {
        self.dir.path().join("server.key")
    }
}

fn fixture() -> &'static Fixture {
    static FIXTURE: OnceLock<Fixture> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        make_certificates(dir.path());
        let tls = Server::with_tls(&Tls {
            cert: &dir.path().join("server.pem"),
            key: &dir.path().join("server.key"),
            hba: &[&format!(
                "hostssl all {SCRAM_USER} 127.0.0.1/32 scram-sha-256"
            )],
        });
        let plain = Server::dedicated();
        Fixture { dir, tls, plain }
    })
}

/// Runs `openssl` in `dir`.
fn openssl(dir: &Path, args: &[&str]) {
    let o = Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("the openssl command line (package openssl)");
    assert!(
        o.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// A CA, a server certificate it signs for `localhost` / `127.0.0.1`, and an unrelated CA.
fn make_certificates(dir: &Path) {
    let ec = [
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
    ];
    for (name, subject) in [
        ("ca", "/CN=leasehold test CA"),
        ("other-ca", "/CN=another CA"),
    ] {
        let key = format!("{name}.key");
        let cert = format!("{name}.pem");
        let args = [
            &["req", "-x509"][..],
            &ec,
            &[
                "-keyout", &key, "-out", &cert, "-days", "3", "-subj", subject,
            ],
            &[
                "-addext",
                "basicConstraints=critical,CA:TRUE",
                "-addext",
                "keyUsage=critical,keyCertSign,cRLSign",
            ],
        ]
        .concat();
        openssl(dir, &args);
    }
    let args = [
        &["req"][..],
        &ec,
        &[
            "-keyout",
            "server.key",
            "-out",
            "server.csr",
            "-subj",
            "/CN=localhost",
        ],
    ]
    .concat();
    openssl(dir, &args);
    std::fs::write(
        dir.join("server.ext"),
        "subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=CA:FALSE\n\
         keyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n",
    )
    .unwrap();
    openssl(
        dir,
        &[
            "x509",
            "-req",
            "-in",
            "server.csr",
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-out",
            "server.pem",
            "-days",
            "3",
            "-extfile",
            "server.ext",
        ],
    );
}

/// The database's name, the last path segment of its URL.
fn name(db: &Database) -> &str {
    db.url().rsplit('/').next().unwrap()
}

/// A URL for `db` as `user@host` (connecting to 127.0.0.1 whatever the name) with `params`.
fn url(db: &Database, user: &str, host: &str, params: &str) -> String {
    let port = db
        .url()
        .rsplit_once(':')
        .and_then(|(_, rest)| rest.split('/').next())
        .unwrap();
    let mut url = format!(
        "postgres://{user}@{host}:{port}/{}?hostaddr=127.0.0.1",
        name(db)
    );
    if !params.is_empty() {
        url.push('&');
        url.push_str(params);
    }
    url
}

/// Whether each of the store's sessions on `server` is encrypted, as the server sees them.
fn sessions_over_tls(server: &Server, db: &Database) -> Vec<bool> {
    let mut admin = postgres::Client::connect(&server.admin_url(), postgres::NoTls).unwrap();
    admin
        .query(
            "SELECT s.ssl FROM pg_stat_ssl s JOIN pg_stat_activity a USING (pid)
             WHERE a.datname = $1 AND a.application_name = 'leasehold'",
            &[&name(db)],
        )
        .unwrap()
        .iter()
        .map(|row| row.get(0))
        .collect()
}

/// Opens a store at `url`, runs a query through it, and checks that every session of the
/// store is `encrypted` or not, as the server sees it.
fn assert_sessions(server: &Server, db: &Database, url: &str, encrypted: bool) {
    let store =
        PostgresBackend::open(url, OpenMode::ReadWrite).unwrap_or_else(|e| panic!("{url}: {e}"));
    store.change_token().unwrap();
    let sessions = sessions_over_tls(server, db);
    assert!(!sessions.is_empty(), "{url}: no session of the store");
    assert!(
        sessions.iter().all(|&ssl| ssl == encrypted),
        "{url}: sessions encrypted {sessions:?}, expected {encrypted}"
    );
}

/// The refusal of `url`: one line, without the password.
fn refusal(url: &str) -> String {
    let e = match PostgresBackend::open(url, OpenMode::ReadWrite) {
        Ok(store) => panic!("{url}: expected a refusal, opened {}", store.describe()),
        Err(e) => e,
    };
    let text = e.to_string();
    assert!(!text.contains('\n'), "{text}");
    assert!(!text.contains(SECRET), "{text}");
    text
}

fn with_secret(user: &str) -> String {
    format!("{user}:{SECRET}")
}

#[test]
fn require_encrypts_without_checking_the_certificate() {
    let f = fixture();
    let db = f.tls.database();
    // A name the certificate does not carry and no CA: encrypted all the same.
    let url = url(&db, "postgres", "db.other.test", "sslmode=require");
    assert_sessions(&f.tls, &db, &url, true);
}

#[test]
fn prefer_is_the_default_and_encrypts_when_the_server_offers_it() {
    let f = fixture();
    let db = f.tls.database();
    assert_sessions(&f.tls, &db, &url(&db, "postgres", "localhost", ""), true);
    let url = url(&db, "postgres", "localhost", "sslmode=prefer");
    assert_sessions(&f.tls, &db, &url, true);
}

#[test]
fn disable_never_uses_tls() {
    let f = fixture();
    let db = f.tls.database();
    let url = url(&db, "postgres", "localhost", "sslmode=disable");
    assert_sessions(&f.tls, &db, &url, false);
}

#[test]
fn verify_full_with_the_test_ca_connects_by_name_and_by_address() {
    let f = fixture();
    let db = f.tls.database();
    let ca = format!("sslmode=verify-full&sslrootcert={}", f.ca().display());
    for host in ["localhost", "127.0.0.1"] {
        let url = url(&db, "postgres", host, &ca);
        assert_sessions(&f.tls, &db, &url, true);
    }
}

#[test]
fn verify_full_refuses_a_certificate_for_another_host_name() {
    let f = fixture();
    let db = f.tls.database();
    let ca = format!("sslmode=verify-full&sslrootcert={}", f.ca().display());
    let text = refusal(&url(&db, &with_secret("postgres"), "db.other.test", &ca));
    assert!(text.starts_with("STORE_REFUSED: "), "{text}");
    assert!(text.contains("name mismatch"), "{text}");
    assert!(text.contains("\"db.other.test\""), "{text}");
    assert!(text.contains("(it names localhost, 127.0.0.1)"), "{text}");
}

#[test]
fn verify_ca_checks_the_ca_and_not_the_name() {
    let f = fixture();
    let db = f.tls.database();
    let right = format!("sslmode=verify-ca&sslrootcert={}", f.ca().display());
    let url_right = url(&db, "postgres", "db.other.test", &right);
    assert_sessions(&f.tls, &db, &url_right, true);

    let other = f.other_ca().display().to_string();
    for params in [
        format!("sslmode=verify-ca&sslrootcert={other}"),
        format!("sslmode=verify-full&sslrootcert={other}"),
        // libpq's rule: a CA given to `require` is checked too.
        format!("sslmode=require&sslrootcert={other}"),
    ] {
        let text = refusal(&url(&db, &with_secret("postgres"), "localhost", &params));
        assert!(text.starts_with("STORE_REFUSED: "), "{params}: {text}");
        assert!(text.contains("unknown CA"), "{params}: {text}");
        assert!(
            text.contains(&format!("sslrootcert={other}")),
            "{params}: {text}"
        );
    }
}

#[test]
fn verify_full_without_sslrootcert_trusts_the_system_roots_only() {
    let f = fixture();
    let db = f.tls.database();
    for params in ["sslmode=verify-full", "sslrootcert=system"] {
        let text = refusal(&url(&db, &with_secret("postgres"), "localhost", params));
        assert!(text.contains("unknown CA"), "{params}: {text}");
        assert!(text.contains("system's root CAs"), "{params}: {text}");
    }
}

#[test]
fn require_refuses_a_server_without_tls() {
    let f = fixture();
    let db = f.plain.database();
    for mode in ["require", "verify-ca", "verify-full"] {
        let params = format!("sslmode={mode}&sslrootcert={}", f.ca().display());
        let text = refusal(&url(&db, &with_secret("postgres"), "localhost", &params));
        assert!(text.starts_with("STORE_REFUSED: "), "{mode}: {text}");
        assert!(
            text.contains("server does not support TLS"),
            "{mode}: {text}"
        );
    }
}

#[test]
fn prefer_falls_back_to_plain_text_without_tls() {
    let f = fixture();
    let db = f.plain.database();
    let url = url(&db, "postgres", "localhost", "sslmode=prefer");
    assert_sessions(&f.plain, &db, &url, false);
}

#[test]
fn a_bad_sslrootcert_is_refused_before_connecting() {
    let f = fixture();
    let db = f.tls.database();
    let missing = f.dir.path().join("missing.pem");
    let key = std::fs::read_to_string(f.server_key()).unwrap();
    let key_body: String = key.lines().filter(|l| !l.starts_with("-----")).collect();
    for (root, why) in [
        (&missing, "cannot read it"),
        (&f.server_key(), "no certificate"),
    ] {
        let params = format!("sslmode=verify-full&sslrootcert={}", root.display());
        let text = refusal(&url(&db, &with_secret("postgres"), "localhost", &params));
        assert!(text.starts_with("INVALID: "), "{text}");
        assert!(
            text.contains(&format!("sslrootcert={}", root.display())),
            "{text}"
        );
        assert!(text.contains(why), "{text}");
        assert!(
            !text.contains(&key_body[..16]),
            "key material printed: {text}"
        );
    }
    assert!(sessions_over_tls(&f.tls, &db).is_empty());
}

#[test]
fn scram_over_tls_is_bound_to_the_certificate_and_never_prints_the_password() {
    let f = fixture();
    let db = f.tls.database();
    let mut admin = postgres::Client::connect(&f.tls.admin_url(), postgres::NoTls).unwrap();
    admin
        .batch_execute(&format!(
            "CREATE ROLE {SCRAM_USER} LOGIN PASSWORD '{SECRET}';
             ALTER DATABASE \"{}\" OWNER TO {SCRAM_USER}",
            name(&db)
        ))
        .unwrap();
    let ca = format!(
        "sslmode=verify-full&sslrootcert={}&channel_binding=require",
        f.ca().display()
    );
    let good = url(&db, &with_secret(SCRAM_USER), "localhost", &ca);
    assert_sessions(&f.tls, &db, &good, true);

    let wrong = good.replace(SECRET, "not-the-password");
    let text = refusal(&wrong);
    assert!(text.starts_with("STORE_REFUSED: "), "{text}");
    assert!(text.contains("password authentication failed"), "{text}");
    assert!(!text.contains("not-the-password"), "{text}");
}

#[test]
fn the_cli_works_over_tls_and_states_a_failed_check_in_one_line() {
    let f = fixture();
    let db = f.tls.database();
    let ca = format!("sslmode=verify-full&sslrootcert={}", f.ca().display());
    let good = url(&db, &with_secret("postgres"), "localhost", &ca);
    for args in [
        vec!["init", &good],
        vec!["inspect", "--store", &good, "work"],
    ] {
        let o = leasehold(&args);
        assert!(
            o.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        assert!(!String::from_utf8_lossy(&o.stdout).contains(SECRET));
    }

    let wrong = url(&db, &with_secret("postgres"), "db.other.test", &ca);
    let o = leasehold(&["inspect", "--store", &wrong, "work"]);
    assert_eq!(o.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    assert!(stderr.contains("STORE_REFUSED: "), "{stderr}");
    assert!(stderr.contains("name mismatch"), "{stderr}");
    assert!(!stderr.contains(SECRET), "{stderr}");

    // An authority against a server it will never trust exits at once with that line
    // (exit 2), rather than wait for a store that is not down.
    let mut auth = Authorities::new();
    auth.spawn("auth-refused", &wrong);
    let status = auth.wait_exit("auth-refused", Instant::now() + Duration::from_secs(30));
    assert_eq!(status.code(), Some(2));
    let log = std::fs::read_to_string(auth.log("auth-refused")).unwrap();
    assert_eq!(log.trim_end().lines().count(), 1, "{log}");
    assert!(log.contains("STORE_REFUSED: "), "{log}");
    assert!(log.contains("name mismatch"), "{log}");
    assert!(!log.contains(SECRET), "{log}");
}
