//! The examples are real programs: each runs here against a throwaway store and must end
//! with the outcomes it promises, checked in the store itself.
//!
//! `embedded_service` runs alone (every order charged once and completed) and as three
//! authorities sharing one SQLite file — two serving, one placing the orders — after which
//! every order is done, the provider was called once per charge, and `leasehold check`
//! finds nothing wrong.

use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use leasehold::model::work::WorkFilter;
use leasehold::model::{InstanceStatus, PageRequest, WorkState};
use leasehold::store::url::{OpenMode, open};

/// How long an example gets on a slow, shared machine.
const DEADLINE: Duration = Duration::from_secs(120);

/// The built example (cargo builds examples beside the test binaries' `deps`).
fn example(name: &str) -> PathBuf {
    let bin = PathBuf::from(env!("CARGO_BIN_EXE_leasehold"));
    bin.with_file_name("examples").join(name)
}

fn finish(mut child: Child) -> Output {
    let started = Instant::now();
    while child.try_wait().expect("polls").is_none() {
        if started.elapsed() > DEADLINE {
            let _ = child.kill();
            panic!("the example did not finish within {DEADLINE:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    child.wait_with_output().expect("output")
}

fn spawn(store: &str, instance: &str, extra: &[&str]) -> Child {
    Command::new(example("embedded_service"))
        .args(["--store", store, "--instance", instance])
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the example is built by cargo test")
}

/// Every order's charge succeeded and every order workflow completed with its payment.
fn assert_all_done(store: &str, orders: usize) {
    let store = open(store, OpenMode::ReadOnly).expect("opens");
    let charges: Vec<_> = store
        .list_work(&WorkFilter::default(), &PageRequest::first(10_000))
        .expect("lists")
        .rows
        .into_iter()
        .filter(|w| w.handler == "charge-card")
        .collect();
    assert_eq!(charges.len(), orders);
    for charge in &charges {
        assert_eq!(charge.state, WorkState::Succeeded, "{charge:?}");
        let result: serde_json::Value =
            serde_json::from_str(charge.result.as_deref().unwrap_or("null")).expect("json");
        assert!(result["chargeId"].is_string(), "{result}");
    }
    let instances = store
        .list_instances(None, &PageRequest::first(10_000))
        .expect("lists")
        .rows;
    assert_eq!(instances.len(), orders);
    for instance in instances {
        assert_eq!(instance.status, InstanceStatus::Completed, "{instance:?}");
    }
}

#[test]
fn the_embedded_service_charges_each_order_once_and_completes_it() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = dir.path().join("shop.db").display().to_string();
    let out = finish(spawn(&store, "shop-1", &["--orders", "5"]));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("5 orders done")
            && stdout.contains("provider charged 5 card(s) for 5 call(s)"),
        "{stdout}"
    );
    assert_all_done(&store, 5);
    // Running it again orders nothing twice.
    let again = finish(spawn(&store, "shop-1", &["--orders", "5"]));
    assert!(again.status.success());
    assert!(String::from_utf8_lossy(&again.stdout).contains("provider charged 0 card(s)"));
    assert_all_done(&store, 5);
}

#[test]
fn three_embedded_authorities_share_the_orders_and_check_clean() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = dir.path().join("shop.db").display().to_string();
    // The store exists before the servers start, so none of them races to create it.
    let init = Command::new(env!("CARGO_BIN_EXE_leasehold"))
        .args(["init", &store])
        .output()
        .expect("runs");
    assert!(
        init.status.success(),
        "{}",
        String::from_utf8_lossy(&init.stderr)
    );
    let servers: Vec<Child> = ["shop-2", "shop-3"]
        .iter()
        .map(|id| spawn(&store, id, &["--orders", "0", "--serve"]))
        .collect();
    let placed = finish(spawn(&store, "shop-1", &["--orders", "20"]));
    assert!(
        placed.status.success(),
        "{}",
        String::from_utf8_lossy(&placed.stderr)
    );
    for server in servers {
        // Ctrl-C: a graceful stop, recorded in the registration.
        let _ = Command::new("kill")
            .args(["-INT", &server.id().to_string()])
            .status();
        let out = finish(server);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    assert_all_done(&store, 20);
    let check = Command::new(env!("CARGO_BIN_EXE_leasehold"))
        .args(["check", "--store", &store])
        .output()
        .expect("runs");
    assert!(
        check.status.success(),
        "{}{}",
        String::from_utf8_lossy(&check.stdout),
        String::from_utf8_lossy(&check.stderr)
    );
}
