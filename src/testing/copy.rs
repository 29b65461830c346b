//! Copying a store: what `leasehold copy` relies on from every provider — its list and
//! import methods keep every row and key, history pages never end inside a revision, and a
//! copy carries on from the source's revision, journal seq and ids.
//!
//! Each case copies a busy memory store *into* the provider under test (a fresh, empty
//! store) and back out into memory, where every table can be compared row by row.

use std::fmt::Debug;
use std::sync::Arc;

use crate::Store;
use crate::check::{CheckOptions, check};
use crate::cluster::{Cluster, ClusterOptions};
use crate::ids::SeededIds;
use crate::model::PageRequest;
use crate::model::event::NewEvent;
use crate::model::work::{NewWork, WorkFilter};
use crate::store::copy::{BATCH, CopySummary, TableCount, copy_store};
use crate::store::memory::MemoryBackend;
use crate::store::{Backend, Keyed};

use super::{Harness, ok};

fn quiet(_: &TableCount) {}

/// A memory store and its backend (for reading every table).
fn memory(h: &dyn Harness) -> (MemoryBackend, Store) {
    let backend = MemoryBackend::new();
    let store = Store::new(
        Arc::new(backend.clone()),
        Arc::new(h.clock().clone()),
        Arc::new(SeededIds::new(5)),
    );
    (backend, store)
}

/// Every row of every table of a memory store, in key order, as text.
fn dump(backend: &MemoryBackend) -> Vec<String> {
    fn rows<T: Debug>(out: &mut Vec<String>, table: &str, rows: Vec<T>) {
        out.extend(rows.iter().map(|r| format!("{table} {r:?}")));
    }
    let mut out = Vec::new();
    backend
        .read(&mut |tx| {
            let all = PageRequest::first(usize::MAX);
            out = vec![
                format!("revision {}", tx.revision()?),
                format!("journal high-water {}", tx.journal_high_water()?),
            ];
            rows(&mut out, "counter", tx.counters("")?);
            rows(&mut out, "lease", tx.list_leases(&all)?);
            rows(
                &mut out,
                "work",
                tx.list_work(&WorkFilter::default(), &all)?,
            );
            rows(
                &mut out,
                "attempt error",
                tx.list_attempt_errors(None, usize::MAX)?,
            );
            rows(&mut out, "dedup", tx.list_dedup(None, usize::MAX)?);
            rows(&mut out, "journal", tx.journal_after(0, None, usize::MAX)?);
            rows(&mut out, "ingestion", tx.list_ingestions(&all)?);
            rows(&mut out, "subscription", tx.list_subscriptions(&all)?);
            rows(&mut out, "schedule", tx.list_schedules(&all)?);
            rows(&mut out, "paused handler", tx.handler_pauses()?);
            rows(&mut out, "authority", tx.list_authorities(&all)?);
            rows(
                &mut out,
                "answer",
                tx.list_idempotent_answers(None, usize::MAX)?,
            );
            rows(&mut out, "audit", tx.list_audit(&all)?);
            rows(&mut out, "grant", tx.grants(None, 0, usize::MAX)?);
            rows(&mut out, "write", tx.writes(None, 0, usize::MAX)?);
            rows(&mut out, "link", tx.links(0, usize::MAX)?);
            rows(&mut out, "definition", tx.list_definitions(&all)?);
            for instance in tx.list_instances(None, None, &all)? {
                rows(&mut out, "history", tx.history(&instance.instance_id)?);
                out.push(format!("instance {instance:?}"));
            }
            rows(
                &mut out,
                "outcome",
                tx.list_action_outcomes(None, usize::MAX)?,
            );
            Ok(())
        })
        .unwrap();
    out
}

/// A memory store after a chaotic cluster run (reclaims, fenced writes, retries,
/// workflows with their histories and outcomes, events, cursors, schedules), plus a keyed
/// lease call, an audit entry, a paused handler, a lease failover and the late owner's
/// refused renewal, a work item's checkpoint and another's attempt error, and one
/// transaction granting more than a copy batch.
fn busy(h: &dyn Harness) -> (MemoryBackend, Store) {
    let cluster = Cluster::new(ClusterOptions::headless("chaos", 7, 3, 20_000)).unwrap();
    cluster.advance(20_000);
    let run = cluster.store();
    let key = Keyed { key: Some("k-1") };
    ok("acquire", run.acquire("r-keyed", "op", 5_000.0, key));
    ok("audit", run.audit("me@host", "cancel", "wf-1", "cancelled"));
    let pause = crate::rules::handler::HandlerControl::Pause;
    ok(
        "pause a handler",
        run.control_handler("next-week", pause, "me@host", "not yet"),
    );
    let lost = ok(
        "acquire",
        run.acquire("r-lost", "op-a", 1_000.0, Keyed { key: None }),
    );
    cluster.advance(2_000);
    ok(
        "reclaim",
        run.acquire("r-lost", "op-b", 5_000.0, Keyed { key: None }),
    );
    assert!(
        run.renew("r-lost", &lost.token, lost.generation, 1_000.0)
            .is_err()
    );
    let specs = (0..BATCH + 300)
        .map(|i| NewWork::effect(format!("bulk-{i:05}"), "send-email", "{}"))
        .collect();
    ok("enqueue", run.enqueue_batch(specs, "bulk-build"));
    let claimed = ok(
        "claim",
        run.claim_batch("bulk", "bulk-build", BATCH + 200, 60_000),
    );
    assert_eq!(claimed.len(), BATCH + 200);
    let resumable = &claimed[0];
    ok(
        "work checkpoint",
        run.save_work_checkpoint(&resumable.id, "bulk", resumable.generation, "{\"page\":7}"),
    );
    let failing = &claimed[1];
    let failure = super::work::retryable("E_BUSY");
    ok(
        "attempt error",
        run.fail(&failing.id, "bulk", failing.generation, failure),
    );
    let (backend, store) = memory(h);
    ok("copy the run", copy_store(&run, &store, &mut quiet));
    (backend, store)
}

/// A busy store copied into the provider and back out reads the same row for row, and
/// the checker says the same of all three; a new connection reads the same copy.
pub fn a_busy_store_round_trips_through_the_provider(h: &dyn Harness) {
    let (source_rows, source) = busy(h);
    let target = h.store();
    let (back_rows, back) = memory(h);
    let there: CopySummary = ok("copy in", copy_store(&source, &target, &mut quiet));
    let again = ok("copy out", copy_store(&h.reopen(), &back, &mut quiet));
    assert_eq!(there, again);
    assert!(
        there.tables.iter().all(|c| c.rows > 0),
        "{:?}",
        there.tables
    );
    assert_eq!(dump(&back_rows), dump(&source_rows));
    assert_eq!(ok("revision", target.revision()), there.revision);
    let incidents = |s: &Store| {
        let failovers = ok("failovers", s.failovers(i64::MIN, None, usize::MAX));
        let refused = ok("refused", s.refused_writes(i64::MIN, None, usize::MAX));
        // Positions number rows per provider: compare the rows themselves.
        let grants: Vec<_> = failovers.rows.into_iter().map(|(_, g)| g).collect();
        let writes: Vec<_> = refused.rows.into_iter().map(|(_, w)| w).collect();
        (grants, failovers.total, writes, refused.total)
    };
    let source_incidents = incidents(&source);
    assert!(
        source_incidents.1 > 0 && source_incidents.3 > 0,
        "the run had failovers and refusals"
    );
    assert_eq!(
        incidents(&target),
        source_incidents,
        "the copy lists the same incidents"
    );
    assert_eq!(incidents(&back), source_incidents);

    let options = CheckOptions::at(source.now());
    let report = ok("check", check(&source, &options));
    assert_eq!(ok("check", check(&target, &options)), report);
    assert_eq!(ok("check", check(&back, &options)), report);
}

/// The copy's next commit, journal seq and audit id follow the source's.
pub fn a_copy_carries_on_where_the_source_stopped(h: &dyn Harness) {
    let (_, source) = busy(h);
    let target = h.store();
    let summary = ok("copy", copy_store(&source, &target, &mut quiet));
    let last_audit = ok("audit", source.list_audit(&PageRequest::last(1))).rows;
    ok("audit", target.audit("me@host", "copy", "-", "ok"));
    let event = NewEvent {
        event_type: "after-copy".into(),
        source: None,
        external_id: None,
        payload: serde_json::json!({}),
    };
    let ingested = ok("ingest", target.ingest(&event));
    let audit = ok("audit", target.list_audit(&PageRequest::last(1))).rows;
    let ingestions = ok("ingestions", target.list_ingestions(&PageRequest::last(2))).rows;
    assert_eq!(ok("revision", target.revision()), summary.revision + 2);
    assert_eq!(audit[0].id, last_audit[0].id + 1);
    assert_eq!(ingested.seq, Some(summary.journal_high_water + 1));
    assert_eq!(ingestions[1].id, ingestions[0].id + 1);
}

/// A target that holds anything is refused and left as it was.
pub fn a_non_empty_target_is_refused(h: &dyn Harness) {
    let (_, source) = busy(h);
    let target = h.store();
    ok("audit", target.audit("me@host", "x", "y", "z"));
    let before = ok("audit", target.list_audit(&PageRequest::first(10)));
    let err = copy_store(&source, &target, &mut quiet).unwrap_err();
    assert_eq!(err.code(), "COPY_TARGET_NOT_EMPTY", "{err}");
    assert_eq!(ok("revision", target.revision()), 1);
    assert_eq!(
        ok("audit", target.list_audit(&PageRequest::first(10))),
        before
    );
}
