//! What the failovers (`F`) and fenced-writes (`W`) views state, row by row, against the
//! store's own history: the failovers page after page both ways, both generations of each
//! takeover, the holder (or the finisher) of each refused write.

use std::collections::BTreeSet;

use crossterm::event::KeyCode;
use leasehold::ops::failovers::failovers;
use leasehold::ops::fenced::fenced;
use leasehold::ops::window::Window;

use super::{fixture, harness};

/// Every row the view shows, page after page, is the store's failover list of the window
/// in the same order, and the title carries the window's count.
#[test]
fn the_failovers_view_pages_through_the_stores_list() {
    let (store, _clock) = fixture();
    let list = failovers(&store, Window::default(), store.now(), None, 1_000).unwrap();
    assert_eq!(
        list.total, 32,
        "30 effects, the hostile one and the lease; not the old one"
    );
    let expected: Vec<String> = list.rows.iter().map(|f| f.position.key()).collect();
    let (grants, _) = store.ownership_history(None, 0, 10_000).unwrap();
    assert_eq!(
        grants
            .iter()
            .filter(|g| g.took_over.is_some() && g.at >= list.since)
            .count(),
        expected.len(),
        "the list is the history's failovers in the window"
    );

    let mut h = harness(&store, "dark", 80, 24);
    h.press('F');
    let first = h.app.table_data().unwrap();
    assert!(
        first.summary.contains("last 15m · 32 failovers"),
        "{}",
        first.summary
    );
    let mut seen: Vec<String> = Vec::new();
    for _ in 0..10 {
        let data = h.app.table_data().unwrap();
        seen.extend(data.rows.iter().map(|r| r.key.clone()));
        if !data.more_after {
            break;
        }
        h.key(KeyCode::PageDown);
    }
    assert_eq!(seen, expected);
    assert_eq!(seen.iter().collect::<BTreeSet<_>>().len(), seen.len());
    let mut back: Vec<String> = Vec::new();
    for _ in 0..10 {
        let data = h.app.table_data().unwrap();
        back.splice(0..0, data.rows.iter().map(|r| r.key.clone()));
        if !data.more_before {
            break;
        }
        h.key(KeyCode::PageUp);
    }
    assert_eq!(
        back, expected,
        "PgUp goes back through the same pages to the newest"
    );
    h.key(KeyCode::PageDown);
    h.key(KeyCode::Home);
    assert_eq!(
        h.app.table_data().unwrap().rows[0].key,
        expected[0],
        "Home is the newest again"
    );
}

/// Each failover row states the generation the lost holder held and the one granted, as
/// the grant history records them.
#[test]
fn the_failovers_view_states_both_generations_of_each_takeover() {
    let (store, _clock) = fixture();
    let list = failovers(&store, Window::default(), store.now(), None, 1_000).unwrap();
    let (grants, _) = store.ownership_history(None, 0, 10_000).unwrap();
    let mut h = harness(&store, "dark", 160, 48);
    h.press('F');
    let data = h.app.table_data().unwrap();
    assert!(!data.rows.is_empty());
    for (row, f) in data.rows.iter().zip(&list.rows) {
        let grant = grants
            .iter()
            .find(|g| g.revision == f.revision && g.resource_id == f.resource)
            .unwrap();
        let took = grant.took_over.as_ref().unwrap();
        assert_eq!(
            row.cells[4].text,
            format!("{}→{}", took.from_generation, grant.generation),
            "{}",
            f.resource
        );
        assert_eq!(row.cells[2].text, took.from_owner);
    }
}

/// The fenced view lists each refused write with its writer and who held the resource.
#[test]
fn the_fenced_view_names_the_holder_of_each_refused_write() {
    let (store, _clock) = fixture();
    let list = fenced(&store, Window::default(), store.now(), None, 100).unwrap();
    assert_eq!(list.total, 4);
    let mut h = harness(&store, "dark", 160, 48);
    h.press('W');
    let data = h.app.table_data().unwrap();
    assert_eq!(data.rows.len(), 4);
    for (row, w) in data.rows.iter().zip(&list.rows) {
        let cells: Vec<&str> = row.cells.iter().map(|c| c.text.as_str()).collect();
        assert_eq!(cells[2], w.writer);
        assert_eq!(cells[3], w.writer_generation.to_string());
        assert_eq!(cells[4], w.holder_label());
        assert_eq!(cells[5], w.holder_generation_label());
        assert_eq!(cells[6], w.verb);
    }
    let holders: Vec<&str> = data.rows.iter().map(|r| r.cells[4].text.as_str()).collect();
    assert!(
        holders.contains(&"auth-c"),
        "the lease's holder: {holders:?}"
    );
    let writers: BTreeSet<&str> = data.rows.iter().map(|r| r.cells[2].text.as_str()).collect();
    assert_eq!(
        writers,
        BTreeSet::from(["auth-a"]),
        "only the late owner wrote"
    );
    // effect-010 was finished by its new owner before auth-a's late failure: the row names
    // the owner of the item's last accepted write, its completion.
    let (_, writes) = store.ownership_history(Some("effect-010"), 0, 100).unwrap();
    let finisher = writes
        .iter()
        .rfind(|w| w.accepted && w.verb == "complete")
        .map(|w| w.owner_id.clone())
        .unwrap();
    assert_ne!(finisher, "auth-a");
    let terminal = data
        .rows
        .iter()
        .find(|r| r.cells[7].text == "already-terminal")
        .unwrap();
    assert_eq!(terminal.cells[1].text, "effect-010");
    assert_eq!(terminal.cells[4].text, format!("done by {finisher}"));
    assert!(
        !holders.contains(&"nobody"),
        "every refusal names someone: {holders:?}"
    );
}
