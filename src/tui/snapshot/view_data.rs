//! The visible view's rows: one reader per view, each reading only what its view shows
//! (a page of the store, a listing of the incident window, the history around the replay's
//! cursor) at the snapshot's instant. The replay's reader keeps what it may between reads
//! ([`super::super::replay::ReplayCache`]); the others keep nothing.

use std::collections::HashMap;

use super::super::action::ViewId;
use super::super::replay::{ReplayCache, ReplayData};
use super::super::store_filter::{self, StoreOrder};
use super::super::wf;
use super::{Counter, Headline, Query, TIMELINE_FACTOR};
use crate::clock::Millis;
use crate::error::Result;
use crate::model::{
    Authority, Grant, HistoryPosition, HistoryRecord, Ingestion, InstanceRow, Lease, Page,
    PageRequest, Schedule, WorkItem, WriteRecord,
};
use crate::ops;
use crate::ops::attention::Group;
use crate::ops::claims::OwnedClaims;
use crate::ops::cursors::CursorStatus;
use crate::ops::failovers::FailoverRow;
use crate::ops::fenced::FencedRow;
use crate::ops::window::Listing;
use crate::store::Store;

/// The rows of the visible view. (One per snapshot, so the size difference between
/// variants does not matter.)
#[derive(Debug, Clone, PartialEq)]
#[allow(clippy::large_enum_variant)]
pub enum ViewData {
    Overview,
    Authorities {
        page: Page<Authority>,
        /// Each authority's claims and how many of them lapsed unreclaimed.
        owned: HashMap<String, OwnedClaims>,
    },
    /// Named leases, then the work items claimed now ([`super::Holds`]).
    Leases(super::Holds),
    Work(Page<WorkItem>),
    Workflows(Page<InstanceRow>),
    Detail {
        instance: Option<InstanceRow>,
        history: Vec<HistoryRecord>,
    },
    /// Cursors as [`crate::ops::cursors`] defines them (the same rows `inspect` prints).
    Cursors(Page<CursorStatus>),
    Events {
        page: Page<Ingestion>,
        high_water: i64,
    },
    Schedules {
        page: Page<Schedule>,
        firings: HashMap<String, WorkItem>,
    },
    Timeline {
        resource: Option<String>,
        grants: Vec<Grant>,
        writes: Vec<WriteRecord>,
        lease: Option<Lease>,
        item: Option<WorkItem>,
    },
    /// The audit log newest first, under the `/` filter ([`crate::ops::audit`]).
    Audit(ops::audit::AuditPage),
    Failovers(Listing<FailoverRow>),
    Fenced(Listing<FencedRow>),
    /// What needs a person ([`crate::ops::attention`]), judged against the fleet.
    Triage(Vec<Group>),
    /// The running builds against the unfinished work ([`crate::ops::builds`]).
    Builds(crate::ops::builds::Matrix),
    /// What becomes due next ([`crate::ops::horizon`]).
    Horizon(crate::ops::horizon::Horizon),
    /// The durable history around the replay's cursor ([`super::super::replay`]); `None` before
    /// a window was chosen.
    Replay(Option<ReplayData>),
}

/// The horizon view's span, slices and per-read cap.
const HORIZON_MS: Millis = 15 * 60_000;
const HORIZON_SLICES: usize = 15;
const HORIZON_CAP: usize = 500;

impl ViewData {
    /// The rows of `query`'s view at `at`; `head` is what the refresh read for every view.
    pub(super) fn read(
        c: &mut Counter<'_>,
        query: &Query,
        at: Millis,
        head: &Headline,
        replay: &mut ReplayCache,
    ) -> Result<Self> {
        let page = &query.page;
        Ok(match query.view {
            ViewId::Overview => Self::Overview,
            ViewId::Failovers => Self::Failovers(c.run(|s| {
                ops::failovers::failovers(s, query.window, at, incident_page(page), page.limit)
            })?),
            ViewId::Fenced => Self::Fenced(c.run(|s| {
                ops::fenced::fenced(s, query.window, at, incident_page(page), page.limit)
            })?),
            ViewId::Triage => {
                Self::Triage(c.run(|s| ops::attention::groups(s, head.fleet.fleet(), at))?)
            }
            ViewId::Replay => Self::Replay(match &query.replay {
                Some(r) => Some(c.run(|s| super::super::replay::read(s, r, replay))?),
                None => None,
            }),
            ViewId::Horizon => {
                Self::Horizon(c.run(|s| {
                    ops::horizon::horizon(s, at, HORIZON_MS, HORIZON_SLICES, HORIZON_CAP)
                })?)
            }
            ViewId::Builds => Self::Builds(c.run(|s| head.fleet.matrix(s, &head.overview.work))?),
            ViewId::Authorities => authorities(c, page, at)?,
            ViewId::Leases => Self::Leases(c.run(|s| super::Holds::read(s, page))?),
            ViewId::Work => Self::Work(work(c, query, head)?),
            ViewId::Workflows => Self::Workflows(workflows(c, query)?),
            ViewId::WorkflowDetail => detail(c, query.instance.as_deref())?,
            ViewId::Cursors => Self::Cursors(c.run(|s| ops::cursors::page(s, page, at))?),
            ViewId::Events => {
                let page = c.run(|s| s.list_ingestions(page))?;
                let high_water = c.run(Store::journal_high_water)?;
                Self::Events { page, high_water }
            }
            ViewId::Schedules => schedules(c, page)?,
            ViewId::Audit => Self::Audit(c.run(|s| {
                let none = ops::filter::Filter::none(ops::filter::Subject::Audit);
                ops::audit::page(s, query.filter.as_ref().unwrap_or(&none), page)
            })?),
            ViewId::Timeline => timeline(c, page, query.resource.as_deref())?,
        })
    }
}

/// A page of authorities, with each one's claims.
fn authorities(c: &mut Counter<'_>, page: &PageRequest, at: Millis) -> Result<ViewData> {
    let page = c.run(|s| s.list_authorities(page))?;
    let mut owned = HashMap::new();
    for a in &page.rows {
        let claims = c.run(|s| OwnedClaims::read(s, &a.instance_id, at))?;
        owned.insert(a.instance_id.clone(), claims);
    }
    Ok(ViewData::Authorities { page, owned })
}

/// A page of work items under the quick filter and the `/` filter, in the store's order
/// when it gives the table's.
fn work(c: &mut Counter<'_>, query: &Query, head: &Headline) -> Result<Page<WorkItem>> {
    let page = &query.page;
    let present: Vec<String> = head
        .overview
        .work
        .iter()
        .map(|w| w.compat.clone())
        .collect();
    let filter = store_filter::work_filter(
        query.work,
        query.filter.as_ref(),
        &present,
        &head.incompatible_compats,
        head.fleet.fleet(),
    );
    Ok(match (filter, query.order) {
        (Some(filter), Some(StoreOrder::Work(order))) => {
            c.run(|s| s.list_work_ordered(&filter, order, page))?
        }
        (Some(filter), _) => c.run(|s| s.list_work(&filter, page))?,
        (None, _) => Page {
            rows: Vec::new(),
            next: None,
        },
    })
}

/// A page of workflow instances under the `/` filter's status and id prefix.
fn workflows(c: &mut Counter<'_>, query: &Query) -> Result<Page<InstanceRow>> {
    let page = &query.page;
    let (status, prefix) = query
        .filter
        .as_ref()
        .map_or((None, None), |f| (f.status, f.id_prefix.as_deref()));
    if query.order == Some(StoreOrder::WorkflowStatus) {
        c.run(|s| s.list_instances_by_status(status, prefix, page))
    } else {
        c.run(|s| s.list_instances_by(status, prefix, page))
    }
}

/// One workflow instance and its history.
fn detail(c: &mut Counter<'_>, instance: Option<&str>) -> Result<ViewData> {
    Ok(match instance {
        Some(id) => {
            let instance = c.run(|s| wf::instance(s, id))?;
            let history = c.run(|s| wf::history(s, id))?;
            ViewData::Detail { instance, history }
        }
        None => ViewData::Detail {
            instance: None,
            history: Vec::new(),
        },
    })
}

/// A page of schedules, with each one's latest firing.
fn schedules(c: &mut Counter<'_>, page: &PageRequest) -> Result<ViewData> {
    let page = c.run(|s| s.list_schedules(page))?;
    let mut firings = HashMap::new();
    for sched in &page.rows {
        if let Some(due) = sched.last_due {
            let id = crate::model::schedule::firing_id(&sched.schedule_id, due);
            if let Some(item) = c.run(|s| s.work(&id))? {
                firings.insert(sched.schedule_id.clone(), item);
            }
        }
    }
    Ok(ViewData::Schedules { page, firings })
}

/// The generation history of one resource, with its lease and work item as they stand.
fn timeline(c: &mut Counter<'_>, page: &PageRequest, resource: Option<&str>) -> Result<ViewData> {
    let Some(resource) = resource else {
        return Ok(ViewData::Timeline {
            resource: None,
            grants: Vec::new(),
            writes: Vec::new(),
            lease: None,
            item: None,
        });
    };
    let after = page
        .after
        .as_deref()
        .and_then(|a| a.parse().ok())
        .unwrap_or(0);
    let limit = page.limit.max(1) * TIMELINE_FACTOR;
    let (grants, writes) = c.run(|s| s.ownership_history(Some(resource), after, limit))?;
    let lease = c.run(|s| s.lease(resource))?;
    let item = c.run(|s| s.work(resource))?;
    Ok(ViewData::Timeline {
        resource: Some(resource.to_owned()),
        grants,
        writes,
        lease,
        item,
    })
}

/// Where an incident page starts: after the key of the last row seen. The lists page
/// forward only (older); the app goes back along the pages it passed
/// (`app/table.rs::pages_forward_only`), and a backward request reads the newest page.
fn incident_page(page: &PageRequest) -> Option<HistoryPosition> {
    page.after
        .as_deref()
        .filter(|_| !page.backwards)
        .and_then(HistoryPosition::parse_key)
}
