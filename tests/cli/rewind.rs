//! A store that went back in time, or whose revision was lowered, as the command line
//! names it: `check` and `inspect overview` judge it by this host's rewind witness as the
//! writers here do, `store accept-rewind` says what accepting gives up and accepts a rewind
//! once, and a lowered revision is damage that writers refuse and `check` names.

use std::path::Path;
use std::process::Output;

use leasehold::model::work::NewWork;
use leasehold::store::Store;
use leasehold::store::url::{OpenMode, open};
use leasehold::store::witness::Witness;

use super::{assert_one_line_failure, code, stderr, stdout};

/// `leasehold ARGS` with this host's witnesses in `state`.
fn at(state: &Path, args: &[&str]) -> Output {
    crate::support::failure::run_in(state, args)
}

/// One `work enqueue` of a no-op item, a writer under the witness in `state`, and what it
/// answered.
fn enqueue_one(state: &Path, store: &str, extra: &[&str]) -> Output {
    let args = [
        "work",
        "enqueue",
        "--store",
        store,
        "--handler",
        "h",
        "--payload",
        "{}",
    ];
    at(state, &[&args[..], extra].concat())
}

/// `n` items enqueued through the command line, a writer under the witness in `state`.
fn enqueue(state: &Path, store: &str, from: usize, n: usize) {
    for i in from..from + n {
        let o = enqueue_one(state, store, &["--id", &format!("fx-{i}")]);
        assert_eq!(code(&o), 0, "{}", stderr(&o));
    }
}

/// A store this host wrote up to revision `saw`, put back to an older copy at revision
/// `kept`: (store, state dir, saw, kept).
fn rewound(dir: &Path) -> (String, std::path::PathBuf, u64, u64) {
    let state = dir.join("state");
    let path = dir.join("s.db");
    let store = path.display().to_string();
    assert_eq!(code(&at(&state, &["init", &store])), 0);
    enqueue(&state, &store, 0, 2);
    let old = dir.join("old.db");
    rusqlite::Connection::open(&path)
        .unwrap()
        .execute("VACUUM INTO ?1", [old.to_str().unwrap()])
        .unwrap();
    let revision = || {
        open(&store, OpenMode::ReadOnly)
            .unwrap()
            .revision()
            .unwrap()
    };
    let kept = revision();
    enqueue(&state, &store, 2, 3);
    let saw = revision();
    for side in ["-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{store}{side}"));
    }
    std::fs::copy(&old, &path).unwrap();
    (store, state, saw, kept)
}

#[test]
fn check_and_the_overview_name_a_rewound_store_as_the_writers_here_refuse_it() {
    let dir = tempfile::tempdir().unwrap();
    let (store, state, saw, kept) = rewound(dir.path());

    let writer = enqueue_one(&state, &store, &[]);
    assert!(assert_one_line_failure(&writer, 2).contains("STORE_REWOUND"));

    let o = at(&state, &["check", "--store", &store]);
    assert_one_line_failure(&o, 1);
    let out = stdout(&o);
    let finding = format!(
        "store-rewound [{saw}, {kept}] this host saw revision {saw}, the store is at revision {kept}"
    );
    assert!(out.starts_with(&finding), "{out}");
    assert!(!out.contains("OK:"), "{out}");
    let o = at(&state, &["check", "--store", &store, "--json"]);
    let first: serde_json::Value =
        serde_json::from_str(stdout(&o).lines().next().unwrap()).unwrap();
    assert_eq!(first["invariant"], "store-rewound", "{first}");

    // Another host (another state directory) never wrote to it, but the record beside the
    // store file saw what the last writer saw: the file was restored alone.
    let elsewhere = dir.path().join("elsewhere");
    let o = at(&elsewhere, &["check", "--store", &store]);
    assert_eq!(code(&o), 1, "{}", stdout(&o));
    assert!(stdout(&o).starts_with("store-rewound ["), "{}", stdout(&o));
    let writer = enqueue_one(&elsewhere, &store, &[]);
    assert!(assert_one_line_failure(&writer, 2).contains("STORE_REWOUND"));
    let o = at(
        &elsewhere,
        &[
            "check",
            "--store",
            &store,
            "--state-dir",
            state.to_str().unwrap(),
        ],
    );
    assert_eq!(
        code(&o),
        1,
        "--state-dir is the witness judged by: {}",
        stdout(&o)
    );

    let o = at(&state, &["inspect", "overview", "--store", &store]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let line = stdout(&o)
        .lines()
        .find(|l| l.starts_with("rewound"))
        .unwrap()
        .to_owned();
    assert!(
        line.contains(&format!(
            "YES: this host saw revision {saw}, the store is at revision {kept}"
        )),
        "{line}"
    );
    let o = at(
        &state,
        &["inspect", "overview", "--store", &store, "--json"],
    );
    let row: serde_json::Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    assert_eq!(row["rewound"]["witnessed"]["revision"], saw, "{row}");
    let o = at(&elsewhere, &["inspect", "overview", "--store", &store]);
    assert!(stdout(&o).contains("\nrewound      YES"), "{}", stdout(&o));
}

#[test]
fn accept_rewind_says_what_is_lost_dry_runs_and_accepts_a_rewind_once() {
    let dir = tempfile::tempdir().unwrap();
    let (store, state, saw, kept) = rewound(dir.path());
    let epoch = || {
        let o = at(&state, &["check", "--store", &store, "--json"]);
        let summary: serde_json::Value =
            serde_json::from_str(stdout(&o).lines().last().unwrap()).unwrap();
        summary["summary"]["storeEpoch"].as_u64().unwrap()
    };
    let lost = format!(
        "the store is at revision {kept} (epoch 0), this host saw revision {saw}: {} commit(s) are lost, holding 0 acknowledged completion(s) and 0 generation(s) minted",
        saw - kept
    );

    let o = at(
        &state,
        &["store", "accept-rewind", "--store", &store, "--dry-run"],
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(stdout(&o).starts_with(&lost), "{}", stdout(&o));
    assert_eq!(stdout(&o).lines().count(), 1, "{}", stdout(&o));
    assert_eq!(epoch(), 0, "a dry run accepts nothing");

    let o = at(&state, &["store", "accept-rewind", "--store", &store]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(stdout(&o).starts_with(&lost), "{}", stdout(&o));
    assert!(stdout(&o).contains("accepted "), "{}", stdout(&o));
    assert_eq!(epoch(), 1);

    let o = at(&state, &["store", "accept-rewind", "--store", &store]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(
        stdout(&o).starts_with("nothing to accept: "),
        "{}",
        stdout(&o)
    );
    assert_eq!(stdout(&o).lines().count(), 1);
    assert_eq!(epoch(), 1, "a second accept starts no epoch");
    let o = at(
        &state,
        &["store", "accept-rewind", "--store", &store, "--json"],
    );
    let json: serde_json::Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    assert_eq!(json["accepted"], serde_json::Value::Null, "{json}");
    assert_eq!(json["cost"]["rewound"], false, "{json}");
    assert_eq!(code(&at(&state, &["check", "--store", &store])), 0);
}

#[test]
fn a_lowered_revision_is_named_by_check_and_refused_by_writers() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let store = dir.path().join("s.db").display().to_string();
    let high = {
        let s = open(&store, OpenMode::ReadWrite).unwrap();
        for i in 0..5 {
            let id = format!("fx-{i}");
            s.enqueue(NewWork::effect(&id, "h", "{}"), "k").unwrap();
            s.claim(&id, "a", "k", 60_000).unwrap();
        }
        s.revision().unwrap()
    };
    rusqlite::Connection::open(&store)
        .unwrap()
        .execute_batch("UPDATE meta SET value = 2 WHERE key = 'revision'")
        .unwrap();
    let o = at(&state, &["check", "--store", &store]);
    assert_one_line_failure(&o, 1);
    let out = stdout(&o);
    assert_eq!(out.lines().count(), 2, "one finding and the verdict: {out}");
    assert!(
        out.starts_with(&format!(
            "revision-lowered [2, {high}] the store's revision is 2, below revision {high}"
        )),
        "{out}"
    );
    let writer = enqueue_one(&state, &store, &[]);
    let err = assert_one_line_failure(&writer, 2);
    assert!(
        err.contains("STORE_CORRUPT") && err.contains(&format!("below revision {high}")),
        "{err}"
    );
}

/// A record moved below the revisions before it (by hand): a store without revision
/// indexes reads ranges of revisions by position, so `check` names the disorder and checks
/// nothing else, and a read of the history and a copy refuse rather than skip or repeat
/// records.
#[test]
fn a_history_out_of_order_is_named_by_check_and_its_reads_and_copies_refused() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let store = dir.path().join("s.db").display().to_string();
    let (position, previous) = {
        let s = open(&store, OpenMode::ReadWrite).unwrap();
        for i in 0..5 {
            let id = format!("fx-{i}");
            s.enqueue(NewWork::effect(&id, "h", "{}"), "k").unwrap();
            s.claim(&id, "a", "k", 60_000).unwrap();
        }
        let (grants, _) = s.ownership_history(None, 0, 100).unwrap();
        assert_eq!(grants.len(), 5);
        let conn = rusqlite::Connection::open(&store).unwrap();
        let position: i64 = conn
            .query_row("SELECT max(seq) FROM grants", [], |r| r.get(0))
            .unwrap();
        (position, grants[3].revision)
    };
    rusqlite::Connection::open(&store)
        .unwrap()
        .execute("UPDATE grants SET revision = 1 WHERE seq = ?1", [position])
        .unwrap();
    let o = at(&state, &["check", "--store", &store]);
    assert_one_line_failure(&o, 1);
    let out = stdout(&o);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 2, "one finding and the verdict: {out}");
    assert!(
        lines[0].starts_with(&format!(
            "history-out-of-order [grants, {position}, 1, {previous}] the grants record at position {position} carries revision 1"
        )),
        "{out}"
    );
    assert_eq!(
        lines[1],
        "DAMAGED: nothing else was checked: the history cannot be read in order of its revisions"
    );
    let s = open(&store, OpenMode::ReadOnly).unwrap();
    let err = s.ownership_history(None, 0, 100).unwrap_err();
    assert_eq!(err.code(), "STORE_CORRUPT", "{err}");
    assert!(err.to_string().contains("out of order"), "{err}");
    drop(s);
    // A copy would carry the history over short: it refuses, and leaves no target.
    let target = dir.path().join("copy.db");
    let o = at(
        &state,
        &[
            "copy",
            "--from",
            &store,
            "--to",
            &target.display().to_string(),
        ],
    );
    let err = assert_one_line_failure(&o, 2);
    assert!(
        err.contains("STORE_CORRUPT") && err.contains("out of order"),
        "{err}"
    );
    assert!(!target.exists(), "the refused copy left its target");
}

/// `store` opened by a writer on the host whose rewind witnesses are in `state`.
fn host(state: &Path, store: &str) -> Store {
    let s = open(store, OpenMode::Existing).unwrap();
    let witness = Witness::open(state, &s).unwrap();
    s.with_witness(witness)
}

/// Effects `from..from + n` enqueued, claimed and completed by a writer on the host of
/// `state`: three commits each, one generation minted and one completion acknowledged.
fn run_effects(state: &Path, store: &str, from: usize, n: usize) {
    let s = host(state, store);
    for i in from..from + n {
        let id = format!("fx-{i}");
        s.enqueue(NewWork::effect(&id, "h", "{}"), "k").unwrap();
        let item = s.claim(&id, "a", "k", 60_000).unwrap();
        s.complete(&id, "a", item.generation, None).unwrap();
    }
}

fn revision(store: &str) -> u64 {
    open(store, OpenMode::ReadOnly).unwrap().revision().unwrap()
}

/// A store this host wrote up to revision `saw`, put back to an older copy at `kept`
/// together with the record beside it (which that record cannot tell), then written past
/// `saw` by a host that never saw it and by `seed`: (store, state dir, saw, kept).
fn forked(dir: &Path) -> (String, std::path::PathBuf, u64, u64) {
    let state = dir.join("state");
    let path = dir.join("s.db");
    let store = path.display().to_string();
    let beside = format!("{store}.leasehold-witness");
    assert_eq!(code(&at(&state, &["init", &store])), 0);
    run_effects(&state, &store, 0, 2);
    let old = dir.join("old.db");
    rusqlite::Connection::open(&path)
        .unwrap()
        .execute("VACUUM INTO ?1", [old.to_str().unwrap()])
        .unwrap();
    let old_beside = dir.join("old.db.leasehold-witness");
    std::fs::copy(&beside, &old_beside).unwrap();
    let kept = revision(&store);
    run_effects(&state, &store, 2, 3);
    let saw = revision(&store);
    for side in ["-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{store}{side}"));
    }
    std::fs::copy(&old, &path).unwrap();
    std::fs::copy(&old_beside, &beside).unwrap();

    let fresh = dir.join("fresh");
    run_effects(&fresh, &store, 10, 1);
    let seeded = at(&fresh, &["seed", "--store", &store, "--effects", "20"]);
    assert_eq!(code(&seeded), 0, "{}", stderr(&seeded));
    assert!(revision(&store) > saw, "the fork passed revision {saw}");
    (store, state, saw, kept)
}

#[test]
fn a_fork_written_past_what_this_host_saw_is_refused_here_and_named_by_check() {
    let dir = tempfile::tempdir().unwrap();
    let (store, state, saw, _) = forked(dir.path());
    let now = revision(&store);

    let writer = enqueue_one(&state, &store, &[]);
    let err = assert_one_line_failure(&writer, 2);
    assert!(
        err.contains("STORE_REWOUND")
            && err.contains(&format!("diverges at or before revision {saw}")),
        "{err}"
    );
    let err = host_error(&state, &store);
    assert!(err.contains("diverges"), "{err}");

    let o = at(&state, &["check", "--store", &store]);
    assert_one_line_failure(&o, 1);
    assert!(
        stdout(&o).starts_with(&format!("store-forked [{saw}, {now}] this host saw revision {saw}, the store is at revision {now}")),
        "{}",
        stdout(&o)
    );
    // The host that wrote the fork, and the record beside it, saw only the fork: restored
    // together with that record, the older copy is invisible to them (see the README).
    let o = at(&dir.path().join("fresh"), &["check", "--store", &store]);
    assert_eq!(code(&o), 0, "{}", stdout(&o));

    let o = at(
        &state,
        &["store", "accept-rewind", "--store", &store, "--dry-run"],
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let line = stdout(&o);
    assert_eq!(line.lines().count(), 1, "{line}");
    assert!(
        line.contains(&format!("this host saw revision {saw} and the store's history diverges at or before it: the store lacks at least "))
            && line.contains("acknowledged completion(s)"),
        "{line}"
    );
    let o = at(&state, &["store", "accept-rewind", "--store", &store]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(stdout(&o).contains("accepted "), "{}", stdout(&o));
    let o = at(&state, &["store", "accept-rewind", "--store", &store]);
    assert!(
        stdout(&o).starts_with("nothing to accept: "),
        "{}",
        stdout(&o)
    );
    run_effects(&state, &store, 40, 1);
    assert_eq!(code(&at(&state, &["check", "--store", &store])), 0);
}

/// Why a writer on the host of `state` refuses `store` when it opens it.
fn host_error(state: &Path, store: &str) -> String {
    let s = open(store, OpenMode::ReadOnly).unwrap();
    Witness::open(state, &s).unwrap_err().to_string()
}

#[test]
fn an_edited_or_cut_history_is_named_by_check_at_its_revision() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let store = dir.path().join("s.db").display().to_string();
    drop(open(&store, OpenMode::ReadWrite).unwrap());
    run_effects(&state, &store, 0, 3);
    assert_eq!(code(&at(&state, &["check", "--store", &store])), 0);
    let db = rusqlite::Connection::open(&store).unwrap();
    let edited: u64 = db
        .query_row("SELECT min(revision) FROM writes", [], |r| r.get(0))
        .unwrap();
    db.execute(
        "UPDATE writes SET detail = '{}' WHERE revision = ?1",
        [edited],
    )
    .unwrap();
    let o = at(&state, &["check", "--store", &store]);
    assert_one_line_failure(&o, 1);
    assert!(
        stdout(&o).starts_with(&format!(
            "history-edited [{edited}] the chain link of revision {edited} does not recompute"
        )),
        "{}",
        stdout(&o)
    );

    let head = revision(&store);
    db.execute("DELETE FROM chain WHERE revision >= ?1", [head - 1])
        .unwrap();
    let o = at(&state, &["check", "--store", &store, "--json"]);
    assert_eq!(code(&o), 1);
    let cut = stdout(&o)
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find(|f| f["invariant"] == "history-truncated")
        .unwrap();
    assert_eq!(
        cut["ids"],
        serde_json::json!([(head - 1).to_string(), head.to_string()]),
        "{cut}"
    );
}

#[test]
fn check_names_a_revision_this_host_saw_that_retention_trimmed_as_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    let (state, elsewhere) = (dir.path().join("state"), dir.path().join("elsewhere"));
    crate::support::trimmed::on_sqlite(dir.path(), |raw| {
        let (saw, kept) =
            crate::support::trimmed::trimmed_past_the_same_history(raw, &state, &elsewhere);
        let o = at(&state, &["check", "--store", raw.url]);
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        let out = stdout(&o);
        assert!(
            out.starts_with(&format!("witness-beyond-history [{saw}, {kept}] ")),
            "{out}"
        );
        assert!(out.contains("milestone revision 65536"), "{out}");
        assert!(!out.contains("OK:") && out.contains("WARNING:"), "{out}");
    });
}

/// `store acknowledge-server-change` on a store with no server: a SQLite file has no change
/// to acknowledge (nothing is written), and `memory` is refused in one line.
#[test]
fn a_store_without_a_server_has_no_server_change_to_acknowledge() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let store = dir.path().join("s.db").display().to_string();
    drop(open(&store, OpenMode::ReadWrite).unwrap());
    let o = enqueue_one(&state, &store, &[]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let before = revision(&store);
    let o = at(
        &state,
        &["store", "acknowledge-server-change", "--store", &store],
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(
        stdout(&o).starts_with("nothing to acknowledge: ")
            && stdout(&o).contains("shows no change of database server"),
        "{}",
        stdout(&o)
    );
    assert_eq!(revision(&store), before, "nothing was written");
    let o = at(
        &state,
        &["store", "acknowledge-server-change", "--store", "memory"],
    );
    let err = assert_one_line_failure(&o, 2);
    assert!(err.contains("nothing to acknowledge"), "{err}");
}
