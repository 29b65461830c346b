//! An authority's life around the claim loop: register as a new incarnation, heartbeat,
//! renew every owned claim (a refused renewal marks the job lost), shut down (write what
//! outcomes it can, release what it holds idle, leave to lapse what still executes or
//! could not be written, record the stop) or crash (forget everything; the claims lapse).

use super::{AuthorityCore, Exec, Executed, Finished, Job, Renewed, Task};
use crate::authority::stats::Stats;
use crate::authority::{fencing, log};
use crate::error::{Error, Result};
use crate::model::{Authority, Incarnation, Published};

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
            if let Some(mark) = crate::foundation::process::this_process() {
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
        let published = Published::of(self.held_in_recovery()).with_steps_aside(self.steps_aside());
        let out = self.store.publish(&self.incarnation(), false, &published);
        self.note_store_error(&out);
        out
    }

    /// Renews every owned claim: the work items in one transaction, each workflow
    /// instance's lease on its own. A fenced (or otherwise refused) renewal marks the job
    /// lost: someone else owns the item now, and this job's outcome will be dropped.
    pub fn renew(&self) -> Renewed {
        let jobs: Vec<Job> = self
            .state()
            .inflight
            .values()
            .filter(|f| !f.lost)
            .map(|f| f.job.clone())
            .collect();
        let lease = self.config.lease_duration_ms;
        let mut items = Vec::new();
        let mut instances = Vec::new();
        for job in &jobs {
            match &job.task {
                Task::Work(item) => items.push((job, item.id.as_str(), item.generation)),
                Task::Workflow(claimed) => instances.push((job, claimed)),
            }
        }
        let claims: Vec<(&str, u64)> = items.iter().map(|&(_, id, g)| (id, g)).collect();
        let mut report = Renewed::default();
        match self
            .store
            .renew_claims(&self.config.instance_id, &claims, lease)
        {
            Ok(answers) => {
                for ((job, _, _), result) in items.into_iter().zip(answers) {
                    self.settle_renewal(job, result.map(drop), &mut report);
                }
            }
            // One store failure, and none of the items renewed.
            Err(e) => {
                self.note_failure(&e);
                report.failed += claims.len();
            }
        }
        for (job, claimed) in instances {
            let result = self.engine.renew(claimed, lease).map(drop);
            self.settle_renewal(job, result, &mut report);
        }
        report
    }

    /// Counts one renewal's answer, and marks its job lost when it was refused.
    fn settle_renewal(&self, job: &Job, result: Result<()>, report: &mut Renewed) {
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
                    log::lease_lost(self.id(), job, current);
                }
            }
        }
    }

    /// Stops claiming, makes a last try of the outcomes a store failure deferred, releases
    /// what it owns but no longer executes (held cursors yielded back) and records the
    /// stop.
    ///
    /// A deferred outcome is known: it is written under its claim if the store takes it now
    /// (one more group commit, [`Self::flush`], which also reads back once more what is held
    /// in recovery). One the store still will not take is *left claimed*: nothing more is
    /// written for it, and its claim lapses, so whoever reclaims it counts the attempt as
    /// uncertain (against the item's budget) and retries it with the same idempotency key.
    /// Handing it back to `pending` instead would drop the known outcome and count nothing,
    /// so the next owner would repeat its effect without a trace — and the store that just
    /// refused the outcome would hardly take a hand-back anyway.
    ///
    /// A job whose handler is still executing — its grace period ran out — is *abandoned*
    /// the same way: nothing is written, its outcome is dropped if it ever comes, and its
    /// claim lapses. Releasing it instead would let another authority start it while this
    /// handler may still be acting, and would hide that the attempt may have had effects.
    ///
    /// Both are counted in `abandoned_on_shutdown`; outcomes still held in recovery stay
    /// published with the stop, for an operator to see until the claims are released.
    ///
    /// # Errors
    /// Never for a release that fails (counted; the claim then lapses on its own); a store
    /// failure recording the stop is returned after everything else was attempted.
    pub fn shutdown(&self) -> Result<Stats> {
        self.stop_claiming();
        self.flush();
        let (held, unrecorded) = {
            let mut st = self.state();
            let owned: Vec<_> = std::mem::take(&mut st.inflight)
                .into_values()
                .filter(|f| !f.lost)
                .collect();
            let (unrecorded, rest): (Vec<_>, Vec<_>) =
                owned.into_iter().partition(|f| f.deferred.is_some());
            let (held, executing): (Vec<_>, Vec<_>) = rest.into_iter().partition(|f| f.held);
            st.stats.abandoned_on_shutdown += (executing.len() + unrecorded.len()) as u64;
            // Their handlers may still run: tell them the claim is no longer theirs.
            for f in &executing {
                f.job.lease.raise();
            }
            (held, unrecorded)
        };
        let mut still_held = Vec::new();
        for f in unrecorded {
            if let Some(executed) = &f.deferred {
                let left = Finished::Abandoned("uncertain");
                log::finished(self.id(), &f.job, executed, &left, None);
                self.log_attempt(&f.job, executed, "uncertain");
            }
            still_held.extend(f.recovery);
        }
        for f in held {
            let job = f.job;
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
                Err(e) if e.is_store_failure() => st.stats.store_errors += 1,
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
        let published = Published::of(still_held).with_steps_aside(self.steps_aside());
        let stopped = self.store.publish(&self.incarnation(), true, &published);
        self.note_store_error(&stopped);
        stopped.map(|()| self.stats())
    }

    /// The polls that stood aside so far, as the registration row publishes them.
    fn steps_aside(&self) -> u64 {
        self.state().stats.lock_step_asides
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
