//! `leasehold config check FILE`: a good `leasehold.toml` is summarised (never with the
//! store's password); every mistake is one line naming the file, the line and the key,
//! exit 2 — an unknown key with the nearest valid one, a knob by its flag's rules, an
//! unknown theme, a handler table's own mistakes.

use serde_json::Value;

use super::{assert_one_line_failure, code, leasehold, stderr, stdout};

const GOOD: &str = r#"store = "postgres://ops:s3cr3t@127.0.0.1:5432/work"

[authority]
instance = "billing-1"
build = "v42"
lease = "30s"
renew = "10s"
poll = "500ms"
concurrency = 8
metrics_addr = "127.0.0.1:9464"
log_format = "json"

[dashboard]
theme = "light"
read_only = true

[handlers.send-email]
version = "1.2.0"
exec = ["python3", "send_email.py"]
"#;

fn check(text: &str) -> std::process::Output {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("leasehold.toml");
    std::fs::write(&file, text).unwrap();
    leasehold(&["config", "check", file.to_str().unwrap(), "--json"])
}

#[test]
fn a_good_file_is_summarised_without_the_password() {
    let o = check(GOOD);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let v: Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    assert_eq!(v["authority"]["lease"], "30.0s");
    assert_eq!(v["authority"]["concurrency"], "8");
    assert_eq!(v["dashboard"]["theme"], "light");
    assert_eq!(v["handlers"][0]["name"], "send-email");
    assert_eq!(v["handlers"][0]["kind"], "exec");
    assert!(!stdout(&o).contains("s3cr3t"), "{}", stdout(&o));
}

#[test]
fn each_mistake_is_one_located_line() {
    for (change, from, expected) in [
        (
            "renew = \"10s\"",
            "renew = \"40s\"",
            ":7: authority.renew: renewIntervalMs (40000) must be less than leaseDurationMs",
        ),
        (
            "renew = \"10s\"",
            "reneww = \"10s\"",
            ":7: authority.reneww: unknown key `reneww` (did you mean `renew`?",
        ),
        (
            "lease = \"30s\"",
            "lease = \"soon\"",
            ":6: authority.lease: \"soon\" is not a positive duration",
        ),
        (
            "concurrency = 8",
            "concurrency = 0",
            ":9: authority.concurrency: must be a whole number of at least 1",
        ),
        (
            "log_format = \"json\"",
            "log_format = \"xml\"",
            ":11: authority.log_format: must be human, json or off",
        ),
        (
            "theme = \"light\"",
            "theme = \"purple\"",
            ":14: dashboard.theme: unknown theme \"purple\"",
        ),
        (
            "[dashboard]",
            "[dashbord]",
            ":13: dashbord: unknown key `dashbord` (did you mean `dashboard`?",
        ),
        (
            "version = \"1.2.0\"",
            "version = \"one\"",
            ":18: handlers.send-email.version: ",
        ),
        (
            "store = \"postgres",
            "store = \"mysql",
            ":1: store: INVALID: unknown store scheme",
        ),
    ] {
        let text = GOOD.replace(change, from);
        assert_ne!(text, GOOD, "{from}");
        let err = assert_one_line_failure(&check(&text), 2);
        assert!(err.contains("leasehold.toml"), "{err}");
        let expected = expected.replace(":1: store: INVALID: ", ":1: store: ");
        assert!(err.contains(&expected), "{from}: {err}");
        assert!(!err.contains("s3cr3t"), "{err}");
    }
    let missing = leasehold(&["config", "check", "/nonexistent/leasehold.toml"]);
    assert_one_line_failure(&missing, 2);
}

/// Stepping aside from a crowded write lock is `auto`, `on` or `off`, summarised as given;
/// anything else is one line at its key, naming the three.
#[test]
fn step_aside_is_one_of_three() {
    let with = |when: &str| {
        GOOD.replace(
            "log_format = \"json\"",
            &format!("log_format = \"json\"\nstep_aside = \"{when}\""),
        )
    };
    for when in ["auto", "on", "off"] {
        let o = check(&with(when));
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        let v: Value = serde_json::from_str(stdout(&o).trim()).unwrap();
        assert_eq!(v["authority"]["step_aside"], when);
    }
    let err = assert_one_line_failure(&check(&with("sometimes")), 2);
    assert!(
        err.contains(
            "leasehold.toml:12: authority.step_aside: step aside must be auto, on or off (not \"sometimes\")"
        ),
        "{err}"
    );
}

/// A handler's fleet-wide rate is read as `N/interval` and summarised; a malformed one,
/// or one on a handler the file does not run, is one line at its key.
#[test]
fn handler_rates_are_checked_at_their_key() {
    let with = |rates: &str| {
        GOOD.replace(
            "log_format = \"json\"",
            &format!("log_format = \"json\"\nhandler_rates = {{ {rates} }}"),
        )
    };
    let o = check(&with("send-email = \"600/1m\""));
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let v: Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    assert_eq!(v["authority"]["handler_rates"], "send-email 600/1m");
    for (rates, expected) in [
        (
            "send-email = \"ten/1s\"",
            ":12: authority.handler_rates: \"ten/1s\" is not a rate: write N/interval",
        ),
        ("send-email = \"0/1s\"", ":12: authority.handler_rates"),
        ("send-email = \"10/soon\"", ":12: authority.handler_rates"),
        (
            "send-emial = \"10/1s\"",
            "no handler \"send-emial\" runs here (did you mean \"send-email\"?)",
        ),
    ] {
        let err = assert_one_line_failure(&check(&with(rates)), 2);
        assert!(err.contains("leasehold.toml:12"), "{err}");
        assert!(err.contains(expected), "{rates}: {err}");
    }
}

/// The retention keys are read as durations (`7d` too), and a period outside its bounds
/// is refused at its key, never capped.
#[test]
fn retention_keys_are_checked_at_their_key() {
    let good = "[authority]\nkeep_finished = \"2d\"\nkeep_audit = \"90d\"\ndedup_window = \"12h\"\ndedup_windows = { stripe = \"30d\" }\ntrim_every = \"10s\"\nworkload = \"default\"\n";
    let o = check(good);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let v: Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    assert_eq!(v["authority"]["keep_finished"], "48h00m");
    assert_eq!(v["authority"]["dedup_windows"], "stripe 720h00m");
    for (from, to, expected) in [
        (
            "\"2d\"",
            "\"30s\"",
            ":2: authority.keep_finished: finished retention must be between 60s and 3650d",
        ),
        (
            "\"90d\"",
            "\"4000d\"",
            ":3: authority.keep_audit: audit retention must be between",
        ),
        (
            "\"12h\"",
            "\"0s\"",
            ":4: authority.dedup_window: \"0s\" is not a positive duration",
        ),
        (
            "\"30d\"",
            "\"10s\"",
            ":5: authority.dedup_windows: dedup window of source \"stripe\" must be between",
        ),
        (
            "\"10s\"",
            "\"soon\"",
            ":6: authority.trim_every: \"soon\" is not a positive duration",
        ),
    ] {
        let text = good.replacen(from, to, 1);
        let err = assert_one_line_failure(&check(&text), 2);
        assert!(err.contains(expected), "{to}: {err}");
    }
}

/// A handler's retry policy is read with the other knobs (durations as they write them,
/// a fractional multiplier) and summarised; a policy that cannot be meant is one line at
/// its key, and so is one on a handler the authority does not run.
#[test]
fn retry_policies_are_read_and_checked_at_their_key() {
    let good = "[authority]\nworkload = \"default\"\nretry = { send-email = { max_attempts = 4, initial_delay = \"2s\", multiplier = 1.5, max_delay = \"10s\" } }\n";
    let o = check(good);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let v: Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    assert_eq!(
        v["authority"]["retry"],
        "send-email 2.0s ×1.5 to 10.0s, at most 4 attempts"
    );
    // The summary a person reads says every policy whole, however long the line.
    let two = good.replace(
        " } }\n",
        " }, charge-card = { max_attempts = 2, initial_delay = \"3s\" } }\n",
    );
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("leasehold.toml");
    std::fs::write(&file, two).unwrap();
    let o = leasehold(&["config", "check", file.to_str().unwrap()]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(
        stdout(&o).contains(
            "retry charge-card 3.0s ×2 to 30.0s, at most 2 attempts; send-email 2.0s ×1.5 to 10.0s, at most 4 attempts"
        ),
        "{}",
        stdout(&o)
    );
    for (from, to, expected) in [
        (
            "max_attempts = 4",
            "max_attempts = 0",
            "retry.send-email: max_attempts must be a whole number of at least 1",
        ),
        (
            "multiplier = 1.5",
            "multiplier = 0.5",
            "retry.send-email: multiplier must be a number of at least 1",
        ),
        (
            "max_delay = \"10s\"",
            "max_delay = \"1s\"",
            "retry.send-email: max_delay (1000 ms) must not be less than initial_delay (2000 ms)",
        ),
        (
            "initial_delay",
            "initial_dealy",
            "unknown key `initial_dealy`",
        ),
        (
            "send-email =",
            "send-emial =",
            "no handler \"send-emial\" runs here",
        ),
    ] {
        let text = good.replacen(from, to, 1);
        let err = assert_one_line_failure(&check(&text), 2);
        assert!(err.contains(":3: authority.retry"), "{to}: {err}");
        assert!(err.contains(expected), "{to}: {err}");
    }
}

#[test]
fn attach_takes_its_store_and_knobs_from_the_file_and_flags_win() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("work.db");
    let init = leasehold(&["init", store.to_str().unwrap()]);
    assert_eq!(code(&init), 0, "{}", stderr(&init));
    let file = dir.path().join("leasehold.toml");
    let missing = dir.path().join("typo.db");
    std::fs::write(
        &file,
        format!(
            "store = {:?}\n[dashboard]\ntheme = \"light\"\n",
            missing.display().to_string()
        ),
    )
    .unwrap();
    let config = file.to_str().unwrap();
    // The file's store is the one opened: a missing one is refused, naming it.
    let err = assert_one_line_failure(&leasehold(&["attach", "--config", config]), 2);
    assert!(err.contains("typo.db"), "{err}");
    // A STORE on the command line wins over the file's: it opens, then wants a terminal.
    let o = leasehold(&["attach", store.to_str().unwrap(), "--config", config]);
    assert!(assert_one_line_failure(&o, 2).contains("needs a terminal"));
    let none = leasehold(&["attach"]);
    assert!(assert_one_line_failure(&none, 2).contains("STORE"));
}

/// `leasehold authority --config`: each knob from its flag, else its `LEASEHOLD_*`
/// variable, else the file, else the default — read back from the registration the
/// authority writes in the store, whose store the file names too.
#[test]
#[expect(
    clippy::too_many_lines,
    reason = "a scripted scenario: its steps in the order they happen"
)]
fn an_authority_takes_flags_over_the_environment_over_the_file() {
    use std::process::{Command, Stdio};
    use std::time::{Duration, Instant};

    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("work.db").display().to_string();
    assert_eq!(code(&leasehold(&["init", &store])), 0);
    let file = dir.path().join("leasehold.toml");
    std::fs::write(
        &file,
        format!(
            "store = {store:?}\n[authority]\ninstance = \"from-file\"\nworkload = \"default\"\nlease = \"4s\"\npoll = \"200ms\"\nconcurrency = 3\nlog_format = \"off\"\nhandler_limits = {{ charge-card = 2 }}\nkeep_finished = \"2d\"\ndedup_windows = {{ stripe = \"1h\" }}\ntrim_every = \"10s\"\n"
        ),
    )
    .unwrap();
    let registered = |extra: &[&str], env: &[(&str, &str)]| -> Value {
        let mut child = Command::new(env!("CARGO_BIN_EXE_leasehold"))
            .env("LEASEHOLD_STATE_DIR", dir.path().join("witnesses"))
            .args(["authority", "--config", file.to_str().unwrap()])
            .args(extra)
            .env_remove("LEASEHOLD_STORE")
            .envs(env.iter().copied())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(60);
        let row = loop {
            let o = leasehold(&["inspect", "authorities", "--store", &store, "--json"]);
            let rows: Vec<Value> = stdout(&o)
                .lines()
                .filter_map(|l| serde_json::from_str(l).ok())
                .collect();
            if let Some(row) = rows.into_iter().find(|r| r["state"] == "live") {
                break row;
            }
            assert!(Instant::now() < deadline, "never registered");
            std::thread::sleep(Duration::from_millis(50));
        };
        let _ = Command::new("kill")
            .args(["-INT", &child.id().to_string()])
            .status();
        assert!(child.wait().unwrap().success());
        row
    };
    let from_file = registered(&[], &[]);
    assert_eq!(from_file["instanceId"], "from-file");
    let config = &from_file["config"];
    assert_eq!(config["leaseDurationMs"], 4_000);
    assert_eq!(
        config["renewIntervalMs"], 1_333,
        "a third of the file's lease"
    );
    assert_eq!(config["pollIntervalMs"], 200);
    assert_eq!(config["workerConcurrency"], 3);
    assert_eq!(config["handlerLimits"]["charge-card"], 2);
    assert_eq!(config["retention"]["finishedMs"], 2 * DAY);
    assert_eq!(config["retention"]["auditMs"], 30 * DAY, "the default");
    assert_eq!(config["retention"]["dedupBySource"]["stripe"], 3_600_000);
    assert_eq!(config["trimIntervalMs"], 10_000);

    let from_env = registered(
        &[],
        &[
            ("LEASEHOLD_LEASE_MS", "6000"),
            ("LEASEHOLD_INSTANCE", "from-env"),
            ("LEASEHOLD_KEEP_FINISHED", "3d"),
        ],
    );
    assert_eq!(from_env["instanceId"], "from-env");
    let config = &from_env["config"];
    assert_eq!(config["leaseDurationMs"], 6_000);
    assert_eq!(config["pollIntervalMs"], 200, "the file's, still");
    assert_eq!(config["retention"]["finishedMs"], 3 * DAY);

    let from_flag = registered(
        &[
            "--lease-ms",
            "9000",
            "--instance",
            "from-flag",
            "--keep-finished",
            "4d",
            "--dedup-window-for",
            "stripe=2h",
        ],
        &[
            ("LEASEHOLD_LEASE_MS", "6000"),
            ("LEASEHOLD_KEEP_FINISHED", "3d"),
        ],
    );
    assert_eq!(from_flag["instanceId"], "from-flag");
    let config = &from_flag["config"];
    assert_eq!(config["leaseDurationMs"], 9_000);
    assert_eq!(config["retention"]["finishedMs"], 4 * DAY);
    assert_eq!(config["retention"]["dedupBySource"]["stripe"], 7_200_000);
    let refused = leasehold(&[
        "authority",
        "--store",
        &store,
        "--workload",
        "default",
        "--keep-audit",
        "10s",
    ]);
    let err = assert_one_line_failure(&refused, 2);
    assert!(
        err.contains("audit retention must be between 60s and 3650d"),
        "{err}"
    );
}

const DAY: i64 = 86_400_000;

/// A one-shot writer checks the store against this host's rewind witness: after the file
/// is put back to an older copy, `event` refuses it in one line and writes nothing.
#[test]
fn a_one_shot_writer_refuses_a_rewound_store() {
    use std::process::Command;

    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("work.db");
    let witnesses = dir.path().join("witnesses");
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_leasehold"))
            .env("LEASEHOLD_STATE_DIR", &witnesses)
            .env_remove("LEASEHOLD_STORE")
            .args(args)
            .output()
            .unwrap()
    };
    let path = store.to_str().unwrap();
    let event = |id: &str| {
        run(&[
            "event", "--store", path, "--type", "t", "--source", "s", "--id", id,
        ])
    };
    assert_eq!(code(&run(&["init", path])), 0);
    assert_eq!(code(&event("e1")), 0);
    // Every process has closed the file: it holds everything (no -wal to carry along).
    let older = std::fs::read(&store).unwrap();
    assert_eq!(code(&event("e2")), 0);
    for suffix in ["-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{path}{suffix}"));
    }
    std::fs::write(&store, &older).unwrap();
    let refused = event("e3");
    assert_eq!(code(&refused), 2, "{}", stderr(&refused));
    assert!(
        stderr(&refused).contains("STORE_REWOUND"),
        "{}",
        stderr(&refused)
    );
    assert_eq!(stderr(&refused).lines().count(), 1);
    assert_eq!(std::fs::read(&store).unwrap(), older, "nothing written");
}

/// A relative SQLite path in the file is read from the file's directory, as its `exec`
/// paths are: the file names the same store from whatever directory it is used.
#[test]
fn a_relative_store_path_is_read_from_the_files_directory() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("leasehold.toml");
    std::fs::write(
        &file,
        "store = \"work.db\"\n[authority]\nworkload = \"default\"\n",
    )
    .unwrap();
    let o = leasehold(&["config", "check", file.to_str().unwrap(), "--json"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let v: Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    let expected = std::path::absolute(dir.path().join("work.db")).unwrap();
    assert_eq!(v["store"], expected.display().to_string());
    // A URL and an absolute path stay as written.
    for store in [
        "postgres://127.0.0.1:5432/work",
        "/var/lib/leasehold/work.db",
    ] {
        std::fs::write(&file, format!("store = {store:?}\n")).unwrap();
        let o = leasehold(&["config", "check", file.to_str().unwrap(), "--json"]);
        let v: Value = serde_json::from_str(stdout(&o).trim()).unwrap();
        assert_eq!(v["store"], store);
    }
}
