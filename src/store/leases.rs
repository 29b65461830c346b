//! The lease family: acquire, renew, release, handoff, checkpoint — fenced inside the write
//! transaction, capped per owner, and optionally keyed so a retried call applies once.

use serde::{Deserialize, Serialize};

use super::{Logged, Store, Tx, record_write};
use crate::clock::Millis;
use crate::error::{Error, Result};
use crate::ids::{check_id, check_opt_id};
use crate::model::{Grant, GrantKind, Holder, Lease, Page, PageRequest, Takeover, WriteVerb};
use crate::rules::lease as rules;

/// A lease-family request that names an idempotency key: `(owner, verb, key)` identifies
/// the mutation, so a retry after a lost answer replays the first answer instead of
/// applying again — across restarts, because the answer is stored with the mutation.
#[derive(Debug, Clone, Copy)]
pub struct Keyed<'a> {
    pub key: Option<&'a str>,
}

#[derive(Serialize, Deserialize)]
enum Answer<T> {
    Ok(T),
    Err(Error),
}

impl Store {
    /// Runs a lease-family mutation at most once per `(owner, verb, key)`.
    fn keyed<T: Serialize + for<'de> Deserialize<'de>>(
        &self,
        owner: &str,
        verb: &str,
        key: Option<&str>,
        mut op: impl FnMut(&mut dyn Tx, Millis) -> Result<Logged<T>>,
    ) -> Result<T> {
        let Some(key) = key else {
            return self.write_logged(op);
        };
        let namespaced = format!("{owner}\u{1f}{verb}\u{1f}{key}");
        let answer: Answer<T> = self.write(|tx, now| {
            if let Some(stored) = tx.idempotent_answer(&namespaced)? {
                return serde_json::from_str(&stored)
                    .map_err(|e| Error::Corrupt(format!("stored answer for {key}: {e}")));
            }
            let answer = match op(tx, now)? {
                Logged::Done(v) => Answer::Ok(v),
                Logged::Refused(e) => Answer::Err(e),
            };
            let text = serde_json::to_string(&answer).map_err(|e| Error::Invalid(e.to_string()))?;
            tx.commit_revision()?;
            tx.put_idempotent_answer(&namespaced, &text, now)?;
            Ok(answer)
        })?;
        match answer {
            Answer::Ok(v) => Ok(v),
            Answer::Err(e) => Err(e),
        }
    }

    /// Acquires `resource` for `owner` for `duration_ms` (clamped; see
    /// [`rules::clamp_duration`]). Never grants over a live lease; always a new, higher
    /// generation.
    ///
    /// # Errors
    /// `WORK_IN_PROGRESS`, `LEASE_CAP_REACHED`, or a store failure.
    pub fn acquire(
        &self,
        resource: &str,
        owner: &str,
        duration_ms: f64,
        idem: Keyed<'_>,
    ) -> Result<Lease> {
        check_id("lease resource", resource)?;
        check_id("owner", owner)?;
        check_opt_id("idempotency key", idem.key)?;
        self.keyed(owner, "acquire", idem.key, |tx, now| {
            let current = tx.lease(resource)?;
            let lease = match self.grant_lease_in(
                tx,
                now,
                current.as_ref(),
                resource,
                owner,
                duration_ms,
            )? {
                Logged::Done(lease) => lease,
                Logged::Refused(e) => return Ok(Logged::Refused(e)),
            };
            let revision = tx.commit_revision()?;
            tx.put_lease(&lease)?;
            tx.add_grant(Grant {
                revision,
                resource_id: resource.into(),
                generation: lease.generation,
                owner_id: owner.into(),
                how: GrantKind::Acquire,
                owner_compat: None,
                item_compat: None,
                at: now,
                took_over: Takeover::of_lease(current.as_ref(), owner, now),
            })?;
            Ok(Logged::Done(lease))
        })
    }

    /// The lease `owner` would be granted on `resource` (whose row is `current`) for
    /// `duration_ms`, inside an open write transaction; nothing is written. Every grant of a
    /// new hold goes through here — an `acquire`, a workflow instance's claim — so each gets
    /// the same TTL clamp ([`rules::clamp_duration`]: a request of 0, NaN or years is not
    /// taken at its word) and the same per-owner cap (`LEASE_CAP_REACHED`), checked before
    /// the live lease is (as `acquire` always answered).
    ///
    /// # Errors
    /// A store failure; a refusal (`LEASE_CAP_REACHED`, `WORK_IN_PROGRESS`) is `Refused`.
    pub(crate) fn grant_lease_in(
        &self,
        tx: &mut dyn Tx,
        now: Millis,
        current: Option<&Lease>,
        resource: &str,
        owner: &str,
        duration_ms: f64,
    ) -> Result<Logged<Lease>> {
        let duration = rules::clamp_duration(duration_ms);
        let cap = self.owner_cap;
        let held = tx.live_lease_count(owner, now)?;
        if held >= cap {
            return Ok(Logged::Refused(Error::LeaseCap {
                owner: owner.into(),
                held,
                cap,
            }));
        }
        let floor = super::epoch::generation_floor(tx)?;
        Ok(
            match rules::acquire(
                floor,
                current,
                resource,
                owner,
                self.ids.next_id("tok"),
                duration,
                now,
            ) {
                Ok(lease) => Logged::Done(lease),
                Err(e) => Logged::Refused(e),
            },
        )
    }

    /// Applies a holder-only change to a lease, logging the write for the checker: a refused
    /// one as made by `writer` (a renewal presents only a token: then by the holder).
    fn holder_write(
        resource: &str,
        writer: Option<&str>,
        generation: u64,
        verb: WriteVerb,
        change: impl Fn(&Lease, Millis) -> Result<Lease>,
    ) -> impl FnMut(&mut dyn Tx, Millis) -> Result<Logged<Lease>> {
        move |tx, now| {
            let Some(current) = tx.lease(resource)? else {
                return Ok(Logged::Refused(Error::NotFound {
                    what: "lease".into(),
                    id: resource.into(),
                }));
            };
            let outcome = change(&current, now);
            record_write(
                tx,
                now,
                resource,
                // An accepted write presented the holder's token: it is the holder's.
                writer
                    .filter(|_| outcome.is_err())
                    .unwrap_or(&current.owner_id),
                generation,
                verb,
                &outcome.as_ref().map(|_| ()).map_err(Clone::clone),
                serde_json::Value::Null,
                Holder::of_lease(&current),
            )?;
            if let Ok(next) = &outcome {
                tx.put_lease(next)?;
            }
            Ok(outcome.into())
        }
    }

    /// Extends the holder's lease by `duration_ms` (clamped) from now. Renewing a live
    /// lease is exempt from the per-owner cap; renewing one that lapsed (unreclaimed) is a
    /// new live hold and is charged against the cap like an acquire.
    ///
    /// # Errors
    /// `WORK_FENCED` for a wrong token or superseded generation; `LEASE_CAP_REACHED` for a
    /// lapsed lease when its owner is at the cap.
    pub fn renew(
        &self,
        resource: &str,
        token: &str,
        generation: u64,
        duration_ms: f64,
    ) -> Result<Lease> {
        self.renew_then(resource, token, generation, duration_ms, |_, _, _| Ok(()))
    }

    /// [`Self::renew`], then `then(tx, before, after)` in the same transaction when the
    /// renewal was accepted: for what must move with the lease's expiry (a workflow
    /// instance parked until its lease can lapse).
    pub(crate) fn renew_then(
        &self,
        resource: &str,
        token: &str,
        generation: u64,
        duration_ms: f64,
        mut then: impl FnMut(&mut dyn Tx, &Lease, &Lease) -> Result<()>,
    ) -> Result<Lease> {
        let duration = rules::clamp_duration(duration_ms);
        let cap = self.owner_cap;
        let mut renew =
            Self::holder_write(resource, None, generation, WriteVerb::Renew, |l, now| {
                rules::renew(l, token, generation, duration, now)
            });
        self.write_logged(move |tx, now| {
            let before = tx.lease(resource)?;
            if let Some(current) = &before {
                let holder = rules::check_holder(current, token, generation).is_ok();
                if holder && !rules::renewal_is_cap_exempt(current, now) {
                    let held = tx.live_lease_count(&current.owner_id, now)?;
                    if held >= cap {
                        return Ok(Logged::Refused(Error::LeaseCap {
                            owner: current.owner_id.clone(),
                            held,
                            cap,
                        }));
                    }
                }
            }
            let renewed = renew(tx, now)?;
            if let (Some(before), Logged::Done(after)) = (&before, &renewed) {
                then(tx, before, after)?;
            }
            Ok(renewed)
        })
    }

    /// Releases the lease (dropping its checkpoint); the generation is kept.
    ///
    /// # Errors
    /// `WORK_FENCED` for a wrong token or superseded generation.
    pub fn release(
        &self,
        resource: &str,
        owner: &str,
        token: &str,
        generation: u64,
        idem: Keyed<'_>,
    ) -> Result<Lease> {
        self.keyed(
            owner,
            "release",
            idem.key,
            Self::holder_write(
                resource,
                Some(owner),
                generation,
                WriteVerb::Release,
                |l, now| rules::release(l, token, generation, now),
            ),
        )
    }

    /// Moves the lease atomically to `recipient` under a fresh generation.
    ///
    /// # Errors
    /// `WORK_FENCED`, `LEASE_CAP_REACHED` for the recipient.
    #[allow(clippy::too_many_arguments)] // the holder's proof, the recipient's, and the key
    pub fn handoff(
        &self,
        resource: &str,
        owner: &str,
        token: &str,
        generation: u64,
        recipient: &str,
        duration_ms: f64,
        idem: Keyed<'_>,
    ) -> Result<Lease> {
        check_id("recipient", recipient)?;
        let duration = rules::clamp_duration(duration_ms);
        let cap = self.owner_cap;
        self.keyed(owner, "handoff", idem.key, |tx, now| {
            // A self-handoff is refused before the cap is counted, so its answer names the
            // real reason (and, like a capped handoff, it leaves no write record).
            if let Some(current) = tx.lease(resource)? {
                let holder = rules::check_holder(&current, token, generation).is_ok();
                if holder && current.owner_id == recipient {
                    return Ok(Logged::Refused(Error::SelfHandoff {
                        resource: resource.into(),
                        owner: recipient.into(),
                    }));
                }
            }
            let held = tx.live_lease_count(recipient, now)?;
            if held >= cap {
                return Ok(Logged::Refused(Error::LeaseCap {
                    owner: recipient.into(),
                    held,
                    cap,
                }));
            }
            let new_token = self.ids.next_id("tok");
            let moved = Self::holder_write(
                resource,
                Some(owner),
                generation,
                WriteVerb::Handoff,
                |l, now| {
                    rules::handoff(
                        l,
                        token,
                        generation,
                        recipient,
                        new_token.clone(),
                        duration,
                        now,
                    )
                },
            )(tx, now)?;
            if let Logged::Done(lease) = &moved {
                let revision = tx.commit_revision()?;
                tx.add_grant(Grant {
                    revision,
                    resource_id: resource.into(),
                    generation: lease.generation,
                    owner_id: recipient.into(),
                    how: GrantKind::Handoff,
                    owner_compat: None,
                    item_compat: None,
                    at: now,
                    took_over: None,
                })?;
            }
            Ok(moved)
        })
    }

    /// Saves resume state under the holder's generation.
    ///
    /// # Errors
    /// `WORK_FENCED`.
    pub fn save_checkpoint(
        &self,
        resource: &str,
        owner: &str,
        token: &str,
        generation: u64,
        data: &str,
        idem: Keyed<'_>,
    ) -> Result<Lease> {
        self.keyed(
            owner,
            "checkpoint",
            idem.key,
            Self::holder_write(
                resource,
                Some(owner),
                generation,
                WriteVerb::Checkpoint,
                |l, now| rules::checkpoint(l, token, generation, data.to_owned(), now),
            ),
        )
    }

    /// The lease row for `resource`, live or not.
    ///
    /// # Errors
    /// A store failure.
    pub fn lease(&self, resource: &str) -> Result<Option<Lease>> {
        self.read(|tx| tx.lease(resource))
    }

    /// Whether `(token, generation)` is the current holder of `resource`.
    ///
    /// # Errors
    /// `WORK_FENCED` or `NOT_FOUND`.
    pub fn check_ownership(&self, resource: &str, token: &str, generation: u64) -> Result<()> {
        match self.lease(resource)? {
            Some(lease) => rules::check_holder(&lease, token, generation),
            None => Err(Error::NotFound {
                what: "lease".into(),
                id: resource.into(),
            }),
        }
    }

    /// Leases by resource id, one page.
    ///
    /// # Errors
    /// A store failure.
    pub fn list_leases(&self, page: &PageRequest) -> Result<Page<Lease>> {
        self.read(|tx| {
            Ok(super::reads::paged(tx.list_leases(page)?, page, |l| {
                l.resource_id.clone()
            }))
        })
    }
}
