//! What needs a person: the on-call engineer's list, grouped by reason, each group with
//! how many items it holds, how long the oldest has waited, and the filter and command
//! that act on it. One definition for `leasehold inspect triage` and the dashboard.
//!
//! Every group is read from the store's own filtered, index-backed lists. A group whose
//! list is longer than [`SCAN_LIMIT`] rows is counted over its first rows only and says so
//! (`exact: false`, shown as `≥ N`): a triage view must answer in a moment even under a
//! backlog of millions.
//!
//! A group of work items is one of the vocabulary's groups ([`WorkGroup`]) and its filter
//! is that group's term, so acting on the filter (Enter in the dashboard, `work requeue
//! --filter`) reaches exactly the items the group counts: a dead letter is not a
//! terminal failure, an item a person discarded is in neither, and work whose handler no
//! running authority has is not counted as incompatible.

use std::collections::BTreeSet;

use serde::Serialize;

use crate::clock::Millis;
use crate::error::Result;
use crate::model::work::WorkFilter;
use crate::model::{Authority, InstanceStatus, PageRequest, WorkGroup, WorkItem, WorkState};
use crate::ops::claims::ClaimStanding;
use crate::ops::filter::Judge;
use crate::rules::lateness;
use crate::rules::liveness::{Liveness, liveness};
use crate::store::Store;
use crate::workflow::engine::lost_waits::{JournalWindow, lost_wait};
use crate::workflow::runnable::{Runnable, Standing};

/// Rows read per list at most.
pub const SCAN_LIMIT: usize = 20_000;

/// Rows per page of those reads.
const PAGE: usize = 1_000;

/// How long a lane's oldest due item may wait before the lane is late: many polls of a
/// loaded authority.
pub const LATE_AFTER_MS: Millis = 60_000;

/// How long past its due instant a workflow instance may wait before it is overdue: a few
/// polls of a loaded authority.
pub const OVERDUE_AFTER_MS: Millis = 60_000;

/// Why a group needs a person.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Reason {
    /// Failed after exhausting its attempts on uncertain outcomes (crashes, lapses).
    DeadLetters,
    /// Failed terminally or out of retries (discarded items are a person's decision and
    /// not listed; dead letters are their own group).
    Failed,
    /// Not finished yet, but some attempt's outcome is unknown: it may have acted.
    Uncertain,
    /// Unfinished, and no authority is running at all.
    NoAuthority,
    /// Unfinished, for a build no running authority runs, though its handler runs.
    Incompatible,
    /// Unfinished, and no running authority has its handler.
    NoHandler,
    /// Claimed by an authority that is gone, its lease lapsed, not yet reclaimed.
    GoneClaims,
    /// A workflow instance past its due instant by more than [`OVERDUE_AFTER_MS`].
    OverdueInstances,
    /// A lane (kind, handler) whose oldest due item has waited more than
    /// [`LATE_AFTER_MS`] ([`crate::rules::lateness`], the overview's figure): starvation.
    LateLanes,
    /// Outcomes an authority holds in recovery: nobody can yet say whether they committed
    /// (from what each authority publishes on its registration row).
    OutcomesInRecovery,
    /// Waiting workflow instances whose `sinceEventSeq` is older than the retained journal
    /// ([`crate::workflow::engine::lost_waits`], the checker's `wait-past-retention`).
    WaitsPastRetention,
}

impl Reason {
    /// What the group is, for people.
    #[must_use]
    pub fn title(self) -> &'static str {
        match self {
            Self::DeadLetters => "dead letters (uncertain attempts exhausted)",
            Self::Failed => "failed",
            Self::Uncertain => "unfinished with uncertain attempts",
            Self::NoAuthority => "stranded: no authority is running",
            Self::Incompatible => "incompatible: their handler runs only at another version",
            Self::NoHandler => "no handler: no running authority has it",
            Self::GoneClaims => "claims of gone authorities, awaiting reclaim",
            Self::OverdueInstances => "workflow instances overdue",
            Self::LateLanes => "lanes late by more than a minute",
            Self::OutcomesInRecovery => {
                "outcomes needing recovery (unknown whether they committed)"
            }
            Self::WaitsPastRetention => "waits past retention (their event may be trimmed)",
        }
    }

    /// What to do about it.
    #[must_use]
    pub fn action(self) -> &'static str {
        match self {
            Self::DeadLetters => {
                "leasehold work requeue --filter state:dead-letter (or discard --reason …)"
            }
            Self::Failed => {
                "leasehold work requeue --filter state:retries-exhausted,terminal (or discard --reason …)"
            }
            Self::Uncertain => "check the handler's idempotency; leasehold work discard to stop",
            Self::NoAuthority => "start an authority",
            Self::Incompatible => "start an authority with their build, or discard them",
            Self::NoHandler => "deploy an authority with the handler",
            Self::GoneClaims => "start an authority (they are reclaimed within a lease)",
            Self::OverdueInstances => "check the authorities' liveness and the instance history",
            Self::LateLanes => "add authorities, raise concurrency, or check the handler's limit",
            Self::OutcomesInRecovery => {
                "restore the store's reads (the authority then settles them), or check the item's history and leasehold authority release a gone holder"
            }
            Self::WaitsPastRetention => {
                "check the instance (leasehold check names it); raise journal retention or cancel it"
            }
        }
    }

    /// The vocabulary's groups this group holds: its filter is their term.
    #[must_use]
    pub fn groups(self) -> &'static [WorkGroup] {
        match self {
            Self::DeadLetters => &[WorkGroup::DeadLetter],
            Self::Failed => &[WorkGroup::RetriesExhausted, WorkGroup::Terminal],
            Self::NoAuthority => &[WorkGroup::Stranded],
            Self::Incompatible => &[WorkGroup::Incompatible],
            Self::NoHandler => &[WorkGroup::NoHandler],
            _ => &[],
        }
    }

    /// The work filter that lists exactly the group's items, where the grammar can say it
    /// (`state:` and [`Self::groups`]).
    #[must_use]
    pub fn filter(self) -> Option<&'static str> {
        match self {
            Self::DeadLetters => Some("state:dead-letter"),
            Self::Failed => Some("state:retries-exhausted,terminal"),
            Self::NoAuthority => Some("state:stranded"),
            Self::Incompatible => Some("state:incompatible"),
            Self::NoHandler => Some("state:no-handler"),
            Self::Uncertain
            | Self::GoneClaims
            | Self::OverdueInstances
            | Self::LateLanes
            | Self::OutcomesInRecovery
            | Self::WaitsPastRetention => None,
        }
    }
}

/// One group of the triage list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Group {
    pub reason: Reason,
    pub title: &'static str,
    pub count: u64,
    /// False when the count covers only the first [`SCAN_LIMIT`] rows of a longer list.
    pub exact: bool,
    /// When the oldest item of the group started waiting (its last change).
    pub oldest_at: Option<Millis>,
    pub filter: Option<&'static str>,
    pub action: &'static str,
    /// A few of its ids, for a first look.
    pub first: Vec<String>,
}

impl Group {
    fn new(reason: Reason) -> Self {
        Self {
            reason,
            title: reason.title(),
            count: 0,
            exact: true,
            oldest_at: None,
            filter: reason.filter(),
            action: reason.action(),
            first: Vec::new(),
        }
    }

    fn add(&mut self, id: &str, since: Millis) {
        self.count += 1;
        self.oldest_at = Some(self.oldest_at.map_or(since, |o| o.min(since)));
        if self.first.len() < 3 {
            self.first.push(id.to_owned());
        }
    }
}

/// What the running authorities are, as triage needs them.
pub trait Fleet {
    /// Whether any authority is running.
    fn any_running(&self) -> bool;
    /// Whether a running authority runs under `compat`.
    fn compatible(&self, compat: &str) -> bool;
    /// How an item of `handler` under `compat` stands against the running authorities.
    fn standing(&self, compat: &str, handler: &str) -> Standing;
    /// Whether `owner` is an authority that is gone (registered, no longer running).
    fn is_gone(&self, owner: &str) -> bool;
}

/// The running authorities as the registry shows them at one instant
/// ([`super::live_builds::LiveBuilds`] reads it for every reader).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FleetView {
    runnable: Runnable,
    gone: BTreeSet<String>,
}

impl FleetView {
    /// The running authorities' claim keys, sorted.
    pub fn digests(&self) -> impl Iterator<Item = &String> {
        self.runnable.digests()
    }

    /// The versions of `handler` the running authorities declare, sorted.
    #[must_use]
    pub fn versions(&self, handler: &str) -> Option<&BTreeSet<crate::model::HandlerVersion>> {
        self.runnable.versions(handler)
    }

    /// Judges each of `authorities` at `now` ([`liveness`]); `runnable` is what the
    /// running ones among them can run ([`Runnable::of`]).
    #[must_use]
    pub fn of(authorities: &[Authority], now: Millis, runnable: Runnable) -> Self {
        Self {
            runnable,
            gone: authorities
                .iter()
                .filter(|a| liveness(a, now) == Liveness::Gone)
                .map(|a| a.instance_id.clone())
                .collect(),
        }
    }
}

impl Judge for FleetView {
    fn compatible(&self, compat: &str) -> bool {
        self.runnable.compatible(compat)
    }

    fn running_handlers(&self) -> Option<Vec<String>> {
        (!self.runnable.is_empty()).then(|| self.runnable.handlers().cloned().collect())
    }
}

impl Fleet for FleetView {
    fn any_running(&self) -> bool {
        !self.runnable.is_empty()
    }

    fn compatible(&self, compat: &str) -> bool {
        self.runnable.compatible(compat)
    }

    fn standing(&self, compat: &str, handler: &str) -> Standing {
        self.runnable.standing(compat, handler)
    }

    fn is_gone(&self, owner: &str) -> bool {
        self.gone.contains(owner)
    }
}

/// Every group that holds something, most urgent first.
///
/// # Errors
/// A store failure.
pub fn groups(store: &Store, fleet: &dyn Fleet, now: Millis) -> Result<Vec<Group>> {
    let mut dead = Group::new(Reason::DeadLetters);
    let mut failed = Group::new(Reason::Failed);
    let mut uncertain = Group::new(Reason::Uncertain);
    // With nobody running, every unfinished item waits for the same, simpler reason.
    let mut stranded = Group::new(if fleet.any_running() {
        Reason::Incompatible
    } else {
        Reason::NoAuthority
    });
    let mut no_handler = Group::new(Reason::NoHandler);
    let mut gone = Group::new(Reason::GoneClaims);
    let mut overdue = Group::new(Reason::OverdueInstances);
    let mut lost_waits = Group::new(Reason::WaitsPastRetention);
    let journal = JournalWindow::read(store)?;

    let failed_exact = scan(store, &[WorkState::Failed], |w| {
        if WorkGroup::DeadLetter.holds(w) {
            dead.add(&w.id, w.updated_at);
        } else if Reason::Failed.groups().iter().any(|g| g.holds(w)) {
            failed.add(&w.id, w.updated_at);
        }
    })?;
    // Unfinished work no running authority can claim, claimed items included (their
    // owner's build is gone too), by the one standing rule every reader shares.
    let mut strand = |w: &WorkItem, since: Millis| match fleet.standing(&w.compat, &w.handler) {
        Standing::Incompatible => stranded.add(&w.id, since),
        Standing::NoHandler => no_handler.add(&w.id, since),
        Standing::Runnable => {}
    };
    let claimed_exact = scan(store, &[WorkState::Claimed], |w| {
        let lapsed = ClaimStanding::of_work(w, now).is_some_and(ClaimStanding::is_expired);
        if lapsed && w.owner_id.as_deref().is_some_and(|o| fleet.is_gone(o)) {
            gone.add(&w.id, w.lease_expires_at.unwrap_or(w.updated_at));
        }
        if w.uncertain_attempts > 0 {
            uncertain.add(&w.id, w.updated_at);
        }
        strand(w, w.created_at);
    })?;
    let waiting_exact = scan(store, &[WorkState::Pending, WorkState::Retry], |w| {
        if w.uncertain_attempts > 0 {
            uncertain.add(&w.id, w.updated_at);
        }
        strand(w, w.created_at);
    })?;
    dead.exact = failed_exact;
    failed.exact = failed_exact;
    gone.exact = claimed_exact;
    uncertain.exact = claimed_exact && waiting_exact;
    stranded.exact = claimed_exact && waiting_exact;
    no_handler.exact = stranded.exact;
    let overview = store.overview()?;

    let mut page = PageRequest::first(PAGE);
    let mut read = 0;
    'instances: for status in [InstanceStatus::Running, InstanceStatus::Waiting] {
        loop {
            let rows = store.list_instances(Some(status), &page)?;
            for i in &rows.rows {
                read += 1;
                let due = i.next_eligible_at.unwrap_or(Millis::MAX);
                if fleet.compatible(&i.compat) && due.saturating_add(OVERDUE_AFTER_MS) < now {
                    overdue.add(&i.instance_id, due);
                }
                if lost_wait(i, journal).is_some() {
                    lost_waits.add(&i.instance_id, i.updated_at);
                }
            }
            if read >= SCAN_LIMIT {
                overdue.exact = false;
                lost_waits.exact = false;
                break 'instances;
            }
            match rows.next {
                Some(next) => page = PageRequest::after(next, PAGE),
                None => break,
            }
        }
        page = PageRequest::first(PAGE);
    }

    // Late lanes, from the store's per-lane oldest due instant: the overview's figure.
    let mut late = Group::new(Reason::LateLanes);
    for lane in lateness::lanes(&overview.waiting_lanes, now) {
        if lane.late_ms > LATE_AFTER_MS {
            late.add(
                &format!("{}/{}", lane.kind.as_str(), lane.handler),
                lane.oldest_due,
            );
        }
    }

    let recovery = in_recovery(store)?;
    Ok([
        recovery, dead, failed, gone, stranded, no_handler, late, uncertain, overdue, lost_waits,
    ]
    .into_iter()
    .filter(|g| g.count > 0)
    .collect())
}

/// The outcomes every registered authority publishes as held in recovery, stopped and gone
/// ones included (they are what a person must settle); counted from each row's total,
/// though each lists only its oldest.
fn in_recovery(store: &Store) -> Result<Group> {
    let mut group = Group::new(Reason::OutcomesInRecovery);
    let mut page = PageRequest::first(PAGE);
    loop {
        let rows = store.list_authorities(&page)?;
        for a in &rows.rows {
            let p = &a.published;
            for held in &p.recovery {
                group.add(&held.resource_id, held.since);
            }
            group.count += p.in_recovery.saturating_sub(p.recovery.len() as u64);
        }
        match rows.next {
            Some(next) => page = PageRequest::after(next, PAGE),
            None => return Ok(group),
        }
    }
}

/// Visits the items in `states` (at most [`SCAN_LIMIT`]); answers whether it saw them all.
fn scan(store: &Store, states: &[WorkState], mut visit: impl FnMut(&WorkItem)) -> Result<bool> {
    let filter = WorkFilter {
        states: states.to_vec(),
        ..WorkFilter::default()
    };
    let mut page = PageRequest::first(PAGE);
    let mut read = 0;
    loop {
        let rows = store.list_work(&filter, &page)?;
        for item in &rows.rows {
            visit(item);
        }
        read += rows.rows.len();
        match rows.next {
            Some(_) if read >= SCAN_LIMIT => return Ok(false),
            Some(next) => page = PageRequest::after(next, PAGE),
            None => return Ok(true),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A group's filter is the `state:` term of the vocabulary's groups it holds, so what
    /// the filter lists and what the group counts are one definition.
    #[test]
    fn each_filter_is_its_groups_term() {
        for reason in [
            Reason::DeadLetters,
            Reason::Failed,
            Reason::Uncertain,
            Reason::NoAuthority,
            Reason::Incompatible,
            Reason::NoHandler,
            Reason::GoneClaims,
            Reason::OverdueInstances,
            Reason::LateLanes,
            Reason::OutcomesInRecovery,
            Reason::WaitsPastRetention,
        ] {
            let names: Vec<&str> = reason.groups().iter().map(|g| g.as_str()).collect();
            let term = (!names.is_empty()).then(|| format!("state:{}", names.join(",")));
            assert_eq!(reason.filter().map(str::to_owned), term, "{reason:?}");
        }
    }
}
