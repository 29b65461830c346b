//! The range a check covers: the trimmed prefix it skips, the store epoch after an accepted
//! rewind, and records missing from the range or attempts cut off inside it.

use std::sync::Arc;

use leasehold::check::{CheckOptions, check, codes, render_json_lines, render_text};
use leasehold::clock::{Clock, ManualClock};
use leasehold::ids::SeededIds;
use leasehold::model::work::NewWork;
use leasehold::store::Store;
use leasehold::store::sqlite::SqliteBackend;
use leasehold::store::url::OpenMode;
use serde_json::{Value, json};

use super::{T0, assert_reported, codes_of, fixture};

/// The check reads the history from the store's retention mark on: rows older than it
/// (failovers and refused writes kept for the incident lists) are a trimmed prefix and are
/// not judged; the range checked is stated, and a violation inside it is still found.
#[test]
fn the_check_states_its_range_and_ignores_the_trimmed_prefix() {
    let f = fixture();
    f.grant("e-1", 1, "a-1");
    f.grant("e-1", 1, "a-2");
    let before = f.run();
    assert_reported(
        &before,
        codes::TWO_OWNERS_ONE_GENERATION,
        &["e-1", "a-1", "a-2"],
    );
    let mark =
        f.plant(|tx, revision| tx.set_meta_value("history_from", i64::try_from(revision).unwrap()));
    f.grant("e-2", 1, "a-1");
    let through = f.complete("e-2", 1, "a-2");

    let report = f.run();
    assert_eq!(codes_of(&report), [codes::TWO_OWNERS_ONE_GENERATION]);
    assert_reported(
        &report,
        codes::TWO_OWNERS_ONE_GENERATION,
        &["e-2", "a-1", "a-2"],
    );
    assert_eq!(
        (report.history_from, report.through_revision),
        (mark, through)
    );
    assert!(report.history_may_be_trimmed);
    let text = render_text(&report);
    assert!(
        text.contains(&format!(
            "history from revision {mark} to {through}: nothing missing\n"
        )),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "only violations from revision {mark} on are visible"
        )),
        "{text}"
    );
    let json = render_json_lines(&report);
    assert!(json.contains(&format!("\"historyFrom\":{mark}")), "{json}");
}

/// After an accepted rewind the checker states the store epoch, and the history across it
/// is clean: the old holder's generation is refused, the next claim's is above the floor.
#[test]
fn an_accepted_rewind_is_stated_and_the_history_across_it_is_clean() {
    let dir = tempfile::tempdir().unwrap();
    let backend = SqliteBackend::open(dir.path().join("store.db"), OpenMode::ReadWrite).unwrap();
    let clock = ManualClock::new(1_000_000);
    let store = Store::new(
        Arc::new(backend),
        Arc::new(clock.clone()),
        Arc::new(SeededIds::new(5)),
    );
    store.enqueue(NewWork::effect("w", "h", "{}"), "k").unwrap();
    let before = store.claim("w", "a", "k", 5_000).unwrap();
    let accepted = store.accept_rewind("op@host", Some("test")).unwrap();
    let stale = store.complete("w", "a", before.generation, None);
    assert_eq!(stale.err().map(|e| e.code()), Some("WORK_FENCED"));
    clock.advance(10_000);
    let after = store.claim("w", "b", "k", 5_000).unwrap();
    assert!(after.generation > accepted.generation_floor);
    store.complete("w", "b", after.generation, None).unwrap();

    let report = check(&store, &CheckOptions::at(clock.now())).unwrap();
    assert!(report.violations.is_empty(), "{}", render_text(&report));
    assert_eq!(report.store_epoch, 1);
    assert!(render_text(&report).contains("store epoch 1: a rewind was accepted"));
    let summary: Value =
        serde_json::from_str(render_json_lines(&report).lines().last().unwrap()).unwrap();
    assert_eq!(summary["summary"]["storeEpoch"], 1);
}

// --- gaps: records missing from the checked range, attempts cut off

#[test]
fn a_skipped_generation_and_an_ungranted_write_are_history_gaps() {
    let f = fixture();
    f.grant("e-1", 1, "a-1");
    // Generation 2 was granted with no record.
    f.grant("e-1", 3, "a-2");
    // An accepted write under a generation nobody was recorded to hold.
    f.complete("e-2", 1, "a-1");
    // A resource whose first recorded grant is not its first generation.
    f.grant("e-3", 2, "a-1");
    // Not gaps: a refused write may present any generation, and a new store epoch starts
    // its generations above every earlier one.
    f.write("e-4", 9, "a-1", "complete", false, json!({}));
    f.grant("e-5", 1, "a-1");
    f.grant("e-5", (1 << 32) + 1, "a-2");

    let report = f.run();
    assert!(report.violations.is_empty(), "{}", render_text(&report));
    let gaps: Vec<(&str, Vec<String>)> = report
        .gaps
        .iter()
        .map(|g| (g.invariant, g.ids.clone()))
        .collect();
    let gap = |r: &str, o: &str| ("history-gap", vec![r.to_owned(), o.to_owned()]);
    assert_eq!(
        gaps,
        [gap("e-1", "a-2"), gap("e-2", "a-1"), gap("e-3", "a-1")]
    );
    assert!(
        report.gaps[0]
            .sentence
            .contains("no grant of generation 2 to 2 is recorded between revisions 1 and 2"),
        "{}",
        report.gaps[0].sentence
    );
    assert!(!report.is_clean(), "a history with gaps proves nothing");
    assert_eq!(report.history_from, 1);
    let text = render_text(&report);
    assert!(
        text.contains(&format!(
            "history from revision 1 to {}: 3 gap(s)",
            report.through_revision
        )),
        "{text}"
    );
    assert!(text.contains("3 history gap(s)"), "{text}");
    assert!(render_json_lines(&report).contains("\"historyGaps\":3"));
}

#[test]
fn a_complete_history_states_its_range_and_has_no_gap() {
    let f = fixture();
    f.grant("e-1", 1, "a-1");
    f.complete("e-1", 1, "a-1");
    f.grant("e-2", 1, "a-1");
    f.grant("e-2", 2, "a-2");
    let report = f.run();
    assert!(report.is_clean(), "{}", render_text(&report));
    assert!(report.gaps.is_empty());
    assert_eq!(
        report.history_from,
        leasehold::check::history_start(report.through_revision, 0)
    );
    assert!(render_text(&report).contains("from revision 1 to 4: nothing missing"));
}

#[test]
fn an_attempt_started_with_no_end_is_reported_from_the_execution_log() {
    let started = |work: &str, attempt: u32, outcome: &str| {
        json!({
            "workId": work, "logicalEffectId": work, "idempotencyKey": work,
            "attempt": attempt, "ownerId": "a-1", "generation": 4,
            "outcome": outcome, "at": T0,
        })
        .to_string()
    };
    let log = [
        started("e-1", 1, "started"),
        started("e-1", 1, "succeeded"),
        started("e-2", 3, "started"),
    ]
    .join("\n");
    let cut = leasehold::check::unfinished_attempts("a-1.jsonl", &log).unwrap();
    assert_eq!(cut.len(), 1);
    assert_eq!(cut[0].invariant, "attempt-without-end");
    assert_eq!(cut[0].ids, ["e-2", "a-1", "3"]);

    let f = fixture();
    let mut report = f.run();
    report.gaps.extend(cut);
    assert!(
        report.is_clean(),
        "a cut-off attempt is a trace, not a violation"
    );
    let text = render_text(&report);
    assert!(
        text.contains("1 attempt(s) started with no end in the execution logs"),
        "{text}"
    );
    assert!(text.contains("attempt-without-end [e-2, a-1, 3]"), "{text}");
}
