//! The chain over the store's history: every transaction that commits a revision `R` also
//! writes the link of `R`,
//!
//! ```text
//! link(R) = SHA-256(link(R-1) ‖ R ‖ digest of the grants and writes stamped R ‖ nonce)
//! ```
//!
//! with the history's counts up to `R` (generations minted, completions acknowledged).
//! The nonce is drawn from the store's id source for each commit, so two commits at one
//! revision on two forks of a store (an older copy put back and written again) never share
//! a link, even when they wrote the same rows. A host that remembers the link of the
//! highest revision it saw (`witness.rs`) can then tell a store that went on from that
//! history from one that only passed its revision on another; and `leasehold check`
//! recomputes every kept link from the rows, so an edited, removed or truncated history is
//! named by the revision where it happens.
//!
//! The rows are read back in the committing transaction by the `revision` index (the
//! transaction wrote them last, so the seek finds them at the end of the index), over the
//! same reads the checker makes (`Tx::stamped`); PostgreSQL, which holds a transaction's
//! writes back to send them with its `COMMIT`, answers from the rows it holds, reads the
//! chain's head with the write lock and sends the new link with the commit, so a link
//! costs it no round trip under the lock. Links are trimmed with the history they chain (`record_write`)
//! and carried by `copy`.

use sha2::{Digest, Sha256};

use super::{Store, Tx};
use crate::error::Result;
use crate::ids::IdSource;
use crate::model::{ChainCounts, ChainLink, Grant, LinkHash, WriteRecord, WriteVerb};

/// Links, grants and writes read per page while the chain is verified.
const PAGE: usize = 1_024;

/// Every revision that is a multiple of this is a *milestone*: its link stays when
/// retention trims the history around it, for `MILESTONE_SPAN` (2^22) revisions below the
/// history kept, so a host's witness that saw a revision retention has since trimmed still
/// has a link the store keeps to compare (`witness.rs`).
pub const MILESTONE: u64 = 1 << 16;

/// How far below the kept history every milestone stays; below that only the multiples of
/// [`SPARSE_MILESTONE`] do. At a million revisions a day that is 64 links (about four
/// days of trimmed history, milestone by milestone) and then one link every four days,
/// under 100 a year: a few kilobytes however long the store lives.
const MILESTONE_SPAN: u64 = 1 << 22;
const SPARSE_MILESTONE: u64 = 1 << 22;

/// The milestone at or below `revision` (0: none yet).
#[must_use]
pub fn milestone_at_or_below(revision: u64) -> u64 {
    revision - revision % MILESTONE
}

/// The condition (over a `revision` column, `?1` the first revision kept whole and `?2`
/// [`sparse_below`] of it) of the links a trim removes: see [`MILESTONE`].
pub const TRIMMED_LINKS: &str =
    "revision < ?1 AND (revision % 65536 <> 0 OR (revision < ?2 AND revision % 4194304 <> 0))";

/// Below which revision only the sparse milestones stay, for a trim to `keep_from`.
#[must_use]
pub fn sparse_below(keep_from: u64) -> u64 {
    keep_from.saturating_sub(MILESTONE_SPAN)
}

/// Whether a trim to `keep_from` removes the link of `revision`: the same rule as
/// [`TRIMMED_LINKS`].
#[must_use]
pub fn trims_link(revision: u64, keep_from: u64) -> bool {
    revision < keep_from
        && (!revision.is_multiple_of(MILESTONE)
            || (revision < sparse_below(keep_from) && !revision.is_multiple_of(SPARSE_MILESTONE)))
}

/// The digest of one revision's history rows and what they add to the counts.
fn rows(grants: &[Grant], writes: &[WriteRecord]) -> Result<([u8; 32], ChainCounts)> {
    let mut digest = Sha256::new();
    let mut added = ChainCounts::default();
    for grant in grants {
        digest.update(b"g");
        digest.update(encoded(grant)?);
        added.generations += 1;
    }
    for write in writes {
        digest.update(b"w");
        digest.update(encoded(write)?);
        if write.accepted && write.verb == WriteVerb::Complete {
            added.completions += 1;
        }
    }
    Ok((digest.finalize().into(), added))
}

/// One history row as the digest reads it: its JSON.
fn encoded(row: &impl serde::Serialize) -> Result<Vec<u8>> {
    serde_json::to_vec(row).map_err(|e| crate::error::Error::Corrupt(e.to_string()))
}

/// The link of `revision` after `prev` (`None`: the first link of the chain).
fn next(
    prev: Option<&ChainLink>,
    revision: u64,
    grants: &[Grant],
    writes: &[WriteRecord],
    nonce: String,
) -> Result<ChainLink> {
    let (digest, added) = rows(grants, writes)?;
    let base = prev.map(|p| p.counts).unwrap_or_default();
    let mut h = Sha256::new();
    h.update(prev.map(|p| p.link).unwrap_or_default().0);
    h.update(revision.to_be_bytes());
    h.update(digest);
    h.update(nonce.as_bytes());
    Ok(ChainLink {
        revision,
        link: LinkHash(h.finalize().into()),
        nonce,
        counts: ChainCounts {
            generations: base.generations + added.generations,
            completions: base.completions + added.completions,
        },
    })
}

/// Writes the link of the revision this transaction committed, if it committed one (its
/// revision is above `before`, the revision it started at); returns it. `Store` calls it
/// at the end of every write transaction; a caller of `Backend::write` that commits a
/// revision of its own (a test planting history rows) calls it last, or `check` names the
/// revision as one without a link.
///
/// # Errors
/// A store failure.
pub fn extend(tx: &mut dyn Tx, before: u64, ids: &dyn IdSource) -> Result<Option<ChainLink>> {
    let revision = tx.revision()?;
    if revision <= before {
        return Ok(None);
    }
    let prev = tx.link(revision - 1)?;
    let (grants, writes) = tx.stamped(revision)?;
    let link = next(prev.as_ref(), revision, &grants, &writes, ids.next_nonce())?;
    tx.put_link(&link)?;
    Ok(Some(link))
}

/// What is wrong with a store's chain, at the revision where it shows.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase", tag = "kind")]
pub enum ChainBreak {
    /// A kept link does not recompute from its predecessor and the rows stamped with its
    /// revision: the history (or the link) was edited.
    Edited { revision: u64 },
    /// Revisions `from` to `to` between the first kept link and the head have no link:
    /// links were removed, or the revisions were written by something that does not chain.
    Missing { from: u64, to: u64 },
    /// The head revision has no link, though earlier revisions have: the newest links
    /// were cut off (truncated history).
    Truncated { revision: u64, last: u64 },
}

impl ChainBreak {
    /// The revision where the break shows.
    #[must_use]
    pub fn revision(&self) -> u64 {
        match self {
            Self::Edited { revision }
            | Self::Missing { from: revision, .. }
            | Self::Truncated { revision, .. } => *revision,
        }
    }

    /// One sentence for people.
    #[must_use]
    pub fn sentence(&self) -> String {
        match self {
            Self::Edited { revision } => format!(
                "the chain link of revision {revision} does not recompute from the history rows stamped with it: the history or the link was edited"
            ),
            Self::Missing { from, to } if from == to => format!(
                "revision {from} has no chain link, between the first kept link and the head: its link was removed"
            ),
            Self::Missing { from, to } => format!(
                "revisions {from} to {to} have no chain link, between the first kept link and the head: their links were removed"
            ),
            Self::Truncated { revision, last } => format!(
                "the store is at revision {revision} but its chain ends at revision {last}: the newest history was cut off"
            ),
        }
    }
}

/// What verifying the chain found.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ChainReport {
    /// The first and the last kept link (`None`: the store keeps none, e.g. upgraded and
    /// never written since).
    pub span: Option<(u64, u64)>,
    /// Every break, in revision order.
    pub breaks: Vec<ChainBreak>,
}

/// The three streams the verification walks together, each in revision order.
struct Walk<'t> {
    tx: &'t mut dyn Tx,
    grants: std::collections::VecDeque<Grant>,
    grants_after: u64,
    grants_done: bool,
    writes: std::collections::VecDeque<WriteRecord>,
    writes_after: u64,
    writes_done: bool,
}

impl Walk<'_> {
    /// The rows stamped `revision` (every row below it is skipped: it predates the chain).
    fn rows_at(&mut self, revision: u64) -> Result<(Vec<Grant>, Vec<WriteRecord>)> {
        let tx = &mut *self.tx;
        let grants = take_at(
            &mut self.grants,
            (&mut self.grants_after, &mut self.grants_done),
            revision,
            |after| tx.grants(None, after, PAGE),
            |g| g.revision,
        )?;
        let tx = &mut *self.tx;
        let writes = take_at(
            &mut self.writes,
            (&mut self.writes_after, &mut self.writes_done),
            revision,
            |after| tx.writes(None, after, PAGE),
            |w| w.revision,
        )?;
        Ok((grants, writes))
    }
}

/// Takes the rows of `revision` from a buffered, paged stream.
fn take_at<T>(
    buf: &mut std::collections::VecDeque<T>,
    (after, done): (&mut u64, &mut bool),
    revision: u64,
    mut page: impl FnMut(u64) -> Result<Vec<T>>,
    rev: impl Fn(&T) -> u64,
) -> Result<Vec<T>> {
    let mut out = Vec::new();
    loop {
        while buf.front().is_some_and(|r| rev(r) < revision) {
            buf.pop_front();
        }
        while buf.front().is_some_and(|r| rev(r) == revision) {
            out.extend(buf.pop_front());
        }
        if !buf.is_empty() || *done {
            return Ok(out);
        }
        let rows = page((*after).max(revision.saturating_sub(1)))?;
        *done = rows.len() < PAGE;
        if let Some(last) = rows.last() {
            *after = rev(last);
        }
        buf.extend(rows);
    }
}

/// Verifies every link of the kept history in one read snapshot (see
/// [`Store::verify_chain`]); the milestones kept below it have no rows to recompute from.
fn verify(tx: &mut dyn Tx) -> Result<ChainReport> {
    let head = tx.revision()?;
    let mut report = ChainReport::default();
    let mut prev: Option<ChainLink> = None;
    let from = super::retention::history_from(tx)?;
    let mut links = tx.links(from.saturating_sub(1), PAGE)?;
    let Some(first) = links.first().map(|l| l.revision) else {
        return Ok(report);
    };
    let mut walk = Walk {
        tx,
        grants: std::collections::VecDeque::new(),
        grants_after: first - 1,
        grants_done: false,
        writes: std::collections::VecDeque::new(),
        writes_after: first - 1,
        writes_done: false,
    };
    loop {
        let mut full = links.len() == PAGE;
        // Links above the head were left by revisions the store no longer has (lowered,
        // or put back by hand); they are overwritten as those revisions are committed again.
        links.retain(|l| l.revision <= head);
        full &= links.len() == PAGE;
        for link in std::mem::take(&mut links) {
            if let Some(p) = &prev {
                if p.revision + 1 < link.revision {
                    report.breaks.push(ChainBreak::Missing {
                        from: p.revision + 1,
                        to: link.revision - 1,
                    });
                }
                let (grants, writes) = walk.rows_at(link.revision)?;
                let adjoining = p.revision + 1 == link.revision;
                let expected = next(
                    adjoining.then_some(p),
                    link.revision,
                    &grants,
                    &writes,
                    link.nonce.clone(),
                )?;
                if adjoining && (expected.link != link.link || expected.counts != link.counts) {
                    report.breaks.push(ChainBreak::Edited {
                        revision: link.revision,
                    });
                }
            }
            prev = Some(link);
        }
        let after = prev.as_ref().map_or(0, |p| p.revision);
        if !full {
            break;
        }
        links = walk.tx.links(after, PAGE)?;
    }
    let last = prev.map_or(first, |p| p.revision);
    if last < head {
        report.breaks.push(ChainBreak::Truncated {
            revision: head,
            last,
        });
    }
    report.span = Some((first, last));
    Ok(report)
}

impl Store {
    /// Recomputes every kept link of the chain from the history rows, in one read
    /// snapshot, from the first link of the kept history to the head: what does not recompute, is
    /// missing, or stops short of the store's revision.
    ///
    /// # Errors
    /// A store failure.
    pub fn verify_chain(&self) -> Result<ChainReport> {
        self.read(verify)
    }

    /// The link of `revision`, if the store keeps one.
    ///
    /// # Errors
    /// A store failure.
    pub fn chain_link(&self, revision: u64) -> Result<Option<ChainLink>> {
        self.read(|tx| tx.link(revision))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn the_nonce_parts_two_forks_that_wrote_the_same_rows() {
        let a = next(None, 1, &[], &[], "link-a".into()).unwrap();
        let b = next(None, 1, &[], &[], "link-b".into()).unwrap();
        assert_ne!(a.link, b.link);
        let again = next(None, 1, &[], &[], "link-a".into()).unwrap();
        assert_eq!(a, again, "a link recomputes");
    }

    #[test]
    fn a_trim_keeps_the_milestones_below_the_kept_history() {
        for n in [MILESTONE, SPARSE_MILESTONE] {
            assert!(
                TRIMMED_LINKS.contains(&format!("% {n} <>")),
                "{TRIMMED_LINKS}"
            );
        }
        let keep_from = 10 * MILESTONE_SPAN + 5;
        assert!(trims_link(keep_from - 1, keep_from));
        assert!(!trims_link(keep_from, keep_from));
        assert!(!trims_link(milestone_at_or_below(keep_from - 1), keep_from));
        let old = sparse_below(keep_from) - MILESTONE;
        assert!(!old.is_multiple_of(SPARSE_MILESTONE) && trims_link(old, keep_from));
        assert!(!trims_link(SPARSE_MILESTONE, keep_from));
    }

    #[test]
    fn a_link_binds_its_predecessor() {
        let a = next(None, 1, &[], &[], "n".into()).unwrap();
        let b = next(None, 1, &[], &[], "m".into()).unwrap();
        let after_a = next(Some(&a), 2, &[], &[], "x".into()).unwrap();
        let after_b = next(Some(&b), 2, &[], &[], "x".into()).unwrap();
        assert_ne!(after_a.link, after_b.link);
    }
}
