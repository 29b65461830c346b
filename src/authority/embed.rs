//! The authority an application embeds: [`Authority::builder`] over a [`Store`], with the
//! application's handlers registered by name and semantic version, started on the host's
//! tokio runtime, reporting [`Health`], and stopped by [`Authority::shutdown`].
//!
//! It is the same runtime as `leasehold authority` ([`run_authority_with`]): the same
//! claims, renewals while handlers run, fencing, heartbeats and shutdown.

#![warn(missing_docs)]

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use super::config::AuthorityConfig;
use super::handlers::{BlockingHandler, Handler, Workload};
use super::health::{Health, HealthReport};
use super::runtime::{RunOptions, run_authority_with};
use super::stats::Stats;
use crate::clock::Millis;
use crate::error::{Error, Result};
use crate::model::HandlerKeys;
use crate::model::HandlerVersion;
use crate::store::Store;

/// Builds an [`Authority`]; see [`Authority::builder`].
pub struct AuthorityBuilder {
    store: Store,
    config: AuthorityConfig,
    workload: Workload,
    options: RunOptions,
    /// The first registration mistake, reported by [`Self::start`].
    refused: Option<Error>,
}

impl AuthorityBuilder {
    /// Registers the async `handler` for `name` at `version` (`MAJOR.MINOR.PATCH`).
    /// Registering a name twice keeps the last.
    #[must_use]
    pub fn handler(self, name: &str, version: &str, handler: impl Handler) -> Self {
        self.checked(name, version, |workload, version| {
            workload.register_async(name, version, Arc::new(handler));
        })
    }

    /// Registers a blocking `handler` (a synchronous function; it runs on the blocking
    /// pool) for `name` at `version`.
    #[must_use]
    pub fn blocking_handler(
        self,
        name: &str,
        version: &str,
        handler: impl BlockingHandler + 'static,
    ) -> Self {
        self.checked(name, version, |workload, version| {
            workload.register_blocking(name, version, Arc::new(handler));
        })
    }

    /// Registers through `register` once `name` and `version` are valid; otherwise keeps
    /// the first mistake for [`Self::start`] to report.
    fn checked(
        mut self,
        name: &str,
        version: &str,
        register: impl FnOnce(&mut Workload, HandlerVersion),
    ) -> Self {
        let valid = crate::ids::check_id("handler", name).and_then(|()| {
            HandlerVersion::parse(version).map_err(|e| match e {
                Error::Invalid(why) => Error::Invalid(format!("handler {name:?}: {why}")),
                other => other,
            })
        });
        match valid {
            Ok(version) => register(&mut self.workload, version),
            Err(e) => {
                self.refused.get_or_insert(e);
            }
        }
        self
    }

    /// Registers every handler of `workload` (e.g. one read from a handler config file).
    #[must_use]
    pub fn handlers(mut self, workload: &Workload) -> Self {
        self.workload.extend(workload);
        self
    }

    /// Appends one JSON line per physical attempt to `path`.
    #[must_use]
    pub fn exec_log(mut self, path: impl Into<PathBuf>) -> Self {
        self.options.exec_log = Some(path.into());
        self
    }

    /// Serves Prometheus / OpenMetrics text on `GET /metrics` from `listener` (bound by
    /// the host, e.g. to `127.0.0.1:9464`) while the authority runs.
    #[must_use]
    pub fn metrics(mut self, listener: std::net::TcpListener) -> Self {
        self.options.metrics = Some(Arc::new(listener));
        self
    }

    /// How long [`Authority::shutdown`] waits for running handlers (default: the renew
    /// interval); claims are renewed meanwhile, and those still running after it are
    /// abandoned to lapse, their handlers told through the lease-lost signal.
    #[must_use]
    pub fn shutdown_grace_ms(mut self, grace: Millis) -> Self {
        self.options.shutdown_grace_ms = Some(grace);
        self
    }

    /// Registers the authority and starts it on the current tokio runtime.
    ///
    /// # Errors
    /// `INVALID` for an unsafe config, a bad handler name or version, no handler at all
    /// (an embedded authority never runs handlers it was not given), or a handler limit,
    /// rate or retry policy on a handler not registered; `INSTANCE_IN_USE` while another start of the same instance id runs; a store
    /// failure registering. Must be called inside a tokio runtime.
    pub async fn start(self) -> Result<Authority> {
        if let Some(refused) = self.refused {
            return Err(refused);
        }
        self.config.validate()?;
        // Checked here too, not only by the runtime: no task is spawned for it.
        self.workload.check_runs(&self.config)?;
        let health = self.options.health.clone();
        let instance_id = self.config.instance_id.clone();
        let versions = self.workload.handler_versions();
        let (stop, stopped) = oneshot::channel::<()>();
        let run = run_authority_with(
            self.store,
            self.config,
            self.workload,
            self.options,
            async move {
                let _ = stopped.await;
            },
        );
        let ended = health.clone();
        let mut task = tokio::spawn(async move {
            let outcome = run.await;
            // However the loop ended (an error returns early): `stopped()` resolves.
            ended.stopped();
            outcome
        });
        // A refused start (the instance id in use, the store down) is the caller's error
        // now, not a task that ended quietly.
        tokio::select! {
            () = health.wait_registered() => {}
            ended = &mut task => {
                return Err(match ended {
                    Ok(Err(e)) => e,
                    Ok(Ok(_)) => Error::Unavailable(format!("authority {instance_id} stopped while starting")),
                    Err(e) => Error::OutcomeUnknown(format!("authority {instance_id} did not start: {e}")),
                });
            }
        }
        Ok(Authority {
            instance_id,
            versions,
            health,
            stop: Some(stop),
            task,
        })
    }
}

/// A running authority embedded in an application.
///
/// ```no_run
/// use leasehold::authority::{Attempt, Authority, AuthorityConfig, HandlerOutcome};
///
/// # async fn run(store: leasehold::Store) -> leasehold::Result<()> {
/// let authority = Authority::builder(store, AuthorityConfig::new("billing-1", "v1"))
///     .handler("charge-card", "1.2.0", |attempt: Attempt| async move {
///         // Call the payment provider with `attempt.idempotency_key` ...
///         HandlerOutcome::Succeeded(None)
///     })
///     .start()
///     .await?;
/// assert!(authority.health().live);
/// // ... on SIGTERM:
/// let stats = authority.shutdown().await?;
/// # let _ = stats;
/// # Ok(())
/// # }
/// ```
pub struct Authority {
    instance_id: String,
    /// Its handlers' versions: what the work it runs is stamped for.
    versions: BTreeMap<String, HandlerVersion>,
    health: Health,
    stop: Option<oneshot::Sender<()>>,
    task: JoinHandle<Result<Stats>>,
}

impl std::fmt::Debug for Authority {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Authority")
            .field("instance_id", &self.instance_id)
            .field("health", &self.health.report())
            .finish_non_exhaustive()
    }
}

impl Authority {
    /// An authority over `store` with `config` (its instance id, build label and knobs;
    /// [`AuthorityConfig::new`] holds the documented defaults). Register handlers on the
    /// builder, then [`AuthorityBuilder::start`].
    #[must_use]
    pub fn builder(store: Store, config: AuthorityConfig) -> AuthorityBuilder {
        let name = config.instance_id.clone();
        AuthorityBuilder {
            store,
            config,
            workload: Workload::new(name, 0),
            options: RunOptions::default(),
            refused: None,
        }
    }

    /// The instance id it registered under.
    #[must_use]
    pub fn instance_id(&self) -> &str {
        &self.instance_id
    }

    /// The key work for `handler` is stamped with so that this authority (and any other
    /// running a compatible version of the handler) claims it: what a producer in the same
    /// application passes to [`Store::enqueue`]. `None` for a handler it does not register.
    #[must_use]
    pub fn key_for(&self, handler: &str) -> Option<String> {
        (&self.versions).key_for(handler)
    }

    /// Its handlers' versions, by name: what a producer passes to
    /// [`Store::start_workflow`] so that this authority may run the instance.
    #[must_use]
    pub fn handler_versions(&self) -> BTreeMap<String, HandlerVersion> {
        self.versions.clone()
    }

    /// Readiness and liveness, for the host's probes.
    #[must_use]
    pub fn health(&self) -> HealthReport {
        self.health.report()
    }

    /// Resolves once the authority has stopped of its own accord: its registration lost to an operator's `forget` or to
    /// another start of its instance id, or a store that refuses it for good. It claims
    /// nothing more; [`Self::shutdown`] then answers why (`REGISTRATION_LOST`,
    /// `INSTANCE_SUPERSEDED`, `STORE_REFUSED`, …). A host that must not go on without its
    /// authority selects on this beside its own work; [`Self::health`] says the same when
    /// polled (`live` false). The authority's log lines (the `registration-lost` that says
    /// why, among them) are `tracing` events: install a subscriber to see them.
    pub async fn stopped(&self) {
        self.health.wait_stopped().await;
    }

    /// Stops: no new claims, running handlers finish within the grace period (claims
    /// renewed meanwhile), what it still owns is released, and the stop is recorded.
    ///
    /// # Errors
    /// A store failure recording the stop, or the error the authority stopped on (an
    /// authority that stopped of its own accord, [`Self::stopped`], answers why).
    pub async fn shutdown(mut self) -> Result<Stats> {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        (&mut self.task).await.map_err(|e| {
            Error::OutcomeUnknown(format!("authority {} did not stop: {e}", self.instance_id))
        })?
    }
}
