//! Claiming by a set of compatibility digests: an authority runs one digest per handler
//! it has, and claims, reclaims and settles exactly the items whose digest is in its set.

use crate::model::work::NewWork;
use crate::model::{CompatSet, Grant};

use super::work::item;
use super::{Harness, K, K_OTHER, ok, refused};

const K_THIRD: &str = "compat-third-handler";

fn work(id: &str, handler: &str) -> NewWork {
    NewWork::effect(id, handler, "{}")
}

fn owner_compat_of(grants: &[Grant], id: &str) -> Vec<Option<String>> {
    grants
        .iter()
        .filter(|g| g.resource_id == id)
        .map(|g| g.owner_compat.clone())
        .collect()
}

/// A batch claim by a set takes the due items of every member digest and none other; each
/// grant records the member that matched as the owner's key; a direct claim of an item
/// outside the set is `INCOMPATIBLE_AUTHORITY` and leaves it pending.
pub fn a_set_claims_the_items_of_each_member_only(h: &dyn Harness) {
    let s = h.store();
    ok("enqueue a", s.enqueue(work("a-1", "send-email"), K));
    ok("enqueue b", s.enqueue(work("b-1", "charge-card"), K_OTHER));
    ok("enqueue c", s.enqueue(work("c-1", "print"), K_THIRD));
    let keys = CompatSet::new([K, K_OTHER]);
    let mut got: Vec<String> = ok("batch", s.claim_batch("auth", &keys, 10, 1_000))
        .into_iter()
        .map(|w| w.id)
        .collect();
    got.sort();
    assert_eq!(got, ["a-1", "b-1"]);
    assert_eq!(
        refused("outside the set", s.claim("c-1", "auth", &keys, 1_000)),
        "INCOMPATIBLE_AUTHORITY"
    );
    assert_eq!(item(h, "c-1").generation, 0, "untouched");
    let grants = ok("history", s.ownership_history(None, 0, 1_000)).0;
    assert_eq!(owner_compat_of(&grants, "a-1"), [Some(K.to_owned())]);
    assert_eq!(owner_compat_of(&grants, "b-1"), [Some(K_OTHER.to_owned())]);
}

/// A lapsed claim of any member digest is reclaimed by a set holding it, and one outside
/// the set is left to its own runners.
pub fn a_set_reclaims_lapsed_claims_of_its_members(h: &dyn Harness) {
    let s = h.store();
    ok("enqueue b", s.enqueue(work("b-1", "charge-card"), K_OTHER));
    ok("enqueue c", s.enqueue(work("c-1", "print"), K_THIRD));
    ok("first b", s.claim("b-1", "gone", K_OTHER, 1_000));
    ok("first c", s.claim("c-1", "gone", K_THIRD, 1_000));
    h.clock().advance(3_600_000);
    let keys = CompatSet::new([K, K_OTHER]);
    let got = ok("reclaim", h.reopen().claim_batch("auth", &keys, 10, 1_000));
    let ids: Vec<&str> = got.iter().map(|w| w.id.as_str()).collect();
    assert_eq!(ids, ["b-1"]);
    assert_eq!(got[0].attempt_number, 2, "the lapsed attempt counted");
    assert_eq!(
        item(h, "c-1").owner_id.as_deref(),
        Some("gone"),
        "left alone"
    );
}
