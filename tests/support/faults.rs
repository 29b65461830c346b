//! Stores under the fault-injecting wrapper (`leasehold::store::faults`): the same store
//! API over memory and over an SQLite file, with a chosen write made to fail before or
//! after its commit.

use std::sync::Arc;

use leasehold::Store;
use leasehold::clock::ManualClock;
use leasehold::ids::SeededIds;
use leasehold::store::Backend;
use leasehold::store::faults::FaultyBackend;
use leasehold::store::memory::MemoryBackend;
use leasehold::store::sqlite::SqliteBackend;
use leasehold::store::url::OpenMode;

/// A store whose writes can be made to fail; the temp dir (SQLite's) lives as long as it.
pub struct FaultyStore {
    pub faults: Arc<FaultyBackend>,
    pub store: Store,
    _dir: Option<tempfile::TempDir>,
}

/// Memory and SQLite, each under the fault-injecting wrapper, with a manual clock and ids
/// seeded by `seed`.
pub fn faulty_stores(seed: u64) -> Vec<FaultyStore> {
    let dir = tempfile::tempdir().expect("temp dir");
    let sqlite = SqliteBackend::open(dir.path().join("s.db"), OpenMode::ReadWrite).expect("open");
    let inners: [(Arc<dyn Backend>, Option<tempfile::TempDir>); 2] = [
        (Arc::new(MemoryBackend::new()), None),
        (Arc::new(sqlite), Some(dir)),
    ];
    inners
        .into_iter()
        .map(|(inner, dir)| {
            let faults = Arc::new(FaultyBackend::new(inner));
            let store = Store::new(
                faults.clone(),
                Arc::new(ManualClock::new(1_000_000)),
                Arc::new(SeededIds::new(seed)),
            );
            FaultyStore {
                faults,
                store,
                _dir: dir,
            }
        })
        .collect()
}
