//! A damaged store stops every writer before it writes: each variant of damage × each
//! command that writes (`seed` and `init` included) is refused with one line (exit 2), and
//! the file's bytes — and the directory's listing — are exactly as they were. `store
//! verify` refuses each in one line too, and writes nothing.
//!
//! Writers open in constant time: they check the header, the schema and every table's and
//! index's root page, and SQLite reports damage on any other page a command reads. Every
//! variant here is found that way; `store verify` reads every page. Damage below the roots
//! is `verify.rs`'s.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use super::creation::{workflow_file, writers};
use super::refusals::{listing, sha256};
use super::{assert_one_line_failure, code, leasehold};

/// SQLite's page size for the stores `leasehold init` creates.
pub(super) const PAGE: usize = 4096;

/// A healthy store with some of everything in it, closed (its WAL folded in).
pub(super) fn healthy(dir: &Path) -> PathBuf {
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
pub(super) fn damaged(from: &Path, to: &Path, damage: impl FnOnce(&mut Vec<u8>)) {
    let mut bytes = std::fs::read(from).unwrap();
    damage(&mut bytes);
    std::fs::write(to, bytes).unwrap();
}

/// Each variant of damage, as a file in `cases`, with the words its refusal says why in.
fn variants(dir: &Path, cases: &Path) -> [(&'static str, &'static str); 7] {
    let good = healthy(dir);
    std::fs::create_dir(cases).unwrap();
    let at = |name: &str| cases.join(name);

    damaged(&good, &at("flipped.db"), |b| {
        // The header of the leases table's root page: the writers' open finds it.
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
    [
        ("flipped.db", "damaged"),
        ("truncated.db", "damaged"),
        ("zeroed-header.db", "not a SQLite database"),
        ("version-0.db", "schema version 0"),
        ("version-99.db", "schema version 99"),
        ("no-grants.db", "grants table is missing"),
        ("foreign.db", "not a leasehold store"),
    ]
}

#[test]
fn writers_refuse_a_damaged_store_and_write_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let cases = dir.path().join("cases");
    let causes = variants(dir.path(), &cases);
    let at = |name: &str| cases.join(name);

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
        let init = vec!["init".to_owned(), path.clone()];
        for args in writers(&path, &workflow)
            .into_iter()
            .chain(creators)
            .chain([init])
        {
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

/// `store verify` reads as every reader does: SQLite may leave its `-wal` / `-shm` beside a
/// store nobody else has open, and nothing is written into it.
#[test]
fn store_verify_refuses_every_variant_in_one_line_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let cases = dir.path().join("cases");
    let causes = variants(dir.path(), &cases);
    let at = |name: &str| cases.join(name);
    let before = listing(&cases);
    let sums: Vec<(PathBuf, String)> = causes
        .iter()
        .map(|(name, _)| (at(name), sha256(&at(name))))
        .collect();
    for (name, cause) in causes {
        let path = at(name).display().to_string();
        let err = assert_one_line_failure(&leasehold(&["store", "verify", &path]), 2);
        assert!(
            err.contains(cause),
            "{name} store verify: says why ({cause}): {err}"
        );
    }
    let sidecar = |n: &String| n.ends_with("-wal") || n.ends_with("-shm");
    let after: BTreeSet<String> = listing(&cases)
        .into_iter()
        .filter(|n| !sidecar(n))
        .collect();
    assert_eq!(
        after, before,
        "store verify created nothing but SQLite's sidecars"
    );
    for (path, sum) in sums {
        assert_eq!(
            sha256(&path),
            sum,
            "{} unchanged by store verify",
            path.display()
        );
    }
}
