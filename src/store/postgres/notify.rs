//! Commits pushed to readers: every write transaction that advances the revision sends
//! `pg_notify('leasehold_commits', '<revision>')` in the same round trip as its `COMMIT`
//! (PostgreSQL delivers a notification only if, and when, its transaction commits), and
//! [`PgCommitFeed`] listens on a session of its own. An attached dashboard then re-reads at
//! once instead of at its next poll; polling stays as the fallback, because a listener
//! that reconnects can miss notifications sent meanwhile.

use std::time::Duration;

use postgres::fallible_iterator::FallibleIterator;

use super::pool::{Conn, connect};
use super::{Names, Pool};
use crate::error::{Error, Result};
use crate::store::backend::CommitFeed;
use crate::store::sql::retry;

/// The channel, one per database (a store is a database).
const CHANNEL: &str = "leasehold_commits";

/// What ends a write transaction that committed `revision`: the notification and the
/// commit in one simple query (one round trip). A revision is a number, never text from
/// outside, so the statement is built by formatting.
///
/// The notification is sent by `pg_notify`, not `NOTIFY`: a server that keeps
/// `pg_stat_statements` folds a `SELECT`'s constants into one entry, but keeps a utility
/// statement's text as it is, so every commit's `NOTIFY …, '<revision>'` was an entry of its
/// own. They crowded out the operator's own statements, and each time the table filled the
/// server stopped to sort and evict (`pg_stat_statements_info.dealloc`).
pub(super) fn commit_statement(revision: Option<u64>) -> String {
    match revision {
        Some(rev) => format!("SELECT pg_notify('{CHANNEL}', '{rev}'); COMMIT"),
        None => "COMMIT".to_owned(),
    }
}

/// A session listening on the channel.
pub(super) struct PgCommitFeed {
    conn: Conn,
}

impl PgCommitFeed {
    pub(super) fn open(pool: &Pool, names: &Names) -> Result<Self> {
        let mut conn = retry(super::MAX_ATTEMPTS, || connect(pool, names))?;
        conn.client
            .batch_execute(&format!("LISTEN {CHANNEL}"))
            .map_err(|e| Error::Unavailable(format!("{}: LISTEN: {e}", names.label)))?;
        Ok(Self { conn })
    }
}

impl CommitFeed for PgCommitFeed {
    fn next_commit(&mut self, within: Duration) -> Result<Option<u64>> {
        let mut newest = None;
        let mut wait = within;
        // The first notification waits up to `within`; the ones already queued behind it
        // are folded into it (a reader wants the newest revision, not each one).
        while let Some(n) = self
            .conn
            .client
            .notifications()
            .timeout_iter(wait)
            .next()
            .map_err(|e| Error::Unavailable(format!("commit feed: {e}")))?
        {
            newest = newest.max(n.payload().parse::<u64>().ok());
            wait = Duration::ZERO;
        }
        Ok(newest)
    }
}

#[cfg(test)]
mod tests {
    use super::commit_statement;

    /// The revision is a constant of a `SELECT`, which `pg_stat_statements` folds into one
    /// entry for every commit.
    #[test]
    fn the_notification_is_a_select_whose_revision_is_a_constant() {
        assert_eq!(
            commit_statement(Some(42)),
            "SELECT pg_notify('leasehold_commits', '42'); COMMIT"
        );
        assert_eq!(commit_statement(None), "COMMIT");
    }
}
