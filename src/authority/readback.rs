//! Reading back after an unknown outcome. When the store cannot say whether a completion,
//! a cursor advance or a workflow transition committed (`OUTCOME_UNKNOWN`: the commit may
//! be durable and the answer lost), resubmitting blindly would turn a refusal of our own
//! repeated write into a false "fenced" and hide what happened. Every fenced write is
//! recorded, accepted or refused, in the transaction that made it, so the record of the
//! attempt — this owner, this generation, this verb and the same target — answers the
//! question: found, the write happened (or was refused) exactly as recorded; not found,
//! nothing committed and resubmitting is safe. When the record cannot be read, nothing is
//! decided: the job is held in recovery, neither run nor written again, until a later
//! read-back decides.

use serde_json::Value;

use super::core::{Exec, Finished, Job, Task};
use crate::authority::handlers::HandlerOutcome;
use crate::model::{WorkKind, WorkState, WriteRecord, WriteVerb};
use crate::store::Store;

/// Writes read per page of a resource's history.
const PAGE: usize = 1_000;

/// What a read-back decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReadBack {
    /// The write's record was found: it committed with this answer.
    Done(Finished),
    /// No record: nothing committed; the write can be submitted again.
    Resubmit,
    /// The record could not be read: hold the job (fail closed) and read back later.
    Recovery(String),
}

/// The write a job's outcome meant: its verbs and how to tell its record from others of
/// the same owner and generation.
struct Intended {
    verbs: &'static [WriteVerb],
    /// A detail field and the value the record must carry (a cursor's target sequence, a
    /// transition's starting instance revision).
    detail: Option<(&'static str, u64)>,
}

fn intended(job: &Job, exec: &Exec) -> Option<Intended> {
    match (&job.task, exec) {
        (Task::Work(item), Exec::Work { advance_to, .. }) if item.kind == WorkKind::Cursor => {
            advance_to.map(|to| Intended {
                verbs: &[WriteVerb::Cursor],
                detail: Some(("to", to)),
            })
        }
        (Task::Work(_), Exec::Work { outcome, .. }) => {
            let verbs: &'static [WriteVerb] = match outcome {
                HandlerOutcome::Succeeded(_) => &[WriteVerb::Complete],
                HandlerOutcome::Failed(_) | HandlerOutcome::RetryAfter { .. } => &[WriteVerb::Fail],
                HandlerOutcome::Uncertain => return None,
            };
            Some(Intended {
                verbs,
                detail: None,
            })
        }
        (Task::Workflow(claimed), Exec::WorkflowApply(_) | Exec::WorkflowRan { .. }) => {
            Some(Intended {
                verbs: &[WriteVerb::Transition],
                detail: Some(("instanceRevision", claimed.row.instance_revision)),
            })
        }
        _ => None,
    }
}

/// What a found record means for the job.
fn answer(record: &WriteRecord, cursor: bool) -> Finished {
    if !record.accepted {
        return Finished::Refused(record.refusal.clone().unwrap_or_default());
    }
    if cursor {
        return Finished::Held;
    }
    if record.verb == WriteVerb::Transition {
        return Finished::Transitioned;
    }
    let state = serde_json::from_str::<Value>(&record.detail)
        .ok()
        .and_then(|d| d["state"].as_str().and_then(WorkState::parse));
    match state {
        Some(WorkState::Succeeded) => Finished::Completed,
        Some(WorkState::Retry) => Finished::RetryScheduled,
        Some(WorkState::Failed) => Finished::Failed,
        _ => Finished::Yielded,
    }
}

/// Reads back what `job`'s outcome `exec` meant to write, as `owner`.
#[must_use]
pub fn read_back(store: &Store, owner: &str, job: &Job, exec: &Exec) -> ReadBack {
    let Some(want) = intended(job, exec) else {
        // A hand-back or a release: writing it again is answered by the store as it stands.
        return ReadBack::Resubmit;
    };
    let cursor = want.verbs == [WriteVerb::Cursor];
    let resource = job.resource();
    let generation = job.generation();
    let mut found: Option<WriteRecord> = None;
    let mut after = 0;
    loop {
        let writes = match store.ownership_history(Some(&resource), after, PAGE) {
            Ok((_, writes)) => writes,
            Err(e) => return ReadBack::Recovery(format!("the read-back failed: {e}")),
        };
        let full = writes.len() >= PAGE;
        after = writes.last().map_or(after, |w| w.revision);
        // The latest matching record of this page, else the one found on an earlier page.
        found = writes
            .into_iter()
            .rev()
            .find(|w| {
                w.owner_id == owner
                    && w.generation == generation
                    && want.verbs.contains(&w.verb)
                    && want.detail.is_none_or(|(key, value)| {
                        serde_json::from_str::<Value>(&w.detail)
                            .is_ok_and(|d| d[key].as_u64() == Some(value))
                    })
            })
            .or(found);
        if !full {
            break;
        }
    }
    found.map_or(ReadBack::Resubmit, |record| {
        ReadBack::Done(answer(&record, cursor))
    })
}
