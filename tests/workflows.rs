//! Durable workflows (docs/ARCHITECTURE.md#workflows), end to end over the store providers.
//!
//! - `fixtures`: the portable conformance fixtures in `tests/fixtures/workflows/*.json`, one
//!   generated test per fixture per provider (`fixtures::memory::<name>`,
//!   `fixtures::sqlite::<name>`, `fixtures::postgres::<name>`, by the shared `per_provider!`).
//! - `conformance`: the workflow part of the store conformance suite — fenced CAS, stale
//!   lease holders, terminal irreversibility, monotone history revisions, one outcome record
//!   per invocation — as plain cases run on every provider.
//! - `operator_cancel`: an operator's cancel commits with its audit entry (under injected
//!   store failures), and a dry run's verdict is the cancel's, for every verdict.
//! - `processes`: independent OS processes (this test binary re-executed as children)
//!   advancing one SQLite file while one of them is SIGKILLed.

#[macro_use]
#[path = "support/mod.rs"]
mod support;

#[path = "workflows/definitions.rs"]
mod definitions;

#[path = "workflows/fixtures.rs"]
mod runner;

/// One test per fixture file per provider (`fixtures::<provider>::<name>`), and one that
/// every file in the directory is listed; the names show in the test output.
macro_rules! fixtures {
    ($($name:ident => $file:literal),* $(,)?) => {
        mod fixtures {
            const FILES: &[&str] = &[$($file),*];

            #[test]
            fn every_fixture_file_is_listed() {
                crate::runner::all_files_listed(FILES);
            }

            per_provider! {
                $($name => |h: &dyn crate::support::Harness| crate::runner::run_fixture($file, h)),*
            }
        }
    };
}

fixtures! {
    step_kinds_complete => "step-kinds-complete.json",
    step_kinds_branch_fail => "step-kinds-branch-fail.json",
    retry_then_success => "retry-then-success.json",
    retry_exhaustion_on_error => "retry-exhaustion-on-error.json",
    retry_exhaustion_failed => "retry-exhaustion-failed.json",
    semantic_refusal_not_retried => "semantic-refusal-not-retried.json",
    event_before_timeout => "event-before-timeout.json",
    timeout_fires => "timeout-fires.json",
    timeout_without_edge_fails => "timeout-without-edge-fails.json",
    event_timeout_same_instant => "event-timeout-same-instant.json",
    event_before_wait_not_matched => "event-before-wait-not-matched.json",
    cancel_while_waiting => "cancel-while-waiting.json",
    cancel_races_completion => "cancel-races-completion.json",
    terminal_ignores_late_event => "terminal-ignores-late-event.json",
    incompatible_build_refuses => "incompatible-build-refuses.json",
    crash_between_outcome_and_transition => "crash-between-outcome-and-transition.json",
    idempotent_start => "idempotent-start.json",
    fanout_one_event => "fanout-one-event.json",
}

#[path = "workflows/conformance.rs"]
mod conformance;

#[path = "workflows/operator_cancel.rs"]
mod operator_cancel;

#[path = "workflows/processes.rs"]
mod processes;
