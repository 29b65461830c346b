//! How a writer waits for another process's write lock.
//!
//! SQLite's own busy handler (`busy_timeout`) naps 1, 2, 5, 10, 15, 20, 25, 25, 25, 50, 50
//! and then 100 ms between tries: a writer that has waited a little sleeps 100 ms at a time,
//! and a lock released and taken again within that nap is never seen. With several
//! authorities on one file, one or two keep taking the lock while the others sleep through
//! its releases, so an item's claim → complete tail grows with every authority added. Here
//! every nap is one short [`NAP`]: a waiter tries again within about a millisecond of any
//! release, for the same total bound ([`BUSY_TIMEOUT`]) before the statement reports busy
//! and the whole transaction is retried.

use std::time::Duration;

/// How long one statement waits, in all, for another process's lock before reporting busy.
pub(super) const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// One nap between tries of a lock another process holds.
const NAP: Duration = Duration::from_millis(1);

/// Tries before a statement reports busy: [`BUSY_TIMEOUT`] in [`NAP`]s.
const TRIES: i32 = (BUSY_TIMEOUT.as_millis() / NAP.as_millis()) as i32;

/// The busy handler: `true` to try again after a nap, `false` (after [`TRIES`]) to report
/// busy. SQLite counts `tries` from 0 for each statement.
pub(super) fn nap_and_retry(tries: i32) -> bool {
    if tries >= TRIES {
        return false;
    }
    std::thread::sleep(NAP);
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_statement_waits_its_bound_in_short_naps_then_reports_busy() {
        assert_eq!(TRIES, 5_000);
        assert!(nap_and_retry(0));
        assert!(nap_and_retry(TRIES - 1));
        assert!(!nap_and_retry(TRIES));
    }
}
