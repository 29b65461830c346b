//! Creating a store on purpose. Every other command opens with [`OpenMode::Existing`] or
//! [`OpenMode::ReadOnly`] and refuses a missing path, so a typo in `--store` is an error
//! rather than a new, empty store nobody runs: a store comes into being only here
//! (`leasehold init`, `leasehold authority --create`), through `seed`, or as the fresh
//! target of `copy` and `bench`.

use std::sync::Arc;

use super::url::{OpenMode, StoreUrl};
use super::{Backend, Store};
use crate::clock::SystemClock;
use crate::error::{Error, Result};
use crate::ids::SeededIds;

/// What [`create`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Creation {
    /// The store did not exist (a missing path, an empty file, a database without the
    /// schema) and was created.
    Created,
    /// A leasehold store was already there; nothing was changed.
    Existed,
}

/// Opens the store at `url`, creating it if it does not exist yet.
///
/// A non-store file, a directory, a device or another application's database is refused
/// and left as it was. `memory` is refused: each process that opens it gets its own, so
/// there is nothing to create.
///
/// # Errors
/// `INVALID` (a bad URL, `memory`), `STORE_UNAVAILABLE`, `STORE_REFUSED`, `STORE_CORRUPT`,
/// `STORE_READ_ONLY`; `STORE_REWOUND` for an existing store behind (or forked from) the
/// rewind witness kept beside its files.
pub fn create(url: &str) -> Result<(Store, Creation)> {
    let (backend, created): (Arc<dyn Backend>, bool) = match StoreUrl::parse(url)? {
        StoreUrl::Memory => {
            return Err(Error::Invalid(
                "memory is a new store inside each process that opens it: there is nothing to create"
                    .into(),
            ));
        }
        StoreUrl::Sqlite(path) => {
            let backend = super::sqlite::SqliteBackend::open(&path, OpenMode::ReadWrite)?;
            let created = backend.created();
            (Arc::new(backend), created)
        }
        #[cfg(feature = "postgres")]
        StoreUrl::Postgres(url) => {
            let backend = super::postgres::PostgresBackend::open(&url, OpenMode::ReadWrite)?;
            let created = backend.created();
            (Arc::new(backend), created)
        }
        #[cfg(not(feature = "postgres"))]
        StoreUrl::Postgres(_) => return Err(super::url::without_postgres()),
    };
    let store = Store::new(
        backend,
        Arc::new(SystemClock),
        Arc::new(SeededIds::random()),
    );
    let creation = if created {
        Creation::Created
    } else {
        Creation::Existed
    };
    Ok((store.with_witness_beside()?, creation))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::store::url::open;

    #[test]
    fn creates_once_then_finds_the_store() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.db");
        let url = path.to_str().unwrap();
        assert!(open(url, OpenMode::Existing).is_err(), "not there yet");
        assert_eq!(create(url).unwrap().1, Creation::Created);
        assert_eq!(create(url).unwrap().1, Creation::Existed);
        assert!(open(url, OpenMode::Existing).is_ok());
    }

    #[test]
    fn an_empty_file_becomes_a_store() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.db");
        std::fs::write(&path, b"").unwrap();
        assert_eq!(create(path.to_str().unwrap()).unwrap().1, Creation::Created);
    }

    #[test]
    fn memory_and_non_stores_are_refused() {
        assert_eq!(create("memory").err().unwrap().code(), "INVALID");
        let dir = tempfile::tempdir().unwrap();
        let text = dir.path().join("notes.txt");
        std::fs::write(&text, b"not a store").unwrap();
        assert!(create(text.to_str().unwrap()).is_err());
        assert_eq!(std::fs::read(&text).unwrap(), b"not a store");
        assert!(create(dir.path().to_str().unwrap()).is_err());
    }
}
