//! A store whose retention trimmed the history past the revision a host's witness saw,
//! on either durable provider: the store is put at a revision just below a chain
//! milestone (`store/chain.rs`) by its meta row, written through a witnessed writer, and
//! trimmed as retention trims (history and links below the kept mark, the milestones
//! kept) by SQL on the store itself, so the tests need neither a million revisions nor
//! 65,536.

use std::path::Path;

use leasehold::model::work::NewWork;
use leasehold::store::Store;
use leasehold::store::chain::MILESTONE;
use leasehold::store::url::{OpenMode, open};
use leasehold::store::witness::Witness;

/// The raw hands on one store: SQL run on it (every writer closed), and a copy of it
/// kept and put back, as a backup and its restore.
pub struct Raw<'a> {
    pub url: &'a str,
    pub sql: &'a dyn Fn(&str),
    pub keep_copy: &'a dyn Fn(),
    pub put_copy_back: &'a dyn Fn(),
}

/// A writer on the host whose witnesses are in `state`.
pub fn host(state: &Path, url: &str) -> leasehold::Result<Store> {
    let store = open(url, OpenMode::Existing)?;
    let witness = Witness::open(state, &store)?;
    Ok(store.with_witness(witness))
}

/// Effects `from..from + n` enqueued, claimed and completed: three commits each, one
/// generation minted and one completion acknowledged.
pub fn run_effects(store: &Store, from: usize, n: usize) {
    for i in from..from + n {
        let id = format!("fx-{i}");
        store.enqueue(NewWork::effect(&id, "h", "{}"), "k").unwrap();
        let item = store.claim(&id, "a", "k", 60_000).unwrap();
        store.complete(&id, "a", item.generation, None).unwrap();
    }
}

/// Sets the kept-history mark.
fn history_from(raw: &Raw<'_>, from: u64) {
    (raw.sql)(&format!(
        "INSERT INTO meta (key, value) VALUES ('history_from', {from})
         ON CONFLICT (key) DO UPDATE SET value = excluded.value"
    ));
}

/// A new store at revision `MILESTONE - 4`, its history (a few enqueues, no grant) trimmed
/// as if retention had kept it from the next revision.
pub fn below_a_milestone(raw: &Raw<'_>) -> u64 {
    drop(open(raw.url, OpenMode::ReadWrite).unwrap());
    let at = MILESTONE - 4;
    (raw.sql)(&format!(
        "UPDATE meta SET value = {at} WHERE key = 'revision';
         DELETE FROM chain; DELETE FROM grants; DELETE FROM writes;"
    ));
    history_from(raw, at + 1);
    at
}

/// What retention does when it keeps the history from `from` on: the history and links
/// below it go, the milestones' links stay.
pub fn trim(raw: &Raw<'_>, from: u64) {
    history_from(raw, from);
    (raw.sql)(&format!(
        "DELETE FROM chain WHERE revision < {from} AND revision % {MILESTONE} <> 0;
         DELETE FROM grants WHERE revision < {from};
         DELETE FROM writes WHERE revision < {from};"
    ));
}

fn revision(url: &str) -> u64 {
    open(url, OpenMode::ReadOnly).unwrap().revision().unwrap()
}

/// A host saw the store past a milestone; an older copy was put back and written past it
/// by a host that never saw it, then trimmed past what the first host saw: the first
/// host's writers refuse it (its link at the milestone differs). Returns the refusal.
pub fn a_fork_at_the_milestone(raw: &Raw<'_>, here: &Path, elsewhere: &Path) -> String {
    below_a_milestone(raw);
    (raw.keep_copy)();
    run_effects(&host(here, raw.url).unwrap(), 0, 2);
    let saw = revision(raw.url);
    assert!(saw > MILESTONE, "the host saw revision {saw}");
    (raw.put_copy_back)();
    run_effects(&host(elsewhere, raw.url).unwrap(), 10, 3);
    trim(raw, saw + 2);
    let e = host(here, raw.url).err().unwrap();
    assert_eq!(e.code(), "STORE_REWOUND", "{e}");
    e.to_string()
}

/// A host's writer saw the store below a milestone, another host's commit crossed it, and
/// the same writer wrote again after it; an older copy was put back and written past all that by a
/// third host (with more completions, so the counts alone would pass), then trimmed past
/// what the first host saw: its writers refuse it at the milestone, which it kept although
/// its own commits never landed on it. Returns the refusal.
pub fn a_fork_at_a_milestone_another_host_crossed(
    raw: &Raw<'_>,
    here: &Path,
    elsewhere: &Path,
) -> String {
    let at = below_a_milestone(raw);
    (raw.keep_copy)();
    // One writer kept open throughout, as an authority is: it opened below the milestone.
    let writer = host(here, raw.url).unwrap();
    run_effects(&writer, 0, 1);
    assert!(revision(raw.url) < MILESTONE);
    run_effects(&host(&elsewhere.join("crossing"), raw.url).unwrap(), 10, 1);
    assert!(revision(raw.url) > MILESTONE);
    run_effects(&writer, 20, 1);
    drop(writer);
    let saw = revision(raw.url);
    (raw.put_copy_back)();
    assert_eq!(revision(raw.url), at);
    run_effects(&host(&elsewhere.join("fresh"), raw.url).unwrap(), 30, 4);
    trim(raw, saw + 2);
    let e = host(here, raw.url).err().unwrap();
    assert_eq!(e.code(), "STORE_REWOUND", "{e}");
    e.to_string()
}

/// A host saw the store with some completions; an older copy was put back and written
/// past it with none, then trimmed past what the host saw (no milestone in between): its
/// writers refuse it by the counts. Returns the refusal.
pub fn fewer_completions_than_seen(raw: &Raw<'_>, here: &Path, elsewhere: &Path) -> String {
    drop(open(raw.url, OpenMode::ReadWrite).unwrap());
    (raw.keep_copy)();
    run_effects(&host(here, raw.url).unwrap(), 0, 3);
    let saw = revision(raw.url);
    (raw.put_copy_back)();
    let other = host(elsewhere, raw.url).unwrap();
    for i in 10..22 {
        other
            .enqueue(NewWork::effect(format!("fx-{i}"), "h", "{}"), "k")
            .unwrap();
    }
    drop(other);
    assert!(revision(raw.url) > saw + 2);
    trim(raw, saw + 2);
    let e = host(here, raw.url).err().unwrap();
    assert_eq!(e.code(), "STORE_REWOUND", "{e}");
    e.to_string()
}

/// A host saw the store past a milestone; the store went on along the same history and
/// was trimmed past what the host saw: (the revision the host saw, the first kept).
pub fn trimmed_past_the_same_history(raw: &Raw<'_>, here: &Path, elsewhere: &Path) -> (u64, u64) {
    below_a_milestone(raw);
    run_effects(&host(here, raw.url).unwrap(), 0, 2);
    let saw = revision(raw.url);
    run_effects(&host(elsewhere, raw.url).unwrap(), 10, 2);
    trim(raw, saw + 2);
    (saw, saw + 2)
}

/// Runs `test` on a SQLite store in `dir` with its raw hands: a copy kept with
/// `VACUUM INTO` and put back in place (the record beside it removed: it was kept before
/// the store had one).
pub fn on_sqlite<T>(dir: &Path, test: impl FnOnce(&Raw<'_>) -> T) -> T {
    let path = dir.join("s.db");
    let copy = dir.join("copy.db");
    let url = path.display().to_string();
    let sql = |sql: &str| {
        rusqlite::Connection::open(&path)
            .unwrap()
            .execute_batch(sql)
            .unwrap();
    };
    let keep_copy = || {
        rusqlite::Connection::open(&path)
            .unwrap()
            .execute("VACUUM INTO ?1", [copy.to_str().unwrap()])
            .unwrap();
    };
    let put_copy_back = || {
        for side in ["-wal", "-shm", ".leasehold-witness"] {
            let _ = std::fs::remove_file(format!("{url}{side}"));
        }
        std::fs::copy(&copy, &path).unwrap();
    };
    test(&Raw {
        url: &url,
        sql: &sql,
        keep_copy: &keep_copy,
        put_copy_back: &put_copy_back,
    })
}
