//! Reads for the dashboard and the CLI: paged lists over index-backed keys, incremental
//! counts, the revision — plus the audit log, a small write that exists for the people
//! watching (authority registration is in `registry.rs`).

use serde::Serialize;

use super::{Counter, Store};
use crate::clock::Millis;
use crate::error::Result;
use crate::model::work::{WorkCount, WorkFilter, WorkLane};
use crate::model::{
    AuditEntry, Authority, Grant, Ingestion, InstanceRow, InstanceStatus, IntakeCounts, Page,
    PageRequest, PausedHandler, Schedule, Subscription, WorkItem, WriteRecord,
};

/// Counts and headline numbers for the overview, all from incremental counters.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Overview {
    pub revision: u64,
    pub work: Vec<WorkCount>,
    /// Workflow instances by status.
    pub workflows: Vec<(String, u64)>,
    pub claims: u64,
    pub writes_accepted: u64,
    pub writes_refused: u64,
    /// Ingestions by dedup outcome.
    pub events: Vec<(String, u64)>,
    pub oldest_waiting: Option<Millis>,
    /// Per lane (kind, handler), the earliest `nextEligibleAt` of its pending / retry
    /// items: what `ops::lateness` states.
    pub waiting_lanes: Vec<(WorkLane, Millis)>,
    /// The first revision whose grants and writes are all kept (0: nothing trimmed).
    pub history_from: u64,
    /// Intake requests not yet moved into work, and those the move refused: counted,
    /// not kept by counters (an application's plain `INSERT` keeps none), from tables
    /// that every claim drains or that wait for a person.
    pub intake: IntakeCounts,
    /// The handlers paused fleet-wide, with how many items wait behind each.
    pub paused_handlers: Vec<PausedHandler>,
}

/// Turns a page of rows (ascending) into a [`Page`] with its continuation key.
pub(crate) fn paged<T>(rows: Vec<T>, page: &PageRequest, key: impl Fn(&T) -> String) -> Page<T> {
    let next = if rows.len() >= page.limit.max(1) {
        if page.backwards {
            rows.first()
        } else {
            rows.last()
        }
        .map(&key)
    } else {
        None
    };
    Page { rows, next }
}

fn count(v: i64) -> u64 {
    u64::try_from(v).unwrap_or(0)
}

impl Store {
    /// The store revision: advanced by every commit.
    ///
    /// # Errors
    /// A store failure.
    pub fn revision(&self) -> Result<u64> {
        self.read(|tx| tx.revision())
    }

    /// Headline counts, from counters kept by every write (never a scan of the work), and
    /// the intake's counts.
    ///
    /// # Errors
    /// A store failure.
    pub fn overview(&self) -> Result<Overview> {
        self.read(|tx| {
            let mut overview = Overview {
                revision: tx.revision()?,
                ..Overview::default()
            };
            for (name, value) in tx.counters("")? {
                let value = count(value);
                match Counter::parse(&name)? {
                    Counter::Work {
                        kind,
                        state,
                        discarded,
                        compat,
                    } => overview.work.push(WorkCount {
                        kind,
                        state,
                        discarded,
                        compat,
                        count: value,
                    }),
                    Counter::Workflows { status, .. } => {
                        match overview.workflows.iter_mut().find(|(s, _)| status == *s) {
                            Some((_, n)) => *n += value,
                            None => overview.workflows.push((status.as_str().into(), value)),
                        }
                    }
                    Counter::Events(outcome) => {
                        overview.events.push((outcome.as_str().into(), value));
                    }
                    Counter::Claims => overview.claims = value,
                    Counter::Writes { accepted: true } => overview.writes_accepted = value,
                    Counter::Writes { accepted: false } => overview.writes_refused = value,
                }
            }
            overview.waiting_lanes = tx.waiting_lanes()?;
            overview.oldest_waiting = overview.waiting_lanes.iter().map(|(_, at)| *at).min();
            overview.history_from = super::retention::history_from(tx)?;
            overview.intake = tx.intake_counts()?;
            overview.paused_handlers = super::handler_control::paused_in(tx)?;
            Ok(overview)
        })
    }

    /// Work items by id, narrowed by `filter`; its row facets examine a bounded number of
    /// rows per page (`store/work_facets.rs`), so such a page may hold fewer rows than
    /// asked for while its continuation key says more may follow.
    ///
    /// # Errors
    /// A store failure.
    pub fn list_work(&self, filter: &WorkFilter, page: &PageRequest) -> Result<Page<WorkItem>> {
        self.read(|tx| super::work_facets::list(tx, filter, page))
    }

    /// Authorities by instance id.
    ///
    /// # Errors
    /// A store failure.
    pub fn list_authorities(&self, page: &PageRequest) -> Result<Page<Authority>> {
        self.read(|tx| {
            Ok(paged(tx.list_authorities(page)?, page, |a| {
                a.instance_id.clone()
            }))
        })
    }

    /// Subscriptions (cursors) by id.
    ///
    /// # Errors
    /// A store failure.
    pub fn list_subscriptions(&self, page: &PageRequest) -> Result<Page<Subscription>> {
        self.read(|tx| {
            Ok(paged(tx.list_subscriptions(page)?, page, |s| {
                s.subscription_id.clone()
            }))
        })
    }

    /// Schedules by id.
    ///
    /// # Errors
    /// A store failure.
    pub fn list_schedules(&self, page: &PageRequest) -> Result<Page<Schedule>> {
        self.read(|tx| {
            Ok(paged(tx.list_schedules(page)?, page, |s| {
                s.schedule_id.clone()
            }))
        })
    }

    /// Ingestions (dedup outcomes) by id; keys are zero-padded so they sort as text.
    ///
    /// # Errors
    /// A store failure.
    pub fn list_ingestions(&self, page: &PageRequest) -> Result<Page<Ingestion>> {
        self.read(|tx| {
            Ok(paged(tx.list_ingestions(page)?, page, |i| {
                format!("{:020}", i.id)
            }))
        })
    }

    /// Workflow instances by id, only `status` when given.
    ///
    /// # Errors
    /// A store failure.
    pub fn list_instances(
        &self,
        status: Option<InstanceStatus>,
        page: &PageRequest,
    ) -> Result<Page<InstanceRow>> {
        self.list_instances_by(status, None, page)
    }

    /// Workflow instances by id, only `status` and ids starting with `id_prefix` when given.
    ///
    /// # Errors
    /// A store failure.
    pub fn list_instances_by(
        &self,
        status: Option<InstanceStatus>,
        id_prefix: Option<&str>,
        page: &PageRequest,
    ) -> Result<Page<InstanceRow>> {
        self.read(|tx| {
            Ok(paged(
                tx.list_instances(status.map(InstanceStatus::as_str), id_prefix, page)?,
                page,
                |i| i.instance_id.clone(),
            ))
        })
    }

    /// The audit log by id.
    ///
    /// # Errors
    /// A store failure.
    pub fn list_audit(&self, page: &PageRequest) -> Result<Page<AuditEntry>> {
        self.read(|tx| {
            Ok(paged(tx.list_audit(page)?, page, |a| {
                format!("{:020}", a.id)
            }))
        })
    }

    /// Grants and fenced writes of one resource (or all), in revision order: the checker's
    /// input and the generation timeline.
    ///
    /// # Errors
    /// A store failure.
    pub fn ownership_history(
        &self,
        resource: Option<&str>,
        after: u64,
        limit: usize,
    ) -> Result<(Vec<Grant>, Vec<WriteRecord>)> {
        self.read(|tx| {
            Ok((
                tx.grants(resource, after, limit)?,
                tx.writes(resource, after, limit)?,
            ))
        })
    }

    /// The grants of every resource with a revision in `(after, through]`, paged as
    /// [`Self::ownership_history`]: how a reader that holds the newer revisions reads the
    /// older ones alone (the dashboard's claim rates widen their look back this way).
    ///
    /// # Errors
    /// A store failure.
    pub fn grants_through(&self, after: u64, through: u64, limit: usize) -> Result<Vec<Grant>> {
        self.read(|tx| tx.grants_through(after, through, limit))
    }

    /// Records an operator action in the audit log.
    ///
    /// # Errors
    /// A store failure.
    pub fn audit(&self, actor: &str, action: &str, target: &str, outcome: &str) -> Result<()> {
        self.write(|tx, now| super::record_audit(tx, now, actor, action, target, outcome, ""))
    }
}
