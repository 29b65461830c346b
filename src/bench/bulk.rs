//! `leasehold bench bulk`: the command line's bulk enqueue (`leasehold work enqueue
//! --from FILE`, run as its own process, as a shell script runs it) next to the library's
//! batched enqueue in the same run on the same store, and next to one `work enqueue`
//! process per item, the way a shell loop enqueues.
//!
//! The bulk process's time is all of it: starting, opening the store, reading and checking
//! the file, and committing it in batches. Its lines carry ids in order, as the library's
//! items do, so the two differ only by the command line's own cost. Then the same file
//! again, which must be answered `duplicate` line for line — the re-run that finishes a cut
//! run — and a file of lines with no id, each keyed by a hash of its handler and payload
//! (numbered in order under the run's id): those keys land all over the key index, so
//! each commit writes more pages.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::{Report, StoreFacts, rate};
use crate::authority::workload::NOOP_HANDLER;
use crate::error::{Error, Result};
use crate::model::HandlerVersion;
use crate::model::handler_key;
use crate::model::work::NewWork;
use crate::store::Store;

/// What to run.
#[derive(Debug, Clone)]
pub struct BulkBench {
    /// Items the library enqueues, and the bulk command again (other items) from a file.
    pub items: u64,
    /// Items per library transaction.
    pub batch: usize,
    /// `work enqueue` processes run one after another, one item each.
    pub single: u64,
    /// The store's URL, handed to the command-line processes.
    pub url: String,
}

/// Runs the benchmark on `store` (which must be empty).
///
/// # Errors
/// A non-empty store, a file or process that cannot be made, a command that fails or
/// answers otherwise than expected, a store failure.
pub fn run(store: &Store, bench: &BulkBench) -> Result<Report> {
    super::require_empty(store)?;
    let mut report = Report::new("bulk", StoreFacts::of(store));
    report.knob("items", bench.items);
    report.knob("libraryBatch", bench.batch);
    report.knob("singleProcesses", bench.single);
    let payload = |i: u64| format!("{{\"n\":{i}}}");

    let compat = handler_key(NOOP_HANDLER, &HandlerVersion::demo());
    let started = Instant::now();
    let mut next = 0;
    while next < bench.items {
        let end = (next + bench.batch.max(1) as u64).min(bench.items);
        let specs = (next..end)
            .map(|i| NewWork::effect(format!("lib-{i:09}"), NOOP_HANDLER, payload(i)))
            .collect();
        store.enqueue_batch(specs, &compat)?;
        next = end;
    }
    let library = rate(bench.items, started.elapsed());
    report.metric(
        "libraryBatchedPerSec",
        "library: enqueue_batch",
        library,
        "items/s",
    );

    let file = Scratch(
        std::env::temp_dir().join(format!("leasehold-bench-bulk-{}.jsonl", std::process::id())),
    );
    write_lines(&file.0, bench.items, |i| {
        format!(
            "{{\"handler\":\"{NOOP_HANDLER}\",\"payload\":{},\"id\":\"cli-{i:09}\"}}",
            payload(i)
        )
    })?;
    let from = file.0.display().to_string();
    let bulk = ["work", "enqueue", "--from", from.as_str(), "--json"];
    let (summary, elapsed) = leasehold(&bench.url, &bulk)?;
    expect(&summary, "created", bench.items)?;
    let cli = rate(bench.items, elapsed);
    report.metric(
        "cliBulkPerSec",
        "leasehold work enqueue --from FILE (one process)",
        cli,
        "items/s",
    );
    if library > 0.0 {
        report.metric(
            "cliBulkVsLibrary",
            "command-line bulk / library batched",
            cli / library,
            "x",
        );
    }
    let (summary, elapsed) = leasehold(&bench.url, &bulk)?;
    expect(&summary, "duplicate", bench.items)?;
    report.metric(
        "cliRerunPerSec",
        "the same file again (every line a duplicate)",
        rate(bench.items, elapsed),
        "items/s",
    );

    write_lines(&file.0, bench.items, |i| {
        let n = bench.items + i;
        format!(
            "{{\"handler\":\"{NOOP_HANDLER}\",\"payload\":{}}}",
            payload(n)
        )
    })?;
    let (summary, elapsed) = leasehold(&bench.url, &bulk)?;
    expect(&summary, "created", bench.items)?;
    let derived = rate(bench.items, elapsed);
    report.metric(
        "cliBulkDerivedKeysPerSec",
        "the same, lines without ids (keys hashed from the line)",
        derived,
        "items/s",
    );
    if library > 0.0 {
        report.metric(
            "cliBulkDerivedKeysVsLibrary",
            "lines without ids / library batched",
            derived / library,
            "x",
        );
    }

    single_processes(bench, &mut report)?;
    super::check_after(store, &mut report)?;
    Ok(report)
}

/// One `work enqueue` process per item, the way a shell loop enqueues.
fn single_processes(bench: &BulkBench, report: &mut Report) -> Result<()> {
    let started = Instant::now();
    for i in 0..bench.single {
        let id = format!("single-{i:09}");
        let one = [
            "work",
            "enqueue",
            "--handler",
            NOOP_HANDLER,
            "--payload",
            "{}",
            "--id",
            id.as_str(),
            "--json",
        ];
        expect(&leasehold(&bench.url, &one)?.0, "outcome", "created")?;
    }
    if bench.single > 0 {
        report.metric(
            "cliSinglePerSec",
            "leasehold work enqueue, one process per item",
            rate(bench.single, started.elapsed()),
            "items/s",
        );
    }
    Ok(())
}

/// A file removed when dropped.
struct Scratch(PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

fn write_lines(path: &Path, items: u64, line: impl Fn(u64) -> String) -> Result<()> {
    let unwritable = |e: std::io::Error| Error::Invalid(format!("{}: {e}", path.display()));
    let mut file = std::io::BufWriter::new(std::fs::File::create(path).map_err(unwritable)?);
    for i in 0..items {
        writeln!(file, "{}", line(i)).map_err(unwritable)?;
    }
    file.flush().map_err(unwritable)
}

/// Runs this binary with `args` on the store at `url` and answers its last JSON line
/// and how long it ran.
fn leasehold(url: &str, args: &[&str]) -> Result<(Value, Duration)> {
    let exe = std::env::current_exe()
        .map_err(|e| Error::Unavailable(format!("cannot find the leasehold binary: {e}")))?;
    let started = Instant::now();
    let output = Command::new(exe)
        .args(args)
        .args(["--handler-version", &HandlerVersion::demo().to_string()])
        // Through the environment, so a password never shows in a process list.
        .env("LEASEHOLD_STORE", url)
        .stdin(Stdio::null())
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| Error::Unavailable(format!("cannot run leasehold: {e}")))?;
    let elapsed = started.elapsed();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let last = stdout.lines().last().unwrap_or_default();
    if !output.status.success() {
        return Err(Error::Invalid(format!(
            "leasehold {} failed ({}): {last}",
            args.join(" "),
            output.status
        )));
    }
    let answer = serde_json::from_str(last).map_err(|e| {
        Error::Invalid(format!(
            "leasehold {} answered {last:?}: {e}",
            args.join(" ")
        ))
    })?;
    Ok((answer, elapsed))
}

/// Refuses an answer whose `field` is not `expected`.
fn expect(answer: &Value, field: &str, expected: impl Into<Value>) -> Result<()> {
    let expected = expected.into();
    if answer[field] == expected {
        Ok(())
    } else {
        Err(Error::Invalid(format!(
            "expected {field} {expected}, the command answered {answer}"
        )))
    }
}
