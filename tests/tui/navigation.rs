//! Moving around the dashboard: number keys and `:` completion, mouse clicks and the wheel.

use crossterm::event::KeyCode;
use leasehold::tui::action::{Action, ViewId};

use super::{fixture, harness};

#[test]
fn number_keys_and_command_completion_switch_views() {
    let f = fixture();
    let mut h = harness(&f, "dark", 80, 24);
    h.press('3');
    assert_eq!(h.app.view(), ViewId::Leases);
    h.press(':');
    h.type_text("wor");
    h.key(KeyCode::Tab);
    assert_eq!(
        h.app.prompt().map(|p| p.text.as_str()),
        Some("work"),
        "two candidates (work, workflows) share `work`"
    );
    h.type_text("fl");
    h.key(KeyCode::Tab);
    assert_eq!(
        h.app.prompt().map(|p| p.text.as_str()),
        Some("workflow"),
        "`workflow ID` and `workflows`"
    );
    h.press('s');
    h.key(KeyCode::Tab);
    assert_eq!(h.app.prompt().map(|p| p.text.as_str()), Some("workflows"));
    h.key(KeyCode::Enter);
    assert_eq!(h.app.view(), ViewId::Workflows);
    h.key(KeyCode::Esc);
    assert_eq!(h.app.view(), ViewId::Leases, "Esc goes back");
    h.press(':');
    h.type_text("nonsense");
    h.key(KeyCode::Enter);
    assert!(
        h.app
            .status()
            .is_some_and(|s| s.text.contains("unknown command"))
    );
    h.press(':');
    h.type_text("work failed");
    h.key(KeyCode::Enter);
    assert_eq!(h.app.view(), ViewId::Work);
    assert_eq!(h.app.work_quick().name(), "failed");
}

/// An error on the status line is gone once the operator acts again (a move, a view
/// change); a key that fails in turn shows its own error, and a message that is no error
/// stays up.
#[test]
fn an_error_on_the_status_line_clears_at_the_next_key() {
    let f = fixture();
    let mut h = harness(&f, "dark", 80, 24);
    h.command("nonsense");
    let error = h.app.status().expect("the refusal").text.clone();
    assert!(error.contains("unknown command"), "{error}");
    h.key(KeyCode::Down);
    assert_eq!(h.app.status(), None, "a move clears it");
    h.command("nonsense");
    h.command("work bogus-filter-word");
    assert_eq!(h.app.status(), None, "a command that worked clears it");
    h.command("nonsense");
    h.command("also-nonsense");
    assert!(
        h.app
            .status()
            .is_some_and(|s| s.text.contains("also-nonsense")),
        "a second failure shows its own"
    );
    h.press('3');
    assert_eq!(h.app.status(), None, "a view change clears it");
    h.press(' ');
    h.press('2');
    assert!(
        h.app.status().is_some_and(|s| s.text.contains("paused")),
        "only errors go at the next key"
    );
}

/// Mouse: a click on a tab switches views, on a column header sorts by it, on a row
/// selects it; the wheel moves the selection.
#[test]
fn mouse_clicks_and_wheel() {
    use leasehold::tui::views::{chrome, table};
    use ratatui::layout::Rect;

    let f = fixture();
    let mut h = harness(&f, "dark", 160, 48);
    let [_, tabs, body, _] = chrome::layout(Rect::new(0, 0, 160, 48));
    let tab_x = (0..160)
        .find(|x| chrome::tab_at(tabs, *x, h.app.view()) == Some(ViewId::Work))
        .expect("the work tab is on screen");
    h.dispatch(Action::Click {
        column: tab_x,
        row: tabs.y,
    });
    assert_eq!(h.app.view(), ViewId::Work);

    let data = h.app.table_data().unwrap().clone();
    let gen_x = (body.x..body.right())
        .find(|x| table::column_at(body, &data, None, *x) == Some(4))
        .expect("the generation column is on screen");
    h.dispatch(Action::Click {
        column: gen_x,
        row: body.y + 1,
    });
    assert_eq!(
        h.app.table_ui().sort.map(|s| s.0),
        Some(4),
        "header click sorts"
    );

    h.dispatch(Action::Click {
        column: body.x + 2,
        row: body.y + 4,
    });
    assert_eq!(h.app.table_ui().selected, 2, "third row selected");
    h.dispatch(Action::ScrollDown);
    assert_eq!(h.app.table_ui().selected, 5, "the wheel moves three rows");
    h.dispatch(Action::ScrollUp);
    assert_eq!(h.app.table_ui().selected, 2);
}

/// At 60 columns every tab is still on screen (its key; the view shown also by name), and a
/// click on each one opens its view.
#[test]
fn every_tab_is_in_sight_at_sixty_columns() {
    use leasehold::tui::views::chrome;
    use ratatui::layout::Rect;

    let f = fixture();
    let mut h = harness(&f, "dark", 60, 15);
    let [_, tabs, _, _] = chrome::layout(Rect::new(0, 0, 60, 15));
    for view in ViewId::MAIN {
        let x = (0..60)
            .find(|x| chrome::tab_at(tabs, *x, h.app.view()) == Some(view))
            .unwrap_or_else(|| panic!("the {} tab is on screen", view.name()));
        h.dispatch(Action::Click {
            column: x,
            row: tabs.y,
        });
        assert_eq!(h.app.view(), view);
        let screen = super::screen(&h);
        let line = screen.lines().nth(1).unwrap();
        assert!(
            line.contains(&format!("{}:", view.digit().unwrap())),
            "{line}"
        );
    }
}
