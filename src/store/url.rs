//! Opening a store from a URL: a file path or `sqlite:PATH`, `postgres://…` /
//! `postgresql://…`, or `memory`.

use std::sync::Arc;

use super::Store;
use super::memory::MemoryBackend;
use crate::clock::SystemClock;
use crate::error::{Error, Result};
use crate::ids::SeededIds;

/// A parsed store location.
#[derive(Clone, PartialEq, Eq)]
pub enum StoreUrl {
    Memory,
    Sqlite(std::path::PathBuf),
    Postgres(String),
}

/// Never prints a PostgreSQL URL's user info or parameters (a password may be there).
impl std::fmt::Debug for StoreUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Memory => f.write_str("Memory"),
            Self::Sqlite(path) => f.debug_tuple("Sqlite").field(path).finish(),
            #[cfg(feature = "postgres")]
            Self::Postgres(url) => f
                .debug_tuple("Postgres")
                .field(&super::postgres::redact_url(url))
                .finish(),
            // Without the provider there is no redaction at hand: nothing of the URL shows.
            #[cfg(not(feature = "postgres"))]
            Self::Postgres(_) => f.write_str("Postgres(..)"),
        }
    }
}

impl StoreUrl {
    /// Parses a store URL.
    ///
    /// # Errors
    /// `INVALID` for an empty string or an unknown scheme.
    pub fn parse(text: &str) -> Result<Self> {
        let text = text.trim();
        if text.is_empty() {
            return Err(Error::Invalid(
                "the store is empty: give a SQLite path, sqlite:PATH, postgres://… or memory"
                    .into(),
            ));
        }
        if text == "memory" {
            return Ok(Self::Memory);
        }
        if text.starts_with("postgres://") || text.starts_with("postgresql://") {
            return Ok(Self::Postgres(text.to_owned()));
        }
        if let Some(path) = text.strip_prefix("sqlite:") {
            let path = path.trim_start_matches("//");
            if path.trim().is_empty() {
                return Err(Error::Invalid(
                    "sqlite: names no file: give its path, as in sqlite:/var/lib/leasehold/work.db"
                        .into(),
                ));
            }
            return Ok(Self::Sqlite(path.into()));
        }
        if let Some((scheme, _)) = text.split_once("://") {
            return Err(Error::Invalid(format!(
                "unknown store scheme {scheme:?}: use a SQLite path, sqlite:PATH, postgres://… or memory"
            )));
        }
        Ok(Self::Sqlite(text.into()))
    }
}

impl std::fmt::Display for StoreUrl {
    /// The store as operators are shown it: never a password.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Memory => f.write_str("memory"),
            Self::Sqlite(path) => write!(f, "{}", path.display()),
            #[cfg(feature = "postgres")]
            Self::Postgres(url) => f.write_str(&super::postgres::redact_url(url)),
            #[cfg(not(feature = "postgres"))]
            Self::Postgres(_) => f.write_str("postgres://…"),
        }
    }
}

/// How a store is opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OpenMode {
    /// Create the store if it does not exist; write as needed (`seed`, `leasehold init`:
    /// see `store/create.rs`).
    #[default]
    ReadWrite,
    /// Never create or change anything (inspection, the dashboard).
    ReadOnly,
    /// Write to a store that already exists, never creating one: a missing or empty store
    /// is refused as in `ReadOnly` (the dashboard's handle for an operator action).
    Existing,
}

impl OpenMode {
    /// Whether a missing (or empty) store is created.
    #[must_use]
    pub fn creates(self) -> bool {
        self == Self::ReadWrite
    }
}

/// The refusal of a `postgres://` URL by a build without the PostgreSQL provider.
#[cfg(not(feature = "postgres"))]
pub(super) fn without_postgres() -> Error {
    Error::Invalid(
        "this build has no PostgreSQL provider: rebuild with the `postgres` feature (cargo build --features postgres)"
            .into(),
    )
}

/// Opens the store at `url` with the system clock and random tokens; a writable open
/// refuses a store whose revision is below its own history (`Store::confirm_revision`),
/// and checks and advances the rewind witness kept beside the store's files, where the
/// provider keeps one (`Store::with_witness_beside`).
///
/// # Errors
/// `INVALID`, `STORE_UNAVAILABLE`, `STORE_REFUSED`, `STORE_CORRUPT`, `STORE_READ_ONLY`,
/// `STORE_REWOUND`.
pub fn open(url: &str, mode: OpenMode) -> Result<Store> {
    let store = open_unwitnessed(url, mode)?;
    if mode == OpenMode::ReadOnly {
        return Ok(store);
    }
    store.with_witness_beside()
}

/// [`open`] for accepting a rewind: an existing store, with the record beside it attached
/// but not judged (the store is behind it by definition).
///
/// # Errors
/// As [`open`], but never `STORE_REWOUND`.
pub fn open_to_accept(url: &str) -> Result<Store> {
    open_unwitnessed(url, OpenMode::Existing)?.with_witness_beside_unjudged()
}

/// The store at `url`, confirmed writable when opened so, with no witness.
fn open_unwitnessed(url: &str, mode: OpenMode) -> Result<Store> {
    let backend: Arc<dyn super::Backend> = match StoreUrl::parse(url)? {
        StoreUrl::Memory => Arc::new(MemoryBackend::new()),
        StoreUrl::Sqlite(path) => Arc::new(super::sqlite::SqliteBackend::open(&path, mode)?),
        #[cfg(feature = "postgres")]
        StoreUrl::Postgres(url) => Arc::new(super::postgres::PostgresBackend::open(&url, mode)?),
        #[cfg(not(feature = "postgres"))]
        StoreUrl::Postgres(_) => return Err(without_postgres()),
    };
    let store = Store::new(
        backend,
        Arc::new(SystemClock),
        Arc::new(SeededIds::random()),
    );
    if mode != OpenMode::ReadOnly {
        store.confirm_revision()?;
    }
    Ok(store)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_sqlite_url_without_a_path_is_refused_by_name() {
        for text in ["sqlite:", "sqlite://", "sqlite:  "] {
            let refused = StoreUrl::parse(text).unwrap_err().to_string();
            assert!(
                refused.contains("sqlite: names no file"),
                "{text:?}: {refused}"
            );
        }
        assert_eq!(
            StoreUrl::parse("sqlite:work.db").unwrap(),
            StoreUrl::Sqlite("work.db".into())
        );
    }
}
