//! Writes whose outcome is unknown: failures before and after the commit while everything
//! drains, lost answers read back instead of resubmitted, and an undecidable outcome held in
//! recovery until a read-back decides.

use leasehold::Store;
use leasehold::authority::workload::{self, EFFECT_HANDLERS};
use leasehold::authority::{AuthorityCore, Finished, Pace, RunOptions, run_authority_with};
use leasehold::clock::{Clock, ManualClock};
use leasehold::model::WorkState;
use leasehold::model::work::NewWork;

use crate::support::wait::{wait_until_async, within};

use crate::support::runtime::{RUNNING, T0, compat, config, faulty_store, work_in};

use super::{drained, mixed_work};

/// Unknown outcomes, exercised: the store fails every few write transactions — before the
/// commit, after it with a failure reported, after it with the answer lost — while an
/// authority drains effects, a subscription cursor and workflows. Everything still
/// finishes, each exactly once, and the checker finds nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_outcomes_on_every_kind_of_write_end_clean() {
    use leasehold::store::faults::{Fault, FaultPlan};

    let clock = ManualClock::new(T0);
    let (faulty, s) = faulty_store(&clock);
    let c = compat();
    let instances = mixed_work(&s, &c, 30, 3);
    // From the authority's registration on, every few writes fail one way or another.
    faulty.plan(FaultPlan {
        after: faulty.writes() + 1,
        until: None,
        rules: vec![
            (17, Fault::CommitThenLoseAnswer),
            (13, Fault::CommitThenReportFailure),
            (11, Fault::FailBeforeCommit),
        ],
    });
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let runtime = tokio::spawn(run_authority_with(
        s.clone(),
        config("solo"),
        workload::named("fast", 1).expect("fast"),
        RunOptions::default(),
        async move {
            let _ = stop_rx.await;
        },
    ));
    let high_water = s.journal_high_water().expect("reads");
    wait_until_async(
        "the store to drain despite the faults",
        within(RUNNING),
        || {
            // Claims whose answer was lost lapse in store time: let it pass (far slower than
            // the renewals, so only a claim nobody holds lapses).
            clock.advance(20);
            drained(&s, 30, &instances, high_water)
        },
    )
    .await;
    faulty.plan(FaultPlan::default());
    let _ = stop_tx.send(());
    runtime.await.expect("joins").expect("runs");

    let injected = faulty.injected();
    assert!(
        injected.failed_before_commit > 0
            && injected.reported_failure_after_commit > 0
            && injected.lost_answers > 0,
        "{injected:?}"
    );
    let report = leasehold::check::check(&s, &leasehold::check::CheckOptions::at(clock.now()))
        .expect("checks");
    assert!(report.violations.is_empty(), "{:?}", report.violations);
    assert!(work_in(&s, WorkState::Failed).is_empty(), "nothing failed");
}

/// One authority `solo` running the `fast` workload on `s`, stepped by hand.
fn fast_core(s: &Store) -> AuthorityCore {
    AuthorityCore::new(
        s.clone(),
        config("solo"),
        workload::named("fast", 1).expect("fast"),
        Pace::Virtual,
    )
    .expect("valid")
}

/// Commits whose answer is lost (`OUTCOME_UNKNOWN` after a durable commit) on every fifth
/// write — claims, completions, cursor advances, workflow transitions alike: the authority
/// reads back what it meant to write instead of resubmitting blind, so the store drains
/// with every handler run exactly once, no refusal of its own repeated writes, and a clean
/// checker.
#[test]
fn lost_answers_are_read_back_and_nothing_is_done_twice() {
    lost_answers_drain(|core, executed| {
        core.finish_all(executed);
        core.poll().unwrap_or_default()
    });
}

/// The same, with each finished batch committed in the transaction that claims the next
/// (what the tokio driver does): a lost answer there is a batch's outcomes read back and
/// claims nobody knows of, which lapse and are taken again.
#[test]
fn lost_answers_of_a_complete_and_claim_are_read_back_and_nothing_is_done_twice() {
    lost_answers_drain(|core, executed| core.finish_all_and_poll(executed).1.unwrap_or_default());
}

/// Drains mixed work through `step` (which records a finished batch and answers the next
/// jobs) while every fifth write loses its answer, and checks that nothing ran twice.
fn lost_answers_drain(
    step: impl Fn(&AuthorityCore, Vec<leasehold::authority::Executed>) -> Vec<leasehold::authority::Job>,
) {
    use leasehold::authority::ExecLog;
    use leasehold::store::faults::{Fault, FaultPlan};

    let clock = ManualClock::new(T0);
    let (backend, s) = faulty_store(&clock);
    let c = compat();
    let instances = mixed_work(&s, &c, 30, 3);
    let high_water = s.journal_high_water().expect("reads");
    let dir = tempfile::tempdir().expect("tempdir");
    let log_path = dir.path().join("exec.jsonl");
    let core = fast_core(&s).with_exec_log(ExecLog::open(&log_path).expect("opens"));
    core.register().expect("registers");
    backend.plan(FaultPlan {
        after: backend.writes(),
        until: None,
        rules: vec![(5, Fault::CommitThenLoseAnswer)],
    });

    let mut rounds = 0;
    let mut jobs = Vec::new();
    while !drained(&s, 30, &instances, high_water) {
        rounds += 1;
        assert!(
            rounds < 5_000,
            "the store never drained: {:?}",
            core.stats()
        );
        // A claim whose answer was lost claimed nothing this authority knows of.
        let executed = jobs.iter().map(|job| core.execute(job)).collect();
        jobs = step(&core, executed);
        core.flush();
        let _ = core.renew();
        // Claims whose answer was lost lapse and are taken again.
        clock.advance(1_000);
    }
    backend.plan(FaultPlan::default());

    let stats = core.stats();
    assert!(
        backend.injected().lost_answers > 10,
        "{:?}",
        backend.injected()
    );
    assert!(
        stats.store_errors > 0,
        "no write of the authority lost its answer"
    );
    assert_eq!(
        (stats.fenced_writes_refused, stats.other_refusals.clone()),
        (0, std::collections::BTreeMap::new()),
        "a blind resubmission was refused: {stats:?}"
    );
    assert_eq!(stats.recovery_required, 0, "every read-back could read");
    // Every attempt started once per item and attempt: nothing ran twice.
    let log = std::fs::read_to_string(&log_path).expect("the exec log exists");
    let mut starts = std::collections::BTreeMap::<String, usize>::new();
    for line in log.lines() {
        let l: serde_json::Value = serde_json::from_str(line).expect("a JSON line");
        if l["outcome"] == "started" && l["workId"].as_str().is_some_and(|w| w.starts_with('e')) {
            *starts
                .entry(l["workId"].as_str().unwrap_or("").to_owned())
                .or_default() += 1;
        }
    }
    assert_eq!(starts.len(), 30);
    assert!(
        starts.values().all(|n| *n == 1),
        "an effect ran twice: {starts:?}"
    );
    let report =
        leasehold::check::check(&s, &leasehold::check::CheckOptions::at(s.now())).expect("checks");
    assert!(
        report.is_clean(),
        "{}",
        leasehold::check::render_text(&report)
    );
}

/// A completion whose answer was lost while the store cannot be read back: nobody can say
/// whether it committed, so the job is held in recovery — listed, its handler not run
/// again, its outcome not written again — until a read-back can decide; then it is settled
/// as recorded, once.
#[test]
fn an_undecidable_outcome_is_held_in_recovery_until_a_read_back_decides() {
    use leasehold::store::faults::{Fault, FaultPlan};

    let clock = ManualClock::new(T0);
    let (backend, s) = faulty_store(&clock);
    s.enqueue(NewWork::effect("e1", EFFECT_HANDLERS[0], "{}"), &compat())
        .expect("enqueues");
    let core = fast_core(&s);
    core.register().expect("registers");
    let jobs = core.poll().expect("polls");
    assert_eq!(jobs.len(), 1);
    let executed = core.execute(&jobs[0]);

    backend.plan(FaultPlan::once(
        backend.writes() + 1,
        Fault::CommitThenLoseAnswer,
    ));
    backend.cut_reads(true);
    let held = core.finish_all(vec![executed]);
    assert!(matches!(held[..], [Finished::Deferred(_)]), "{held:?}");
    assert_eq!(core.stats().recovery_required, 1);
    let listed = core.in_recovery();
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!(listed[0].0, "e1");
    assert!(listed[0].1.contains("read-back failed"), "{listed:?}");

    // Fail closed: flushing while the store cannot be read writes nothing.
    let writes = backend.writes();
    let still = core.flush();
    assert!(matches!(still[..], [Finished::Deferred(_)]), "{still:?}");
    assert_eq!(
        backend.writes(),
        writes,
        "an undecided outcome was written again"
    );
    assert!(core.poll().expect("polls").is_empty(), "e1 was run again");

    backend.cut_reads(false);
    assert_eq!(core.flush(), vec![Finished::Completed]);
    assert!(core.in_recovery().is_empty());
    let stats = core.stats();
    assert_eq!(
        (stats.completions, stats.other_refusals.len()),
        (1, 0),
        "{stats:?}"
    );
    let (_, writes) = s
        .ownership_history(Some("e1"), 0, 100)
        .expect("the history reads");
    assert_eq!(
        writes.iter().filter(|w| w.verb == "complete").count(),
        1,
        "{writes:?}"
    );
}
