//! What is drawn whatever the data and the terminal: stats, help and themes, hostile text
//! escaped and truncated, no panic at tiny sizes, and screenshots of every main view.

use crossterm::event::KeyCode;
use leasehold::clock::Clock;
use leasehold::model::work::NewWork;
use leasehold::tui::action::{Action, ViewId};
use leasehold::tui::harness::{Harness, render_app};
use leasehold::tui::theme::{BUILTIN, Role, Theme, ThemeSet};

use super::{ALL_VIEWS, beat, fixture, harness, open, screen, select_workflow};

#[test]
fn stats_and_help_and_themes_cycle() {
    let f = fixture();
    let mut h = harness(&f, "dark", 120, 40);
    h.press('i');
    assert!(screen(&h).contains("queries"));
    h.press('?');
    let text = screen(&h);
    assert!(text.contains("keys (↑↓ scroll"), "{text}");
    assert!(text.contains("next page (read from the store)"));
    h.key(KeyCode::PageDown);
    h.key(KeyCode::PageDown);
    assert!(
        screen(&h).contains("pause / resume live refresh"),
        "scrolled"
    );
    h.key(KeyCode::Esc);
    assert!(h.app.overlay().is_none());
    let before = h.app.theme().name.clone();
    h.dispatch(Action::CycleTheme);
    assert_ne!(h.app.theme().name, before);
}

#[test]
fn hostile_text_is_escaped_and_truncated() {
    let f = fixture();
    let mut h = harness(&f, "dark", 160, 48);
    h.press('4');
    h.key(KeyCode::End);
    h.press('/');
    h.type_text("evil");
    h.key(KeyCode::Enter);
    let text = screen(&h);
    assert!(!text.contains('\u{1b}') && !text.contains('\u{7}') && !text.contains('\u{202e}'));
    assert!(text.contains("evil\\u{1b}[31mred\\n"), "{text}");
    assert!(text.contains("E\\u{7}BELL: boom\\r\\n"));
    h.key(KeyCode::Enter);
    let text = screen(&h);
    assert!(text.contains('…'), "huge fields are cut: {text}");
    assert!(!text.contains('\r'));
}

#[test]
fn themes_load_and_refuse_unknown() {
    for (name, _) in BUILTIN {
        let theme = Theme::builtin(name).unwrap();
        assert_eq!(theme.name, name);
        let mono = theme.monochrome();
        for role in Role::ALL {
            let s = mono.style(*role);
            assert!(s.fg.is_none() && s.bg.is_none(), "NO_COLOR strips colours");
        }
    }
    assert!(Theme::builtin("neon").is_err());
    assert!(
        ThemeSet::new(None)
            .load("neon")
            .unwrap_err()
            .to_string()
            .contains("unknown theme")
    );
    let extra = format!("{}\nsurprise = 1\n", BUILTIN[0].1);
    assert!(
        Theme::parse(&extra, "test").is_err(),
        "unknown keys are refused"
    );
    let bad = BUILTIN[0].1.replace("#cdd6f4", "not-a-colour");
    assert!(Theme::parse(&bad, "test").is_err());
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("mine.toml"),
        BUILTIN[1].1.replace("name = \"light\"", "name = \"mine\""),
    )
    .unwrap();
    let set = ThemeSet::new(Some(dir.path().to_path_buf()));
    assert!(set.names().contains(&"mine".to_owned()));
    assert_eq!(set.load("mine").unwrap().name, "mine");
    assert_eq!(set.next_name("high-contrast"), "mine");
}

#[test]
fn no_panic_on_tiny_sizes() {
    let f = fixture();
    let mut h = harness(&f, "dark", 80, 24);
    for view in ALL_VIEWS {
        open(&mut h, view, &f);
        for overlay in [None, Some('?'), Some('\n')] {
            match overlay {
                Some('?') => h.press('?'),
                Some(_) => h.key(KeyCode::Enter),
                None => {}
            }
            for w in 0..=30 {
                for hgt in 0..=12 {
                    h.dispatch(Action::Resize {
                        width: w,
                        height: hgt,
                    });
                    let _ = render_app(&h.app, w, hgt);
                }
            }
            h.key(KeyCode::Esc);
            h.dispatch(Action::Resize {
                width: 80,
                height: 24,
            });
            if h.app.view() != view {
                open(&mut h, view, &f);
            }
        }
    }
    let mut h = harness(&f, "dark", 80, 24);
    select_workflow(&mut h, &f.running);
    h.press('C');
    for w in 0..=30 {
        for hgt in 0..=12 {
            let _ = render_app(&h.app, w, hgt);
        }
    }
    let _ = f.clock.now();
}

#[test]
fn screenshots() {
    let f = fixture();
    let write = std::env::var("LEASEHOLD_SCREENSHOTS").is_ok_and(|v| v == "1");
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("screenshots");
    // Some activity first, so the overview's sparklines have a story to tell.
    let mut live = harness(&f, "dark", 120, 32);
    for round in 0..40 {
        let n = [3, 5, 8, 6, 2, 9, 12, 7, 4, 1][round % 10];
        let more: Vec<NewWork> = (0..n)
            .map(|i| NewWork::effect(format!("load-{round:02}-{i:02}"), "send-email", "{}"))
            .collect();
        f.store
            .enqueue_batch(more, crate::support::send_email_key())
            .unwrap();
        let claimed = f
            .store
            .claim_batch(
                &format!("auth-{}", if round % 2 == 0 { "a" } else { "b" }),
                crate::support::send_email_key(),
                n,
                30_000,
            )
            .unwrap();
        for item in claimed.iter().skip(1) {
            let owner = item.owner_id.clone().unwrap();
            f.store
                .complete(&item.id, &owner, item.generation, None)
                .unwrap();
        }
        if round % 7 == 3 {
            let _ = f.store.complete("effect-020", "auth-b", 1, None);
        }
        f.clock.advance(250);
        beat(&f.store, "auth-a");
        beat(&f.store, "auth-b");
        live.advance(250);
        live.refresh();
    }
    let mut live = Some(live);
    for view in ALL_VIEWS {
        let mut h = match (view, live.take()) {
            (ViewId::Overview, Some(h)) => h,
            (_, back) => {
                live = back;
                harness(&f, "dark", 120, 32)
            }
        };
        if view == ViewId::WorkflowDetail {
            h.press(':');
            h.type_text(&format!("workflow {}", f.retrying));
            h.key(KeyCode::Enter);
        } else {
            open(&mut h, view, &f);
        }
        if view == ViewId::Work {
            h.key(KeyCode::Down);
            h.key(KeyCode::Down);
        }
        let svg = leasehold::tui::screenshot::to_svg(&h.render(), h.app.theme());
        assert!(svg.starts_with("<svg") && svg.contains("leasehold"));
        if write {
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(dir.join(format!("{}.svg", view.name())), svg).unwrap();
        }
    }
    if write {
        let shot = |path: std::path::PathBuf, h: &Harness| {
            let svg = leasehold::tui::screenshot::to_svg(&h.render(), h.app.theme());
            std::fs::write(path, svg).unwrap();
        };
        let mut h = harness(&f, "light", 120, 32);
        open(&mut h, ViewId::Overview, &f);
        shot(dir.join("overview-light.svg"), &h);
        let mut h = harness(&f, "dark", 120, 32);
        select_workflow(&mut h, &f.running);
        h.press('C');
        h.key(KeyCode::Tab);
        h.type_text("duplicate of order 4411");
        h.key(KeyCode::Tab);
        shot(dir.join("cancel-dialog.svg"), &h);
        let mut h = harness(&f, "dark", 120, 32);
        select_workflow(&mut h, &f.retrying);
        h.press('d');
        shot(dir.join("describe.svg"), &h);
        // The replay on the fixture's failover, its resource at that revision.
        let mut h = harness(&f, "dark", 120, 32);
        h.press('H');
        h.press('}');
        h.key(KeyCode::Enter);
        shot(dir.join("replay.svg"), &h);
        // The views reached by command only.
        for name in ["triage", "builds", "horizon"] {
            let mut h = harness(&f, "dark", 120, 32);
            h.command(name);
            shot(dir.join(format!("{name}.svg")), &h);
        }
    }
}
