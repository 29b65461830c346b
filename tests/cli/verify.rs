//! `leasehold store verify` reads every page of a store; writers open in constant time and
//! meet damage below the roots only on the pages they read.

use std::path::Path;

use super::damaged::{PAGE, damaged, healthy};
use super::refusals::{listing, sha256};
use super::{assert_one_line_failure, code, leasehold, stdout};

#[test]
fn verify_says_ok_on_a_sound_store_in_one_line_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let good = healthy(dir.path());
    let path = good.display().to_string();
    let before = sha256(&good);

    let o = leasehold(&["store", "verify", &path]);
    assert_eq!(code(&o), 0, "{o:?}");
    assert_eq!(
        stdout(&o),
        format!("ok: {path}: every page of the SQLite file checked (quick_check)\n")
    );
    let o = leasehold(&["store", "verify", &path, "--json"]);
    assert_eq!(code(&o), 0, "{o:?}");
    let json: serde_json::Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    assert_eq!(json["ok"], true);
    assert_eq!(json["store"], path.as_str());

    assert_eq!(sha256(&good), before, "nothing written");
    let memory = leasehold(&["store", "verify", "memory"]);
    assert_one_line_failure(&memory, 2);
}

/// The last leaf of the work table, where a new item's row goes, of the store at `path`.
fn last_work_leaf(path: &Path) -> usize {
    let conn = rusqlite::Connection::open(path).unwrap();
    let (leaf, root): (i64, i64) = conn
        .query_row(
            "SELECT d.pageno, s.rootpage FROM dbstat AS d JOIN sqlite_schema AS s ON s.name = d.name \
             WHERE d.name = 'work' AND d.pagetype = 'leaf' ORDER BY d.path DESC LIMIT 1",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_ne!(leaf, root, "the work table spans more than its root");
    usize::try_from(leaf).unwrap()
}

/// Damage below the roots passes a writer's open. A writer that reads the damaged page gets
/// SQLite's own error (one line, exit 2, nothing written), as do `store verify` and `init`,
/// which read every page; an authority finds it by its reads or by the whole-file check it
/// runs beside itself, and stops. A writer that reads no damaged page writes: finding damage
/// anywhere before every write would cost every writer the whole file.
#[test]
fn damage_below_the_roots_is_met_by_the_readers_of_its_page_and_by_verify() {
    let dir = tempfile::tempdir().unwrap();
    let good = healthy(dir.path());
    let leaf = last_work_leaf(&good);
    let cases = dir.path().join("cases");
    std::fs::create_dir(&cases).unwrap();
    let deep = cases.join("deep.db");
    damaged(&good, &deep, |b| {
        for byte in &mut b[PAGE * (leaf - 1)..PAGE * (leaf - 1) + 16] {
            *byte ^= 0xff;
        }
    });
    let path = deep.display().to_string();
    let before = (listing(&cases), sha256(&deep));
    // `store verify` last: as every reader, it may leave SQLite's `-wal` / `-shm` behind.
    for args in [
        vec!["init", &path],
        vec![
            "work",
            "enqueue",
            "--store",
            &path,
            "--handler",
            "h",
            "--payload",
            "{}",
        ],
    ] {
        let err = assert_one_line_failure(&leasehold(&args), 2);
        assert!(err.contains("damaged"), "{args:?}: {err}");
        assert_eq!((listing(&cases), sha256(&deep)), before, "{args:?} wrote");
    }
    let err = assert_one_line_failure(&leasehold(&["store", "verify", &path]), 2);
    assert!(err.contains("damaged"), "store verify: {err}");
    assert_eq!(sha256(&deep), before.1, "store verify wrote");

    let o = leasehold(&[
        "authority",
        "--store",
        &path,
        "--workload",
        "default",
        "--log-format",
        "off",
    ]);
    let err = assert_one_line_failure(&o, 2);
    assert!(err.contains("damaged"), "{err}");
}
