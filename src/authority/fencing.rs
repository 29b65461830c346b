//! Telling a fenced write from any other refusal. The store answers a stale owner's write
//! `WORK_FENCED` while the item is still open, but `already-terminal` once its successor
//! has finished it; either way the authority had been superseded — its claim taken over —
//! and that is what `fencedWritesRefused` and `leasesLost` count. Only refusals pay for
//! the extra read, and they are rare.

use super::core::{Job, Task};
use crate::store::Store;

/// The generation the job's resource holds now, when it can be read.
fn current_generation(store: &Store, job: &Job) -> Option<u64> {
    match &job.task {
        Task::Work(item) => store.work(&item.id).ok().flatten().map(|w| w.generation),
        Task::Workflow(_) => store
            .lease(&job.resource())
            .ok()
            .flatten()
            .map(|l| l.generation),
    }
}

/// Whether a write of `job` that the store refused with `code` was fenced: `Some` (with the
/// newer generation, when it could be read) if another claim had replaced the job's or the
/// store said `WORK_FENCED`; `None` for any other refusal (a cancelled workflow, a cursor
/// that did not move forward, …).
#[allow(clippy::option_option)] // "fenced, successor unreadable" is not "not fenced"
pub(super) fn fenced(store: &Store, job: &Job, code: &str) -> Option<Option<u64>> {
    let newer = current_generation(store, job).filter(|g| *g > job.generation());
    (newer.is_some() || code == "WORK_FENCED").then_some(newer)
}
