//! `leasehold bench enqueue`: single-item enqueue the way services call it — one producer
//! calling in a loop, then many producer threads at once — next to the disk's own fsync
//! rate measured in the same run.
//!
//! One durable commit per call is the floor for a lone producer, so its rate is compared
//! with the rate at which this disk completes a small write plus `fdatasync` in the
//! store's directory. Concurrent producers share commits through group commit
//! (`Store::enqueue`), so their combined rate may exceed the fsync rate while each call
//! still returns only after its own item is durable.

use std::io::{Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::{Report, StoreFacts, rate};
use crate::authority::workload::NOOP_HANDLER;
use crate::error::{Error, Result};
use crate::model::HandlerVersion;
use crate::model::handler_key;
use crate::model::work::NewWork;
use crate::store::url::StoreUrl;
use crate::store::{Store, StoreKind};

/// What to run.
#[derive(Debug, Clone)]
pub struct EnqueueBench {
    /// Items enqueued by the lone producer, and again by the concurrent ones together.
    pub items: u64,
    /// Producer threads of the concurrent run.
    pub producers: usize,
    /// How long the fsync probe runs.
    pub probe: Duration,
    /// Where the probe writes: beside a SQLite store's file (the same disk), else the
    /// temporary directory ([`probe_dir`]).
    pub probe_dir: PathBuf,
}

/// Runs the benchmark on `store` (which must be empty).
///
/// # Errors
/// A non-empty store, a probe file that cannot be written, a store failure.
pub fn run(store: &Store, bench: &EnqueueBench) -> Result<Report> {
    super::require_empty(store)?;
    let compat = handler_key(NOOP_HANDLER, &HandlerVersion::demo());
    let mut report = Report::new("enqueue", StoreFacts::of(store));
    report.knob("items", bench.items);
    report.knob("producers", bench.producers);

    let dir = &bench.probe_dir;
    let fsyncs = fsync_rate(dir, bench.probe)?;
    report.note(format!(
        "fsync probe: 4 KiB write + fdatasync in {} for {} ms",
        dir.display(),
        bench.probe.as_millis()
    ));
    if store.kind() == StoreKind::Postgres {
        report.note("PostgreSQL: the probe measures this host's disk, the server's may differ");
    }
    report.metric("fsyncPerSec", "disk: write + fdatasync", fsyncs, "/s");

    let spec = |run: &str, i: u64| NewWork::effect(format!("enq-{run}-{i:09}"), NOOP_HANDLER, "{}");
    let started = Instant::now();
    for i in 0..bench.items {
        store.enqueue(spec("seq", i), &compat)?;
    }
    let sequential = rate(bench.items, started.elapsed());
    report.metric(
        "enqueueSequentialPerSec",
        "enqueue, one producer, one item per call",
        sequential,
        "items/s",
    );

    let producers = bench.producers.max(1);
    let started = Instant::now();
    std::thread::scope(|scope| {
        let calls: Vec<_> = (0..producers as u64)
            .map(|p| {
                let (compat, spec) = (&compat, &spec);
                scope.spawn(move || {
                    (p..bench.items)
                        .step_by(producers)
                        .try_for_each(|i| store.enqueue(spec("par", i), compat).map(drop))
                })
            })
            .collect();
        calls.into_iter().try_for_each(|c| {
            c.join()
                .map_err(|_| Error::Local("a producer thread panicked".into()))?
        })
    })?;
    let concurrent = rate(bench.items, started.elapsed());
    report.metric(
        "enqueueConcurrentPerSec",
        "enqueue, concurrent producers, one item per call",
        concurrent,
        "items/s",
    );
    if fsyncs > 0.0 {
        report.metric(
            "sequentialVsFsync",
            "one producer / fsync rate",
            sequential / fsyncs,
            "x",
        );
        report.metric(
            "concurrentVsFsync",
            "concurrent producers / fsync rate",
            concurrent / fsyncs,
            "x",
        );
    }
    Ok(report)
}

/// The probe's directory for a store at `url`: a SQLite file's own directory, else the
/// temporary directory.
#[must_use]
pub fn probe_dir(url: &StoreUrl) -> PathBuf {
    match url {
        StoreUrl::Sqlite(path) => path
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .map_or_else(|| PathBuf::from("."), Path::to_path_buf),
        StoreUrl::Memory | StoreUrl::Postgres(_) => std::env::temp_dir(),
    }
}

/// How many 4 KiB write + `fdatasync` rounds a second a file in `dir` completes.
fn fsync_rate(dir: &Path, probe: Duration) -> Result<f64> {
    let unwritable =
        |e: std::io::Error| Error::Local(format!("fsync probe in {}: {e}", dir.display()));
    let path = dir.join(format!(".leasehold-fsync-probe-{}", std::process::id()));
    let mut file = std::fs::File::create(&path).map_err(unwritable)?;
    let block = [0x5a_u8; 4096];
    let started = Instant::now();
    let mut rounds = 0_u64;
    let probed = (|| {
        while started.elapsed() < probe || rounds < 20 {
            file.seek(SeekFrom::Start(0))?;
            file.write_all(&block)?;
            file.sync_data()?;
            rounds += 1;
        }
        Ok(())
    })();
    let elapsed = started.elapsed();
    drop(file);
    let _ = std::fs::remove_file(&path);
    probed.map_err(unwritable)?;
    Ok(rate(rounds, elapsed))
}
