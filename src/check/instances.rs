//! The pass over non-terminal workflow instances for invariants 10 and 11: only `running`
//! and `waiting` rows, read a page at a time through the `(status, instanceId)` index, so
//! finished instances — most of a long-lived store — are never read here.

use super::stranded::{Claiming, LiveBuilds, Verdict};
use super::stranded_instances::no_stranded_instance;
use super::waits::{JournalWindow, wait_within_retention};
use super::{CheckOptions, Findings};
use crate::error::Result;
use crate::model::{InstanceStatus, PageRequest};
use crate::store::Store;

/// Runs the overdue and lost-wait checks over every non-terminal instance. Returns how
/// many are backlogged (overdue while the live authorities that may run them kept claiming
/// instances).
pub(super) fn scan(
    store: &Store,
    builds: (&LiveBuilds, &Claiming),
    options: &CheckOptions,
    page: usize,
    findings: &mut Findings,
) -> Result<u64> {
    let mut backlogged = 0;
    let journal = JournalWindow::read(store)?;
    for status in [InstanceStatus::Running, InstanceStatus::Waiting] {
        let mut request = PageRequest::first(page);
        loop {
            let rows = store.list_instances(Some(status), &request)?;
            for row in &rows.rows {
                if no_stranded_instance(row, builds, options, findings) == Verdict::Backlogged {
                    backlogged += 1;
                }
                wait_within_retention(row, journal, findings);
            }
            match rows.next {
                Some(next) => request = PageRequest::after(next, page),
                None => break,
            }
        }
    }
    Ok(backlogged)
}
