//! Real `leasehold authority` processes riding out SIGKILL, SIGSTOP, killed sessions, a
//! server restart and a held write lock, each item done once and a clean `leasehold check`.

use crate::support::leasehold;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use leasehold::Store;
use leasehold::store::url::{self, OpenMode};

use crate::support::authorities::{Authorities, claimed_by, enqueue, signal, unfinished};
use crate::support::postgres::{Database, Server, database};
use crate::support::wait::wait_until;

// --- real authority processes --------------------------------------------------------------

/// `leasehold check` over the store: exit 0 and no violation line.
pub(super) fn assert_check_clean(url: &str) {
    let o = leasehold(&["check", "--store", url, "--json"]);
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "leasehold check failed ({}): {stdout}{}",
        o.status,
        String::from_utf8_lossy(&o.stderr)
    );
    let summary = stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find_map(|v| v.get("summary").cloned())
        .expect("a summary line");
    assert_eq!(summary["violations"], 0, "{stdout}");
}

/// Every item terminal, and each completed by exactly one accepted terminal write.
fn assert_all_done_once(store: &Store, items: usize) {
    assert_eq!(unfinished(store), 0);
    let (_, writes) = store.ownership_history(None, 0, 10_000_000).unwrap();
    let mut terminal: BTreeMap<&str, usize> = BTreeMap::new();
    for w in writes.iter().filter(|w| w.accepted) {
        let state = serde_json::from_str::<serde_json::Value>(&w.detail).unwrap()["state"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        if state == "succeeded" || state == "failed" {
            *terminal.entry(w.resource_id.as_str()).or_default() += 1;
        }
    }
    assert_eq!(terminal.len(), items, "every item has a terminal write");
    for (id, n) in terminal {
        assert_eq!(n, 1, "{id} was finished {n} times");
    }
}

/// Four authorities against one database: one SIGKILLed mid-run, one SIGSTOPped until every
/// claim it held was taken over after its lease lapsed, then resumed. All work finishes, each
/// item once, and `leasehold check` is clean.
#[test]
fn four_authorities_ride_out_sigkill_and_sigstop() {
    ride_out_sigkill_and_sigstop("auto");
}

/// The same fleet stepping aside from the crowded lock (`--step-aside on`, an operator's
/// choice on PostgreSQL): the authorities that stand aside, and the stopped one among them,
/// change nothing of the above.
#[test]
fn four_authorities_stepping_aside_ride_out_sigkill_and_sigstop() {
    ride_out_sigkill_and_sigstop("on");
}

fn ride_out_sigkill_and_sigstop(step_aside: &str) {
    const ITEMS: usize = 1_500;
    let started = Instant::now();
    let deadline = started + Duration::from_secs(240);
    let db = database();
    let store = url::open(db.url(), OpenMode::ReadWrite).unwrap();
    enqueue(&store, ITEMS);
    let mut auth = Authorities::new();
    for i in 0..4 {
        let name = format!("auth-{i}");
        auth.spawn_with(&name, db.url(), 1_500, &["--step-aside", step_aside]);
    }

    wait_until("the first 300 completions", deadline, || {
        unfinished(&store) <= (ITEMS - 300) as u64
    });
    auth.kill("auth-0");

    // Whichever live authority holds claims is stopped: one stepping aside may hold none
    // for a while, and the others may finish the work meanwhile.
    let (victim, held) = loop {
        let mut holder = None;
        wait_until("a live authority to hold claims", deadline, || {
            holder = ["auth-1", "auth-2", "auth-3"]
                .into_iter()
                .find(|name| !claimed_by(&store, name).is_empty());
            holder.is_some()
        });
        let victim = holder.expect("found above");
        signal("-STOP", auth.pid(victim));
        let held = claimed_by(&store, victim);
        if !held.is_empty() {
            break (victim, held);
        }
        signal("-CONT", auth.pid(victim));
    };
    // A session paused inside a transaction is ended by the server after a few seconds, so
    // the others always get past it.
    wait_until(
        "the stopped authority's claims to be taken over",
        deadline,
        || {
            held.iter().all(|(id, g)| {
                store
                    .work(id)
                    .unwrap()
                    .is_some_and(|w| w.generation > *g || w.state.is_terminal())
            })
        },
    );
    signal("-CONT", auth.pid(victim));

    wait_until("every item to finish", deadline, || unfinished(&store) == 0);
    auth.stop_all(deadline);
    assert_all_done_once(&store, ITEMS);
    assert_check_clean(db.url());
    let (events, _) = auth.events();
    eprintln!(
        "four authorities (step aside {step_aside}): {ITEMS} items in {:?}; {victim} stopped holding {}; events {events:?}",
        started.elapsed(),
        held.len()
    );
}

/// Two authorities while an operator keeps ending their sessions (`pg_terminate_backend`,
/// often inside a transaction): they reconnect and finish everything, each item once.
#[test]
fn authorities_reconnect_after_their_sessions_are_killed() {
    const ITEMS: usize = 600;
    let deadline = Instant::now() + Duration::from_secs(180);
    let db = database();
    let store = url::open(db.url(), OpenMode::ReadWrite).unwrap();
    enqueue(&store, ITEMS);
    let mut auth = Authorities::new();
    for i in 0..2 {
        auth.spawn(&format!("auth-{i}"), db.url());
    }
    wait_until("the first completions", deadline, || {
        unfinished(&store) < ITEMS as u64
    });
    let mut killed = 0;
    while unfinished(&store) > (ITEMS / 4) as u64 {
        assert!(
            Instant::now() < deadline,
            "timed out while killing sessions"
        );
        killed += db.terminate_sessions();
        std::thread::sleep(Duration::from_millis(150));
    }
    assert!(killed >= 10, "only {killed} sessions were killed");
    wait_until("every item to finish", deadline, || unfinished(&store) == 0);
    auth.stop_all(deadline);
    assert_all_done_once(&store, ITEMS);
    assert_check_clean(db.url());
    let (events, errors) = auth.events();
    eprintln!("killed sessions: {killed} sessions ended; events {events:?}; errors {errors:?}");
}

/// The server restarts under two running authorities: they reconnect and finish everything,
/// each item once.
#[test]
fn authorities_ride_out_a_server_restart() {
    const ITEMS: usize = 600;
    let deadline = Instant::now() + Duration::from_secs(180);
    let server = Server::dedicated();
    let db: Database = server.database();
    let store = url::open(db.url(), OpenMode::ReadWrite).unwrap();
    enqueue(&store, ITEMS);
    let mut auth = Authorities::new();
    for i in 0..2 {
        auth.spawn(&format!("auth-{i}"), db.url());
    }
    wait_until("a third of the items", deadline, || {
        unfinished(&store) <= (ITEMS * 2 / 3) as u64
    });
    server.restart();
    wait_until("every item to finish", deadline, || {
        // The test's own handle reconnects too (a failed read is retried here).
        store.overview().is_ok_and(|_| unfinished(&store) == 0)
    });
    auth.stop_all(deadline);
    assert_all_done_once(&store, ITEMS);
    assert_check_clean(db.url());
    let (events, errors) = auth.events();
    eprintln!("server restart: events {events:?}; errors {errors:?}");
    drop(store);
    drop(db);
    drop(server);
}

/// A session holding the store's write lock inside an open transaction (a writer paused
/// mid-transaction) stalls every authority: the waiting authority logs the stall within a
/// few seconds naming the holder's session, says when it got through, and then drains.
#[test]
fn a_held_write_lock_is_logged_as_a_stall_naming_its_holder() {
    const ITEMS: usize = 100;
    let deadline = Instant::now() + Duration::from_secs(120);
    let db = database();
    let store = url::open(db.url(), OpenMode::ReadWrite).unwrap();
    enqueue(&store, ITEMS);
    let mut auth = Authorities::new();
    auth.spawn("auth-0", db.url());
    wait_until("the first completions", deadline, || {
        unfinished(&store) < ITEMS as u64
    });

    let mut holder = postgres::Client::connect(db.url(), postgres::NoTls).unwrap();
    holder
        .batch_execute("SET application_name = 'paused-writer'; BEGIN")
        .unwrap();
    let pid: i32 = holder
        .query_one(
            "SELECT pg_backend_pid() FROM (SELECT pg_advisory_xact_lock(7810756276994469740)) AS l",
            &[],
        )
        .unwrap()
        .get(0);
    let stalls = |message: &str| auth.lines_of("auth-0", message);
    wait_until("auth-0 logs the stall", deadline, || {
        !stalls("store-write-stalled").is_empty()
    });
    let stalled = &stalls("store-write-stalled")[0];
    let named = stalled["holder"].as_str().unwrap_or("");
    assert!(
        named.contains(&format!("pid {pid} (paused-writer)")),
        "{stalled}"
    );
    assert!(
        stalled["waited_ms"].as_u64().is_some_and(|ms| ms >= 3_000),
        "{stalled}"
    );
    holder.batch_execute("ROLLBACK").unwrap();
    wait_until("auth-0 says it got through", deadline, || {
        !stalls("store-write-resumed").is_empty()
    });
    wait_until("every item to finish", deadline, || unfinished(&store) == 0);
    auth.stop_all(deadline);
    assert_all_done_once(&store, ITEMS);
}
