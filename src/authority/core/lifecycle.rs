//! An authority's life around the claim loop: register as a new incarnation, heartbeat,
//! renew every owned claim (a refused renewal marks the job lost), shut down (release
//! what it owns, abandon what still executes, record the stop) or crash (forget
//! everything; the claims lapse).

use super::{AuthorityCore, Exec, Executed, Job, Renewed, Task};
use crate::authority::stats::Stats;
use crate::authority::{fencing, log};
use crate::error::{Error, Result};
use crate::model::{Authority, Incarnation, Published, Recovering};

impl AuthorityCore {
    /// Registers this authority (identity, compat, build, config, heartbeat) as a new
    /// incarnation of its instance id. A start that took the id over from a crashed
    /// incarnation on this host says so (`restarted`, with the dead pid and what it held).
    ///
    /// # Errors
    /// `INSTANCE_IN_USE` while another start of the same instance id is running; a store
    /// failure.
    pub fn register(&self) -> Result<()> {
        let now = self.store.unique_start(&self.config.instance_id);
        self.state().started_at = now;
        let restart = self.store.register_authority(&Authority {
            instance_id: self.config.instance_id.clone(),
            compat: self.compat.clone(),
            build: self.config.build.clone(),
            config: self.registered_config(),
            started_at: now,
            heartbeat_at: now,
            stopped_at: None,
            host: self.host.clone(),
            pid: std::process::id(),
            published: crate::model::Published::default(),
        })?;
        if let Some(restart) = restart {
            tracing::warn!(
                instance = self.id(),
                "previousPid" = restart.previous.pid,
                found = restart.found.as_str(),
                released = restart.claims.len(),
                "restarted"
            );
        }
        Ok(())
    }

    /// The registration's config text: the knobs, plus every handler name with its
    /// version, so the dashboard can tell an item nobody can run ("no handler"), plus this
    /// process's mark, so that a restart after a crash can tell this process is gone.
    fn registered_config(&self) -> String {
        let mut config = serde_json::to_value(&self.config).unwrap_or_default();
        if let Some(object) = config.as_object_mut() {
            object.insert(
                "handlers".into(),
                serde_json::to_value(self.workload.versions()).unwrap_or_default(),
            );
            if let Some(mark) = crate::ops::process::this_process() {
                object.insert(crate::model::authority::PROCESS_MARK.into(), mark.into());
            }
        }
        config.to_string()
    }

    /// This process's incarnation (as of its last [`Self::register`]).
    #[must_use]
    pub fn incarnation(&self) -> Incarnation {
        Incarnation {
            instance_id: self.config.instance_id.clone(),
            host: self.host.clone(),
            pid: std::process::id(),
            started_at: self.state().started_at,
        }
    }

    /// Refreshes the heartbeat, publishing with it the outcomes held in recovery now (the
    /// registration row then lists exactly these).
    ///
    /// # Errors
    /// `INSTANCE_SUPERSEDED` once another start of this instance id owns the registration
    /// (the caller should stop); a store failure.
    pub fn heartbeat(&self) -> Result<()> {
        let published = Published::of(self.held_in_recovery());
        let out = self.store.publish(&self.incarnation(), false, &published);
        self.note_store_error(&out);
        out
    }

    /// Renews every owned claim. A fenced (or otherwise refused) renewal marks the job lost:
    /// someone else owns the item now, and this job's outcome will be dropped.
    pub fn renew(&self) -> Renewed {
        let jobs: Vec<Job> = self
            .state()
            .inflight
            .values()
            .filter(|f| !f.lost)
            .map(|f| f.job.clone())
            .collect();
        let lease = self.config.lease_duration_ms;
        let mut report = Renewed::default();
        for job in jobs {
            let result = match &job.task {
                Task::Work(item) => self
                    .store
                    .renew_claim(&item.id, &self.config.instance_id, item.generation, lease)
                    .map(|_| ()),
                Task::Workflow(c) => self.engine.renew(c, lease).map(|_| ()),
            };
            let current = match &result {
                Err(Error::Fenced { current, .. }) => Some(*current),
                _ => None,
            };
            let mut st = self.state();
            match result {
                Ok(()) => report.renewed += 1,
                Err(e) if e.is_store_failure() => {
                    st.stats.store_errors += 1;
                    report.failed += 1;
                }
                Err(_) => {
                    if let Some(f) = st.inflight.get_mut(&job.id) {
                        f.lost = true;
                        f.job.lease.raise();
                        // A held cursor runs nothing whose finish would drop it: forget it now.
                        if f.held {
                            st.inflight.remove(&job.id);
                        }
                        st.stats.leases_lost += 1;
                        report.lost += 1;
                        drop(st);
                        log::lease_lost(self.id(), &job, current);
                    }
                }
            }
        }
        report
    }

    /// Stops claiming, releases what it owns but no longer executes (held cursors,
    /// outcomes a store failure deferred: work items yielded back to pending, workflow
    /// leases released) and records the stop.
    ///
    /// A job whose handler is still executing — its grace period ran out — is *abandoned*:
    /// nothing is written, its outcome is dropped if it ever comes, and its claim lapses, so
    /// the next owner reclaims it as an uncertain attempt with the same idempotency key.
    /// Releasing it instead would let another authority start it while this handler may
    /// still be acting, and would hide that the attempt may have had effects.
    ///
    /// # Errors
    /// Never for a release that fails (counted; the claim then lapses on its own); a store
    /// failure recording the stop is returned after everything else was attempted.
    pub fn shutdown(&self) -> Result<Stats> {
        let owned: Vec<(Job, Option<Recovering>)> = {
            let mut st = self.state();
            st.stopping = true;
            let (idle, executing): (Vec<_>, Vec<_>) = std::mem::take(&mut st.inflight)
                .into_values()
                .filter(|f| !f.lost)
                .partition(|f| f.held || f.deferred.is_some());
            st.stats.abandoned_on_shutdown += executing.len() as u64;
            // Their handlers may still run: tell them the claim is no longer theirs.
            for f in &executing {
                f.job.lease.raise();
            }
            idle.into_iter().map(|f| (f.job, f.recovery)).collect()
        };
        // Outcomes held in recovery stay published until their claims are handed back.
        let mut still_held = Vec::new();
        for (job, recovery) in owned {
            let released = match &job.task {
                Task::Work(item) => self
                    .store
                    .yield_back(
                        &item.id,
                        &self.config.instance_id,
                        item.generation,
                        self.store.now(),
                    )
                    .map(|_| ()),
                Task::Workflow(c) => self.engine.release(c),
            };
            let fenced = match &released {
                Err(e) if !e.is_store_failure() => fencing::fenced(&self.store, &job, e.code()),
                _ => None,
            };
            let mut st = self.state();
            match released {
                Ok(()) => st.stats.released_on_shutdown += 1,
                Err(e) if e.is_store_failure() => {
                    st.stats.store_errors += 1;
                    still_held.extend(recovery);
                }
                Err(e) => st.stats.refused(e.code(), fenced.is_some()),
            }
            drop(st);
            if let Task::Work(_) = &job.task {
                self.log_attempt(
                    &job,
                    &Executed {
                        job_id: job.id,
                        exec: Exec::CursorIdle,
                        spent_ms: 0,
                    },
                    "released",
                );
            }
        }
        let published = Published::of(still_held);
        let stopped = self.store.publish(&self.incarnation(), true, &published);
        self.note_store_error(&stopped);
        stopped.map(|()| self.stats())
    }

    /// Forgets every owned job without writing anything (a crash): the claims lapse.
    pub fn crash(&self) {
        let mut st = self.state();
        st.stopping = true;
        for (_, f) in std::mem::take(&mut st.inflight) {
            f.job.lease.raise();
        }
    }
}
