//! The compatibility key: which build may execute which durable work (fail-closed).

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
