//! Only `leasehold init`, `seed` and `authority --create` create a store: every other
//! writer, pointed at a missing path, an empty file, a directory or a device, says which
//! path and why in one line (exit 2) and leaves nothing beside it — no new store, no
//! `-journal`, `-wal` or `-shm`.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use super::refusals::{listing, sha256};
use super::support::wait::{wait_until, within};
use super::{assert_one_line_failure, code, leasehold, stdout};

/// Every command that writes to a store but must never create one, against `store`.
pub(super) fn writers(store: &str, workflow: &str) -> Vec<Vec<String>> {
    let every = |words: &[&str]| -> Vec<String> { words.iter().map(|w| (*w).to_owned()).collect() };
    vec![
        every(&[
            "authority",
            "--store",
            store,
            "--instance",
            "typo",
            "--workload",
            "default",
        ]),
        every(&["event", "--store", store, "--type", "paid"]),
        every(&["cancel", "--store", store, "wf-1"]),
        every(&["workflow", "deploy", "--store", store, workflow]),
        every(&["workflow", "start", "--store", store, "reminder"]),
        every(&[
            "schedule",
            "create",
            "--store",
            store,
            "nightly",
            "--every",
            "1m",
            "--handler",
            "noop",
        ]),
        every(&[
            "schedule",
            "update",
            "--store",
            store,
            "nightly",
            "--every",
            "2m",
            "--handler",
            "noop",
        ]),
        every(&["authority", "forget", "--store", store, "a1"]),
    ]
}

/// The reminder workflow shipped in `workflows/`.
pub(super) fn workflow_file() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("workflows/reminder.json")
        .display()
        .to_string()
}

/// Names in `/dev` that start with `null` (`/dev/null-journal` would be one).
fn dev_null_neighbours() -> Vec<String> {
    listing(Path::new("/dev"))
        .into_iter()
        .filter(|n| n.starts_with("null"))
        .collect()
}

#[test]
fn writers_refuse_what_is_not_a_store_and_create_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("typo.db");
    let empty = dir.path().join("empty.db");
    std::fs::write(&empty, b"").unwrap();
    let subdir = dir.path().join("a-directory");
    std::fs::create_dir(&subdir).unwrap();
    let text = dir.path().join("notes.txt");
    std::fs::write(&text, b"not a store\n").unwrap();
    let before = listing(dir.path());
    let sums = [&empty, &text].map(|p| (p.clone(), sha256(p)));
    let dev_before = dev_null_neighbours();
    let workflow = workflow_file();

    let targets: [(PathBuf, &str); 5] = [
        (missing, "no store here"),
        (empty, "empty file"),
        (subdir.clone(), "a directory"),
        (PathBuf::from("/dev/null"), "a character device"),
        (text, "not a SQLite database"),
    ];
    for (target, cause) in &targets {
        let path = target.display().to_string();
        for args in writers(&path, &workflow) {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let o = leasehold(&args);
            let err = assert_one_line_failure(&o, 2);
            assert!(err.contains(&path), "{args:?}: names the path: {err}");
            assert!(err.contains(cause), "{args:?}: says why ({cause}): {err}");
        }
    }
    assert_eq!(listing(dir.path()), before, "nothing was created");
    assert!(listing(&subdir).is_empty(), "nothing inside the directory");
    assert_eq!(dev_null_neighbours(), dev_before, "no /dev/null-journal");
    for (path, sum) in sums {
        assert_eq!(sha256(&path), sum, "{} unchanged", path.display());
    }
}

#[test]
fn init_creates_once_and_then_the_writers_work() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("new.db");
    let path = store.display().to_string();

    let created = leasehold(&["init", &path]);
    assert_eq!(code(&created), 0, "{created:?}");
    assert_eq!(
        stdout(&created),
        format!("created an empty leasehold store at {path}\n")
    );
    let sum = sha256(&store);
    let files = listing(dir.path());

    let again = leasehold(&["init", &path, "--json"]);
    assert_eq!(code(&again), 0, "{again:?}");
    let report: serde_json::Value = serde_json::from_str(stdout(&again).trim()).unwrap();
    assert_eq!(report["created"], false);
    assert_eq!(report["store"], path.as_str());
    assert_eq!(sha256(&store), sum, "a second init changes nothing");
    assert_eq!(listing(dir.path()), files);
    let plain = leasehold(&["init", &path]);
    assert_eq!(
        stdout(&plain),
        format!("a leasehold store already exists at {path}; nothing changed\n")
    );

    let event = leasehold(&["event", "--store", &path, "--type", "paid"]);
    assert_eq!(code(&event), 0, "{event:?}");
    assert!(stdout(&event).starts_with("unidentified seq "), "{event:?}");
    let deploy = leasehold(&[
        "workflow",
        "deploy",
        "--store",
        &path,
        "--workload",
        "default",
        &workflow_file(),
    ]);
    assert_eq!(code(&deploy), 0, "{deploy:?}");
    let events = leasehold(&["inspect", "--store", &path, "events", "--json"]);
    assert_eq!(stdout(&events).lines().count(), 1, "{events:?}");
}

#[test]
fn init_refuses_what_is_not_a_store_and_memory() {
    let dir = tempfile::tempdir().unwrap();
    let text = dir.path().join("notes.txt");
    std::fs::write(&text, b"not a store\n").unwrap();
    let sum = sha256(&text);
    let before = listing(dir.path());
    let dev_before = dev_null_neighbours();
    for target in [
        text.display().to_string(),
        dir.path().display().to_string(),
        "/dev/null".to_owned(),
        "memory".to_owned(),
    ] {
        let o = leasehold(&["init", &target]);
        assert_one_line_failure(&o, 2);
        assert!(stdout(&o).is_empty());
    }
    assert_eq!(sha256(&text), sum);
    assert_eq!(listing(dir.path()), before);
    assert_eq!(dev_null_neighbours(), dev_before);
}

/// A store path in a directory that does not exist: `init`, the other creators and every
/// writer and reader say so in one line naming the directory (`STORE_REFUSED`, exit 2),
/// and none points at a command that would fail the same way (`leasehold init PATH`).
#[test]
fn a_store_in_a_missing_directory_is_refused_naming_the_directory() {
    let dir = tempfile::tempdir().unwrap();
    let nodir = dir.path().join("nodir");
    let store = nodir.join("x.db").display().to_string();
    let mut commands = writers(&store, &workflow_file());
    for words in [
        vec!["init", &store],
        vec!["seed", "--store", &store],
        vec![
            "authority",
            "--store",
            &store,
            "--workload",
            "default",
            "--create",
        ],
        vec!["inspect", "--store", &store, "work"],
    ] {
        commands.push(words.iter().map(|w| (*w).to_owned()).collect());
    }
    let says = format!("the directory {} does not exist", nodir.display());
    for args in commands {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let err = assert_one_line_failure(&leasehold(&args), 2);
        assert!(
            err.contains("STORE_REFUSED") && err.contains(&says) && !err.contains("leasehold init"),
            "{args:?}: {err}"
        );
    }
    assert!(!nodir.exists(), "nothing created");
}

#[test]
fn an_empty_file_is_initialised_in_place() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("touched.db");
    std::fs::write(&store, b"").unwrap();
    let o = leasehold(&["init", store.to_str().unwrap(), "--json"]);
    assert_eq!(code(&o), 0, "{o:?}");
    let report: serde_json::Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    assert_eq!(report["created"], true);
}

#[test]
fn authority_create_creates_the_store_it_runs_on() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("fresh.db");
    let path = store.display().to_string();
    let mut child = Command::new(env!("CARGO_BIN_EXE_leasehold"))
        // Rewind witnesses of these throwaway stores stay out of the home directory.
        .env(
            "LEASEHOLD_STATE_DIR",
            std::env::temp_dir().join("leasehold-test-witnesses"),
        )
        .args([
            "authority",
            "--store",
            &path,
            "--create",
            "--instance",
            "creator",
            "--workload",
            "default",
            "--poll-ms",
            "50",
            "--log-format",
            "off",
        ])
        .env_remove("LEASEHOLD_STORE")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_until(
        "the authority to register in the store it created",
        within(Duration::from_secs(60)),
        || {
            let o = leasehold(&["inspect", "--store", &path, "authorities", "--json"]);
            code(&o) == 0 && stdout(&o).contains("\"creator\"")
        },
    );
    let term = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(term.success());
    let status = child.wait().unwrap();
    assert!(status.success(), "{status:?}");
    let again = leasehold(&["init", &path, "--json"]);
    assert!(stdout(&again).contains("\"created\":false"), "{again:?}");
}
