//! The one translation from PostgreSQL driver errors to store errors, and which failures
//! may pass if the whole transaction runs again.

use postgres::Client;
use postgres::error::SqlState;

use super::Names;
use super::tls::is_tls_refusal;
use crate::error::Error;
use crate::store::sql::{Step, Transient};

/// A failed connection attempt: the server refusing us for good (bad password, no such
/// database or role, a certificate that fails verification) fails at once as
/// `STORE_REFUSED`; anything else (refused, unreachable, starting up) may pass when the
/// server is back.
pub(super) fn connect_step(names: &Names, e: &postgres::Error) -> Step {
    let refused = e.code().is_some_and(|code| {
        code.code().starts_with("28")
            || *code == SqlState::INVALID_CATALOG_NAME
            || *code == SqlState::INVALID_PARAMETER_VALUE
    });
    if refused || is_tls_refusal(e) {
        Step::Fail(Error::Refused(names.text(e)))
    } else {
        Step::Retry(Transient::Disconnected(names.text(e)))
    }
}

/// Whether an error may pass if the whole transaction runs again.
pub(super) fn transient(names: &Names, e: &postgres::Error, client: &Client) -> Option<Transient> {
    if let Some(code) = e.code() {
        if *code == SqlState::T_R_SERIALIZATION_FAILURE || *code == SqlState::T_R_DEADLOCK_DETECTED
        {
            return Some(Transient::Contention);
        }
        // Connection exceptions, an administrator's or a crash's shutdown, a server still
        // starting, a session ended for idling inside a transaction.
        if code.code().starts_with("08")
            || [
                SqlState::ADMIN_SHUTDOWN,
                SqlState::CRASH_SHUTDOWN,
                SqlState::CANNOT_CONNECT_NOW,
                SqlState::IDLE_IN_TRANSACTION_SESSION_TIMEOUT,
                SqlState::TOO_MANY_CONNECTIONS,
            ]
            .contains(code)
        {
            return Some(Transient::Disconnected(names.text(e)));
        }
    }
    if client.is_closed() || e.is_closed() || e.as_db_error().is_none() && is_io(e) {
        return Some(Transient::Disconnected(names.text(e)));
    }
    None
}

/// Whether the server refused the statement for lack of privileges (not a damaged store).
pub(super) fn is_permission(e: &postgres::Error) -> bool {
    e.code() == Some(&SqlState::INSUFFICIENT_PRIVILEGE)
}

fn is_io(e: &postgres::Error) -> bool {
    std::error::Error::source(e)
        .is_some_and(<dyn std::error::Error + 'static>::is::<std::io::Error>)
}

/// The one translation from driver errors to store errors (after retries).
pub(super) fn map_error(names: &Names, e: &postgres::Error) -> Error {
    match e.code() {
        Some(code) if *code == SqlState::UNDEFINED_TABLE || *code == SqlState::UNDEFINED_COLUMN => {
            Error::Corrupt(format!(
                "{} (not a leasehold store of this version)",
                names.text(e)
            ))
        }
        Some(code) if *code == SqlState::READ_ONLY_SQL_TRANSACTION => {
            Error::ReadOnly(names.text(e))
        }
        _ if is_permission(e) => Error::Refused(format!(
            "permission denied: the database role may not do this ({})",
            names.text(e)
        )),
        _ => Error::Unavailable(names.text(e)),
    }
}

pub(super) fn step(names: &Names, e: &postgres::Error, client: &Client) -> Step {
    match transient(names, e, client) {
        Some(t) => Step::Retry(t),
        None => Step::Fail(map_error(names, e)),
    }
}
