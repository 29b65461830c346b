//! The compatibility key: which build may execute which durable work (fail-closed).

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// `{ schemaVersion, schemaFingerprint, serverContract, semanticFingerprint }`. Two keys are
/// compatible only when all four fields are equal.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CompatibilityKey {
    pub schema_version: u32,
    pub schema_fingerprint: String,
    pub server_contract: String,
    pub semantic_fingerprint: String,
}

impl CompatibilityKey {
    /// A short, stable digest of all four fields: what items store and claims filter on.
    #[must_use]
    pub fn digest(&self) -> String {
        let mut hasher = Sha256::new();
        for part in [
            self.schema_version.to_string().as_str(),
            &self.schema_fingerprint,
            &self.server_contract,
            &self.semantic_fingerprint,
        ] {
            hasher.update(part.as_bytes());
            hasher.update([0u8]);
        }
        hex::encode(&hasher.finalize()[..8])
    }
}

/// The compatibility digests one claimer may run: one per handler it registers (at the
/// compatibility part of its version) and one per workflow definition it can run whole.
/// An item or instance is claimable by it when its digest is a member; a single digest
/// converts into a set of one, so a caller that knows only one key passes it as it is.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CompatSet(BTreeSet<String>);

impl CompatSet {
    /// The set of `digests`.
    pub fn new<S: Into<String>>(digests: impl IntoIterator<Item = S>) -> Self {
        Self(digests.into_iter().map(Into::into).collect())
    }

    /// Whether `digest` is a member.
    #[must_use]
    pub fn contains(&self, digest: &str) -> bool {
        self.0.contains(digest)
    }

    /// The member equal to `digest`, if any: the key a claim of that digest is granted under.
    #[must_use]
    pub fn member(&self, digest: &str) -> Option<&str> {
        self.0.get(digest).map(String::as_str)
    }

    /// The members, sorted.
    pub fn iter(&self) -> impl Iterator<Item = &str> {
        self.0.iter().map(String::as_str)
    }

    /// Adds `digest`.
    pub fn insert(&mut self, digest: impl Into<String>) {
        self.0.insert(digest.into());
    }

    /// How many members.
    #[must_use]
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// A short digest of the members: one label for every process that runs the same
    /// code (what a registration shows as its key); it decides nothing.
    #[must_use]
    pub fn digest(&self) -> String {
        let mut hasher = Sha256::new();
        for member in &self.0 {
            hasher.update(member.as_bytes());
            hasher.update([0u8]);
        }
        hex::encode(&hasher.finalize()[..8])
    }

    /// Whether it has no member (it claims nothing).
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl From<&str> for CompatSet {
    fn from(digest: &str) -> Self {
        Self::new([digest])
    }
}

impl From<&String> for CompatSet {
    fn from(digest: &String) -> Self {
        Self::new([digest.as_str()])
    }
}

impl From<String> for CompatSet {
    fn from(digest: String) -> Self {
        Self::new([digest])
    }
}

impl From<&CompatSet> for CompatSet {
    fn from(set: &CompatSet) -> Self {
        set.clone()
    }
}

impl std::fmt::Display for CompatSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let members: Vec<&str> = self.iter().collect();
        f.write_str(&members.join(","))
    }
}

/// Which compatibility digest work for a handler is stamped with: a producer's or an
/// observer's own key for that handler, or `None` when it does not know the handler.
pub trait HandlerKeys {
    fn key_for(&self, handler: &str) -> Option<String>;
}

/// One digest for every handler: a caller that already holds the key.
impl HandlerKeys for &str {
    fn key_for(&self, _handler: &str) -> Option<String> {
        Some((*self).to_owned())
    }
}

/// One digest for every handler: a caller that already holds the key.
impl HandlerKeys for &String {
    fn key_for(&self, _handler: &str) -> Option<String> {
        Some((*self).clone())
    }
}
