//! The dashboard as a person sees it: the real binary in a real terminal (tmux), driven
//! with keystrokes, read back with capture-pane. Skipped only where tmux is missing outside
//! CI; under `CI=true` (which `.ci/run` sets, after installing tmux) a missing tmux fails.

#![allow(clippy::unwrap_used)]

#[path = "support/mod.rs"]
mod support;

use std::process::Command;
use std::time::{Duration, Instant};

struct Tmux {
    socket: String,
}

impl Tmux {
    fn run(&self, args: &[&str]) -> String {
        let out = Command::new("tmux")
            .arg("-L")
            .arg(&self.socket)
            .args(args)
            .output()
            .expect("tmux runs");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn screen(&self) -> String {
        self.run(&["capture-pane", "-p", "-t", "smoke"])
    }

    /// Waits (generously: CI machines are slow) until the screen shows `needle`.
    fn wait_for(&self, needle: &str) -> String {
        let deadline = Instant::now() + Duration::from_secs(90);
        loop {
            let screen = self.screen();
            if screen.contains(needle) {
                return screen;
            }
            assert!(
                Instant::now() < deadline,
                "waited for {needle:?}; the screen shows:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Waits until `needle` is off the screen (a key was handled), so the next key is
    /// never read together with this one (`Escape` then `q` would arrive as `alt-q`).
    fn wait_gone(&self, needle: &str) {
        let deadline = Instant::now() + Duration::from_secs(90);
        while self.screen().contains(needle) {
            assert!(
                Instant::now() < deadline,
                "waited for {needle:?} to go; the screen shows:\n{}",
                self.screen()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn keys(&self, keys: &str) {
        self.run(&["send-keys", "-t", "smoke", keys]);
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .arg("-L")
            .arg(&self.socket)
            .arg("kill-server")
            .output();
    }
}

/// A tmux server of its own running `script` in a 100×30 window, or `None` (skip) where
/// tmux is missing outside CI.
fn start(name: &str, script: &str) -> Option<Tmux> {
    if Command::new("tmux").arg("-V").output().is_err() {
        // CI installs tmux (.ci/run), so there a missing tmux is a broken setup, not a skip.
        let under_ci = std::env::var("CI").is_ok_and(|v| v == "true");
        assert!(
            !under_ci,
            "tmux is missing under CI=true: .ci/run should have installed it"
        );
        eprintln!("tmux is not installed; skipping (CI installs it)");
        return None;
    }
    let tmux = Tmux {
        socket: format!("leasehold-{name}-{}", std::process::id()),
    };
    tmux.run(&[
        "new-session",
        "-d",
        "-s",
        "smoke",
        "-x",
        "100",
        "-y",
        "30",
        "sh",
        "-c",
        script,
    ]);
    Some(tmux)
}

/// Quits with `q` and checks the terminal is restored: the shell saw exit 0 and the
/// terminal is back in canonical mode with echo (raw mode off).
fn quit_and_check_restored(tmux: &Tmux) {
    tmux.keys("q");
    tmux.wait_for("EXIT:");
    // `stty -a` prints after the exit line: wait for its mode flags (`icanon` or
    // `-icanon`) before judging them.
    let after = tmux.wait_for("icanon");
    assert!(after.contains("EXIT:0"), "{after}");
    assert!(
        after.contains(" icanon") && after.contains(" echo"),
        "{after}"
    );
}

#[test]
fn demo_drives_views_and_a_fault_and_restores_the_terminal() {
    let bin = env!("CARGO_BIN_EXE_leasehold");
    let script = format!("{bin} demo --seed 3 --authorities 3; echo EXIT:$?; stty -a; sleep 60");
    let Some(tmux) = start("smoke", &script) else {
        return;
    };

    // The header (LIVE) is drawn before the first read is in; the view's title after it.
    tmux.wait_for("LIVE");
    tmux.wait_for("overview");
    // The count, not a row: at 100×30 the overview's authorities pane has room for one.
    tmux.wait_for("authorities 3 live");

    tmux.keys("2");
    tmux.wait_for("INSTANCE");
    // The header comes first; the rows follow once the view's first read is in.
    let authorities = tmux.wait_for("auth-1");
    assert!(
        authorities.contains("auth-1") && authorities.contains("running"),
        "{authorities}"
    );

    tmux.keys("K");
    // The cluster's answer on the status line, and the authority's new state in its row.
    tmux.wait_for("killed auth-1");
    tmux.wait_for("crashed");

    tmux.keys("4");
    let work = tmux.wait_for("KIND");
    assert!(work.contains("STATE") && work.contains("GEN"), "{work}");

    tmux.keys("?");
    tmux.wait_for("Navigation");
    tmux.keys("Escape");
    tmux.wait_gone("Navigation");

    quit_and_check_restored(&tmux);
}

/// `leasehold demo --tour` in a real terminal: the caption line appears and walks
/// through the steps — the paused owner's claims reclaimed, its late write refused
/// `WORK_FENCED` — to the end of the tour, and the terminal is restored afterwards.
#[test]
fn the_tour_shows_its_captions_and_restores_the_terminal() {
    let bin = env!("CARGO_BIN_EXE_leasehold");
    let script = format!(
        "{bin} demo --tour --speed 4 --seed 7 --authorities 4; echo EXIT:$?; stty -a; sleep 60"
    );
    let Some(tmux) = start("tour", &script) else {
        return;
    };
    tmux.wait_for("tour 1/8");
    tmux.wait_for("tour 2/8");
    tmux.wait_for("reclaimed");
    tmux.wait_for("WORK_FENCED");
    tmux.wait_for("tour over");
    quit_and_check_restored(&tmux);
}

/// On-call in a real terminal: twelve dead letters in a SQLite store, the work view under
/// `/state:failed`, `U` then `a` for the bulk dialog, the count typed, and every dead letter
/// is requeued, the run audited with its filter.
#[test]
fn bulk_requeue_through_the_dialog() {
    use leasehold::clock::ManualClock;
    use leasehold::model::{PageRequest, WorkState};
    use leasehold::store::url::OpenMode;

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.db");
    let clock = ManualClock::new(1_767_225_600_000);
    let store = support::open_sqlite(&path, &clock, OpenMode::ReadWrite).unwrap();
    let ids: Vec<String> = (0..12).map(|i| format!("dl-{i:02}")).collect();
    let names: Vec<&str> = ids.iter().map(String::as_str).collect();
    support::dead_letters(&store, &clock, &names);

    let script = format!(
        "LEASEHOLD_STATE_DIR={} {} attach {}; echo EXIT:$?; stty -a; sleep 60",
        support::authorities::witnesses().display(),
        env!("CARGO_BIN_EXE_leasehold"),
        path.display()
    );
    let Some(tmux) = start("bulk", &script) else {
        return;
    };
    tmux.wait_for("LIVE");
    tmux.keys("4");
    tmux.wait_for("dl-00");
    tmux.keys("/");
    tmux.run(&["send-keys", "-t", "smoke", "-l", "state:failed"]);
    tmux.keys("Enter");
    tmux.wait_for("/state:failed");
    tmux.keys("U");
    tmux.wait_for("confirm requeue");
    tmux.keys("a");
    tmux.wait_for("type 12 to confirm");
    tmux.keys("1");
    tmux.keys("2");
    tmux.wait_for("confirm: 12");
    tmux.keys("Enter");
    tmux.wait_for("12 requeued");

    let states: Vec<WorkState> = ids
        .iter()
        .map(|id| store.work(id).unwrap().unwrap().state)
        .collect();
    assert_eq!(states, vec![WorkState::Pending; 12]);
    let audit = store.list_audit(&PageRequest::first(50)).unwrap().rows;
    assert!(
        audit
            .iter()
            .any(|a| a.action == "bulk-requeue-work" && a.target == "filter state:failed"),
        "{audit:?}"
    );
    assert_eq!(
        audit.iter().filter(|a| a.action == "requeue-work").count(),
        12
    );
    quit_and_check_restored(&tmux);
}

/// Two stores in one dashboard, through the real event loop: each keeps its own reader,
/// `:ctx` switches the work view to the other's rows, and the header calls the store off
/// screen live.
#[test]
fn two_stores_switch_with_ctx() {
    use leasehold::clock::ManualClock;
    use leasehold::model::work::NewWork;
    use leasehold::store::url::OpenMode;

    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(1_767_225_600_000);
    let mut paths = Vec::new();
    for (name, prefix) in [("orders", "order"), ("billing", "invoice")] {
        let path = dir.path().join(format!("{name}.db"));
        let store = support::open_sqlite(&path, &clock, OpenMode::ReadWrite).unwrap();
        let specs = (0..3)
            .map(|i| NewWork::effect(format!("{prefix}-{i}"), "send-email", "{}"))
            .collect();
        store
            .enqueue_batch(specs, support::send_email_key())
            .unwrap();
        paths.push(path.display().to_string());
    }
    let script = format!(
        "LEASEHOLD_STATE_DIR={} {} attach --read-only {} {}; echo EXIT:$?; stty -a; sleep 60",
        support::authorities::witnesses().display(),
        env!("CARGO_BIN_EXE_leasehold"),
        paths[0],
        paths[1]
    );
    let Some(tmux) = start("stores", &script) else {
        return;
    };
    tmux.wait_for("billing live");
    tmux.keys("4");
    let screen = tmux.wait_for("order-0");
    assert!(!screen.contains("invoice-0"), "{screen}");
    tmux.keys(":");
    tmux.run(&["send-keys", "-t", "smoke", "-l", "ctx bil"]);
    tmux.keys("Tab");
    tmux.wait_for(":ctx billing");
    tmux.keys("Enter");
    let screen = tmux.wait_for("invoice-0");
    assert!(screen.contains("orders live"), "{screen}");
    tmux.wait_gone("order-0");
    quit_and_check_restored(&tmux);
}
