//! The authority registry: registration, heartbeats and forgetting, each one transaction
//! that judges the row it changes. An instance id is unique among running authorities:
//! a start under an id whose holder is still live or silent is refused, a heartbeat never
//! overwrites a row that another start of the same id now owns, and only a gone or stopped
//! registration can be forgotten.
//!
//! One exception to the first rule: a holder that crashed on this very host. Its process is
//! known to be gone (`foundation::process`), so nothing of it can still write, and the id is taken
//! over at once by the new start — a supervisor restarting a killed authority would
//! otherwise be refused for a whole lease and give up first.

use super::release::{ReleasedClaim, held_by, judge, refusal, release_held};
use super::{Logged, Store, Tx, record_audit};
use crate::clock::Millis;
use crate::error::{Error, Result};
use crate::foundation::actor::host_name;
use crate::foundation::process::{self, Gone};
use crate::model::{Authority, Incarnation, PageRequest, Published};
use crate::rules::liveness::{Liveness, liveness};

/// The audit action of [`Store::forget_authority`].
pub const FORGET_ACTION: &str = "forget-authority";

/// The audit action of a start that took over a crashed incarnation's instance id.
pub const RESTART_ACTION: &str = "restart-authority";

/// A registration that took the instance id over from a crashed incarnation on this host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Restart {
    /// The crashed incarnation's registration, as it was.
    pub previous: Authority,
    /// What became of its process.
    pub found: Gone,
    /// Every claim it still held, handed back under a new generation.
    pub claims: Vec<ReleasedClaim>,
}

/// Registrations read per page by [`Store::registrations`], and at most in all: the
/// registry is small, and the bound keeps a store full of stale rows cheap to read.
const REGISTRATIONS_PAGE: usize = 500;
pub const REGISTRATIONS_READ: usize = 10_000;

/// Audit entries read per page while looking for an earlier forget.
const AUDIT_PAGE: usize = 500;

pub(crate) fn in_use(row: &Authority, state: Liveness) -> Error {
    Error::InstanceInUse {
        instance: row.instance_id.clone(),
        liveness: state.as_str().into(),
        host: row.host.clone(),
        pid: row.pid,
    }
}

impl Store {
    /// The start instant for a new incarnation of `instance`: `now`, or just after the
    /// last start of that instance id on this store handed out in this process. An
    /// incarnation is its (instance id, host, pid, start), so two starts of one id in one
    /// process at one instant (a restart within a millisecond, a test clock that stands
    /// still, two handles opened on one file) would otherwise be one incarnation and share
    /// a registration instead of the second being refused. The record is kept per store
    /// ([`Backend::identity`](super::Backend::identity)), so one embedded cluster's starts
    /// never depend on what other stores the process ran.
    pub fn unique_start(&self, instance: &str) -> Millis {
        static LAST_STARTS: std::sync::LazyLock<super::per_owner::PerOwner<Millis>> =
            std::sync::LazyLock::new(Default::default);
        let now = self.now();
        let key = format!("{}\n{instance}", self.backend.identity());
        LAST_STARTS.advance(&key, |previous| {
            previous.map_or(now, |previous| now.max(previous.saturating_add(1)))
        })
    }

    /// Registers an authority. Refused while another incarnation of the same instance id
    /// is running (live or silent, judged by its own registered timing at the store's
    /// clock); a gone or stopped registration is replaced, and the same incarnation may
    /// register again (a registration retried after an outage). The check and the write
    /// are one write transaction, which every provider serialises, so of two racing
    /// starts under one id exactly one registers.
    ///
    /// A running holder registered from this host whose process has exited (or whose pid
    /// another process now has) is no holder: the start takes the id over as a new
    /// incarnation, and in the same transaction every claim the crashed one held is handed
    /// back under a new generation, as `authority release` would (its attempts count as
    /// uncertain), audited as [`RESTART_ACTION`] naming the dead pid. A holder on another
    /// host, one whose process runs, or one that recorded no process mark (`foundation::process`)
    /// is still refused. Answers the [`Restart`] when there was one.
    ///
    /// # Errors
    /// `INSTANCE_IN_USE` naming the running holder; a store failure.
    pub fn register_authority(&self, authority: &Authority) -> Result<Option<Restart>> {
        crate::ids::check_new_id("instance id", &authority.instance_id)?;
        crate::ids::check_opt_id(
            "build",
            Some(authority.build.as_str()).filter(|b| !b.is_empty()),
        )?;
        let incarnation = authority.incarnation();
        self.write(|tx, now| {
            tx.commit_revision()?;
            let mut restart = None;
            if let Some(row) = tx.authority(&authority.instance_id)? {
                let state = liveness(&row, now);
                if state.is_running() && !incarnation.owns(&row) {
                    let Some(found) = crashed_here(&row) else {
                        return Err(in_use(&row, state));
                    };
                    restart = Some(take_over(tx, now, authority, row, found)?);
                }
            }
            tx.put_authority(authority)?;
            Ok(restart)
        })
    }

    /// Every registration the registry holds — running, gone or stopped alike, since a
    /// registration stays until `authority forget` removes it — read in pages and bounded
    /// at `REGISTRATIONS_READ` (10,000) rows: what the fleet has declared it runs (each row's
    /// handlers and versions, [`crate::model::Authority::handler_versions`]), for the
    /// readers that judge by the fleet's builds rather than by who is live this second
    /// (workflow validation and deploy, cancel).
    ///
    /// # Errors
    /// A store failure.
    pub fn registrations(&self) -> Result<Vec<Authority>> {
        let mut all = Vec::new();
        let mut page = PageRequest::first(REGISTRATIONS_PAGE);
        while all.len() < REGISTRATIONS_READ {
            let rows = self.list_authorities(&page)?;
            all.extend(rows.rows);
            match rows.next {
                Some(next) => page = PageRequest::after(next, REGISTRATIONS_PAGE),
                None => break,
            }
        }
        all.truncate(REGISTRATIONS_READ);
        Ok(all)
    }

    /// Records a heartbeat (or, with `stopped`, a clean stop) for `incarnation`.
    ///
    /// # Errors
    /// `NOT_FOUND` for an unregistered (or forgotten) instance; `INSTANCE_SUPERSEDED` when
    /// another start of the same instance id registered since — the row is left alone; a
    /// store failure.
    pub fn heartbeat(&self, incarnation: &Incarnation, stopped: bool) -> Result<()> {
        self.beat(incarnation, stopped, None)
    }

    /// A heartbeat (or, with `stopped`, a clean stop) that also replaces what the authority
    /// publishes about itself ([`Published`]): fenced by `incarnation` exactly like the
    /// heartbeat, in the same transaction, so a superseded process can neither hide nor
    /// invent the current start's trouble.
    ///
    /// # Errors
    /// As [`Self::heartbeat`].
    pub fn publish(
        &self,
        incarnation: &Incarnation,
        stopped: bool,
        published: &Published,
    ) -> Result<()> {
        self.beat(incarnation, stopped, Some(published))
    }

    fn beat(
        &self,
        incarnation: &Incarnation,
        stopped: bool,
        published: Option<&Published>,
    ) -> Result<()> {
        // Urgent: a heartbeat that waits behind the fleet's claim batches makes a busy
        // authority look silent.
        self.write_urgent(&[], |tx, now| {
            let Some(mut row) = tx.authority(&incarnation.instance_id)? else {
                return Err(Error::NotFound {
                    what: "authority".into(),
                    id: incarnation.instance_id.clone(),
                });
            };
            if !incarnation.owns(&row) {
                return Err(Error::Superseded {
                    instance: row.instance_id,
                    host: row.host,
                    pid: row.pid,
                });
            }
            row.heartbeat_at = now;
            if stopped {
                row.stopped_at = Some(now);
            }
            if let Some(published) = published {
                row.published = published.clone();
            }
            tx.commit_revision()?;
            tx.put_authority(&row)
        })
    }

    /// Removes a gone or stopped authority's registration and records it in the audit log
    /// as `actor` (with `reason`), in one transaction; answers the row and the liveness it
    /// was judged by. Refused while the authority still holds a claim (release it first:
    /// forgetting would leave its claims to lapse with nobody to name). A repeat, once the
    /// registration is gone, answers [`Forgot::Already`] and writes nothing; a refusal is
    /// audited (and changes nothing else).
    ///
    /// # Errors
    /// `NOT_FOUND` for an id never forgotten; `INSTANCE_IN_USE` while it is live or silent;
    /// `WORK_IN_PROGRESS` naming a claim it still holds; a store failure.
    pub fn forget_authority(&self, instance: &str, actor: &str, reason: &str) -> Result<Forgot> {
        crate::ids::check_id("instance id", instance)?;
        self.write_logged(|tx, now| match judge_forget(tx, instance, now) {
            Ok(Forgot::Now(row, state)) => {
                tx.delete_authority(instance)?;
                let outcome = format!("forgotten: was {state}");
                record_audit(tx, now, actor, FORGET_ACTION, instance, &outcome, reason)?;
                Ok(Logged::Done(Forgot::Now(row, state)))
            }
            Ok(Forgot::Already) => Ok(Logged::Done(Forgot::Already)),
            Err(e) => {
                record_audit(
                    tx,
                    now,
                    actor,
                    FORGET_ACTION,
                    instance,
                    &refusal(&e),
                    reason,
                )?;
                Ok(Logged::Refused(e))
            }
        })
    }

    /// What [`Self::forget_authority`] would answer now, read without writing.
    ///
    /// # Errors
    /// As [`Self::forget_authority`] (nothing is audited).
    pub fn forget_preview(&self, instance: &str) -> Result<Forgot> {
        crate::ids::check_id("instance id", instance)?;
        let now = self.now();
        self.read(|tx| judge_forget(tx, instance, now))
    }
}

/// How the process of `row` (a running registration) was found gone, when it was
/// registered from this host with a process mark; `None` when it may still run.
fn crashed_here(row: &Authority) -> Option<Gone> {
    if row.host != host_name() {
        return None;
    }
    process::gone(row.pid, &row.process_mark()?)
}

/// Hands back what the crashed `previous` held, as `new` (the actor), and audits the
/// takeover against the instance id.
fn take_over(
    tx: &mut dyn Tx,
    now: Millis,
    new: &Authority,
    previous: Authority,
    found: Gone,
) -> Result<Restart> {
    let actor = format!("{} (pid {} on {})", new.instance_id, new.pid, new.host);
    let reason = format!(
        "restarted: pid {} on {} is {found}",
        previous.pid, previous.host
    );
    let claims = release_held(tx, now, &previous.instance_id, &actor, &reason)?;
    let outcome = format!(
        "took over from crashed pid {} ({found}): {} claim(s) released",
        previous.pid,
        claims.len()
    );
    record_audit(
        tx,
        now,
        &actor,
        RESTART_ACTION,
        &new.instance_id,
        &outcome,
        &reason,
    )?;
    Ok(Restart {
        previous,
        found,
        claims,
    })
}

/// What forgetting an authority comes to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Forgot {
    /// The registration (as it was, and the liveness it was judged by) is removed.
    Now(Box<Authority>, Liveness),
    /// A repeat: the registration was forgotten before; nothing changes.
    Already,
}

/// Judges a forget: the row when it may go, [`Forgot::Already`] for an id whose
/// registration an earlier forget removed (the audit log, newest first, says so).
fn judge_forget(tx: &mut dyn Tx, instance: &str, now: Millis) -> Result<Forgot> {
    let (row, state) = match judge(tx, instance, now) {
        Err(Error::NotFound { what, id }) => {
            return if forgotten_before(tx, instance)? {
                Ok(Forgot::Already)
            } else {
                Err(Error::NotFound { what, id })
            };
        }
        judged => judged?,
    };
    if let Some(held) = held_by(tx, instance)?.first() {
        return Err(held.still_held(instance));
    }
    Ok(Forgot::Now(Box::new(row), state))
}

/// Whether the newest forget of `instance` in the audit log removed it.
fn forgotten_before(tx: &mut dyn Tx, instance: &str) -> Result<bool> {
    let mut page = PageRequest {
        after: None,
        limit: AUDIT_PAGE,
        backwards: true,
    };
    loop {
        let rows = tx.list_audit(&page)?;
        if let Some(entry) = rows.iter().rev().find(|e| {
            e.action == FORGET_ACTION && e.target == instance && !e.outcome.starts_with("refused")
        }) {
            return Ok(entry.outcome.starts_with("forgotten"));
        }
        match rows.first().filter(|_| rows.len() >= AUDIT_PAGE) {
            Some(oldest) => page.after = Some(format!("{:020}", oldest.id)),
            None => return Ok(false),
        }
    }
}
