//! Ids and lease tokens, injected. A seeded source makes a whole run reproducible; the
//! random source is for production.
//!
//! Every identifier that comes from outside (instance, build, workflow and instance ids,
//! work and schedule ids, event source / id / type, handler names, idempotency keys) passes
//! [`check_id`] before it is stored: it ends up in tables, logs and terminals, so it must
//! print as itself and stay short.

use std::sync::Mutex;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

/// A source of opaque unique strings (lease tokens, instance ids).
pub trait IdSource: Send + Sync {
    /// A fresh id with the given prefix, e.g. `tok-…`.
    fn next_id(&self, prefix: &str) -> String;

    /// A fresh nonce for a commit's chain link (`store/chain.rs`), `link-…`. A source that
    /// can draws it apart from [`Self::next_id`], so the chain leaves the ids and tokens a
    /// seed gives as they were.
    fn next_nonce(&self) -> String {
        self.next_id("link")
    }
}

/// Ids from a seeded generator: the same seed yields the same sequence.
#[derive(Debug)]
pub struct SeededIds {
    ids: Mutex<SmallRng>,
    /// The chain's nonces, a stream of their own from the same seed.
    nonces: Mutex<SmallRng>,
}

/// What the nonce stream's seed differs from the ids' by.
const NONCE_STREAM: u64 = 0x6c69_6e6b_6e6f_6e63;

impl SeededIds {
    /// A source seeded with `seed`.
    #[must_use]
    pub fn new(seed: u64) -> Self {
        Self {
            ids: Mutex::new(SmallRng::seed_from_u64(seed)),
            nonces: Mutex::new(SmallRng::seed_from_u64(seed ^ NONCE_STREAM)),
        }
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
        hex_id(prefix, draw(&self.ids))
    }

    fn next_nonce(&self) -> String {
        hex_id("link", draw(&self.nonces))
    }
}

fn draw(rng: &Mutex<SmallRng>) -> u64 {
    match rng.lock() {
        Ok(mut rng) => rng.random(),
        Err(poisoned) => poisoned.into_inner().random(),
    }
}

/// `prefix-` and the sixteen hex digits of `n`.
fn hex_id(prefix: &str, n: u64) -> String {
    // Written digit by digit: `format!` costs more than the store write it is part of.
    let mut id = String::with_capacity(prefix.len() + 17);
    id.push_str(prefix);
    id.push('-');
    for shift in (0..16).rev() {
        id.push(char::from(
            b"0123456789abcdef"[((n >> (shift * 4)) & 0xf) as usize],
        ));
    }
    id
}

/// The longest identifier accepted, in bytes. Long enough for a URL-ish external event id
/// or a digest-suffixed firing id; short enough to fit a table row and an index key.
pub const MAX_ID_BYTES: usize = 256;

/// Characters that reorder or hide the text around them: the bidirectional marks,
/// embeddings, overrides and isolates, zero-width characters, line and paragraph
/// separators and the byte-order mark. An id holding one can print as a different id.
#[must_use]
pub fn is_invisible_or_reordering(c: char) -> bool {
    matches!(c as u32, 0x200B..=0x200F | 0x2028..=0x202E | 0x2060..=0x2069 | 0xFEFF)
}

/// Checks an identifier that came from outside, naming the field in the refusal: it must
/// be non-empty, at most [`MAX_ID_BYTES`] bytes, and printable (no control characters, no
/// bidirectional or zero-width characters).
///
/// # Errors
/// `INVALID`, one line naming the field and the rule broken (never echoing the value raw).
pub fn check_id(field: &str, value: &str) -> crate::Result<()> {
    let refuse = |rule: String| Err(crate::Error::Invalid(format!("{field}: {rule}")));
    if value.is_empty() {
        return refuse("must not be empty".into());
    }
    if value.len() > MAX_ID_BYTES {
        return refuse(format!(
            "is {} bytes, the limit is {MAX_ID_BYTES}",
            value.len()
        ));
    }
    if let Some(c) = value.chars().find(|c| c.is_control()) {
        return refuse(format!(
            "holds the control character U+{:04X}; ids must be printable",
            c as u32
        ));
    }
    if let Some(c) = value.chars().find(|c| is_invisible_or_reordering(*c)) {
        return refuse(format!(
            "holds U+{:04X}, which reorders or hides text; ids must print as themselves",
            c as u32
        ));
    }
    Ok(())
}

/// [`check_id`] for an identifier being created (a work item, its handler and key, an
/// authority's instance id, a schedule): also no whitespace at either end, since a blank
/// id prints as nothing and `inv-1 ` as `inv-1` beside the real one. Lookups and operator
/// verbs keep [`check_id`], so rows an older build let in can still be read and acted on.
///
/// # Errors
/// As [`check_id`]; `INVALID` for whitespace at either end.
pub fn check_new_id(field: &str, value: &str) -> crate::Result<()> {
    check_id(field, value)?;
    if value.trim() != value {
        return Err(crate::Error::Invalid(format!(
            "{field}: starts or ends with whitespace; ids must print as themselves"
        )));
    }
    Ok(())
}

/// [`check_id`] for an optional identifier: absent is fine.
///
/// # Errors
/// As [`check_id`].
pub fn check_opt_id(field: &str, value: Option<&str>) -> crate::Result<()> {
    value.map_or(Ok(()), |v| check_id(field, v))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// A seeded source gives the prefix, a dash and the next draw as sixteen lowercase hex
    /// digits (zero-padded), the same sequence for the same seed.
    #[test]
    fn a_seeded_id_is_the_prefix_and_sixteen_hex_digits_of_the_next_draw() {
        let ids = SeededIds::new(42);
        let mut rng = SmallRng::seed_from_u64(42);
        for _ in 0..200 {
            let n: u64 = rng.random();
            assert_eq!(ids.next_id("tok"), format!("tok-{n:016x}"));
        }
        let small = SeededIds::new(0);
        let id = small.next_id("");
        assert_eq!((id.len(), id.starts_with('-')), (17, true));
    }

    #[test]
    fn nonces_leave_the_ids_of_a_seed_as_they_were() {
        let (plain, with_nonces) = (SeededIds::new(9), SeededIds::new(9));
        for _ in 0..10 {
            assert!(with_nonces.next_nonce().starts_with("link-"));
            assert_eq!(plain.next_id("tok"), with_nonces.next_id("tok"));
        }
    }

    #[test]
    fn ids_must_be_short_printable_and_plain() {
        assert!(check_id("instance id", "a-1").is_ok());
        assert!(check_id("instance id", "é-ü/日本:1").is_ok());
        assert!(check_id("instance id", &"x".repeat(MAX_ID_BYTES)).is_ok());
        let refused = |v: &str| check_id("instance id", v).unwrap_err().to_string();
        assert!(refused("").contains("instance id: must not be empty"));
        assert!(refused(&"x".repeat(MAX_ID_BYTES + 1)).contains("the limit is 256"));
        assert!(refused(&"x".repeat(10_000)).contains("10000 bytes"));
        for hostile in ["a\u{1b}[2J", "a\nb", "a\u{7f}", "a\u{9b}b", "\t"] {
            let text = refused(hostile);
            assert!(text.contains("control character"), "{text}");
            assert!(!text.contains('\u{1b}') && !text.contains('\n'), "{text}");
        }
        for hostile in [
            "\u{202e}gpj.exe",
            "a\u{2066}b",
            "a\u{200f}",
            "a\u{200b}",
            "\u{feff}a",
        ] {
            let text = refused(hostile);
            assert!(text.contains("reorders or hides text"), "{text}");
        }
        for padded in [" ", "inv-1 ", " inv-1", "\u{a0}x"] {
            assert!(
                check_id("instance id", padded).is_ok(),
                "an older row stays readable"
            );
            let text = check_new_id("instance id", padded).unwrap_err().to_string();
            assert!(text.contains("starts or ends with whitespace"), "{text}");
        }
        assert!(
            check_new_id("instance id", "inv 1").is_ok(),
            "inner spaces are fine"
        );
        assert!(check_opt_id("key", None).is_ok());
        assert!(check_opt_id("key", Some("")).is_err());
    }

    #[test]
    fn same_seed_same_ids() {
        let a = SeededIds::new(7);
        let b = SeededIds::new(7);
        assert_eq!(a.next_id("tok"), b.next_id("tok"));
        assert_ne!(a.next_id("tok"), a.next_id("tok"));
    }
}
