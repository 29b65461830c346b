//! The describe pane, the clipboard, the mouse toggle, content-sized columns and the
//! state-aware cancel dialog, on the shared fixture (manual clock, UTC).

use crossterm::event::KeyCode;
use leasehold::model::WorkItem;
use leasehold::model::work::NewWork;
use leasehold::tui::action::{Action, ViewId};
use leasehold::tui::app::Overlay;
use leasehold::tui::harness::{Harness, render_app};
use leasehold::tui::snapshot::ViewData;
use leasehold::tui::views::table;

use super::support::send_email_key as c1;
use super::{fixture, harness, screen, select_workflow};

const SIZES: [(u16, u16); 3] = [(60, 15), (80, 24), (160, 48)];

/// Moves the selection to the row whose key satisfies `pick`.
fn select_row(h: &mut Harness, pick: impl Fn(&str) -> bool) {
    h.dispatch(Action::Home);
    while h.app.selected_row().is_some_and(|r| !pick(&r.key)) {
        let before = h.app.table_ui().selected;
        h.key(KeyCode::Down);
        assert_ne!(before, h.app.table_ui().selected, "row not on the page");
    }
}

fn describe_text(h: &Harness) -> String {
    let Some(Overlay::Describe(d)) = h.app.overlay() else {
        panic!("no describe pane: {:?}", h.app.overlay())
    };
    leasehold::tui::describe::body(d, h.app.options().zone, 200).join("\n")
}

/// The first work item of the page with a recorded failure.
fn failed_item(h: &Harness) -> WorkItem {
    let Some(ViewData::Work(page)) = h.app.snapshot().map(|s| &s.data) else {
        panic!("work data")
    };
    page.rows
        .iter()
        .find(|w| w.last_failure.is_some())
        .cloned()
        .expect("a work item with a failure on the first page")
}

#[test]
fn describe_pane_snapshots() {
    let f = fixture();
    for (w, ht) in SIZES {
        let mut h = harness(&f, "dark", w, ht);
        // A workflow with inputs, its history read by key.
        select_workflow(&mut h, &f.running);
        h.press('d');
        let text = describe_text(&h);
        assert!(text.contains("\"partner\": \"umbrella\""), "{text}");
        assert!(text.contains("\nhistory:\n["), "history fetched: {text}");
        assert!(!text.contains("reading history"), "{text}");
        assert!(
            text.contains("\"createdAt\": 1767225606000 (00:00:06, 1.7s ago)"),
            "instants annotated: {text}"
        );
        insta::assert_snapshot!(format!("describe_workflow_{w}x{ht}"), screen(&h));
        h.key(KeyCode::Esc);
        assert!(h.app.overlay().is_none());

        // An event with its payload, from the journal.
        h.dispatch(Action::SwitchView(ViewId::Events));
        h.dispatch(Action::Home);
        h.press('d');
        let text = describe_text(&h);
        assert!(text.contains("\"amount\": 10"), "payload: {text}");
        assert!(text.contains("id: evt_1"), "{text}");
        insta::assert_snapshot!(format!("describe_event_{w}x{ht}"), screen(&h));
        h.key(KeyCode::Esc);

        // A work item with a failure; Enter describes too where there is no detail view.
        h.dispatch(Action::SwitchView(ViewId::Work));
        let item = failed_item(&h);
        select_row(&mut h, |k| k == item.id);
        h.key(KeyCode::Enter);
        let text = describe_text(&h);
        let failure = item.last_failure.unwrap();
        assert!(
            text.contains(&format!("\"code\": \"{}\"", failure.code)),
            "{text}"
        );
        assert!(
            text.contains("\nattempt errors (newest first):\n["),
            "attempt errors fetched: {text}"
        );
        assert!(
            text.contains(&format!("\"attempt\": {}", item.attempt_number)),
            "the last attempt's error: {text}"
        );
        insta::assert_snapshot!(format!("describe_work_failure_{w}x{ht}"), screen(&h));
    }
}

#[test]
fn describe_scrolls_and_closes() {
    let f = fixture();
    let mut h = harness(&f, "dark", 60, 15);
    select_workflow(&mut h, &f.running);
    h.press('d');
    let scroll = |h: &Harness| match h.app.overlay() {
        Some(Overlay::Describe(d)) => d.scroll,
        other => panic!("{other:?}"),
    };
    h.key(KeyCode::Down);
    assert_eq!(scroll(&h), 1);
    h.key(KeyCode::End);
    let end = scroll(&h);
    assert!(end > 10, "a workflow's record is long: {end}");
    h.key(KeyCode::Down);
    assert_eq!(scroll(&h), end, "never past the end");
    assert!(screen(&h).contains(" of "), "position shown");
    h.key(KeyCode::PageUp);
    assert!(scroll(&h) < end);
    h.key(KeyCode::Home);
    assert_eq!(scroll(&h), 0);
    h.key(KeyCode::PageDown);
    assert!(scroll(&h) > 0);
    h.key(KeyCode::Esc);
    assert!(h.app.overlay().is_none());
}

#[test]
fn y_copies_the_id_with_osc52() {
    let f = fixture();
    let mut h = harness(&f, "dark", 80, 24);
    h.dispatch(Action::SwitchView(ViewId::Work));
    select_row(&mut h, |k| k == "effect-000");
    h.press('y');
    assert_eq!(h.terminal_output(), b"\x1b]52;c;ZWZmZWN0LTAwMA==\x07");
    assert!(h.app.status().unwrap().text.contains("copied effect-000"));
    // From the describe pane as well.
    h.press('d');
    h.press('y');
    assert_eq!(
        h.terminal_output(),
        b"\x1b]52;c;ZWZmZWN0LTAwMA==\x07\x1b]52;c;ZWZmZWN0LTAwMA==\x07"
    );
}

#[test]
fn the_mouse_can_be_released_for_selecting_text() {
    let f = fixture();
    let mut h = harness(&f, "dark", 100, 24);
    assert!(h.mouse_captured());
    h.press('m');
    assert!(!h.mouse_captured());
    h.advance(10_000);
    assert!(screen(&h).contains("mouse released"), "{}", screen(&h));
    h.press('m');
    assert!(h.mouse_captured());
    let help: Vec<String> = leasehold::tui::views::help::entries(&h.app)
        .into_iter()
        .map(|e| format!("{} {}", e.1, e.2))
        .collect();
    for key in ["d describe", "y copy", "m release"] {
        assert!(help.iter().any(|l| l.starts_with(key)), "{key}: {help:?}");
    }
}

/// At 160 columns every visible cell is shown whole unless its row is full: a value is
/// never cut while the row still has free space.
#[test]
fn no_column_is_cut_while_the_row_has_room() {
    let f = fixture();
    // Sorts before every other item, so it is on the first page.
    let long_id = "alerts-sched-32a48d-02-digest-weekly@1767225600000";
    f.store
        .enqueue_batch(vec![NewWork::effect(long_id, "send-email", "{}")], c1())
        .unwrap();
    let mut h = harness(&f, "dark", 160, 48);
    h.dispatch(Action::SwitchView(ViewId::Work));
    assert!(screen(&h).contains(long_id), "{}", screen(&h));
    let views = [
        ViewId::Authorities,
        ViewId::Leases,
        ViewId::Work,
        ViewId::Workflows,
        ViewId::Cursors,
        ViewId::Events,
        ViewId::Schedules,
        ViewId::Audit,
    ];
    for view in views {
        h.dispatch(Action::SwitchView(view));
        assert_whole_unless_full(&h);
    }
    h.dispatch(Action::SwitchView(ViewId::Workflows));
    h.press(':');
    h.type_text(&format!("timeline wf:{}", f.completed));
    h.key(KeyCode::Enter);
    assert_eq!(h.app.view(), ViewId::Timeline);
    assert!(screen(&h).contains("write: "), "{}", screen(&h));
    assert_whole_unless_full(&h);
    // A resource the store never recorded is named as such, not shown as an empty table.
    h.press(':');
    h.type_text("timeline wf:no-such-instance");
    h.key(KeyCode::Enter);
    let summary = &h.app.table_data().expect("table data").summary;
    assert!(
        summary.contains("nothing recorded for wf:no-such-instance"),
        "{summary}"
    );
}

fn assert_whole_unless_full(h: &Harness) {
    let data = h.app.table_data().expect("table data");
    let text = screen(h);
    let lines: Vec<&str> = text.lines().collect();
    let (w, _) = h.app.size();
    let body = leasehold::tui::views::chrome::layout(ratatui::layout::Rect::new(0, 0, w, 48))[2];
    let sized = table::layout(data, body.width - 2, None);
    for (n, i) in h.app.visible().iter().enumerate() {
        let row = &data.rows[*i];
        let line = lines[usize::from(body.y) + 2 + n];
        let inside: String = line
            .chars()
            .skip(1)
            .take(usize::from(body.width) - 2)
            .collect();
        let full = !inside.ends_with("  ");
        for (c, _) in &sized {
            let cell = &row.cells[*c].text;
            assert!(
                full || inside.contains(cell.as_str()),
                "{:?}: {cell:?} cut in a row with room: {inside:?}",
                h.app.view()
            );
        }
    }
}

#[test]
fn cancel_dialog_with_a_reason_shows_its_choices_at_every_size() {
    let f = fixture();
    for (w, ht) in SIZES {
        let mut h = harness(&f, "dark", w, ht);
        select_workflow(&mut h, &f.running);
        h.press('C');
        h.key(KeyCode::Tab);
        h.type_text("duplicate order");
        let text = screen(&h);
        assert!(text.contains("reason: duplicate order█"), "{text}");
        assert!(text.contains("Enter  cancel it"), "{text}");
        h.key(KeyCode::Tab);
        let text = screen(&h);
        assert!(text.contains(" y  cancel it"), "{text}");
        assert!(text.contains("n/Esc"), "{text}");
        insta::assert_snapshot!(format!("cancel_dialog_{w}x{ht}"), text);
        h.press('n');
        assert!(h.app.overlay().is_none());
    }
    // Confirmed: the reason goes to the audit log with the outcome.
    let mut h = harness(&f, "dark", 80, 24);
    select_workflow(&mut h, &f.running);
    h.press('C');
    h.key(KeyCode::Tab);
    h.type_text("yes, really");
    h.key(KeyCode::Enter);
    let last = f
        .store
        .list_audit(&leasehold::model::PageRequest::first(50))
        .unwrap()
        .rows
        .into_iter()
        .max_by_key(|a| a.id)
        .unwrap();
    assert_eq!(
        (last.action.as_str(), last.outcome.as_str()),
        ("cancel-workflow", "cancelled; reason: yes, really")
    );
}

#[test]
fn cancel_is_not_offered_for_an_unknown_instance() {
    let f = fixture();
    let mut h = harness(&f, "dark", 80, 24);
    h.press(':');
    h.type_text("workflow wf-nope");
    h.key(KeyCode::Enter);
    h.press('C');
    assert!(h.app.overlay().is_none());
    assert_eq!(
        h.app.status().unwrap().text,
        "no such workflow instance: wf-nope"
    );
}

#[test]
fn describe_and_dialog_survive_tiny_sizes() {
    let f = fixture();
    let mut h = harness(&f, "dark", 80, 24);
    select_workflow(&mut h, &f.running);
    for open in ['d', 'C'] {
        h.press(open);
        for w in 0..=60 {
            for ht in 0..=15 {
                h.dispatch(Action::Resize {
                    width: w,
                    height: ht,
                });
                h.key(KeyCode::End);
                let _ = render_app(&h.app, w, ht);
            }
        }
        h.key(KeyCode::Esc);
        h.dispatch(Action::Resize {
            width: 80,
            height: 24,
        });
    }
}

#[test]
fn describe_escapes_hostile_records_and_describes_the_open_workflow() {
    let f = fixture();
    let mut h = harness(&f, "dark", 80, 24);
    h.dispatch(Action::SwitchView(ViewId::Work));
    h.press('f'); // failed only: the hostile item failed
    select_row(&mut h, |k| k.starts_with("evil"));
    h.press('d');
    let text = screen(&h);
    assert!(text.contains("\\u{1b}[31m"), "{text}");
    assert!(
        !text.contains('\u{1b}') && !text.contains('\u{202e}'),
        "{text}"
    );
    h.key(KeyCode::End);
    assert!(!screen(&h).contains('\u{1b}'));
    h.key(KeyCode::Esc);
    // In the workflow detail view `d` describes the instance on screen.
    h.press(':');
    h.type_text(&format!("workflow {}", f.retrying));
    h.key(KeyCode::Enter);
    h.press('d');
    let text = describe_text(&h);
    assert!(text.starts_with(&format!("id: {}", f.retrying)), "{text}");
    assert!(text.contains("\nhistory:\n["), "{text}");
    assert!(text.contains("HTTP_503"), "the action's failure: {text}");
}

/// The history tree writes instants inside a transition's detail with their wall time
/// (a timer's `fireAt`), never as bare epoch milliseconds.
#[test]
fn history_details_annotate_their_instants() {
    let f = fixture();
    let mut h = harness(&f, "dark", 160, 48);
    h.dispatch(Action::SwitchView(ViewId::Workflows));
    let Some(ViewData::Workflows(page)) = h.app.snapshot().map(|s| &s.data) else {
        panic!("workflows data")
    };
    let waiting = page
        .rows
        .iter()
        .find(|r| r.workflow_id == "reminder" && r.status == "waiting")
        .map(|r| r.instance_id.clone())
        .expect("a reminder waiting on its timer");
    h.press(':');
    h.type_text(&format!("workflow {waiting}"));
    h.key(KeyCode::Enter);
    let text = screen(&h);
    let mut annotated = 0;
    for (at, _) in text.match_indices("17672256") {
        let digits: String = text[at..]
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        if digits.len() == 13 {
            assert!(
                text[at + 13..].starts_with(" ("),
                "a bare epoch ms: {}",
                &text[at..(at + 40).min(text.len())]
            );
            annotated += 1;
        }
    }
    assert!(annotated > 0, "the timer's instant is shown: {text}");
}

/// A describe pane is a picture of the moment it opened: its facts and its annotated
/// instants agree with each other, and do not drift apart while time passes.
#[test]
fn a_describe_pane_holds_its_moment() {
    let f = fixture();
    let mut h = harness(&f, "dark", 100, 30);
    h.dispatch(Action::SwitchView(ViewId::Leases));
    h.press('d');
    let before = describe_text(&h);
    f.clock.advance(5_000);
    h.advance(5_000);
    assert_eq!(describe_text(&h), before);
    assert!(screen(&h).contains("as of 00:00:07"), "{}", screen(&h));
}

/// A poison pill whose only attempt lapsed unrecorded is a dead letter: the work table lists
/// it as `failed (uncertain-exhausted)` and the describe pane shows its failure and class.
#[test]
fn a_dead_letter_is_listed_and_described_as_such() {
    let f = fixture();
    let poison = NewWork {
        max_attempts: 1,
        ..NewWork::effect("poison-1", "send-email", "{}")
    };
    f.store.enqueue(poison, c1()).unwrap();
    f.store.claim("poison-1", "auth-a", c1(), 1_000).unwrap();
    // Past the lease and a retry's backoff after it: a claim takes the lapse over.
    f.clock.advance(1_500);
    let code = f
        .store
        .claim("poison-1", "auth-b", c1(), 1_000)
        .unwrap_err();
    assert_eq!(
        code.code(),
        "already-terminal",
        "dead-lettered by the claim that took it over"
    );
    let mut h = harness(&f, "dark", 160, 48);
    h.dispatch(Action::SwitchView(ViewId::Work));
    h.press('/');
    h.type_text("id:poison");
    h.key(KeyCode::Enter);
    select_row(&mut h, |k| k == "poison-1");
    let row = h
        .app
        .selected_row()
        .expect("the dead letter is listed")
        .clone();
    let cells = row.cells.iter().map(|c| c.text.clone()).collect::<Vec<_>>();
    assert!(
        cells.iter().any(|c| c == "failed (uncertain-exhausted)"),
        "{cells:?}"
    );
    h.press('d');
    let text = describe_text(&h);
    assert!(
        text.contains("last failure  uncertain-exhausted ATTEMPTS_EXHAUSTED"),
        "{text}"
    );
    assert!(text.contains("1 of 1 (1 uncertain"), "{text}");
}
