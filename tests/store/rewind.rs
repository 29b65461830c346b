//! A store that goes back in time or is swapped under its writers (SQLite): the rewind
//! witness refuses to write into it, running or restarted, until an operator accepts it;
//! after that every generation minted is above every earlier one. A removed or replaced
//! database or WAL file stops writes before the next commit.

use std::path::Path;

use leasehold::clock::ManualClock;
use leasehold::model::PageRequest;
use leasehold::model::work::NewWork;
use leasehold::store::epoch;
use leasehold::store::url::OpenMode;
use leasehold::store::witness::Witness;
use leasehold::store::{Keyed, Store};

use crate::support::{ok, open_sqlite, refused};

const COMPAT: &str = "compat";
const LEASE_MS: i64 = 1_000;
const NO_KEY: Keyed<'static> = Keyed { key: None };

fn witnessed(path: &Path, state: &Path, clock: &ManualClock) -> leasehold::Result<Store> {
    let store = open_sqlite(path, clock, OpenMode::Existing)?;
    let witness = Witness::open(state, &store)?;
    Ok(store.with_witness(witness))
}

/// A consistent copy of the store as it is now (`VACUUM INTO`, WAL included).
fn snapshot(path: &Path, to: &Path) {
    let conn = rusqlite::Connection::open(path).unwrap();
    conn.execute("VACUUM INTO ?1", [to.to_str().unwrap()])
        .unwrap();
}

/// Puts `from` in place of the store at `path`, in place (same inode), as a restore by
/// `cp` does, once no connection has it open.
fn restore(from: &Path, path: &Path) {
    for suffix in ["-wal", "-shm"] {
        let mut side = path.as_os_str().to_owned();
        side.push(suffix);
        let _ = std::fs::remove_file(side);
    }
    std::fs::copy(from, path).unwrap();
}

/// Acquires the lease `r` for `owner` and claims the item `w` for it; their generations.
fn mint(store: &Store, clock: &ManualClock, owner: &str) -> (u64, u64) {
    clock.advance(LEASE_MS * 2);
    let lease = ok("acquire", store.acquire("r", owner, 1_000.0, NO_KEY));
    let item = ok("claim", store.claim("w", owner, COMPAT, LEASE_MS));
    (lease.generation, item.generation)
}

fn new_store(dir: &Path, clock: &ManualClock) -> std::path::PathBuf {
    let path = dir.join("s.db");
    let store = open_sqlite(&path, clock, OpenMode::ReadWrite).unwrap();
    store
        .enqueue(NewWork::effect("w", "h", "{}"), COMPAT)
        .unwrap();
    path
}

#[test]
fn a_restarted_writer_refuses_an_older_copy_until_the_rewind_is_accepted() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let clock = ManualClock::new(1_000_000);
    let path = new_store(dir.path(), &clock);
    let old = dir.path().join("old.db");
    let mut minted = Vec::new();
    {
        let store = witnessed(&path, &state, &clock).unwrap();
        minted.push(mint(&store, &clock, "a"));
        snapshot(&path, &old);
        minted.push(mint(&store, &clock, "b"));
        minted.push(mint(&store, &clock, "c"));
    }
    restore(&old, &path);

    // A restarted writer: the witness on disk knows the store was further along.
    let refusal = witnessed(&path, &state, &clock).err().unwrap();
    assert_eq!(refusal.code(), "STORE_REWOUND", "{refusal}");
    assert!(refusal.to_string().contains("behind revision"), "{refusal}");

    // The operator accepts the store as it is: a new epoch, audited.
    let store = open_sqlite(&path, &clock, OpenMode::Existing).unwrap();
    let witness = Witness::load(&state, &store).unwrap();
    let store = store.with_witness(witness);
    let accepted = ok("accept", store.accept_rewind("op@host", Some("restored")));
    assert_eq!(accepted.epoch, 1);
    assert_eq!(accepted.generation_floor, epoch::floor(1).unwrap());
    let audit = store.list_audit(&PageRequest::first(10)).unwrap().rows;
    assert!(
        audit
            .iter()
            .any(|a| a.action == "accept-rewind" && a.outcome.contains("restored")),
        "{audit:?}"
    );

    // Writers start again, and every generation minted now is above every earlier one —
    // also for a resource the rewound store never heard of.
    let store = witnessed(&path, &state, &clock).unwrap();
    let (lease, item) = mint(&store, &clock, "d");
    store
        .enqueue(NewWork::effect("w2", "h", "{}"), COMPAT)
        .unwrap();
    let fresh = ok("claim w2", store.claim("w2", "d", COMPAT, LEASE_MS)).generation;
    let fresh_lease = ok("acquire r2", store.acquire("r2", "d", 1_000.0, NO_KEY)).generation;
    let highest = minted.iter().map(|(l, w)| *l.max(w)).max().unwrap();
    for g in [lease, item, fresh, fresh_lease] {
        assert!(
            g > highest && g > accepted.generation_floor,
            "{g} after {minted:?}"
        );
    }
}

#[test]
fn a_running_writer_refuses_once_the_store_is_behind_or_another() {
    for (what, rewind) in [
        (
            "revision behind",
            "UPDATE meta SET value = value - 2 WHERE key = 'revision'",
        ),
        (
            "another store",
            "UPDATE meta SET value = value + 1 WHERE key = 'store_id'",
        ),
        (
            "older epoch",
            "UPDATE meta SET value = -1 WHERE key = 'store_epoch'",
        ),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let clock = ManualClock::new(1_000_000);
        let path = new_store(dir.path(), &clock);
        let store = witnessed(&path, &dir.path().join("state"), &clock).unwrap();
        mint(&store, &clock, "a");
        mint(&store, &clock, "b");
        let other = rusqlite::Connection::open(&path).unwrap();
        other.execute_batch(rewind).unwrap();
        let code = refused(what, store.acquire("r", "c", 1_000.0, NO_KEY).map(|_| ()));
        assert!(
            ["STORE_REWOUND", "STORE_CORRUPT"].contains(&code),
            "{what}: {code}"
        );
        // Once refused, nothing more is written through this store, whatever follows.
        let revision = other
            .query_row("SELECT value FROM meta WHERE key = 'revision'", [], |r| {
                r.get::<_, i64>(0)
            })
            .unwrap();
        assert!(store.untrusted().is_some(), "{what}");
        refused(what, store.claim("w", "c", COMPAT, LEASE_MS).map(|_| ()));
        let after = other
            .query_row("SELECT value FROM meta WHERE key = 'revision'", [], |r| {
                r.get::<_, i64>(0)
            })
            .unwrap();
        assert_eq!(revision, after, "{what}: a write went through");
    }
}

#[test]
fn a_removed_wal_or_replaced_file_stops_writes_before_the_next_commit() {
    for victim in ["-wal", ""] {
        let dir = tempfile::tempdir().unwrap();
        let clock = ManualClock::new(1_000_000);
        let path = new_store(dir.path(), &clock);
        let store = open_sqlite(&path, &clock, OpenMode::Existing).unwrap();
        mint(&store, &clock, "a");
        let mut file = path.as_os_str().to_owned();
        file.push(victim);
        if victim.is_empty() {
            // A restore moved into place: a new file under the same name.
            let copy = dir.path().join("copy.db");
            std::fs::copy(&path, &copy).unwrap();
            std::fs::rename(&copy, &file).unwrap();
        } else {
            std::fs::remove_file(&file).unwrap();
        }
        let err = store
            .acquire("r", "b", 1_000.0, NO_KEY)
            .map(|_| ())
            .unwrap_err();
        assert_eq!(err.code(), "STORE_CORRUPT", "{victim}: {err}");
        let which = if victim.is_empty() {
            "database file"
        } else {
            "WAL file"
        };
        assert!(err.to_string().contains(which), "{err}");
        assert!(store.untrusted().is_some());
    }
}

#[test]
fn accepting_says_how_many_commits_are_lost_and_a_second_accept_has_nothing_to_accept() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let clock = ManualClock::new(1_000_000);
    let path = new_store(dir.path(), &clock);
    let old = dir.path().join("old.db");
    let (saw, kept) = {
        let store = witnessed(&path, &state, &clock).unwrap();
        mint(&store, &clock, "a");
        snapshot(&path, &old);
        let kept = store.revision().unwrap();
        mint(&store, &clock, "b");
        mint(&store, &clock, "c");
        (store.revision().unwrap(), kept)
    };
    restore(&old, &path);
    let unjudged = || {
        let store = open_sqlite(&path, &clock, OpenMode::Existing).unwrap();
        let witness = Witness::load(&state, &store).unwrap();
        store.with_witness(witness)
    };

    let store = unjudged();
    let cost = ok("cost", store.rewind_cost());
    assert!(cost.rewound);
    assert_eq!(cost.store.revision, kept);
    assert_eq!(cost.lost_commits, Some(saw - kept), "{cost:?}");
    let line = cost.line();
    assert!(
        line.contains(&format!(
            "revision {kept} (epoch 0), this host saw revision {saw}: {} commit(s) are lost",
            saw - kept
        )),
        "{line}"
    );
    // Two mints, each a lease and a claim granted: four generations the copy lacks.
    assert!(
        line.contains("holding 0 acknowledged completion(s) and 4 generation(s) minted"),
        "{line}"
    );
    ok("accept", store.accept_rewind("op@host", None));

    // The witness moved with the store: there is nothing left to accept.
    let cost = ok("cost again", unjudged().rewind_cost());
    assert!(!cost.rewound, "{cost:?}");
    assert_eq!(cost.store.epoch, 1);
}

#[test]
fn a_revision_lowered_below_its_history_is_refused_at_open_and_named_by_the_check() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(1_000_000);
    let path = new_store(dir.path(), &clock);
    let high = {
        let store = open_sqlite(&path, &clock, OpenMode::Existing).unwrap();
        mint(&store, &clock, "a");
        mint(&store, &clock, "b");
        store.revision().unwrap()
    };
    rusqlite::Connection::open(&path)
        .unwrap()
        .execute_batch("UPDATE meta SET value = 1 WHERE key = 'revision'")
        .unwrap();
    let url = path.display().to_string();
    for mode in [OpenMode::Existing, OpenMode::ReadWrite] {
        let e = leasehold::store::url::open(&url, mode).err().unwrap();
        assert_eq!(e.code(), "STORE_CORRUPT", "{e}");
        assert!(
            e.to_string()
                .contains(&format!("revision is 1, below revision {high}")),
            "{e}"
        );
    }
    let reader = leasehold::store::url::open(&url, OpenMode::ReadOnly).unwrap();
    let report =
        leasehold::check::check(&reader, &leasehold::check::CheckOptions::at(reader.now()))
            .unwrap();
    assert!(report.violations.is_empty(), "{:?}", report.violations);
    assert!(!report.is_clean());
    let damage: Vec<_> = report.damage.iter().map(|d| d.invariant).collect();
    assert_eq!(damage, ["revision-lowered"]);
    assert_eq!(report.damage[0].ids, ["1".to_owned(), high.to_string()]);
}
