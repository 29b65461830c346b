//! `inspect failovers` and `inspect fenced` on a store where a stalled owner's claims were
//! reclaimed and its late completions refused.

use std::sync::Arc;

use leasehold::Store;
use leasehold::clock::SystemClock;
use leasehold::ids::SeededIds;
use leasehold::store::sqlite::SqliteBackend;
use leasehold::store::url::OpenMode;
use serde_json::Value;

use super::{busy_store, json_lines, leasehold, stderr, stdout};

/// `inspect failovers` and `inspect fenced` on a store where a stalled owner's claims were
/// reclaimed and its late completions refused: camelCase JSON rows that agree with the
/// store's history, an aligned table with the window's headline, pages by `--after`.
#[test]
#[expect(
    clippy::too_many_lines,
    reason = "a scripted scenario: its steps in the order they happen"
)]
fn failovers_and_fenced_writes_are_listed_from_the_history() {
    let dir = tempfile::tempdir().unwrap();
    let store = busy_store(dir.path());
    let window = ["--window", "3h"];
    let read = |view: &str, extra: &[&str]| {
        let mut args = vec!["inspect", "--store", &store, view, "--json"];
        args.extend_from_slice(&window);
        args.extend_from_slice(extra);
        leasehold(&args)
    };
    let failovers = json_lines(&read("failovers", &[]));
    let fenced = json_lines(&read("fenced", &[]));
    assert!(!failovers.is_empty() && !fenced.is_empty());
    let keys = |v: &Value| v.as_object().unwrap().keys().cloned().collect::<Vec<_>>();
    assert_eq!(
        keys(&failovers[0]),
        [
            "at",
            "from",
            "fromGeneration",
            "generation",
            "how",
            "lapsedMs",
            "resource",
            "revision",
            "to"
        ]
    );
    assert_eq!(
        keys(&fenced[0]),
        [
            "at",
            "finishedBy",
            "holder",
            "holderGeneration",
            "refusal",
            "resource",
            "revision",
            "verb",
            "writer",
            "writerGeneration"
        ]
    );
    let history = Store::new(
        Arc::new(SqliteBackend::open(&store, OpenMode::ReadOnly).unwrap()),
        Arc::new(SystemClock),
        Arc::new(SeededIds::new(1)),
    );
    let (grants, writes) = history.ownership_history(None, 0, 1_000_000).unwrap();
    let taken: Vec<(String, u64)> = grants
        .iter()
        .rev()
        .filter_map(|g| {
            g.took_over
                .as_ref()
                .map(|_| (g.resource_id.clone(), g.generation))
        })
        .collect();
    let listed: Vec<(String, u64)> = failovers
        .iter()
        .map(|f| {
            (
                f["resource"].as_str().unwrap().to_owned(),
                f["generation"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(listed.len(), taken.len());
    assert_eq!(
        listed.iter().collect::<std::collections::BTreeSet<_>>(),
        taken.iter().collect::<std::collections::BTreeSet<_>>()
    );
    assert_eq!(fenced.len(), writes.iter().filter(|w| !w.accepted).count());
    assert!(
        fenced.iter().any(|w| w["writer"] == "a"),
        "the stalled owner"
    );
    for w in &fenced {
        // A newer claim held it: another owner's, or the writer's own after its claim lapsed
        // unrenewed (this fixture steps authorities without renewing a held cursor) — or
        // nobody did (already finished).
        assert!(
            w["holderGeneration"].as_u64() > w["writerGeneration"].as_u64(),
            "who held it then: {w}"
        );
    }

    // The overview counts the same lists over the default window (all of them are in it).
    let overview = &json_lines(&leasehold(&[
        "inspect", "--store", &store, "overview", "--json",
    ]))[0];
    assert_eq!(overview["incidents"]["failovers"], failovers.len());
    assert_eq!(overview["incidents"]["refusedWrites"], fenced.len());
    assert_eq!(overview["incidents"]["window"], "15m");

    // Pages: the key under a full page continues exactly where it stopped.
    let first = read("failovers", &["--limit", "1"]);
    let hint = stderr(&first);
    let key = hint
        .trim()
        .strip_prefix("(more rows: --after ")
        .unwrap()
        .trim_end_matches(')');
    let rest = json_lines(&read("failovers", &["--after", key, "--limit", "100000"]));
    let mut paged = json_lines(&first);
    paged.extend(rest);
    assert_eq!(paged, failovers);

    let table = leasehold(&["inspect", "--store", &store, "fenced", "--window", "3h"]);
    let text = stdout(&table);
    assert!(text.starts_with("AT "), "{text}");
    assert!(text.contains("HOLDER THEN"), "{text}");
    let noun = if fenced.len() == 1 {
        "refused write"
    } else {
        "refused writes"
    };
    assert!(
        text.trim_end()
            .ends_with(&format!("last 3h · {} {noun}", fenced.len())),
        "{text}"
    );
}
