//! The compatibility key: which build may execute which durable work (fail-closed)
//! (docs/ARCHITECTURE.md#compatibility).
//!
//! Every durable item records the digest of the key of the code that will run it, and an
//! authority claims only items whose digest is in its set ([`CompatSet`]). The key follows
//! what executes, not a build's name: a work item (effect, schedule firing, cursor) carries
//! [`handler_key`] of its handler — the handler's name and the compatibility part of its
//! declared semantic version ([`HandlerVersion::compatibility_part`]) — so a patch or minor
//! release of a handler (`1.2.0` → `1.3.0`) runs the old build's items and a major bump
//! (`1.x` → `2.0.0`, or `0.3` → `0.4`) does not. A workflow instance's key, over its
//! definition and the handlers its actions need, is `workflow::keys`'s. The human
//! `--build` tag is a label shown to people and enters no key.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::HandlerVersion;

/// The schema version this build reads and writes.
pub const SCHEMA_VERSION: u32 = 1;

/// Identifies the durable schema this build expects (bumped with any layout change).
pub const SCHEMA_FINGERPRINT: &str = "leasehold-schema-1";

/// The contract between authorities and the store.
pub const SERVER_CONTRACT: &str = "leasehold.v1";

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

    /// The key of code whose executable meaning is `fields` (names and compatibility parts),
    /// hashed under `domain` (`handler`, `workflow`) so that no two kinds of code share one.
    pub fn of_meaning<'a>(domain: &str, fields: impl IntoIterator<Item = &'a str>) -> Self {
        let mut hasher = Sha256::new();
        hasher.update(domain.as_bytes());
        hasher.update([0u8]);
        for field in fields {
            hasher.update(field.as_bytes());
            hasher.update([0u8]);
        }
        Self {
            schema_version: SCHEMA_VERSION,
            schema_fingerprint: SCHEMA_FINGERPRINT.to_owned(),
            server_contract: SERVER_CONTRACT.to_owned(),
            semantic_fingerprint: hex::encode(hasher.finalize()),
        }
    }
}

/// The digest of the key of `handler`'s work at `version`: the semantic fingerprint hashes
/// the name and the version's compatibility part.
#[must_use]
pub fn handler_key(handler: &str, version: &HandlerVersion) -> String {
    CompatibilityKey::of_meaning("handler", [handler, version.compatibility_part()]).digest()
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

/// Each handler at its own version, none for a handler not listed.
impl HandlerKeys for &BTreeMap<String, HandlerVersion> {
    fn key_for(&self, handler: &str) -> Option<String> {
        self.get(handler)
            .map(|version| handler_key(handler, version))
    }
}

/// Every handler at one version: a producer that knows the version its work runs at.
impl HandlerKeys for &HandlerVersion {
    fn key_for(&self, handler: &str) -> Option<String> {
        Some(handler_key(handler, self))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(text: &str) -> HandlerVersion {
        HandlerVersion::parse(text).expect(text)
    }

    #[test]
    fn a_minor_release_keeps_the_key_a_major_one_changes_it() {
        let key = |version| handler_key("send-email", &v(version));
        assert_eq!(key("1.2.0"), key("1.3.0"));
        assert_eq!(key("1.2.0"), key("1.2.9"));
        assert_ne!(key("1.9.0"), key("2.0.0"));
        assert_ne!(key("0.3.0"), key("0.4.0"));
        assert_eq!(key("0.3.0"), key("0.3.5"));
        assert_ne!(key("2.0.0-rc.1"), key("2.0.0-rc.2"));
        assert_ne!(key("1.0.0"), handler_key("charge-card", &v("1.0.0")));
    }
}
