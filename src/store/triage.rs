//! The operator's triage verbs on work: `requeue` and `discard` ([`crate::ops::triage`]
//! decides; this file makes each decision one transaction). The item is read, judged and
//! written in the same serialised transaction, so the change is conditional on the state
//! it was judged on, and the audit entry (actor, verdict, reason) commits with it, for a
//! refusal too. A change is also recorded in the write history as an operator's write, so
//! the checker knows a requeued item may finish again.

use super::work::save_work;
use super::{Store, Tx, record_write};
use crate::clock::Millis;
use crate::error::{Error, Result};
use crate::ids::check_id;
use crate::model::{AuditEntry, Holder, WorkItem, WriteVerb};
use crate::ops::triage::{self, Verb, Verdict};

/// The answer of a triage verb: its verdict and the item as it stands afterwards (`None`
/// for an unknown id).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Triaged {
    pub verdict: Verdict,
    pub item: Option<WorkItem>,
}

impl Store {
    /// Requeues a failed item (a dead letter included): `pending` now, a fresh attempt
    /// budget, the same logical id and idempotency key. A repeat answers
    /// [`Verdict::AlreadyDone`]; any other state is refused. Audited as `actor` with
    /// `reason` (which may be empty).
    ///
    /// # Errors
    /// A malformed id or actor, or a store failure.
    pub fn requeue_work(&self, id: &str, actor: &str, reason: &str) -> Result<Triaged> {
        self.triage(Verb::Requeue, id, actor, reason, |item, now| {
            triage::requeue(item, now)
        })
    }

    /// Discards an item for good, recording `reason` (required) in its last failure; a
    /// succeeded item is refused, a repeat answers [`Verdict::AlreadyDone`]. Audited as
    /// `actor`.
    ///
    /// # Errors
    /// `INVALID` for an empty reason, a malformed id or actor, or a store failure.
    pub fn discard_work(&self, id: &str, actor: &str, reason: &str) -> Result<Triaged> {
        if reason.trim().is_empty() {
            return Err(Error::Invalid(
                "a discard needs a reason (--reason), for the item and the audit log".into(),
            ));
        }
        self.triage(Verb::Discard, id, actor, reason, |item, now| {
            triage::discard(item, actor, reason, now)
        })
    }

    fn triage(
        &self,
        verb: Verb,
        id: &str,
        actor: &str,
        reason: &str,
        decide: impl Fn(&WorkItem, Millis) -> (Verdict, Option<WorkItem>),
    ) -> Result<Triaged> {
        check_id("work id", id)?;
        if actor.trim().is_empty() {
            return Err(Error::Invalid("an operator action needs an actor".into()));
        }
        self.write(|tx, now| {
            let answer = match tx.work(id)? {
                None => Triaged {
                    verdict: Verdict::Unknown,
                    item: None,
                },
                Some(item) => match decide(&item, now) {
                    (verdict, Some(next)) => {
                        record_change(tx, now, actor, verb, &item, &next)?;
                        save_work(tx, Some(&item), &next)?;
                        Triaged {
                            verdict,
                            item: Some(next),
                        }
                    }
                    (verdict, None) => Triaged {
                        verdict,
                        item: Some(item),
                    },
                },
            };
            audit(tx, now, actor, verb, id, &answer.verdict, reason)?;
            Ok(answer)
        })
    }
}

/// Records the change in the write history the checker reads, as an operator's write
/// (verb `requeue` or `discard`): a requeued item's next terminal write is then the first
/// of its fresh budget, not a second one.
fn record_change(
    tx: &mut dyn Tx,
    now: Millis,
    actor: &str,
    verb: Verb,
    item: &WorkItem,
    next: &WorkItem,
) -> Result<()> {
    let detail = serde_json::json!({
        "logicalEffectId": item.logical_effect_id,
        "idempotencyKey": item.idempotency_key,
        "state": next.state.as_str(),
    });
    let verb = match verb {
        Verb::Requeue => WriteVerb::Requeue,
        Verb::Discard => WriteVerb::Discard,
    };
    record_write(
        tx,
        now,
        &item.id,
        actor,
        item.generation,
        verb,
        &Ok(()),
        detail,
        Holder::of_work(item),
    )
}

fn audit(
    tx: &mut dyn Tx,
    now: Millis,
    actor: &str,
    verb: Verb,
    id: &str,
    verdict: &Verdict,
    reason: &str,
) -> Result<()> {
    tx.commit_revision()?;
    tx.add_audit(&AuditEntry {
        id: 0,
        at: now,
        actor: actor.into(),
        action: verb.action().into(),
        target: id.into(),
        outcome: triage::audit_outcome(verb, verdict, reason),
    })
}
