//! The dashboard's failovers (`F`) and fenced-writes (`W`) views and the overview's
//! failover summary, on a store with reclaims from several owners at several instants, an
//! older failover outside the window, late writes refused under every kind of holder, and
//! hostile text. What the views state is compared with the store's own history (row by
//! row in `tui_incidents/lists.rs`).

#![allow(clippy::unwrap_used)]

#[path = "support/mod.rs"]
mod support;

#[path = "tui_incidents/lists.rs"]
mod lists;

use std::sync::Arc;

use crossterm::event::KeyCode;
use leasehold::clock::ManualClock;
use leasehold::ids::SeededIds;
use leasehold::model::work::NewWork;
use leasehold::model::{Authority, Failure, FailureClass, WorkItem};
use leasehold::ops::failovers::failovers;
use leasehold::ops::window::Window;
use leasehold::store::Backend;
use leasehold::store::memory::MemoryBackend;
use leasehold::store::{Keyed, Store};
use leasehold::tui::action::{Action, ViewId};
use leasehold::tui::app::AppOptions;
use leasehold::tui::harness::{Harness, buffer_text, render_app};
use leasehold::tui::theme::Theme;
use serde_json::json;
use support::effects;

/// 2026-01-01T00:00:00Z.
const T0: i64 = 1_767_225_600_000;
const NO_KEY: Keyed<'static> = Keyed { key: None };

fn authority(id: &str, at: i64) -> Authority {
    Authority {
        instance_id: id.into(),
        compat: support::send_email_key().into(),
        build: "v1.4.0".into(),
        config: json!({"pollIntervalMs": 1000, "leaseDurationMs": 5000,
                       "handlers": {"send-email": "1.0.0"}})
        .to_string(),
        started_at: at,
        heartbeat_at: at,
        stopped_at: None,
        host: "host-1".into(),
        pid: 4242,
        published: leasehold::model::Published::default(),
    }
}

/// The store: an old failover 20 minutes back, then 30 reclaims of auth-a's claims by
/// auth-b and auth-c at three instants, a lease taken from auth-a, a hostile item id,
/// and auth-a's late writes refused under a live holder, a finished item and a lease.
fn fixture() -> (Store, ManualClock) {
    let clock = ManualClock::new(T0);
    let backend = MemoryBackend::new();
    let store = Store::new(
        Arc::new(backend.clone()),
        Arc::new(clock.clone()),
        Arc::new(SeededIds::new(7)),
    );
    for id in ["auth-a", "auth-b", "auth-c"] {
        store.register_authority(&authority(id, T0)).unwrap();
    }
    effects(&store, "old", 1);
    store
        .claim_batch("auth-a", support::send_email_key(), 1, 5_000)
        .unwrap();
    clock.advance(6_000);
    let old = store
        .claim_batch("auth-b", support::send_email_key(), 1, 5_000)
        .unwrap();
    store
        .complete(&old[0].id, "auth-b", old[0].generation, None)
        .unwrap();
    clock.advance(20 * 60_000);

    effects(&store, "effect", 30);
    // Ids like this are refused at every entry point; a store written by an older build may
    // still hold one, so it is planted below the validator.
    let hostile = WorkItem::new(
        NewWork::effect("evil\u{1b}[31m-\u{202e}id", "send-email", "{}"),
        support::send_email_key(),
        store.now(),
    );
    backend
        .write(&mut |tx| {
            tx.commit_revision()?;
            tx.insert_work(&hostile)?;
            tx.adjust_counter(
                &format!("work|effect|pending|{}", support::send_email_key()),
                1,
            )
        })
        .unwrap();
    let held = store
        .claim_batch("auth-a", support::send_email_key(), 100, 5_000)
        .unwrap();
    let leader = store.acquire("leader", "auth-a", 5_000.0, NO_KEY).unwrap();
    // Half a second past the expiry: a lapsed claim is reclaimable once a retry's backoff
    // (500 ms after the first attempt) has passed.
    clock.advance(5_500);
    store
        .claim_batch("auth-b", support::send_email_key(), 10, 60_000)
        .unwrap();
    clock.advance(1_100);
    store
        .claim_batch("auth-c", support::send_email_key(), 10, 60_000)
        .unwrap();
    clock.advance(2_350);
    store
        .claim_batch("auth-b", support::send_email_key(), 100, 60_000)
        .unwrap();
    store.acquire("leader", "auth-c", 60_000.0, NO_KEY).unwrap();
    clock.advance(700);
    for item in held.iter().take(2) {
        assert!(
            store
                .complete(&item.id, "auth-a", item.generation, None)
                .is_err()
        );
    }
    let done = store.work("effect-010").unwrap().unwrap();
    let owner = done.owner_id.clone().unwrap();
    store
        .complete("effect-010", &owner, done.generation, None)
        .unwrap();
    let late = held.iter().find(|i| i.id == "effect-010").unwrap();
    let failure = Failure {
        class: FailureClass::Retryable,
        code: "E".into(),
        message: "late".into(),
    };
    assert!(
        store
            .fail("effect-010", "auth-a", late.generation, failure)
            .is_err()
    );
    assert!(
        store
            .release("leader", "auth-a", &leader.token, leader.generation, NO_KEY)
            .is_err()
    );
    for id in ["auth-b", "auth-c"] {
        store
            .heartbeat(&authority(id, T0).incarnation(), false)
            .unwrap();
    }
    (store, clock)
}

fn options() -> AppOptions {
    AppOptions {
        read_only: false,
        demo: false,
        actor: "tester@ci".into(),
        refresh_ms: 250,
        ..AppOptions::default()
    }
}

fn harness(store: &Store, theme: &str, w: u16, h: u16) -> Harness {
    Harness::new(
        store.clone(),
        options(),
        Theme::builtin(theme).unwrap(),
        None,
        w,
        h,
    )
}

#[test]
fn snapshots_of_the_incident_views_and_the_overview() {
    let (store, _clock) = fixture();
    for (w, hgt, themes) in [
        (60, 15, &["dark"][..]),
        (80, 24, &["dark", "light"][..]),
        (160, 48, &["dark", "light"][..]),
    ] {
        for theme in themes {
            for view in [ViewId::Failovers, ViewId::Fenced, ViewId::Overview] {
                let mut h = harness(&store, theme, w, hgt);
                h.dispatch(Action::SwitchView(view));
                let buffer = h.render();
                let name = format!("{}_{w}x{hgt}_{theme}", view.name());
                if *theme == "dark" {
                    insta::assert_snapshot!(name, buffer_text(&buffer));
                } else {
                    insta::assert_snapshot!(name, format!("{buffer:?}"));
                }
            }
        }
    }
}

#[test]
fn keys_and_commands_open_the_views() {
    let (store, _clock) = fixture();
    let mut h = harness(&store, "dark", 80, 24);
    h.press('F');
    assert_eq!(h.app.view(), ViewId::Failovers);
    h.press('W');
    assert_eq!(h.app.view(), ViewId::Fenced);
    for (command, view) in [
        ("failovers", ViewId::Failovers),
        ("fenced", ViewId::Fenced),
        ("refused", ViewId::Fenced),
    ] {
        h.press('1');
        h.press(':');
        h.type_text(command);
        h.key(KeyCode::Enter);
        assert_eq!(h.app.view(), view, ":{command}");
    }
    let help = leasehold::tui::views::help::entries(&h.app);
    for key in ["F", "W"] {
        assert!(help.iter().any(|e| e.1 == key), "{key} is in the help");
    }
}

/// `:failovers 1h` (or `:fenced 1h`) sets how far back both incident views look, and the
/// rows are the store's list for that window; a window that cannot be read is one line on
/// the status and changes nothing.
#[test]
fn a_command_sets_how_far_back_the_incident_views_look() {
    let (store, _clock) = fixture();
    let hour = Window::parse("1h").unwrap();
    let wide = failovers(&store, hour, store.now(), None, 1_000).unwrap();
    assert_eq!(wide.total, 33, "the old failover is inside an hour");
    let mut h = harness(&store, "dark", 80, 24);
    h.command("failovers 1h");
    assert_eq!(h.app.view(), ViewId::Failovers);
    let data = h.app.table_data().unwrap();
    assert!(
        data.summary.contains("last 1h · 33 failovers"),
        "{}",
        data.summary
    );
    assert_eq!(h.app.query().window, hour);
    h.press('W');
    assert_eq!(h.app.query().window, hour, "one window for both views");
    h.command("fenced soon");
    let status = h.app.status().expect("a one-line error");
    assert!(
        status.text.contains("cannot read window"),
        "{}",
        status.text
    );
    assert_eq!(h.app.query().window, hour, "unchanged");
}

#[test]
fn no_panic_on_tiny_sizes() {
    let (store, _clock) = fixture();
    let mut h = harness(&store, "dark", 80, 24);
    for view in [ViewId::Failovers, ViewId::Fenced, ViewId::Overview] {
        h.dispatch(Action::SwitchView(view));
        for w in 0..=30 {
            for hgt in 0..=12 {
                let _ = render_app(&h.app, w, hgt);
            }
        }
    }
}

/// A store with two dead letters, one terminal failure and a stranded item beside a live
/// authority: the triage view (`!`) states the groups `ops::attention` finds, and Enter on
/// the failed group lists exactly the failed items in the work view.
#[test]
fn triage_lists_what_needs_a_person_and_enter_opens_the_work() {
    use leasehold::ops::attention::groups;
    use leasehold::ops::live_builds::LiveBuilds;

    let (store, clock) = memory_store();
    support::dead_letters(&store, &clock, &["dead-1", "dead-2"]);
    store
        .enqueue(
            NewWork::effect("bounced", "send-email", "{}"),
            support::send_email_key(),
        )
        .unwrap();
    let c = store
        .claim("bounced", "auth-a", support::send_email_key(), 5_000)
        .unwrap();
    let terminal = Failure {
        class: FailureClass::Terminal,
        code: "BOUNCED".into(),
        message: "no such mailbox".into(),
    };
    store
        .fail("bounced", "auth-a", c.generation, terminal)
        .unwrap();
    store
        .enqueue(NewWork::effect("old-build", "send-email", "{}"), "c0c0c0c0")
        .unwrap();
    store
        .register_authority(&authority("auth-a", clock_now(&clock)))
        .unwrap();

    let live = LiveBuilds::load(&store, clock_now(&clock)).unwrap();
    let truth = groups(&store, live.fleet(), clock_now(&clock)).unwrap();
    let counts: Vec<(String, u64)> = truth
        .iter()
        .map(|g| (format!("{:?}", g.reason), g.count))
        .collect();
    assert_eq!(
        counts,
        [
            ("DeadLetters".into(), 2),
            ("Failed".into(), 1),
            ("Incompatible".into(), 1)
        ]
    );

    let mut h = harness(&store, "dark", 160, 48);
    h.press('!');
    assert_eq!(h.app.view(), ViewId::Triage);
    let text = buffer_text(&h.render());
    for g in &truth {
        assert!(text.contains(g.title), "{}: {text}", g.title);
    }
    insta::assert_snapshot!("triage_160x48_dark", text);
    insta::assert_snapshot!(
        "triage_80x24_dark",
        buffer_text(&render_app(&h.app, 80, 24))
    );
    insta::assert_snapshot!(
        "triage_60x15_dark",
        buffer_text(&render_app(&h.app, 60, 15))
    );

    // The first group (dead letters) opens the work view under its own term, which lists
    // exactly its items: not the terminal failure beside them.
    h.key(KeyCode::Enter);
    assert_eq!(h.app.view(), ViewId::Work);
    let listed = buffer_text(&h.render());
    assert!(listed.contains("/state:dead-letter"), "{listed}");
    for id in ["dead-1", "dead-2"] {
        assert!(listed.contains(id), "{id}: {listed}");
    }
    for id in ["bounced", "old-build"] {
        assert!(!listed.contains(id), "{id}: {listed}");
    }

    // `:builds` states the matrix `ops::builds` computes: the only unfinished item is the
    // old build's, whose key nobody running has (its handler named from the item).
    h.press(':');
    h.type_text("builds");
    h.key(KeyCode::Enter);
    assert_eq!(h.app.view(), ViewId::Builds);
    let text = buffer_text(&h.render());
    assert!(text.contains("nobody: stranded"), "{text}");
    assert!(text.contains("stranded 1"), "{text}");
    assert!(text.contains("send-email"), "{text}");
    insta::assert_snapshot!("builds_160x48_dark", text);
    insta::assert_snapshot!(
        "builds_80x24_dark",
        buffer_text(&render_app(&h.app, 80, 24))
    );
    insta::assert_snapshot!(
        "builds_60x15_dark",
        buffer_text(&render_app(&h.app, 60, 15))
    );
}

/// The work view's single-row actions: `U` requeues the selected dead letter after a
/// confirmation (Esc changes nothing), `D` discards only with a reason, and each change is
/// the store's own, audited under the operator's name.
#[test]
fn requeue_and_discard_the_selected_item_through_the_dialog() {
    use leasehold::model::WorkState;
    use leasehold::rules::triage::Verb;
    use leasehold::tui::app::{Act, Overlay};

    let (store, clock) = memory_store();
    support::dead_letters(&store, &clock, &["dead-1", "dead-2"]);
    let state = |id: &str| store.work(id).unwrap().unwrap().state;
    let mut h = harness(&store, "dark", 80, 24);
    h.press('4');
    assert_eq!(h.app.view(), ViewId::Work);
    h.press('/');
    h.type_text("id:dead-1");
    h.key(KeyCode::Enter);
    h.press('U');
    assert!(matches!(
        h.app.overlay(),
        Some(Overlay::Confirm(c)) if c.act == Act::Triage(Verb::Requeue) && c.subject == "dead-1"
    ));
    let text = buffer_text(&h.render());
    assert!(text.contains("Requeue work item dead-1"), "{text}");
    insta::assert_snapshot!("requeue_dialog_80x24_dark", text);
    insta::assert_snapshot!(
        "requeue_dialog_160x48_dark",
        buffer_text(&render_app(&h.app, 160, 48))
    );
    h.key(KeyCode::Esc);
    assert!(h.app.overlay().is_none());
    assert_eq!(state("dead-1"), WorkState::Failed, "Esc changes nothing");

    h.press('U');
    h.press('y');
    assert_eq!(state("dead-1"), WorkState::Pending);
    assert_eq!(h.app.status().unwrap().text, "dead-1: requeued");

    // A discard needs a reason: Enter without one keeps the dialog open.
    h.press('/');
    h.key(KeyCode::Backspace);
    h.type_text("2");
    h.key(KeyCode::Enter);
    h.press('D');
    h.key(KeyCode::Enter);
    assert!(h.app.overlay().is_some());
    assert_eq!(state("dead-2"), WorkState::Failed);
    h.type_text("poison payload");
    h.key(KeyCode::Enter);
    assert!(h.app.overlay().is_none());
    assert_eq!(state("dead-2"), WorkState::Failed);
    assert_eq!(h.app.status().unwrap().text, "dead-2: discarded");
    // Again: already discarded, nothing written twice.
    h.press('D');
    h.type_text("again");
    h.key(KeyCode::Enter);
    assert_eq!(h.app.status().unwrap().text, "dead-2: already discarded");

    let mine = audited_by_tester(&store);
    assert_eq!(
        mine,
        [
            ("discard-work".into(), "dead-2".into()),
            ("discard-work".into(), "dead-2".into()),
            ("requeue-work".into(), "dead-1".into())
        ]
    );
}

/// `a` in an item's dialog widens it to everything the `/` filter matches: the store's
/// count and first ids, and above ten matches the count must be typed — Esc, Enter alone
/// or a wrong count change nothing; the right one requeues every match, each audited, and
/// the run audited with its filter and counts.
#[test]
fn bulk_requeue_of_twelve_dead_letters_needs_the_count_typed() {
    use leasehold::model::WorkState;
    use leasehold::tui::app::Overlay;

    let (store, clock) = memory_store();
    let ids: Vec<String> = (0..12).map(|i| format!("dl-{i:02}")).collect();
    support::dead_letters(
        &store,
        &clock,
        &ids.iter().map(String::as_str).collect::<Vec<_>>(),
    );
    effects(&store, "fresh", 1);
    let states = || -> Vec<WorkState> {
        ids.iter()
            .map(|id| store.work(id).unwrap().unwrap().state)
            .collect()
    };
    let mut h = harness(&store, "dark", 80, 24);
    h.press('4');
    h.press('/');
    h.type_text("state:failed");
    h.key(KeyCode::Enter);
    h.press('U');
    h.press('a');
    let Some(Overlay::ConfirmBulk { tally, .. }) = h.app.overlay() else {
        panic!("{:?}", h.app.overlay());
    };
    assert_eq!((tally.matched, tally.first.len()), (12, 5));
    let text = buffer_text(&h.render());
    assert!(
        text.contains("Requeue 12 work items matching state:failed"),
        "{text}"
    );
    assert!(
        text.contains("first: dl-00, dl-01, dl-02, dl-03, dl-04, …"),
        "{text}"
    );
    insta::assert_snapshot!("bulk_requeue_dialog_80x24_dark", text);
    insta::assert_snapshot!(
        "bulk_requeue_dialog_160x48_dark",
        buffer_text(&render_app(&h.app, 160, 48))
    );
    h.key(KeyCode::Esc);
    assert!(h.app.overlay().is_none());
    assert_eq!(states(), vec![WorkState::Failed; 12], "Esc changes nothing");

    h.press('U');
    h.press('a');
    h.key(KeyCode::Enter);
    assert!(
        h.app.overlay().is_some(),
        "Enter without the count is refused"
    );
    assert_eq!(
        h.app.status().unwrap().text,
        "type 12 (the number of matches) to run it"
    );
    h.type_text("13");
    h.key(KeyCode::Enter);
    assert!(h.app.overlay().is_some(), "a wrong count is refused");
    assert_eq!(states(), vec![WorkState::Failed; 12]);
    h.key(KeyCode::Backspace);
    h.type_text("2");
    h.key(KeyCode::Enter);
    assert!(h.app.overlay().is_none());
    assert_eq!(states(), vec![WorkState::Pending; 12]);
    assert_eq!(
        h.app.status().unwrap().text,
        "requeue-work over state:failed: 12 matched: 12 requeued, 0 skipped (already requeued), 0 refused"
    );

    let mine = audited_by_tester(&store);
    let mut expected: Vec<(String, String)> = ids
        .iter()
        .map(|id| ("requeue-work".into(), id.clone()))
        .collect();
    expected.insert(
        0,
        ("bulk-requeue-work".into(), "filter state:failed".into()),
    );
    assert_eq!(mine, expected);
}

/// A bulk discard of twelve dead letters: the dialog opens with the keyboard on the count,
/// so digits typed at once are the count, never the reason; Enter then asks for the reason
/// a discard needs and gives that field the keyboard, and the run discards every match.
#[test]
fn a_bulk_discards_count_is_typed_before_its_reason() {
    use leasehold::model::WorkState;
    use leasehold::tui::app::Overlay;

    let (store, clock) = memory_store();
    let ids: Vec<String> = (0..12).map(|i| format!("dl-{i:02}")).collect();
    support::dead_letters(
        &store,
        &clock,
        &ids.iter().map(String::as_str).collect::<Vec<_>>(),
    );
    let mut h = harness(&store, "dark", 80, 24);
    h.press('4');
    h.press('/');
    h.type_text("state:failed");
    h.key(KeyCode::Enter);
    h.press('D');
    // The item's dialog starts on its reason; Tab leaves it for `a`.
    h.key(KeyCode::Tab);
    h.press('a');
    h.type_text("12");
    let Some(Overlay::ConfirmBulk {
        typed,
        reason,
        editing,
        ..
    }) = h.app.overlay()
    else {
        panic!("{:?}", h.app.overlay());
    };
    assert_eq!(
        (typed.as_str(), reason.as_str(), *editing),
        ("12", "", false)
    );
    h.key(KeyCode::Enter);
    assert_eq!(
        h.app.status().unwrap().text,
        "a discard needs a reason, for the items and the audit log"
    );
    h.type_text("poison payload");
    h.key(KeyCode::Enter);
    assert!(h.app.overlay().is_none());
    let failed: Vec<String> = ids
        .iter()
        .map(|id| store.work(id).unwrap().unwrap())
        .filter(|w| w.state == WorkState::Failed && w.last_failure.is_some())
        .filter_map(|w| w.last_failure.map(|f| f.message))
        .collect();
    assert_eq!(failed, vec!["discarded by tester@ci: poison payload"; 12]);
}

/// The audit log's (action, target) pairs written as the test's operator, sorted.
fn audited_by_tester(store: &Store) -> Vec<(String, String)> {
    let mut mine: Vec<(String, String)> = store
        .list_audit(&leasehold::model::PageRequest::first(50))
        .unwrap()
        .rows
        .into_iter()
        .filter(|a| a.actor == "tester@ci")
        .map(|a| (a.action, a.target))
        .collect();
    mine.sort_unstable();
    mine
}

/// An empty memory store on a manual clock at `T0`.
fn memory_store() -> (Store, ManualClock) {
    let (store, clock, _) = support::memory_store_at(T0, 7);
    (store, clock)
}

fn clock_now(clock: &ManualClock) -> i64 {
    leasehold::clock::Clock::now(clock)
}

/// `:horizon` states what `ops::horizon` finds: an item held back for 90 s and a one-off
/// schedule due in 5 minutes, each in its minute, the list behind a minute in its detail.
#[test]
fn the_horizon_view_shows_what_becomes_due_in_its_minute() {
    use leasehold::model::schedule::{CatchUp, Trigger};

    let clock = ManualClock::new(T0);
    let store = Store::new(
        Arc::new(MemoryBackend::new()),
        Arc::new(clock.clone()),
        Arc::new(SeededIds::new(7)),
    );
    let held = NewWork {
        not_before: Some(T0 + 90_000),
        ..NewWork::effect("held-back", "send-email", "{}")
    };
    store.enqueue(held, support::send_email_key()).unwrap();
    store
        .create_schedule(
            "nightly-report",
            Trigger::Delay {
                after_ms: T0 + 300_000,
            },
            CatchUp::Latest,
            "send-email",
            "{}",
            support::send_email_key(),
        )
        .unwrap();
    let truth =
        leasehold::ops::horizon::horizon(&store, clock_now(&clock), 15 * 60_000, 15, 500).unwrap();
    let busy: Vec<usize> = (0..15).filter(|i| truth.buckets[*i].total() > 0).collect();
    assert_eq!(busy, [1, 5]);

    let mut h = harness(&store, "dark", 160, 48);
    h.press(':');
    h.type_text("horizon");
    h.key(KeyCode::Enter);
    assert_eq!(h.app.view(), ViewId::Horizon);
    let text = buffer_text(&h.render());
    assert!(text.contains("2 due in the next 15 min"), "{text}");
    assert!(
        text.contains("held-back") && text.contains("nightly-report"),
        "{text}"
    );
    insta::assert_snapshot!("horizon_160x48_dark", text);
    insta::assert_snapshot!(
        "horizon_80x24_dark",
        buffer_text(&render_app(&h.app, 80, 24))
    );
    insta::assert_snapshot!(
        "horizon_60x15_dark",
        buffer_text(&render_app(&h.app, 60, 15))
    );
}

/// The authorities view's actions on a gone authority: `L` releases its claims after a
/// confirmation (Esc changes nothing) — each item back to pending under a new generation,
/// so the gone owner's late write is fenced — a repeat finds nothing, a live authority is
/// refused in the store's words, and `O` forgets the gone one; each change is audited
/// under the operator's name.
#[test]
fn release_and_forget_a_gone_authority_through_the_dialog() {
    use leasehold::model::WorkState;
    use leasehold::tui::app::{Act, AuthorityVerb, Overlay};

    let (store, clock) = memory_store();
    store.register_authority(&authority("gone-1", T0)).unwrap();
    effects(&store, "held", 3);
    let held = store
        .claim_batch("gone-1", support::send_email_key(), 3, 5_000)
        .unwrap();
    assert_eq!(held.len(), 3);
    clock.advance(60 * 60_000);
    store
        .register_authority(&authority("live-1", clock_now(&clock)))
        .unwrap();
    let generation = |id: &str| store.work(id).unwrap().unwrap().generation;

    let mut h = harness(&store, "dark", 80, 24);
    h.press(':');
    h.type_text("authorities");
    h.key(KeyCode::Enter);
    assert_eq!(h.app.view(), ViewId::Authorities);
    h.press('/');
    h.type_text("gone");
    h.key(KeyCode::Enter);
    h.press('L');
    assert!(matches!(
        h.app.overlay(),
        Some(Overlay::Confirm(c))
            if c.act == Act::Authority(AuthorityVerb::Release) && c.subject == "gone-1"
    ));
    let text = buffer_text(&h.render());
    assert!(
        text.contains("Release the claims of authority gone-1"),
        "{text}"
    );
    // The size of what is handed back, as the release then reports it (below).
    assert!(
        text.contains("holds 3 claimed items now (3 expired)"),
        "{text}"
    );
    insta::assert_snapshot!("release_dialog_80x24_dark", text);
    h.key(KeyCode::Esc);
    assert!(h.app.overlay().is_none());
    assert!(
        held.iter().all(|w| generation(&w.id) == w.generation),
        "Esc changes nothing"
    );

    h.press('L');
    h.press('y');
    let status = h.app.status().unwrap().text.clone();
    assert!(
        status.contains("gone-1: released 3 claims (gone)"),
        "{status}"
    );
    for w in &held {
        let now = store.work(&w.id).unwrap().unwrap();
        assert_eq!(now.state, WorkState::Pending, "{}", w.id);
        assert!(now.generation > w.generation, "{}", w.id);
    }
    let late = store.complete(&held[0].id, "gone-1", held[0].generation, None);
    assert_eq!(late.unwrap_err().code(), "WORK_FENCED");
    h.press('L');
    h.press('y');
    let status = h.app.status().unwrap().text.clone();
    assert!(status.contains("holds nothing to release"), "{status}");

    // A live authority is refused, and keeps its registration.
    h.press('/');
    for _ in 0.."gone".len() {
        h.key(KeyCode::Backspace);
    }
    h.type_text("live");
    h.key(KeyCode::Enter);
    h.press('L');
    h.press('y');
    let status = h.app.status().unwrap().text.clone();
    assert!(status.contains("refused"), "{status}");
    h.press('O');
    h.press('y');
    assert!(registered(&store, "live-1"));

    h.press('/');
    for _ in 0.."live".len() {
        h.key(KeyCode::Backspace);
    }
    h.type_text("gone");
    h.key(KeyCode::Enter);
    h.press('O');
    h.press('y');
    let status = h.app.status().unwrap().text.clone();
    assert!(
        status.contains("gone-1: forgotten (it was gone)"),
        "{status}"
    );
    assert!(!registered(&store, "gone-1"));

    let mine = audited_by_tester(&store);
    let count = |action: &str| mine.iter().filter(|(a, _)| a == action).count();
    // One entry per released claim, one for the refused release and the refused forget of
    // the live one, one for the forget.
    assert_eq!(count("release-authority"), 4, "{mine:?}");
    assert_eq!(count("forget-authority"), 2, "{mine:?}");
}

fn registered(store: &Store, id: &str) -> bool {
    store
        .list_authorities(&leasehold::model::PageRequest::first(50))
        .unwrap()
        .rows
        .iter()
        .any(|a| a.instance_id == id)
}

/// The schedules view's actions: `Z` pauses the selected schedule after a confirmation
/// (Esc changes nothing) and its status reads `paused`, `W` resumes it, `D` deletes it;
/// each change is the store's own, audited under the operator's name.
#[test]
fn pause_resume_and_delete_a_schedule_through_the_dialog() {
    use leasehold::model::schedule::{CatchUp, Trigger};
    use leasehold::rules::schedule::Control;
    use leasehold::tui::app::{Act, Overlay};

    let (store, _clock) = memory_store();
    store
        .create_schedule(
            "tick",
            Trigger::Interval { every_ms: 60_000 },
            CatchUp::Latest,
            "send-email",
            "{}",
            support::send_email_key(),
        )
        .unwrap();
    let paused = || {
        store
            .schedule("tick")
            .unwrap()
            .map(|s| s.paused_at.is_some())
    };
    let mut h = harness(&store, "dark", 160, 48);
    h.press(':');
    h.type_text("schedules");
    h.key(KeyCode::Enter);
    assert_eq!(h.app.view(), ViewId::Schedules);
    h.press('Z');
    assert!(matches!(
        h.app.overlay(),
        Some(Overlay::Confirm(c)) if c.act == Act::Schedule(Control::Pause) && c.subject == "tick"
    ));
    let text = buffer_text(&h.render());
    assert!(text.contains("Pause schedule tick"), "{text}");
    h.key(KeyCode::Esc);
    assert_eq!(paused(), Some(false), "Esc changes nothing");

    h.press('Z');
    h.press('y');
    assert_eq!(paused(), Some(true));
    assert_eq!(h.app.status().unwrap().text, "tick: paused");
    h.refresh();
    assert!(buffer_text(&h.render()).contains("paused"));
    h.press('W');
    h.press('y');
    assert_eq!(paused(), Some(false));
    assert_eq!(h.app.status().unwrap().text, "tick: resumed");
    h.press('D');
    h.press('y');
    assert_eq!(paused(), None);
    assert_eq!(h.app.status().unwrap().text, "tick: deleted");
    assert_eq!(
        audited_by_tester(&store),
        [
            ("schedule-delete".into(), "tick".into()),
            ("schedule-pause".into(), "tick".into()),
            ("schedule-resume".into(), "tick".into())
        ]
    );
}

/// The work view's `Z` pauses the selected item's handler fleet-wide after a confirmation
/// (Esc changes nothing): the title counts the items waiting behind the pause and no claim
/// takes them; `W` resumes it. Each change is the store's own, audited under the
/// operator's name.
#[test]
fn pause_and_resume_a_handler_from_the_work_view() {
    use leasehold::rules::handler::HandlerControl;
    use leasehold::tui::app::{Act, Overlay};

    let (store, _clock) = memory_store();
    effects(&store, "fx", 3);
    let paused = || !store.paused_handlers().unwrap().is_empty();
    let mut h = harness(&store, "dark", 160, 48);
    h.press('4');
    assert_eq!(h.app.view(), ViewId::Work);
    h.press('Z');
    assert!(matches!(
        h.app.overlay(),
        Some(Overlay::Confirm(c))
            if c.act == Act::Handler(HandlerControl::Pause) && c.subject == "send-email"
    ));
    let text = buffer_text(&h.render());
    assert!(text.contains("Pause handler send-email"), "{text}");
    h.key(KeyCode::Esc);
    assert!(!paused(), "Esc changes nothing");

    h.press('Z');
    h.press('y');
    assert!(paused());
    assert_eq!(h.app.status().unwrap().text, "send-email: handler paused");
    assert!(
        store
            .claim_batch("o", support::send_email_key(), 10, 1_000)
            .unwrap()
            .is_empty()
    );
    h.refresh();
    let text = buffer_text(&h.render());
    assert!(text.contains("paused 3 (1 handler)"), "{text}");
    h.press('W');
    h.press('y');
    assert!(!paused());
    assert_eq!(h.app.status().unwrap().text, "send-email: handler resumed");
    assert_eq!(
        audited_by_tester(&store),
        [
            ("handler-pause".into(), "send-email".into()),
            ("handler-resume".into(), "send-email".into())
        ]
    );
}
