//! The horizon: what becomes due in the next minutes — schedule firings, delayed items,
//! retry backoffs, workflow timers and event-wait timeouts — bucketed in time, with the
//! entries behind each bucket. Read through the indexes the claimers use (due schedules,
//! each lane's items due by an instant, instances by status), each read capped, so a
//! horizon over a deep backlog says "at least" instead of reading the backlog.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use crate::clock::Millis;
use crate::error::Result;
use crate::model::WorkKind;
use crate::model::work::WorkState;
use crate::store::{Counter, Store};

/// What becomes due.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Source {
    /// A schedule's next firing.
    Firing,
    /// A pending item held back until its not-before instant.
    Delayed,
    /// A failed attempt's retry, backing off.
    Backoff,
    /// A workflow instance's timer or event-wait timeout.
    WorkflowTimer,
}

impl Source {
    pub const ALL: [Self; 4] = [
        Self::Firing,
        Self::Delayed,
        Self::Backoff,
        Self::WorkflowTimer,
    ];

    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Firing => "firing",
            Self::Delayed => "delayed",
            Self::Backoff => "backoff",
            Self::WorkflowTimer => "workflow-timer",
        }
    }
}

/// One thing that becomes due.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Upcoming {
    pub at: Millis,
    pub source: Source,
    pub id: String,
}

/// One slice of the horizon.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Bucket {
    pub from: Millis,
    pub to: Millis,
    /// Per source, how many fall in the slice.
    pub counts: BTreeMap<Source, u64>,
    /// The entries, earliest first.
    pub entries: Vec<Upcoming>,
}

impl Bucket {
    #[must_use]
    pub fn total(&self) -> u64 {
        self.counts.values().sum()
    }
}

/// The next `span` from `now`, in buckets.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Horizon {
    pub now: Millis,
    pub bucket_ms: Millis,
    pub buckets: Vec<Bucket>,
    /// A read reached its cap: counts are lower bounds.
    pub capped: bool,
}

/// What is due from `now` to `now + span`, in `buckets` slices, reading at most `cap`
/// rows per source read.
///
/// # Errors
/// A store failure.
pub fn horizon(
    store: &Store,
    now: Millis,
    span: Millis,
    buckets: usize,
    cap: usize,
) -> Result<Horizon> {
    let end = now.saturating_add(span);
    let (mut upcoming, mut capped) = (Vec::new(), false);
    // Schedule firings.
    let schedules = store.read(|tx| tx.due_schedules(end, cap))?;
    capped |= schedules.len() >= cap;
    upcoming.extend(schedules.into_iter().map(|s| Upcoming {
        at: s.next_due,
        source: Source::Firing,
        id: s.schedule_id,
    }));
    // The keys with work or instances that can become due, from the counters.
    let (mut work_keys, mut instance_keys) = (BTreeSet::new(), BTreeSet::new());
    for (name, n) in store.read(|tx| tx.counters(""))? {
        match Counter::parse(&name)? {
            Counter::Work { state, compat, .. }
                if n > 0 && matches!(state, WorkState::Pending | WorkState::Retry) =>
            {
                work_keys.insert(compat);
            }
            Counter::Workflows { status, compat } if n > 0 && !status.is_terminal() => {
                instance_keys.insert(compat);
            }
            _ => {}
        }
    }
    // Items held back: each key's lanes, items due by the end.
    for compat in &work_keys {
        for lane in store.read(|tx| tx.claim_lanes(compat))? {
            let items = store.read(|tx| tx.lane_claimable(compat, &lane, end, cap))?;
            capped |= items.len() >= cap;
            for item in items {
                let Some(at) = item.due_at().filter(|at| *at > now) else {
                    continue;
                };
                let source = match (item.state, item.kind) {
                    (WorkState::Retry, _) => Source::Backoff,
                    (_, WorkKind::Schedule) => Source::Firing,
                    _ => Source::Delayed,
                };
                upcoming.push(Upcoming {
                    at,
                    source,
                    id: item.id.clone(),
                });
            }
        }
    }
    // Workflow timers and wait timeouts: instances parked until an instant.
    for compat in &instance_keys {
        let rows = store.read(|tx| tx.runnable_instances(compat, end, cap))?;
        capped |= rows.len() >= cap;
        upcoming.extend(rows.into_iter().filter_map(|row| {
            let at = row.next_eligible_at.filter(|at| *at > now && *at <= end)?;
            Some(Upcoming {
                at,
                source: Source::WorkflowTimer,
                id: row.instance_id,
            })
        }));
    }
    upcoming.sort_by(|a, b| (a.at, &a.id).cmp(&(b.at, &b.id)));
    let n = buckets.max(1);
    let bucket_ms = (span / Millis::try_from(n).unwrap_or(1)).max(1);
    let mut slices: Vec<Bucket> = (0..n)
        .map(|i| {
            let from = now + bucket_ms * Millis::try_from(i).unwrap_or(0);
            Bucket {
                from,
                to: from + bucket_ms,
                counts: BTreeMap::new(),
                entries: Vec::new(),
            }
        })
        .collect();
    for entry in upcoming {
        // Overdue entries (a firing not yet taken) belong to the first slice.
        let offset = (entry.at - now).max(0) / bucket_ms;
        let Some(slice) = usize::try_from(offset).ok().and_then(|i| slices.get_mut(i)) else {
            continue;
        };
        *slice.counts.entry(entry.source).or_default() += 1;
        slice.entries.push(entry);
    }
    Ok(Horizon {
        now,
        bucket_ms,
        buckets: slices,
        capped,
    })
}
