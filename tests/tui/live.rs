//! Live refresh: changed rows flash, a pause holds the frame, and store errors show a banner
//! over the last frame.

use leasehold::model::WorkState;

use super::{fixture, harness, screen};

#[test]
fn live_refresh_flashes_changed_rows_and_pauses() {
    let f = fixture();
    let mut h = harness(&f, "dark", 160, 48);
    h.press('4');
    let item = f.store.work("effect-004").unwrap().unwrap();
    assert_eq!(item.state, WorkState::Claimed);
    f.store
        .complete("effect-004", "auth-a", item.generation, None)
        .unwrap();
    h.refresh();
    assert!(h.app.is_flashing("effect-004"));
    assert!(
        !h.app.is_flashing("effect-005"),
        "unchanged rows do not flash"
    );
    h.advance(2_000);
    assert!(!h.app.is_flashing("effect-004"), "the flash fades");
    assert!(screen(&h).contains("● LIVE"));
    h.press(' ');
    assert!(h.app.paused());
    assert!(h.app.query().paused);
    assert!(screen(&h).contains("PAUSED"));
}

#[test]
fn store_errors_show_a_banner_and_keep_the_last_frame() {
    let f = fixture();
    let mut h = harness(&f, "dark", 80, 24);
    h.press('4');
    let before = h.app.table_data().unwrap().rows.len();
    f.backend.set_outage(true);
    h.refresh();
    let text = screen(&h);
    assert!(text.contains("STORE ERROR"), "{text}");
    assert_eq!(
        h.app.table_data().unwrap().rows.len(),
        before,
        "the last good frame stays"
    );
    f.backend.set_outage(false);
    h.refresh();
    assert!(!screen(&h).contains("STORE ERROR"));
    // Silence from the reader shows as stale.
    h.advance(5_000);
    assert!(screen(&h).contains("stale 5s"));
}
