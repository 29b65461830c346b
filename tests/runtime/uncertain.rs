//! No attempt goes uncounted: an attempt stopped at its time limit (`TIMEOUT`) counts as
//! uncertain, since it may have acted, so `uncertainAttempts` bounds how often an effect
//! may have been repeated.

use leasehold::Store;
use leasehold::authority::external::HandlerConfig;
use leasehold::authority::{
    AttemptContext, AuthorityConfig, AuthorityCore, Finished, HandlerOutcome, Pace, Workload,
    run_authority,
};
use leasehold::clock::ManualClock;
use leasehold::model::work::NewWork;
use leasehold::model::{WorkItem, WorkState};
use leasehold::rules::work::TIMEOUT_CODE;

use crate::support::runtime::{RUNNING, T0, compat, config, store};
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
