//! `leasehold authority` itself: its log on stderr names the items it claims and completes,
//! and a clean stop ends with its final counters.

use std::process::Command;

use leasehold::store::url::OpenMode;
use serde_json::Value;

use super::{seed, store_in};

/// `leasehold authority` itself: its log on stderr, in both formats, names the items it
/// claims and completes with their generations, and a clean stop (SIGTERM) ends with a
/// `stopped` line whose counters are the stats it prints on stdout.
#[test]
#[expect(
    clippy::too_many_lines,
    reason = "a scripted scenario: its steps in the order they happen"
)]
fn the_authority_binary_logs_items_and_its_final_counters() {
    use std::process::Stdio;
    use std::time::{Duration, Instant};

    for format in ["human", "json"] {
        let dir = tempfile::tempdir().unwrap();
        let store = store_in(dir.path());
        seed(
            &store,
            &[
                "--effects",
                "12",
                "--workflows",
                "0",
                "--schedules",
                "0",
                "--subscriptions",
                "0",
                "--events",
                "0",
            ],
        );
        let err_path = dir.path().join("authority.err");
        let child = Command::new(env!("CARGO_BIN_EXE_leasehold"))
            // Rewind witnesses of these throwaway stores stay out of the home directory.
            .env(
                "LEASEHOLD_STATE_DIR",
                std::env::temp_dir().join("leasehold-test-witnesses"),
            )
            .args([
                "authority",
                "--store",
                &store,
                "--instance",
                "solo",
                "--workload",
                "default",
                "--poll-ms",
                "50",
                "--log-format",
                format,
            ])
            .env_remove("LEASEHOLD_STORE")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&err_path).unwrap())
            .spawn()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(60);
        let log = || std::fs::read_to_string(&err_path).unwrap_or_default();
        while !log().contains("completed") {
            assert!(Instant::now() < deadline, "no completion logged: {}", log());
            std::thread::sleep(Duration::from_millis(20));
        }
        let term = Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .status()
            .unwrap();
        assert!(term.success());
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "{format}: {}", log());
        let stats: Value =
            serde_json::from_str(String::from_utf8(out.stdout).unwrap().trim()).unwrap();
        let text = log();
        let line = |message: &str| -> String {
            text.lines()
                .find(|l| match format {
                    "json" => l.contains(&format!("\"message\":\"{message}\"")),
                    _ => l.contains(&format!(" {message} ")),
                })
                .unwrap_or_else(|| panic!("{format}: no {message} line in {text}"))
                .to_owned()
        };
        // One shape for both formats: `key=value` pairs, or a JSON object.
        let field = |line: &str, key: &str| -> String {
            if format == "json" {
                let v: Value = serde_json::from_str(line).unwrap();
                match &v[key] {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                }
            } else {
                line.split(' ')
                    .find_map(|kv| kv.strip_prefix(&format!("{key}=")))
                    .unwrap_or_else(|| panic!("no {key} in {line}"))
                    .to_owned()
            }
        };
        let started = line("started");
        assert_eq!(field(&started, "instance"), "solo");
        assert_eq!(field(&started, "build"), "v1");
        // It says the demo handlers run, and which, each at its version.
        assert_eq!(field(&started, "workload"), "default");
        let handlers = field(&started, "handlers");
        for handler in [
            "charge-card@1.0.0",
            "send-email@1.0.0",
            "schedule-tick@1.0.0",
        ] {
            assert!(handlers.split(',').any(|h| h == handler), "{handlers}");
        }
        let completed = line("completed");
        let id = field(&completed, "item");
        let read = leasehold::store::url::open(&store, OpenMode::ReadOnly).unwrap();
        let item = read.work(&id).unwrap().expect("the logged item exists");
        assert_eq!(field(&completed, "generation"), item.generation.to_string());
        assert_eq!(field(&completed, "handler"), item.handler);
        assert!(item.state.is_terminal(), "{item:?}");
        let stopped = line("stopped");
        for key in ["claims", "completions", "fencedWritesRefused", "leasesLost"] {
            assert_eq!(
                field(&stopped, key),
                stats[key].to_string(),
                "{key}: {stopped}"
            );
        }
    }
}
