//! The statement that begins a write transaction: the write lock, and in the same message
//! what nearly every write reads first, so none of it is a round trip under the lock of its
//! own.

use std::borrow::Cow;

use postgres::{SimpleQueryMessage, SimpleQueryRow};

use super::bind::TextRow;
use super::literal;
use super::tx::{Known, PgTx};
use crate::clock::Millis;
use crate::model::{ChainCounts, ChainLink, LinkHash, WorkItem};
use crate::store::backend::WriteReads;
use crate::store::epoch::{STORE_EPOCH, STORE_ID};
use crate::store::sql::Driver;
use crate::store::sql::decode;
use crate::store::sql::statements::REVISION;

/// Begins a write transaction: takes the database's write lock (advisory key
/// `0x6c65617365686f6c`, "leasehol") and returns the transaction id, so a commit whose
/// acknowledgement is lost can be resolved with `txid_status`, then the store's revision
/// and epoch as they are under the lock (a statement of its own: a statement's snapshot
/// is taken when it starts, before the lock is granted), whether committed intake
/// requests wait (one index probe), so a claim with nothing to move pays no round trip,
/// the store's id (every write's rewind check compares it), and whether any handler is
/// paused, when the next schedule is due and whether any workflow instance waits to run
/// (an authority's poll asks all three: each a seek, and most polls then skip the read),
/// and the schema's version (a newer build may have upgraded the database since this
/// handle opened it: then this build's writes are refused, see [`Begun::schema_version`]);
/// then the chain's newest link, which the commit's own link follows (`store/chain.rs`).
/// Each of these was a round trip under the lock of its own. A write that names the work
/// items it will read first has them read here too ([`begin_write`]).
///
/// The write lock is waited for at most [`crate::store::stall::STALL_AFTER`] at a time: a longer
/// wait is a stall, logged with the holder's session before the writer queues again. The
/// bound is lifted before the meta read, so only the write lock's wait is taken for one.
///
/// A write transaction's prepared statements run their generic plans (`set_config` with
/// the lock, for this transaction only). Left to choose, the server plans a statement
/// afresh at every run while the custom plan looks cheaper, and under the write lock that
/// planning was a tenth of the holder's time (profiled beside an 8-authority drain). The
/// writes' statements lose nothing by it: each seeks one index by its leading columns, and
/// the partial indexes they use are matched by a literal predicate or a strict comparison,
/// which a generic plan proves as well as a custom one. Read transactions keep the
/// server's choice: their filters vary more, and a custom plan may pick an index by the
/// values bound.
///
/// Nor does a write transaction's statement go through the server's JIT compiler (`jit`
/// off for the transaction). A generic plan estimates a `LIMIT` it cannot see as the
/// whole table, and above `jit_above_cost` the server compiled the claim's read
/// ([`crate::store::sql::lanes::claim_reads_at_once`]) afresh at one run in five, about
/// two milliseconds each under the lock, for a statement that reads a few hundred rows by
/// index.
const BEGIN_WRITE: &str = "BEGIN; SET LOCAL lock_timeout = '3s'; \
     SELECT pg_advisory_xact_lock(7810756276994469740), txid_current()::text, \
            set_config('plan_cache_mode', 'force_generic_plan', true), \
            set_config('jit', 'off', true); \
     SET LOCAL lock_timeout TO DEFAULT; \
     SELECT (SELECT value FROM meta WHERE key = 'revision'), \
            (SELECT value FROM meta WHERE key = 'store_epoch'), \
            EXISTS (SELECT 1 FROM intake), \
            (SELECT value FROM meta WHERE key = 'store_id'), \
            EXISTS (SELECT 1 FROM handler_pauses), \
            (SELECT min(next_due) FROM schedules WHERE paused_at IS NULL), \
            EXISTS (SELECT 1 FROM instances WHERE next_eligible_at IS NOT NULL), \
            (SELECT value FROM meta WHERE key = 'schema_version'); \
     (SELECT revision, link, nonce, generations, completions \
       FROM chain ORDER BY revision DESC LIMIT 1)";

/// The chain's links at some revisions, beside its head in [`BEGIN_WRITE`]'s last result.
const AND_LINKS: &str = " UNION ALL SELECT revision, link, nonce, generations, completions \
     FROM chain WHERE revision IN ";

/// [`BEGIN_WRITE`], with the chain's links at `reads.links` beside its head (the revisions
/// this process's witnesses compare the store with: with several writers the head is
/// rarely one of them, and each was a round trip under the lock), then the work items
/// `reads.items` (the items a batch of completions or a renewal round reads first) when
/// there are any and each id can be a literal. Answers the statement and the items it
/// reads: `reads.items`, or none when it reads none (then the transaction reads them
/// itself, and a server that refuses an id says so there).
pub(super) fn begin_write(reads: WriteReads<'_>) -> (Cow<'static, str>, &[&str]) {
    let mut sql = Cow::Borrowed(BEGIN_WRITE);
    if !reads.links.is_empty() {
        // The head's `ORDER BY … LIMIT 1` is its own branch: it is in parentheses.
        let revisions: Vec<String> = reads.links.iter().map(u64::to_string).collect();
        sql = Cow::Owned(format!(
            "{BEGIN_WRITE}{AND_LINKS}({})",
            revisions.join(", ")
        ));
    }
    match (reads.items.is_empty(), literal::work_by_ids(reads.items)) {
        (false, Some(read)) => (Cow::Owned(format!("{sql}; {read}")), reads.items),
        _ => (sql, &[]),
    }
}

/// What [`begin_write`] answers: the transaction id, what the lock's statement read, and
/// the work items the write named, under the lock.
pub(super) struct Begun {
    pub(super) txid: i64,
    revision: Option<i64>,
    epoch: Option<i64>,
    intake: bool,
    store_id: Option<i64>,
    schema_version: Option<i64>,
    known: Known,
    /// The chain's head and the links asked for.
    links: Vec<ChainLink>,
    /// The work items named, when they could be read with the lock.
    work: Option<Vec<WorkItem>>,
}

impl Begun {
    /// Reads the answer of [`begin_write`], which read the work items `reads`.
    pub(super) fn of(messages: &[SimpleQueryMessage], reads: &[&str]) -> Option<Self> {
        // One result per statement, each ended by its command's completion: BEGIN, SET, the
        // lock, SET, the meta values, the chain's head (with the links asked for), and the
        // named work items.
        let mut results: Vec<Vec<&SimpleQueryRow>> = vec![Vec::new()];
        for m in messages {
            match m {
                SimpleQueryMessage::Row(row) => results.last_mut()?.push(row),
                SimpleQueryMessage::CommandComplete(_) => results.push(Vec::new()),
                _ => {}
            }
        }
        let first = |n: usize| results.get(n).and_then(|rows| rows.first().copied());
        let txid = first(2)?.get(1)?.parse().ok()?;
        let meta = first(4);
        let int = |i: usize| meta.and_then(|row| row.get(i)).and_then(|v| v.parse().ok());
        // The head, and the links at the revisions asked for (one row each that exists);
        // none when a row does not read (the transaction reads them itself).
        let links: Vec<ChainLink> = results
            .get(5)
            .into_iter()
            .flatten()
            .map(|row| {
                let int = |i: usize| row.get(i).and_then(|v| v.parse().ok());
                Some(ChainLink {
                    revision: int(0)?,
                    link: LinkHash::parse(row.get(1)?).ok()?,
                    nonce: row.get(2)?.to_owned(),
                    counts: ChainCounts {
                        generations: int(3)?,
                        completions: int(4)?,
                    },
                })
            })
            .collect::<Option<_>>()
            .unwrap_or_default();
        // The seventh statement's rows, only when it was sent (then there are seven results
        // and the empty one after the last completion). A row this build cannot read leaves
        // the items to the transaction's own read, which names the damage.
        let work = results
            .get(6)
            .filter(|_| !reads.is_empty() && results.len() == 8)
            .and_then(|rows| {
                rows.iter()
                    .map(|r| decode::work(&TextRow(r)).ok())
                    .collect()
            });
        Some(Self {
            txid,
            revision: int(0),
            epoch: int(1),
            intake: meta.and_then(|row| row.get(2)) == Some("t"),
            store_id: int(3),
            schema_version: int(7),
            known: Known {
                no_pauses: meta.and_then(|row| row.get(4)) == Some("f"),
                next_schedule: meta.map(|row| {
                    row.get(5)
                        .and_then(|v| v.parse().ok())
                        .unwrap_or(Millis::MAX)
                }),
                no_instances: meta.and_then(|row| row.get(6)) == Some("f"),
            },
            links,
            work,
        })
    }

    /// The schema version the database holds under the write lock (compared with this
    /// build's where every transaction begins, `PostgresBackend::begin`).
    pub(super) fn schema_version(&self) -> Option<i64> {
        self.schema_version
    }

    /// Hands what was read to the transaction, which then reads none of it again.
    pub(super) fn remember(&self, tx: &mut PgTx<'_>, reads: &[&str]) {
        if let Some(revision) = self.revision {
            tx.remember_meta(REVISION, revision);
        }
        if let Some(epoch) = self.epoch {
            tx.remember_meta(STORE_EPOCH, epoch);
        }
        if let Some(id) = self.store_id {
            tx.remember_meta(STORE_ID, id);
        }
        tx.intake_waits(self.intake);
        tx.know(self.known);
        tx.chain_links(&self.links);
        if let Some(work) = &self.work {
            tx.fetched(reads, work);
        }
    }
}
