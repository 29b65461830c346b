//! Handlers from any language: `exec` commands and `http` endpoints named in a handler
//! config file, run by an authority like any async handler. For each kind: success (what
//! the handler saw is what the store holds), a retryable failure whose `delayMs` holds the
//! retry back, a terminal failure, no answer (a `BAD_ANSWER` unless the file's
//! `require_answer = false` accepts it), a timeout, a crash or a refused connection, and
//! the stop on a lost lease (SIGTERM to the command, a dropped connection to the server). Then: an
//! item whose handler the file does not name stays pending; bad config files are refused in
//! one line naming the file, line and key, with nothing written; and two real
//! `leasehold authority --config` processes, one killed with SIGKILL mid-handler, finish
//! everything with `leasehold check` clean (and no command saw the store URL the
//! authorities read from their environment).
//!
//! The in-process authorities read a manual clock (the test moves it to lapse a lease or
//! reach a retry); the handlers are real Python processes and a real HTTP server on
//! loopback, and every wait is on a condition with a generous deadline.

#![allow(clippy::unwrap_used)]

#[path = "support/mod.rs"]
#[macro_use]
mod support;

use support::leasehold;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;

use leasehold::Store;
use leasehold::authority::external::HandlerConfig;
use leasehold::authority::{Authority, AuthorityConfig};
use leasehold::clock::{Clock, ManualClock};
use leasehold::model::HandlerVersion;
use leasehold::model::work::NewWork;
use leasehold::model::{FailureClass, WorkItem, WorkState};
use serde_json::{Value, json};

use support::Harness;
use support::runtime::RUNNING;
use support::wait::{wait_until, within};

/// A lease short enough to lapse when the test moves the clock.
const LEASE_MS: i64 = 1_000;

fn compat() -> HandlerVersion {
    HandlerVersion::demo()
}

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/handlers")
        .join(name)
}

/// One test's world: a memory store on a manual clock, a temp dir for the config file,
/// journals and markers, and a tokio runtime for the authority.
struct World {
    h: Box<dyn Harness>,
    dir: tempfile::TempDir,
    rt: tokio::runtime::Runtime,
    /// The handler versions of the config last started: what its work is stamped for.
    versions: std::sync::Mutex<std::collections::BTreeMap<String, HandlerVersion>>,
}

impl World {
    fn new() -> Self {
        Self {
            h: support::memory(),
            dir: tempfile::tempdir().unwrap(),
            rt: tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .unwrap(),
            versions: std::sync::Mutex::default(),
        }
    }

    fn store(&self) -> Store {
        self.h.store()
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// Writes the handler config file.
    fn config(&self, text: &str) -> PathBuf {
        let path = self.path("handlers.toml");
        std::fs::write(&path, text).unwrap();
        path
    }

    /// A config with the exec fixture as handler `mail`.
    fn exec_config(&self, timeout: &str, kill_grace: &str) -> PathBuf {
        self.exec_config_with(timeout, kill_grace, "")
    }

    /// [`Self::exec_config`] with `extra` lines in the handler's table.
    fn exec_config_with(&self, timeout: &str, kill_grace: &str, extra: &str) -> PathBuf {
        self.config(&format!(
            "[handlers.mail]\nversion = \"1.2.0\"\nexec = [\"python3\", {script:?}]\n\
             timeout = {timeout:?}\nkill_grace = {kill_grace:?}\n\
             env = {{ LEASEHOLD_TEST_JOURNAL = {journal:?} }}\n{extra}",
            script = fixture("exec_handler.py").display().to_string(),
            journal = self.path("journal").display().to_string(),
        ))
    }

    /// A config with `url` as handler `charge`.
    fn http_config(&self, url: &str, timeout: &str) -> PathBuf {
        self.http_config_with(url, timeout, "")
    }

    /// [`Self::http_config`] with `extra` lines in the handler's table.
    fn http_config_with(&self, url: &str, timeout: &str, extra: &str) -> PathBuf {
        self.config(&format!(
            "[handlers.charge]\nversion = \"2.0.0\"\nhttp = {url:?}\ntimeout = {timeout:?}\n{extra}"
        ))
    }

    /// Starts authority `a` with the handlers of the config file at `path`.
    fn start(&self, path: &Path) -> Authority {
        let handlers = HandlerConfig::load(path)
            .expect("a valid config")
            .workload();
        *self.versions.lock().unwrap() = handlers.handler_versions();
        let config = AuthorityConfig {
            poll_interval_ms: 10,
            heartbeat_interval_ms: 100,
            ..AuthorityConfig::new("a", "v1").with_timing(LEASE_MS, 100)
        };
        self.rt
            .block_on(
                Authority::builder(self.store(), config)
                    .handlers(&handlers)
                    .shutdown_grace_ms(0)
                    .start(),
            )
            .expect("starts")
    }

    fn stop(&self, authority: Authority) {
        self.rt.block_on(authority.shutdown()).expect("stops");
    }

    /// Enqueues effect `id` for `handler` with `payload` plus `dir` (where markers go),
    /// stamped for the version the started config declares (the built-in one for a
    /// handler it does not name).
    fn enqueue(&self, id: &str, handler: &str, mut payload: Value) {
        payload["dir"] = json!(self.dir.path());
        let version = self
            .versions
            .lock()
            .unwrap()
            .get(handler)
            .cloned()
            .unwrap_or_else(compat);
        let created = self
            .store()
            .enqueue(NewWork::effect(id, handler, payload.to_string()), &version)
            .unwrap();
        assert!(created);
    }

    fn item(&self, id: &str) -> WorkItem {
        self.store().work(id).unwrap().unwrap()
    }

    fn wait_state(&self, id: &str, state: WorkState) -> WorkItem {
        wait_until(&format!("{id} {state:?}"), within(RUNNING), || {
            self.item(id).state == state
        });
        self.item(id)
    }

    fn wait_file(&self, name: &str) -> String {
        let path = self.path(name);
        wait_until(name, within(RUNNING), || path.exists());
        // Written in one call by the fixture; it may be caught between create and write.
        wait_until(&format!("{name} written"), within(RUNNING), || {
            !std::fs::read_to_string(&path)
                .unwrap_or_default()
                .is_empty()
        });
        std::fs::read_to_string(&path).unwrap()
    }

    /// The requests the handler saw, in order (the fixtures append one JSON line each).
    fn journal(&self) -> Vec<Value> {
        std::fs::read_to_string(self.path("journal"))
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    /// Takes `id` over as authority `b` on a clock past `a`'s lease: `a`'s next renewal
    /// is refused and its handler told the lease is lost.
    fn take_over(&self, id: &str) -> WorkItem {
        let later = ManualClock::new(self.h.clock().now() + 60_000);
        let other = self.h.reopen().with_clock(Arc::new(later));
        // An authority of the same code: it runs the item's key.
        let key = other.work(id).unwrap().expect("exists").compat;
        other
            .claim(id, "b", &key, LEASE_MS * 1_000)
            .expect("b reclaims a lapsed claim")
    }

    /// Moves the clock to `at` and waits until the authority has polled there: a probe
    /// item enqueued now is done. Anything due at `at` was offered in that poll too.
    fn poll_at(&self, at: i64, handler: &str, probe: &str) {
        self.h.clock().set(at);
        self.enqueue(probe, handler, json!({ "mode": "ok" }));
        self.wait_state(probe, WorkState::Succeeded);
    }
}

fn failure(item: &WorkItem) -> (FailureClass, String, String) {
    let f = item.last_failure.clone().expect("a failure");
    (f.class, f.code, f.message)
}

fn pid_alive(pid: &str) -> bool {
    Path::new("/proc").join(pid.trim()).exists()
}

/// The HTTP fixture server on a free loopback port; killed on drop.
struct Server {
    child: Child,
    port: u16,
}

impl Server {
    fn start(journal: &Path) -> Self {
        let mut child = Command::new("python3")
            .arg(fixture("http_server.py"))
            .arg(journal)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("python3 runs the fixture server");
        let mut first = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut first)
            .unwrap();
        let port = first.trim().parse().expect("the server prints its port");
        Self { child, port }
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}/charge", self.port)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

// --- exec --------------------------------------------------------------------------------

/// The command gets the attempt the store holds, log lines before its answer are ignored,
/// and the answer's output is the item's result.
#[test]
fn exec_success_answers_with_the_attempt_the_store_holds() {
    let w = World::new();
    let authority = w.start(&w.exec_config("60s", "5s"));
    w.enqueue(
        "e1",
        "mail",
        json!({ "mode": "ok", "to": "ann@example.com" }),
    );
    let done = w.wait_state("e1", WorkState::Succeeded);
    w.stop(authority);

    let result: Value = serde_json::from_str(done.result.as_deref().unwrap()).unwrap();
    assert_eq!(
        result,
        json!({ "key": done.idempotency_key, "attempt": 1, "checkpoint": null })
    );
    let seen = &w.journal()[0];
    for (field, expected) in [
        ("workId", json!(done.id)),
        ("kind", json!("effect")),
        ("handler", json!("mail")),
        ("version", json!("1.2.0")),
        ("logicalEffectId", json!(done.logical_effect_id)),
        ("idempotencyKey", json!(done.idempotency_key)),
        ("attempt", json!(done.attempt_number)),
        ("ownerId", json!("a")),
        ("generation", json!(done.generation)),
        ("events", json!([])),
    ] {
        assert_eq!(seen[field], expected, "{field}");
    }
    assert_eq!(seen["payload"]["to"], "ann@example.com");
}

/// A command that exits 0 without an answer — silent, or printing only lines that are
/// not one — is a retryable `BAD_ANSWER`, not a success with no result; a handler whose
/// table says `require_answer = false` succeeds that way, with no result.
#[test]
fn exec_without_an_answer_is_a_bad_answer_unless_the_file_allows_it() {
    let w = World::new();
    let authority = w.start(&w.exec_config("60s", "5s"));
    w.enqueue("silent", "mail", json!({ "mode": "silent" }));
    w.enqueue("garbage", "mail", json!({ "mode": "garbage" }));
    for id in ["silent", "garbage"] {
        let (class, code, message) = failure(&w.wait_state(id, WorkState::Retry));
        assert_eq!(
            (class, code.as_str()),
            (FailureClass::Retryable, "BAD_ANSWER")
        );
        assert!(
            message.contains("exited 0 without printing an answer"),
            "{message}"
        );
        assert!(message.contains("require_answer = false"), "{message}");
    }
    w.stop(authority);

    let authority = w.start(&w.exec_config_with("60s", "5s", "require_answer = false\n"));
    w.enqueue("quiet", "mail", json!({ "mode": "silent" }));
    let quiet = w.wait_state("quiet", WorkState::Succeeded);
    w.stop(authority);
    assert_eq!(quiet.result, None, "exit 0 without an answer is ok(null)");
}

/// `{"retry": {"delayMs": N}}` is not retried before N, though the backoff is shorter.
#[test]
fn exec_retry_waits_for_the_delay_the_handler_asked() {
    let w = World::new();
    let authority = w.start(&w.exec_config("60s", "5s"));
    w.enqueue("r1", "mail", json!({ "mode": "retry", "delayMs": 60_000 }));
    let retry = w.wait_state("r1", WorkState::Retry);
    assert_eq!(
        failure(&retry),
        (
            FailureClass::Retryable,
            "RATE_LIMITED".into(),
            "slow down".into()
        )
    );
    assert_eq!(retry.next_eligible_at - retry.updated_at, 60_000);
    w.poll_at(retry.next_eligible_at - 1, "mail", "probe");
    assert_eq!(w.item("r1").state, WorkState::Retry, "not before the delay");
    w.h.clock().set(retry.next_eligible_at);
    let done = w.wait_state("r1", WorkState::Succeeded);
    w.stop(authority);
    assert_eq!(done.attempt_number, 2);
}

#[test]
fn exec_fail_is_terminal() {
    let w = World::new();
    let authority = w.start(&w.exec_config("60s", "5s"));
    w.enqueue("f1", "mail", json!({ "mode": "fail" }));
    let failed = w.wait_state("f1", WorkState::Failed);
    w.stop(authority);
    assert_eq!(
        failure(&failed),
        (
            FailureClass::Terminal,
            "BAD_ADDRESS".into(),
            "no such mailbox".into()
        )
    );
    assert_eq!(failed.attempt_number, 1);
}

/// A program path holding a `/` and `cwd` resolve against the config file's directory,
/// and `env` reaches the command.
#[test]
fn exec_paths_resolve_against_the_config_file() {
    let w = World::new();
    let bin = w.path("bin");
    std::fs::create_dir(&bin).unwrap();
    std::os::unix::fs::symlink(fixture("exec_handler.py"), bin.join("mail.py")).unwrap();
    let path = w.config(&format!(
        "[handlers.mail]\nversion = \"1.0.0\"\nexec = [\"bin/mail.py\"]\ncwd = \"bin\"\n\
         env = {{ MODE = \"live\", LEASEHOLD_TEST_JOURNAL = {:?} }}\n",
        w.path("journal").display().to_string()
    ));
    let authority = w.start(&path);
    w.enqueue("rel", "mail", json!({ "mode": "ok" }));
    w.wait_state("rel", WorkState::Succeeded);
    w.stop(authority);
    let seen = &w.journal()[0];
    assert_eq!(seen["cwd"], json!(bin.canonicalize().unwrap()));
    assert_eq!(seen["mode"], "live");
}

/// Without an answer: a non-zero exit is a retryable `EXIT_<n>` with the last stderr line;
/// a death by signal is an uncertain attempt, retried with the same idempotency key once
/// the claim lapses.
#[test]
fn exec_crashes_fall_back_on_the_exit_status() {
    let w = World::new();
    let authority = w.start(&w.exec_config("60s", "5s"));
    w.enqueue("x75", "mail", json!({ "mode": "exit", "code": 75 }));
    w.enqueue("x3", "mail", json!({ "mode": "exit", "code": 3 }));
    for (id, code) in [("x75", "EXIT_75"), ("x3", "EXIT_3")] {
        let retry = w.wait_state(id, WorkState::Retry);
        assert_eq!(
            failure(&retry),
            (
                FailureClass::Retryable,
                code.into(),
                "connection to smtp.example refused".into()
            )
        );
    }
    w.enqueue("killed", "mail", json!({ "mode": "signal" }));
    wait_until("the killed attempt", within(RUNNING), || {
        w.journal().iter().any(|r| r["workId"] == "killed")
    });
    let claimed = w.item("killed");
    assert_eq!(claimed.state, WorkState::Claimed, "nothing recorded");
    // The claim is no longer renewed: past its lease and the backoff it runs again.
    w.h.clock().advance(LEASE_MS + 60_000);
    let done = w.wait_state("killed", WorkState::Succeeded);
    w.stop(authority);
    assert_eq!((done.attempt_number, done.uncertain_attempts), (2, 1));
    let keys: Vec<Value> = w
        .journal()
        .iter()
        .filter(|r| r["workId"] == "killed")
        .map(|r| r["idempotencyKey"].clone())
        .collect();
    assert_eq!(
        keys,
        [json!(done.idempotency_key), json!(done.idempotency_key)]
    );
}

/// A command past its timeout gets SIGTERM (the fixture notes it and exits) and is a
/// retryable `TIMEOUT`; one that ignores SIGTERM is killed after the kill grace.
#[test]
fn exec_timeout_terminates_then_kills() {
    let w = World::new();
    let authority = w.start(&w.exec_config("6s", "1s"));
    w.enqueue("t1", "mail", json!({ "mode": "hang" }));
    w.enqueue("t2", "mail", json!({ "mode": "stubborn" }));
    for id in ["t1", "t2"] {
        let retry = w.wait_state(id, WorkState::Retry);
        let (class, code, _) = failure(&retry);
        assert_eq!((class, code.as_str()), (FailureClass::Retryable, "TIMEOUT"));
        let pid = w.wait_file(&format!("started-{id}"));
        assert_eq!(
            w.wait_file(&format!("terminated-{id}")),
            pid,
            "SIGTERM came"
        );
        assert!(!pid_alive(&pid), "{id} (pid {pid}) was left running");
    }
    w.stop(authority);
}

/// A checkpoint line is saved under the fence; the next attempt starts from it.
#[test]
fn exec_checkpoint_lines_carry_to_the_next_attempt() {
    let w = World::new();
    let authority = w.start(&w.exec_config("60s", "5s"));
    w.enqueue("c1", "mail", json!({ "mode": "checkpoint" }));
    let retry = w.wait_state("c1", WorkState::Retry);
    assert_eq!(retry.checkpoint.as_deref(), Some("page-2"));
    w.h.clock().set(retry.next_eligible_at);
    let done = w.wait_state("c1", WorkState::Succeeded);
    w.stop(authority);
    let result: Value = serde_json::from_str(done.result.as_deref().unwrap()).unwrap();
    assert_eq!(result["checkpoint"], "page-2");
}

/// Another authority takes the item over: the command gets SIGTERM and whatever it would
/// have answered never lands.
#[test]
fn exec_lease_loss_terminates_the_command() {
    let w = World::new();
    let authority = w.start(&w.exec_config("60s", "5s"));
    w.enqueue("long", "mail", json!({ "mode": "hang" }));
    let pid = w.wait_file("started-long");
    let taken = w.take_over("long");
    assert_eq!(w.wait_file("terminated-long"), pid);
    wait_until("the command gone", within(RUNNING), || !pid_alive(&pid));
    w.stop(authority);
    let item = w.item("long");
    assert_eq!(
        (item.state, item.owner_id.as_deref(), item.generation),
        (WorkState::Claimed, Some("b"), taken.generation)
    );
    assert_eq!(item.last_failure, None);
}

// --- http --------------------------------------------------------------------------------

/// The attempt is POSTed as JSON with its idempotency key in a header; a chunked answer is
/// read; one after another, attempts reuse the connection.
#[test]
fn http_success_posts_the_attempt_and_reuses_the_connection() {
    let w = World::new();
    let server = Server::start(&w.path("journal"));
    let authority = w.start(&w.http_config(&server.url(), "60s"));
    w.enqueue("h1", "charge", json!({ "mode": "ok", "amount": 12 }));
    let first = w.wait_state("h1", WorkState::Succeeded);
    // A 204 is no answer: a handler that never ran could have been answered so by a proxy.
    w.enqueue("h2", "charge", json!({ "mode": "empty" }));
    let second = w.wait_state("h2", WorkState::Retry);
    w.stop(authority);

    let result: Value = serde_json::from_str(first.result.as_deref().unwrap()).unwrap();
    assert_eq!(
        result,
        json!({ "key": first.idempotency_key, "attempt": 1 })
    );
    let (class, code, message) = failure(&second);
    assert_eq!(
        (class, code.as_str()),
        (FailureClass::Retryable, "BAD_ANSWER")
    );
    assert!(
        message.contains("204 response with an empty body"),
        "{message}"
    );
    let seen = w.journal();
    assert_eq!(seen.len(), 2);
    assert_eq!(seen[0]["idempotencyKey"], json!(first.idempotency_key));
    assert_eq!(seen[0]["contentType"], "application/json");
    let attempt = &seen[0]["attempt"];
    for (field, expected) in [
        ("workId", json!("h1")),
        ("handler", json!("charge")),
        ("version", json!("2.0.0")),
        ("ownerId", json!("a")),
        ("generation", json!(first.generation)),
        ("attempt", json!(1)),
    ] {
        assert_eq!(attempt[field], expected, "{field}");
    }
    assert_eq!(attempt["payload"]["amount"], 12);
    assert_eq!(
        seen[0]["clientPort"], seen[1]["clientPort"],
        "the second request went over the first one's connection"
    );

    let quiet = w.http_config_with(&server.url(), "60s", "require_answer = false\n");
    let authority = w.start(&quiet);
    w.enqueue("h3", "charge", json!({ "mode": "empty" }));
    let third = w.wait_state("h3", WorkState::Succeeded);
    w.stop(authority);
    assert_eq!(
        third.result, None,
        "with require_answer off, 204 is ok(null)"
    );
}

/// A `retry` answer's delay holds the retry back; a 503 without an answer is a retryable
/// `HTTP_503`.
#[test]
fn http_retry_waits_for_the_delay_the_handler_asked() {
    let w = World::new();
    let server = Server::start(&w.path("journal"));
    let authority = w.start(&w.http_config(&server.url(), "60s"));
    w.enqueue(
        "r1",
        "charge",
        json!({ "mode": "retry", "delayMs": 45_000 }),
    );
    w.enqueue("busy", "charge", json!({ "mode": "unavailable" }));
    let retry = w.wait_state("r1", WorkState::Retry);
    assert_eq!(failure(&retry).1, "RATE_LIMITED");
    assert_eq!(retry.next_eligible_at - retry.updated_at, 45_000);
    let busy = w.wait_state("busy", WorkState::Retry);
    assert_eq!(
        failure(&busy),
        (
            FailureClass::Retryable,
            "HTTP_503".into(),
            "overloaded".into()
        )
    );
    w.poll_at(retry.next_eligible_at - 1, "charge", "probe");
    assert_eq!(w.item("r1").state, WorkState::Retry, "not before the delay");
    w.h.clock().set(retry.next_eligible_at);
    assert_eq!(w.wait_state("r1", WorkState::Succeeded).attempt_number, 2);
    w.stop(authority);
}

/// A `fail` answer (whatever the status) and a 4xx without one are terminal.
#[test]
fn http_fail_and_client_errors_are_terminal() {
    let w = World::new();
    let server = Server::start(&w.path("journal"));
    let authority = w.start(&w.http_config(&server.url(), "60s"));
    w.enqueue("declined", "charge", json!({ "mode": "fail" }));
    w.enqueue("lost", "charge", json!({ "mode": "missing" }));
    let declined = w.wait_state("declined", WorkState::Failed);
    let lost = w.wait_state("lost", WorkState::Failed);
    w.stop(authority);
    assert_eq!(
        failure(&declined),
        (
            FailureClass::Terminal,
            "CARD_DECLINED".into(),
            "insufficient funds".into()
        )
    );
    assert_eq!(
        failure(&lost),
        (
            FailureClass::Terminal,
            "HTTP_404".into(),
            "no such route".into()
        )
    );
}

/// No answer within the timeout: a retryable `TIMEOUT`, and the server sees the
/// connection close.
#[test]
fn http_timeout_is_retryable_and_drops_the_connection() {
    let w = World::new();
    let server = Server::start(&w.path("journal"));
    let authority = w.start(&w.http_config(&server.url(), "3s"));
    w.enqueue("slow", "charge", json!({ "mode": "hang" }));
    let retry = w.wait_state("slow", WorkState::Retry);
    assert_eq!(
        (failure(&retry).0, failure(&retry).1.as_str()),
        (FailureClass::Retryable, "TIMEOUT")
    );
    assert_eq!(w.wait_file("disconnected-slow"), "yes");
    w.stop(authority);
}

#[test]
fn http_connection_refused_is_retryable() {
    let w = World::new();
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let authority = w.start(&w.http_config(&format!("http://127.0.0.1:{port}/x"), "60s"));
    w.enqueue("nobody", "charge", json!({}));
    let retry = w.wait_state("nobody", WorkState::Retry);
    w.stop(authority);
    assert_eq!(
        (failure(&retry).0, failure(&retry).1.as_str()),
        (FailureClass::Retryable, "CONNECTION_REFUSED")
    );
}

/// Another authority takes the item over: the request's connection is dropped, which the
/// server sees, and nothing is recorded.
#[test]
fn http_lease_loss_drops_the_connection() {
    let w = World::new();
    let server = Server::start(&w.path("journal"));
    let authority = w.start(&w.http_config(&server.url(), "60s"));
    w.enqueue("long", "charge", json!({ "mode": "hang" }));
    wait_until("the request", within(RUNNING), || !w.journal().is_empty());
    let taken = w.take_over("long");
    assert_eq!(w.wait_file("disconnected-long"), "yes");
    w.stop(authority);
    let item = w.item("long");
    assert_eq!(
        (item.owner_id.as_deref(), item.generation, item.last_failure),
        (Some("b"), taken.generation, None)
    );
}

// --- the config-driven authority -----------------------------------------------------------

/// An item whose handler the file does not name stays pending, never claimed (its key is
/// its handler's) and nothing failed, for an authority that has it.
#[test]
fn an_item_without_a_configured_handler_stays_pending() {
    let w = World::new();
    let authority = w.start(&w.exec_config("60s", "5s"));
    w.enqueue("orphan", "not-configured", json!({}));
    w.enqueue("known", "mail", json!({ "mode": "ok" }));
    w.wait_state("known", WorkState::Succeeded);
    w.stop(authority);
    let orphan = w.item("orphan");
    assert_eq!((orphan.state, orphan.generation), (WorkState::Pending, 0));
    assert_eq!(orphan.last_failure, None);
}

/// Each bad file: exit 2, one line naming the file, the line and the key, and the store
/// `--create` would have made is not there.
#[test]
fn bad_config_files_are_refused_in_one_line_before_anything_starts() {
    let dir = tempfile::tempdir().unwrap();
    let script = fixture("exec_handler.py").display().to_string();
    let cases: Vec<(String, &str, &str)> = vec![
        (
            format!("[handlers.a]\nversion = \"1.0.0\"\nexec = [\"python3\", {script:?}]\nretries = 3\n"),
            ":4: handlers.a.retries: unknown key `retries`",
            "",
        ),
        (
            format!("[handlers.a]\nversion = \"1.0.0\"\nexec = [\"python3\", {script:?}]\nhttp = \"http://127.0.0.1:1/\"\n"),
            ":4: handlers.a.http: ",
            "exactly one of exec and http",
        ),
        (
            "[handlers.a]\nversion = \"1.0.0\"\n".into(),
            ":1: handlers.a: ",
            "exactly one of exec",
        ),
        (
            format!("[handlers.a]\nversion = \"1.0.0\"\nexec = [\"python3\", {script:?}]\ntimeout = \"30x\"\n"),
            ":4: handlers.a.timeout: ",
            "not a positive duration",
        ),
        (
            "[handlers.a]\nversion = \"1.0.0\"\n\nhttp = \"http://10.1.2.3:8080/x\"\n".into(),
            ":4: handlers.a.http: ",
            "set allow_remote = true",
        ),
        (
            format!("[handlers.a]\nversion = \"one\"\nexec = [\"python3\", {script:?}]\n"),
            ":2: handlers.a.version: ",
            "not a semantic version",
        ),
        (
            "[handlers.a]\nversion = \"1.0.0\"\nexec = [\"./missing.py\"]\n".into(),
            ":3: handlers.a.exec: ",
            "does not exist",
        ),
        (
            "[handlers.a]\nversion = \"1.0.0\"\nexec = [\"no-such-program-here\"]\n".into(),
            ":3: handlers.a.exec: ",
            "not on PATH",
        ),
        (
            "[handlers.a]\nversion = \"1.0.0\"\nhttp = \"http://127.0.0.1:1/\"\nkill_grace = \"1s\"\n".into(),
            ":4: handlers.a.kill_grace: ",
            "only an exec handler",
        ),
        (
            "[handlers.a]\nversion = \"1.0.0\"\nexec = \"python3 x.py\"\n".into(),
            ":3: handlers.a.exec: ",
            "invalid type",
        ),
        (
            "[handlers.a]\nversion = \"1.0.0\"\nhttp = \"http://127.0.0.1:1/\"\nrequire_answer = \"no\"\n".into(),
            ":4: handlers.a.require_answer: ",
            "invalid type",
        ),
        ("[handlers.a\nversion = 1\n".into(), ":1: ", ""),
        ("[handlers]\n".into(), ":1: handlers: ", "no handler is configured"),
        (
            "[authority]\nlease = \"30s\"\n".into(),
            ": names no handler",
            "[handlers.NAME]",
        ),
    ];
    for (i, (text, place, why)) in cases.iter().enumerate() {
        let path = dir.path().join(format!("bad{i}.toml"));
        std::fs::write(&path, text).unwrap();
        let store = dir.path().join(format!("store{i}.db"));
        let o = leasehold(&[
            "authority",
            "--store",
            store.to_str().unwrap(),
            "--create",
            "--config",
            path.to_str().unwrap(),
        ]);
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{text}: {stderr}");
        assert_eq!(stderr.trim_end().lines().count(), 1, "{text}: {stderr}");
        let expected = format!("{}{place}", path.display());
        assert!(
            stderr.contains(&expected),
            "{text}: {stderr} lacks {expected}"
        );
        assert!(stderr.contains(why), "{text}: {stderr} lacks {why}");
        assert!(!store.exists(), "{text}: a store was created");
    }
}

// --- real processes ------------------------------------------------------------------------

/// Two `leasehold authority --config` processes share a SQLite store with an exec handler
/// that takes a while; one is killed with SIGKILL while its handler runs. The other
/// finishes every item, and `leasehold check` finds nothing wrong — and, reading both
/// execution logs, names the attempts the kill cut off.
#[test]
#[expect(
    clippy::too_many_lines,
    reason = "a scripted scenario: its steps in the order they happen"
)]
fn a_killed_authority_mid_handler_leaves_a_clean_store() {
    const ITEMS: usize = 12;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("work.db");
    let url = db.display().to_string();
    let journal = dir.path().join("journal");
    let config = dir.path().join("handlers.toml");
    std::fs::write(
        &config,
        format!(
            "[handlers.mail]\nversion = \"1.0.0\"\nexec = [\"python3\", {:?}]\n\
             timeout = \"60s\"\nenv = {{ LEASEHOLD_TEST_JOURNAL = {:?} }}\n",
            fixture("exec_handler.py").display().to_string(),
            journal.display().to_string()
        ),
    )
    .unwrap();
    let store = leasehold::store::create::create(&url).unwrap().0;
    // The version handlers.toml declares for `mail`.
    let build = leasehold::model::handler_key("mail", &compat());
    for i in 0..ITEMS {
        let payload = json!({ "mode": "work", "ms": 400, "dir": dir.path() });
        store
            .enqueue(
                NewWork::effect(format!("m{i:02}"), "mail", payload.to_string()),
                &build,
            )
            .unwrap();
    }
    let spawn = |name: &str| -> Child {
        Command::new(env!("CARGO_BIN_EXE_leasehold"))
            .env("LEASEHOLD_STATE_DIR", support::authorities::witnesses())
            .args([
                "authority",
                "--instance",
                name,
                "--config",
                config.to_str().unwrap(),
                "--lease-ms",
                "1500",
                "--poll-ms",
                "50",
                "--concurrency",
                "2",
                "--log-format",
                "json",
                "--exec-log",
                dir.path().join(format!("{name}.exec")).to_str().unwrap(),
            ])
            // The store from the environment, which handlers must not inherit.
            .env("LEASEHOLD_STORE", &url)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(dir.path().join(format!("{name}.log"))).unwrap())
            .spawn()
            .unwrap()
    };
    let mut doomed = spawn("auth-a");
    // Kill it while one of its handlers runs: a request it sent whose item is unfinished.
    let journal_of = |owner: &str| -> Vec<String> {
        std::fs::read_to_string(&journal)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter(|r| r["ownerId"] == owner)
            .map(|r| r["workId"].as_str().unwrap().to_owned())
            .collect()
    };
    wait_until("auth-a to be mid-handler", within(RUNNING), || {
        journal_of("auth-a")
            .iter()
            .any(|id| store.work(id).unwrap().unwrap().state == WorkState::Claimed)
    });
    doomed.kill().unwrap();
    doomed.wait().unwrap();
    let mut survivor = spawn("auth-b");
    wait_until("every item done", within(RUNNING), || {
        (0..ITEMS).all(|i| {
            store.work(&format!("m{i:02}")).unwrap().unwrap().state == WorkState::Succeeded
        })
    });
    support::authorities::signal("-TERM", survivor.id());
    assert!(survivor.wait().unwrap().success());
    let reclaimed: Vec<WorkItem> = (0..ITEMS)
        .map(|i| store.work(&format!("m{i:02}")).unwrap().unwrap())
        .filter(|w| w.uncertain_attempts > 0)
        .collect();
    assert!(!reclaimed.is_empty(), "auth-a's claim was taken over");
    for item in &reclaimed {
        assert_eq!(item.owner_id.as_deref(), Some("auth-b"));
        assert!(item.result.as_deref().unwrap().contains("auth-b"));
    }
    let journal = std::fs::read_to_string(&journal).unwrap();
    assert!(
        journal.lines().all(|l| l.contains("\"storeEnv\": null")),
        "a handler saw LEASEHOLD_STORE: {journal}"
    );
    let exec_log = |name: &str| dir.path().join(format!("{name}.exec"));
    let (a_log, b_log) = (exec_log("auth-a"), exec_log("auth-b"));
    let o = leasehold(&[
        "check",
        "--store",
        &url,
        "--exec-log",
        a_log.to_str().unwrap(),
        "--exec-log",
        b_log.to_str().unwrap(),
    ]);
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "check: {stdout}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    // The killed attempts left their start in auth-a's log and nothing else: check names
    // each one, and auth-b, stopped cleanly, left none.
    let cut_off: Vec<&str> = stdout
        .lines()
        .filter(|l| l.starts_with("attempt-without-end"))
        .collect();
    assert!(!cut_off.is_empty(), "{stdout}");
    assert!(cut_off.iter().all(|l| l.contains(", auth-a, ")), "{stdout}");
    for item in &reclaimed {
        assert!(
            cut_off
                .iter()
                .any(|l| l.contains(&format!("[{}, auth-a,", item.id))),
            "{} was cut off in auth-a: {stdout}",
            item.id
        );
    }
    assert!(stdout.contains("nothing missing"), "{stdout}");
}

/// The `[authority]` table's `retry` policies govern a real `leasehold authority --config`
/// process, as `config check` says they do: a handler capped at two attempts, 100 ms
/// apart, fails its item after two (the default would take five over 7.5 s), and the
/// registration shows the policy it applies.
#[test]
fn the_files_retry_policy_governs_the_authority_it_starts() {
    let dir = tempfile::tempdir().unwrap();
    let url = dir.path().join("work.db").display().to_string();
    let config = dir.path().join("leasehold.toml");
    std::fs::write(
        &config,
        "[authority]\npoll = \"50ms\"\nretry = { crash = { max_attempts = 2, initial_delay = \"100ms\", multiplier = 1, max_delay = \"100ms\" } }\n\
         [handlers.crash]\nversion = \"1.0.0\"\nexec = [\"sh\", \"-c\", \"cat >/dev/null; echo boom >&2; exit 3\"]\n",
    )
    .unwrap();
    let store = leasehold::store::create::create(&url).unwrap().0;
    store
        .enqueue(
            NewWork::effect("c1", "crash", "{}"),
            &leasehold::model::handler_key("crash", &compat()),
        )
        .unwrap();
    let mut authority = Command::new(env!("CARGO_BIN_EXE_leasehold"))
        .env("LEASEHOLD_STATE_DIR", support::authorities::witnesses())
        .args(["authority", "--instance", "retrying", "--store", &url])
        .args(["--config", config.to_str().unwrap(), "--log-format", "off"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_until("the item to fail", within(RUNNING), || {
        store.work("c1").unwrap().unwrap().state == WorkState::Failed
    });
    support::authorities::signal("-TERM", authority.id());
    assert!(authority.wait().unwrap().success());
    let item = store.work("c1").unwrap().unwrap();
    assert_eq!(item.attempt_number, 2, "the file's cap, not the default 5");
    let registered = store
        .list_authorities(&leasehold::model::PageRequest::first(10))
        .unwrap()
        .rows;
    let config: AuthorityConfig = serde_json::from_str(&registered[0].config).unwrap();
    let policy = config.retry.get("crash").copied();
    assert_eq!(policy.and_then(|p| p.max_attempts), Some(2), "{policy:?}");
    assert_eq!(policy.map(|p| p.initial_delay_ms), Some(100));
}

/// An operator's cancel of a workflow whose exec action is running stops the action: the
/// cancel releases the instance's lease, the authority's next renewal is refused, and the
/// command is sent SIGTERM. Nothing the authority wrote afterwards is refused as its own
/// stale write (the writer the holder, at the generation it presented).
#[test]
fn cancelling_a_workflow_stops_its_running_exec_action() {
    let w = World::new();
    let authority = w.start(&w.exec_config("60s", "5s"));
    let store = w.store();
    let definition = json!({
        "id": "ship",
        "entry": "send",
        "steps": [
            { "id": "send", "type": "action", "action": "mail",
              "arguments": { "mode": { "lit": "hang" }, "dir": { "lit": w.dir.path() } },
              "next": "done" },
            { "id": "done", "type": "complete", "output": { "lit": { "ok": true } } }
        ]
    });
    let catalog = leasehold::workflow::Catalog {
        actions: [("mail".to_owned(), "1.2.0".to_owned())].into(),
        ..leasehold::workflow::Catalog::default()
    };
    let workflow = store
        .deploy_workflow(&definition.to_string(), &catalog)
        .unwrap()
        .expect("the definition validates")
        .workflow_id;
    let versions = w.versions.lock().unwrap().clone();
    let instance = store
        .start_workflow(&workflow, serde_json::Map::new(), "alice", None, versions)
        .unwrap()
        .instance_id;
    let pid = w.wait_file(&format!("started-wf:{instance}"));
    let verdict = store
        .cancel_workflow_audited(&instance, None, "ops@host", "customer left")
        .unwrap();
    assert_eq!(
        verdict,
        leasehold::workflow::engine::cancel::Verdict::Cancelled
    );
    // The authority renews every 100 ms on the test's clock: the next round is refused.
    w.h.clock().advance(200);
    assert_eq!(w.wait_file(&format!("terminated-wf:{instance}")), pid);
    wait_until("the command gone", within(RUNNING), || !pid_alive(&pid));
    w.stop(authority);
    let refused = store.refused_writes(0, None, 100).unwrap().rows;
    let resource = format!("wf:{instance}");
    assert!(
        refused.iter().any(|(_, r)| {
            let w = &r.write;
            w.resource_id == resource
                && w.owner_id == "a"
                && w.verb == leasehold::model::WriteVerb::Renew
                && w.holder
                    .as_ref()
                    .is_some_and(|h| h.owner_id.is_none() && h.generation == w.generation + 1)
        }),
        "the authority's renewal was refused by the cancel's release: {refused:?}"
    );
    for (_, r) in &refused {
        let w = &r.write;
        let holder = w.holder.as_ref().expect("recorded");
        assert!(
            !(holder.owner_id.as_deref() == Some(w.owner_id.as_str())
                && holder.generation == w.generation),
            "refused as its own stale write: {w:?}"
        );
    }
    let row = store.instance(&instance).unwrap().unwrap();
    assert_eq!(row.status.as_str(), "cancelled");
}
