//! Cancelling a workflow instance, in one vocabulary for the dashboard and `leasehold
//! cancel`: when it is offered at all ([`offer`]), what happened ([`Verdict`], in the
//! same words on screen, on the terminal and in the audit log), and the one function that
//! does it and records it ([`cancel`]). Every attempt that reaches the store is audited
//! under [`AUDIT_ACTION`], refusals included, with the operator's reason.

use crate::authority::handlers::HandlerVersion;
use crate::build_key::claim_keys;
use crate::error::{Error, Result};
use crate::model::{CompatSet, InstanceStatus};
use crate::store::Store;
use crate::workflow::engine::CancelOutcome;

/// The audit log's action name for a cancel, from either front end.
pub const AUDIT_ACTION: &str = "cancel-workflow";

/// What a cancel attempt came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// The instance moved to `cancelled`.
    Cancelled,
    /// Refused: the instance had already finished with this status.
    Finished(String),
    /// Refused: no instance has this id.
    Unknown,
    /// Refused: the instance belongs to another build than the caller's.
    Incompatible,
    /// The store failed (its error code).
    Failed(String),
}

impl Verdict {
    /// The outcome in words: `cancelled`, `refused: completed`, `refused: no such
    /// instance`, `refused: incompatible build`, `failed: STORE_UNAVAILABLE`.
    #[must_use]
    pub fn words(&self) -> String {
        match self {
            Self::Cancelled => "cancelled".into(),
            Self::Finished(status) => format!("refused: {status}"),
            Self::Unknown => "refused: no such instance".into(),
            Self::Incompatible => "refused: incompatible build".into(),
            Self::Failed(code) => format!("failed: {code}"),
        }
    }

    /// Whether the instance was left as it was.
    #[must_use]
    pub fn refused(&self) -> bool {
        !matches!(self, Self::Cancelled)
    }
}

/// The audit log's outcome text: the verdict's words, then the reason when one was given
/// (`refused: completed; reason: duplicate order`).
#[must_use]
pub fn audit_outcome(verdict: &Verdict, reason: &str) -> String {
    with_reason(verdict.words(), reason)
}

/// An operator action's audit outcome: `words`, then `; reason: …` when one was given.
#[must_use]
pub fn with_reason(words: String, reason: &str) -> String {
    let reason = reason.trim();
    if reason.is_empty() {
        words
    } else {
        format!("{words}; reason: {reason}")
    }
}

/// Whether a cancel should be offered for an instance whose status is `status` (`None`:
/// no such instance); otherwise the one line that says why not, e.g. `completed — nothing
/// to cancel`.
///
/// # Errors
/// The line to show instead of a confirmation.
pub fn offer(instance: &str, status: Option<&str>) -> std::result::Result<(), String> {
    match status {
        None => Err(format!("no such workflow instance: {instance}")),
        Some(s) if InstanceStatus::parse(s).is_some_and(InstanceStatus::is_terminal) => {
            Err(format!("{s} — nothing to cancel"))
        }
        Some(_) => Ok(()),
    }
}

/// Cancels `instance` as `actor` for `reason` (`compat`: the digests the caller may run,
/// `None` for any) and records the attempt in the audit log, whatever its verdict.
///
/// # Errors
/// Only when the audit entry cannot be written (the store's failure).
pub fn cancel(
    store: &Store,
    instance: &str,
    compat: Option<&CompatSet>,
    actor: &str,
    reason: &str,
) -> Result<Verdict> {
    let verdict = match store.cancel_workflow(instance, compat, actor, reason) {
        Ok(CancelOutcome::Cancelled) => Verdict::Cancelled,
        Ok(CancelOutcome::AlreadyCancelled) => Verdict::Finished("cancelled".into()),
        Err(Error::AlreadyTerminal { state, .. }) => Verdict::Finished(state),
        Err(Error::NotFound { .. }) => Verdict::Unknown,
        Err(Error::Incompatible { .. }) => Verdict::Incompatible,
        Err(e) => Verdict::Failed(e.code().into()),
    };
    store.audit(
        actor,
        AUDIT_ACTION,
        instance,
        &audit_outcome(&verdict, reason),
    )?;
    Ok(verdict)
}

/// The keys a one-shot caller (the command line, the dashboard) runs by when it checks
/// a cancel: the built-in handlers at `version` and every deployed definition they run
/// whole ([`crate::build_key::claim_keys`], as an authority of that code derives them).
///
/// # Errors
/// A store failure.
pub fn caller_keys(store: &Store, version: &HandlerVersion) -> Result<CompatSet> {
    let versions = crate::authority::workload::default_workload(0)
        .at_version(version)
        .handler_versions();
    Ok(claim_keys(&versions, &store.deployed_definitions()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offered_only_for_unfinished_instances() {
        assert_eq!(offer("wf-1", Some("running")), Ok(()));
        assert_eq!(offer("wf-1", Some("waiting")), Ok(()));
        assert_eq!(
            offer("wf-1", Some("completed")),
            Err("completed — nothing to cancel".into())
        );
        assert_eq!(
            offer("wf-1", Some("cancelled")),
            Err("cancelled — nothing to cancel".into())
        );
        assert_eq!(
            offer("wf-9", None),
            Err("no such workflow instance: wf-9".into())
        );
    }

    #[test]
    fn one_vocabulary_with_the_reason() {
        assert_eq!(audit_outcome(&Verdict::Cancelled, ""), "cancelled");
        assert_eq!(
            audit_outcome(&Verdict::Finished("completed".into()), " dup "),
            "refused: completed; reason: dup"
        );
        assert_eq!(Verdict::Unknown.words(), "refused: no such instance");
        assert!(Verdict::Incompatible.refused());
    }
}
