//! A grant answered after a long wait for the store's write lock: the caller queues behind
//! a transaction someone else holds for longer than the lease it asks for, and whatever
//! it is granted when the lock frees must still be alive when the answer arrives. Shared
//! by the providers whose write lock another connection can hold (SQLite, PostgreSQL).

use std::thread;
use std::time::Duration;

use leasehold::Store;
use leasehold::clock::{Clock, ManualClock};
use leasehold::model::work::NewWork;
use leasehold::store::Keyed;

use super::K;
use super::wait::{wait_until, within};

/// The lease every call asks for.
const LEASE_MS: i64 = 5_000;

/// Runs the case on `store` (reading `clock`): `hold` takes the store's write lock from
/// outside and returns what releases it; `waiting` says when a writer of this process
/// queues behind it. While the lock is held, time passes by more than a lease; the claim
/// and the lease acquire that queued are then answered with grants that expire after the
/// answer, not before it.
pub fn grants_outlive_a_lock_wait_longer_than_the_lease(
    store: &Store,
    clock: &ManualClock,
    hold: impl FnOnce() -> Box<dyn FnOnce()>,
    waiting: impl Fn() -> bool,
) {
    store
        .enqueue(NewWork::effect("w-1", "h", "{}"), K)
        .expect("the item is enqueued");
    let release = hold();
    let claimer = {
        let store = store.clone();
        thread::spawn(move || store.claim("w-1", "a-1", K, LEASE_MS))
    };
    let acquirer = {
        let store = store.clone();
        #[allow(clippy::cast_precision_loss)]
        let lease = LEASE_MS as f64;
        thread::spawn(move || store.acquire("res-1", "a-2", lease, Keyed { key: None }))
    };
    wait_until(
        "a write queued behind the held lock",
        within(Duration::from_secs(60)),
        &waiting,
    );
    clock.advance(LEASE_MS + 1_000);
    release();
    let item = claimer.join().unwrap().expect("the claim is granted");
    let lease = acquirer.join().unwrap().expect("the lease is granted");
    let answered = clock.now();
    let item_expires = item.lease_expires_at.expect("a claimed item has a lease");
    assert!(
        item_expires > answered,
        "the claim answered at {answered} expired at {item_expires}: its instant was read before the lock wait"
    );
    assert!(
        lease.expires_at > answered,
        "the lease answered at {answered} expired at {}: its instant was read before the lock wait",
        lease.expires_at
    );
}
