//! The dashboard's `:replay` view on a store with a planted failover: auth-a's claims lapse,
//! auth-b takes them, auth-a's late completion is refused. Driven through the app with
//! keys; what the view says — the window's summary, where `}` lands, who held a resource
//! before and after the failover — is compared with the store's own grants.

#![allow(clippy::unwrap_used)]

#[path = "support/mod.rs"]
mod support;

use crossterm::event::KeyCode;
use leasehold::model::Grant;
use leasehold::ops::replay::{self, StepAt};
use leasehold::store::Store;
use leasehold::tui::action::ViewId;
use leasehold::tui::app::AppOptions;
use leasehold::tui::harness::{Harness, buffer_text, render_app};
use leasehold::tui::theme::Theme;

/// 2026-01-01T00:00:00Z.
const T0: i64 = 1_767_225_600_000;

/// Twenty effects: auth-a claims eight on a short lease, a second later completes two;
/// then three seconds pass, auth-b claims the rest — taking auth-a's six lapsed claims —
/// auth-a's late completion is refused and auth-b completes everything it holds.
fn fixture() -> Store {
    let (store, clock, _) = support::memory_store_at(T0, 7);
    let key = support::send_email_key();
    support::effects(&store, "effect", 20);
    clock.advance(1_000);
    let held = store.claim_batch("auth-a", key, 8, 2_000).unwrap();
    clock.advance(1_000);
    for item in held.iter().take(2) {
        store
            .complete(&item.id, "auth-a", item.generation, None)
            .unwrap();
    }
    clock.advance(3_000);
    let mut taken = store.claim_batch("auth-b", key, 100, 60_000).unwrap();
    taken.sort_by(|a, b| a.id.cmp(&b.id));
    let late = &held[5];
    assert!(
        store
            .complete(&late.id, "auth-a", late.generation, None)
            .is_err()
    );
    clock.advance(500);
    for item in &taken {
        store
            .complete(&item.id, "auth-b", item.generation, None)
            .unwrap();
        clock.advance(10);
    }
    store
}

fn harness(store: &Store, w: u16, h: u16) -> Harness {
    Harness::new(
        store.clone(),
        AppOptions {
            actor: "tester@ci".into(),
            ..AppOptions::default()
        },
        Theme::builtin("dark").unwrap(),
        None,
        w,
        h,
    )
}

fn grants(store: &Store) -> Vec<Grant> {
    store.ownership_history(None, 0, 10_000).unwrap().0
}

fn cursor(h: &Harness) -> StepAt {
    h.app.replay_data().unwrap().cursor.unwrap()
}

/// The resource pane's line, as the view states it.
fn inspected(h: &Harness) -> replay::ResourceAt {
    h.app
        .replay_data()
        .unwrap()
        .resource
        .clone()
        .unwrap()
        .unwrap()
}

#[test]
fn the_summary_is_the_windows_history() {
    let store = fixture();
    let grants = grants(&store);
    let (_, writes) = store.ownership_history(None, 0, 10_000).unwrap();
    let mut h = harness(&store, 160, 48);
    h.command("replay");
    assert_eq!(h.app.view(), ViewId::Replay);
    let data = h.app.replay_data().unwrap();
    let summary = &data.summary;
    assert_eq!(
        summary.failovers,
        grants.iter().filter(|g| g.took_over.is_some()).count() as u64
    );
    assert_eq!(summary.failovers, 6, "auth-b took six lapsed claims");
    assert_eq!(summary.grants, grants.len() as u64);
    assert_eq!(
        summary.fenced_writes,
        writes.iter().filter(|w| !w.accepted).count() as u64
    );
    assert_eq!(summary.completions, 20);
    assert_eq!(summary.records, (grants.len() + writes.len()) as u64);
    let text = buffer_text(&h.render());
    assert!(text.contains("failovers 6 · fenced writes 1"), "{text}");
    // The cursor starts on the window's first step, the first of auth-a's claims.
    let first = &data.steps[0].1;
    assert_eq!(data.cursor, Some(data.steps[0].0));
    assert_eq!(first.revision(), grants[0].revision);
    insta::assert_snapshot!("replay_160x48_dark", text);
    insta::assert_snapshot!(
        "replay_80x24_dark",
        buffer_text(&render_app(&h.app, 80, 24))
    );
    insta::assert_snapshot!(
        "replay_60x15_dark",
        buffer_text(&render_app(&h.app, 60, 15))
    );
}

/// `}` lands on the first failover grant; Enter shows its resource owned by the taker at
/// that revision; stepping back with `[` past the failover's revision shows the owner it
/// was taken from, at the generation the store recorded; `{` comes back to it from later.
#[test]
fn owners_either_side_of_the_failover_are_the_stores_grants() {
    let store = fixture();
    let grants = grants(&store);
    let failover = grants.iter().find(|g| g.took_over.is_some()).unwrap();
    let took = failover.took_over.as_ref().unwrap();
    let mut h = harness(&store, 80, 24);
    h.press('H');
    assert_eq!(h.app.view(), ViewId::Replay);
    h.press('}');
    let at = cursor(&h);
    assert_eq!(at.revision, failover.revision);
    let (_, step) = h
        .app
        .replay_data()
        .unwrap()
        .steps
        .iter()
        .find(|(p, _)| *p == at)
        .unwrap()
        .clone();
    assert!(step.is_failover());
    assert_eq!(step.resource(), failover.resource_id);

    h.key(KeyCode::Enter);
    let after = inspected(&h);
    assert_eq!(after.resource, failover.resource_id);
    assert_eq!(after.revision, failover.revision);
    assert_eq!(after.owner.as_deref(), Some(failover.owner_id.as_str()));
    assert_eq!(after.generation, failover.generation);
    let text = buffer_text(&h.render());
    assert!(
        text.contains(&format!(
            "{} at revision {}",
            failover.resource_id, failover.revision
        )),
        "{text}"
    );
    insta::assert_snapshot!("replay_resource_80x24_dark", text);
    insta::assert_snapshot!(
        "replay_resource_160x48_dark",
        buffer_text(&render_app(&h.app, 160, 48))
    );

    // Back, step by step, until the cursor is before the failover's revision.
    for _ in 0..50 {
        if cursor(&h).revision < failover.revision {
            break;
        }
        h.press('[');
    }
    let before = inspected(&h);
    assert!(before.revision < failover.revision);
    assert_eq!(before.owner.as_deref(), Some(took.from_owner.as_str()));
    assert_eq!(before.generation, took.from_generation);
    let granted = grants
        .iter()
        .rev()
        .find(|g| g.resource_id == failover.resource_id && g.revision <= before.revision)
        .unwrap();
    assert_eq!(
        (granted.owner_id.as_str(), granted.generation),
        (took.from_owner.as_str(), took.from_generation),
        "the history's own grant before the failover"
    );

    // Esc closes the pane, a second Esc leaves the view.
    h.key(KeyCode::Esc);
    assert!(h.app.replay().unwrap().inspect.is_none());
    assert_eq!(h.app.view(), ViewId::Replay);

    // To the end of the window, then `{` finds the last failover before it.
    for _ in 0..80 {
        h.press(']');
    }
    let last = cursor(&h);
    assert_eq!(
        h.app.status().unwrap().text,
        "the last step of the window",
        "] past the end says so"
    );
    h.press('{');
    let last_failover = grants.iter().rev().find(|g| g.took_over.is_some()).unwrap();
    assert!(cursor(&h) < last);
    assert_eq!(cursor(&h).revision, last_failover.revision);
    h.key(KeyCode::Esc);
    assert_ne!(h.app.view(), ViewId::Replay);
}

/// A window typed as two wall times or as a duration reads the same history; one that
/// cannot be read is refused on the status line and the view is not opened.
#[test]
fn the_window_is_typed_as_wall_times_or_a_duration() {
    let store = fixture();
    let mut h = harness(&store, 160, 48);
    h.command("replay 00:00 00:00:04");
    assert_eq!(h.app.view(), ViewId::Replay);
    let ui = h.app.replay().unwrap().clone();
    assert_eq!((ui.from, ui.to), (T0, T0 + 4_000));
    let early = h.app.replay_data().unwrap().summary.clone();
    assert_eq!(
        (early.failovers, early.claims, early.completions),
        (0, 8, 2),
        "auth-a's claims and first completions; the failover is at 00:00:05"
    );

    h.key(KeyCode::Esc);
    h.command("replay 30m");
    let ui = h.app.replay().unwrap().clone();
    assert_eq!(ui.to - ui.from, 30 * 60_000);
    assert_eq!(ui.to, store.now());
    assert_eq!(h.app.replay_data().unwrap().summary.failovers, 6);

    h.press('1');
    h.command("replay yesterday");
    assert_eq!(h.app.view(), ViewId::Overview);
    assert!(
        h.app
            .status()
            .unwrap()
            .text
            .contains("cannot read the instant"),
        "{:?}",
        h.app.status()
    );
    h.command("replay now 1h");
    assert!(
        h.app
            .status()
            .unwrap()
            .text
            .contains("ends before it starts"),
        "{:?}",
        h.app.status()
    );
    let help = leasehold::tui::views::help::entries(&h.app);
    for key in ["H", "[", "]", "{", "}"] {
        assert!(help.iter().any(|e| e.1 == key), "{key} is in the help");
    }
}

#[test]
fn no_panic_on_tiny_sizes() {
    let store = fixture();
    let mut h = harness(&store, 80, 24);
    h.press('H');
    h.press('}');
    h.key(KeyCode::Enter);
    for w in 0..=30 {
        for hgt in 0..=12 {
            let _ = render_app(&h.app, w, hgt);
        }
    }
}
