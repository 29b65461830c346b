//! The operator's triage verbs on work: `requeue` and `discard` ([`crate::rules::triage`]
//! decides; this file makes each decision one transaction). The item is read, judged and
//! written in the same serialised transaction, so the change is conditional on the state
//! it was judged on, and the audit entry (actor, verdict, reason) commits with it, for a
//! refusal too. A change is also recorded in the write history as an operator's write, so
//! the checker knows a requeued item may finish again; a bulk run's change carries the
//! run's selection there, so a later run of the same selection tells what it already did.

use super::work::save_work;
use super::{Store, Tx, record_audit, record_write};
use crate::clock::Millis;
use crate::error::{Error, Result};
use crate::ids::check_id;
use crate::model::{Holder, WorkItem, WriteRecord, WriteVerb};
use crate::rules::triage::{self, Verb, Verdict};

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
        self.triage_work(Verb::Requeue, id, actor, reason)
    }

    /// Discards an item for good, recording `reason` (required) in its last failure; a
    /// succeeded item is refused, a repeat answers [`Verdict::AlreadyDone`]. Audited as
    /// `actor`.
    ///
    /// # Errors
    /// `INVALID` for an empty reason, a malformed id or actor, or a store failure.
    pub fn discard_work(&self, id: &str, actor: &str, reason: &str) -> Result<Triaged> {
        self.triage_work(Verb::Discard, id, actor, reason)
    }

    /// Makes an item waiting out a retry's backoff (or an enqueue delay) due now; a repeat
    /// answers [`Verdict::AlreadyDone`], a claimed or finished item is refused. Audited as
    /// `actor` with `reason` (which may be empty).
    ///
    /// # Errors
    /// A malformed id or actor, or a store failure.
    pub fn retry_now_work(&self, id: &str, actor: &str, reason: &str) -> Result<Triaged> {
        self.triage_work(Verb::RetryNow, id, actor, reason)
    }

    /// One triage verb on one item ([`Verb::judge`] inside the writing transaction).
    ///
    /// # Errors
    /// `INVALID` for a discard without a reason, a malformed id or actor; a store failure.
    pub fn triage_work(&self, verb: Verb, id: &str, actor: &str, reason: &str) -> Result<Triaged> {
        let mut answers = self.triage_work_batch(verb, &[id], actor, reason)?;
        answers
            .pop()
            .ok_or_else(|| Error::OutcomeUnknown(format!("no answer for {id}")))
    }

    /// One triage verb on each of `ids`, in one transaction: each item is judged, changed
    /// and audited on its own, exactly as [`Self::triage_work`] would, and the answers
    /// come in the order of `ids`. All of it commits, or none.
    ///
    /// # Errors
    /// As [`Self::triage_work`], for the first id that fails the check (nothing written).
    pub fn triage_work_batch(
        &self,
        verb: Verb,
        ids: &[&str],
        actor: &str,
        reason: &str,
    ) -> Result<Vec<Triaged>> {
        self.triage_in(verb, ids, actor, reason, None)
    }

    /// A bulk run's page: [`Self::triage_work_batch`], each change recorded under the run's
    /// selection, and the run's audit entry for the page (made from the page's answers)
    /// committed in the same transaction — so a run killed between pages leaves an entry
    /// with its counts up to the last page that committed, and a later run of the same
    /// selection knows which items this one changed ([`Self::changed_by_selection`]).
    ///
    /// # Errors
    /// As [`Self::triage_work_batch`].
    pub fn triage_work_page(
        &self,
        verb: Verb,
        ids: &[&str],
        actor: &str,
        reason: &str,
        page: &BulkPage<'_>,
    ) -> Result<Vec<Triaged>> {
        self.triage_in(verb, ids, actor, reason, Some(page))
    }

    /// Which of `ids` were ever changed by `verb` under `selection` (a bulk run's page
    /// recorded it with the change), read from each item's write history in one read
    /// transaction: what an earlier run of the same selection did. A verb that leaves no
    /// write (retry-now) has no such record; history older than the store keeps
    /// (`RETENTION`) is not found.
    ///
    /// # Errors
    /// A store failure.
    pub fn changed_by_selection(
        &self,
        verb: Verb,
        selection: &str,
        ids: &[&str],
    ) -> Result<Vec<bool>> {
        let Some(write) = verb_write(verb) else {
            return Ok(vec![false; ids.len()]);
        };
        let by_selection = |w: &WriteRecord| {
            w.accepted
                && w.verb == write
                && serde_json::from_str::<serde_json::Value>(&w.detail)
                    .is_ok_and(|d| d["selection"] == selection)
        };
        self.read(|tx| {
            ids.iter()
                .map(|id| {
                    let mut after = 0;
                    loop {
                        let page = tx.writes(Some(id), after, HISTORY_PAGE)?;
                        if page.iter().any(by_selection) {
                            return Ok(true);
                        }
                        match page.last() {
                            Some(last) if page.len() >= HISTORY_PAGE => after = last.revision,
                            _ => return Ok(false),
                        }
                    }
                })
                .collect()
        })
    }

    fn triage_in(
        &self,
        verb: Verb,
        ids: &[&str],
        actor: &str,
        reason: &str,
        page: Option<&BulkPage<'_>>,
    ) -> Result<Vec<Triaged>> {
        if verb == Verb::Discard && reason.trim().is_empty() {
            return Err(Error::Invalid(
                "a discard needs a reason (--reason), for the item and the audit log".into(),
            ));
        }
        for id in ids {
            check_id("work id", id)?;
        }
        if actor.trim().is_empty() {
            return Err(Error::Invalid("an operator action needs an actor".into()));
        }
        self.write(|tx, now| {
            let answers = ids
                .iter()
                .map(|id| {
                    let answer = match tx.work(id)? {
                        None => Triaged {
                            verdict: Verdict::Unknown,
                            item: None,
                        },
                        Some(item) => match verb.judge(&item, actor, reason, now) {
                            (verdict, Some(next)) => {
                                if let Some(write) = verb_write(verb) {
                                    let change = Change {
                                        verb: write,
                                        selection: page.map(|p| p.selection),
                                    };
                                    record_change(tx, now, actor, &change, &item, &next)?;
                                }
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
                    record_audit(
                        tx,
                        now,
                        actor,
                        verb.action(),
                        id,
                        &triage::audit_outcome(verb, &answer.verdict, reason),
                        "",
                    )?;
                    Ok(answer)
                })
                .collect::<Result<Vec<_>>>()?;
            if let Some(page) = page {
                let outcome = (page.outcome)(&answers);
                record_audit(tx, now, actor, page.action, page.target, &outcome, "")?;
            }
            Ok(answers)
        })
    }
}

/// What a bulk run's page adds to its transaction.
pub struct BulkPage<'a> {
    /// What the run acts on (its verb and filter): recorded with each change.
    pub selection: &'a str,
    /// The run's audit entry: its action and target, and its outcome made from the
    /// page's answers.
    pub action: &'a str,
    pub target: &'a str,
    pub outcome: &'a dyn Fn(&[Triaged]) -> String,
}

/// Writes of one item's history read at a time when looking for a run's change.
const HISTORY_PAGE: usize = 64;

/// A change as the write history records it: its verb, and the bulk selection that made
/// it, if one did.
struct Change<'a> {
    verb: WriteVerb,
    selection: Option<&'a str>,
}

/// Records the change in the write history the checker reads, as an operator's write
/// (verb `requeue` or `discard`): a requeued item's next terminal write is then the first
/// of its fresh budget, not a second one.
fn record_change(
    tx: &mut dyn Tx,
    now: Millis,
    actor: &str,
    change: &Change<'_>,
    item: &WorkItem,
    next: &WorkItem,
) -> Result<()> {
    let mut detail = serde_json::json!({
        "logicalEffectId": item.logical_effect_id,
        "idempotencyKey": item.idempotency_key,
        "state": next.state.as_str(),
    });
    if let Some(selection) = change.selection {
        detail["selection"] = selection.into();
    }
    record_write(
        tx,
        now,
        &item.id,
        actor,
        item.generation,
        change.verb,
        &Ok(()),
        detail,
        Holder::of_work(item),
    )
}

/// The write-history verb of a change that bears on ownership or on how often an item may
/// finish; a retry-now only moves a due instant, so it has none.
fn verb_write(verb: Verb) -> Option<WriteVerb> {
    match verb {
        Verb::Requeue => Some(WriteVerb::Requeue),
        Verb::Discard => Some(WriteVerb::Discard),
        Verb::RetryNow => None,
    }
}
