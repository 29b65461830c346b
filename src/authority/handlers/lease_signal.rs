//! The lease-lost signal: how a running handler learns its claim is gone.
//!
//! The core raises it when a renewal is refused (another authority took the item over),
//! when a shutdown's grace period runs out with the handler still running, and when the
//! authority crashes in the simulated cluster. A handler that can stop early (a long
//! download, a child process) waits on [`LeaseWatch::lost`] beside its work; whatever it
//! answers afterwards is refused by the fence anyway, so stopping only saves effort.

use std::sync::Arc;

use tokio::sync::watch;

/// The raising side, kept with the job by the core. Cheap to clone.
#[derive(Debug, Clone)]
pub struct LeaseSignal(Arc<watch::Sender<bool>>);

impl Default for LeaseSignal {
    fn default() -> Self {
        Self(Arc::new(watch::Sender::new(false)))
    }
}

impl LeaseSignal {
    /// Marks the lease lost; every watcher's [`LeaseWatch::lost`] resolves.
    pub fn raise(&self) {
        self.0.send_replace(true);
    }

    /// A watcher for the handler.
    #[must_use]
    pub fn watch(&self) -> LeaseWatch {
        LeaseWatch(self.0.subscribe())
    }
}

/// The handler's side of the signal.
#[derive(Debug, Clone)]
pub struct LeaseWatch(watch::Receiver<bool>);

impl LeaseWatch {
    /// Whether the authority has learned that it no longer owns the item.
    #[must_use]
    pub fn is_lost(&self) -> bool {
        *self.0.borrow()
    }

    /// Resolves once the lease is lost; never, while it is held. Cancel-safe: use it in a
    /// `tokio::select!` beside the handler's work.
    pub async fn lost(&self) {
        let mut rx = self.0.clone();
        // An error means the job is gone and nothing will ever raise it: wait forever
        // rather than tell a handler a lease it holds is lost.
        if rx.wait_for(|lost| *lost).await.is_err() {
            std::future::pending::<()>().await;
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
}
