//! Invariants 1 and 2: one owner per (resourceId, generation), and no accepted write from a
//! superseded generation or from a holder fenced without a takeover.

use leasehold::check::{codes, render_text};
use leasehold::model::{Holder, WriteRecord};
use serde_json::json;

use super::{T0, assert_codes, assert_reported, fixture};

// --- 1. two owners of one (resourceId, generation)

#[test]
fn two_owners_of_one_generation_are_reported() {
    let f = fixture();
    // The current generation granted again to someone else.
    f.grant("e-1", 1, "a-1");
    f.grant("e-1", 1, "a-2");
    // An older generation granted again (decided by reading the resource's grants back).
    f.grant("e-2", 1, "a-1");
    f.grant("e-2", 2, "a-2");
    f.grant("e-2", 1, "a-3");
    // A regression nobody else held.
    f.grant("e-3", 2, "a-1");
    f.grant("e-3", 1, "a-2");
    // An accepted write under a generation by someone who was not granted it.
    f.grant("e-4", 1, "a-1");
    f.complete("e-4", 1, "a-2");

    let report = f.run();
    assert_reported(
        &report,
        codes::TWO_OWNERS_ONE_GENERATION,
        &["e-1", "a-1", "a-2"],
    );
    assert_reported(
        &report,
        codes::TWO_OWNERS_ONE_GENERATION,
        &["e-2", "a-1", "a-3"],
    );
    assert_reported(&report, codes::GENERATION_NOT_INCREASING, &["e-3", "a-2"]);
    assert_reported(
        &report,
        codes::TWO_OWNERS_ONE_GENERATION,
        &["e-4", "a-1", "a-2"],
    );
    assert_eq!(report.violations.len(), 4, "{}", render_text(&report));
    let sentence = &report
        .of(codes::TWO_OWNERS_ONE_GENERATION)
        .next()
        .unwrap()
        .sentence;
    assert_eq!(
        sentence,
        "work e-1 generation 1 was granted to a-1 at revision 1 and to a-2 at revision 2"
    );
}

// --- 2. no accepted write from a superseded generation

#[test]
fn an_accepted_write_from_a_superseded_generation_is_reported() {
    let f = fixture();
    f.grant("e-1", 1, "a-1");
    f.grant("e-1", 2, "a-2");
    f.complete("e-1", 1, "a-1");
    // Refused: exactly what fencing is for, not a violation.
    f.grant("e-2", 1, "a-1");
    f.grant("e-2", 2, "a-2");
    f.write(
        "e-2",
        1,
        "a-1",
        "complete",
        false,
        json!({"logicalEffectId": "e-2", "idempotencyKey": "e-2", "state": "claimed"}),
    );

    let report = f.run();
    assert_codes(&report, &[codes::SUPERSEDED_WRITE_ACCEPTED]);
    assert_reported(
        &report,
        codes::SUPERSEDED_WRITE_ACCEPTED,
        &["e-1", "a-1", "a-2"],
    );
    assert!(
        report.violations[0]
            .sentence
            .contains("complete by a-1 under generation 1 was accepted at revision 3")
    );
}

/// The holder of the current claim refused with nobody having taken the item over (what a
/// bystander's settlement of a lapse left, before a lapse was settled only by a takeover)
/// is reported; refusals after a newer grant, after the holder ended its own claim, or
/// after an operator ended it, are not.
#[test]
fn a_holder_fenced_without_a_takeover_is_reported() {
    let f = fixture();
    let refused = |resource: &str, verb: &str, refusal: &str, holder: Holder| {
        f.plant(|tx, revision| {
            tx.add_write(WriteRecord {
                revision,
                resource_id: resource.into(),
                generation: 1,
                owner_id: "a-1".into(),
                verb: leasehold::model::WriteVerb::parse(verb).expect("a write verb"),
                accepted: false,
                refusal: Some(refusal.into()),
                detail: "{}".into(),
                at: T0,
                holder: Some(holder.clone()),
            })
        });
    };
    let nobody_at = |generation| Holder {
        owner_id: None,
        generation,
    };
    f.grant("e-1", 1, "a-1");
    refused("e-1", "renew", "WORK_FENCED", nobody_at(1));
    f.grant("e-5", 1, "a-1");
    refused("e-5", "complete", "already-terminal", nobody_at(1));
    // Fenced by a takeover: exactly what fencing is for.
    f.grant("e-2", 1, "a-1");
    f.grant("e-2", 2, "a-2");
    refused("e-2", "renew", "WORK_FENCED", nobody_at(2));
    // The holder yielded, then a late renewal of its own was refused.
    f.grant("e-3", 1, "a-1");
    f.write("e-3", 1, "a-1", "yield", true, json!({}));
    refused("e-3", "renew", "WORK_FENCED", nobody_at(1));
    // An operator discarded it under the holder.
    f.grant("e-4", 1, "a-1");
    f.write("e-4", 1, "ops", "discard", true, json!({}));
    refused("e-4", "complete", "already-terminal", nobody_at(1));
    // The item's generation was raised under it (an accepted rewind).
    f.grant("e-6", 1, "a-1");
    refused("e-6", "complete", "WORK_FENCED", nobody_at(1 << 32));

    let report = f.run();
    assert_codes(
        &report,
        &[
            codes::FENCED_WITHOUT_TAKEOVER,
            codes::FENCED_WITHOUT_TAKEOVER,
        ],
    );
    assert_reported(&report, codes::FENCED_WITHOUT_TAKEOVER, &["e-1", "a-1"]);
    assert_reported(&report, codes::FENCED_WITHOUT_TAKEOVER, &["e-5", "a-1"]);
    assert!(
        report.violations[0]
            .sentence
            .contains("nobody took the item over"),
        "{}",
        report.violations[0].sentence
    );
}
