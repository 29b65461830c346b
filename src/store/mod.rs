//! The work store: one API over every provider. [`Store`] holds the semantics — fencing,
//! claiming, dedup, schedules, cursors, revision, the checker's history — written once over
//! the [`backend::Tx`] seam, so a rule is enforced identically in memory, SQLite and
//! PostgreSQL, always inside the provider's write transaction.
//!
//! Layout: `backend.rs` (the seam), `leases.rs`, `work.rs`, `events.rs`, `schedules.rs`,
//! `fair_share.rs` (which items a claim batch takes), `reads.rs` (the dashboard's paged reads), `retention.rs` (what is trimmed, and when), `incidents.rs` (failovers and refused
//! writes by time) hold the operations; `counter.rs` names every incremental counter,
//! `logged.rs` the answer of a write whose refusal commits; `copy.rs` copies a whole
//! store into an empty one; `memory/` (with `work_table.rs`), `sqlite/` and `postgres/` are the providers;
//! `url.rs` opens a store from a URL. When the store itself fails: `epoch.rs` (store
//! epochs and generation floors), `chain.rs` (the chain over the history, which tells a
//! fork from the history a host saw), `witness.rs` (this host's record of a store, and the
//! one beside a SQLite file, against rewinds), `rewind.rs` (accepting one), `faults.rs` (a fault-injecting provider for
//! tests).

mod attempt_errors;
pub mod backend;
mod beyond_history;
pub mod capability;
pub mod chain;
pub mod copy;
mod counter;
pub mod create;
pub mod epoch;
mod events;
mod fair_share;
pub mod faults;
mod group_commit;
mod handler_control;
pub mod history_order;
mod host_check;
pub use host_check::HostCheck;
mod idle_probe;
mod incidents;
mod intake;
mod leases;
mod logged;
pub mod memory;
mod ordered;
mod per_owner;
#[cfg(feature = "postgres")]
pub mod postgres;
mod reads;
mod registry;
mod release;
pub mod retention;
pub mod revision_floor;
pub mod rewind;
mod schedule_control;
mod schedules;
pub mod server_record;
pub mod stall;
mod triage;
mod work_table;
// Parts of the shared SQL layer (a lost connection) only the PostgreSQL provider uses.
#[cfg_attr(not(feature = "postgres"), allow(dead_code))]
mod sql;
pub mod sqlite;
#[cfg(test)]
mod unknown_values;
pub mod url;
pub mod witness;
mod work;
mod work_facets;

use std::sync::{Arc, OnceLock};

pub use crate::model::HandlerKeys;
pub use backend::{
    Backend, CommitFeed, ConnectionServer, RoundTrips, ServerIdentity, StoreKind, Tx, WriteReads,
};
pub use capability::Capability;
pub use counter::Counter;
pub use events::Ingested;
pub use fair_share::ClaimBudget;
pub use handler_control::HandlerControlled;
pub(crate) use idle_probe::Probe;
pub use incidents::{Incidents, RefusedWrite};
pub use leases::Keyed;
pub use logged::Logged;
pub use ordered::WorkOrder;
pub use reads::Overview;
pub use registry::{FORGET_ACTION, Forgot, RESTART_ACTION, Restart};
pub(crate) use release::release_lease;
pub use release::{RELEASE_ACTION, Release, ReleasedClaim};
pub use retention::{RetentionPolicy, TrimReport};
pub use schedule_control::ScheduleControlled;
pub use schedules::DEFAULT_ON_TIME_MS as SCHEDULE_ON_TIME_MS;
pub use schedules::UPDATE_ACTION as SCHEDULE_UPDATE_ACTION;
pub(crate) use schedules::fire_due_in;
pub use triage::{BulkPage, Triaged};
pub use work::{Claim, Completion, Enqueued};
pub(crate) use work::{complete_in, completed_ids};

use crate::clock::{Clock, Millis};
use crate::error::{Error, Result};
use crate::ids::IdSource;
use crate::model::work::NewWork;
use crate::model::{AuditEntry, Holder, WriteRecord, WriteVerb};

/// How much durable history is kept. Old grants and writes beyond this many revisions are
/// trimmed (the checker reads what is kept); the journal keeps this many events.
pub const RETENTION: Retention = Retention {
    history_revisions: 1_000_000,
    journal_events: 100_000,
    trim_every: 4_096,
    incidents_ms: 24 * 60 * 60 * 1_000,
};

/// Bounds on the durable history, documented in the README.
#[derive(Debug, Clone, Copy)]
pub struct Retention {
    /// Grants and writes newer than this many revisions are kept.
    pub history_revisions: u64,
    /// Journal events kept (the oldest are dropped first).
    pub journal_events: i64,
    /// Trimming runs on commits whose revision is a multiple of this.
    pub trim_every: u64,
    /// Failovers and refused writes younger than this are kept whatever their revision:
    /// the widest window the incident lists can show.
    pub incidents_ms: Millis,
}

/// A handle on one work store. Cheap to clone; clones share the provider.
#[derive(Clone)]
pub struct Store {
    backend: Arc<dyn Backend>,
    clock: Arc<dyn Clock>,
    ids: Arc<dyn IdSource>,
    owner_cap: u64,
    /// Where each owner's claim rotation stands after its last batch through this handle
    /// and its clones: which kind and lane its next batch serves first (`fair_share.rs`).
    rotations: per_owner::PerOwner<fair_share::Rotation>,
    /// This host's record of the store, checked by every write (see `witness.rs`).
    witness: Option<Arc<witness::Witness>>,
    /// The record kept beside the store's files, checked by every write like `witness`.
    beside: Option<Arc<witness::Witness>>,
    /// Whether commits write their chain link (`chain.rs`); off only to measure its cost.
    chained: bool,
    /// The first sign that the store cannot be trusted (damaged, replaced, rewound); once
    /// set, every write through any clone is refused with it.
    untrusted: Arc<OnceLock<Error>>,
    /// The first refusal of this process by the store (`STORE_REFUSED`): writes still go
    /// to the store, which answers for itself, but a long-running caller learns that
    /// waiting will not help.
    refused: Arc<OnceLock<Error>>,
    /// Single-item enqueues from concurrent callers, committed together (`group_commit.rs`).
    enqueues: Arc<group_commit::GroupCommit<(NewWork, String), Result<work::Enqueued>>>,
    /// The first kept revision of the last trim `witness-beyond-history` was logged for
    /// (`beyond_history.rs`): each witness judges the same trim, and it is said once.
    beyond_said: Arc<std::sync::atomic::AtomicU64>,
    /// The revisions committed through this handle and its clones since the last
    /// [`Store::counting_own_commits`]: what an authority leaves out when it counts the
    /// writers that went before it (`authority/core/turns.rs`).
    commits_made: Arc<std::sync::atomic::AtomicU64>,
}

impl Store {
    /// A store over `backend`, reading time from `clock` and tokens from `ids`.
    pub fn new(backend: Arc<dyn Backend>, clock: Arc<dyn Clock>, ids: Arc<dyn IdSource>) -> Self {
        Self {
            backend,
            clock,
            ids,
            owner_cap: crate::rules::lease::DEFAULT_OWNER_CAP,
            rotations: per_owner::PerOwner::default(),
            witness: None,
            beside: None,
            chained: true,
            untrusted: Arc::new(OnceLock::new()),
            refused: Arc::new(OnceLock::new()),
            enqueues: Arc::default(),
            beyond_said: Arc::default(),
            commits_made: Arc::default(),
        }
    }

    /// The same store checked against this host's rewind witness on every write.
    #[must_use]
    pub fn with_witness(mut self, witness: witness::Witness) -> Self {
        self.witness = Some(Arc::new(witness));
        self
    }

    /// Removes what opening this store created where nothing was, after a copy into it
    /// failed ([`Backend::discard_created`]): an existing store is never touched.
    ///
    /// # Errors
    /// A store failure.
    pub fn discard_created(&self) -> Result<()> {
        self.backend.discard_created()
    }

    /// How many revisions were committed through this handle and its clones.
    pub(crate) fn commits_made(&self) -> u64 {
        self.commits_made.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The same store, counting the commits made through it (and its clones) apart from
    /// those of the handle it came from. Each authority takes one: authorities of one
    /// process are given clones of one handle, and counting together they took each
    /// other's commits for their own, so none of them saw the others ahead of it.
    #[must_use]
    pub(crate) fn counting_own_commits(&self) -> Self {
        Self {
            commits_made: Arc::default(),
            ..self.clone()
        }
    }

    /// The witness this handle writes under, if any.
    pub fn witness(&self) -> Option<&witness::Witness> {
        self.witness.as_deref()
    }

    /// The same store checked on every write against the record beside its files, where
    /// the provider keeps one (see [`witness::Witness::beside`]).
    ///
    /// # Errors
    /// `STORE_REWOUND` when the store is behind that record or forked from it; an
    /// unusable record.
    pub fn with_witness_beside(mut self) -> Result<Self> {
        self.beside = match witness::Witness::beside(&self)? {
            Some(w) => Some(Arc::new(witness::Witness::judged(w, &self)?)),
            None => None,
        };
        Ok(self)
    }

    /// [`Self::with_witness_beside`] without judging the store first (`store
    /// accept-rewind`, which then brings the record to the store).
    ///
    /// # Errors
    /// An unusable record, or a store failure.
    pub fn with_witness_beside_unjudged(mut self) -> Result<Self> {
        self.beside = witness::Witness::beside(&self)?.map(Arc::new);
        Ok(self)
    }

    /// The record beside the store's files this handle writes under, if any.
    pub fn witness_beside(&self) -> Option<&witness::Witness> {
        self.beside.as_deref()
    }

    /// Every witness this handle checks and advances.
    pub(crate) fn witnesses(&self) -> impl Iterator<Item = &witness::Witness> {
        self.witness.iter().chain(&self.beside).map(AsRef::as_ref)
    }

    /// The same store without the chain: commits write no link and no rewind witness is
    /// checked, as stores were written before the chain. For `leasehold bench` alone, to
    /// measure what the chain and its witnesses cost; a store written so fails `check`.
    #[doc(hidden)]
    #[must_use]
    pub fn without_chain(mut self) -> Self {
        self.chained = false;
        self.witness = None;
        self.beside = None;
        self
    }

    /// Why this store can no longer be trusted, if a store call found out (`STORE_CORRUPT`,
    /// `STORE_REWOUND`): writers stop rather than write into it.
    pub fn untrusted(&self) -> Option<Error> {
        self.untrusted.get().cloned()
    }

    /// Checks the whole store for damage an open does not look for ([`Backend::verify`]:
    /// SQLite's `quick_check` of every page, which reads the whole file) and answers what
    /// was checked. Damage found is kept as [`Store::untrusted`].
    ///
    /// # Errors
    /// `STORE_CORRUPT` on damage, or a store failure.
    pub fn verify(&self) -> Result<String> {
        self.verify_through(self)
    }

    /// [`Store::verify`] run through `checker`, this store opened once more: a SQLite handle
    /// serves one call at a time, so a long check through its own connection would hold
    /// up every claim. Damage found is kept as this handle's [`Store::untrusted`], so every
    /// later write through any of its clones is refused with it (a running authority
    /// stops).
    ///
    /// # Errors
    /// As [`Store::verify`].
    pub fn verify_through(&self, checker: &Store) -> Result<String> {
        self.note(checker.backend.verify())
    }

    /// This process's wish to check the store, made now (when it starts), for
    /// [`Store::verify_once_per_host`]: shared on this host where the check reads the whole
    /// store (SQLite).
    #[must_use]
    pub fn host_check(&self) -> HostCheck {
        let shared = self.backend.kind() == StoreKind::Sqlite;
        HostCheck::asked(shared.then(|| self.host_check_file()))
    }

    /// [`Store::verify_through`] a checker `open` answers, once per host at a time
    /// (`store/host_check.rs`): when another process on this host finished a clean check
    /// of the same store since `asked` was made (it waits for one in progress), its verdict
    /// is taken instead of reading the whole store again. Answers what was checked, or
    /// whose check was taken.
    ///
    /// # Errors
    /// As [`Store::verify`], or whatever `open` returns.
    pub fn verify_once_per_host(
        &self,
        asked: HostCheck,
        open: impl FnOnce() -> Result<Store>,
    ) -> Result<String> {
        asked.run(|| self.verify_through(&open()?))
    }

    /// Where this host's processes take turns at checking this store, and keep the last
    /// clean verdict ([`Store::verify_once_per_host`]): a file in the system's temporary
    /// directory named after the store's identity.
    #[must_use]
    pub fn host_check_file(&self) -> std::path::PathBuf {
        host_check::lock_path(&std::env::temp_dir(), &self.backend.identity())
    }

    /// Whether a store call through this handle or a clone was refused for good
    /// (`STORE_REFUSED`: credentials, permissions, a certificate): the first such refusal.
    pub fn refused(&self) -> Option<Error> {
        self.refused.get().cloned()
    }

    /// Remembers `result`'s error if it says the store cannot be trusted or refuses us.
    fn note<T>(&self, result: Result<T>) -> Result<T> {
        match &result {
            Err(e) if e.is_untrusted_store() => drop(self.untrusted.set(e.clone())),
            Err(e @ Error::Refused(_)) => drop(self.refused.set(e.clone())),
            _ => {}
        }
        result
    }

    /// The same store with another live-lease cap per owner.
    #[must_use]
    pub fn with_owner_cap(mut self, cap: u64) -> Self {
        self.owner_cap = cap;
        self
    }

    /// The same store seen through another clock (the cluster gives each authority its own,
    /// possibly skewed, clock over one shared provider).
    #[must_use]
    pub fn with_clock(&self, clock: Arc<dyn Clock>) -> Self {
        Self {
            clock,
            ..self.clone()
        }
    }

    pub fn kind(&self) -> StoreKind {
        self.backend.kind()
    }

    /// The server's write-ahead log position in bytes, where the provider has a server
    /// ([`Backend::wal_position`]).
    #[must_use]
    pub fn wal_position(&self) -> Option<u64> {
        self.backend.wal_position()
    }

    /// The round trips this handle's committed writes took, where a statement is one
    /// ([`Backend::write_round_trips`]).
    #[must_use]
    pub fn write_round_trips(&self) -> Option<RoundTrips> {
        self.backend.write_round_trips()
    }

    /// Where this store is, without secrets.
    pub fn describe(&self) -> String {
        self.backend.describe()
    }

    /// Writes of any process waiting on the store's write lock right now, longest first,
    /// as far as the provider can tell (`store/stall.rs`).
    ///
    /// # Errors
    /// A store failure.
    pub fn write_stalls(&self) -> Result<Vec<stall::ProcessStall>> {
        self.backend.write_stalls()
    }

    /// What this provider guarantees (docs/ARCHITECTURE.md#stores): every shipped provider
    /// keeps the whole [`capability::WORK_MODEL`]; they differ in durability and reach.
    pub fn capabilities(&self) -> Vec<Capability> {
        self.backend.capabilities()
    }

    /// Fails explicitly when a capability is missing: never a silent single-node fallback.
    ///
    /// # Errors
    /// `CapabilityMissing`, naming the first missing one.
    pub fn require(&self, needed: &[Capability]) -> Result<()> {
        let have = self.capabilities();
        match needed.iter().find(|c| !have.contains(c)) {
            None => Ok(()),
            Some(missing) => Err(Error::CapabilityMissing {
                provider: self.kind().as_str().into(),
                capability: missing.as_str().into(),
            }),
        }
    }

    pub fn physical_durability(&self) -> bool {
        self.backend.physical_durability()
    }

    pub fn now(&self) -> Millis {
        self.clock.now()
    }

    pub fn clock(&self) -> &Arc<dyn Clock> {
        &self.clock
    }

    pub fn ids(&self) -> &Arc<dyn IdSource> {
        &self.ids
    }

    /// Sizes the provider for this many concurrent calls; see [`Backend::fit_concurrency`].
    pub fn fit_concurrency(&self, callers: usize) {
        self.backend.fit_concurrency(callers);
    }

    /// A cheap token that changes when anything committed; see [`Backend::change_token`].
    ///
    /// # Errors
    /// A store failure.
    pub fn change_token(&self) -> Result<u64> {
        self.backend.change_token()
    }

    /// Commits pushed as they happen, where the provider pushes them (PostgreSQL).
    ///
    /// # Errors
    /// The provider pushes but the feed could not be opened.
    pub fn commit_feed(&self) -> Result<Option<Box<dyn CommitFeed>>> {
        self.backend.commit_feed()
    }

    /// Runs `f` in a write transaction at one instant and returns its value.
    ///
    /// The instant is read once the transaction holds the store's write lock, each time
    /// the transaction starts: a call that queued for the lock behind other writers (or a
    /// stalled one) decides and grants at the time it actually writes, so a lease it grants
    /// never reaches its caller already expired by the wait.
    ///
    /// # Errors
    /// Whatever `f` returns, or a store failure.
    pub(crate) fn write<T>(&self, f: impl FnMut(&mut dyn Tx, Millis) -> Result<T>) -> Result<T> {
        self.write_as(false, &[], f)
    }

    /// Like [`Self::write`], for a write that reads the work items `ids` first (a batch
    /// of completions): a provider whose statements are round trips reads them with the
    /// write lock ([`Backend::write_reading`]).
    ///
    /// # Errors
    /// As [`Self::write`].
    pub(crate) fn write_reading<T>(
        &self,
        ids: &[&str],
        f: impl FnMut(&mut dyn Tx, Millis) -> Result<T>,
    ) -> Result<T> {
        self.write_as(false, ids, f)
    }

    /// Like [`Self::write_reading`], for a write that keeps what a process holds alive
    /// (renewals, heartbeats): it goes ahead of the host's queued writers where the
    /// provider queues them ([`Backend::write_urgent`]).
    ///
    /// # Errors
    /// As [`Self::write`].
    pub(crate) fn write_urgent<T>(
        &self,
        ids: &[&str],
        f: impl FnMut(&mut dyn Tx, Millis) -> Result<T>,
    ) -> Result<T> {
        self.write_as(true, ids, f)
    }

    fn write_as<T>(
        &self,
        urgent: bool,
        ids: &[&str],
        mut f: impl FnMut(&mut dyn Tx, Millis) -> Result<T>,
    ) -> Result<T> {
        if let Some(e) = self.untrusted() {
            return Err(e);
        }
        let mut out = None;
        let mut committed = None;
        let mut milestone = None;
        let mut advanced = false;
        let mut run = |tx: &mut dyn Tx| {
            let mut witnesses = self.witnesses().peekable();
            if witnesses.peek().is_some() {
                // Read once, judged by each: the host's record and the one beside the store.
                let now = witness::Seen::read(tx)?;
                for w in witnesses {
                    if let Some(beyond) = w.check(tx, now)? {
                        self.say_beyond_history(&beyond);
                    }
                }
            }
            let before = tx.revision()?;
            let now = self.clock.now();
            out = Some(f(tx, now)?);
            server_record::note(tx, now, before)?;
            committed = self.chain(tx, before)?;
            advanced = committed.is_some() || tx.revision()? > before;
            milestone = match &committed {
                Some(l) if self.witnesses().any(|w| w.crosses_milestone(l.revision)) => {
                    witness::Milestone::read(tx, l.revision)?
                }
                _ => None,
            };
            Ok(())
        };
        let links: Vec<u64> = self
            .witnesses()
            .filter_map(witness::Witness::seen)
            .filter(|seen| seen.link.is_some())
            .map(|seen| seen.revision)
            .collect();
        let reads = WriteReads {
            items: ids,
            links: &links,
        };
        self.note(self.backend.write_reading(urgent, reads, &mut run))?;
        if advanced {
            self.commits_made
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
        if let Some(link) = &committed {
            self.witnesses().for_each(|w| w.committed(link, milestone));
        }
        out.ok_or_else(|| {
            Error::OutcomeUnknown("the transaction committed without an answer".into())
        })
    }

    /// Writes the link of the revision `tx` committed, if any (see `chain.rs`).
    pub(crate) fn chain(
        &self,
        tx: &mut dyn Tx,
        before: u64,
    ) -> Result<Option<crate::model::ChainLink>> {
        if self.chained {
            chain::extend(tx, before, self.ids.as_ref())
        } else {
            Ok(None)
        }
    }

    /// Like [`Self::write`], but a refusal inside ([`Logged::Refused`]) still commits what
    /// was written before it — the refused-write record the checker and dashboard read —
    /// and is then the answer.
    ///
    /// # Errors
    /// The refusal, or whatever `f` fails with (then nothing commits), or a store failure.
    pub(crate) fn write_logged<T>(
        &self,
        f: impl FnMut(&mut dyn Tx, Millis) -> Result<Logged<T>>,
    ) -> Result<T> {
        self.write(f)?.into_result()
    }

    /// Runs `f` in a read snapshot.
    ///
    /// # Errors
    /// Whatever `f` returns, or a store failure.
    pub(crate) fn read<T>(&self, mut f: impl FnMut(&mut dyn Tx) -> Result<T>) -> Result<T> {
        let mut out = None;
        self.note(self.backend.read(&mut |tx| {
            out = Some(f(tx)?);
            Ok(())
        }))?;
        out.ok_or_else(|| Error::OutcomeUnknown("the read returned no answer".into()))
    }
}

/// Records one operator action in the audit log (the transaction's revision committed),
/// `reason` appended to the outcome when one was given.
pub(crate) fn record_audit(
    tx: &mut dyn Tx,
    now: Millis,
    actor: &str,
    action: &str,
    target: &str,
    outcome: &str,
    reason: &str,
) -> Result<()> {
    tx.commit_revision()?;
    tx.add_audit(&AuditEntry {
        id: 0,
        at: now,
        actor: actor.into(),
        action: action.into(),
        target: target.into(),
        outcome: crate::model::history::with_reason(outcome.to_owned(), reason),
    })
}

/// Records one fenced write attempt (accepted or refused) at this transaction's revision,
/// with `holder`, who held the resource as the attempt was judged.
#[allow(clippy::too_many_arguments)] // one argument per field of the record
pub(crate) fn record_write(
    tx: &mut dyn Tx,
    now: Millis,
    resource: &str,
    owner: &str,
    generation: u64,
    verb: WriteVerb,
    outcome: &Result<()>,
    detail: impl serde::Serialize,
    holder: Holder,
) -> Result<()> {
    let detail = serde_json::to_string(&detail).map_err(|e| Error::Invalid(e.to_string()))?;
    let revision = tx.commit_revision()?;
    tx.add_write(WriteRecord {
        revision,
        resource_id: resource.to_owned(),
        generation,
        owner_id: owner.to_owned(),
        verb,
        accepted: outcome.is_ok(),
        refusal: outcome.as_ref().err().map(|e| e.code().to_owned()),
        detail,
        at: now,
        holder: Some(holder),
    })?;
    Counter::Writes {
        accepted: outcome.is_ok(),
    }
    .adjust(tx, 1)?;
    if revision % RETENTION.trim_every == 0 {
        let keep_from = revision.saturating_sub(RETENTION.history_revisions);
        tx.trim_history(keep_from, now.saturating_sub(RETENTION.incidents_ms))?;
        tx.trim_links(keep_from)?;
        if keep_from > 0 {
            tx.set_meta_value(
                retention::HISTORY_FROM,
                i64::try_from(keep_from).unwrap_or(i64::MAX),
            )?;
        }
    }
    Ok(())
}
