//! An authority runs exactly the handlers it was given: the built-in demo handlers only
//! when `--workload` (or `workload` in the config file) names them, a config file's
//! handlers alone otherwise. No handler at all, a config file that names none, and a
//! handler limit on a handler the authority does not run are refused by `authority` and by
//! `config check` in one line, exit 2, with the store byte for byte as it was.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use leasehold::model::WorkState;
use leasehold::store::url::{self, OpenMode};
use serde_json::Value;

use super::refusals::{listing, sha256};
use super::{assert_one_line_failure, code, leasehold, seed, stderr, stdout, store_in};

/// `leasehold ARGS` with `LEASEHOLD_WORKLOAD=default` in its environment, as a shell an
/// operator tried the demo in passes it on; this host's witnesses in `dir`.
fn with_workload_variable(dir: &Path, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_leasehold"))
        .env("LEASEHOLD_STATE_DIR", dir.join("witnesses"))
        .env_remove("LEASEHOLD_STORE")
        .env("LEASEHOLD_WORKLOAD", "default")
        .args(args)
        .output()
        .unwrap()
}

/// The bytes of every file in `dir`: what a refused command must leave as it was.
fn sums(dir: &Path) -> Vec<(String, String)> {
    listing(dir)
        .into_iter()
        .map(|name| {
            let sum = sha256(&dir.join(&name));
            (name, sum)
        })
        .collect()
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

/// A handler table of one `exec` handler, `mail`, that answers `{"ok": …}`.
const MAIL: &str = "[handlers.mail]\nversion = \"1.0.0\"\nexec = [\"sh\", \"-c\", \"cat >/dev/null; echo '{\\\"ok\\\": {\\\"sent\\\": true}}'\"]\n";

#[test]
fn an_authority_without_handlers_is_refused_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let store = store_in(dir.path());
    seed(&store, &["--effects", "3"]);
    let knobs_only = write(
        dir.path(),
        "knobs.toml",
        "[authority]\ninstance = \"billing-1\"\nlease = \"30s\"\n",
    );
    let before = sums(dir.path());

    let bare = assert_one_line_failure(&leasehold(&["authority", "--store", &store]), 2);
    assert!(
        bare.contains("no handler to run")
            && bare.contains("--config FILE")
            && bare.contains("--workload default"),
        "{bare}"
    );
    for args in [
        vec!["authority", "--store", &store, "--config", &knobs_only],
        vec!["config", "check", &knobs_only],
    ] {
        let err = assert_one_line_failure(&leasehold(&args), 2);
        assert!(
            err.starts_with(&format!(
                "leasehold: INVALID: {knobs_only}: names no handler"
            )) && err.contains("[handlers.NAME]")
                && err.contains("workload = \"default\""),
            "{args:?}: {err}"
        );
    }
    // With --create a store that is not there yet stays not there.
    let missing = dir.path().join("new.db").display().to_string();
    let create = leasehold(&["authority", "--store", &missing, "--create"]);
    assert!(assert_one_line_failure(&create, 2).contains("no handler to run"));
    assert_eq!(sums(dir.path()), before, "nothing written, nothing created");

    // Naming the demo set in the file is naming handlers; a file for the dashboard alone
    // is checked as one.
    let demo = write(
        dir.path(),
        "demo.toml",
        "[authority]\nworkload = \"default\"\n",
    );
    let o = leasehold(&["config", "check", &demo]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let dashboard = write(dir.path(), "dash.toml", "[dashboard]\ntheme = \"light\"\n");
    let o = leasehold(&["config", "check", &dashboard]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(
        stdout(&o).contains("a file for the dashboard"),
        "{}",
        stdout(&o)
    );
}

/// A handler limit on a name the authority does not run is a misspelling until shown
/// otherwise: refused where it is written (the file's line, or the flag), naming the
/// nearest handler.
#[test]
fn a_misspelt_handler_limit_names_the_nearest_handler() {
    let dir = tempfile::tempdir().unwrap();
    let store = store_in(dir.path());
    seed(&store, &["--effects", "3"]);
    let file = write(
        dir.path(),
        "leasehold.toml",
        &format!("[authority]\nhandler_limits = {{ mial = 2 }}\n\n{MAIL}"),
    );
    let before = sums(dir.path());
    for args in [
        vec!["config", "check", &file],
        vec!["authority", "--store", &store, "--config", &file],
    ] {
        let err = assert_one_line_failure(&leasehold(&args), 2);
        assert!(
            err.contains(&format!(
                "{file}:2: authority.handler_limits: no handler \"mial\" runs here (did you mean \"mail\"?)"
            )),
            "{args:?}: {err}"
        );
    }
    let flag = leasehold(&[
        "authority",
        "--store",
        &store,
        "--workload",
        "default",
        "--handler-limit",
        "chrage-card=2",
    ]);
    let err = assert_one_line_failure(&flag, 2);
    assert!(
        err.contains("--handler-limit chrage-card=2: no handler \"chrage-card\" runs here (did you mean \"charge-card\"?)"),
        "{err}"
    );
    assert_eq!(sums(dir.path()), before, "nothing written");

    // A limit on a handler of the demo set the file names is on a handler it runs.
    let demo = write(
        dir.path(),
        "demo.toml",
        "[authority]\nworkload = \"default\"\nhandler_limits = { charge-card = 2 }\n",
    );
    let o = leasehold(&["config", "check", &demo]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
}

/// An authority whose config names `mail` runs `mail` and nothing else, whatever its
/// environment says: a `send-email` item (a demo handler's name) stays pending, never
/// claimed, and is listed as waiting for a handler; its start names what it runs and no
/// demo set.
#[test]
fn an_authority_runs_only_the_handlers_its_config_names() {
    let dir = tempfile::tempdir().unwrap();
    let store = store_in(dir.path());
    assert_eq!(code(&leasehold(&["init", &store])), 0);
    for (id, handler) in [("e1", "send-email"), ("m1", "mail")] {
        let o = leasehold(&[
            "work",
            "enqueue",
            "--store",
            &store,
            "--handler",
            handler,
            "--payload",
            "{}",
            "--id",
            id,
        ]);
        assert_eq!(code(&o), 0, "{}", stderr(&o));
    }
    let file = write(
        dir.path(),
        "leasehold.toml",
        &format!(
            "store = {store:?}\n[authority]\ninstance = \"only-mail\"\npoll = \"50ms\"\nlog_format = \"json\"\n\n{MAIL}"
        ),
    );
    let log = dir.path().join("authority.log");
    // A demo set named in the environment the authority inherits adds nothing.
    let mut child = Command::new(env!("CARGO_BIN_EXE_leasehold"))
        .env("LEASEHOLD_STATE_DIR", dir.path().join("witnesses"))
        .env_remove("LEASEHOLD_STORE")
        .env("LEASEHOLD_WORKLOAD", "default")
        .args(["authority", "--config", &file])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let read = url::open(&store, OpenMode::ReadOnly).unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while read.work("m1").unwrap().unwrap().state != WorkState::Succeeded {
        let exited = child.try_wait().unwrap();
        assert!(
            exited.is_none() && Instant::now() < deadline,
            "m1 not done ({exited:?}): {}",
            std::fs::read_to_string(&log).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // The poll that claimed m1 was offered everything due it could run.
    let listed = leasehold(&["inspect", "work", "--store", &store, "--json"]);
    let e1 = stdout(&listed)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|row| row["id"] == "e1")
        .expect("e1 listed");
    assert_eq!(
        (&e1["state"], &e1["generation"], &e1["noHandler"]),
        (&Value::from("pending"), &Value::from(0), &Value::from(true)),
        "{e1}"
    );
    let _ = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status();
    assert!(child.wait().unwrap().success());
    let text = std::fs::read_to_string(&log).unwrap();
    let started: Value = text
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|v| v["message"] == "started")
        .unwrap_or_else(|| panic!("no started line in {text}"));
    assert_eq!(started["handlers"], "mail@1.0.0", "{started}");
    assert!(started.get("workload").is_none(), "no demo set: {started}");
    let e1 = read.work("e1").unwrap().unwrap();
    assert_eq!((e1.state, e1.generation), (WorkState::Pending, 0));
}

/// The demo handlers run only when named on the command line or in the config file: an
/// inherited `LEASEHOLD_WORKLOAD` names nothing. Alone it leaves the authority no handler
/// to run; beside a config naming `mail` it adds no `charge-card`, so a limit on one is a
/// limit on a handler the authority does not run. Both refused before the store is
/// opened, nothing created.
#[test]
fn an_inherited_workload_variable_adds_no_demo_handlers() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("work.db").display().to_string();
    let mail = write(dir.path(), "mail.toml", MAIL);

    let bare = with_workload_variable(dir.path(), &["authority", "--store", &missing]);
    let err = assert_one_line_failure(&bare, 2);
    assert!(
        err.starts_with("leasehold: INVALID: no handler to run")
            && err.contains("LEASEHOLD_WORKLOAD is set but not read"),
        "{err}"
    );
    let limited = with_workload_variable(
        dir.path(),
        &[
            "authority",
            "--store",
            &missing,
            "--config",
            &mail,
            "--handler-limit",
            "charge-card=2",
        ],
    );
    let err = assert_one_line_failure(&limited, 2);
    assert!(
        err.contains("--handler-limit charge-card=2: no handler \"charge-card\" runs here"),
        "{err}"
    );
    assert!(!Path::new(&missing).exists(), "nothing created");
}

/// A demo workload named beside a config file's own handlers — by `--workload` or in the
/// file — would run the store's items of the demo's handler names: refused in one line,
/// `INVALID`, by the authority before anything starts and by `config check`.
#[test]
fn a_demo_workload_beside_a_config_s_handlers_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("work.db").display().to_string();
    let mail = write(dir.path(), "mail.toml", MAIL);
    let both = write(
        dir.path(),
        "both.toml",
        &format!("[authority]\nworkload = \"default\"\n\n{MAIL}"),
    );
    for (args, named) in [
        (
            vec![
                "authority",
                "--store",
                &missing,
                "--workload",
                "default",
                "--config",
                &mail,
            ],
            "--workload default names a built-in demo workload",
        ),
        (
            vec!["authority", "--store", &missing, "--config", &both],
            "workload = \"default\" under [authority] names a built-in demo workload",
        ),
        (
            vec!["config", "check", &both],
            "workload = \"default\" under [authority]",
        ),
    ] {
        let err = assert_one_line_failure(&leasehold(&args), 2);
        assert!(
            err.starts_with("leasehold: INVALID: ")
                && err.contains("names handlers of its own (mail)")
                && err.contains(named),
            "{args:?}: {err}"
        );
    }
    assert!(!Path::new(&missing).exists(), "nothing started or created");
}
