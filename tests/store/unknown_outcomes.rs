//! Unknown outcomes at the store API, on memory and SQLite through the fault-injecting
//! provider: a write whose answer was lost, or that was reported failed after it
//! committed, is resolved by asking again — a keyed mutation replays its recorded answer
//! (no second generation), a completion answers `already-terminal` (no second completion) —
//! and a write that failed before its commit changed nothing.

use leasehold::model::work::NewWork;
use leasehold::store::Keyed;
use leasehold::store::faults::{Fault, FaultPlan, FaultyBackend};

use crate::support::faults::{FaultyStore, faulty_stores};
use crate::support::ok;

const COMPAT: &str = "k";

/// The next write only gets `fault`.
fn next_write(faulty: &FaultyBackend, fault: Fault) {
    faulty.plan(FaultPlan::once(faulty.writes() + 1, fault));
}

#[test]
fn a_keyed_acquire_whose_answer_was_lost_replays_the_same_generation() {
    for FaultyStore {
        faults: faulty,
        store,
        ..
    } in faulty_stores(3)
    {
        for fault in [Fault::CommitThenLoseAnswer, Fault::CommitThenReportFailure] {
            let resource = format!("{fault:?}");
            let key = Keyed {
                key: Some(&resource),
            };
            next_write(&faulty, fault);
            assert!(store.acquire(&resource, "a", 5_000.0, key).is_err());
            let again = ok(
                "the same request again",
                store.acquire(&resource, "a", 5_000.0, key),
            );
            assert_eq!(again.generation, 1, "{}: {fault:?}", store.kind().as_str());
            let (grants, _) = store.ownership_history(Some(&resource), 0, 10).unwrap();
            assert_eq!(grants.len(), 1, "{}: one grant", store.kind().as_str());
        }
    }
}

#[test]
fn a_completion_whose_answer_was_lost_is_never_recorded_twice() {
    for FaultyStore {
        faults: faulty,
        store,
        ..
    } in faulty_stores(3)
    {
        let provider = store.kind().as_str();
        for (i, fault) in [Fault::CommitThenLoseAnswer, Fault::CommitThenReportFailure]
            .into_iter()
            .enumerate()
        {
            let id = format!("fx-{i}");
            store
                .enqueue(NewWork::effect(&id, "h", "{}"), COMPAT)
                .unwrap();
            let claim = store.claim(&id, "a", COMPAT, 5_000).unwrap();
            next_write(&faulty, fault);
            assert!(store.complete(&id, "a", claim.generation, None).is_err());
            let again = store.complete(&id, "a", claim.generation, None);
            assert_eq!(
                again.err().map(|e| e.code()),
                Some("already-terminal"),
                "{provider}: {fault:?}"
            );
            let (_, writes) = store.ownership_history(Some(&id), 0, 10).unwrap();
            let accepted = writes.iter().filter(|w| w.accepted).count();
            assert_eq!(
                accepted, 1,
                "{provider}: one accepted completion: {writes:?}"
            );
        }
    }
}

#[test]
fn a_write_that_failed_before_its_commit_changed_nothing() {
    for FaultyStore {
        faults: faulty,
        store,
        ..
    } in faulty_stores(3)
    {
        let provider = store.kind().as_str();
        store
            .enqueue(NewWork::effect("fx", "h", "{}"), COMPAT)
            .unwrap();
        let claim = store.claim("fx", "a", COMPAT, 5_000).unwrap();
        let revision = store.revision().unwrap();
        next_write(&faulty, Fault::FailBeforeCommit);
        let failed = store.complete("fx", "a", claim.generation, None);
        assert_eq!(failed.err().map(|e| e.code()), Some("STORE_UNAVAILABLE"));
        assert_eq!(
            store.revision().unwrap(),
            revision,
            "{provider}: nothing committed"
        );
        ok(
            "then it completes",
            store.complete("fx", "a", claim.generation, None),
        );
        assert_eq!(faulty.injected().failed_before_commit, 1, "{provider}");
    }
}
