//! Force-releasing a gone authority's claims (`leasehold authority release ID`).
//!
//! An authority that died holding claims leaves them to lapse one by one as other
//! authorities poll; an operator who knows it is gone can hand everything back at once.
//! Each claimed work item and each unreleased lease the authority still holds gets a new
//! generation in the same transaction that judged the authority gone, so a late write
//! from it (a process that was only paused) is fenced by the ordinary generation check.
//! Work goes back to `pending`, due now, its unrecorded attempt counted as uncertain (it
//! may have run) — or, when that attempt spent its budget, ends as a dead letter exactly
//! as a lapse would end it; a lease is marked released, keeping its checkpoint for the next holder.
//! Each change is one audit entry and one operator write in the history the checker reads;
//! a run that finds nothing held changes nothing and writes nothing. An operator's cancel
//! of a workflow instance releases the instance's lease the same way (`release_lease`),
//! under the cancel's own audit entry.

use serde::Serialize;

use super::attempt_errors::Lapsed;
use super::{Store, Tx, record_audit, record_write};
use crate::clock::Millis;
use crate::error::{Error, Result};
use crate::model::work::WorkFilter;
use crate::model::{Authority, Holder, Lease, PageRequest, WorkItem, WorkState, WriteVerb};
use crate::rules::liveness::{Liveness, liveness};
use crate::rules::work::settle_unfinished;

/// The audit action of [`Store::release_authority`].
pub const RELEASE_ACTION: &str = "release-authority";

/// Rows read per page while collecting what an authority holds.
const PAGE: usize = 500;

/// One claim an authority holds, as the store has it.
#[derive(Debug, Clone)]
pub(crate) enum Held {
    Work(Box<WorkItem>),
    Lease(Lease),
}

impl Held {
    fn resource(&self) -> &str {
        match self {
            Self::Work(item) => &item.id,
            Self::Lease(lease) => &lease.resource_id,
        }
    }

    fn generation(&self) -> u64 {
        match self {
            Self::Work(item) => item.generation,
            Self::Lease(lease) => lease.generation,
        }
    }

    /// The refusal of a forget while this claim is held: `WORK_IN_PROGRESS` naming it.
    pub(crate) fn still_held(&self, instance: &str) -> Error {
        Error::LeaseHeld {
            resource: self.resource().to_owned(),
            owner: instance.to_owned(),
            expires_at: match self {
                Self::Work(item) => item.lease_expires_at.unwrap_or_default(),
                Self::Lease(lease) => lease.expires_at,
            },
        }
    }

    fn noun(&self) -> &'static str {
        match self {
            Self::Work(_) => "work",
            Self::Lease(_) => "lease",
        }
    }
}

/// One claim handed back: the resource, and the generation it moved from and to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ReleasedClaim {
    /// `work` or `lease`.
    pub kind: &'static str,
    pub resource: String,
    pub from_generation: u64,
    pub to_generation: u64,
}

/// What a release found (and, unless previewed, did).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Release {
    pub authority: Authority,
    pub liveness: Liveness,
    /// Every claim handed back (or, in a preview, that would be); empty on a repeat.
    pub claims: Vec<ReleasedClaim>,
}

impl Store {
    /// Hands back every claim a gone (or stopped) authority still holds: each claimed work
    /// item returns to `pending` (a dead letter when the lost attempt was its last) under a
    /// new generation, each unreleased lease is released
    /// under a new generation. One transaction; one audit entry (as `actor`, with
    /// `reason`) per claim released; a repeat finds nothing and writes nothing. A refusal
    /// is audited (and changes nothing else).
    ///
    /// # Errors
    /// `NOT_FOUND` for an unknown id; `INSTANCE_IN_USE` while it is live or silent; a
    /// malformed id or actor; a store failure.
    pub fn release_authority(&self, instance: &str, actor: &str, reason: &str) -> Result<Release> {
        crate::ids::check_id("instance id", instance)?;
        if actor.trim().is_empty() {
            return Err(Error::Invalid("an operator action needs an actor".into()));
        }
        self.write_logged(|tx, now| {
            let (row, state) = match judge(tx, instance, now) {
                Ok(judged) => judged,
                Err(e) => {
                    record_audit(
                        tx,
                        now,
                        actor,
                        RELEASE_ACTION,
                        instance,
                        &refusal(&e),
                        reason,
                    )?;
                    return Ok(super::Logged::Refused(e));
                }
            };
            let claims = release_held(tx, now, instance, actor, reason)?;
            // Outcomes it held in recovery on those claims are settled by the next owner.
            let released: Vec<&str> = claims.iter().map(|c| c.resource.as_str()).collect();
            let published = row.published.clone().without(&released);
            if published != row.published {
                tx.put_authority(&Authority {
                    published,
                    ..row.clone()
                })?;
            }
            Ok(super::Logged::Done(Release {
                authority: row,
                liveness: state,
                claims,
            }))
        })
    }

    /// What [`Self::release_authority`] would hand back now, read without writing.
    ///
    /// # Errors
    /// As [`Self::release_authority`] (nothing is audited).
    pub fn release_preview(&self, instance: &str) -> Result<Release> {
        crate::ids::check_id("instance id", instance)?;
        let now = self.now();
        self.read(|tx| {
            let (row, state) = judge(tx, instance, now)?;
            let claims = held_by(tx, instance)?
                .iter()
                .map(|held| ReleasedClaim {
                    kind: held.noun(),
                    resource: held.resource().to_owned(),
                    from_generation: held.generation(),
                    to_generation: held.generation() + 1,
                })
                .collect();
            Ok(Release {
                authority: row,
                liveness: state,
                claims,
            })
        })
    }
}

/// The authority's row and liveness, when it may be released or forgotten: refused while
/// it is running (it may still be working), and for an unknown id.
pub(crate) fn judge(tx: &mut dyn Tx, instance: &str, now: Millis) -> Result<(Authority, Liveness)> {
    let Some(row) = tx.authority(instance)? else {
        return Err(Error::NotFound {
            what: "authority".into(),
            id: instance.into(),
        });
    };
    match liveness(&row, now) {
        state if state.is_running() => Err(super::registry::in_use(&row, state)),
        state => Ok((row, state)),
    }
}

/// Hands back every claim `instance` holds under a new generation, each with its audit
/// entry (as `actor`, with `reason`) and its write in the history: the operator's release
/// of a gone authority, and a restart that found the previous incarnation's process dead
/// (`Store::register_authority`), inside the caller's transaction.
pub(crate) fn release_held(
    tx: &mut dyn Tx,
    now: Millis,
    instance: &str,
    actor: &str,
    reason: &str,
) -> Result<Vec<ReleasedClaim>> {
    let mut claims = Vec::new();
    for held in held_by(tx, instance)? {
        let claim = release_one(tx, now, actor, &held)?;
        let outcome = format!(
            "released {} {} from {instance}: generation {} → {}",
            claim.kind, claim.resource, claim.from_generation, claim.to_generation
        );
        record_audit(
            tx,
            now,
            actor,
            RELEASE_ACTION,
            &claim.resource,
            &outcome,
            reason,
        )?;
        claims.push(claim);
    }
    Ok(claims)
}

/// The audit outcome of a refusal: `refused: not found`, `refused: live`, ….
pub(crate) fn refusal(e: &Error) -> String {
    match e {
        Error::NotFound { .. } => "refused: not found".into(),
        Error::InstanceInUse { liveness, .. } => format!("refused: {liveness}"),
        other => format!("refused: {other}"),
    }
}

/// Every claimed work item and unreleased lease `instance` holds.
pub(crate) fn held_by(tx: &mut dyn Tx, instance: &str) -> Result<Vec<Held>> {
    let filter = WorkFilter {
        states: vec![WorkState::Claimed],
        owner: Some(instance.to_owned()),
        ..WorkFilter::default()
    };
    let mut held = Vec::new();
    let mut page = PageRequest::first(PAGE);
    loop {
        let rows = tx.list_work(&filter, &page)?;
        let full = rows.len() >= PAGE;
        let last = rows.last().map(|w| w.id.clone());
        held.extend(
            rows.into_iter()
                .filter(|w| w.owner_id.as_deref() == Some(instance))
                .map(|w| Held::Work(Box::new(w))),
        );
        match last.filter(|_| full) {
            Some(key) => page = PageRequest::after(key, PAGE),
            None => break,
        }
    }
    let mut page = PageRequest::first(PAGE);
    loop {
        let rows = tx.list_leases(&page)?;
        let full = rows.len() >= PAGE;
        let last = rows.last().map(|l| l.resource_id.clone());
        held.extend(
            rows.into_iter()
                .filter(|l| l.owner_id == instance && l.released_at.is_none())
                .map(Held::Lease),
        );
        match last.filter(|_| full) {
            Some(key) => page = PageRequest::after(key, PAGE),
            None => break,
        }
    }
    Ok(held)
}

/// Releases `lease` under a new generation as `actor`, with its write in the history: what
/// an operator's cancel does to the lease of the instance it cancels, so the authority
/// advancing it learns at its next renewal and stops the action it runs. The cancel's own
/// audit entry stands for it.
pub(crate) fn release_lease(
    tx: &mut dyn Tx,
    now: Millis,
    actor: &str,
    lease: &Lease,
) -> Result<ReleasedClaim> {
    release_one(tx, now, actor, &Held::Lease(lease.clone()))
}

/// Moves one claim to a new generation and records the operator's write.
fn release_one(tx: &mut dyn Tx, now: Millis, actor: &str, held: &Held) -> Result<ReleasedClaim> {
    let from = held.generation();
    let holder = match held {
        Held::Work(item) => {
            // Settled as a reclaim would settle its lapse (the attempt counted as uncertain,
            // a spent budget dead-lettered), then due now rather than after a backoff.
            let settled = settle_unfinished(item, now, now);
            let next = WorkItem {
                state: match settled.state {
                    WorkState::Retry | WorkState::Claimed => WorkState::Pending,
                    state => state,
                },
                owner_id: None,
                token: None,
                generation: from + 1,
                lease_expires_at: None,
                next_eligible_at: now,
                updated_at: now,
                ..settled
            };
            super::work::save_work(tx, Some(item), &next)?;
            if let Some(lost) = Lapsed::of(item) {
                lost.record(tx, &next, &format!("released by {actor}"), now)?;
            }
            Holder::of_work(&next)
        }
        Held::Lease(lease) => {
            let next = Lease {
                generation: from + 1,
                released_at: Some(now),
                ..lease.clone()
            };
            tx.commit_revision()?;
            tx.put_lease(&next)?;
            Holder::of_lease(&next)
        }
    };
    let detail = serde_json::json!({
        "releasedFrom": match held {
            Held::Work(item) => item.owner_id.clone().unwrap_or_default(),
            Held::Lease(lease) => lease.owner_id.clone(),
        },
        "generation": from + 1,
    });
    record_write(
        tx,
        now,
        held.resource(),
        actor,
        from,
        WriteVerb::ForceRelease,
        &Ok(()),
        detail,
        holder,
    )?;
    Ok(ReleasedClaim {
        kind: held.noun(),
        resource: held.resource().to_owned(),
        from_generation: from,
        to_generation: from + 1,
    })
}
