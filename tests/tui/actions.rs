//! Operator actions: hidden and refused when read-only, and run through a write handle opened
//! only when they run.

use std::sync::Arc;

use leasehold::tui::action::Action;
use leasehold::tui::app::AppOptions;
use leasehold::tui::harness::Harness;
use leasehold::tui::theme::Theme;
use leasehold::workflow::Catalog;
use serde_json::json;

use super::{args, fixture, options, screen, select_workflow};

#[test]
fn read_only_hides_and_refuses_actions() {
    let f = fixture();
    let mut h = Harness::new(
        f.store.clone(),
        AppOptions {
            read_only: true,
            ..options()
        },
        Theme::builtin("dark").unwrap(),
        None,
        80,
        24,
    );
    select_workflow(&mut h, &f.running);
    h.press('C');
    assert!(h.app.overlay().is_none());
    assert!(h.app.status().unwrap().text.contains("read-only"));
    assert_eq!(
        f.store.instance(&f.running).unwrap().unwrap().status,
        "running"
    );
    let help: Vec<String> = leasehold::tui::views::help::entries(&h.app)
        .into_iter()
        .map(|e| e.2)
        .collect();
    assert!(
        !help
            .iter()
            .any(|l| l.contains("cancel the selected workflow") || l.contains("requeue"))
    );
    assert!(screen(&h).contains("read-only"));
    // Nor is a work item requeued.
    h.press('4');
    h.press('U');
    assert!(h.app.overlay().is_none());
    assert!(h.app.status().unwrap().text.contains("read-only"));
}

/// `attach` reads through a read-only handle; an action opens a write handle at that moment
/// (never creating a store), and a handle that cannot be opened is the action's refusal.
#[test]
fn actions_open_a_write_handle_only_when_they_run() {
    use leasehold::store::url::{OpenMode, open as open_store};
    use leasehold::tui::action::Done;
    use leasehold::tui::app::Command;
    use leasehold::tui::writer::{OpenWriter, execute_with};

    let dir = tempfile::tempdir().unwrap();
    let url = dir.path().join("store.db").display().to_string();
    let instance = {
        let store = open_store(&url, OpenMode::ReadWrite).unwrap();
        let reminder = leasehold::workflow::SHIPPED_DEFINITIONS
            .iter()
            .find(|(name, _)| name.contains("reminder"))
            .map(|(_, text)| *text)
            .unwrap();
        store
            .deploy_workflow(reminder, &Catalog::demo())
            .unwrap()
            .unwrap();
        let inputs = args(&[("recipient", json!("ops")), ("message", json!("hi"))]);
        let versions = crate::support::actions_at_demo(&store, "reminder");
        store
            .start_workflow("reminder", inputs, "alice", None, versions)
            .unwrap()
            .instance_id
    };
    let reader = open_store(&url, OpenMode::ReadOnly).unwrap();
    let cancel = Command::Cancel {
        instance: instance.clone(),
        reason: "test".into(),
    };
    let outcome = |writer: Option<&OpenWriter>| match execute_with(
        &reader,
        writer,
        None,
        "tester@ci",
        &cancel,
    ) {
        Some(Action::Done(Done::Acted {
            message, refused, ..
        })) => (message, refused),
        other => panic!("{other:?}"),
    };

    let (message, refused) = outcome(None);
    assert!(refused && message.contains("STORE_READ_ONLY"), "{message}");

    let missing = dir.path().join("typo.db");
    let gone = missing.display().to_string();
    let broken: OpenWriter = Arc::new(move || open_store(&gone, OpenMode::Existing));
    let (message, refused) = outcome(Some(&broken));
    assert!(refused, "{message}");
    assert!(
        message.starts_with("cannot open the store for writing: "),
        "{message}"
    );
    assert!(!missing.exists(), "the write handle never creates a store");

    let target = url.clone();
    let writer: OpenWriter = Arc::new(move || open_store(&target, OpenMode::Existing));
    let (message, refused) = outcome(Some(&writer));
    assert!(!refused, "{message}");
    assert_eq!(
        reader.instance(&instance).unwrap().unwrap().status,
        "cancelled",
        "the reader sees the write handle's commit"
    );
}
