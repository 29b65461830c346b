//! Commits pushed to readers: every write transaction that advances the revision sends
//! `NOTIFY leasehold_commits, '<revision>'` in the same round trip as its `COMMIT`
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
pub(super) fn commit_statement(revision: Option<u64>) -> String {
    match revision {
        Some(rev) => format!("NOTIFY {CHANNEL}, '{rev}'; COMMIT"),
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
