//! The pass over non-terminal workflow instances for invariants 10 and 11: only `running`
//! and `waiting` rows, read a page at a time through the `(status, instanceId)` index, so
//! finished instances — most of a long-lived store — are never read here.

use super::stranded::LiveBuilds;
use super::stranded_instances::no_stranded_instance;
use super::waits::{JournalWindow, wait_within_retention};
use super::{CheckOptions, Findings};
use crate::error::Result;
use crate::model::{InstanceStatus, PageRequest};
use crate::store::Store;

/// Runs the overdue and lost-wait checks over every non-terminal instance.
pub(super) fn scan(
    store: &Store,
    live: &LiveBuilds,
    options: &CheckOptions,
    page: usize,
    findings: &mut Findings,
) -> Result<()> {
    let journal = JournalWindow::read(store)?;
    for status in [InstanceStatus::Running, InstanceStatus::Waiting] {
        let mut request = PageRequest::first(page);
        loop {
            let rows = store.list_instances(Some(status), &request)?;
            for row in &rows.rows {
                no_stranded_instance(row, live, options, findings);
                wait_within_retention(row, journal, findings);
            }
            match rows.next {
                Some(next) => request = PageRequest::after(next, page),
                None => break,
            }
        }
    }
    Ok(())
}
