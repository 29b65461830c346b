//! The dashboard as a person sees it: the real binary in a real terminal (tmux), driven
//! with keystrokes, read back with capture-pane. Skipped only where tmux is missing outside
//! CI; under `CI=true` (which `.ci/run` sets, after installing tmux) a missing tmux fails.

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

#[test]
fn demo_drives_views_and_a_fault_and_restores_the_terminal() {
    if Command::new("tmux").arg("-V").output().is_err() {
        // CI installs tmux (.ci/run), so there a missing tmux is a broken setup, not a skip.
        let under_ci = std::env::var("CI").is_ok_and(|v| v == "true");
        assert!(
            !under_ci,
            "tmux is missing under CI=true: .ci/run should have installed it"
        );
        eprintln!("tmux is not installed; skipping (CI installs it)");
        return;
    }
    let tmux = Tmux {
        socket: format!("leasehold-smoke-{}", std::process::id()),
    };
    let bin = env!("CARGO_BIN_EXE_leasehold");
    let script = format!("{bin} demo --seed 3 --authorities 3; echo EXIT:$?; stty -a; sleep 60");
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
        &script,
    ]);

    let overview = tmux.wait_for("LIVE");
    assert!(overview.contains("overview"), "{overview}");
    tmux.wait_for("auth-3");

    tmux.keys("2");
    let authorities = tmux.wait_for("INSTANCE");
    assert!(
        authorities.contains("auth-1") && authorities.contains("running"),
        "{authorities}"
    );

    tmux.keys("K");
    let killed = tmux.wait_for("crashed");
    assert!(killed.contains("killed auth-1"), "{killed}");

    tmux.keys("4");
    let work = tmux.wait_for("KIND");
    assert!(work.contains("STATE") && work.contains("GEN"), "{work}");

    tmux.keys("?");
    tmux.wait_for("Navigation");
    tmux.keys("Escape");

    tmux.keys("q");
    let after = tmux.wait_for("EXIT:");
    assert!(after.contains("EXIT:0"), "{after}");
    // Raw mode is off again: the terminal is back in canonical mode with echo.
    assert!(
        after.contains(" icanon") && after.contains(" echo"),
        "{after}"
    );
}
