//! What each provider advertises, and that an authority refuses a store that does not
//! keep the work model instead of running without a guarantee.

use std::sync::Arc;

use leasehold::authority::handlers::Workload;
use leasehold::authority::{AuthorityConfig, AuthorityCore, Pace};
use leasehold::clock::ManualClock;
use leasehold::ids::SeededIds;
use leasehold::store::capability::WORK_MODEL;
use leasehold::store::faults::FaultyBackend;
use leasehold::store::memory::MemoryBackend;
use leasehold::store::{Capability, Store};

use crate::support::Harness;

pub fn every_provider_keeps_the_work_model_and_says_how_far_it_reaches(h: &dyn Harness) {
    let store = h.store();
    let have = store.capabilities();
    for c in WORK_MODEL {
        assert!(have.contains(&c), "{} lacks {c}", h.provider());
    }
    assert_eq!(
        have.contains(&Capability::Durable),
        store.physical_durability()
    );
    let reach = (
        have.contains(&Capability::SharedAcrossProcesses),
        have.contains(&Capability::SharedAcrossHosts),
    );
    let expected = match h.provider() {
        "memory" => (false, false),
        "sqlite" => (true, false),
        _ => (true, true),
    };
    assert_eq!(reach, expected, "{}", h.provider());
    assert!(store.require(&WORK_MODEL).is_ok());
}

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
    let e = start().err().expect("refused");
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
