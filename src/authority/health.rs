//! Readiness and liveness a host application reports for its embedded authority (a
//! Kubernetes probe, a `/healthz` endpoint): written by the runtime's loop, read by anyone.
//!
//! - **ready**: registered, not stopping, and the store answered its last call: send it
//!   traffic that needs its work done.
//! - **live**: the loop has turned recently. A loop stuck past three heartbeat intervals
//!   (a wedged store call, a starved runtime) is not live, and a host restarting it is
//!   the right answer: its claims lapse and another authority reclaims them.

#![warn(missing_docs)]

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use serde::Serialize;
use tokio::sync::watch;

/// The runtime's side: cheap to clone, shared with the host.
#[derive(Debug, Clone, Default)]
pub struct Health(Arc<Inner>);

#[derive(Debug, Default)]
struct Inner {
    registered: watch::Sender<bool>,
    stopping: AtomicBool,
    stopped: watch::Sender<bool>,
    store_down: AtomicBool,
    /// When the loop last turned, and how long it may go quiet before it is not live.
    beat: Mutex<Option<(Instant, Duration)>>,
    /// When the store last accepted a heartbeat (or the registration).
    heartbeat: Mutex<Option<Instant>>,
}

/// What the host reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HealthReport {
    /// Registered, not stopping, store reachable, loop turning: give it work.
    pub ready: bool,
    /// The loop has turned recently: a host may restart it when this is false.
    pub live: bool,
    /// Its registration is written (it may claim).
    pub registered: bool,
    /// A shutdown has begun: no new claims.
    pub stopping: bool,
    /// The store answered the loop's last call.
    pub store_reachable: bool,
    /// Since the loop last turned, in ms (`None` before it started).
    pub since_loop_ms: Option<u64>,
    /// Since the store last accepted a heartbeat, in ms (`None` before registration).
    pub since_heartbeat_ms: Option<u64>,
}

impl Health {
    pub(super) fn registered(&self, quiet_limit: Duration) {
        self.turned(quiet_limit);
        self.heartbeat_accepted();
        self.0.registered.send_replace(true);
    }

    pub(super) fn turned(&self, quiet_limit: Duration) {
        *self.0.beat.lock().unwrap_or_else(PoisonError::into_inner) =
            Some((Instant::now(), quiet_limit));
    }

    pub(super) fn heartbeat_accepted(&self) {
        *self
            .0
            .heartbeat
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(Instant::now());
    }

    pub(super) fn store(&self, down: bool) {
        self.0.store_down.store(down, Ordering::SeqCst);
    }

    pub(super) fn stopping(&self) {
        self.0.stopping.store(true, Ordering::SeqCst);
    }

    pub(super) fn stopped(&self) {
        self.0.stopping.store(true, Ordering::SeqCst);
        self.0.stopped.send_replace(true);
    }

    /// Resolves once the authority's loop has ended, whatever ended it: a shutdown, or a
    /// stop of its own (its registration lost, the store refusing it for good).
    pub async fn wait_stopped(&self) {
        let mut stopped = self.0.stopped.subscribe();
        // The sender lives as long as `self`, so the wait cannot fail.
        let _ = stopped.wait_for(|s| *s).await;
    }

    /// Resolves once the authority has registered.
    pub async fn wait_registered(&self) {
        let mut registered = self.0.registered.subscribe();
        // The sender lives as long as `self`, so the wait cannot fail.
        let _ = registered.wait_for(|r| *r).await;
    }

    /// The current report.
    #[must_use]
    pub fn report(&self) -> HealthReport {
        let inner = &self.0;
        let beat = *inner.beat.lock().unwrap_or_else(PoisonError::into_inner);
        let since = beat.map(|(at, _)| at.elapsed());
        let heartbeat = *inner
            .heartbeat
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let millis = |d: Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
        let registered = *inner.registered.borrow();
        let stopping = inner.stopping.load(Ordering::SeqCst);
        let store_reachable = !inner.store_down.load(Ordering::SeqCst);
        let live = !*inner.stopped.borrow() && beat.is_some_and(|(at, limit)| at.elapsed() < limit);
        HealthReport {
            ready: registered && !stopping && store_reachable && live,
            live,
            registered,
            stopping,
            store_reachable,
            since_loop_ms: since.map(millis),
            since_heartbeat_ms: heartbeat.map(|at| millis(at.elapsed())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ready_needs_registration_a_store_and_no_stop() {
        let health = Health::default();
        assert!(
            !health.report().ready && !health.report().live,
            "not started"
        );
        health.registered(Duration::from_secs(60));
        assert!(health.report().ready && health.report().live);
        health.store(true);
        let down = health.report();
        assert!(!down.ready && down.live && !down.store_reachable);
        health.store(false);
        health.stopping();
        assert!(!health.report().ready && health.report().live);
        health.stopped();
        assert!(!health.report().live);
    }

    #[test]
    fn a_quiet_loop_is_not_live() {
        let health = Health::default();
        health.registered(Duration::ZERO);
        std::thread::yield_now();
        let report = health.report();
        assert!(!report.live && !report.ready, "{report:?}");
    }
}
