//! A write kept waiting on the SQLite write lock is visible while it waits: a second
//! connection holds the lock past the stall threshold, the authority's heartbeat queues
//! behind it, and the store lists the stall (this process, since when), `inspect overview`
//! and `inspect authorities` name the waiting authority from another process; once the
//! lock is let go the heartbeat goes through and the stall is gone.

use std::sync::Arc;
use std::time::Duration;

use leasehold::authority::workload;
use leasehold::authority::{AuthorityCore, Pace};
use leasehold::clock::{Clock, SystemClock};
use leasehold::store::stall::STALL_AFTER;
use leasehold::store::url::OpenMode;

use crate::support::runtime::{config, sqlite_store};
use crate::support::wait::{wait_until, within};
use crate::support::{inspect, leasehold};

#[test]
fn a_write_waiting_on_the_sqlite_lock_is_shown_while_it_waits_then_cleared() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (s, path) = sqlite_store(&dir);
    let core = Arc::new(
        AuthorityCore::new(
            s,
            config("solo"),
            workload::named("fast", 1).expect("fast"),
            Pace::Virtual,
        )
        .expect("valid"),
    );
    core.register().expect("registers");
    let reader = leasehold::store::url::open(&path, OpenMode::ReadOnly).expect("opens");
    assert!(reader.write_stalls().expect("lists").is_empty());

    let holder = rusqlite::Connection::open(&path).expect("a second connection");
    holder
        .execute_batch("BEGIN IMMEDIATE")
        .expect("takes the write lock");
    let locked_at = SystemClock.now();
    let beating = {
        let core = core.clone();
        std::thread::spawn(move || core.heartbeat())
    };

    wait_until(
        "the stall to be posted",
        within(Duration::from_secs(60)),
        || !reader.write_stalls().expect("lists").is_empty(),
    );
    let stalls = reader.write_stalls().expect("lists");
    assert_eq!(stalls.len(), 1, "{stalls:?}");
    assert_eq!(stalls[0].pid, std::process::id());
    assert!(stalls[0].since >= locked_at - 1_000, "{stalls:?}");
    let threshold = i64::try_from(STALL_AFTER.as_millis()).expect("small");
    assert!(
        SystemClock.now() - stalls[0].since >= threshold,
        "posted before it was a stall: {stalls:?}"
    );
    assert!(!beating.is_finished(), "the heartbeat still waits");

    let overview = inspect("overview", &path).remove(0);
    let shown = overview["stalls"].as_array().expect("stalls").clone();
    assert_eq!(shown.len(), 1, "{overview}");
    assert_eq!(shown[0]["who"], "solo");
    assert_eq!(shown[0]["since"].as_i64(), Some(stalls[0].since));
    let text = leasehold(&["inspect", "overview", "--store", &path]);
    assert!(
        String::from_utf8_lossy(&text.stdout).contains("stalled: solo waits"),
        "{}",
        String::from_utf8_lossy(&text.stdout)
    );
    let solo = inspect("authorities", &path)
        .into_iter()
        .find(|a| a["instanceId"] == "solo")
        .expect("listed");
    assert_eq!(
        solo["stall"]["pid"].as_u64(),
        Some(u64::from(std::process::id()))
    );

    holder.execute_batch("ROLLBACK").expect("lets go");
    beating
        .join()
        .expect("the heartbeat thread")
        .expect("the heartbeat went through");
    assert!(reader.write_stalls().expect("lists").is_empty(), "cleared");
    assert_eq!(
        inspect("overview", &path)[0]["stalls"],
        serde_json::json!([])
    );
}
