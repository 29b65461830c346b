//! A damaged store stops every writer before it writes: each variant of damage × each
//! command that writes (`seed` included) is refused with one line (exit 2), and the file's bytes — and the
//! directory's listing — are exactly as they were.

use std::path::{Path, PathBuf};

use super::creation::{workflow_file, writers};
use super::refusals::{listing, sha256};
use super::{assert_one_line_failure, code, leasehold};

/// SQLite's page size for the stores `leasehold init` creates.
const PAGE: usize = 4096;

/// A healthy store with some of everything in it, closed (its WAL folded in).
fn healthy(dir: &Path) -> PathBuf {
    let path = dir.join("healthy.db");
    let path_text = path.display().to_string();
    assert_eq!(code(&leasehold(&["init", &path_text])), 0);
    let seeded = leasehold(&["seed", "--store", &path_text, "--effects", "200"]);
    assert_eq!(code(&seeded), 0, "{seeded:?}");
    path
}

/// Runs `sql` against a copy of `from` at `to`.
fn altered(from: &Path, to: &Path, sql: &str) {
    std::fs::copy(from, to).unwrap();
    let conn = rusqlite::Connection::open(to).unwrap();
    conn.execute_batch(sql).unwrap();
}

/// `from`'s bytes changed by `damage`, written to `to`.
fn damaged(from: &Path, to: &Path, damage: impl FnOnce(&mut Vec<u8>)) {
    let mut bytes = std::fs::read(from).unwrap();
    damage(&mut bytes);
    std::fs::write(to, bytes).unwrap();
}

#[test]
fn writers_refuse_a_damaged_store_and_write_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let good = healthy(dir.path());
    let cases = dir.path().join("cases");
    std::fs::create_dir(&cases).unwrap();
    let at = |name: &str| cases.join(name);

    damaged(&good, &at("flipped.db"), |b| {
        // The header of a b-tree page: SQLite's own check finds it.
        for byte in &mut b[PAGE * 3..PAGE * 3 + 16] {
            *byte ^= 0xff;
        }
    });
    damaged(&good, &at("truncated.db"), |b| b.truncate(b.len() / 2));
    damaged(&good, &at("zeroed-header.db"), |b| b[..100].fill(0));
    altered(
        &good,
        &at("version-0.db"),
        "UPDATE meta SET value = 0 WHERE key = 'schema_version'",
    );
    altered(
        &good,
        &at("version-99.db"),
        "UPDATE meta SET value = 99 WHERE key = 'schema_version'",
    );
    altered(&good, &at("no-grants.db"), "DROP TABLE grants");
    let foreign = at("foreign.db");
    rusqlite::Connection::open(&foreign)
        .unwrap()
        .execute_batch("CREATE TABLE notes (body TEXT); INSERT INTO notes VALUES ('x');")
        .unwrap();
    let causes = [
        ("flipped.db", "damaged"),
        ("truncated.db", "damaged"),
        ("zeroed-header.db", "not a SQLite database"),
        ("version-0.db", "schema version 0"),
        ("version-99.db", "schema version 99"),
        ("no-grants.db", "grants table is missing"),
        ("foreign.db", "not a leasehold store"),
    ];

    let before = listing(&cases);
    let sums: Vec<(PathBuf, String)> = causes
        .iter()
        .map(|(name, _)| (at(name), sha256(&at(name))))
        .collect();
    let workflow = workflow_file();
    for (name, cause) in causes {
        let path = at(name).display().to_string();
        let creators = [
            vec!["seed", "--store", &path, "--effects", "5"],
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
        ]
        .map(|words| words.into_iter().map(str::to_owned).collect::<Vec<_>>());
        for args in writers(&path, &workflow).into_iter().chain(creators) {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let o = leasehold(&args);
            let err = assert_one_line_failure(&o, 2);
            assert!(
                err.contains(cause),
                "{name} {args:?}: says why ({cause}): {err}"
            );
        }
    }
    assert_eq!(
        listing(&cases),
        before,
        "nothing was created beside the stores"
    );
    for (path, sum) in sums {
        assert_eq!(sha256(&path), sum, "{} unchanged", path.display());
    }
}
