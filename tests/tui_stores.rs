//! Several stores in one dashboard: two memory stores with different work and leases,
//! switched with `:ctx NAME`. Each view shows its own store's rows after a switch, the
//! header names the store on screen and says of the other whether it is live or stale,
//! a store that stops answering keeps its last rows, and an operator action changes only
//! the store on screen.

#![allow(clippy::unwrap_used)]

#[path = "support/mod.rs"]
mod support;

use crossterm::event::KeyCode;
use leasehold::model::WorkState;
use leasehold::store::memory::MemoryBackend;
use leasehold::store::{Keyed, Store};
use leasehold::tui::action::ViewId;
use leasehold::tui::app::AppOptions;
use leasehold::tui::harness::{Harness, buffer_text, render_app};
use leasehold::tui::theme::Theme;

/// 2026-01-01T00:00:00Z.
const T0: i64 = 1_767_225_600_000;

struct Side {
    store: Store,
    backend: MemoryBackend,
}

/// A store with `n` effects named `PREFIX-NNN`, a lease `leader/PREFIX` and one dead
/// letter, `dead-1`, which both stores hold.
fn side(prefix: &str, n: usize) -> Side {
    let (store, clock, backend) = support::memory_store_at(T0, 7);
    support::effects(&store, prefix, n);
    store
        .acquire(
            &format!("leader/{prefix}"),
            "auth-a",
            30_000.0,
            Keyed { key: None },
        )
        .unwrap();
    support::dead_letters(&store, &clock, &["dead-1"]);
    Side { store, backend }
}

fn harness(orders: &Side, billing: &Side, w: u16, h: u16) -> Harness {
    Harness::attached(
        ("orders".into(), orders.store.clone()),
        vec![("billing".into(), billing.store.clone())],
        AppOptions {
            actor: "tester@ci".into(),
            ..AppOptions::default()
        },
        Theme::builtin("dark").unwrap(),
        None,
        (w, h),
    )
}

fn keys(h: &Harness) -> Vec<String> {
    h.app
        .table_data()
        .map(|d| d.rows.iter().map(|r| r.key.clone()).collect())
        .unwrap_or_default()
}

#[test]
fn each_view_shows_its_own_stores_rows_after_a_switch() {
    let (orders, billing) = (side("order", 3), side("invoice", 5));
    let mut h = harness(&orders, &billing, 160, 48);
    let header = |h: &Harness| buffer_text(&h.render()).lines().next().unwrap().to_owned();
    assert!(header(&h).contains(" orders "), "{}", header(&h));
    assert!(header(&h).contains("billing live"), "{}", header(&h));

    h.press('4');
    let mine = keys(&h);
    assert!(mine.contains(&"order-000".to_owned()), "{mine:?}");
    assert!(!mine.iter().any(|k| k.starts_with("invoice")), "{mine:?}");

    // Tab completes the store's name.
    h.press(':');
    h.type_text("ctx b");
    h.key(KeyCode::Tab);
    assert_eq!(h.app.prompt().unwrap().text, "ctx billing");
    h.key(KeyCode::Enter);
    assert_eq!(h.app.store_index(), 1);
    assert_eq!(h.app.view(), ViewId::Work, "the view stays");
    let theirs = keys(&h);
    assert_eq!(
        theirs.iter().filter(|k| k.starts_with("invoice")).count(),
        5,
        "{theirs:?}"
    );
    assert!(!theirs.iter().any(|k| k.starts_with("order")), "{theirs:?}");
    assert!(header(&h).contains(" billing "), "{}", header(&h));
    assert!(header(&h).contains("orders live"), "{}", header(&h));
    insta::assert_snapshot!("two_stores_work_160x48_dark", buffer_text(&h.render()));
    insta::assert_snapshot!(
        "two_stores_work_80x24_dark",
        buffer_text(&render_app(&h.app, 80, 24))
    );

    h.press('3');
    let leases = keys(&h);
    assert_eq!(leases, ["leader/invoice"], "billing's leases");
    h.command("ctx orders");
    assert_eq!(keys(&h), ["leader/order"], "orders' leases");
    h.press('4');
    assert_eq!(keys(&h), mine, "orders' work page, as it was");

    // `:ctx` alone lists the stores; an unknown name is refused.
    h.command("ctx");
    assert_eq!(
        h.app.status().unwrap().text,
        "stores: orders (on screen), billing live"
    );
    h.command("ctx payroll");
    assert!(
        h.app
            .status()
            .unwrap()
            .text
            .contains("no store named payroll")
    );
    assert_eq!(h.app.store_index(), 0);
}

/// A store that stops answering: while another is on screen the header calls it stale
/// by the age of its last good read; switched to, it shows the rows it last read (never
/// an empty table) under the store-error banner.
#[test]
fn a_store_whose_reads_fail_is_stale_with_its_old_rows() {
    let (orders, billing) = (side("order", 3), side("invoice", 5));
    let mut h = harness(&orders, &billing, 160, 48);
    h.press('4');
    h.command("ctx billing");
    let before = keys(&h);
    h.command("ctx orders");

    billing.backend.set_outage(true);
    h.advance(1_000);
    h.refresh_store(1);
    h.advance(6_000);
    h.refresh();
    let text = buffer_text(&h.render());
    let header = text.lines().next().unwrap();
    assert!(header.contains("billing stale 7s"), "{header}");
    assert!(!header.contains("orders stale"), "{header}");

    h.command("ctx billing");
    assert_eq!(keys(&h), before, "the last rows stay");
    let text = buffer_text(&h.render());
    assert!(text.contains("STORE ERROR"), "{text}");
    assert!(text.lines().next().unwrap().contains("stale 7s"), "{text}");
    assert!(text.contains("invoice-000"), "{text}");

    billing.backend.set_outage(false);
    h.refresh();
    let text = buffer_text(&h.render());
    assert!(
        !text.contains("STORE ERROR") && !text.contains("stale"),
        "{text}"
    );
}

/// A requeue goes to the store on screen only, though both hold an item by that id.
#[test]
fn actions_go_to_the_store_on_screen() {
    let (orders, billing) = (side("order", 1), side("invoice", 1));
    let mut h = harness(&orders, &billing, 80, 24);
    h.command("ctx billing");
    h.press('4');
    h.press('/');
    h.type_text("id:dead-1");
    h.key(KeyCode::Enter);
    h.press('U');
    h.press('y');
    assert_eq!(h.app.status().unwrap().text, "dead-1: requeued");
    let state = |s: &Store| s.work("dead-1").unwrap().unwrap().state;
    assert_eq!(state(&billing.store), WorkState::Pending);
    assert_eq!(
        state(&orders.store),
        WorkState::Failed,
        "the other store is untouched"
    );
}
