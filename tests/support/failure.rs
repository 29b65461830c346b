//! The command line's failure contract, asserted on a finished `leasehold` run. Its own
//! file so that a suite which needs nothing else of the support layer (the build without
//! PostgreSQL, `tests/without_postgres.rs`) includes only this.

use std::path::Path;
use std::process::{Command, Output};

/// `leasehold ARGS` as the contract is asserted on: this host's rewind witnesses in
/// `state` (never the home directory), a backtrace asked for (none may show), no colour.
pub fn run_in(state: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_leasehold"))
        .env("LEASEHOLD_STATE_DIR", state)
        .env_remove("LEASEHOLD_STORE")
        .env("RUST_BACKTRACE", "1")
        .env("NO_COLOR", "1")
        .args(args)
        .output()
        .unwrap()
}

/// Asserts the failure contract: exit `expected`, exactly one `leasehold: …` line on stderr,
/// no panic text, no backtrace, no `Debug` output. Returns that line.
pub fn assert_one_line_failure(o: &Output, expected: i32) -> String {
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(
        o.status.code().unwrap_or(-1),
        expected,
        "stdout: {}\nstderr: {err}",
        String::from_utf8_lossy(&o.stdout)
    );
    assert_eq!(err.lines().count(), 1, "one line expected: {err:?}");
    assert!(err.starts_with("leasehold: "), "{err:?}");
    for forbidden in [
        "panicked",
        "RUST_BACKTRACE",
        "stack backtrace",
        "Error {",
        "Some(",
    ] {
        assert!(!err.contains(forbidden), "{forbidden} in {err:?}");
    }
    err
}
