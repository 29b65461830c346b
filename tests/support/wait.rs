//! Waiting for something another thread, task or process does: poll a condition until it
//! holds, with a deadline generous enough for a slow, shared machine. A test never sleeps
//! to let time pass; it waits for the state it needs, and a deadline that passes names
//! what never happened.

use std::time::{Duration, Instant};

/// How often a blocking wait polls: conditions here may run a query or a child process.
const POLL: Duration = Duration::from_millis(50);

/// How often an async wait polls: it yields to the runtime in between, so polling is cheap.
const POLL_ASYNC: Duration = Duration::from_millis(5);

/// Polls `done` until it holds; fails naming `what` once `deadline` has passed.
#[track_caller]
pub fn wait_until(what: &str, deadline: Instant, mut done: impl FnMut() -> bool) {
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(POLL);
    }
}

/// [`wait_until`] inside an async test: the runtime's workers keep running between polls.
pub async fn wait_until_async(what: &str, deadline: Instant, mut done: impl FnMut() -> bool) {
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(POLL_ASYNC).await;
    }
}

/// `within` from now: the deadline of one wait.
pub fn within(span: Duration) -> Instant {
    Instant::now() + span
}
