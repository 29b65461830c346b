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
/// Meta key of the change an operator acknowledged: its last revision on the old server.
const ACKNOWLEDGED_AFTER: &str = "server_change_acknowledged_after";

/// The audit action of a change of server.
pub const CHANGED: &str = "server-changed";
/// The audit action of an operator's acknowledgement of one.
pub const ACKNOWLEDGED: &str = "server-change-acknowledged";

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
    match naming(tx, conn.identity)? {
        Naming::Named => {}
        Naming::First => write_pair(tx, (SYSTEM_ID, TIMELINE), conn.identity)?,
        Naming::Changed(was) => {
            write_pair(tx, (SYSTEM_ID, TIMELINE), conn.identity)?;
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

/// What the store says of a connection's server `is`.
enum Naming {
    /// The store names it (or a server this connection's view lags behind).
    Named,
    /// The store names no server yet.
    First,
    /// The store names another server: this one.
    Changed(ServerIdentity),
}

fn naming(tx: &mut dyn Tx, is: ServerIdentity) -> Result<Naming> {
    Ok(match read_pair(tx, (SYSTEM_ID, TIMELINE))? {
        None => Naming::First,
        Some(was) if was == is => Naming::Named,
        // A timeline below the recorded one on the same cluster is this connection's view
        // lagging, not a change: a timeline only grows.
        Some(was)
            if was.system_identifier == is.system_identifier && was.timeline > is.timeline =>
        {
            Naming::Named
        }
        Some(was) => Naming::Changed(was),
    })
}

/// The change of server the store's writers recorded last, while the history the store
/// keeps reaches back to it.
fn recorded_change(tx: &mut dyn Tx) -> Result<Option<ServerChange>> {
    let (Some(was), Some(is)) = (
        read_pair(tx, (PREVIOUS_SYSTEM_ID, PREVIOUS_TIMELINE))?,
        read_pair(tx, (SYSTEM_ID, TIMELINE))?,
    ) else {
        return Ok(None);
    };
    let after = tx
        .meta_value(CHANGED_AFTER)?
        .and_then(|r| u64::try_from(r).ok());
    let kept_from = super::retention::history_from(tx)?;
    if after.is_some_and(|r| r + 1 < kept_from) {
        return Ok(None);
    }
    let acknowledged = tx.meta_value(ACKNOWLEDGED_AFTER)? == Some(acknowledgement_key(after));
    Ok(Some(ServerChange {
        was,
        is,
        after_revision: after,
        at: tx.meta_value(CHANGED_AT)?,
        acknowledged,
    }))
}

/// How an acknowledgement names the change it acknowledges: the last revision written on
/// the old server, or [`UNKNOWN_REVISION`] for a record that does not say it (a later change
/// always does, so an acknowledgement of such a record never covers it).
fn acknowledgement_key(after: Option<u64>) -> i64 {
    after.map_or(UNKNOWN_REVISION, |r| i64::try_from(r).unwrap_or(i64::MAX))
}

/// [`acknowledgement_key`] of a change recorded without its revision: no revision is
/// negative.
const UNKNOWN_REVISION: i64 = -1;

/// What [`Store::acknowledge_server_change`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Acknowledgement {
    /// The change, acknowledged now.
    Acknowledged(ServerChange),
    /// The change, acknowledged before: nothing was written.
    Already(ServerChange),
    /// No change of server to acknowledge: nothing was written.
    Nothing,
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
    /// Whether an operator acknowledged it (`leasehold store acknowledge-server-change`):
    /// still shown, no longer warned of.
    pub acknowledged: bool,
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
        let (change, recorded) =
            self.read(|tx| Ok((recorded_change(tx)?, read_pair(tx, (SYSTEM_ID, TIMELINE))?)))?;
        let mut changes: Vec<ServerChange> = change.into_iter().collect();
        if let (Some(was), Some(is)) = (recorded, self.backend.server_identity())
            && was != is
        {
            changes.push(ServerChange {
                was,
                is,
                after_revision: None,
                at: None,
                acknowledged: false,
            });
        }
        Ok(changes)
    }

    /// Acknowledges the change of server the store shows, audited under `actor` with
    /// `reason`: an operator who has made sure no commit was lost (or accepted the loss)
    /// stops `check`, `inspect overview` and the dashboard from warning of it; they still
    /// show it, marked acknowledged. A change this connection's server makes and no writer
    /// has recorded yet is recorded by the same write, then acknowledged. A later change
    /// is warned of again.
    ///
    /// # Errors
    /// A store failure.
    pub fn acknowledge_server_change(
        &self,
        actor: &str,
        reason: Option<&str>,
    ) -> Result<Acknowledgement> {
        self.write(|tx, now| {
            let unrecorded = match tx.connection_server().copied() {
                Some(c) if !c.recorded => {
                    matches!(naming(tx, c.identity)?, Naming::Changed(_))
                }
                _ => false,
            };
            if !unrecorded {
                match recorded_change(tx)? {
                    None => return Ok(Acknowledgement::Nothing),
                    Some(change) if change.acknowledged => {
                        return Ok(Acknowledgement::Already(change));
                    }
                    Some(_) => {}
                }
            }
            let before = tx.revision()?;
            tx.commit_revision()?;
            note(tx, now, before)?;
            let Some(change) = recorded_change(tx)? else {
                return Ok(Acknowledgement::Nothing);
            };
            tx.set_meta_value(
                ACKNOWLEDGED_AFTER,
                acknowledgement_key(change.after_revision),
            )?;
            super::record_audit(
                tx,
                now,
                actor,
                ACKNOWLEDGED,
                "store",
                &change.sentence(),
                reason.unwrap_or_default(),
            )?;
            Ok(Acknowledgement::Acknowledged(ServerChange {
                acknowledged: true,
                ..change
            }))
        })
    }
}
