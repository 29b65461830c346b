//! What the binary refuses before it touches anything: a dashboard, a read or an authority
//! over a path that is not a store (`STORE_REFUSED`, nothing created, the file
//! byte-for-byte as it was), a dashboard
//! without a terminal, hostile identifiers on every verb, and files past their size bound.

use std::collections::BTreeSet;
use std::path::Path;

use sha2::{Digest, Sha256};

use super::{assert_one_line_failure, leasehold, seed, store_in};

pub(super) fn sha256(path: &Path) -> String {
    let bytes = std::fs::read(path).unwrap();
    hex::encode(Sha256::digest(&bytes))
}

/// Every name in `dir` (so a `-wal` / `-shm` or a new store shows up).
pub(super) fn listing(dir: &Path) -> BTreeSet<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect()
}

#[test]
fn reading_commands_refuse_what_is_not_a_store_and_create_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("typo.db");
    let no_dir = dir.path().join("no-such-dir").join("store.db");
    let empty = dir.path().join("empty.db");
    std::fs::write(&empty, b"").unwrap();
    let subdir = dir.path().join("a-directory");
    std::fs::create_dir(&subdir).unwrap();
    let passwd = dir.path().join("passwd");
    std::fs::copy("/etc/passwd", &passwd).unwrap();
    let before = listing(dir.path());
    let sums: Vec<(std::path::PathBuf, String)> =
        [&empty, &passwd, &Path::new("/etc/passwd").to_path_buf()]
            .into_iter()
            .map(|p| (p.clone(), sha256(p)))
            .collect();

    for target in [
        &missing,
        &no_dir,
        &empty,
        &subdir,
        &passwd,
        &Path::new("/etc/passwd").to_path_buf(),
    ] {
        let path = target.display().to_string();
        for args in [
            vec!["attach", path.as_str()],
            vec!["attach", "--read-only", path.as_str()],
            vec![path.as_str()],
            vec!["inspect", "--store", path.as_str(), "overview"],
            vec!["inspect", "--store", path.as_str(), "work"],
            vec!["history", "--store", path.as_str(), "wf-1"],
            vec!["check", "--store", path.as_str()],
            vec![
                "authority",
                "--store",
                path.as_str(),
                "--instance",
                "a1",
                "--workload",
                "default",
            ],
        ] {
            let o = leasehold(&args);
            let err = assert_one_line_failure(&o, 2);
            assert!(
                !err.contains("terminal"),
                "{args:?}: the store's problem comes first: {err}"
            );
            // Not an outage to wait out: the path stays what it is.
            assert!(
                err.starts_with("leasehold: STORE_REFUSED: "),
                "{args:?}: {err}"
            );
        }
    }
    assert_eq!(listing(dir.path()), before, "nothing was created");
    assert!(listing(&subdir).is_empty());
    for (path, sum) in sums {
        assert_eq!(sha256(&path), sum, "{} unchanged", path.display());
    }
}

#[test]
fn attach_without_a_terminal_says_so_and_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let store = store_in(dir.path());
    seed(
        &store,
        &["--effects", "3", "--workflows", "1", "--events", "0"],
    );
    let before = listing(dir.path());
    let sum = sha256(Path::new(&store));
    let o = leasehold(&["attach", &store]);
    let err = assert_one_line_failure(&o, 2);
    assert!(err.contains("needs a terminal"), "{err}");
    assert!(err.contains("leasehold inspect"), "{err}");
    assert!(!err.contains("STORE_UNAVAILABLE"), "{err}");
    let demo = leasehold(&["demo"]);
    assert!(assert_one_line_failure(&demo, 2).contains("needs a terminal"));
    // SQLite's shared-memory index may appear beside a WAL store a reader opened; the WAL
    // itself stays empty and the store file is byte-for-byte the same.
    let wal = format!("{store}-wal");
    let coordination: BTreeSet<String> = ["store.db-wal", "store.db-shm"].map(String::from).into();
    assert!(
        listing(dir.path())
            .difference(&before)
            .all(|f| coordination.contains(f))
    );
    assert_eq!(
        std::fs::metadata(&wal).map_or(0, |m| m.len()),
        0,
        "nothing written"
    );
    assert_eq!(sha256(Path::new(&store)), sum);
}

/// `attach A B …` opens every store before the terminal is touched: one missing store is
/// refused in one line naming it (exit 2, nothing created), two are two lines, and when
/// every store opens the dashboard asks for its terminal.
#[test]
fn attach_over_several_stores_refuses_each_missing_one_in_a_line() {
    let dir = tempfile::tempdir().unwrap();
    let good = store_in(dir.path());
    seed(
        &good,
        &["--effects", "1", "--workflows", "0", "--events", "0"],
    );
    let missing = dir.path().join("typo.db").display().to_string();
    let other = dir.path().join("gone.db").display().to_string();
    let before = listing(dir.path());
    for args in [
        vec!["attach", good.as_str(), missing.as_str()],
        vec!["attach", "--read-only", missing.as_str(), good.as_str()],
        vec![good.as_str(), missing.as_str()],
    ] {
        let err = assert_one_line_failure(&leasehold(&args), 2);
        assert!(
            err.contains("typo: ") && err.contains("typo.db"),
            "{args:?}: {err}"
        );
        assert!(!err.contains("terminal"), "{args:?}: {err}");
    }
    let o = leasehold(&["attach", &good, &missing, &other]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8(o.stderr).unwrap();
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 2, "{err}");
    assert!(lines[0].starts_with("leasehold: typo: "), "{err}");
    assert!(lines[1].starts_with("leasehold: gone: "), "{err}");
    let second_dir = tempfile::tempdir().unwrap();
    let second = store_in(second_dir.path());
    seed(
        &second,
        &["--effects", "1", "--workflows", "0", "--events", "0"],
    );
    let both = leasehold(&["attach", &good, &second]);
    assert!(assert_one_line_failure(&both, 2).contains("needs a terminal"));
    let created: Vec<String> = listing(dir.path())
        .difference(&before)
        .filter(|f| !f.ends_with("-wal") && !f.ends_with("-shm"))
        .cloned()
        .collect();
    assert!(created.is_empty(), "nothing created: {created:?}");
}

#[test]
fn every_verb_refuses_hostile_ids_before_opening_the_store() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("never.db").display().to_string();
    let long = "x".repeat(10_000);
    let hostile = [
        "id\u{1b}]0;pwned\u{7}",
        "\u{202e}gpj.exe",
        "a\u{2066}b",
        long.as_str(),
    ];
    for value in hostile {
        let s = store.as_str();
        let cases: Vec<(&str, Vec<&str>)> = vec![
            ("instance id", vec!["history", "--store", s, value]),
            ("instance id", vec!["cancel", "--store", s, value]),
            (
                "workflow id",
                vec!["workflow", "start", "--store", s, value],
            ),
            (
                "idempotency key",
                vec![
                    "workflow",
                    "start",
                    "--store",
                    s,
                    "reminder",
                    "--idempotency-key",
                    value,
                ],
            ),
            ("event type", vec!["event", "--store", s, "--type", value]),
            (
                "event source",
                vec![
                    "event", "--store", s, "--type", "t", "--source", value, "--id", "e",
                ],
            ),
            (
                "event id",
                vec![
                    "event", "--store", s, "--type", "t", "--source", "src", "--id", value,
                ],
            ),
            (
                "instanceId",
                vec!["authority", "--store", s, "--instance", value],
            ),
            ("build", vec!["authority", "--store", s, "--build", value]),
        ];
        for (field, args) in cases {
            let o = leasehold(&args);
            let err = assert_one_line_failure(&o, 2);
            assert!(
                err.contains(&format!("{field}: ")),
                "{args:?} names {field}: {err}"
            );
            assert!(err.len() < 300, "the value is not echoed: {err}");
            assert!(
                !err.contains(['\u{1b}', '\u{7}', '\u{202e}', '\u{2066}']),
                "{err:?}"
            );
        }
    }
    assert!(listing(dir.path()).is_empty(), "no store was created");
}

#[test]
fn workflow_files_past_the_bound_are_refused_without_reading_them_whole() {
    let o = leasehold(&["workflow", "validate", "/dev/zero"]);
    let err = assert_one_line_failure(&o, 2);
    assert!(err.contains("larger than 4 MiB"), "{err}");
    let dir = tempfile::tempdir().unwrap();
    let o = leasehold(&[
        "workflow",
        "deploy",
        "--store",
        &store_in(dir.path()),
        "/dev/zero",
    ]);
    let err = assert_one_line_failure(&o, 2);
    assert!(err.contains("larger than 4 MiB"), "{err}");
    assert!(listing(dir.path()).is_empty(), "no store was created");
}

#[test]
fn workflow_definitions_with_hostile_ids_are_diagnosed() {
    let dir = tempfile::tempdir().unwrap();
    let shipped = Path::new(env!("CARGO_MANIFEST_DIR")).join("workflows/reminder.json");
    let text = std::fs::read_to_string(shipped).unwrap();
    for (what, hostile) in [
        ("workflow id", "\"id\": \"re\\u202eminder\""),
        ("workflow id", "\"id\": \"re\\u001b[2Jminder\""),
    ] {
        let file = dir.path().join("hostile.json");
        std::fs::write(&file, text.replacen("\"id\": \"reminder\"", hostile, 1)).unwrap();
        let o = leasehold(&["workflow", "validate", file.to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(1), "{}", super::stderr(&o));
        let out = super::stdout(&o) + &super::stderr(&o);
        assert!(out.contains(&format!("{what}: holds ")), "{out}");
        assert!(!out.contains(['\u{1b}', '\u{202e}']), "{out:?}");
    }
}

/// A metrics address that cannot be listened on stops the authority before it registers:
/// one line naming the flag, exit 2, nothing written.
#[test]
fn an_unusable_metrics_address_is_refused_before_anything_starts() {
    let dir = tempfile::tempdir().unwrap();
    let store = store_in(dir.path());
    seed(&store, &["--effects", "3"]);
    let sums = || {
        listing(dir.path())
            .into_iter()
            .map(|name| sha256(&dir.path().join(name)))
            .collect::<Vec<_>>()
    };
    let before = sums();
    for addr in ["not-an-address", "203.0.113.1:9464"] {
        let o = leasehold(&[
            "authority",
            "--store",
            &store,
            "--instance",
            "m-1",
            "--workload",
            "default",
            "--metrics-addr",
            addr,
        ]);
        let err = assert_one_line_failure(&o, 2);
        assert!(err.contains("--metrics-addr"), "{err}");
    }
    assert_eq!(sums(), before, "nothing registered");
}

/// A handler limit that is not `NAME=N` with N at least 1, or names no possible handler, is
/// one line, exit 2, before any store is opened or created.
#[test]
fn bad_handler_limits_are_refused_before_the_store_is_touched() {
    let dir = tempfile::tempdir().unwrap();
    let store = store_in(dir.path());
    for (limit, says) in [
        ("slow", "NAME=N"),
        ("slow=many", "whole number"),
        ("slow=-1", "whole number"),
        ("slow=0", "handlerLimits.slow must be at least 1"),
        ("sl\u{202e}ow=2", "handler: holds U+202E"),
    ] {
        let o = leasehold(&[
            "authority",
            "--store",
            &store,
            "--create",
            "--handler-limit",
            limit,
        ]);
        let err = assert_one_line_failure(&o, 2);
        assert!(err.contains(says), "{limit:?}: {err}");
        assert!(!err.contains('\u{202e}'), "{err:?}");
    }
    assert!(listing(dir.path()).is_empty(), "no store was created");
}

/// `--step-aside` (and `LEASEHOLD_STEP_ASIDE`) is auto, on or off: anything else is one
/// line naming the three, exit 2, before any store is opened or created.
#[test]
fn a_bad_step_aside_is_refused_before_the_store_is_touched() {
    let dir = tempfile::tempdir().unwrap();
    let store = store_in(dir.path());
    let flag = leasehold(&[
        "authority",
        "--store",
        &store,
        "--create",
        "--step-aside",
        "yes",
    ]);
    let err = assert_one_line_failure(&flag, 2);
    assert!(
        err.contains("step aside must be auto, on or off (not \"yes\")"),
        "{err}"
    );
    let env = std::process::Command::new(env!("CARGO_BIN_EXE_leasehold"))
        .args(["authority", "--store", &store, "--create"])
        .env("LEASEHOLD_STEP_ASIDE", "always")
        .output()
        .expect("runs");
    let err = assert_one_line_failure(&env, 2);
    assert!(err.contains("(not \"always\")"), "{err}");
    assert!(listing(dir.path()).is_empty(), "no store was created");
}

#[test]
fn an_authority_process_refuses_a_store_no_other_process_can_reach() {
    let o = leasehold(&[
        "authority",
        "--store",
        "memory",
        "--lease-ms",
        "3000",
        "--workload",
        "default",
    ]);
    let err = assert_one_line_failure(&o, 2);
    assert!(
        err.contains("CAPABILITY_MISSING") && err.contains("shared-across-processes"),
        "{err}"
    );
}

/// A one-shot command given `memory` (a mistyped `LEASEHOLD_STORE`, say) is refused in one
/// line, exit 2: the store would be new and empty in that process, so a write would be
/// acknowledged and lost, and a read or a check would vouch for nothing.
#[test]
fn one_shot_commands_refuse_the_memory_store() {
    let commands: [&[&str]; 9] = [
        &["work", "enqueue", "--handler", "invoice", "--payload", "{}"],
        &["event", "--type", "x", "--source", "s", "--id", "1"],
        &[
            "schedule",
            "create",
            "s1",
            "--every",
            "1m",
            "--handler",
            "invoice",
        ],
        &["handler", "pause", "invoice", "--reason", "x"],
        &["cancel", "wf-1", "--reason", "x"],
        &["check"],
        &["inspect", "overview"],
        &["work", "show", "w-1"],
        &["seed", "--effects", "3"],
    ];
    for args in commands {
        let mut all = args.to_vec();
        all.extend(["--store", "memory"]);
        let err = assert_one_line_failure(&leasehold(&all), 2);
        assert!(
            err.contains("memory is a new, empty store inside each process"),
            "{args:?}: {err}"
        );
    }
}

/// An argument that is not UTF-8 is named by its position in one line (exit 2), for an
/// option's value as for the `leasehold STORE` shorthand, before anything is opened.
#[test]
fn an_argument_that_is_not_utf8_is_named_by_its_position() {
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt;

    let bad = OsStr::from_bytes(b"s\xff.db");
    for (args, position) in [
        (
            vec![
                OsStr::new("inspect"),
                OsStr::new("overview"),
                OsStr::new("--store"),
                bad,
            ],
            4,
        ),
        (vec![bad], 1),
    ] {
        let o = std::process::Command::new(env!("CARGO_BIN_EXE_leasehold"))
            .args(&args)
            .env_remove("LEASEHOLD_STORE")
            .output()
            .unwrap();
        let err = assert_one_line_failure(&o, 2);
        assert!(
            err.contains(&format!(
                "argument {position} ('s\u{fffd}.db') is not valid UTF-8"
            )),
            "{err}"
        );
    }
}
