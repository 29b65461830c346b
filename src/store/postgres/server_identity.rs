//! Which server a connection reached: PostgreSQL's system identifier (shared by a primary
//! and its physical replicas, different for any other cluster) and its current timeline
//! (a new one after each promotion or point-in-time restore), read once when the
//! connection is opened. A write compares it with what the store's meta records
//! (`store/server_record.rs`), so a database restored into another cluster or failed over
//! is named by the store itself, not only by a host that saw it before.
//!
//! The timeline is the one the server writes its log on now, from the name of its current
//! WAL file: the control file's (`pg_control_checkpoint()`) changes only at the first
//! checkpoint after a promotion, which can be minutes later, so a connection opened in
//! between would read the old one. A standby, which writes no log, answers the control
//! file's.
//!
//! The control functions are executable by `PUBLIC` on a stock PostgreSQL 15; an
//! installation may revoke them. A role that may not call them reads nothing: the
//! identity is unknown, never an error.

use postgres::Client;

use crate::store::backend::{ConnectionServer, ServerIdentity};

/// The server `client` reached, or `None` when its role may not read it.
pub(super) fn read(client: &mut Client) -> Option<ConnectionServer> {
    let row = client
        .query_one(
            "SELECT s.system_identifier,
                    CASE WHEN pg_is_in_recovery() THEN c.timeline_id::bigint
                         ELSE ('x' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8))
                              ::bit(32)::bigint END
             FROM pg_control_system() s, pg_control_checkpoint() c",
            &[],
        )
        .ok()?;
    Some(ConnectionServer {
        identity: ServerIdentity {
            system_identifier: row.try_get(0).ok()?,
            timeline: row.try_get(1).ok()?,
        },
        recorded: false,
    })
}
