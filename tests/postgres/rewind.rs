//! A database that went back in time, or another server under the same URL: writes fail
//! closed, across restarts by this host's rewind witness, until an operator accepts it.

use leasehold::check::{CheckOptions, check, damage_codes};
use leasehold::model::work::NewWork;
use leasehold::store::Store;
use leasehold::store::url::{self, OpenMode};
use leasehold::store::witness::{Rewound, Witness};

use crate::support::authorities::HANDLER;
use crate::support::postgres::{Server, database};

/// The database lost commits this process saw acknowledged (as after a failover to a
/// replica that was behind): the next write fails closed instead of minting a generation
/// again.
#[test]
fn a_store_that_went_back_in_time_refuses_writes() {
    let db = database();
    let store = url::open(db.url(), OpenMode::ReadWrite).unwrap();
    for i in 0..3 {
        store
            .enqueue(NewWork::effect(format!("fx-{i}"), HANDLER, "{}"), "k")
            .unwrap();
    }
    assert_eq!(store.revision().unwrap(), 3);
    let mut admin = postgres::Client::connect(db.url(), postgres::NoTls).unwrap();
    admin
        .batch_execute("UPDATE meta SET value = 1 WHERE key = 'revision'")
        .unwrap();
    let e = store
        .enqueue(NewWork::effect("fx-9", HANDLER, "{}"), "k")
        .unwrap_err();
    assert_eq!(e.code(), "STORE_CORRUPT", "{e}");
    assert!(store.work("fx-9").unwrap().is_none(), "nothing was written");
    // Without a rewind witness (next test) a process that opens the store afresh has no
    // memory of it: this guard is per process.
    let fresh = url::open(db.url(), OpenMode::ReadWrite).unwrap();
    fresh
        .enqueue(NewWork::effect("fx-9", HANDLER, "{}"), "k")
        .unwrap();
}

/// With this host's rewind witness the protection outlives the process: a writer started
/// after the database lost commits refuses it (`STORE_REWOUND`) until an operator accepts
/// the rewind; generations minted afterwards are above every earlier one.
#[test]
fn a_restarted_writer_refuses_a_rewound_database_until_accepted() {
    let db = database();
    let state = tempfile::tempdir().unwrap();
    let witnessed = || {
        let store = url::open(db.url(), OpenMode::ReadWrite).unwrap();
        Witness::open(state.path(), &store).map(|w| store.with_witness(w))
    };
    let store = witnessed().unwrap();
    let seen = store.witness().unwrap().seen().unwrap();
    assert!(
        seen.server.is_some(),
        "the test server lets us read its identity"
    );
    for i in 0..3 {
        store
            .enqueue(NewWork::effect(format!("fx-{i}"), HANDLER, "{}"), "k")
            .unwrap();
    }
    let claimed = store.claim("fx-0", "a", "k", 60_000).unwrap().generation;
    drop(store);
    let mut admin = postgres::Client::connect(db.url(), postgres::NoTls).unwrap();
    // What a replica that was behind holds: neither the claim nor its history.
    admin
        .batch_execute(
            "UPDATE meta SET value = 1 WHERE key = 'revision';
             DELETE FROM grants WHERE revision > 1;
             DELETE FROM writes WHERE revision > 1;
             DELETE FROM chain WHERE revision > 1;
             UPDATE work SET generation = 0, state = 'pending', owner_id = NULL WHERE id = 'fx-0';",
        )
        .unwrap();

    let e = witnessed().err().unwrap();
    assert_eq!(e.code(), "STORE_REWOUND", "{e}");

    let store = url::open(db.url(), OpenMode::Existing).unwrap();
    let witness = Witness::load(state.path(), &store).unwrap();
    let accepted = store
        .with_witness(witness)
        .accept_rewind("op@host", Some("failover"))
        .unwrap();
    assert_eq!(accepted.epoch, 1);
    let store = witnessed().unwrap();
    let again = store.claim("fx-0", "b", "k", 60_000).unwrap().generation;
    assert!(
        again > claimed && again > accepted.generation_floor,
        "{again}"
    );
    store
        .enqueue(NewWork::effect("fx-new", HANDLER, "{}"), "k")
        .unwrap();
    let fresh = store.claim("fx-new", "b", "k", 60_000).unwrap().generation;
    assert!(fresh > accepted.generation_floor, "{fresh}");
}

/// A revision lowered below the store's own history (the meta row edited, a partial
/// restore) is damage, not a rewind: a writer refuses it at open (`STORE_CORRUPT`, naming
/// both revisions) and the checker names it instead of reporting the history it would cut
/// off as violations.
#[test]
fn a_revision_lowered_below_its_history_is_refused_and_named() {
    let db = database();
    let store = url::open(db.url(), OpenMode::ReadWrite).unwrap();
    for i in 0..3 {
        store
            .enqueue(NewWork::effect(format!("fx-{i}"), HANDLER, "{}"), "k")
            .unwrap();
        store.claim(&format!("fx-{i}"), "a", "k", 60_000).unwrap();
    }
    let high = store.revision().unwrap();
    drop(store);
    let mut admin = postgres::Client::connect(db.url(), postgres::NoTls).unwrap();
    admin
        .batch_execute("UPDATE meta SET value = 2 WHERE key = 'revision'")
        .unwrap();
    let e = url::open(db.url(), OpenMode::Existing).err().unwrap();
    assert_eq!(e.code(), "STORE_CORRUPT", "{e}");
    assert!(
        e.to_string()
            .contains(&format!("revision is 2, below revision {high}")),
        "{e}"
    );
    let reader = url::open(db.url(), OpenMode::ReadOnly).unwrap();
    let report = check(&reader, &CheckOptions::at(reader.now())).unwrap();
    assert!(report.violations.is_empty(), "{:?}", report.violations);
    assert_eq!(report.damage.len(), 1, "{:?}", report.damage);
    assert_eq!(report.damage[0].invariant, damage_codes::REVISION_LOWERED);
    assert_eq!(report.damage[0].ids, ["2".to_owned(), high.to_string()]);
}

/// Another PostgreSQL cluster answering under the same URL (a failover to a server that is
/// not a replica, a restore onto a new host) holding the same store — same store id, even
/// ahead in revision — is refused by this host's rewind witness: its system identifier is
/// not the one this host has written to.
#[test]
fn another_server_under_the_same_url_is_refused_by_the_witness() {
    const NAME: &str = "leasehold_same_url";
    let state = tempfile::tempdir().unwrap();
    let first = Server::dedicated();
    let port = first.port();
    let db = first.database_named(NAME);
    let url = db.url().to_owned();
    let witnessed = || {
        let store = url::open(&url, OpenMode::ReadWrite)?;
        Witness::open(state.path(), &store).map(|w| store.with_witness(w))
    };
    let store = witnessed().unwrap();
    store
        .enqueue(NewWork::effect("fx-0", HANDLER, "{}"), "k")
        .unwrap();
    let seen = store.witness().unwrap().seen().unwrap();
    drop(store);
    let meta = |client: &mut postgres::Client, key: &str| -> i64 {
        client
            .query_one("SELECT value FROM meta WHERE key = $1", &[&key])
            .unwrap()
            .get(0)
    };
    let mut admin = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    let (store_id, revision) = (meta(&mut admin, "store_id"), meta(&mut admin, "revision"));
    drop(admin);
    drop(db);
    drop(first);

    let second = Server::dedicated_on(port);
    let _db = second.database_named(NAME);
    drop(url::open(&url, OpenMode::ReadWrite).unwrap());
    let mut admin = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    admin
        .execute(
            "UPDATE meta SET value = $1 WHERE key = 'store_id'",
            &[&store_id],
        )
        .unwrap();
    admin
        .execute(
            "UPDATE meta SET value = $1 WHERE key = 'revision'",
            &[&(revision + 100)],
        )
        .unwrap();
    drop(admin);

    let e = witnessed().err().unwrap();
    assert_eq!(e.code(), "STORE_REWOUND", "{e}");
    let text = e.to_string();
    assert!(text.contains("another database cluster"), "{text}");
    let was = seen.server.unwrap().system_identifier;
    assert!(text.contains(&was.to_string()), "{text}");
}

/// Items `ids` enqueued, claimed and completed through `store`.
fn run(store: &Store, ids: std::ops::Range<usize>) {
    for i in ids {
        let id = format!("fx-{i}");
        store
            .enqueue(NewWork::effect(&id, HANDLER, "{}"), "k")
            .unwrap();
        let item = store.claim(&id, "a", "k", 60_000).unwrap();
        store.complete(&id, "a", item.generation, None).unwrap();
    }
}

/// An older copy of the database put back (the whole database, its store id and chain
/// included) and written past what this host saw by a host that never saw it: the
/// writers here refuse it as a fork, the checker's witness names it, and accepting it
/// says how many completions and generations the copy lacks at least.
#[test]
fn a_restored_database_written_past_what_this_host_saw_is_refused_as_a_fork() {
    let db = database();
    let (here, elsewhere) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let on = |dir: &std::path::Path| {
        let store = url::open(db.url(), OpenMode::ReadWrite)?;
        Witness::open(dir, &store).map(|w| store.with_witness(w))
    };
    let store = on(here.path()).unwrap();
    run(&store, 0..2);
    drop(store);
    let older = db.snapshot();
    let store = on(here.path()).unwrap();
    run(&store, 2..5);
    let saw = store.revision().unwrap();
    drop(store);
    db.restore(&older);

    // A host that never saw the lost commits writes past them.
    let other = on(elsewhere.path()).unwrap();
    for i in 10..20 {
        other
            .enqueue(NewWork::effect(format!("fx-{i}"), HANDLER, "{}"), "k")
            .unwrap();
    }
    assert!(other.revision().unwrap() > saw);
    drop(other);

    let e = on(here.path()).err().unwrap();
    assert_eq!(e.code(), "STORE_REWOUND", "{e}");
    assert!(
        e.to_string()
            .contains(&format!("diverges at or before revision {saw}")),
        "{e}"
    );
    let reader = url::open(db.url(), OpenMode::ReadOnly).unwrap();
    let found = Rewound::find(here.path(), &reader).unwrap().unwrap();
    assert!(found.is_fork(), "{found:?}");
    assert!(Rewound::find(elsewhere.path(), &reader).unwrap().is_none());
    let report = check(&reader, &CheckOptions::at(reader.now())).unwrap();
    assert!(report.damage.is_empty(), "{:?}", report.damage);

    let store = url::open(db.url(), OpenMode::Existing).unwrap();
    let witness = Witness::load(here.path(), &store).unwrap();
    let store = store.with_witness(witness);
    let cost = store.rewind_cost().unwrap();
    assert!(cost.rewound);
    let lost = cost.lost.unwrap();
    assert!(lost.at_least);
    assert_eq!(
        (lost.counts.completions, lost.counts.generations),
        (3, 3),
        "{}",
        cost.line()
    );
    store.accept_rewind("op@host", Some("restored")).unwrap();
    run(&on(here.path()).unwrap(), 30..31);
}
