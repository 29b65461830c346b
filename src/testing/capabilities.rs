//! What each provider advertises: the whole work model, how far it reaches, and whether
//! it pushes its commits.

use crate::model::work::NewWork;
use crate::store::Capability;
use crate::store::capability::WORK_MODEL;

use super::Harness;

/// Every provider keeps the work model; the ones this crate ships say how far they reach.
pub fn every_provider_keeps_the_work_model_and_says_how_far_it_reaches(h: &dyn Harness) {
    let store = h.store();
    let have = store.capabilities();
    for c in WORK_MODEL {
        assert!(have.contains(&c), "{} lacks {c}", h.provider());
    }
    assert_eq!(
        have.contains(&Capability::Durable),
        store.physical_durability()
    );
    let reach = (
        have.contains(&Capability::SharedAcrossProcesses),
        have.contains(&Capability::SharedAcrossHosts),
    );
    let expected = match h.provider() {
        "memory" => (false, false),
        "sqlite" => (true, false),
        "postgres" => (true, true),
        // A provider of its own says how far it reaches; the rest of the promise holds.
        _ => reach,
    };
    assert_eq!(reach, expected, "{}", h.provider());
    assert!(store.require(&WORK_MODEL).is_ok());
}

/// A provider that pushes its commits (PostgreSQL) delivers the revision of each commit
/// and nothing for a read; the others offer no feed and are polled.
pub fn a_commit_feed_pushes_exactly_the_committed_revisions(h: &dyn Harness) {
    let store = h.store();
    let Some(mut feed) = store.commit_feed().unwrap() else {
        assert_ne!(h.provider(), "postgres", "PostgreSQL pushes its commits");
        return;
    };
    let quiet = std::time::Duration::from_millis(300);
    assert_eq!(
        feed.next_commit(quiet).unwrap(),
        None,
        "nothing committed yet"
    );
    store
        .enqueue(NewWork::effect("fx-1", "h", "{}"), "k")
        .unwrap();
    let first = store.change_token().unwrap();
    let long = std::time::Duration::from_secs(30);
    assert_eq!(feed.next_commit(long).unwrap(), Some(first));
    // Reads commit nothing, and push nothing.
    let _ = store.overview().unwrap();
    assert!(store.work("fx-1").unwrap().is_some());
    assert_eq!(feed.next_commit(quiet).unwrap(), None, "no commit, no push");
    // Several commits before the reader asks are folded into the newest.
    for i in 2..=4 {
        store
            .enqueue(NewWork::effect(format!("fx-{i}"), "h", "{}"), "k")
            .unwrap();
    }
    let newest = store.change_token().unwrap();
    let mut seen = None;
    while seen != Some(newest) {
        seen = feed.next_commit(long).unwrap();
        assert!(seen.is_some(), "the commits arrive");
    }
}
