//! Streams the ownership history — grants and fenced writes — in revision order, a page at
//! a time, keeping compact per-resource state (the [`Ledger`]), and hands each record to
//! the invariant functions that read it. Also the pass over work items, which needs the
//! ledger for its cross-checks.

use std::collections::hash_map::DefaultHasher;
use std::collections::{HashMap, VecDeque};
use std::hash::{Hash, Hasher};

use serde::Deserialize;

use super::{Counts, Findings, compat, cursors, effects, gaps, ownership, schedules, stranded};
use crate::clock::Millis;
use crate::error::Result;
use crate::model::work::WorkFilter;
use crate::model::{Grant, GrantKind, PageRequest, WorkKind, WriteRecord, WriteVerb};
use crate::store::{Store, Tx};

/// Owner ids, interned: the ledger keeps a `u32` per mark instead of a string.
#[derive(Debug, Default)]
pub(super) struct Owners {
    names: Vec<String>,
    index: HashMap<String, u32>,
}

impl Owners {
    pub(super) fn id(&mut self, name: &str) -> u32 {
        if let Some(id) = self.index.get(name) {
            return *id;
        }
        let id = u32::try_from(self.names.len()).unwrap_or(u32::MAX);
        self.names.push(name.to_owned());
        self.index.insert(name.to_owned(), id);
        id
    }

    pub(super) fn name(&self, id: u32) -> &str {
        self.names.get(id as usize).map_or("?", String::as_str)
    }
}

/// Who held which generation, when.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Mark {
    pub generation: u64,
    pub owner: u32,
    pub revision: u64,
}

/// What kind of resource an id names, for sentences.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) enum Noun {
    #[default]
    Resource,
    Work,
    Lease,
}

impl Noun {
    pub(super) fn as_str(self) -> &'static str {
        match self {
            Self::Resource => "resource",
            Self::Work => "work",
            Self::Lease => "lease",
        }
    }

    fn of_grant(how: GrantKind) -> Self {
        match how {
            GrantKind::Claim => Self::Work,
            GrantKind::Acquire | GrantKind::Handoff => Self::Lease,
        }
    }

    fn of_verb(verb: WriteVerb) -> Self {
        match verb {
            WriteVerb::Complete
            | WriteVerb::Fail
            | WriteVerb::Yield
            | WriteVerb::Cursor
            | WriteVerb::Requeue
            | WriteVerb::Discard => Self::Work,
            WriteVerb::Release | WriteVerb::Checkpoint | WriteVerb::Handoff => Self::Lease,
            WriteVerb::Renew
            | WriteVerb::ActionOutcome
            | WriteVerb::Transition
            | WriteVerb::ForceRelease => Self::Resource,
        }
    }
}

/// The effect ids seen on a work item's writes. Both default to the item's id, so only ids
/// that differ from it are kept (boxed): the common item costs no string.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct EffectIds {
    /// `(logicalEffectId, idempotencyKey)`, or `None` when both are the item's id.
    named: Option<Box<(String, String)>>,
    pub revision: u64,
}

impl EffectIds {
    pub(super) fn new(resource: &str, logical: &str, idempotency: &str, revision: u64) -> Self {
        let named = (logical != resource || idempotency != resource)
            .then(|| Box::new((logical.to_owned(), idempotency.to_owned())));
        Self { named, revision }
    }

    /// The logical effect id, given the id of the item it was seen on.
    pub(super) fn logical<'a>(&'a self, resource: &'a str) -> &'a str {
        self.named.as_ref().map_or(resource, |n| n.0.as_str())
    }

    /// The idempotency key, given the id of the item it was seen on.
    pub(super) fn idempotency<'a>(&'a self, resource: &'a str) -> &'a str {
        self.named.as_ref().map_or(resource, |n| n.1.as_str())
    }
}

/// A resource id's 128-bit digest: the ledger's key, so a million resources cost no million
/// strings (a collision among even ten million ids has a chance near 10⁻²⁴). Records and
/// items carry their ids, so sentences never need the key back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) struct Key(u128);

impl Key {
    pub(super) fn of(id: &str) -> Self {
        let half = |salt: u8| {
            let mut h = DefaultHasher::new();
            salt.hash(&mut h);
            id.hash(&mut h);
            h.finish()
        };
        Self((u128::from(half(0)) << 64) | u128::from(half(1)))
    }
}

/// The resources one pass over the history keeps state for: those whose key is `index`
/// modulo `count`. Every rule over the history reads one resource's records only, so
/// passes over disjoint partitions find together exactly what one pass over all would;
/// a store with more resources than one pass may hold is checked in several.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Partition {
    pub count: u64,
    pub index: u64,
}

impl Partition {
    pub(super) const WHOLE: Self = Self { count: 1, index: 0 };

    pub(super) fn holds(self, key: Key) -> bool {
        self.count <= 1 || (key.0 % u128::from(self.count)) == u128::from(self.index)
    }

    /// This partition cut into `parts` (at least 2) finer ones that together hold the same.
    pub(super) fn split(self, parts: u64) -> Vec<Self> {
        let parts = parts.max(2);
        (0..parts)
            .map(|j| Self {
                count: self.count * parts,
                index: self.index + j * self.count,
            })
            .collect()
    }
}

/// The compact state kept per resource id.
#[derive(Debug, Default)]
pub(super) struct ResourceState {
    pub noun: Noun,
    /// The highest generation granted so far (in revision order).
    pub granted: Option<Mark>,
    /// The first accepted terminal write, and whether it was a `complete`.
    pub terminal: Option<(Mark, bool)>,
    /// The effect ids of its writes.
    pub effect: Option<EffectIds>,
    /// The cursor high-water mark `(to, revision)` of accepted cursor writes.
    pub cursor: Option<(u64, u64)>,
    /// The generation whose claim its holder or an operator ended (an accepted completion,
    /// failure, yield, or an operator's write): after that, the holder's refused writes
    /// under it are its own doing.
    pub ended: Option<u64>,
}

/// A grant of a generation lower than one already granted: resolved after the stream by
/// reading that resource's grants (rare, so the ledger does not keep every generation).
#[derive(Debug, Clone)]
pub(super) struct Suspect {
    pub resource: String,
    pub noun: Noun,
    pub generation: u64,
    pub owner: String,
    pub revision: u64,
    pub newer: Mark,
}

/// A second accepted terminal write on one item: classified after the stream by the
/// item's kind (a schedule firing completed twice, or any item finished twice).
#[derive(Debug, Clone)]
pub(super) struct DoubleTerminal {
    pub resource: String,
    pub first: (Mark, bool),
    pub second: (Mark, bool),
}

/// Everything the stream keeps.
#[derive(Debug, Default)]
pub(super) struct Ledger {
    pub resources: HashMap<Key, ResourceState>,
    pub owners: Owners,
    pub suspects: Vec<Suspect>,
    pub double_terminals: Vec<DoubleTerminal>,
    pub oldest_revision: Option<u64>,
    /// The first revision the history must hold in full ([`gaps::history_start`]).
    pub start: u64,
    /// Records missing inside the range from `start`.
    pub gaps: Findings,
}

/// The verb-specific facts a write's `detail` carries.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(super) struct Detail {
    pub logical_effect_id: Option<String>,
    pub idempotency_key: Option<String>,
    /// The item's state after the write (work writes).
    pub state: Option<String>,
    pub subscription: Option<String>,
    pub from: Option<u64>,
    pub to: Option<u64>,
}

impl Detail {
    fn parse(text: &str) -> Self {
        serde_json::from_str::<Option<Self>>(text)
            .ok()
            .flatten()
            .unwrap_or_default()
    }
}

type ReadPage<T> = fn(&mut dyn Tx, u64, usize) -> Result<Vec<T>>;

/// One revision-keyed history table read in pages. A page never ends inside a revision
/// (see [`Tx::grants`]), so the next page starts after the last revision read.
struct Pager<T> {
    buffer: VecDeque<T>,
    after: u64,
    done: bool,
    read: ReadPage<T>,
    revision: fn(&T) -> u64,
}

impl<T> Pager<T> {
    /// A pager over the records from revision `from` on.
    fn new(read: ReadPage<T>, revision: fn(&T) -> u64, from: u64) -> Self {
        Self {
            buffer: VecDeque::new(),
            after: from.saturating_sub(1),
            done: false,
            read,
            revision,
        }
    }

    /// The revision of the next record, reading a page when the buffer is empty.
    fn peek(&mut self, store: &Store, page: usize, through: u64) -> Result<Option<u64>> {
        while self.buffer.is_empty() && !self.done {
            self.fill(store, page, through)?;
        }
        Ok(self.buffer.front().map(self.revision))
    }

    fn pop(&mut self) -> Option<T> {
        self.buffer.pop_front()
    }

    fn fill(&mut self, store: &Store, page: usize, through: u64) -> Result<()> {
        let (read, rev, after) = (self.read, self.revision, self.after);
        let rows = store.read(|tx| read(tx, after, page))?;
        let full = rows.len() >= page;
        match rows.last().map(rev) {
            Some(last) if full => {
                self.after = last;
                self.done = last >= through;
            }
            _ => self.done = true,
        }
        self.buffer
            .extend(rows.into_iter().filter(|r| rev(r) <= through));
        Ok(())
    }
}

/// How one pass over the history ended.
pub(super) enum Streamed {
    /// Every record of the partition was read.
    Done(Ledger),
    /// The partition held more resources than one pass may keep: check these finer ones
    /// instead (what the abandoned pass found is dropped, to be found again).
    Split(Vec<Partition>),
}

/// Where a pass stands, for the progress line.
pub(super) struct Pass<'a> {
    pub partition: Partition,
    /// Resources one pass may keep state for.
    pub cap: usize,
    pub progress: &'a mut dyn FnMut(&str, u64, u64),
    /// Every grant of the stream, whatever its partition, is noted here: complete once
    /// one stream has run, before any item is judged.
    pub claiming: &'a mut stranded::Claiming,
    pub live: &'a stranded::LiveBuilds,
}

/// Reads every grant and write from revision `start` (where the kept history is complete)
/// up to revision `through`, merged in revision order (writes before grants at one
/// revision), runs the history invariants over those of `pass.partition`'s resources and
/// notes the records missing in that range. Older rows kept only for the incident lists
/// are left out: alone, without what happened around them, they would be a trimmed prefix
/// judged as if it were the whole story.
///
/// Memory is bounded by `pass.cap` resources (and a page of records): a pass that would
/// keep more gives up and names the finer partitions to check instead, as many as the
/// share of the range it got through suggests.
pub(super) fn stream(
    store: &Store,
    (start, through): (u64, u64),
    page: usize,
    pass: &mut Pass<'_>,
    findings: &mut Findings,
    counts: &mut Counts,
) -> Result<Streamed> {
    let mut ledger = Ledger {
        start,
        ..Ledger::default()
    };
    let (mut found, mut counted) = (Findings::default(), Counts::default());
    let mut grants: Pager<Grant> = Pager::new(
        |tx, after, limit| tx.grants(None, after, limit),
        |g| g.revision,
        start,
    );
    let mut writes: Pager<WriteRecord> = Pager::new(
        |tx, after, limit| tx.writes(None, after, limit),
        |w| w.revision,
        start,
    );
    let span = through.saturating_sub(start) + 1;
    let label = if pass.partition.count > 1 {
        format!(
            "check: history, part {} of {}",
            pass.partition.index + 1,
            pass.partition.count
        )
    } else {
        "check: history".to_owned()
    };
    loop {
        let next_grant = grants.peek(store, page, through)?;
        let next_write = writes.peek(store, page, through)?;
        let take_write = match (next_grant, next_write) {
            (None, None) => break,
            (Some(g), Some(w)) => w <= g,
            (None, Some(_)) => true,
            (Some(_), None) => false,
        };
        let revision = if take_write { next_write } else { next_grant };
        ledger.oldest_revision = ledger.oldest_revision.or(revision);
        let done = revision.unwrap_or(start).saturating_sub(start);
        (pass.progress)(&label, done, span);
        if take_write {
            if let Some(write) = writes.pop() {
                let key = Key::of(&write.resource_id);
                if pass.partition.holds(key) {
                    counted.writes += 1;
                    on_write(&mut ledger, key, &write, &mut found);
                }
            }
        } else if let Some(grant) = grants.pop() {
            pass.claiming.note(&grant, pass.live);
            let key = Key::of(&grant.resource_id);
            if pass.partition.holds(key) {
                counted.grants += 1;
                on_grant(&mut ledger, key, &grant, &mut found);
            }
        }
        if ledger.resources.len() > pass.cap {
            // Read `done` of `span` revisions with `cap` resources: aim for parts a
            // fifth under the cap if the rest of the range is like what was read.
            let parts = span
                .saturating_mul(5)
                .div_ceil(done.max(1).saturating_mul(4))
                .clamp(2, 1024);
            return Ok(Streamed::Split(pass.partition.split(parts)));
        }
    }
    findings.0.append(&mut found.0);
    counts.grants += counted.grants;
    counts.writes += counted.writes;
    Ok(Streamed::Done(ledger))
}

fn on_grant(ledger: &mut Ledger, key: Key, grant: &Grant, findings: &mut Findings) {
    let owner = ledger.owners.id(&grant.owner_id);
    let state = ledger.resources.entry(key).or_default();
    state.noun = Noun::of_grant(grant.how);
    let mark = Mark {
        generation: grant.generation,
        owner,
        revision: grant.revision,
    };

    ownership::one_owner_per_generation(
        state,
        grant,
        mark,
        &ledger.owners,
        &mut ledger.suspects,
        findings,
    );
    compat::no_incompatible_execution(grant, findings);
    gaps::grant_follows(state, grant, ledger.start, &mut ledger.gaps);

    if state.granted.is_none_or(|g| mark.generation > g.generation) {
        state.granted = Some(mark);
    }
}

fn on_write(ledger: &mut Ledger, key: Key, write: &WriteRecord, findings: &mut Findings) {
    let owner = ledger.owners.id(&write.owner_id);
    let state = ledger.resources.entry(key).or_default();
    if state.noun == Noun::Resource {
        state.noun = Noun::of_verb(write.verb);
    }
    let mark = Mark {
        generation: write.generation,
        owner,
        revision: write.revision,
    };
    gaps::write_was_granted(state, write, ledger.start, &mut ledger.gaps);
    if write.accepted && (write.verb.by_operator() || write.verb.ends_a_claim()) {
        state.ended = Some(write.generation);
    }
    if write.verb.by_operator() {
        effects::reopened_by_requeue(state, write);
        // A force-release mints the next generation with no grant behind it: the
        // operator holds it until the next claim, so that claim follows without a gap.
        if write.verb == WriteVerb::ForceRelease && write.accepted {
            let minted = Mark {
                generation: write.generation + 1,
                ..mark
            };
            if state
                .granted
                .is_none_or(|g| minted.generation > g.generation)
            {
                state.granted = Some(minted);
            }
        }
        return;
    }
    let detail = Detail::parse(&write.detail);
    let owners = &ledger.owners;

    if write.verb == WriteVerb::Cursor {
        cursors::no_stale_cursor_write(state, write, &detail, owners, findings);
        cursors::monotone_cursor(state, write, &detail, findings);
    } else {
        ownership::no_superseded_write(state, write, owners, findings);
        ownership::fenced_only_by_a_takeover(state, write, mark, owners, findings);
    }
    ownership::writer_holds_the_grant(state, write, mark, owners, findings);
    effects::one_logical_effect_id(state, write, &detail, findings);
    if let Some(double) = effects::one_terminal_write(state, write, &detail, mark) {
        ledger.double_terminals.push(double);
    }
}

/// Resolves what the stream could only suspect: older generations granted again, and items
/// finished twice (classified by kind).
pub(super) fn finish(
    store: &Store,
    ledger: &Ledger,
    page: usize,
    findings: &mut Findings,
) -> Result<()> {
    for (n, suspect) in ledger.suspects.iter().enumerate() {
        let earlier = if n < ownership::SUSPECT_LOOKUPS {
            earlier_grant(store, suspect, page)?
        } else {
            None
        };
        ownership::resolve_suspect(suspect, earlier.as_ref(), &ledger.owners, findings);
    }
    for double in &ledger.double_terminals {
        let kind = store.read(|tx| tx.work(&double.resource))?.map(|w| w.kind);
        if kind == Some(WorkKind::Schedule) && double.first.1 && double.second.1 {
            schedules::one_firing_per_instant(double, &ledger.owners, findings);
        } else {
            effects::report_terminal_twice(double, &ledger.owners, findings);
        }
    }
    Ok(())
}

/// The earliest grant of `suspect.generation` on its resource before the suspect grant.
fn earlier_grant(store: &Store, suspect: &Suspect, page: usize) -> Result<Option<Grant>> {
    let resource = suspect.resource.clone();
    let mut after = 0;
    loop {
        let rows = store.read(|tx| tx.grants(Some(&resource), after, page))?;
        let full = rows.len() >= page;
        for grant in &rows {
            if grant.revision >= suspect.revision {
                return Ok(None);
            }
            if grant.generation == suspect.generation {
                return Ok(Some(grant.clone()));
            }
        }
        match rows.last() {
            Some(last) if full => after = last.revision,
            _ => return Ok(None),
        }
    }
}

/// What the pass over the items needs besides the ledger.
pub(super) struct ItemScan<'a> {
    pub live: &'a stranded::LiveBuilds,
    pub claiming: &'a stranded::Claiming,
    pub options: &'a super::CheckOptions,
    /// Non-canonical firing ids seen so far, across partitions.
    pub firings: &'a mut schedules::Firings,
}

/// How many unfinished items wait without breaking an invariant, by why they wait.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(super) struct Waiting {
    /// Their handler runs only at another version.
    pub incompatible: u64,
    /// No live authority has their handler.
    pub no_handler: u64,
    /// Queued behind more work than the live authorities keep up with.
    pub backlogged: u64,
}

/// Pages through every work item of `partition`: firing ids (3), effect ids against the
/// writes (5), stranded, backlogged, incompatible or without a handler (6). Returns how
/// many items wait, and why.
pub(super) fn items(
    store: &Store,
    ledger: &Ledger,
    (partition, page): (Partition, usize),
    scan: &mut ItemScan<'_>,
    findings: &mut Findings,
    counts: &mut Counts,
) -> Result<Waiting> {
    let (live, options) = (scan.live, scan.options);
    let filter = WorkFilter::default();
    let mut request = PageRequest::first(page);
    let mut waiting = Waiting::default();
    loop {
        let rows = store.read(|tx| tx.list_work(&filter, &request))?;
        for item in &rows {
            let key = Key::of(&item.id);
            if !partition.holds(key) {
                continue;
            }
            counts.items += 1;
            if item.kind == WorkKind::Schedule {
                let canonical_exists = |id: &str| store.read(|tx| Ok(tx.work(id)?.is_some()));
                schedules::firing_id_is_derived(item, scan.firings, canonical_exists, findings)?;
            }
            if let Some(state) = ledger.resources.get(&key) {
                effects::item_keeps_its_effect_ids(item, state, findings);
            }
            match stranded::no_stranded_work(item, (live, scan.claiming), options, findings) {
                stranded::Verdict::Incompatible => waiting.incompatible += 1,
                stranded::Verdict::NoHandler => waiting.no_handler += 1,
                stranded::Verdict::Backlogged => waiting.backlogged += 1,
                stranded::Verdict::Fine | stranded::Verdict::Stranded => {}
            }
        }
        match rows.last() {
            Some(last) if rows.len() >= page => request = PageRequest::after(last.id.clone(), page),
            _ => return Ok(waiting),
        }
    }
}

/// `now - then`, never negative.
pub(super) fn age(now: Millis, then: Millis) -> Millis {
    now.saturating_sub(then).max(0)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::clock::ManualClock;
    use crate::ids::SeededIds;
    use crate::store::Backend;
    use crate::store::memory::MemoryBackend;

    fn grant(revision: u64, n: u64) -> Grant {
        Grant {
            revision,
            resource_id: format!("r-{n}"),
            generation: 1,
            owner_id: "a".into(),
            how: GrantKind::Claim,
            owner_compat: None,
            item_compat: None,
            at: 0,
            took_over: None,
        }
    }

    /// Many grants share a revision (one claim batch): whatever the page size, none is
    /// skipped or repeated, and nothing past `through` is kept.
    #[test]
    fn pages_split_only_between_revisions() {
        let backend = MemoryBackend::new();
        let store = Store::new(
            Arc::new(backend.clone()),
            Arc::new(ManualClock::new(0)),
            Arc::new(SeededIds::new(1)),
        );
        let mut n = 0;
        for size in [1, 7, 3, 1, 2] {
            backend
                .write(&mut |tx| {
                    let revision = tx.commit_revision()?;
                    for _ in 0..size {
                        n += 1;
                        tx.add_grant(grant(revision, n))?;
                    }
                    Ok(())
                })
                .unwrap();
        }
        for page in 1..=15 {
            let mut pager: Pager<Grant> = Pager::new(
                |tx, after, limit| tx.grants(None, after, limit),
                |g| g.revision,
                0,
            );
            let mut seen = Vec::new();
            while pager.peek(&store, page, 4).unwrap().is_some() {
                seen.push(pager.pop().unwrap().resource_id);
            }
            let expected: Vec<String> = (1..=12).map(|n| format!("r-{n}")).collect();
            assert_eq!(seen, expected, "page size {page}");
        }
    }

    #[test]
    fn details_parse_leniently() {
        assert_eq!(Detail::parse("null").to, None);
        assert_eq!(Detail::parse("not json").state, None);
        let d = Detail::parse(r#"{"subscription":"s","from":1,"to":2,"extra":true}"#);
        assert_eq!(
            (d.subscription.as_deref(), d.from, d.to),
            (Some("s"), Some(1), Some(2))
        );
    }
}
