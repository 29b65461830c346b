//! The rewind witness: what this host has seen of a store, kept on disk so it outlives the
//! process.
//!
//! A store can go back in time under its writers — an older copy of a SQLite file put in
//! place, a PostgreSQL failover to a replica that lost acknowledged commits. Its rows then
//! say a generation was never handed out when it was, and the next claim hands it out
//! again. The store cannot tell by itself; the hosts that wrote to it can. A [`Witness`]
//! keeps, per store name and host, one small file in a state directory with the store's
//! identity (`store_id`), its epoch, the highest revision seen and the store's chain link
//! there with the history's counts (`store/chain.rs`). Every write transaction through a
//! witnessed [`Store`] reads what it needs of those (the revision is read anyway) and
//! refuses to write — `STORE_REWOUND` — when the store is behind the witness, has an older
//! epoch, is another store under the same name, or went on past the witnessed revision
//! along another history (its link there differs: an older copy put back and written
//! again). The authority opens its witness at start, so a restarted process is protected
//! like a running one. A SQLite store has a second record beside its file
//! ([`Witness::beside`]), which every writer on every host checks and advances, so a host
//! with no record of its own is judged by what the last writer saw.
//!
//! An operator who has checked the store accepts it as it is with `leasehold store
//! accept-rewind`: that starts a new epoch (see `store/epoch.rs`), and every witness, on
//! any host, adopts a store whose epoch went up.
//!
//! The file is a fixed-size record rewritten in place after each commit that raised the
//! revision (one positioned write, no fsync: it survives the process being killed, and a
//! power loss costs at most the last few revisions of protection). Several processes on one
//! host share the file; each writes the revision it just committed, so the file lags the
//! store by at most the commits racing it.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

pub use super::beyond_history::{BeyondHistory, Milestone, Trimmed};
use super::chain::milestone_at_or_below;
use super::epoch::{self, STORE_ID};
use super::{ServerIdentity, Store, Tx};
use crate::error::{Error, Result};
use crate::model::{ChainCounts, ChainLink, LinkHash};

/// Bytes of one witness record (JSON padded with spaces, then a newline). Records
/// written before the chain link was kept are 256 bytes and still load.
const RECORD: usize = 512;

/// What a host has seen of one store.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Seen {
    /// The store's `store_id` meta row.
    pub store_id: i64,
    /// The store's epoch.
    pub epoch: u64,
    /// The highest revision seen.
    pub revision: u64,
    /// The store's chain link at that revision (`store/chain.rs`); `None` in a record an
    /// older build wrote, or for a store that keeps no link there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link: Option<LinkHash>,
    /// The history's counts at that revision, with the link.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counts: Option<ChainCounts>,
    /// The database server, when the provider can tell (read when the witness is opened;
    /// `None` in what a write transaction reads).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<ServerIdentity>,
    /// The link of the latest milestone at or below the revision (`store/chain.rs`),
    /// which retention keeps: what a store trimmed past the revision is compared at
    /// (`store/beyond_history.rs`). Read when the witness is opened and when its revision
    /// crosses a milestone; `None` in what a write transaction reads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub milestone: Option<Milestone>,
}

impl Seen {
    /// What `tx` shows of its store now.
    ///
    /// # Errors
    /// `STORE_CORRUPT` for a store without an identity, or a store failure.
    pub fn read(tx: &mut dyn Tx) -> Result<Self> {
        let store_id = tx
            .meta_value(STORE_ID)?
            .ok_or_else(|| Error::Corrupt("the store has no store_id meta row".into()))?;
        let revision = tx.revision()?;
        let head = tx.link(revision)?;
        Ok(Self {
            store_id,
            epoch: epoch::epoch(tx)?,
            revision,
            link: head.as_ref().map(|l| l.link),
            counts: head.map(|l| l.counts),
            server: None,
            milestone: None,
        })
    }
}

/// What a store ahead of a witness holds at the witnessed revision: how [`judge`] tells
/// a store that went on from the history a host saw from a fork that only passed it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AtWitnessed {
    /// The store's link there.
    Link(ChainLink),
    /// The store trimmed its history (and links) below `from`, past the witnessed
    /// revision: judged by what survives (`store/beyond_history.rs`).
    Trimmed(Trimmed),
    /// No link there though nothing was trimmed: the revision was written by something that
    /// does not chain (an older build, a pre-chain copy put back), `first` being its first
    /// link, if any.
    Absent { first: Option<u64> },
}

impl AtWitnessed {
    /// What `tx` holds at `revision`, read only when [`judge`] needs it: the host saw a link
    /// there and the store is past it.
    ///
    /// # Errors
    /// A store failure.
    pub fn read(tx: &mut dyn Tx, seen: Option<&Seen>, now: &Seen) -> Result<Option<Self>> {
        let Some(seen) = seen.filter(|s| s.link.is_some() && now.revision > s.revision) else {
            return Ok(None);
        };
        if let Some(link) = tx.link(seen.revision)? {
            return Ok(Some(Self::Link(link)));
        }
        let from = super::retention::history_from(tx)?;
        if from > seen.revision {
            return Ok(Some(Self::Trimmed(Trimmed::read(tx, seen, from)?)));
        }
        let first = tx
            .links(from.saturating_sub(1), 1)?
            .first()
            .map(|l| l.revision);
        Ok(Some(Self::Absent { first }))
    }
}

impl Seen {
    /// What `store` shows now, its server included.
    ///
    /// # Errors
    /// As [`Seen::read`].
    pub fn of(store: &Store) -> Result<Self> {
        Ok(Self::against(store, None)?.0)
    }

    /// What `store` shows now, its server included, with what it holds at the revision
    /// `seen` names when [`judge`] needs it; one read snapshot.
    ///
    /// # Errors
    /// As [`Seen::read`].
    pub fn against(store: &Store, seen: Option<&Seen>) -> Result<(Self, Option<AtWitnessed>)> {
        let (now, at) = store.read(|tx| {
            let mut now = Self::read(tx)?;
            now.milestone = Milestone::read(tx, now.revision)?;
            let at = AtWitnessed::read(tx, seen, &now)?;
            Ok((now, at))
        })?;
        let now = Self {
            server: store.backend.server_identity(),
            ..now
        };
        Ok((now, at))
    }
}

/// Whether a store showing `now` (and `at` the witnessed revision, see
/// [`AtWitnessed::read`]) may be written by a host that has seen `seen`: the record to
/// keep, or why not.
///
/// # Errors
/// The reason the store is refused, as one clause.
pub fn judge(
    seen: Option<Seen>,
    now: Seen,
    at: Option<&AtWitnessed>,
) -> std::result::Result<Seen, String> {
    let Some(seen) = seen else { return Ok(now) };
    // A milestone of another epoch's history is no evidence about this one.
    let same_history = now.epoch == seen.epoch && now.store_id == seen.store_id;
    let now = Seen {
        server: now.server.or(seen.server),
        milestone: match now.milestone {
            None if same_history => seen.milestone,
            mine => mine,
        },
        ..now
    };
    if now.epoch > seen.epoch {
        // An operator accepted this store as it is.
        return Ok(now);
    }
    if now.epoch < seen.epoch {
        return Err(format!(
            "its epoch is {}, but this host has seen epoch {}: it was rewound past an accepted rewind",
            now.epoch, seen.epoch
        ));
    }
    if now.store_id != seen.store_id {
        return Err(format!(
            "it is another store (id {}) than the one this host has written under this name (id {})",
            now.store_id, seen.store_id
        ));
    }
    if let (Some(was), Some(is)) = (seen.server, now.server)
        && was.system_identifier != is.system_identifier
    {
        return Err(format!(
            "it is served by another database cluster (system identifier {}) than the one this host has written to (system identifier {})",
            is.system_identifier, was.system_identifier
        ));
    }
    if now.revision < seen.revision {
        let failover = match (seen.server, now.server) {
            (Some(was), Some(is)) if was.timeline != is.timeline => format!(
                " (the server failed over: timeline {} became {})",
                was.timeline, is.timeline
            ),
            _ => String::new(),
        };
        return Err(format!(
            "it is at revision {}, behind revision {} this host has seen: commits were lost (an older copy or a failover){failover}",
            now.revision, seen.revision
        ));
    }
    if now.revision == seen.revision
        && let (Some(was), Some(is)) = (seen.link, now.link)
        && was != is
    {
        return Err(forked(
            &seen,
            &now,
            &format!("its link there is {}", is.short()),
        ));
    }
    match (seen.link, at) {
        (Some(was), Some(AtWitnessed::Link(l))) if l.link != was => Err(forked(
            &seen,
            &now,
            &format!("its link at revision {} is {}", seen.revision, l.link.short()),
        )),
        (Some(_), Some(AtWitnessed::Absent { first })) => Err(forked(
            &seen,
            &now,
            &match first {
                Some(f) => format!(
                    "it keeps no link at revision {} (its chain starts at revision {f}), so it cannot be shown to go on from that history",
                    seen.revision
                ),
                None => "it keeps no chain link at all, so it cannot be shown to go on from that history".into(),
            },
        )),
        (Some(_), Some(AtWitnessed::Trimmed(t))) => t.judge(&seen, &now).map(|()| now),
        _ => Ok(now),
    }
}

/// The clause of a store whose history is not the one a host saw.
pub(super) fn forked(seen: &Seen, now: &Seen, how: &str) -> String {
    format!(
        "it is at revision {}, but its history diverges at or before revision {} this host has seen ({how}, this host saw {}): another history was written over an older copy",
        now.revision,
        seen.revision,
        seen.link.map_or_else(|| "none".into(), |l| l.short())
    )
}

/// This host's durable record of one store; attach it with [`Store::with_witness`].
pub struct Witness {
    path: PathBuf,
    label: String,
    /// Whether the record is written only after a commit (the one beside a store): an
    /// open that judges the store, or a writer that fails before it commits, writes nothing
    /// beside the store's files.
    after_commits: bool,
    state: Mutex<State>,
}

struct State {
    /// `None` until the first record is written, for a record kept beside the store
    /// (opening a store, or a writer that then fails, leaves no file there).
    file: Option<File>,
    seen: Option<Seen>,
    /// The milestone last looked for and not found in the store (its history starts after
    /// it, an upgraded store's does): not looked for again on every write.
    missing_milestone: u64,
}

/// Whether a witness in `state` wants the link of the milestone at or below `revision`:
/// one above the milestone it keeps — not above the revision it saw, which its check moves
/// past a milestone another host's commit crossed — and not one already found missing.
fn wants_milestone(state: &State, revision: u64) -> bool {
    let at = milestone_at_or_below(revision);
    state.seen.is_some_and(|s| {
        at > s.milestone.map_or(0, |m| m.revision) && at != state.missing_milestone
    })
}

impl std::fmt::Debug for Witness {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Witness")
            .field("path", &self.path)
            .field("label", &self.label)
            .finish_non_exhaustive()
    }
}

impl Witness {
    /// Opens (creating `dir` and the file if needed) this host's witness of `store`, named
    /// after the store's identity (its canonical path or URL), and checks the store
    /// against it.
    ///
    /// # Errors
    /// `STORE_REWOUND` when the store is behind the witness or another store;
    /// `STORE_UNAVAILABLE` or `STORE_REFUSED` as [`Self::load`].
    pub fn open(dir: &Path, store: &Store) -> Result<Self> {
        Self::judged(Self::load(dir, store)?, store)
    }

    /// The record kept beside a store's own files (a SQLite store's
    /// `<path>.leasehold-witness`), opened without judging the store (see
    /// [`Self::judged`]): every writer on any host advances it, so a host with no record of
    /// its own, and a store file restored alone, are judged by what the last writer saw.
    /// `None` for a provider with no such place.
    ///
    /// # Errors
    /// As [`Self::load`].
    pub fn beside(store: &Store) -> Result<Option<Self>> {
        let Some(path) = store.backend.witness_beside() else {
            return Ok(None);
        };
        Self::at(path, store, true).map(Some)
    }

    /// `witness` once it has judged `store` as it is now (and recorded it when taken).
    ///
    /// # Errors
    /// `STORE_REWOUND`, `STORE_UNAVAILABLE`, or a store failure.
    pub fn judged(witness: Self, store: &Store) -> Result<Self> {
        let seen = witness.seen();
        let (now, at) = Seen::against(store, seen.as_ref())?;
        if let Some(beyond) = witness.accept(now, at.as_ref())? {
            store.say_beyond_history(&beyond);
        }
        Ok(witness)
    }

    /// Opens this host's witness of `store` like [`Self::open`] without judging the store
    /// (for accepting a rewind, which then adopts the store).
    ///
    /// # Errors
    /// `STORE_UNAVAILABLE` when the witness cannot be read or written; `STORE_REFUSED`
    /// when this user may not read or write it, or it holds what no build wrote (an operator decides whether to remove it).
    pub fn load(dir: &Path, store: &Store) -> Result<Self> {
        std::fs::create_dir_all(dir).map_err(|e| unreadable(dir, &e))?;
        Self::at(record_path(dir, store), store, false)
    }

    /// Opens the record at `path` without judging the store, creating the file unless it
    /// is written only `after_commits`.
    fn at(path: PathBuf, store: &Store, after_commits: bool) -> Result<Self> {
        let unavailable = |e: std::io::Error| unreadable(&path, &e);
        let file = match open_record(&path, !after_commits) {
            Err(e) if after_commits && e.kind() == std::io::ErrorKind::NotFound => None,
            opened => Some(opened.map_err(unavailable)?),
        };
        let mut text = String::new();
        if let Some(mut file) = file.as_ref() {
            file.read_to_string(&mut text).map_err(unavailable)?;
        }
        let seen = parse(&text, &path)?;
        Ok(Self {
            label: store.describe(),
            path,
            after_commits,
            state: Mutex::new(State {
                file,
                seen,
                missing_milestone: 0,
            }),
        })
    }

    /// Where the record lives.
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// What the witness holds now.
    #[must_use]
    pub fn seen(&self) -> Option<Seen> {
        self.lock().seen
    }

    /// Checks the store as this write transaction sees it (`now`, read once for all the
    /// witnesses a write checks); see [`judge`]. Taken past a revision the store keeps no
    /// history for any more, it answers what it could not compare, for the store to say.
    ///
    /// # Errors
    /// `STORE_REWOUND`, or a store failure.
    pub(crate) fn check(&self, tx: &mut dyn Tx, now: Seen) -> Result<Option<BeyondHistory>> {
        let at = AtWitnessed::read(tx, self.seen().as_ref(), &now)?;
        self.accept(now, at.as_ref())
    }

    /// Whether committing `revision` takes the witness past a milestone, whose link it
    /// then keeps (read by the committing transaction, see [`Self::committed`]).
    pub(crate) fn crosses_milestone(&self, revision: u64) -> bool {
        wants_milestone(&self.lock(), revision)
    }

    /// Records a revision this process committed, with its link, and the link of the
    /// milestone it crossed, if any.
    pub(crate) fn committed(&self, link: &ChainLink, milestone: Option<Milestone>) {
        let mut state = self.lock();
        if milestone.is_none() && wants_milestone(&state, link.revision) {
            state.missing_milestone = milestone_at_or_below(link.revision);
        }
        if let Some(seen) = state.seen.filter(|s| link.revision > s.revision) {
            let next = Seen {
                revision: link.revision,
                link: Some(link.link),
                counts: Some(link.counts),
                milestone: milestone.or(seen.milestone),
                ..seen
            };
            // A failed write only weakens the protection of a later restart; the running
            // process still holds the record in memory.
            let _ = self.write(&mut state, &next);
            state.seen = Some(next);
        }
    }

    /// Replaces the record with what the store is now (after an accepted rewind).
    ///
    /// # Errors
    /// `STORE_UNAVAILABLE` when the record cannot be written.
    pub(crate) fn adopt(&self, now: Seen) -> Result<()> {
        let mut state = self.lock();
        self.store(&mut state, now)
    }

    /// Takes `now` as what the witness saw when it judges it so; what it took without
    /// being able to compare (a trimmed history) comes back, for the store to say once.
    fn accept(&self, now: Seen, at: Option<&AtWitnessed>) -> Result<Option<BeyondHistory>> {
        let mut state = self.lock();
        let judged = judge(state.seen, now, at);
        let beyond = match (&judged, state.seen, at) {
            (Ok(_), Some(seen), Some(AtWitnessed::Trimmed(t))) => Some(BeyondHistory::of(&seen, t)),
            _ => None,
        };
        match judged {
            Ok(next) if state.seen == Some(next) => {}
            Ok(next) if self.after_commits => state.seen = Some(next),
            Ok(next) => self.store(&mut state, next)?,
            Err(detail) => {
                return Err(Error::Rewound {
                    store: self.label.clone(),
                    detail,
                });
            }
        }
        Ok(beyond)
    }

    fn store(&self, state: &mut State, next: Seen) -> Result<()> {
        self.write(state, &next)
            .map_err(|e| unreadable(&self.path, &e))?;
        state.seen = Some(next);
        Ok(())
    }

    /// Writes `seen` as the record, creating the file if this is its first record.
    fn write(&self, state: &mut State, seen: &Seen) -> std::io::Result<()> {
        if state.file.is_none() {
            state.file = Some(open_record(&self.path, true)?);
        }
        match state.file.as_mut() {
            Some(file) => write_record(file, seen),
            None => Ok(()),
        }
    }

    /// Writes what the witness holds now, also where records wait for a commit (`copy`
    /// fills a store without commits of its own).
    ///
    /// # Errors
    /// `STORE_UNAVAILABLE` when the record cannot be written.
    pub(crate) fn persist(&self) -> Result<()> {
        let mut state = self.lock();
        match state.seen {
            Some(seen) => self.store(&mut state, seen),
            None => Ok(()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Store {
    /// The same store checked on every write against this host's witness in
    /// [`host_dir`], when the host has one and the store outlives the process: what every
    /// writer without a `--state-dir` of its own opens a store with.
    ///
    /// # Errors
    /// `STORE_REWOUND` when the store is behind the witness, forked from it or another
    /// store; an unusable state directory.
    pub fn with_host_witness(self) -> Result<Self> {
        match host_dir() {
            Some(dir) if self.physical_durability() => {
                let witness = Witness::open(&dir, &self)?;
                Ok(self.with_witness(witness))
            }
            _ => Ok(self),
        }
    }

    /// Judges the store as it is now by every witness of this handle and records it
    /// where taken: for a writer that filled the store without write transactions of
    /// its own (`copy`).
    ///
    /// # Errors
    /// `STORE_REWOUND`, an unusable witness, or a store failure.
    pub fn witness_now(&self) -> Result<()> {
        for w in self.witnesses() {
            let (now, at) = Seen::against(self, w.seen().as_ref())?;
            w.accept(now, at.as_ref())?;
            w.persist()?;
        }
        Ok(())
    }
}

/// What a host's witness says of a store it judged without writing: see [`Rewound::find`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Rewound {
    /// What the witness holds.
    pub witnessed: Seen,
    /// What the store shows now.
    pub store: Seen,
    /// Why the writers on this host refuse it, as one clause (see [`judge`]).
    pub detail: String,
}

impl Rewound {
    /// Judges `store` by this host's witness in `dir`, then by the record beside the
    /// store's files, as the writers here would, reading the records without creating or
    /// changing anything (`leasehold check`, `inspect overview`, the dashboard): `None`
    /// when the writers would take the store, or there is no record of it.
    ///
    /// # Errors
    /// `STORE_UNAVAILABLE` when the record cannot be read, `STORE_REFUSED` when it holds
    /// what no build wrote, or a store failure.
    pub fn find(dir: &Path, store: &Store) -> Result<Option<Self>> {
        match Self::find_at(&record_path(dir, store), store)? {
            Some(rewound) => Ok(Some(rewound)),
            None => match store.backend.witness_beside() {
                Some(path) => Self::find_at(&path, store),
                None => Ok(None),
            },
        }
    }

    /// Whether the store went on along another history than the one the witness saw,
    /// rather than back: it is the same store, in the same epoch, at or past the
    /// witnessed revision.
    #[must_use]
    pub fn is_fork(&self) -> bool {
        self.witnessed.store_id == self.store.store_id
            && self.witnessed.epoch == self.store.epoch
            && self.store.revision >= self.witnessed.revision
    }

    /// [`Self::find`] by the record at `path`.
    fn find_at(path: &Path, store: &Store) -> Result<Option<Self>> {
        let Some(witnessed) = read_record(path)? else {
            return Ok(None);
        };
        let (now, at) = Seen::against(store, Some(&witnessed))?;
        Ok(judge(Some(witnessed), now, at.as_ref())
            .err()
            .map(|detail| Self {
                witnessed,
                store: now,
                detail,
            }))
    }
}

/// The record at `path`, read without creating or changing anything: `None` when there
/// is none, or it is empty.
///
/// # Errors
/// `STORE_UNAVAILABLE` when it cannot be read, `STORE_REFUSED` when no build wrote it.
pub(super) fn read_record(path: &Path) -> Result<Option<Seen>> {
    match std::fs::read_to_string(path) {
        Ok(text) => parse(&text, path),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(unreadable(path, &e)),
    }
}

/// The witness at `path` could not be read or written: `STORE_REFUSED` when this user may
/// not (a permission is not granted by waiting: an authority starting on it stops at once
/// rather than retrying), `STORE_UNAVAILABLE` otherwise (a full disk, an I/O error).
fn unreadable(path: &Path, e: &std::io::Error) -> Error {
    let said = format!("rewind witness {}: {e}", path.display());
    match e.kind() {
        std::io::ErrorKind::PermissionDenied | std::io::ErrorKind::ReadOnlyFilesystem => {
            Error::Refused(said)
        }
        _ => Error::Unavailable(said),
    }
}

/// Where this host keeps its record of `store` in `dir`: named after the store's identity
/// (its canonical path or URL).
pub(super) fn record_path(dir: &Path, store: &Store) -> PathBuf {
    let name = hex::encode(Sha256::digest(store.backend.identity().as_bytes()));
    dir.join(format!("{}.witness", &name[..32]))
}

/// A record's text: `None` for an empty one (a witness opened before any write). Only
/// the first line counts: an older build's shorter record written over a longer one
/// leaves the longer one's tail after its newline.
fn parse(text: &str, path: &Path) -> Result<Option<Seen>> {
    let line = text.lines().next().unwrap_or_default().trim();
    if line.is_empty() {
        return Ok(None);
    }
    serde_json::from_str(line).map(Some).map_err(|e| {
        Error::Refused(format!(
            "rewind witness {} is unreadable ({e}); remove it only if the store is known to be intact",
            path.display()
        ))
    })
}

/// Opens a record file for reading and writing, `create`-ing it if asked.
fn open_record(path: &Path, create: bool) -> std::io::Result<File> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .create(create)
        .truncate(false)
        .open(path)
}

/// Rewrites the fixed-size record in place.
fn write_record(file: &mut File, seen: &Seen) -> std::io::Result<()> {
    let json = serde_json::to_string(seen).map_err(std::io::Error::other)?;
    let mut record = format!("{json:<width$}", width = RECORD - 1);
    record.push('\n');
    file.seek(SeekFrom::Start(0))?;
    file.write_all(record.as_bytes())
}

/// The directory this host's writers keep their witnesses in when given none:
/// `LEASEHOLD_STATE_DIR`, else [`default_dir`].
#[must_use]
pub fn host_dir() -> Option<PathBuf> {
    std::env::var_os("LEASEHOLD_STATE_DIR")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(default_dir)
}

/// The default directory of witnesses: `$XDG_STATE_HOME/leasehold/witness`, else
/// `$HOME/.local/state/leasehold/witness`.
#[must_use]
pub fn default_dir() -> Option<PathBuf> {
    let state = std::env::var_os("XDG_STATE_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME")
                .filter(|v| !v.is_empty())
                .map(|h| PathBuf::from(h).join(".local/state"))
        })?;
    Some(state.join("leasehold").join("witness"))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// A witness this user may not read or write is refused for good (an authority stops
    /// at once instead of waiting for a permission to arrive); other failures may pass.
    #[test]
    fn a_witness_without_permission_is_refused_not_waited_for() {
        use std::io::{Error as Io, ErrorKind};
        let path = Path::new("/state/leasehold/w");
        for (kind, code) in [
            (ErrorKind::PermissionDenied, "STORE_REFUSED"),
            (ErrorKind::ReadOnlyFilesystem, "STORE_REFUSED"),
            (ErrorKind::StorageFull, "STORE_UNAVAILABLE"),
            (ErrorKind::Other, "STORE_UNAVAILABLE"),
        ] {
            let e = unreadable(path, &Io::from(kind));
            assert_eq!(e.code(), code, "{kind:?}: {e}");
            assert!(
                e.to_string().contains("rewind witness /state/leasehold/w"),
                "{e}"
            );
        }
    }

    fn seen(store_id: i64, epoch: u64, revision: u64) -> Seen {
        Seen {
            store_id,
            epoch,
            revision,
            link: None,
            counts: None,
            server: None,
            milestone: None,
        }
    }

    fn on(server: i64, timeline: i64, seen: Seen) -> Seen {
        Seen {
            server: Some(ServerIdentity {
                system_identifier: server,
                timeline,
            }),
            ..seen
        }
    }

    #[test]
    fn another_cluster_is_refused_and_a_failover_named() {
        let why = judge(
            Some(on(1, 1, seen(7, 0, 10))),
            on(2, 1, seen(7, 0, 10)),
            None,
        )
        .unwrap_err();
        assert!(why.contains("another database cluster"), "{why}");
        let why = judge(
            Some(on(1, 1, seen(7, 0, 10))),
            on(1, 2, seen(7, 0, 9)),
            None,
        )
        .unwrap_err();
        assert!(why.contains("timeline 1 became 2"), "{why}");
        // A promotion that lost nothing is taken, and remembered.
        assert_eq!(
            judge(
                Some(on(1, 1, seen(7, 0, 10))),
                on(1, 2, seen(7, 0, 10)),
                None
            ),
            Ok(on(1, 2, seen(7, 0, 10)))
        );
        // A write transaction cannot see the server: the witnessed one is kept.
        assert_eq!(
            judge(Some(on(1, 1, seen(7, 0, 10))), seen(7, 0, 11), None),
            Ok(on(1, 1, seen(7, 0, 11)))
        );
    }

    #[test]
    fn a_store_never_seen_is_taken_as_it_is() {
        assert_eq!(judge(None, seen(7, 0, 3), None), Ok(seen(7, 0, 3)));
    }

    #[test]
    fn moving_forward_is_recorded() {
        assert_eq!(
            judge(Some(seen(7, 0, 3)), seen(7, 0, 9), None),
            Ok(seen(7, 0, 9))
        );
        assert_eq!(
            judge(Some(seen(7, 0, 3)), seen(7, 0, 3), None),
            Ok(seen(7, 0, 3))
        );
    }

    #[test]
    fn behind_the_witness_is_refused() {
        let why = judge(Some(seen(7, 0, 10)), seen(7, 0, 9), None).unwrap_err();
        assert!(why.contains("revision 9, behind revision 10"), "{why}");
    }

    #[test]
    fn another_store_under_the_name_is_refused() {
        let why = judge(Some(seen(7, 0, 10)), seen(8, 0, 50), None).unwrap_err();
        assert!(why.contains("another store"), "{why}");
    }

    #[test]
    fn an_older_epoch_is_refused_and_a_newer_one_adopted() {
        assert!(judge(Some(seen(7, 2, 10)), seen(7, 1, 99), None).is_err());
        assert_eq!(
            judge(Some(seen(7, 1, 10)), seen(9, 2, 1), None),
            Ok(seen(9, 2, 1))
        );
    }

    fn linked(revision: u64, byte: u8) -> Seen {
        Seen {
            link: Some(LinkHash([byte; 32])),
            counts: Some(ChainCounts::default()),
            ..seen(7, 0, revision)
        }
    }

    fn link_at(revision: u64, byte: u8) -> AtWitnessed {
        AtWitnessed::Link(ChainLink {
            revision,
            link: LinkHash([byte; 32]),
            nonce: "n".into(),
            counts: ChainCounts::default(),
        })
    }

    #[test]
    fn a_store_past_the_witness_along_another_history_is_a_fork() {
        let ahead = linked(20, 9);
        // The same history, gone on: taken.
        assert_eq!(
            judge(Some(linked(10, 1)), ahead, Some(&link_at(10, 1))),
            Ok(ahead)
        );
        let why = judge(Some(linked(10, 1)), ahead, Some(&link_at(10, 2))).unwrap_err();
        assert!(
            why.contains("revision 20") && why.contains("diverges at or before revision 10"),
            "{why}"
        );
        let why = judge(
            Some(linked(10, 1)),
            ahead,
            Some(&AtWitnessed::Absent { first: Some(15) }),
        )
        .unwrap_err();
        assert!(why.contains("chain starts at revision 15"), "{why}");
        // Trimmed past the witnessed revision, with nothing kept to compare: taken.
        let trimmed = AtWitnessed::Trimmed(Trimmed {
            from: 12,
            oldest: None,
            milestone: None,
        });
        assert!(judge(Some(linked(10, 1)), ahead, Some(&trimmed)).is_ok());
        // At the witnessed revision itself, with another link.
        let why = judge(Some(linked(10, 1)), linked(10, 2), None).unwrap_err();
        assert!(why.contains("diverges"), "{why}");
    }

    #[test]
    fn a_record_written_before_the_chain_still_loads() {
        let old = format!("{:<255}\n", r#"{"storeId":7,"epoch":0,"revision":3}"#);
        let tail = format!("{old}{}", "x".repeat(200));
        for text in [old, tail] {
            assert_eq!(parse(&text, Path::new("w")).unwrap(), Some(seen(7, 0, 3)));
        }
    }
}
