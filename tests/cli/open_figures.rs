//! Figures for the cost of opening a big store, printed, never asserted (timings depend on
//! the machine): one `work enqueue` on a big store next to one on an empty store, and an
//! authority's time from its start to its first claim, and to the end of its whole-file
//! check. Run in release:
//!
//! `LEASEHOLD_FIGURES_ITEMS=1000000 cargo test --release --locked --test cli open_figures -- --ignored --nocapture`

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::{code, leasehold, seed};

/// The median of `runs` timings of `args`, each of which must succeed.
fn median_ms(args: &[&str], runs: usize) -> f64 {
    let mut times: Vec<f64> = (0..runs)
        .map(|_| {
            let started = Instant::now();
            let o = leasehold(args);
            let ms = started.elapsed().as_secs_f64() * 1000.0;
            assert_eq!(code(&o), 0, "{o:?}");
            ms
        })
        .collect();
    times.sort_by(f64::total_cmp);
    times[times.len() / 2]
}

fn enqueue_ms(store: &str) -> f64 {
    let args = [
        "work",
        "enqueue",
        "--store",
        store,
        "--handler",
        "send-email",
        "--payload",
        "{}",
    ];
    median_ms(&args, 5)
}

/// Milliseconds from spawning `leasehold authority` until its log says `claimed`, and until
/// it says `store-verified`.
fn authority_ms(store: &str) -> (f64, f64) {
    let started = Instant::now();
    let mut child = Command::new(env!("CARGO_BIN_EXE_leasehold"))
        .env(
            "LEASEHOLD_STATE_DIR",
            std::env::temp_dir().join("leasehold-test-witnesses"),
        )
        .args([
            "authority",
            "--store",
            store,
            "--workload",
            "fast",
            "--log-format",
            "json",
        ])
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let (mut claimed, mut verified) = (None, None);
    for line in lines.map_while(Result::ok) {
        let at = started.elapsed().as_secs_f64() * 1000.0;
        if claimed.is_none() && line.contains("\"claimed\"") {
            claimed = Some(at);
        }
        if line.contains("store-verified") {
            verified = Some(at);
        }
        if (claimed.is_some() && verified.is_some()) || started.elapsed() > Duration::from_secs(120)
        {
            break;
        }
    }
    child.kill().unwrap();
    child.wait().unwrap();
    (claimed.expect("a claim"), verified.expect("a verdict"))
}

#[test]
#[ignore = "a printed report of timings: run in release, see the module's docs"]
fn open_figures() {
    let items: u32 = std::env::var("LEASEHOLD_FIGURES_ITEMS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(100_000);
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty.db").display().to_string();
    let big = dir.path().join("big.db").display().to_string();
    assert_eq!(code(&leasehold(&["init", &empty])), 0);
    let filling = Instant::now();
    seed(&big, &["--effects", &items.to_string()]);
    let size = std::fs::metadata(&big).unwrap().len();
    println!(
        "big store: {items} effects, {} MiB, seeded in {:.1} s",
        size >> 20,
        filling.elapsed().as_secs_f64()
    );
    let (on_empty, on_big) = (enqueue_ms(&empty), enqueue_ms(&big));
    println!(
        "work enqueue (median of 5, whole process): empty store {on_empty:.1} ms, big store {on_big:.1} ms ({:.2}x)",
        on_big / on_empty
    );
    let verify = median_ms(&["store", "verify", &big], 1);
    println!("store verify on the big store: {verify:.0} ms");
    let (claimed, verified) = authority_ms(&big);
    println!(
        "authority on the big store: first claim {claimed:.0} ms after start, whole-file check done {verified:.0} ms after start"
    );
}
