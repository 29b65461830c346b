//! The lease-lost signal: how a running handler learns its claim is gone.
//!
//! The core raises it when a renewal is refused (another authority took the item over),
//! when a shutdown's grace period runs out with the handler still running, and when the
//! authority crashes in the simulated cluster. A handler that can stop early (a long
//! download, a child process) waits on [`LeaseWatch::lost`] beside its work; whatever it
//! answers afterwards is refused by the fence anyway, so stopping only saves effort.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use tokio::sync::Notify;

/// The flag and the waiters on it. A flag and a `Notify` rather than a watch channel: one
/// is made for every claimed job, and most are dropped unraised and unwaited.
#[derive(Debug, Default)]
struct Shared {
    lost: AtomicBool,
    raised: Notify,
}

/// The raising side, kept with the job by the core. Cheap to clone.
#[derive(Debug, Clone, Default)]
pub struct LeaseSignal(Arc<Shared>);

impl LeaseSignal {
    /// Marks the lease lost; every watcher's [`LeaseWatch::lost`] resolves.
    pub fn raise(&self) {
        self.0.lost.store(true, Ordering::Release);
        self.0.raised.notify_waiters();
    }

    /// A watcher for the handler.
    #[must_use]
    pub fn watch(&self) -> LeaseWatch {
        LeaseWatch(self.0.clone())
    }
}

/// The handler's side of the signal.
#[derive(Debug, Clone)]
pub struct LeaseWatch(Arc<Shared>);

impl LeaseWatch {
    /// Whether the authority has learned that it no longer owns the item.
    #[must_use]
    pub fn is_lost(&self) -> bool {
        self.0.lost.load(Ordering::Acquire)
    }

    /// Resolves once the lease is lost; never, while it is held (nor once the job is gone
    /// unraised: nothing will raise it then). Cancel-safe: use it in a `tokio::select!`
    /// beside the handler's work.
    pub async fn lost(&self) {
        loop {
            // Registered before the flag is read, so a raise in between is not missed.
            let raised = self.0.raised.notified();
            tokio::pin!(raised);
            raised.as_mut().enable();
            if self.is_lost() {
                return;
            }
            raised.await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_raised_signal_wakes_every_watcher_and_stays_raised() {
        let signal = LeaseSignal::default();
        let watch = signal.watch();
        assert!(!watch.is_lost());
        let waiter = tokio::spawn({
            let watch = watch.clone();
            async move { watch.lost().await }
        });
        signal.raise();
        waiter.await.expect("the watcher wakes");
        assert!(watch.is_lost());
        // A watcher taken after the raise sees it at once.
        signal.watch().lost().await;
    }

    #[tokio::test]
    async fn an_unraised_signal_never_resolves_even_once_dropped() {
        use futures_util::FutureExt;
        let signal = LeaseSignal::default();
        let watch = signal.watch();
        let waiter = tokio::spawn({
            let watch = watch.clone();
            async move { watch.lost().await }
        });
        tokio::task::yield_now().await;
        drop(signal);
        for _ in 0..10 {
            tokio::task::yield_now().await;
        }
        assert!(!waiter.is_finished(), "a lease nobody raised is not lost");
        assert!(watch.lost().now_or_never().is_none());
        assert!(!watch.is_lost());
        waiter.abort();
    }
}
