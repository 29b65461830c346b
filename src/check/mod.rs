//! # The invariant checker
//!
//! Reads a store's durable history and reports every violation of the release invariants
//! (docs/ARCHITECTURE.md#checker). The demo cluster runs it at the end of a scenario and `leasehold
//! check` runs the same code against a real store.
//!
//! ## What it reads
//! - the **ownership history**: every grant (acquire, claim, handoff) and every fenced write
//!   (accepted or refused), in store-revision order — a total order that depends on nobody's
//!   clock. Grants and writes are merged into one stream; at one revision the writes are
//!   applied before the grants, so "a grant at a revision *before* the write" is exact;
//! - the **work items** (ids, kinds, compat digests, due instants), the **journal**, the
//!   **authorities** (which builds are live) and the **workflow instances** with their
//!   per-instance history and action outcome records.
//!
//! Everything is read in pages ([`CheckOptions::page_size`], 10 000 by default), each page
//! in its own read transaction, and only compact per-resource state is kept between pages
//! (highest grant, first terminal write, the effect's ids when they are not the item's own
//! id, the cursor high-water mark), keyed by a 128-bit digest of the resource id; owner ids
//! are interned. History is bounded at the revision the check started at, so commits that
//! land while it runs are not half-read.
//!
//! Memory is bounded whatever the store's size: one pass keeps state for at most
//! [`CheckOptions::resources_per_pass`] resources, counting only those its history names
//! (the items are streamed past). A store with more (its counts of items and of history
//! records tell before the first read; a pass that meets more than it may keep gives up
//! and splits) is checked in several passes, each over the resources whose digest falls
//! in one share, reading the whole history but keeping only its share. Every history rule reads one
//! resource's records, so the passes together find what one pass would; the items are read
//! with the pass of their share.
//!
//! ## The invariants, one function each
//! Each family lives in its own file; each invariant is one function over one record and
//! that compact state. The stable codes are in [`codes`]:
//!
//! | # | Invariant | Codes | File |
//! |---|---|---|---|
//! | 1 | no two owners of one `(resourceId, generation)` | `two-owners-one-generation`, `generation-not-increasing` | `check/ownership.rs` |
//! | 2 | no accepted write from a superseded generation | `superseded-write-accepted` | `check/ownership.rs` |
//! | 3 | one firing per schedule instant | `schedule-fired-twice`, `schedule-firing-id-malformed`, `schedule-firing-duplicated` | `check/schedules.rs` |
//! | 4 | no duplicate semantic event | `duplicate-semantic-event` | `check/events.rs` |
//! | 5 | one `logicalEffectId` per effect across retries | `logical-effect-id-changed`, `terminal-write-twice` | `check/effects.rs` |
//! | 6 | no stranded work once authorities are healthy | `stranded-work` | `check/stranded.rs` |
//! | 7 | no incompatible execution | `incompatible-execution` | `check/compat.rs` |
//! | 8 | monotone cursors, no stale cursor owner | `cursor-not-monotone`, `stale-cursor-write` | `check/cursors.rs` |
//! | 9 | workflow histories | `instance-revision-not-monotone`, `activation-resolved-twice`, `entry-after-terminal`, `action-outcome-missing`, `action-outcome-conflict` | `check/workflows.rs` |
//! | 10 | no stranded workflow instance while a live authority of its build exists | `stranded-instance` | `check/stranded_instances.rs` |
//! | 11 | no event wait older than the retained journal | `wait-past-retention` | `check/waits.rs` |
//! | 12 | one work item per idempotency key | `idempotency-key-shared` | `check/keys.rs` |
//!
//! Invariants 10 and 11 read only the non-terminal instances (`check/instances.rs`).
//!
//! ## Retention caveat
//! The history is bounded ([`crate::store::RETENTION`]): grants and writes older than
//! `history_revisions` revisions are trimmed (the store marks the first revision kept
//! whole, `history_from` in `meta`), and the journal keeps the newest `journal_events`
//! events. The check reads the history from that mark on — never the older failovers and
//! refused writes kept for the incident lists alone — and says which range it checked
//! ([`Report::history_from`] to [`Report::through_revision`]). A violation whose
//! evidence was trimmed is invisible — for example a superseded write is only caught while
//! the grant that superseded it is still kept, and a cursor's monotonicity is checked from
//! the oldest cursor write kept. Succeeded work items and finished instances (with their histories
//! and outcome records) go when retention trims them (`store/retention.rs`); the rules over
//! items and instances read what is kept. A clean report therefore means "no violation in
//! the kept window", never "no violation ever".
//!
//! Item, instance and authority rows are read after the history stream, in later
//! snapshots; the checks over them only use facts that do not change once written (ids,
//! logical effect ids, compat digests) or that are judged at [`CheckOptions::now`].

mod attempts;
mod compat;
mod cursors;
mod effects;
mod events;
mod gaps;
mod history;
mod instances;
mod keys;
mod ownership;
mod render;
mod schedules;
mod stranded;
mod stranded_instances;
mod unjudged;
mod waits;
mod workflows;

use serde::{Deserialize, Serialize};

pub use attempts::unfinished_attempts;
pub use gaps::history_start;
pub use render::{render_json_lines, render_text};
pub use unjudged::{server_changed, witness_beyond_history};

use crate::clock::Millis;
use crate::error::Result;
use crate::store::Store;
use crate::store::chain::{ChainBreak, ChainReport};
use crate::store::revision_floor::Lowered;

/// The stable kebab-case code of every invariant violation the checker reports. Tests,
/// the CLI and the dashboard match on these, never on sentences.
pub mod codes {
    /// One `(resourceId, generation)` was granted to two owners, or an accepted write was
    /// made under a generation by someone other than its grantee.
    /// Ids: `[resource, firstOwner, secondOwner]`.
    pub const TWO_OWNERS_ONE_GENERATION: &str = "two-owners-one-generation";
    /// A grant did not mint a generation strictly greater than every earlier one (same
    /// owner, or an older generation nobody else held). Ids: `[resource, owner]`.
    pub const GENERATION_NOT_INCREASING: &str = "generation-not-increasing";
    /// A completion / retry / lease write was accepted under a generation older than one
    /// already granted. Ids: `[resource, staleWriter, newerGrantee]`.
    pub const SUPERSEDED_WRITE_ACCEPTED: &str = "superseded-write-accepted";
    /// The holder of a work item's current claim was refused (fenced, or told the item had
    /// ended) although nobody took the item over and neither it nor an operator ended the
    /// claim: expiry alone fenced it. Ids: `[workId, owner]`.
    pub const FENCED_WITHOUT_TAKEOVER: &str = "fenced-without-takeover";
    /// One schedule firing id got two accepted completions. Ids: `[firingId, owner, owner]`.
    pub const SCHEDULE_FIRED_TWICE: &str = "schedule-fired-twice";
    /// A schedule-kind item whose id is not the derived `"<scheduleId>@<dueInstant>"`.
    /// Ids: `[itemId]`.
    pub const SCHEDULE_FIRING_ID_MALFORMED: &str = "schedule-firing-id-malformed";
    /// Two items for one `(scheduleId, dueInstant)`. Ids: `[firstId, secondId]`.
    pub const SCHEDULE_FIRING_DUPLICATED: &str = "schedule-firing-duplicated";
    /// Two journal events with one `(source, externalEventId)`. Ids: `[source, externalId]`.
    pub const DUPLICATE_SEMANTIC_EVENT: &str = "duplicate-semantic-event";
    /// One work item carried two `logicalEffectId` / `idempotencyKey` values.
    /// Ids: `[workId, firstLogicalEffectId, laterLogicalEffectId]`.
    pub const LOGICAL_EFFECT_ID_CHANGED: &str = "logical-effect-id-changed";
    /// One work item got two accepted terminal writes. Ids: `[workId, owner, owner]`.
    pub const TERMINAL_WRITE_TWICE: &str = "terminal-write-twice";
    /// A compatible item has been due longer than the bound while a live authority of its
    /// build existed. Ids: `[workId]`.
    pub const STRANDED_WORK: &str = "stranded-work";
    /// A claim was granted to an authority whose compat digest differs from the item's.
    /// Ids: `[workId, owner]`.
    pub const INCOMPATIBLE_EXECUTION: &str = "incompatible-execution";
    /// An accepted cursor write did not move the cursor strictly forward.
    /// Ids: `[subscriptionId, cursorWorkId]`.
    pub const CURSOR_NOT_MONOTONE: &str = "cursor-not-monotone";
    /// An accepted cursor write from a superseded generation.
    /// Ids: `[subscriptionId, staleWriter, newerGrantee]`.
    pub const STALE_CURSOR_WRITE: &str = "stale-cursor-write";
    /// An instance's history went back in `instanceRevision` (or past the row's).
    /// Ids: `[instanceId]`.
    pub const INSTANCE_REVISION_NOT_MONOTONE: &str = "instance-revision-not-monotone";
    /// One activation got two logical transitions (succeeded / failed / matched / fired).
    /// Ids: `[instanceId, activationId]`.
    pub const ACTIVATION_RESOLVED_TWICE: &str = "activation-resolved-twice";
    /// A history entry after `completed` / `failed` / `cancelled`. Ids: `[instanceId]`.
    pub const ENTRY_AFTER_TERMINAL: &str = "entry-after-terminal";
    /// A succeeded action step without its durable outcome record.
    /// Ids: `[instanceId, invocationId]`.
    pub const ACTION_OUTCOME_MISSING: &str = "action-outcome-missing";
    /// An action's outcome record disagrees with the history's resolution of it.
    /// Ids: `[instanceId, invocationId]`.
    pub const ACTION_OUTCOME_CONFLICT: &str = "action-outcome-conflict";
    /// A non-terminal workflow instance has been due (action, retry, timer, timeout or a
    /// lapsed claim) longer than the bound while a live authority of its build existed.
    /// Ids: `[instanceId]`.
    pub const STRANDED_INSTANCE: &str = "stranded-instance";
    /// A waiting instance's `sinceEventSeq` is below the journal's trimmed part, so the
    /// event it waits for may have been trimmed. Ids: `[instanceId]`.
    pub const WAIT_PAST_RETENTION: &str = "wait-past-retention";
    /// Two work items hold one idempotency key (a store an older build wrote).
    /// Ids: `[key, firstId, secondId]`.
    pub const IDEMPOTENCY_KEY_SHARED: &str = "idempotency-key-shared";

    /// Every code, in invariant order.
    pub const ALL: [&str; 21] = [
        TWO_OWNERS_ONE_GENERATION,
        GENERATION_NOT_INCREASING,
        SUPERSEDED_WRITE_ACCEPTED,
        SCHEDULE_FIRED_TWICE,
        SCHEDULE_FIRING_ID_MALFORMED,
        SCHEDULE_FIRING_DUPLICATED,
        DUPLICATE_SEMANTIC_EVENT,
        LOGICAL_EFFECT_ID_CHANGED,
        TERMINAL_WRITE_TWICE,
        STRANDED_WORK,
        INCOMPATIBLE_EXECUTION,
        CURSOR_NOT_MONOTONE,
        STALE_CURSOR_WRITE,
        INSTANCE_REVISION_NOT_MONOTONE,
        ACTIVATION_RESOLVED_TWICE,
        ENTRY_AFTER_TERMINAL,
        ACTION_OUTCOME_MISSING,
        ACTION_OUTCOME_CONFLICT,
        STRANDED_INSTANCE,
        WAIT_PAST_RETENTION,
        IDEMPOTENCY_KEY_SHARED,
    ];
}

/// The stable codes of what the checker could not see: records missing from the history
/// it covers, and attempts an execution log shows started with no end.
pub mod gap_codes {
    /// A grant or an accepted write's grant is missing inside the covered revisions: the
    /// history is incomplete there. Ids: `[resource, owner]`.
    pub const HISTORY_GAP: &str = "history-gap";
    /// An execution log shows an attempt started and never ended (its process was killed,
    /// or its handler outlived a shutdown). Ids: `[workId, owner, attempt]`.
    pub const ATTEMPT_WITHOUT_END: &str = "attempt-without-end";
    /// The store was written on one database server and then on another (another system
    /// identifier: restored or copied into another cluster; another timeline: a failover
    /// or a point-in-time restore), or another server answers for it now: whether commits
    /// were lost in the change cannot be told from the store. A warning (exit 0) until an
    /// operator acknowledges the change (`leasehold store acknowledge-server-change`).
    /// Ids: `[was, is, lastRevisionOnTheOldServer]`.
    pub const SERVER_CHANGED: &str = "server-changed";
    /// This host's rewind witness saw a revision the store keeps no history for any more
    /// (retention trimmed past it): what the kept milestone and counts allow was compared,
    /// a fork after the milestone cannot be. A warning (exit 0).
    /// Ids: `[witnessedRevision, oldestKeptRevision]`.
    pub const WITNESS_BEYOND_HISTORY: &str = "witness-beyond-history";
}

/// The stable codes of damage to the store itself: no rule can be judged over a store
/// that lost part of its history or its order, so these are reported as what they are.
pub mod damage_codes {
    /// The store's revision is below the highest revision its own grants and writes carry:
    /// the revision was lowered. The rules are not checked (they would read the history
    /// only up to the lowered revision). Ids: `[storeRevision, historyRevision]`.
    pub const REVISION_LOWERED: &str = "revision-lowered";
    /// The store is behind what this host's rewind witness saw (or another store, or of an
    /// older epoch): the writers on this host refuse it (`STORE_REWOUND`).
    /// Ids: `[witnessedRevision, storeRevision]`.
    pub const STORE_REWOUND: &str = "store-rewound";
    /// The store is at or past the revision this host's rewind witness saw, but its
    /// history is not the one the witness saw there (another history written over an
    /// older copy): the writers on this host refuse it (`STORE_REWOUND`).
    /// Ids: `[witnessedRevision, storeRevision]`.
    pub const STORE_FORKED: &str = "store-forked";
    /// A kept chain link does not recompute from its predecessor and the grants and
    /// writes stamped with its revision: the history (or the link) was edited.
    /// Ids: `[revision]`.
    pub const HISTORY_EDITED: &str = "history-edited";
    /// Revisions between the first kept chain link and the store's revision have no link:
    /// history was removed or cut off. Ids: `[firstRevision, lastRevision]`.
    pub const HISTORY_TRUNCATED: &str = "history-truncated";
    /// A grant or write record is stored after a record of a higher revision (see
    /// [`history_order`](crate::store::history_order)): ranges of revisions read by
    /// position would skip or repeat records, so nothing else is checked.
    /// Ids: `[table, position, revision, previousRevision]`.
    pub const HISTORY_OUT_OF_ORDER: &str = "history-out-of-order";
}

/// How to judge the time-dependent invariants, and how big a page to read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CheckOptions {
    /// The instant "now" for stranded work and instances, and authority liveness.
    pub now: Millis,
    /// A compatible item or workflow instance due for longer than this (while a live
    /// authority of its build existed) is stranded.
    pub stranded_after_ms: Millis,
    /// Rows read per page (history, items, journal); instances are read a tenth as many
    /// at a time, each with its history.
    pub page_size: usize,
    /// Resources (work items, leases, instances) one pass over the history keeps state
    /// for; a store with more is checked in several passes over disjoint shares of them,
    /// so memory stays bounded (about 150 bytes a resource) whatever the store's size.
    #[serde(default = "default_resources_per_pass")]
    pub resources_per_pass: usize,
}

/// What one pass keeps at most by default: a hash table of at most 2¹⁹ slots of some 145
/// bytes (76 MB, and half that again while it grows), which with a page of records and
/// SQLite's cache keeps a check under 200 MB.
const RESOURCES_PER_PASS: usize = 400_000;

fn default_resources_per_pass() -> usize {
    RESOURCES_PER_PASS
}

impl CheckOptions {
    /// Defaults (stranded after 60 s) at `now`. Each authority's liveness is judged by its
    /// own registered timing ([`crate::rules::liveness`]).
    #[must_use]
    pub fn at(now: Millis) -> Self {
        Self {
            now,
            stranded_after_ms: 60_000,
            page_size: 10_000,
            resources_per_pass: RESOURCES_PER_PASS,
        }
    }
}

/// One broken invariant, for people and for machines.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Violation {
    /// Stable kebab-case code from [`codes`].
    pub invariant: &'static str,
    /// The ids involved (resource, owners, instance…), in the order [`codes`] documents.
    pub ids: Vec<String>,
    /// One sentence a person can read.
    pub sentence: String,
}

/// How much the checker read.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Counts {
    pub grants: u64,
    pub writes: u64,
    pub items: u64,
    pub journal_events: u64,
    pub instances: u64,
    pub history_entries: u64,
}

/// What a check found.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    pub violations: Vec<Violation>,
    pub checked: Counts,
    /// Non-terminal items whose compat digest no live authority has, though one has their
    /// handler (at another version): *incompatible*, not stranded — they wait for a
    /// compatible build (never auto-failed).
    pub incompatible_items: u64,
    /// Non-terminal items whose handler no live authority has at all: *no handler*, as
    /// `inspect` says, not stranded — they wait for an authority that runs it.
    pub no_handler_items: u64,
    /// Non-terminal items claimable for longer than the stranded bound while live
    /// authorities kept claiming their build's work within it: a backlog, not a strand.
    pub backlogged_items: u64,
    /// Running and waiting workflow instances overdue past the bound while the live
    /// authorities that may run them kept claiming instances within it.
    pub backlogged_instances: u64,
    /// The store revision the history was read up to.
    pub through_revision: u64,
    /// The first revision the history must hold in full ([`history_start`]): the checked
    /// range is `history_from..=through_revision`, and a record missing inside it is a gap.
    pub history_from: u64,
    /// Records missing from the checked range ([`gap_codes::HISTORY_GAP`]) and attempts
    /// started with no end ([`gap_codes::ATTEMPT_WITHOUT_END`], from execution logs).
    pub gaps: Vec<Violation>,
    /// The oldest grant or write revision read (the start of the visible window).
    pub oldest_revision: Option<u64>,
    /// True when the store is past the retention bound, so older history may be gone.
    pub history_may_be_trimmed: bool,
    /// The store epoch (`store/epoch.rs`): above 0, a rewind was accepted, and history
    /// the rewind lost is not in the store.
    pub store_epoch: u64,
    /// Intake requests (`store/intake.rs`) not yet moved into work, and those the move
    /// refused: no item and no history exists for them yet, so no rule reads them.
    pub intake: crate::model::IntakeCounts,
    /// Damage to the store itself ([`damage_codes`]): a lowered revision (then nothing
    /// else was checked), a store this host saw further along.
    pub damage: Vec<Violation>,
}

impl Report {
    /// No violation found, over a sound store's history with nothing missing. An attempt cut off with no
    /// end is a trace of a crash, not a broken promise: it is reported, not failed on.
    #[must_use]
    pub fn is_clean(&self) -> bool {
        self.violations.is_empty() && self.history_gaps() == 0 && self.damage.is_empty()
    }

    /// Why nothing past the damage was checked, when the history itself cannot be read in
    /// order: a lowered revision, or records stored out of order.
    #[must_use]
    pub fn unread_history(&self) -> Option<&'static str> {
        self.damage.iter().find_map(|d| match d.invariant {
            damage_codes::REVISION_LOWERED => {
                Some("the history cannot be read in order up to a lowered revision")
            }
            damage_codes::HISTORY_OUT_OF_ORDER => {
                Some("the history cannot be read in order of its revisions")
            }
            _ => None,
        })
    }

    /// How many records are missing from the checked range.
    #[must_use]
    pub fn history_gaps(&self) -> usize {
        self.gaps
            .iter()
            .filter(|g| g.invariant == gap_codes::HISTORY_GAP)
            .count()
    }

    /// How many findings could not be judged from the store ([`gap_codes::SERVER_CHANGED`],
    /// [`gap_codes::WITNESS_BEYOND_HISTORY`]): warnings, not failures.
    #[must_use]
    pub fn unjudged(&self) -> usize {
        self.gaps
            .iter()
            .filter(|g| {
                [gap_codes::SERVER_CHANGED, gap_codes::WITNESS_BEYOND_HISTORY]
                    .contains(&g.invariant)
            })
            .count()
    }

    /// The violations with one code.
    pub fn of<'a>(&'a self, code: &'a str) -> impl Iterator<Item = &'a Violation> + 'a {
        self.violations.iter().filter(move |v| v.invariant == code)
    }
}

/// The partitions a check starts with: as many as the resources with history need at `cap`
/// a pass, so a large store is not read once in vain before it is split. A pass keeps state
/// only for the resources its share of the history names (the items are streamed past it),
/// so their number is at most the store's items and instances (from its counters) and at
/// most its grant and write records, whichever is fewer: a store of ten million items that
/// were never claimed is checked in one pass. Items retention already removed can still
/// have history; a pass that meets more resources than it may keep splits further.
fn first_partitions(store: &Store, cap: usize) -> Result<Vec<history::Partition>> {
    let overview = store.overview()?;
    let work: u64 = overview.work.iter().map(|c| c.count).sum();
    let instances: u64 = overview.workflows.iter().map(|(_, n)| n).sum();
    let records = store.read(|tx| tx.history_records_bound())?;
    let expected = (work + instances).min(records).saturating_mul(11) / 10;
    let parts = expected.div_ceil(cap as u64).max(1);
    Ok(if parts > 1 {
        history::Partition::WHOLE.split(parts)
    } else {
        vec![history::Partition::WHOLE]
    }
    .into_iter()
    .rev()
    .collect())
}

/// Collects violations as the invariant functions find them.
#[derive(Debug, Default)]
pub(crate) struct Findings(Vec<Violation>);

impl Findings {
    pub(crate) fn push(&mut self, invariant: &'static str, ids: Vec<String>, sentence: String) {
        self.0.push(Violation {
            invariant,
            ids,
            sentence,
        });
    }
}

/// Checks every release invariant over `store`'s durable history.
///
/// # Errors
/// A store failure while reading (the check is then incomplete, so no report is given).
pub fn check(store: &Store, options: &CheckOptions) -> Result<Report> {
    check_showing(store, options, &mut |_, _, _| {})
}

/// The findings of a chain that does not verify (`store/chain.rs`), one per break.
fn chain_damage(report: &ChainReport) -> impl Iterator<Item = Violation> + '_ {
    report.breaks.iter().map(|b| {
        let (invariant, ids) = match b {
            ChainBreak::Edited { revision } => {
                (damage_codes::HISTORY_EDITED, vec![revision.to_string()])
            }
            ChainBreak::Missing { from, to } => (
                damage_codes::HISTORY_TRUNCATED,
                vec![from.to_string(), to.to_string()],
            ),
            ChainBreak::Truncated { revision, last } => (
                damage_codes::HISTORY_TRUNCATED,
                vec![(last + 1).to_string(), revision.to_string()],
            ),
        };
        Violation {
            invariant,
            ids,
            sentence: b.sentence(),
        }
    })
}

/// The damage that keeps the history from being read in order, which stops a check
/// before it reads anything else: a lowered revision, or records stored out of order.
fn unreadable_history(store: &Store) -> Result<Option<Violation>> {
    if let Some(lowered) = store.read(Lowered::read)? {
        return Ok(Some(Violation {
            invariant: damage_codes::REVISION_LOWERED,
            ids: vec![lowered.revision.to_string(), lowered.history.to_string()],
            sentence: lowered.sentence(),
        }));
    }
    let disorder = store.read(|tx| tx.history_out_of_order())?;
    Ok(disorder.map(|d| Violation {
        invariant: damage_codes::HISTORY_OUT_OF_ORDER,
        ids: vec![
            d.table.to_owned(),
            d.position.to_string(),
            d.revision.to_string(),
            d.previous.to_string(),
        ],
        sentence: d.sentence(),
    }))
}

/// The phase [`check_showing`] names first: the history's order, then its chain, each read
/// whole before any revision is counted.
pub const ORDER_PHASE: &str = "check: the history's order and chain";

/// [`check`], telling `progress` where it is: `(phase, done, total)` as it reads (the
/// history in revisions, the items in rows), for a progress line on a large store.
///
/// # Errors
/// A store failure while reading (the check is then incomplete, so no report is given).
pub fn check_showing(
    store: &Store,
    options: &CheckOptions,
    progress: &mut dyn FnMut(&str, u64, u64),
) -> Result<Report> {
    let page = options.page_size.max(1);
    let cap = options.resources_per_pass.max(1);
    let mut findings = Findings::default();
    let mut report = Report::default();

    let (through, store_epoch, from, intake) = store.read(|tx| {
        Ok((
            tx.revision()?,
            crate::store::epoch::epoch(tx)?,
            crate::store::retention::history_from(tx)?,
            tx.intake_counts()?,
        ))
    })?;
    report.store_epoch = store_epoch;
    report.intake = intake;
    report.through_revision = through;
    // One statement each, with nothing to count as they go: the line names the phase, so
    // a large store's first seconds do not pass without a word.
    progress(ORDER_PHASE, 0, through);
    if let Some(damage) = unreadable_history(store)? {
        report.damage.push(damage);
        return Ok(report);
    }
    report.damage.extend(chain_damage(&store.verify_chain()?));
    report.gaps.extend(
        store
            .server_changes()?
            .iter()
            .filter(|c| !c.acknowledged)
            .map(server_changed),
    );
    let start = history_start(through, from);
    report.history_from = start;
    // A store trimmed before the mark existed has none: the revision count tells.
    report.history_may_be_trimmed = from > 0 || through > crate::store::RETENTION.history_revisions;
    let live = stranded::LiveBuilds::read(store, options, page)?;
    let mut firings = schedules::Firings::default();
    let mut claiming = stranded::Claiming::default();

    // Grants and writes (invariants 1, 2, 3 (double firing), 5, 7, 8), then the items
    // against them (3 (ids), 5 (item vs writes), 6), one partition of the resources at a
    // time so that memory stays bounded whatever the store holds.
    let mut queue = first_partitions(store, cap)?;
    while let Some(partition) = queue.pop() {
        let mut pass = history::Pass {
            partition,
            cap,
            progress: &mut *progress,
            claiming: &mut claiming,
            live: &live,
        };
        let mut ledger = match history::stream(
            store,
            (start, through),
            page,
            &mut pass,
            &mut findings,
            &mut report.checked,
        )? {
            history::Streamed::Done(ledger) => ledger,
            history::Streamed::Split(finer) => {
                queue.extend(finer.into_iter().rev());
                continue;
            }
        };
        report.gaps.append(&mut ledger.gaps.0);
        report.oldest_revision = match (report.oldest_revision, ledger.oldest_revision) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        history::finish(store, &ledger, page, &mut findings)?;
        let waiting = history::items(
            store,
            &ledger,
            (partition, page),
            &mut history::ItemScan {
                live: &live,
                claiming: &claiming,
                options,
                firings: &mut firings,
            },
            &mut findings,
            &mut report.checked,
        )?;
        report.incompatible_items += waiting.incompatible;
        report.no_handler_items += waiting.no_handler;
        report.backlogged_items += waiting.backlogged;
    }

    // Journal: invariant 4.
    events::scan(store, page, &mut findings, &mut report.checked)?;

    // Idempotency keys: invariant 12.
    keys::scan(store, page, &mut findings)?;

    // Workflows: invariant 9.
    workflows::scan(
        store,
        (page / 10).max(1),
        &mut findings,
        &mut report.checked,
    )?;

    // Non-terminal instances: invariants 10 and 11.
    report.backlogged_instances =
        instances::scan(store, (&live, &claiming), options, page, &mut findings)?;

    report.violations = findings.0;
    Ok(report)
}
