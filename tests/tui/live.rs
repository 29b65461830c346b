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

/// With the whole fleet stopped, every unfinished item is stranded: the overview counts
/// them as `inspect triage` does ("no authority is running"), the work view's `x` lists
/// them, and no stopped authority is marked as another build than a fleet that is not
/// running.
#[test]
fn a_stopped_fleet_strands_every_unfinished_item() {
    use leasehold::clock::Clock;
    use leasehold::ops::attention::{Reason, groups};
    use leasehold::ops::live_builds::LiveBuilds;

    let f = fixture();
    let now = f.clock.now();
    for id in ["auth-a", "auth-b"] {
        let mut row = f.store.registrations().unwrap();
        row.retain(|a| a.instance_id == id);
        let mut row = row.remove(0);
        row.stopped_at = Some(now);
        f.store.register_authority(&row).unwrap();
    }
    let fleet = LiveBuilds::load(&f.store, now).unwrap();
    assert!(!fleet.any_running());
    let stranded = groups(&f.store, fleet.fleet(), now)
        .unwrap()
        .into_iter()
        .find(|g| g.reason == Reason::NoAuthority)
        .expect("the triage group");
    assert!(stranded.count > 0 && stranded.exact);

    let mut h = harness(&f, "dark", 160, 48);
    h.refresh();
    let text = screen(&h);
    assert!(
        text.contains(&format!(
            "stranded {} (no authority is running)",
            stranded.count
        )),
        "{text}"
    );
    assert!(!text.contains(" incompatible"), "{text}");
    h.press('4');
    h.press('x');
    h.refresh();
    let rows = h.app.table_data().unwrap().rows.len() as u64;
    assert!(rows > 0 && rows <= stranded.count, "{}", screen(&h));
    assert!(
        screen(&h).contains(&format!("{} stranded", stranded.count)),
        "{}",
        screen(&h)
    );
}
