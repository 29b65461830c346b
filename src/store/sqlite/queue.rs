//! The host's queue for the write lock: the processes writing one SQLite file wait their
//! turn in the kernel, on a lock file of their own, and the next one is woken the moment
//! the holder is done.
//!
//! Without it every waiter sleeps and retries SQLite's lock on its own (`busy.rs`): with
//! six authorities that is five processes waking every millisecond on two cores, and the
//! lock going to whichever happens to try just after a release, so an unlucky authority's
//! completions wait out several turns of the others. A blocking `flock` on the queue's file
//! puts the waiters to sleep in the kernel instead, which wakes one at the release. SQLite's
//! own locking stays the guarantee: the queue only orders who tries `BEGIN IMMEDIATE` next,
//! and a writer that does not use it (another build, a process whose temporary directory is
//! private, a file it may not open) still waits in short naps and is served as before.
//!
//! The file lives in the system's temporary directory, named after the store's canonical
//! path (`leasehold-<digest>.writers`), not beside the database: a command refused before it
//! wrote anything, or a failed `copy`, leaves the store's directory exactly as it was. It is
//! never removed (removing a lock file others have open would split the queue in two); it
//! is empty, and one per store a host has written.
//!
//! A turn is waited for at most [`TURN_WAIT`]: a holder stopped or stalled mid-transaction
//! would otherwise hold every queued writer with it, unseen. Past the bound the writer goes
//! on without its turn to `BEGIN IMMEDIATE` and SQLite's busy wait, whose bound, stall
//! reports and retries apply as without the queue; and until the queue is seen free again
//! (a turn taken without waiting) this handle's writers only try for a turn, never wait,
//! so a holder stopped between its commit and its release costs the others one wait, not
//! one per transaction. Renewals of claims and heartbeats
//! never queue (`Backend::write_urgent`): they keep what a process holds alive and are
//! small, so they go straight to SQLite's lock and are served at the next release, ahead
//! of any queued claim batch.
//!
//! `flock` waits cannot time out, so the waiting is done by one thread per open store,
//! which takes the lock for the writer asking and hands it over; a writer that stopped
//! waiting leaves the lock to that thread, which lets it go at once.

use std::fs::{File, OpenOptions};
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Sender, channel};
use std::sync::{Arc, Condvar, Mutex, OnceLock, PoisonError};
use std::time::Duration;

use rustix::fs::{FlockOperation, flock};
use sha2::{Digest, Sha256};

/// How long a writer waits for its turn before it goes on to SQLite's lock without one.
pub(super) const TURN_WAIT: Duration = Duration::from_secs(1);

/// The queue of one database file as this handle waits in it: the lock file is opened and
/// the waiting thread started at the first queued write.
pub(super) struct WriteQueue {
    database: PathBuf,
    joined: OnceLock<Option<Joined>>,
    /// A wait ran out: writers only try for a turn until one is taken without waiting.
    stalled: AtomicBool,
}

/// The lock file, open, and the thread that waits on it for this handle.
struct Joined {
    file: Arc<File>,
    requests: Mutex<Sender<Arc<Handover>>>,
}

/// One writer's request, between it and the thread that waits in the kernel.
#[derive(Default)]
struct Handover {
    state: Mutex<Request>,
    changed: Condvar,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum Request {
    #[default]
    Waiting,
    /// The thread took the lock for the writer, which now holds it.
    Granted,
    /// The writer stopped waiting; whoever sees this lets the lock go.
    Abandoned,
}

/// This process's turn at the write lock; let go when dropped.
pub(super) struct Turn {
    file: Arc<File>,
}

impl Drop for Turn {
    fn drop(&mut self) {
        unlock(&self.file);
    }
}

impl WriteQueue {
    /// The queue of the writers of `database`.
    pub(super) fn of(database: &Path) -> Self {
        Self {
            database: database.to_owned(),
            joined: OnceLock::new(),
            stalled: AtomicBool::new(false),
        }
    }

    /// Waits for this process's turn, at most `bound`; `None` when it did not come or the
    /// queue cannot be joined (its file cannot be opened): the writer goes on without it.
    pub(super) fn turn(&self, bound: Duration) -> Option<Turn> {
        let joined = self
            .joined
            .get_or_init(|| Joined::open(&self.database))
            .as_ref()?;
        let turn = || Turn {
            file: joined.file.clone(),
        };
        if flock(
            joined.file.as_fd(),
            FlockOperation::NonBlockingLockExclusive,
        )
        .is_ok()
        {
            self.stalled.store(false, Ordering::Relaxed);
            return Some(turn());
        }
        if self.stalled.load(Ordering::Relaxed) {
            return None;
        }
        let handover = Arc::new(Handover::default());
        joined
            .requests
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .send(handover.clone())
            .ok()?;
        let state = handover
            .state
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let (mut state, _) = handover
            .changed
            .wait_timeout_while(state, bound, |r| *r == Request::Waiting)
            .unwrap_or_else(PoisonError::into_inner);
        if *state == Request::Granted {
            return Some(turn());
        }
        // Not ours: the thread lets the lock go when it gets it.
        *state = Request::Abandoned;
        self.stalled.store(true, Ordering::Relaxed);
        None
    }
}

impl Joined {
    fn open(database: &Path) -> Option<Self> {
        let path = lock_path(database);
        // Another user's file of the same store is locked through a read-only descriptor.
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .or_else(|_| File::open(&path))
            .ok()?;
        let file = Arc::new(file);
        let (requests, incoming) = channel::<Arc<Handover>>();
        let waiter = file.clone();
        std::thread::Builder::new()
            .name("leasehold-write-queue".into())
            .spawn(move || {
                // Ends when the handle is dropped (the sender with it).
                for handover in incoming {
                    wait_in_kernel(&waiter, &handover);
                }
            })
            .ok()?;
        Some(Self {
            file,
            requests: Mutex::new(requests),
        })
    }
}

/// The thread's side: takes the lock for `handover`'s writer, or lets it go at once when
/// the writer stopped waiting meanwhile.
fn wait_in_kernel(file: &File, handover: &Handover) {
    if flock(file.as_fd(), FlockOperation::LockExclusive).is_err() {
        // Leave the writer to its bound; it goes on without a turn.
        return;
    }
    let mut state = handover
        .state
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    if *state == Request::Waiting {
        *state = Request::Granted;
        handover.changed.notify_one();
    } else {
        drop(state);
        unlock(file);
    }
}

fn unlock(file: &File) {
    // An unlock of a lock held cannot fail on an open descriptor; closing it would too.
    let _ = flock(file.as_fd(), FlockOperation::Unlock);
}

/// The queue's file of `database`: every spelling of one file names the same queue.
fn lock_path(database: &Path) -> PathBuf {
    let canonical = database
        .canonicalize()
        .unwrap_or_else(|_| database.to_owned());
    let digest = hex::encode(Sha256::digest(canonical.as_os_str().as_encoded_bytes()));
    std::env::temp_dir().join(format!("leasehold-{}.writers", &digest[..32]))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_turn_is_exclusive_between_handles_and_handed_over_at_release() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("store.db");
        let (a, b, c) = (
            WriteQueue::of(&db),
            WriteQueue::of(&db),
            WriteQueue::of(&db),
        );
        let held = a.turn(TURN_WAIT).unwrap();
        // Another open file description waits, and gives up at its bound.
        assert!(b.turn(Duration::from_millis(20)).is_none());
        // The waiter is a third handle: `b`, whose wait ran out, only tries until the queue
        // is free again, so it could ask (and give up) before the release below.
        let waiter = std::thread::spawn(move || c.turn(Duration::from_secs(30)).is_some());
        drop(held);
        assert!(
            waiter.join().unwrap(),
            "the waiter gets the turn at the release"
        );
    }

    #[test]
    fn after_a_wait_ran_out_writers_only_try_until_the_queue_is_free_again() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("store.db");
        let (a, b) = (WriteQueue::of(&db), WriteQueue::of(&db));
        let held = a.turn(TURN_WAIT).unwrap();
        assert!(b.turn(Duration::from_millis(1)).is_none());
        // A stalled queue is not waited for again: this returns at once, not after a minute.
        let started = std::time::Instant::now();
        assert!(b.turn(Duration::from_secs(60)).is_none());
        assert!(started.elapsed() < Duration::from_secs(30));
        drop(held);
        // Free again: `b`'s queue thread may hold the lock for a moment to let it go, so
        // the first tries may miss; a turn comes, and then `b` waits in the queue again.
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        while b.turn(Duration::from_secs(30)).is_none() {
            assert!(
                std::time::Instant::now() < deadline,
                "the queue stayed stalled"
            );
        }
        assert!(!b.stalled.load(Ordering::Relaxed));
    }

    #[test]
    fn a_turn_given_up_is_let_go_by_the_queue() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("store.db");
        let (a, b) = (WriteQueue::of(&db), WriteQueue::of(&db));
        let held = a.turn(TURN_WAIT).unwrap();
        assert!(b.turn(Duration::from_millis(1)).is_none());
        drop(held);
        // b's queue thread takes the lock for a writer that has gone, and lets it go: a
        // later writer on `a` is not held by it.
        assert!(a.turn(Duration::from_secs(30)).is_some());
    }
}
