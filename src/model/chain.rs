//! One link of the chain over a store's history: what a commit at one revision wrote,
//! bound to every commit before it. The links are computed and checked in
//! `store/chain.rs`; this is the row a store keeps per revision.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A SHA-256 value, shown and stored as 64 hex digits. Copied freely: the rewind witness
/// keeps one in its fixed-size record.
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct LinkHash(pub [u8; 32]);

impl LinkHash {
    /// Reads 64 hex digits.
    ///
    /// # Errors
    /// A one-line reason for anything else.
    pub fn parse(text: &str) -> Result<Self, String> {
        let mut out = [0u8; 32];
        hex::decode_to_slice(text, &mut out)
            .map_err(|e| format!("a chain link is 64 hex digits ({e})"))?;
        Ok(Self(out))
    }

    /// The first 12 hex digits, for one line of text.
    #[must_use]
    pub fn short(&self) -> String {
        hex::encode(&self.0[..6])
    }
}

impl fmt::Display for LinkHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&hex::encode(self.0))
    }
}

impl fmt::Debug for LinkHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "LinkHash({self})")
    }
}

impl Serialize for LinkHash {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_string())
    }
}

impl<'de> Deserialize<'de> for LinkHash {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        Self::parse(&text).map_err(serde::de::Error::custom)
    }
}

/// What the history held up to a revision, summed link by link: a fork's lost work is the
/// difference between two of these.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ChainCounts {
    /// Grants recorded: each one a generation minted.
    pub generations: u64,
    /// Completions acknowledged: accepted fenced `complete` writes.
    pub completions: u64,
}

impl ChainCounts {
    /// What `self` holds beyond `other`, per count (never below zero).
    #[must_use]
    pub fn beyond(self, other: Self) -> Self {
        Self {
            generations: self.generations.saturating_sub(other.generations),
            completions: self.completions.saturating_sub(other.completions),
        }
    }
}

/// The link of one committed revision.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ChainLink {
    pub revision: u64,
    /// SHA-256 of the previous link, the revision, the digest of the history rows stamped
    /// with it and the nonce.
    pub link: LinkHash,
    /// Drawn per commit, so two commits at one revision on two forks never share a link
    /// even when they wrote the same rows.
    pub nonce: String,
    /// The history's counts up to and including this revision.
    pub counts: ChainCounts,
}
