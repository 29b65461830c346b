//! Whether a claim still holds: a claim whose lease lapsed is not reclaimed by itself. It
//! stays in its owner's name (and fenced to that owner's generation) until another
//! authority claims it under a new generation, so "owned by X" alone would overstate what
//! X holds. Every view that shows a claim says which of the two it is.

use serde::Serialize;

use crate::clock::Millis;
use crate::error::Result;
use crate::model::{Lease, WorkItem, WorkState};
use crate::store::Store;

/// Where a claim stands at one instant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase", tag = "claim")]
pub enum ClaimStanding {
    /// The lease is still running: it expires in `expires_in_ms`.
    Held { expires_in_ms: Millis },
    /// The lease lapsed `lapsed_ms` ago and nobody has reclaimed it yet.
    AwaitingReclaim { lapsed_ms: Millis },
}

impl ClaimStanding {
    /// The standing of a claim whose lease runs until `expires_at`, at `now`. A lease is
    /// held while `expires_at > now`, exactly as the store decides it.
    #[must_use]
    pub fn at(expires_at: Millis, now: Millis) -> Self {
        if expires_at > now {
            Self::Held {
                expires_in_ms: expires_at - now,
            }
        } else {
            Self::AwaitingReclaim {
                lapsed_ms: now - expires_at,
            }
        }
    }

    /// The standing of an unreleased lease (`None` once released: nobody claims it).
    #[must_use]
    pub fn of_lease(lease: &Lease, now: Millis) -> Option<Self> {
        lease
            .released_at
            .is_none()
            .then(|| Self::at(lease.expires_at, now))
    }

    /// The standing of a work item's claim (`None` unless it is claimed).
    #[must_use]
    pub fn of_work(item: &WorkItem, now: Millis) -> Option<Self> {
        match (item.state, item.lease_expires_at) {
            (WorkState::Claimed, Some(expires_at)) => Some(Self::at(expires_at, now)),
            _ => None,
        }
    }

    /// Whether the lease lapsed without a reclaim.
    #[must_use]
    pub fn is_expired(self) -> bool {
        matches!(self, Self::AwaitingReclaim { .. })
    }

    /// How long ago the lease lapsed, for a lapsed claim.
    #[must_use]
    pub fn lapsed_ms(self) -> Option<Millis> {
        match self {
            Self::Held { .. } => None,
            Self::AwaitingReclaim { lapsed_ms } => Some(lapsed_ms),
        }
    }

    /// [`expired_text`] for a lapsed claim; `None` for a held one.
    #[must_use]
    pub fn expired_text(self) -> Option<String> {
        self.lapsed_ms().map(expired_text)
    }
}

/// `expired, awaiting reclaim (12s)`: what every view says of a claim whose lease lapsed
/// `lapsed_ms` ago without a reclaim.
#[must_use]
pub fn expired_text(lapsed_ms: Millis) -> String {
    format!("expired, awaiting reclaim ({}s)", lapsed_ms / 1_000)
}

/// How many claims one owner has, and how many of them have lapsed unreclaimed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct OwnedClaims {
    pub claimed: usize,
    pub expired: usize,
}

impl OwnedClaims {
    /// Counts `owner`'s claims at `now` in the store (an index count, however many it
    /// holds).
    ///
    /// # Errors
    /// A store failure.
    pub fn read(store: &Store, owner: &str, now: Millis) -> Result<Self> {
        let (claimed, expired) = store.read(|tx| tx.claimed_counts(owner, now))?;
        let count = |n: u64| usize::try_from(n).unwrap_or(usize::MAX);
        Ok(Self {
            claimed: count(claimed),
            expired: count(expired),
        })
    }

    /// `4`, or `4 (3 expired)` when some lapsed.
    #[must_use]
    pub fn text(self) -> String {
        if self.expired == 0 {
            self.claimed.to_string()
        } else {
            format!("{} ({} expired)", self.claimed, self.expired)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_claim_lapses_at_its_expiry_instant() {
        assert_eq!(
            ClaimStanding::at(10_000, 9_999),
            ClaimStanding::Held { expires_in_ms: 1 }
        );
        let at_expiry = ClaimStanding::at(10_000, 10_000);
        assert!(
            at_expiry.is_expired(),
            "expiresAt <= now is lapsed, as the store says"
        );
        assert_eq!(
            at_expiry.expired_text().as_deref(),
            Some("expired, awaiting reclaim (0s)")
        );
        assert_eq!(
            ClaimStanding::at(10_000, 22_999).expired_text().as_deref(),
            Some("expired, awaiting reclaim (12s)")
        );
        assert_eq!(ClaimStanding::at(10_000, 5_000).expired_text(), None);
    }

    #[test]
    fn owned_text_says_how_many_lapsed() {
        let owned = OwnedClaims {
            claimed: 4,
            expired: 4,
        };
        assert_eq!(owned.text(), "4 (4 expired)");
        assert_eq!(
            OwnedClaims {
                claimed: 2,
                expired: 0
            }
            .text(),
            "2"
        );
    }
}
