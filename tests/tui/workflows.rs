//! A workflow's detail with its history tree, and a cancel through the dialog.

use crossterm::event::KeyCode;
use leasehold::tui::action::ViewId;
use leasehold::tui::app::{Act, Overlay};
use leasehold::tui::snapshot::ViewData;
use leasehold::tui::theme::Role;

use super::{fixture, harness, screen, select_workflow};

#[test]
fn workflow_detail_shows_history_tree() {
    let f = fixture();
    let mut h = harness(&f, "dark", 160, 48);
    h.press('5');
    let target = f.completed.clone();
    let index = h
        .app
        .visible()
        .iter()
        .position(|i| h.app.table_data().unwrap().rows[*i].key == target)
        .unwrap();
    for _ in 0..index {
        h.key(KeyCode::Down);
    }
    h.key(KeyCode::Enter);
    assert_eq!(h.app.view(), ViewId::WorkflowDetail);
    assert_eq!(h.app.instance(), Some(target.as_str()));
    let Some(ViewData::Detail { instance, history }) = h.app.snapshot().map(|s| &s.data) else {
        panic!("detail data")
    };
    assert_eq!(instance.as_ref().unwrap().status, "completed");
    assert!(history.iter().any(|r| r.kind == "completed"));
    let text = screen(&h);
    assert!(text.contains("history:"), "{text}");
    assert!(text.contains("call#0"), "activation node: {text}");
    assert!(text.contains("step-succeeded"));
    let first = h.app.tree().selected.clone();
    h.key(KeyCode::Down);
    h.key(KeyCode::Down);
    assert_ne!(h.app.tree().selected, first);
    // Fold the activation.
    h.key(KeyCode::Left);
    h.key(KeyCode::Enter);
    assert!(!h.app.tree().closed.is_empty());
    assert!(!screen(&h).contains("step-succeeded"));
    h.key(KeyCode::Esc);
    assert_eq!(h.app.view(), ViewId::Workflows);
}

#[test]
fn cancel_through_the_dialog() {
    let f = fixture();
    let mut h = harness(&f, "dark", 80, 24);
    select_workflow(&mut h, &f.running);
    h.press('C');
    assert!(matches!(
        h.app.overlay(),
        Some(Overlay::Confirm(c)) if c.act == Act::Cancel && c.subject == f.running
    ));
    let text = screen(&h);
    assert!(text.contains("not rollback"), "{text}");
    h.press('n');
    assert!(h.app.overlay().is_none());
    assert_eq!(
        f.store.instance(&f.running).unwrap().unwrap().status,
        "running",
        "n keeps it running"
    );
    h.press('C');
    h.press('y');
    assert_eq!(
        f.store.instance(&f.running).unwrap().unwrap().status,
        "cancelled"
    );
    assert!(
        h.app.status().unwrap().text.ends_with(": cancelled"),
        "{:?}",
        h.app.status()
    );
    assert!(screen(&h).contains("cancelled"));
    // Again: nothing to cancel, and no dialog.
    h.press('C');
    assert!(h.app.overlay().is_none());
    assert_eq!(
        h.app.status().unwrap().text,
        "cancelled — nothing to cancel"
    );
    // A completed instance is not offered either.
    select_workflow(&mut h, &f.completed);
    h.press('C');
    assert!(h.app.overlay().is_none());
    assert_eq!(
        h.app.status().unwrap().text,
        "completed — nothing to cancel"
    );
    assert_eq!(h.app.status().unwrap().role, Role::Warning);
    // Only the act itself was audited, in the shared vocabulary.
    let audit = f
        .store
        .list_audit(&leasehold::model::PageRequest::first(50))
        .unwrap()
        .rows;
    let mine: Vec<_> = audit
        .iter()
        .filter(|a| a.actor == "tester@ci")
        .map(|a| (a.action.as_str(), a.outcome.as_str()))
        .collect();
    assert_eq!(mine, [("cancel-workflow", "cancelled")]);
}
