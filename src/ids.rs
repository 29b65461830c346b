//! Ids and lease tokens, injected. A seeded source makes a whole run reproducible; the
//! random source is for production.

use std::sync::Mutex;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

/// A source of opaque unique strings (lease tokens, instance ids).
pub trait IdSource: Send + Sync {
    /// A fresh id with the given prefix, e.g. `tok-…`.
    fn next_id(&self, prefix: &str) -> String;
}

/// Ids from a seeded generator: the same seed yields the same sequence.
#[derive(Debug)]
pub struct SeededIds(Mutex<SmallRng>);

impl SeededIds {
    /// A source seeded with `seed`.
    #[must_use]
    pub fn new(seed: u64) -> Self {
        Self(Mutex::new(SmallRng::seed_from_u64(seed)))
    }

    /// A source seeded from the time and process id: unique enough for tokens, for production.
    #[must_use]
    pub fn random() -> Self {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        // Truncation intended: only the low bits vary between starts.
        #[allow(clippy::cast_possible_truncation)]
        let seed = (nanos as u64) ^ (u64::from(std::process::id()) << 32);
        Self::new(seed)
    }
}

impl IdSource for SeededIds {
    fn next_id(&self, prefix: &str) -> String {
        let n: u64 = match self.0.lock() {
            Ok(mut rng) => rng.random(),
            Err(poisoned) => poisoned.into_inner().random(),
        };
        format!("{prefix}-{n:016x}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_ids() {
        let a = SeededIds::new(7);
        let b = SeededIds::new(7);
        assert_eq!(a.next_id("tok"), b.next_id("tok"));
        assert_ne!(a.next_id("tok"), a.next_id("tok"));
    }
}
