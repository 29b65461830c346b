//! Invariants 7 and 8: no claim across builds, and cursors that never move back nor take a
//! stale owner's write.

use leasehold::check::codes;
use leasehold::model::Grant;
use serde_json::json;

use super::{T0, assert_codes, assert_reported, fixture, k1, k2};

// --- 7. no incompatible execution

#[test]
fn a_claim_across_builds_is_reported() {
    let f = fixture();
    f.grant_with("e-1", 1, "a-2", k2(), k1());
    // Lease grants carry no compat and are not work.
    f.plant(|tx, revision| {
        tx.add_grant(Grant {
            revision,
            resource_id: "leader".into(),
            generation: 1,
            owner_id: "a-1".into(),
            how: leasehold::model::GrantKind::Acquire,
            owner_compat: None,
            item_compat: None,
            at: T0,
            took_over: None,
        })
    });

    let report = f.run();
    assert_codes(&report, &[codes::INCOMPATIBLE_EXECUTION]);
    assert_reported(&report, codes::INCOMPATIBLE_EXECUTION, &["e-1", "a-2"]);
    assert!(report.violations[0].sentence.contains(&format!(
        "(key {}) was claimed by a-2 under key {}",
        k1(),
        k2()
    )));
}

// --- 8. monotone cursors

#[test]
fn a_cursor_moving_back_or_written_by_a_stale_owner_is_reported() {
    let f = fixture();
    let cursor =
        |sub: &str, from: u64, to: u64| json!({"subscription": sub, "from": from, "to": to});
    f.grant("cursor:s-1", 1, "a-1");
    f.write("cursor:s-1", 1, "a-1", "cursor", true, cursor("s-1", 0, 5));
    f.write("cursor:s-1", 1, "a-1", "cursor", false, cursor("s-1", 5, 4));
    f.write("cursor:s-1", 1, "a-1", "cursor", true, cursor("s-1", 5, 3));

    f.grant("cursor:s-2", 1, "a-1");
    f.grant("cursor:s-2", 2, "a-2");
    f.write("cursor:s-2", 1, "a-1", "cursor", true, cursor("s-2", 0, 4));

    let report = f.run();
    assert_codes(
        &report,
        &[codes::CURSOR_NOT_MONOTONE, codes::STALE_CURSOR_WRITE],
    );
    assert_reported(&report, codes::CURSOR_NOT_MONOTONE, &["s-1", "cursor:s-1"]);
    assert_reported(&report, codes::STALE_CURSOR_WRITE, &["s-2", "a-1", "a-2"]);
}
