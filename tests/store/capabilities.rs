//! What each provider advertises, and that an authority refuses a store that does not
//! keep the work model instead of running without a guarantee.

use std::sync::Arc;

use leasehold::authority::handlers::Workload;
use leasehold::authority::{AuthorityConfig, AuthorityCore, Pace};
use leasehold::clock::ManualClock;
use leasehold::ids::SeededIds;
use leasehold::model::work::NewWork;
use leasehold::store::capability::WORK_MODEL;
use leasehold::store::faults::FaultyBackend;
use leasehold::store::memory::MemoryBackend;
use leasehold::store::{Capability, Store};

use crate::support::Harness;

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
        _ => (true, true),
    };
    assert_eq!(reach, expected, "{}", h.provider());
    assert!(store.require(&WORK_MODEL).is_ok());
}

#[test]
fn an_authority_refuses_a_store_without_the_work_model() {
    let faulty = Arc::new(FaultyBackend::new(Arc::new(MemoryBackend::new())));
    let store = Store::new(
        faulty.clone(),
        Arc::new(ManualClock::new(1_000_000)),
        Arc::new(SeededIds::new(1)),
    );
    let start = || {
        AuthorityCore::new(
            store.clone(),
            AuthorityConfig::new("a-1", "v1"),
            Workload::new("w", 1),
            Pace::Virtual,
        )
    };
    assert!(start().is_ok(), "the whole work model starts");
    faulty.withhold(Capability::Fencing);
    let Err(e) = start() else {
        panic!("an authority started over a store without fencing")
    };
    assert_eq!(e.code(), "CAPABILITY_MISSING");
    assert_eq!(
        e.to_string(),
        "CAPABILITY_MISSING: the memory store does not provide fencing"
    );
    assert_eq!(
        store.require(&[Capability::Durable]).unwrap_err().code(),
        "CAPABILITY_MISSING"
    );
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
