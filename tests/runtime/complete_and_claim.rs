//! A finished batch's plain outcomes and the claims that refill its slots are one store
//! transaction (`AuthorityCore::finish_all_and_poll`, what the tokio driver calls): one
//! commit, never more jobs than the concurrency, the handler room of the finished jobs
//! free again, and on a failed commit neither the outcomes nor the claims. A poll's
//! schedule firings share that transaction.

use leasehold::Store;
use leasehold::authority::{
    AttemptContext, AuthorityConfig, AuthorityCore, Finished, HandlerOutcome, Job, Pace, Task,
    Workload,
};
use leasehold::clock::ManualClock;
use leasehold::model::WorkState;
use leasehold::model::work::NewWork;
use leasehold::store::faults::{Fault, FaultPlan};

use crate::support::runtime::{T0, compat, config, every_minute, faulty_store, solo, work_in};

/// `n` effects for the demo's `send-email` handler, `e000`….
fn effects(s: &Store, n: usize) {
    let items = (0..n)
        .map(|i| NewWork::effect(format!("e{i:03}"), "send-email", "{}"))
        .collect();
    s.enqueue_batch(items, &compat()).expect("enqueues");
}

/// The ids of `jobs`' work items.
fn ids(jobs: &[Job]) -> Vec<String> {
    let mut ids: Vec<String> = jobs.iter().map(Job::resource).collect();
    ids.sort();
    ids
}

#[test]
fn a_finished_batch_and_the_claims_that_refill_it_are_one_commit() {
    let clock = ManualClock::new(T0);
    let s = crate::support::runtime::store(&clock);
    effects(&s, 10);
    let core = solo(&s, 4);
    let first = core.poll().expect("polls");
    assert_eq!(first.len(), 4);
    let executed = first.iter().map(|job| core.execute(job)).collect();

    let before = s.revision().expect("reads");
    let (answers, next) = core.finish_all_and_poll(executed);
    let next = next.expect("claims");
    assert_eq!(answers, vec![Finished::Completed; 4]);
    assert_eq!(
        s.revision().expect("reads") - before,
        1,
        "four completions and four claims in one commit"
    );
    assert_eq!(next.len(), 4, "the four freed slots are filled");
    assert_eq!(core.inflight(), 4, "never more than the concurrency");
    assert_eq!(ids(&next), ids_in(&s, WorkState::Claimed));
    let succeeded = ids_in(&s, WorkState::Succeeded);
    assert_eq!(succeeded, ids(&first));

    // The last two items: a batch that frees more slots than there is work.
    let executed = next.iter().map(|job| core.execute(job)).collect();
    let (answers, last) = core.finish_all_and_poll(executed);
    assert_eq!(answers, vec![Finished::Completed; 4]);
    assert_eq!(last.expect("claims").len(), 2);
    assert_eq!(core.inflight(), 2);
    let stats = core.stats();
    assert_eq!((stats.claims, stats.completions), (10, 8), "{stats:?}");
}

/// The ids of the items in `state`, sorted.
fn ids_in(s: &Store, state: WorkState) -> Vec<String> {
    let mut ids: Vec<String> = work_in(s, state).into_iter().map(|w| w.id).collect();
    ids.sort();
    ids
}

/// A commit that fails takes the outcomes and the claims with it: the outcomes are
/// deferred (the jobs still held, so no slot is counted twice) and nothing new is claimed;
/// once the store is back, a flush records them and the next poll fills the slots.
#[test]
fn a_failed_complete_and_claim_defers_the_outcomes_and_claims_nothing() {
    let clock = ManualClock::new(T0);
    let (backend, s) = faulty_store(&clock);
    effects(&s, 6);
    let core = solo(&s, 3);
    let first = core.poll().expect("polls");
    let executed = first.iter().map(|job| core.execute(job)).collect();

    backend.plan(FaultPlan::once(
        backend.writes() + 1,
        Fault::FailBeforeCommit,
    ));
    let (answers, next) = core.finish_all_and_poll(executed);
    assert!(
        answers.iter().all(|a| matches!(a, Finished::Deferred(_))),
        "{answers:?}"
    );
    assert!(next.is_err(), "nothing is claimed by a failed commit");
    assert_eq!(
        core.inflight(),
        3,
        "the deferred jobs still hold their slots"
    );
    assert_eq!(ids_in(&s, WorkState::Claimed), ids(&first));
    assert_eq!(ids_in(&s, WorkState::Pending).len(), 3);
    assert!(core.stats().store_errors >= 1);

    assert_eq!(core.flush(), vec![Finished::Completed; 3]);
    assert_eq!(ids_in(&s, WorkState::Succeeded), ids(&first));
    assert_eq!(core.poll().expect("polls").len(), 3);
}

/// A handler's finished items free its room under a handler limit in the same
/// transaction: the claims that refill the batch take that handler up to its limit again,
/// never past it.
#[test]
fn a_finished_batch_frees_its_handlers_room_for_the_claims_beside_it() {
    let clock = ManualClock::new(T0);
    let s = crate::support::runtime::store(&clock);
    let items: Vec<NewWork> = (0..6)
        .map(|i| NewWork::effect(format!("slow-{i}"), "slow", "{}"))
        .collect();
    s.enqueue_batch(items, &compat()).expect("enqueues");
    let ok = |_: &AttemptContext| HandlerOutcome::Succeeded(None);
    let cfg = AuthorityConfig {
        worker_concurrency: 4,
        ..config("solo").with_handler_limit("slow", 2)
    };
    let core = AuthorityCore::new(
        s.clone(),
        cfg,
        Workload::new("limited", 1).with("slow", ok),
        Pace::Virtual,
    )
    .expect("valid");
    core.register().expect("registers");
    let first = core.poll().expect("polls");
    assert_eq!(first.len(), 2, "the limit, not the concurrency");
    let held = first[1].clone();
    let (answers, next) = core.finish_all_and_poll(vec![core.execute(&first[0])]);
    assert_eq!(answers, vec![Finished::Completed]);
    let next = next.expect("claims");
    assert_eq!(next.len(), 1, "one finished, one room: {:?}", ids(&next));
    assert!(
        next.iter()
            .all(|j| matches!(&j.task, Task::Work(w) if w.handler == "slow"))
    );
    let (answers, more) = core.finish_all_and_poll(vec![core.execute(&held)]);
    assert_eq!(answers, vec![Finished::Completed]);
    assert_eq!(more.expect("claims").len(), 1, "still never past the limit");
    assert_eq!(core.inflight(), 2);
}

/// A poll's schedule firings and its claims are one transaction too: a firing due now is
/// created and claimed by the same poll, in one commit.
#[test]
fn a_due_firing_is_created_and_claimed_in_one_commit() {
    use leasehold::model::WorkKind;

    let clock = ManualClock::new(T0);
    let s = crate::support::runtime::store(&clock);
    every_minute(&s);
    let core = solo(&s, 4);
    clock.advance(61_000);
    let before = s.revision().expect("reads");
    let jobs = core.poll().expect("polls");
    assert_eq!(
        s.revision().expect("reads") - before,
        1,
        "fired and claimed in one commit"
    );
    assert_eq!(jobs.len(), 1);
    assert!(matches!(&jobs[0].task, Task::Work(w) if w.kind == WorkKind::Schedule));
    assert_eq!(core.stats().schedules_fired, 1);
}
