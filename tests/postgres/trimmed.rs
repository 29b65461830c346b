//! A PostgreSQL store trimmed past the revision a host's witness saw is judged at the
//! milestone the witness kept and by its counts, not taken unjudged.

use leasehold::store::url::{OpenMode, open};
use leasehold::store::witness::BeyondHistory;

use crate::support::postgres::{Database, database};
use crate::support::trimmed::{self, Raw};

/// Runs `test` on a fresh database with its raw hands: a copy kept as a template
/// database and put back in its place.
fn on_postgres<T>(test: impl FnOnce(&Raw<'_>) -> T) -> T {
    let db = database();
    let copy = std::cell::RefCell::new(None::<Database>);
    let sql = |sql: &str| {
        postgres::Client::connect(db.url(), postgres::NoTls)
            .unwrap()
            .batch_execute(sql)
            .unwrap();
    };
    let keep_copy = || *copy.borrow_mut() = Some(db.snapshot());
    let put_copy_back = || db.restore(copy.borrow().as_ref().unwrap());
    test(&Raw {
        url: db.url(),
        sql: &sql,
        keep_copy: &keep_copy,
        put_copy_back: &put_copy_back,
    })
}

#[test]
fn a_fork_before_the_trim_is_refused_at_the_milestone_the_host_kept() {
    let (here, elsewhere) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let why =
        on_postgres(|raw| trimmed::a_fork_at_the_milestone(raw, here.path(), elsewhere.path()));
    assert!(why.contains("at milestone revision 65536"), "{why}");
}

#[test]
fn a_fork_is_refused_at_a_milestone_another_host_crossed() {
    let (here, elsewhere) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let why = on_postgres(|raw| {
        trimmed::a_fork_at_a_milestone_another_host_crossed(raw, here.path(), elsewhere.path())
    });
    assert!(why.contains("at milestone revision 65536"), "{why}");
}

#[test]
fn a_copy_with_fewer_completions_trimmed_past_what_the_host_saw_is_refused() {
    let (here, elsewhere) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let why =
        on_postgres(|raw| trimmed::fewer_completions_than_seen(raw, here.path(), elsewhere.path()));
    assert!(why.contains("commits were lost"), "{why}");
}

#[test]
fn the_same_history_trimmed_past_what_the_host_saw_is_taken_and_named() {
    let (here, elsewhere) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    on_postgres(|raw| {
        let (saw, kept) =
            trimmed::trimmed_past_the_same_history(raw, here.path(), elsewhere.path());
        let reader = open(raw.url, OpenMode::ReadOnly).unwrap();
        let beyond = BeyondHistory::find(here.path(), &reader).unwrap().unwrap();
        assert_eq!(
            (beyond.witnessed, beyond.oldest, beyond.milestone),
            (saw, kept, Some(65_536))
        );
    });
}
