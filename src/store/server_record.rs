//! The server a store was last written on, kept in the store's own meta beside the chain.
//!
//! A PostgreSQL database has nothing beside it that a restore cannot reach, so a host that
//! never wrote to it has only the database's own word. What the database can say is which
//! server wrote its last commit: every write on a connection whose server identity is
//! known (`Tx::connection_server`) compares it with the identity meta records, in memory
//! after the connection's first write, and writes it only when it differs. A write that
//! finds another server — another system identifier (the database was restored or copied
//! into another cluster) or another timeline (a failover, a point-in-time restore) —
//! cannot tell from inside whether commits were lost. It is not refused (a planned,
//! lossless failover must keep working); it is recorded durably instead: meta keeps the
//! previous identity and the last revision written before the change, and the audit log
//! an entry naming both. `leasehold check` reports it as a warning (`server-changed`)
//! while the kept history reaches back to it, as do `inspect overview` and the dashboard;
//! a host whose witness saw the old server
//! judges the store by it (`store/witness.rs`).
//!
//! A role that may not read the identity records nothing, and nothing is compared.

use serde::Serialize;

use super::backend::ServerIdentity;
use super::{Store, Tx};
use crate::clock::Millis;
use crate::error::Result;

/// Meta keys of the server the store was last written on.
const SYSTEM_ID: &str = "server_system_id";
const TIMELINE: &str = "server_timeline";
/// Meta keys of the server before the last change, and when it changed.
const PREVIOUS_SYSTEM_ID: &str = "server_previous_system_id";
const PREVIOUS_TIMELINE: &str = "server_previous_timeline";
const CHANGED_AFTER: &str = "server_changed_after";
const CHANGED_AT: &str = "server_changed_at";

/// The audit action of a change of server.
pub const CHANGED: &str = "server-changed";

/// An identity kept under two meta keys.
fn read_pair(tx: &mut dyn Tx, (id, timeline): (&str, &str)) -> Result<Option<ServerIdentity>> {
    Ok(match (tx.meta_value(id)?, tx.meta_value(timeline)?) {
        (Some(system_identifier), Some(timeline)) => Some(ServerIdentity {
            system_identifier,
            timeline,
        }),
        _ => None,
    })
}

fn write_pair(tx: &mut dyn Tx, (id, timeline): (&str, &str), is: ServerIdentity) -> Result<()> {
    tx.set_meta_value(id, is.system_identifier)?;
    tx.set_meta_value(timeline, is.timeline)
}

/// Records the server of this write's connection when the store names another (or none),
/// in a transaction that committed a revision above `before`; a change of server also
/// keeps the previous one and the last revision written before it, and an audit entry.
///
/// # Errors
/// A store failure.
pub(crate) fn note(tx: &mut dyn Tx, now: Millis, before: u64) -> Result<()> {
    let Some(conn) = tx.connection_server().copied() else {
        return Ok(());
    };
    if conn.recorded || tx.revision()? <= before {
        return Ok(());
    }
    let was = read_pair(tx, (SYSTEM_ID, TIMELINE))?;
    // A timeline below the recorded one on the same cluster is this connection's view
    // lagging, not a change: a timeline only grows.
    let behind = was.is_some_and(|w| {
        w.system_identifier == conn.identity.system_identifier
            && w.timeline > conn.identity.timeline
    });
    if was != Some(conn.identity) && !behind {
        write_pair(tx, (SYSTEM_ID, TIMELINE), conn.identity)?;
        if let Some(was) = was {
            write_pair(tx, (PREVIOUS_SYSTEM_ID, PREVIOUS_TIMELINE), was)?;
            tx.set_meta_value(CHANGED_AFTER, i64::try_from(before).unwrap_or(i64::MAX))?;
            tx.set_meta_value(CHANGED_AT, now)?;
            let outcome = format!(
                "written on {was} through revision {before}, now on {}: commits the old server acknowledged after revision {before} may be lost",
                conn.identity
            );
            super::record_audit(tx, now, "leasehold", CHANGED, "store", &outcome, "")?;
        }
    }
    // Known to match from now on, unless this transaction rolls back: the backend forgets it
    // then (`postgres::rollback`), and the next write on this connection reads it again.
    if let Some(c) = tx.connection_server() {
        c.recorded = true;
    }
    Ok(())
}

/// A change of the server under a store that a reader can see.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ServerChange {
    /// The server before.
    pub was: ServerIdentity,
    /// The server after.
    pub is: ServerIdentity,
    /// The last revision written on the old server, when a writer has since written on
    /// the new one; `None` while no writer has (the store is at that revision).
    pub after_revision: Option<u64>,
    /// When the first write on the new server committed.
    pub at: Option<Millis>,
}

impl ServerChange {
    /// One line for people.
    #[must_use]
    pub fn sentence(&self) -> String {
        match self.after_revision {
            Some(r) => format!(
                "the store was written on {} through revision {r}, then on {}: whether the old server acknowledged commits after revision {r} that the new one lacks cannot be told from the store",
                self.was, self.is
            ),
            None => format!(
                "the store was last written on {}, and {} answers for it now: whether commits were lost cannot be told from the store",
                self.was, self.is
            ),
        }
    }
}

impl Store {
    /// The changes of server this store shows: the last one its writers recorded, while
    /// the history the store keeps reaches back to it (like every finding of the checker,
    /// it concerns the kept window), and a server answering now that is not the one the
    /// store was last written on (no writer has written since). Empty for a provider
    /// without a server, a role that may not read the identity, or a store that was always
    /// written on one server.
    ///
    /// # Errors
    /// A store failure.
    pub fn server_changes(&self) -> Result<Vec<ServerChange>> {
        let (recorded, previous, after, at, kept_from) = self.read(|tx| {
            Ok((
                read_pair(tx, (SYSTEM_ID, TIMELINE))?,
                read_pair(tx, (PREVIOUS_SYSTEM_ID, PREVIOUS_TIMELINE))?,
                tx.meta_value(CHANGED_AFTER)?,
                tx.meta_value(CHANGED_AT)?,
                super::retention::history_from(tx)?,
            ))
        })?;
        let after = after.and_then(|r| u64::try_from(r).ok());
        let mut changes = Vec::new();
        if let (Some(was), Some(is)) = (previous, recorded)
            && after.is_none_or(|r| r + 1 >= kept_from)
        {
            changes.push(ServerChange {
                was,
                is,
                after_revision: after,
                at,
            });
        }
        if let (Some(was), Some(is)) = (recorded, self.backend.server_identity())
            && was != is
        {
            changes.push(ServerChange {
                was,
                is,
                after_revision: None,
                at: None,
            });
        }
        Ok(changes)
    }
}
