//! Enqueue inside the application's own transaction (docs/INTAKE.md): the effect exists
//! exactly when the application's transaction commits, whether it wrote the request through
//! the library (`store::postgres::intake::enqueue_in`) or plain SQL, and an open
//! application transaction holds no claimer up.

use std::time::{Duration, Instant};

use leasehold::Store;
use leasehold::clock::ManualClock;
use leasehold::model::work::NewWork;
use leasehold::model::{HandlerVersion, IntakeCounts, WorkState};
use leasehold::store::postgres::intake::enqueue_in;
use leasehold::store::url::OpenMode;

use super::support::authorities::{Authorities, HANDLER, compat};
use super::support::open_postgres;
use super::support::postgres::database;
use super::support::wait::wait_until;
use super::support::{START, demo};

/// The application's own connection to the store's database.
fn app(url: &str) -> postgres::Client {
    let mut client = postgres::Client::connect(url, postgres::NoTls).unwrap();
    client
        .batch_execute("CREATE TABLE IF NOT EXISTS orders (id TEXT PRIMARY KEY, total BIGINT)")
        .unwrap();
    client
}

/// An order and its `charge` effect, in one application transaction left open.
fn order(client: &mut postgres::Client, n: u32) -> postgres::Transaction<'_> {
    let mut tx = client.transaction().unwrap();
    tx.execute(
        "INSERT INTO orders (id, total) VALUES ($1, 100)",
        &[&format!("order-{n}")],
    )
    .unwrap();
    let charge = NewWork::effect(format!("charge-{n}"), HANDLER, format!("{{\"order\":{n}}}"));
    enqueue_in(&mut tx, &charge, &demo()).unwrap();
    tx
}

fn store(url: &str, clock: &ManualClock) -> Store {
    open_postgres(url, clock, OpenMode::ReadWrite).unwrap()
}

fn intake(store: &Store) -> IntakeCounts {
    store.overview().unwrap().intake
}

/// Committed with its order, the effect is moved by the next claim and runs on an
/// authority; `check` counts nothing waiting and finds nothing wrong.
#[test]
fn a_committed_request_becomes_an_item_that_runs() {
    let db = database();
    let url = db.url();
    let clock = ManualClock::new(START);
    let s = store(url, &clock);
    let mut client = app(url);
    order(&mut client, 1).commit().unwrap();
    assert_eq!(
        s.work("charge-1").unwrap(),
        None,
        "not moved before a claim"
    );
    assert_eq!(intake(&s).waiting, 1);
    let report = leasehold::check::check(&s, &leasehold::check::CheckOptions::at(START)).unwrap();
    assert!(report.is_clean(), "{report:?}");
    assert_eq!(report.intake.waiting, 1);

    let mut auth = Authorities::new();
    auth.spawn("auth-0", url);
    wait_until(
        "the effect ran",
        Instant::now() + Duration::from_secs(60),
        || {
            s.work("charge-1")
                .unwrap()
                .is_some_and(|w| w.state.is_terminal())
        },
    );
    auth.stop_all(Instant::now() + Duration::from_secs(60));
    let item = s.work("charge-1").unwrap().unwrap();
    assert_eq!(
        (item.compat.as_str(), item.payload.as_str()),
        (compat().as_str(), "{\"order\":1}")
    );
    assert_eq!(intake(&s), IntakeCounts::default());
    super::authorities::assert_check_clean(url);
}

/// Rolled back with its order, or cut off by a lost connection or a killed session before
/// it committed, the effect never exists; an open application transaction holds no claim up.
#[test]
fn an_uncommitted_request_never_becomes_an_item() {
    let db = database();
    let url = db.url();
    let clock = ManualClock::new(START);
    let s = store(url, &clock);
    let claim = || s.claim_batch("a", compat(), 10, 30_000).unwrap();

    let mut client = app(url);
    order(&mut client, 1).rollback().unwrap();

    // Open while a claim runs: the claim neither waits for it nor sees it.
    let mut open = app(url);
    let pending = order(&mut open, 2);
    let started = Instant::now();
    assert!(claim().is_empty());
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "the claim waited"
    );
    drop(pending);
    drop(open);

    // The application's process dies mid-transaction: its connection goes away.
    let mut dying = app(url);
    std::mem::forget(order(&mut dying, 3));
    drop(dying);

    // The server ends the application's session mid-transaction.
    let mut killed = app(url);
    let tx = order(&mut killed, 4);
    assert!(db.terminate_sessions() >= 1);
    assert!(tx.commit().is_err(), "the session is gone");

    let deadline = Instant::now() + Duration::from_secs(10);
    wait_until("the aborted sessions to end", deadline, || {
        intake(&s) == IntakeCounts::default()
    });
    assert!(claim().is_empty());
    for n in 1..=4 {
        assert_eq!(s.work(&format!("charge-{n}")).unwrap(), None);
    }
    let orders: i64 = app(url)
        .query_one("SELECT count(*) FROM orders", &[])
        .unwrap()
        .get(0);
    assert_eq!(orders, 0, "the orders went with their effects");
}

/// One idempotency key in two committed transactions is one item; another effect under a
/// held key is refused, kept with the reason and counted, and `check` stays clean.
#[test]
fn a_key_committed_twice_is_one_item_and_a_conflict_is_kept_refused() {
    let db = database();
    let url = db.url();
    let clock = ManualClock::new(START);
    let s = store(url, &clock);
    let mut client = app(url);
    let keyed = |id: &str, payload: &str| NewWork {
        idempotency_key: Some("order-7".into()),
        ..NewWork::effect(id, HANDLER, payload)
    };
    for (id, payload) in [
        ("a", "{\"n\":1}"),
        ("b", "{ \"n\": 1 }"),
        ("c", "{\"n\":2}"),
    ] {
        let mut tx = client.transaction().unwrap();
        enqueue_in(&mut tx, &keyed(id, payload), &demo()).unwrap();
        tx.commit().unwrap();
    }
    assert_eq!(intake(&s).waiting, 3);
    let claimed = s.claim_batch("w", compat(), 10, 30_000).unwrap();
    assert_eq!(claimed.len(), 1);
    assert_eq!(claimed[0].id, "a");
    assert_eq!(s.work("b").unwrap(), None);
    assert_eq!(s.work("c").unwrap(), None);
    assert_eq!(
        intake(&s),
        IntakeCounts {
            waiting: 0,
            refused: 1
        }
    );
    let reason: String = client
        .query_one("SELECT reason FROM intake_refused WHERE id = 'c'", &[])
        .unwrap()
        .get(0);
    assert!(reason.contains("payload"), "{reason}");
    let report = leasehold::check::check(&s, &leasehold::check::CheckOptions::at(START)).unwrap();
    assert!(report.is_clean(), "{report:?}");
    assert_eq!(report.intake.refused, 1);
}

/// An application without the library: `leasehold_enqueue` and a plain `INSERT` from SQL,
/// by handler version or by key; a request the move finds invalid is refused, not lost.
#[test]
fn plain_sql_enqueues_through_the_entry_point_and_the_table() {
    let db = database();
    let url = db.url();
    let mut client = app(url);
    let server_now = |client: &mut postgres::Client| -> i64 {
        client
            .query_one(
                "SELECT floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint",
                &[],
            )
            .unwrap()
            .get(0)
    };
    let before = server_now(&mut client);
    let clock = ManualClock::new(before);
    let s = store(url, &clock);
    client
        .batch_execute(
            "BEGIN;
             INSERT INTO orders VALUES ('order-1', 100);
             SELECT leasehold_enqueue('charge-1', 'send-email', '{\"order\":1}',
                                      handler_version => '1.0.0', priority => 3);
             SELECT leasehold_enqueue('charge-later', 'send-email',
                                      handler_version => '1.0.0', delay_ms => 3600000);
             COMMIT;",
        )
        .unwrap();
    client
        .execute(
            "INSERT INTO intake (id, handler, compat, payload, idempotency_key)
             VALUES ('charge-2', 'send-email', $1, '{}', 'order-2')",
            &[&compat()],
        )
        .unwrap();
    client
        .batch_execute(
            "SELECT leasehold_enqueue('charge-3', 'send-email', handler_version => 'one')",
        )
        .unwrap();
    let neither = client
        .batch_execute("SELECT leasehold_enqueue('charge-4', 'send-email')")
        .unwrap_err();
    let refused_by = neither.as_db_error().and_then(|e| e.constraint());
    assert_eq!(refused_by, Some("intake_version_or_key"), "{neither}");

    let claimed = s.claim_batch("w", compat(), 10, 30_000).unwrap();
    let ids: Vec<&str> = claimed.iter().map(|w| w.id.as_str()).collect();
    assert_eq!(ids, ["charge-1", "charge-2"], "the delayed one waits");
    assert_eq!(claimed[0].priority, 3);
    assert_eq!(claimed[1].idempotency_key, "order-2");
    let later = s.work("charge-later").unwrap().unwrap();
    assert_eq!(later.state, WorkState::Pending);
    let after = server_now(&mut client);
    let hour = 3_600_000;
    assert!(
        (before + hour..=after + hour).contains(&later.next_eligible_at),
        "an hour from the server's now: {}",
        later.next_eligible_at
    );
    assert_eq!(
        intake(&s),
        IntakeCounts {
            waiting: 0,
            refused: 1
        }
    );
    let version = HandlerVersion::parse("1.0.0").unwrap();
    assert_eq!(
        claimed[0].compat,
        leasehold::model::handler_key(HANDLER, &version)
    );
}
