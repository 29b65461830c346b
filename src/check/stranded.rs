//! Invariant 6 (docs/ARCHITECTURE.md#checker): a crash never permanently strands durable work. Judged at
//! [`CheckOptions::now`]: a non-terminal item is stranded when it has been claimable for
//! longer than `stranded_after_ms` while a live authority of its build existed, and no live
//! authority claimed a work item of its build (its compat digest) within that bound either
//! — work nobody is taking. A pending or retrying item that waited as long while live
//! authorities kept claiming its build's work is *backlogged*: queued behind more work
//! than they keep up with, which is lateness (the overview's lanes), not a strand, and is
//! only counted. A lapsed claim is never backlogged: reclaims come before every lane.
//! Items no live authority can claim (their compat digest is nobody's) are not stranded
//! either — they wait for a build that can run them and are only counted, told apart as
//! `inspect` tells them apart ([`crate::workflow::runnable`]): *no handler* when no live
//! authority has their handler at all, *incompatible* when it runs only at another
//! version.

use std::collections::HashMap;

use super::codes::STRANDED_WORK;
use super::history::age;
use super::{CheckOptions, Findings};
use crate::clock::{Millis, format_duration, format_instant};
use crate::error::Result;
use crate::model::{Grant, GrantKind, PageRequest, WorkItem, WorkState};
use crate::rules::liveness::{Liveness, liveness};
use crate::store::Store;
use crate::workflow::keys::keys_of;
use crate::workflow::runnable::{Runnable, Standing};

/// What the live authorities may run: claim key → (earliest start among the live
/// authorities that claim by it, one of them for the sentence), each authority's keys
/// derived from its registration and the deployed definitions ([`keys_of`]).
#[derive(Debug, Default)]
pub(super) struct LiveBuilds {
    keys: HashMap<String, (Millis, String)>,
    /// Claim key → every live authority that claims by it.
    runners: HashMap<String, Vec<String>>,
    /// Each live authority's start: only the claims of that incarnation count as its.
    authorities: HashMap<String, Millis>,
    /// What the live authorities run, for telling apart why an item none may claim
    /// waits, in the words `inspect` uses.
    runnable: Runnable,
}

impl LiveBuilds {
    /// Reads the authorities and keeps the live ones (see [`crate::rules::liveness`]).
    pub(super) fn read(store: &Store, options: &CheckOptions, page: usize) -> Result<Self> {
        let mut live = Self::default();
        let definitions = store.deployed_definitions()?;
        let mut running = Vec::new();
        let mut request = PageRequest::first(page);
        loop {
            let rows = store.list_authorities(&request)?;
            for a in rows.rows {
                if liveness(&a, options.now) != Liveness::Live {
                    continue;
                }
                live.authorities.insert(a.instance_id.clone(), a.started_at);
                for key in keys_of(&a, &definitions).iter() {
                    live.runners
                        .entry(key.to_owned())
                        .or_default()
                        .push(a.instance_id.clone());
                    let entry = live
                        .keys
                        .entry(key.to_owned())
                        .or_insert((a.started_at, a.instance_id.clone()));
                    if a.started_at < entry.0 {
                        *entry = (a.started_at, a.instance_id.clone());
                    }
                }
                running.push(a);
            }
            match rows.next {
                Some(next) => request = PageRequest::after(next, page),
                None => {
                    live.runnable = Runnable::of(&running, &definitions);
                    return Ok(live);
                }
            }
        }
    }

    /// The earliest live start among the authorities that claim by `compat`, and one of
    /// them; `None` when no live authority may run it.
    pub(super) fn of(&self, compat: &str) -> Option<(Millis, &str)> {
        self.keys
            .get(compat)
            .map(|(since, authority)| (*since, authority.as_str()))
    }
}

/// When live authorities last claimed, from the ownership history: work items by build
/// (compat digest — one lane per handler, served in due order within it), and workflow
/// instances by authority (instances are claimed in due order across every build an
/// authority runs, so an instance of one build may wait behind another build's).
#[derive(Debug, Default)]
pub(super) struct Claiming {
    items: HashMap<String, Millis>,
    instances: HashMap<String, Millis>,
}

impl Claiming {
    /// Notes `grant` if it is a claim of an item or an instance by the running start of a
    /// live authority (not by an earlier start of its instance id).
    pub(super) fn note(&mut self, grant: &Grant, live: &LiveBuilds) {
        if grant.how != GrantKind::Claim
            || live
                .authorities
                .get(&grant.owner_id)
                .is_none_or(|started| grant.at < *started)
        {
            return;
        }
        if crate::workflow::engine::is_instance_resource(&grant.resource_id) {
            latest(&mut self.instances, &grant.owner_id, grant.at);
        } else if let Some(compat) = &grant.item_compat {
            latest(&mut self.items, compat, grant.at);
        }
    }

    /// Whether a live authority claimed a work item of `compat` at or after `since`.
    pub(super) fn items_since(&self, compat: &str, since: Millis) -> bool {
        self.items.get(compat).is_some_and(|at| *at >= since)
    }

    /// Whether a live authority that may run `compat` claimed any workflow instance at or
    /// after `since`.
    pub(super) fn instances_since(&self, live: &LiveBuilds, compat: &str, since: Millis) -> bool {
        live.runners.get(compat).is_some_and(|owners| {
            owners
                .iter()
                .any(|o| self.instances.get(o).is_some_and(|at| *at >= since))
        })
    }
}

/// Keeps the later of `at` and what `map` holds under `key`.
fn latest(map: &mut HashMap<String, Millis>, key: &str, at: Millis) {
    match map.get_mut(key) {
        Some(seen) => *seen = (*seen).max(at),
        None => {
            map.insert(key.to_owned(), at);
        }
    }
}

/// What [`no_stranded_work`] made of one item (and `no_stranded_instance` of one
/// instance).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Verdict {
    /// Terminal, not yet due, or due for less than the bound.
    Fine,
    Stranded,
    /// Due past the bound while live authorities kept claiming its build's work.
    Backlogged,
    /// No live authority has its build, and some has its handler (at another version).
    Incompatible,
    /// No live authority has its handler at all.
    NoHandler,
}

/// No compatible item stays claimable for longer than the bound once a live authority of
/// its build has been up (the clock starts at the later of its due instant and that
/// build's earliest live start) unless live authorities kept claiming that build's work
/// within the bound (a backlog).
pub(super) fn no_stranded_work(
    item: &WorkItem,
    (live, claiming): (&LiveBuilds, &Claiming),
    options: &CheckOptions,
    findings: &mut Findings,
) -> Verdict {
    let Some(due) = item.due_at() else {
        return Verdict::Fine;
    };
    let Some((live_since, authority)) = live.of(&item.compat) else {
        return match live.runnable.standing(&item.compat, &item.handler) {
            Standing::NoHandler => Verdict::NoHandler,
            Standing::Incompatible | Standing::Runnable => Verdict::Incompatible,
        };
    };
    // The overview's lateness figure, counted from when a live authority of its build was
    // up if that came later.
    let late = crate::rules::lateness::of_item(item, options.now).unwrap_or(0);
    let waited = late.min(age(options.now, live_since));
    if waited <= options.stranded_after_ms {
        return Verdict::Fine;
    }
    // A lapsed claim is never queued behind a backlog: reclaims come before every lane.
    if item.state != WorkState::Claimed
        && claiming.items_since(&item.compat, options.now - options.stranded_after_ms)
    {
        return Verdict::Backlogged;
    }
    let state = match item.state {
        WorkState::Claimed => format!(
            "claimed by {}, lease expired",
            item.owner_id.as_deref().unwrap_or("?")
        ),
        state => state.as_str().to_owned(),
    };
    findings.push(
        STRANDED_WORK,
        vec![item.id.clone()],
        format!(
            "work {} ({}, {state}) has been claimable since {} (late {}, bound {}) although live authority {authority} may run its key {}",
            item.id,
            item.kind.as_str(),
            format_instant(due),
            format_duration(late),
            format_duration(options.stranded_after_ms),
            item.compat
        ),
    );
    Verdict::Stranded
}
