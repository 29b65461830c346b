//! No attempt goes uncounted: an outcome a store failure deferred is written at shutdown
//! if the store takes it, and otherwise left claimed to lapse, so its reclaimer counts the
//! attempt as uncertain — never handed back `pending` as if it had not run; an attempt
//! stopped at its time limit (`TIMEOUT`) counts as uncertain too, since it may have acted.
//! Either way `uncertainAttempts` bounds how often an effect may have been repeated.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use leasehold::Store;
use leasehold::authority::external::HandlerConfig;
use leasehold::authority::{
    AttemptContext, AuthorityConfig, AuthorityCore, Finished, HandlerOutcome, Job, Pace, Workload,
    run_authority,
};
use leasehold::clock::ManualClock;
use leasehold::model::work::NewWork;
use leasehold::model::{WorkItem, WorkState};
use leasehold::rules::work::TIMEOUT_CODE;
use leasehold::store::faults::{Fault, FaultPlan};

use crate::support::runtime::{RUNNING, T0, compat, config, faulty_store, store};
use crate::support::wait::{wait_until_async, within};

/// Authority `id` running `workload` on `s`, stepped by hand, registered.
fn core(s: &Store, id: &str, workload: Workload) -> AuthorityCore {
    let core = AuthorityCore::new(s.clone(), config(id), workload, Pace::Virtual).expect("valid");
    core.register().expect("registers");
    core
}

fn item(s: &Store, id: &str) -> WorkItem {
    s.work(id).expect("reads").expect("exists")
}

/// An attempt answered as stopped at its time limit may have acted: it is retried like any
/// retryable failure and counted as uncertain; another retryable failure is not.
#[test]
fn a_timed_out_attempt_counts_as_uncertain() {
    let clock = ManualClock::new(T0);
    let s = store(&clock);
    for (id, handler) in [("t1", "slow"), ("r1", "busy")] {
        s.enqueue(NewWork::effect(id, handler, "{}"), &compat())
            .expect("enqueues");
    }
    let handlers = Workload::new("timeouts", 1)
        .with("slow", |_: &AttemptContext| {
            HandlerOutcome::retryable(TIMEOUT_CODE, "stopped after 30000 ms without an answer")
        })
        .with("busy", |_: &AttemptContext| {
            HandlerOutcome::retryable("RATE_LIMITED", "slow down")
        });
    let a = core(&s, "a", handlers);
    let jobs = a.poll().expect("polls");
    let finished = a.finish_all(jobs.iter().map(|job| a.execute(job)).collect());
    assert_eq!(
        finished,
        [Finished::RetryScheduled, Finished::RetryScheduled]
    );
    let (t1, r1) = (item(&s, "t1"), item(&s, "r1"));
    assert_eq!(
        (t1.state, t1.attempt_number, t1.uncertain_attempts),
        (WorkState::Retry, 1, 1),
        "{t1:?}"
    );
    assert_eq!(
        (r1.state, r1.attempt_number, r1.uncertain_attempts),
        (WorkState::Retry, 1, 0),
        "{r1:?}"
    );
}

/// An `exec` command that outlives its timeout is stopped and its attempt counted as
/// uncertain in the store (it may have acted before it was stopped).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_exec_command_stopped_at_its_timeout_counts_as_uncertain() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("handlers.toml");
    std::fs::write(
        &path,
        "[handlers.charge]\nversion = \"1.0.0\"\nexec = [\"sleep\", \"60\"]\n\
         timeout = \"200ms\"\nkill_grace = \"200ms\"\n",
    )
    .expect("writes the config");
    let handlers = HandlerConfig::load(&path)
        .expect("a valid config")
        .workload();
    let version = handlers.handler_versions()["charge"].clone();
    // The clock never moves: the retry never comes due, so the first attempt is the only one.
    let clock = ManualClock::new(T0);
    let s = store(&clock);
    s.enqueue(NewWork::effect("t1", "charge", "{}"), &version)
        .expect("enqueues");
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let runtime = tokio::spawn(run_authority(
        s.clone(),
        AuthorityConfig {
            worker_concurrency: 1,
            ..config("a")
        },
        handlers,
        None,
        async move {
            let _ = stop_rx.await;
        },
    ));
    wait_until_async("the timed-out attempt", within(RUNNING), || {
        item(&s, "t1").state == WorkState::Retry
    })
    .await;
    let _ = stop_tx.send(());
    runtime.await.expect("joins").expect("runs");
    let t1 = item(&s, "t1");
    assert_eq!(
        t1.last_failure.as_ref().map(|f| f.code.as_str()),
        Some(TIMEOUT_CODE)
    );
    assert_eq!((t1.attempt_number, t1.uncertain_attempts), (1, 1), "{t1:?}");
}

/// A `charge` handler that always succeeds, counting how often it ran.
fn counted_charge(runs: &Arc<AtomicUsize>) -> Workload {
    let runs = runs.clone();
    Workload::new("charges", 1).with("charge", move |_: &AttemptContext| {
        runs.fetch_add(1, Ordering::SeqCst);
        HandlerOutcome::Succeeded(None)
    })
}

fn enqueue_charges(s: &Store, ids: &[&str]) {
    for id in ids {
        s.enqueue(NewWork::effect(*id, "charge", "{}"), &compat())
            .expect("enqueues");
    }
}

/// Moves the clock a second at a time until `core` has claimed `n` jobs (the lapsed claims
/// it reclaims), within ten minutes of store time.
fn reclaim(clock: &ManualClock, core: &AuthorityCore, n: usize) -> Vec<Job> {
    let mut jobs = Vec::new();
    for _ in 0..600 {
        jobs.extend(core.poll().expect("polls"));
        if jobs.len() >= n {
            return jobs;
        }
        clock.advance(1_000);
    }
    panic!("only {} of {n} lapsed claims were reclaimed", jobs.len());
}

/// The store refused a completion, then takes writes again by the time the authority stops:
/// the known outcome is written under its claim, once, rather than the item handed back to
/// run again.
#[test]
fn a_deferred_outcome_is_written_at_shutdown() {
    let clock = ManualClock::new(T0);
    let (backend, s) = faulty_store(&clock);
    enqueue_charges(&s, &["e1"]);
    let runs = Arc::new(AtomicUsize::new(0));
    let a = core(&s, "a", counted_charge(&runs));
    let jobs = a.poll().expect("polls");
    let executed = jobs.iter().map(|job| a.execute(job)).collect();
    backend.plan(FaultPlan::once(
        backend.writes() + 1,
        Fault::FailBeforeCommit,
    ));
    let deferred = a.finish_all(executed);
    assert!(
        matches!(deferred[..], [Finished::Deferred(_)]),
        "{deferred:?}"
    );

    let stats = a.shutdown().expect("stops");
    let e1 = item(&s, "e1");
    assert_eq!(
        (e1.state, e1.attempt_number, e1.uncertain_attempts),
        (WorkState::Succeeded, 1, 0),
        "{e1:?}"
    );
    assert_eq!(
        (
            stats.completions,
            stats.abandoned_on_shutdown,
            stats.released_on_shutdown
        ),
        (1, 0, 0),
        "{stats:?}"
    );
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

/// The store refuses the completions and their last try at shutdown too (then takes writes
/// again): neither item is handed back `pending` with its count unchanged. Both stay claimed
/// until they lapse, and the authority that reclaims them counts each attempt as uncertain,
/// so the counts explain every repeated run.
#[test]
fn outcomes_the_store_refuses_at_shutdown_are_left_to_lapse_and_counted_uncertain() {
    let clock = ManualClock::new(T0);
    let (backend, s) = faulty_store(&clock);
    enqueue_charges(&s, &["e1", "e2"]);
    let runs = Arc::new(AtomicUsize::new(0));
    let a = core(&s, "a", counted_charge(&runs));
    let jobs = a.poll().expect("polls");
    assert_eq!(jobs.len(), 2);
    let executed = jobs.iter().map(|job| a.execute(job)).collect();
    // The group commit of both completions, then the shutdown's first write.
    let from = backend.writes();
    backend.plan(FaultPlan {
        after: from,
        until: Some(from + 2),
        rules: vec![(1, Fault::FailBeforeCommit)],
    });
    let deferred = a.finish_all(executed);
    assert!(
        deferred.iter().all(|f| matches!(f, Finished::Deferred(_))),
        "{deferred:?}"
    );

    let stats = a.shutdown().expect("the stop is recorded");
    assert_eq!(
        (stats.abandoned_on_shutdown, stats.released_on_shutdown),
        (2, 0),
        "{stats:?}"
    );
    for id in ["e1", "e2"] {
        let left = item(&s, id);
        assert_eq!(
            (
                left.state,
                left.owner_id.as_deref(),
                left.uncertain_attempts
            ),
            (WorkState::Claimed, Some("a"), 0),
            "{id} was handed back as if it had not run: {left:?}"
        );
    }

    let b = core(&s, "b", counted_charge(&runs));
    let again = reclaim(&clock, &b, 2);
    let finished = b.finish_all(again.iter().map(|job| b.execute(job)).collect());
    assert_eq!(finished, [Finished::Completed, Finished::Completed]);
    for id in ["e1", "e2"] {
        let done = item(&s, id);
        assert_eq!(
            (done.state, done.attempt_number, done.uncertain_attempts),
            (WorkState::Succeeded, 2, 1),
            "{id}: {done:?}"
        );
    }
    assert_eq!(
        runs.load(Ordering::SeqCst),
        2 + 2,
        "each item ran twice: once per uncertain attempt more than once"
    );
}
