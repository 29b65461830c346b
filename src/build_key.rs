//! The compatibility key of a build of this binary (docs/ARCHITECTURE.md#compatibility).
//!
//! Every durable item records the key of the build that created it, and an authority only
//! claims items whose key digest equals its own. [`compatibility_key`] derives the key of
//! a build from its human tag (`--build`, default [`DEFAULT_BUILD_TAG`]) plus the
//! executable meaning this binary ships: the semantic fingerprints of the embedded
//! workflow definitions ([`crate::workflow::SHIPPED_DEFINITIONS`]) under the demo catalog.
//! So two processes started with the same tag from the same binary agree on the key, a
//! different tag simulates a rolling deploy (`leasehold authority --build v2`), and
//! editing a shipped workflow's meaning changes the key even under the same tag.

use sha2::{Digest, Sha256};

use crate::model::CompatibilityKey;
use crate::workflow::{Catalog, parse_definition, semantic_fingerprint};

/// The build tag used when none is given.
pub const DEFAULT_BUILD_TAG: &str = "v1";

/// The schema version this build reads and writes.
pub const SCHEMA_VERSION: u32 = 1;

/// Identifies the durable schema this build expects (bumped with any layout change).
pub const SCHEMA_FINGERPRINT: &str = "leasehold-schema-1";

/// The contract between authorities and the store.
pub const SERVER_CONTRACT: &str = "leasehold.v1";

/// The compatibility key of the build tagged `build_tag`.
///
/// `semanticFingerprint` is the hex SHA-256 over the tag and, for every shipped workflow
/// definition in order, its file name and semantic fingerprint (a definition that does not
/// parse contributes the hash of its text, so the result is always defined).
#[must_use]
pub fn compatibility_key(build_tag: &str) -> CompatibilityKey {
    let catalog = Catalog::demo();
    let mut hasher = Sha256::new();
    hasher.update(b"build\0");
    hasher.update(build_tag.as_bytes());
    hasher.update([0u8]);
    for (name, text) in crate::workflow::SHIPPED_DEFINITIONS {
        hasher.update(name.as_bytes());
        hasher.update([0u8]);
        let fingerprint = match parse_definition(text) {
            Ok(def) => semantic_fingerprint(&def, &catalog),
            Err(_) => hex::encode(Sha256::digest(text.as_bytes())),
        };
        hasher.update(fingerprint.as_bytes());
        hasher.update([0u8]);
    }
    CompatibilityKey {
        schema_version: SCHEMA_VERSION,
        schema_fingerprint: SCHEMA_FINGERPRINT.to_owned(),
        server_contract: SERVER_CONTRACT.to_owned(),
        semantic_fingerprint: hex::encode(hasher.finalize()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_tag_same_key_other_tag_other_key() {
        let a = compatibility_key("v1");
        assert_eq!(a, compatibility_key("v1"));
        assert_ne!(a.digest(), compatibility_key("v2").digest());
        assert_eq!(a.schema_version, SCHEMA_VERSION);
        assert_eq!(a.server_contract, "leasehold.v1");
    }
}
