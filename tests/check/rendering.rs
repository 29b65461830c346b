//! Reports rendered as lines of text and JSON, with distinct kebab-case codes.

use leasehold::check::{codes, render_json_lines, render_text};
use serde_json::Value;

use super::fixture;

// --- rendering

#[test]
fn reports_render_as_lines_of_text_and_json() {
    let f = fixture();
    f.grant("e-1", 1, "a-1");
    f.grant("e-1", 1, "a\u{1b}[2J-2");
    let report = f.run();
    let text = render_text(&report);
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines[0].starts_with(
            "two-owners-one-generation [e-1, a-1, a\\u{1b}[2J-2] work e-1 generation 1"
        ),
        "{text}"
    );
    assert!(!text.contains('\u{1b}'));
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("checked through revision 2: 2 grants, 0 writes")),
        "{text}"
    );
    assert!(
        lines.contains(&"history from revision 1 to 2: nothing missing"),
        "{text}"
    );
    assert_eq!(
        *lines.last().unwrap(),
        "1 violation: 1 two-owners-one-generation"
    );

    let json = render_json_lines(&report);
    let objects: Vec<Value> = json
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(objects.len(), 2);
    assert_eq!(objects[0]["invariant"], "two-owners-one-generation");
    assert_eq!(objects[0]["ids"][0], "e-1");
    assert_eq!(objects[1]["summary"]["violations"], 1);
    assert_eq!(objects[1]["summary"]["checked"]["grants"], 2);
    let whole = serde_json::to_value(&report).unwrap();
    assert_eq!(whole["incompatibleItems"], 0);
    assert_eq!(whole["checked"]["historyEntries"], 0);

    let clean = fixture().run();
    assert_eq!(
        render_text(&clean).lines().last(),
        Some("OK: no invariant violated")
    );
}

#[test]
fn every_code_is_distinct_kebab_case() {
    let mut all = codes::ALL.to_vec();
    all.sort_unstable();
    all.dedup();
    assert_eq!(all.len(), codes::ALL.len());
    assert!(
        codes::ALL
            .iter()
            .all(|c| c.chars().all(|ch| ch.is_ascii_lowercase() || ch == '-'))
    );
}
