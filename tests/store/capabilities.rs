//! An authority refuses a store that does not keep the work model instead of running
//! without a guarantee (what each provider advertises is a case of the exported suite,
//! `leasehold::testing::capabilities`).

use std::sync::Arc;

use leasehold::authority::handlers::Workload;
use leasehold::authority::{AuthorityConfig, AuthorityCore, Pace};
use leasehold::clock::ManualClock;
use leasehold::ids::SeededIds;
use leasehold::store::faults::FaultyBackend;
use leasehold::store::memory::MemoryBackend;
use leasehold::store::{Capability, Store};

#[test]
fn an_authority_refuses_a_store_without_the_work_model() {
    let faulty = Arc::new(FaultyBackend::new(Arc::new(MemoryBackend::new())));
    let store = Store::new(
        faulty.clone(),
        Arc::new(ManualClock::new(1_000_000)),
        Arc::new(SeededIds::new(1)),
    );
    let start = || {
        AuthorityCore::new(
            store.clone(),
            AuthorityConfig::new("a-1", "v1"),
            Workload::new("w", 1),
            Pace::Virtual,
        )
    };
    assert!(start().is_ok(), "the whole work model starts");
    faulty.withhold(Capability::Fencing);
    let Err(e) = start() else {
        panic!("an authority started over a store without fencing")
    };
    assert_eq!(e.code(), "CAPABILITY_MISSING");
    assert_eq!(
        e.to_string(),
        "CAPABILITY_MISSING: the memory store does not provide fencing"
    );
    assert_eq!(
        store.require(&[Capability::Durable]).unwrap_err().code(),
        "CAPABILITY_MISSING"
    );
}
