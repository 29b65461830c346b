//! The connection pool: sessions opened on demand up to a maximum, each with its prepared
//! statements; a broken session, or one left inside a transaction, is dropped, never
//! handed out again.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};

use postgres::{Client, Config, Statement};

use super::errors::{connect_step, step};
use super::tls::MakeRustls;
use super::{Names, SESSION_SETUP};
use crate::store::backend::ConnectionServer;
use crate::store::sql::Step;

/// One pooled connection and its prepared statements.
pub(super) struct Conn {
    pub(super) client: Client,
    statements: HashMap<String, Statement>,
    /// Inside BEGIN … COMMIT / ROLLBACK: such a connection is never handed out again.
    pub(super) in_transaction: bool,
    /// The server this session reached, read when it was opened.
    pub(super) server: Option<ConnectionServer>,
}

impl Conn {
    /// A prepared statement for `sql`, prepared once per connection.
    pub(super) fn statement(
        &mut self,
        sql: &str,
    ) -> std::result::Result<Statement, postgres::Error> {
        if let Some(s) = self.statements.get(sql) {
            return Ok(s.clone());
        }
        let s = self.client.prepare(sql)?;
        self.statements.insert(sql.to_owned(), s.clone());
        Ok(s)
    }

    pub(super) fn client(&mut self) -> &mut Client {
        &mut self.client
    }
}

/// Connections opened on demand up to `max`; idle ones are reused.
pub(super) struct Pool {
    pub(super) config: Config,
    /// The TLS connector (`sslmode`, the trusted CAs) every session opens with.
    pub(super) tls: MakeRustls,
    pub(super) max: AtomicUsize,
    pub(super) state: Mutex<PoolState>,
    pub(super) returned: Condvar,
}

pub(super) struct PoolState {
    pub(super) idle: Vec<Conn>,
    pub(super) open: usize,
}

/// A connection out of the pool; it goes back on drop unless it is broken or mid-transaction.
pub(super) struct Pooled<'a> {
    pool: &'a Pool,
    conn: Option<Conn>,
}

impl Pooled<'_> {
    pub(super) fn conn(&mut self) -> &mut Conn {
        self.conn
            .as_mut()
            .expect("a pooled connection until dropped")
    }
}

impl Drop for Pooled<'_> {
    fn drop(&mut self) {
        let Some(conn) = self.conn.take() else {
            return;
        };
        let discarded = {
            let mut state = self.pool.lock();
            if conn.in_transaction || conn.client.is_closed() {
                state.open = state.open.saturating_sub(1);
                Some(conn)
            } else {
                state.idle.push(conn);
                None
            }
        };
        self.pool.returned.notify_one();
        // Closed outside the lock: closing talks to the server.
        drop(discarded);
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        let idle = std::mem::take(&mut self.lock().idle);
        // Closing a connection blocks on the driver's own runtime, which tokio forbids on a
        // thread that drives async tasks (a store dropped at the end of an async fn), so
        // inside a runtime the connections are closed on a thread of their own.
        if tokio::runtime::Handle::try_current().is_ok() {
            let _ = std::thread::spawn(move || drop(idle)).join();
        }
    }
}

impl Pool {
    pub(super) fn lock(&self) -> MutexGuard<'_, PoolState> {
        // The state is a list and a count, consistent at every unlock.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(super) fn get(&self, names: &Names) -> std::result::Result<Pooled<'_>, Step> {
        let mut state = self.lock();
        loop {
            if let Some(conn) = state.idle.pop() {
                return Ok(Pooled {
                    pool: self,
                    conn: Some(conn),
                });
            }
            if state.open < self.max.load(Ordering::Relaxed) {
                state.open += 1;
                break;
            }
            state = self
                .returned
                .wait(state)
                .unwrap_or_else(PoisonError::into_inner);
        }
        drop(state);
        match connect(self, names) {
            Ok(conn) => Ok(Pooled {
                pool: self,
                conn: Some(conn),
            }),
            Err(step) => {
                self.lock().open -= 1;
                self.returned.notify_one();
                Err(step)
            }
        }
    }
}

/// Opens one session of `pool`'s server (outside its count) and sets it up.
pub(super) fn connect(pool: &Pool, names: &Names) -> std::result::Result<Conn, Step> {
    let mut client = pool
        .config
        .connect(pool.tls.clone())
        .map_err(|e| connect_step(names, &e))?;
    client
        .batch_execute(SESSION_SETUP)
        .map_err(|e| step(names, &e, &client))?;
    let server = super::server_identity::read(&mut client);
    Ok(Conn {
        client,
        statements: HashMap::new(),
        in_transaction: false,
        server,
    })
}
