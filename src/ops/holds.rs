//! What is held and by whom, for the dashboard's leases view and `inspect leases` alike:
//! the named leases by resource, then the work items claimed now by id (who holds which
//! item, under which generation, until when). Both lists are keyset pages of the store's
//! own indexes (the lease table's key, the work table's claimed items), read as one list:
//! a page runs from the leases into the claims and back, so a reader pages through both
//! with the same keys (`lease:ID`, `claim:ID`).

use crate::error::Result;
use crate::model::work::{WorkFilter, WorkState};
use crate::model::{Lease, Page, PageRequest, WorkItem};
use crate::store::Store;

/// One page of the leases view: leases first, then claims, each ascending by id.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Holds {
    pub leases: Vec<Lease>,
    pub claims: Vec<WorkItem>,
}

/// Which of the two lists a page key is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Section {
    Lease,
    Claim,
}

impl Section {
    fn word(self) -> &'static str {
        match self {
            Self::Lease => "lease",
            Self::Claim => "claim",
        }
    }

    /// The page key of the row `id` of this list.
    #[must_use]
    fn key(self, id: &str) -> String {
        format!("{}:{id}", self.word())
    }

    /// The list and the id a page key names; a key without either prefix names a lease
    /// (what `inspect leases --after RESOURCE` always meant).
    fn parse(key: &str) -> (Self, &str) {
        [Self::Lease, Self::Claim]
            .into_iter()
            .find_map(|s| Some((s, key.strip_prefix(s.word())?.strip_prefix(':')?)))
            .unwrap_or((Self::Lease, key))
    }
}

/// Only the items claimed now.
fn claimed() -> WorkFilter {
    WorkFilter {
        states: vec![WorkState::Claimed],
        ..WorkFilter::default()
    }
}

impl Holds {
    /// The page `page` asks for: forward from a lease into the claims after the last
    /// lease, backward from a claim into the leases before the first claim (End starts at
    /// the last claim).
    ///
    /// # Errors
    /// A store failure.
    pub fn read(store: &Store, page: &PageRequest) -> Result<Self> {
        let limit = page.limit.max(1);
        let at = page.after.as_deref().map(Section::parse);
        let request = |id: Option<&str>, n: usize| PageRequest {
            after: id.map(str::to_owned),
            limit: n,
            backwards: page.backwards,
        };
        let leases = |id, n| -> Result<Vec<Lease>> { Ok(store.list_leases(&request(id, n))?.rows) };
        let claims = |id, n| -> Result<Vec<WorkItem>> {
            let Page { rows, .. } = store.list_work(&claimed(), &request(id, n))?;
            Ok(rows)
        };
        Ok(match (page.backwards, at) {
            (false, Some((Section::Claim, id))) => Self {
                leases: Vec::new(),
                claims: claims(Some(id), limit)?,
            },
            (false, at) => {
                let leases = leases(at.map(|(_, id)| id), limit)?;
                let rest = limit.saturating_sub(leases.len());
                let claims = if rest > 0 {
                    claims(None, rest)?
                } else {
                    Vec::new()
                };
                Self { leases, claims }
            }
            (true, Some((Section::Lease, id))) => Self {
                leases: leases(Some(id), limit)?,
                claims: Vec::new(),
            },
            (true, at) => {
                let claims = claims(at.map(|(_, id)| id), limit)?;
                let rest = limit.saturating_sub(claims.len());
                let leases = if rest > 0 {
                    leases(None, rest)?
                } else {
                    Vec::new()
                };
                Self { leases, claims }
            }
        })
    }

    /// How many rows the page holds.
    #[must_use]
    pub fn len(&self) -> usize {
        self.leases.len() + self.claims.len()
    }

    /// Whether the page holds no row.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The page keys of the first and the last row.
    #[must_use]
    pub fn ends(&self) -> (Option<String>, Option<String>) {
        let lease = |l: &Lease| Section::Lease.key(&l.resource_id);
        let claim = |w: &WorkItem| Section::Claim.key(&w.id);
        let first = self
            .leases
            .first()
            .map(lease)
            .or_else(|| self.claims.first().map(claim));
        let last = self
            .claims
            .last()
            .map(claim)
            .or_else(|| self.leases.last().map(lease));
        (first, last)
    }
}
