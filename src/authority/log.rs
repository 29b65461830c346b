//! What an authority says about each item it handles, as `tracing` events: one line per
//! claim, recorded outcome, refused write and lost lease, each naming the item, the
//! generation it was held under and its handler. The subscriber — and so the format and
//! the escaping of every value — is chosen by whoever runs the authority (the binary's is
//! `cli/log.rs`); with none installed these events cost next to nothing.

use tracing::{info, warn};

use super::core::{Exec, Executed, Finished, Job, Task};
use super::handlers::PANIC_CODE;
use crate::clock::Millis;

/// The handler a job runs: the work item's, or the workflow action that ran (else the
/// workflow's id).
fn handler<'a>(job: &'a Job, exec: Option<&'a Exec>) -> &'a str {
    match (&job.task, exec) {
        (Task::Work(item), _) => &item.handler,
        (Task::Workflow(_), Some(Exec::WorkflowRan { request, .. })) => &request.action,
        (Task::Workflow(c), _) => &c.row.workflow_id,
    }
}

/// A new claim; `lapsed_ms` is set when it took over an expired claim nobody released.
pub fn claimed(instance: &str, job: &Job, lapsed_ms: Option<Millis>) {
    info!(
        instance,
        item = %job.resource(),
        kind = job.kind(),
        generation = job.generation(),
        handler = handler(job, None),
        "takeoverAfterMs" = lapsed_ms,
        "claimed"
    );
}

/// A lapsed claim whose budget was spent, ended by this authority's takeover as a dead
/// letter (nothing to run): said once, by the claimer that decided it, with the generation
/// the takeover wrote it under.
pub fn dead_lettered(instance: &str, item: &crate::model::WorkItem) {
    warn!(
        instance,
        item = %item.id,
        kind = item.kind.as_str(),
        generation = item.generation,
        handler = %item.handler,
        code = item.last_failure.as_ref().map(|f| f.code.as_str()),
        "dead-letter"
    );
}

/// How finishing a job ended. `fenced` is set when a refused write was fenced (another
/// claim had replaced the job's), with the replacing generation when it is known.
pub fn finished(
    instance: &str,
    job: &Job,
    executed: &Executed,
    finished: &Finished,
    fenced: Option<Option<u64>>,
) {
    let item = job.resource();
    let generation = job.generation();
    let handler = handler(job, Some(&executed.exec));
    let failed = match &executed.exec {
        Exec::Work { outcome, .. } | Exec::WorkflowRan { outcome, .. } => outcome.failure(),
        _ => None,
    };
    let failure = failed.map(|f| f.code.as_str());
    // Said once, where the outcome is settled (a deferred one is settled later): the
    // handler's bug, with the panic's message, for whoever owns its code.
    if let Some(f) = failed.filter(|f| f.code == PANIC_CODE)
        && !matches!(finished, Finished::Deferred(_))
    {
        warn!(instance, %item, generation, handler, panic = f.message.as_str(), "handler-panicked");
    }
    if let (Exec::NoHandler(_), Finished::Yielded | Finished::Released) = (&executed.exec, finished)
    {
        // Handed back untouched: say why, once per hand-back, for whoever deploys it.
        warn!(instance, %item, generation, handler, "no-handler");
        return;
    }
    match finished {
        Finished::Completed => info!(instance, %item, generation, handler, "completed"),
        Finished::RetryScheduled => {
            info!(instance, %item, generation, handler, code = failure, "retry-scheduled");
        }
        Finished::Failed => warn!(instance, %item, generation, handler, code = failure, "failed"),
        Finished::Transitioned => {
            info!(instance, %item, generation, handler, code = failure, "transitioned");
        }
        Finished::Refused(code) => match fenced {
            Some(current) => warn!(
                instance,
                %item,
                generation,
                handler,
                code = code.as_str(),
                "currentGeneration" = current,
                "fenced"
            ),
            None => {
                warn!(instance, %item, generation, handler, code = code.as_str(), "write-refused");
            }
        },
        Finished::Abandoned(reason @ ("uncertain" | "lost")) => {
            warn!(instance, %item, generation, handler, reason = *reason, "attempt-abandoned");
        }
        Finished::Deferred(error) => {
            warn!(instance, %item, generation, handler, error = error.as_str(), "outcome-deferred");
        }
        Finished::Yielded | Finished::Released | Finished::Held | Finished::Abandoned(_) => {}
    }
}

/// A held cursor delivered `delivered` events and moved to journal seq `to`, keeping its
/// claim.
pub fn cursor_advanced(instance: &str, job: &Job, to: u64, delivered: u64) {
    info!(
        instance,
        item = %job.resource(),
        generation = job.generation(),
        handler = handler(job, None),
        to,
        delivered,
        "cursor-advanced"
    );
}

/// A claim found taken over at renewal; `current` is the generation that replaced it,
/// when the store said.
pub fn lease_lost(instance: &str, job: &Job, current: Option<u64>) {
    warn!(
        instance,
        item = %job.resource(),
        generation = job.generation(),
        handler = handler(job, None),
        "currentGeneration" = current,
        "lease-lost"
    );
}
