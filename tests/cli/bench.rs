//! `leasehold bench`: the documented JSON fields of every mode, and a dashboard bench that
//! stops as soon as its writers exit.

use serde_json::Value;

use super::{assert_one_line_failure, code, leasehold, seed, stderr, stdout};

/// `--step-aside` reaches authority processes: a fleet told `off` drains every item, none
/// of its polls steps aside, and says which setting it ran with.
#[test]
fn a_fleet_of_processes_runs_with_the_step_aside_it_was_given() {
    let dir = tempfile::tempdir().unwrap();
    let store = format!("sqlite:{}", dir.path().join("work.db").display());
    let o = leasehold(&[
        "bench",
        "work",
        "--store",
        &store,
        "--items",
        "200",
        "--single",
        "0",
        "--processes",
        "--authorities",
        "3",
        "--concurrency",
        "8",
        "--step-aside",
        "off",
        "--json",
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let report: Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    assert_eq!(report["knobs"]["stepAside"], "off");
    assert_eq!(report["results"]["completions"], 200, "{report}");
    assert_eq!(report["results"]["lockStepAsides"], 0, "{report}");
    assert_eq!(report["results"]["checkViolations"], 0, "{report}");
}

/// `leasehold bench … --json`: one object with the documented fields, for every mode.
#[test]
#[expect(
    clippy::too_many_lines,
    reason = "a scripted scenario: its steps in the order they happen"
)]
fn bench_reports_its_documented_fields_as_json() {
    let dir = tempfile::tempdir().unwrap();
    let work_store = format!("sqlite:{}", dir.path().join("work.db").display());
    let o = leasehold(&[
        "bench",
        "work",
        "--store",
        &work_store,
        "--items",
        "300",
        "--single",
        "20",
        "--authorities",
        "2",
        "--concurrency",
        "16",
        "--json",
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let report: Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    assert_eq!(report["bench"], "work");
    assert_eq!(report["store"]["kind"], "sqlite");
    assert!(
        report["store"]["durability"]
            .as_str()
            .unwrap()
            .contains("synchronous=FULL")
    );
    assert!(report["machine"]["cores"].as_u64().unwrap() >= 1);
    assert_eq!(report["knobs"]["items"], 300);
    assert_eq!(report["knobs"]["stepAside"], "auto");
    let results = &report["results"];
    for key in [
        "enqueueSinglePerSec",
        "enqueueBatchedPerSec",
        "drainPerSec",
        "claimToCompleteP50Ms",
        "claimToCompleteP99Ms",
        "fencedRejections",
        "storeCommits",
        "commitsPerSec",
        "checkSeconds",
    ] {
        assert!(results[key].is_number(), "{key} missing: {report}");
    }
    assert_eq!(results["completions"], 300);
    // The run's write amplification, from the process's own I/O accounting.
    let written = results["bytesWritten"].as_f64().unwrap();
    let per_item = results["bytesWrittenPerItem"].as_f64().unwrap();
    assert!(
        written > 0.0 && (per_item - written / 300.0).abs() <= 0.5,
        "{report}"
    );
    // The store it wrote passes the invariant checker.
    assert_eq!(results["checkViolations"], 0, "{report}");
    assert_eq!(results["checkHistoryGaps"], 0, "{report}");

    // The store now holds the bench's items: a second run refuses and changes nothing.
    let again = leasehold(&["bench", "work", "--store", &work_store, "--items", "10"]);
    assert!(assert_one_line_failure(&again, 2).contains("scratch store"));

    let wf_store = format!("sqlite:{}", dir.path().join("wf.db").display());
    let o = leasehold(&[
        "bench",
        "--store",
        &wf_store,
        "workflows",
        "--instances",
        "30",
        "--single",
        "10",
        "--concurrency",
        "8",
        "--json",
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let report: Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    assert_eq!(report["bench"], "workflows");
    for key in [
        "startsPerSec",
        "startsBatchedPerSec",
        "workflowsPerSec",
        "transitionsPerSec",
    ] {
        assert!(
            report["results"][key].as_f64().unwrap() > 0.0,
            "{key}: {report}"
        );
    }

    // The dashboard over a seeded store, with one writer process working it meanwhile.
    let seeded = format!("sqlite:{}", dir.path().join("seeded.db").display());
    seed(&seeded, &[]);
    let o = leasehold(&[
        "bench",
        "dashboard",
        "--store",
        &seeded,
        "--refreshes",
        "3",
        "--writers",
        "1",
        "--json",
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let report: Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    assert_eq!(report["knobs"]["writers"], 1);
    for key in [
        "firstFrameMs",
        "refreshP50Ms",
        "refreshP99Ms",
        "endOfWorkMs",
        "peakRssMb",
    ] {
        assert!(
            report["results"][key].as_f64().unwrap() > 0.0,
            "{key}: {report}"
        );
    }

    let o = leasehold(&["bench", "work"]);
    assert!(assert_one_line_failure(&o, 2).contains("--store"));
}

/// Writers that cannot work the store end the dashboard bench at once, naming the process
/// that exited, with the writer's own refusal above it — not after the bench's whole
/// timeout. Here the store at the path was created again, so the writers' rewind witness
/// refuses it.
#[test]
fn the_dashboard_bench_stops_when_its_writers_exit() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("again.db");
    let store = format!("sqlite:{}", path.display());
    let bench = || {
        leasehold(&[
            "bench",
            "dashboard",
            "--store",
            &store,
            "--refreshes",
            "1",
            "--writers",
            "1",
            "--timeout-s",
            "600",
        ])
    };
    seed(&store, &["--effects", "5"]);
    // Its writers leave this host's witness of the store they worked.
    let first = bench();
    assert_eq!(code(&first), 0, "{}", stderr(&first));
    for suffix in ["", "-wal", "-shm"] {
        let mut file = path.as_os_str().to_owned();
        file.push(suffix);
        let _ = std::fs::remove_file(file);
    }
    // Another host (another state directory) creates the new store: this host's writers
    // saw the old one.
    let elsewhere = std::process::Command::new(env!("CARGO_BIN_EXE_leasehold"))
        .env("LEASEHOLD_STATE_DIR", dir.path().join("elsewhere"))
        .env_remove("LEASEHOLD_STORE")
        .args(["seed", "--store", &store, "--effects", "5"])
        .output()
        .unwrap();
    assert_eq!(code(&elsewhere), 0, "{}", stderr(&elsewhere));
    let o = bench();
    let err = stderr(&o);
    assert_eq!(code(&o), 2, "{err}");
    assert!(err.contains("STORE_REWOUND"), "the writer's refusal: {err}");
    let last = err.lines().last().unwrap_or_default();
    assert!(
        last.starts_with("leasehold: ")
            && last.contains("exited")
            && last.contains("before the bench was done"),
        "{err}"
    );
    assert!(!err.contains("did not finish within"), "{err}");
    assert!(!err.contains("No such process"), "{err}");
}
