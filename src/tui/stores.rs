//! Several stores in one dashboard: each attached store with the name the operator
//! switches to it by (`:ctx NAME`), its read handle and the opener of its write handle.
//! A name is short — a file's stem, a database's name — so it fits the header, and it
//! never carries a password from a URL; the argument as given works with `:ctx` too.

use super::writer::OpenWriter;
use crate::store::Store;

/// One store the dashboard watches.
#[derive(Clone)]
pub struct Attached {
    /// The short name shown in the header and taken by `:ctx`.
    pub name: String,
    /// The argument the store was given as (also taken by `:ctx`).
    pub given: String,
    /// The read-only handle its reader reads through.
    pub store: Store,
    /// Opens a write handle for an operator action on this store; `None` acts on
    /// [`Self::store`] itself (the demo's in-memory store) or, read-only, refuses.
    pub writer: Option<OpenWriter>,
}

impl std::fmt::Debug for Attached {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Attached")
            .field("name", &self.name)
            .field("store", &self.store.describe())
            .field("writer", &self.writer.is_some())
            .finish_non_exhaustive()
    }
}

/// The short name of a store argument: `orders` for `/var/lib/orders.db` or
/// `sqlite:orders.db`, the database of `postgres://app:secret@db:5432/billing?sslmode=…`
/// (else its host), `memory` for `memory`.
#[must_use]
pub fn short_name(given: &str) -> String {
    let text = given.trim();
    if let Some(rest) = text
        .strip_prefix("postgres://")
        .or_else(|| text.strip_prefix("postgresql://"))
    {
        let rest = rest.split(['?', '#']).next().unwrap_or_default();
        let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
        let host = authority.rsplit('@').next().unwrap_or_default();
        let host = host.split(':').next().unwrap_or_default();
        let name = if path.is_empty() { host } else { path };
        return if name.is_empty() {
            "postgres".into()
        } else {
            name.into()
        };
    }
    let path = text.strip_prefix("sqlite:").unwrap_or(text);
    let stem = std::path::Path::new(path)
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or_default();
    if stem.is_empty() {
        path.to_owned()
    } else {
        stem.to_owned()
    }
}

/// The short names of `given`, in order; a name already taken gets `-2`, `-3` … so each
/// names one store.
#[must_use]
pub fn names(given: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::with_capacity(given.len());
    for g in given {
        let base = short_name(g);
        let mut name = base.clone();
        let mut n = 2;
        while out.contains(&name) {
            name = format!("{base}-{n}");
            n += 1;
        }
        out.push(name);
    }
    out
}

/// Which of `stores` (their names, then the arguments as given) `word` names: an exact
/// name or argument, else the one name it starts.
#[must_use]
pub fn find(stores: &[(String, String)], word: &str) -> Option<usize> {
    if let Some(i) = stores.iter().position(|(n, g)| n == word || g == word) {
        return Some(i);
    }
    let mut starts = stores
        .iter()
        .enumerate()
        .filter(|(_, (n, _))| n.starts_with(word));
    match (starts.next(), starts.next()) {
        (Some((i, _)), None) if !word.is_empty() => Some(i),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_names_are_stems_and_database_names_without_secrets() {
        assert_eq!(short_name("/var/lib/leasehold/orders.db"), "orders");
        assert_eq!(short_name("sqlite:./billing.sqlite"), "billing");
        assert_eq!(short_name("memory"), "memory");
        assert_eq!(
            short_name("postgres://app:s3cret@db.internal:5432/payments?sslmode=require"),
            "payments"
        );
        assert_eq!(
            short_name("postgresql://app:s3cret@db.internal:5432"),
            "db.internal"
        );
        assert!(!short_name("postgres://app:s3cret@h/").contains("s3cret"));
    }

    #[test]
    fn names_are_unique_and_found_by_name_argument_or_prefix() {
        let given: Vec<String> = ["a/orders.db", "b/orders.db", "memory"]
            .map(String::from)
            .to_vec();
        let names = names(&given);
        assert_eq!(names, ["orders", "orders-2", "memory"]);
        let pairs: Vec<(String, String)> = names.into_iter().zip(given).collect();
        assert_eq!(find(&pairs, "orders"), Some(0));
        assert_eq!(find(&pairs, "b/orders.db"), Some(1));
        assert_eq!(find(&pairs, "mem"), Some(2));
        assert_eq!(find(&pairs, "ord"), None, "ambiguous");
        assert_eq!(find(&pairs, "billing"), None);
    }
}
