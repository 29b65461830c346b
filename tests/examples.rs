//! The examples are real programs: each runs here against a throwaway store and must end
//! with the outcomes it promises, checked in the store itself.
//!
//! `embedded_service` runs alone (every order charged once and completed) and as three
//! authorities sharing one SQLite file — two serving, one placing the orders — after which
//! every order is done, the provider was called once per charge, and `leasehold check`
//! finds nothing wrong. `polyglot`'s handlers run work items on three authorities, and its
//! workflow (`thumbnail.json`, whose steps call those handlers) is validated and deployed
//! against the example's config, run to completion by authorities given only that config,
//! and cancelled — twice — from the command line.

use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use leasehold::model::work::WorkFilter;
use leasehold::model::{InstanceStatus, PageRequest, WorkState};
use leasehold::store::url::{OpenMode, open};

#[path = "support/mod.rs"]
mod support;

use support::wait::{wait_until, within};

/// The `leasehold` binary, its rewind witnesses kept out of the home directory.
fn leasehold_command() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_leasehold"));
    command.env(
        "LEASEHOLD_STATE_DIR",
        std::env::temp_dir().join("leasehold-test-witnesses"),
    );
    command
}

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
    let init = leasehold_command()
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
    let check = leasehold_command()
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

/// `examples/polyglot` copied to a temp dir (its outbox lands there), with the HTTP
/// handler's port set to `port`.
fn polyglot_copy(port: u16) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    let source = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples/polyglot");
    for entry in std::fs::read_dir(&source).expect("the example exists") {
        let entry = entry.expect("an entry");
        std::fs::copy(entry.path(), dir.path().join(entry.file_name())).expect("copies");
    }
    let config = dir.path().join("handlers.toml");
    let text = std::fs::read_to_string(&config).expect("reads");
    assert!(
        text.contains("127.0.0.1:8089"),
        "the example's documented port"
    );
    std::fs::write(
        &config,
        text.replace("127.0.0.1:8089", &format!("127.0.0.1:{port}")),
    )
    .expect("writes");
    dir
}

/// Runs `leasehold` to the end.
fn cli(args: &[&str]) -> Output {
    leasehold_command().args(args).output().expect("runs")
}

/// The example's HTTP handler: its Python server on a free port, which it prints first.
fn resize_server() -> (Child, u16) {
    let mut server = Command::new("python3")
        .arg(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples/polyglot/resize_server.py"))
        .arg("0")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("python3 runs");
    let mut first = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(server.stdout.take().expect("stdout")),
        &mut first,
    )
    .expect("the port");
    let port: u16 = first.trim().parse().expect("a port");
    (server, port)
}

/// `n` authorities (`poly-1` …) over `store`, given only the example's `config`.
fn polyglot_authorities(store: &str, config: &str, n: usize) -> Vec<Child> {
    (1..=n)
        .map(|n| {
            leasehold_command()
                .args(["authority", "--store", store, "--config", config])
                .args(["--instance", &format!("poly-{n}"), "--lease-ms", "3000"])
                .args(["--poll-ms", "100", "--log-format", "off"])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("starts")
        })
        .collect()
}

/// Stops each authority with Ctrl-C (a clean stop) and the server, then `leasehold check`
/// must find nothing wrong in `store`.
fn stop_and_check(authorities: Vec<Child>, mut server: Child, store: &str) {
    for authority in authorities {
        let _ = Command::new("kill")
            .args(["-INT", &authority.id().to_string()])
            .status();
        assert!(finish(authority).status.success());
    }
    let _ = server.kill();
    let _ = server.wait();
    let check = cli(&["check", "--store", store]);
    assert!(
        check.status.success(),
        "{}",
        String::from_utf8_lossy(&check.stdout)
    );
}

#[test]
fn the_polyglot_handlers_run_on_three_authorities() {
    let (server, port) = resize_server();
    let example = polyglot_copy(port);
    let config = example.path().join("handlers.toml").display().to_string();
    let store = example.path().join("work.db").display().to_string();
    assert!(cli(&["init", &store]).status.success());

    let authorities = polyglot_authorities(&store, &config, 3);
    let enqueue = |id: &str, handler: &str, payload: &str| {
        let o = cli(&[
            "work",
            "enqueue",
            "--store",
            &store,
            "--id",
            id,
            "--handler",
            handler,
            "--payload",
            payload,
        ]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    };
    for n in 0..6 {
        let to = format!(r#"{{"to":"user{n}@example.com","seconds":0.05}}"#);
        enqueue(&format!("mail-{n}"), "send-email", &to);
    }
    enqueue(
        "mail-flaky",
        "send-email",
        r#"{"to":"f@example.com","flaky":true}"#,
    );
    enqueue("mail-bad", "send-email", r#"{"to":"nobody"}"#);
    for n in 0..4 {
        enqueue(
            &format!("thumb-{n}"),
            "resize-image",
            &format!(r#"{{"image":"i{n}.png","width":128}}"#),
        );
    }
    enqueue(
        "thumb-bad",
        "resize-image",
        r#"{"image":"x.png","width":0}"#,
    );

    let opened = open(&store, OpenMode::ReadOnly).expect("opens");
    let state = |id: &str| opened.work(id).expect("reads").map(|w| w.state);
    let ids: Vec<String> = (0..6)
        .map(|n| format!("mail-{n}"))
        .chain((0..4).map(|n| format!("thumb-{n}")))
        .chain(["mail-flaky".into(), "mail-bad".into(), "thumb-bad".into()])
        .collect();
    wait_until("every item finishes", within(DEADLINE), || {
        ids.iter()
            .all(|id| state(id).is_some_and(WorkState::is_terminal))
    });
    for n in 0..6 {
        let item = opened
            .work(&format!("mail-{n}"))
            .expect("reads")
            .expect("exists");
        assert_eq!(item.state, WorkState::Succeeded);
        let sent = example.path().join("outbox").join(format!("mail-{n}.json"));
        assert!(sent.exists(), "the exec handler sent it once");
    }
    let flaky = opened.work("mail-flaky").expect("reads").expect("exists");
    assert_eq!(
        (flaky.state, flaky.attempt_number),
        (WorkState::Succeeded, 2)
    );
    let bad = opened.work("mail-bad").expect("reads").expect("exists");
    assert_eq!(bad.state, WorkState::Failed);
    assert_eq!(
        bad.last_failure.map(|f| f.code).as_deref(),
        Some("BAD_ADDRESS")
    );
    let thumb = opened.work("thumb-0").expect("reads").expect("exists");
    let result: serde_json::Value =
        serde_json::from_str(thumb.result.as_deref().unwrap_or("null")).expect("json");
    assert_eq!(result["width"], 128);
    assert_eq!(state("thumb-bad"), Some(WorkState::Failed));

    stop_and_check(authorities, server, &store);
}

/// The example's workflow, whose steps call the example's handlers: validated against
/// its config, deployed, and run by authorities given only that config. One instance is
/// approved (an event) and completes with the thumbnail and the email's receipt; another
/// is cancelled from the command line with no `--handler-version` while the fleet runs
/// at the example's versions, and cancelled again (exit 0, "already cancelled"). Neither
/// the cancelled instance's email nor any second email is sent.
#[test]
#[expect(
    clippy::too_many_lines,
    reason = "a scripted scenario: its steps in the order they happen"
)]
fn the_polyglot_workflow_runs_end_to_end_and_cancels() {
    let (server, port) = resize_server();
    let example = polyglot_copy(port);
    let config = example.path().join("handlers.toml").display().to_string();
    let definition = example.path().join("thumbnail.json").display().to_string();
    let store = example.path().join("work.db").display().to_string();
    assert!(cli(&["init", &store]).status.success());
    let ok = |o: Output| -> String {
        assert!(
            o.status.success(),
            "{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
        String::from_utf8(o.stdout).expect("utf-8")
    };

    let validated = ok(cli(&[
        "workflow",
        "validate",
        "--config",
        &config,
        &definition,
    ]));
    assert!(
        validated.contains("actions judged against 2 handlers from handlers.toml"),
        "{validated}"
    );
    ok(cli(&[
        "workflow",
        "deploy",
        "--store",
        &store,
        "--config",
        &config,
        &definition,
    ]));

    let authorities = polyglot_authorities(&store, &config, 2);
    let opened = open(&store, OpenMode::ReadOnly).expect("opens");
    wait_until("both authorities register", within(DEADLINE), || {
        opened
            .list_authorities(&PageRequest::first(10))
            .expect("lists")
            .rows
            .len()
            == 2
    });
    let start = |image: &str, requester: &str| -> String {
        let args = serde_json::json!({"image": image, "width": 96, "requester": requester});
        let started = ok(cli(&[
            "workflow",
            "start",
            "--store",
            &store,
            "thumbnail",
            "--args",
            &args.to_string(),
        ]));
        started.split_whitespace().nth(1).expect("an id").to_owned()
    };
    let approved = start("cat.png", "ann@example.com");
    let dropped = start("dog.png", "bob@example.com");
    let status = |id: &str| opened.instance(id).expect("reads").expect("exists").status;
    wait_until(
        "both thumbnails wait for approval",
        within(DEADLINE),
        || {
            [&approved, &dropped]
                .iter()
                .all(|id| status(id) == InstanceStatus::Waiting)
        },
    );

    let cancelled = ok(cli(&[
        "cancel",
        "--store",
        &store,
        &dropped,
        "--reason",
        "withdrawn",
    ]));
    assert!(
        cancelled.starts_with(&format!("{dropped} cancelled")),
        "{cancelled}"
    );
    let again = ok(cli(&["cancel", "--store", &store, &dropped]));
    assert_eq!(
        again,
        format!("{dropped} already cancelled: nothing changed\n")
    );

    ok(cli(&[
        "event",
        "--store",
        &store,
        "--type",
        "thumbnail-approved",
        "--payload",
        r#"{"image":"cat.png","by":"editor"}"#,
    ]));
    wait_until("the approved thumbnail completes", within(DEADLINE), || {
        status(&approved) == InstanceStatus::Completed
    });
    let row = opened.instance(&approved).expect("reads").expect("exists");
    let (_, state) = leasehold::workflow::engine::decode_state(&row).expect("decodes");
    let output = state.output.expect("a completed instance has its output");
    assert_eq!(output["thumb"]["image"], "cat.png", "{output}");
    assert_eq!(output["thumb"]["width"], 96, "{output}");
    assert_eq!(output["mail"]["sentTo"], "ann@example.com", "{output}");
    assert_eq!(status(&dropped), InstanceStatus::Cancelled);
    let sent: Vec<_> = std::fs::read_dir(example.path().join("outbox"))
        .expect("the exec handler wrote its outbox")
        .map(|e| e.expect("an entry").file_name())
        .collect();
    assert_eq!(
        sent.len(),
        1,
        "one email, for the approved thumbnail: {sent:?}"
    );

    stop_and_check(authorities, server, &store);
}
